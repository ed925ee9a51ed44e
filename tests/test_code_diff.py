"""`ask impact --diff`: git's changed lines -> definitions -> tests, with a real recorded coverage run.

The package is written here, so which test runs which line is known by construction: ``test_neg``
takes the branch ``x < 0`` of ``calc.core.sign``, ``test_pos`` does not, ``test_double`` never calls
``sign``. Its suite runs once under pytest-cov with per-test contexts; the graph holds that run.
Then changes are made in the working tree, committed, refreshed (`code refresh` keeps the recorded
evidence) and asked about: a line only ``test_neg`` runs selects ``test_neg`` alone; once ``sign``
has changed since the run, its coverage is stale and every test that ran it before answers. A
renamed or moved definition answers with the run of its old name; a test moved to another file since
the run is the test the run measured."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.code import gitdiff
from graphrag_got.code.changes import read_change
from graphrag_got.code.diff import diff_impact
from graphrag_got.code.impact import impact
from graphrag_got.code.lines import Statements, fingerprint, parse_ranges
from graphrag_got.code.stale import select
from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError
from support import git, git_repo, refuse_opening

REPO = Path(__file__).resolve().parents[1]
ONTO = ["--ontology", str(REPO / "ontology" / "code.json")]

CORE = ("def sign(x):\n"
        "    if x < 0:\n"
        "        return -1\n"
        "    return 1\n"
        "\n"
        "\n"
        "def double(x):\n"
        "    return x * 2\n")
TESTS = ("from calc.core import double, sign\n"
         "\n"
         "\n"
         "def test_neg():\n"
         "    assert sign(-5) == -1\n"
         "\n"
         "\n"
         "def test_pos():\n"
         "    assert sign(3) == 1\n"
         "\n"
         "\n"
         "def test_double():\n"
         "    assert double(2) == 4\n")


def repo(tmp_path: Path, files: dict[str, str]) -> Path:
    return git_repo(tmp_path / "repo", dict(files))


def edit(root: Path, rel: str, old: str, new: str) -> None:
    p = root / rel
    text = p.read_text(encoding="utf-8")
    assert old in text
    p.write_text(text.replace(old, new), encoding="utf-8")


# ------------------------------------------------------------------------------ without Neo4j
def test_changed_lines_map_to_definitions_on_both_sides(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc/__init__.py": "", "calc/core.py": CORE, "calc/gone.py": "def old():\n    return 0\n",
                           "tests/test_core.py": TESTS, "README.md": "calc\n"})
    edit(root, "calc/core.py", "        return -1\n", "        return -2\n")
    edit(root, "calc/core.py", "def double(x):\n    return x * 2\n",
         "def double(x):\n    # twice\n    return x * 2\n\n\ndef triple(x):\n    return x * 3\n")
    edit(root, "README.md", "calc", "calc!")
    (root / "calc" / "gone.py").unlink()
    (root / "calc" / "new.py").write_text("LIMIT = 3\n", encoding="utf-8")  # untracked: part of the working tree
    ch, files = read_change(root)
    assert ch.label == "working tree vs HEAD" and ch.new is None
    by = {f.path: f for f in files}
    assert by["README.md"].note == "not Python"
    core = {s.name: s for s in by["calc/core.py"].symbols}
    assert set(core) == {"calc.core.sign", "calc.core.triple"}  # the comment in double changes no code
    assert core["calc.core.sign"].change == "modified" and core["calc.core.sign"].statements == {3}
    assert core["calc.core.triple"].change == "added"
    assert [(s.name, s.change) for s in by["calc/gone.py"].symbols] == [("calc.gone.old", "deleted")]
    # a new module-level constant nothing reads selects nothing
    assert by["calc/new.py"].status == "added" and by["calc/new.py"].module_names == ["LIMIT"]
    assert by["calc/new.py"].module_lines == []
    git(root, "add", "-A")
    git(root, "commit", "-qm", "two")
    ch2, files2 = read_change(root, "HEAD~1..HEAD")
    assert ch2.new == gitdiff.commit(root, "HEAD") and {f.path for f in files2} == set(by)
    edit(root, "tests/test_core.py", "sign(3) == 1", "sign(4) == 1")
    git(root, "add", "tests/test_core.py")
    _, staged = read_change(root, staged=True)
    assert [(s.name, s.type) for f in staged for s in f.symbols] == [("test_core.test_pos", "Test")]
    git(root, "mv", "calc/core.py", "calc/main.py")
    _, moved = read_change(root, staged=True)
    names = {(s.name, s.change) for f in moved for s in f.symbols}
    assert ("calc.main.sign", "moved") in names  # a moved file moves all it defines
    with pytest.raises(gitdiff.GitError, match="names no commit"):
        read_change(root, "no-such-branch..HEAD")


def test_statements_and_the_lines_an_insertion_selects() -> None:
    text = ("def f(x):\n"          # 1
            "    # note\n"         # 2
            "    if x:\n"          # 3
            "        a = g(1,\n"   # 4
            "              2)\n"   # 5
            "        b = 2\n"      # 6
            "    return 3\n")      # 7
    st = Statements(text)
    assert st.statement(5) == 4 and st.statement(2) is None and st.in_header(1, 1) and not st.in_header(1, 2)
    assert parse_ranges("3-5, 8") == {3, 4, 5, 8} and fingerprint(text, 3, 4) != fingerprint(text, 3, 5)
    from graphrag_got.code.changes import ChangedSymbol

    rows = [{"uid": "inside", "lines": "3-4, 6-7"}, {"uid": "outside", "lines": "3, 7"}]
    top = ChangedSymbol("m.f", "Function", "m.py", "modified", old_start=1, insertions=[(3, 8)])
    assert set(select(top, st, 7, 1, rows).hit) == {"inside"}  # top of the if block: its first statement
    end = ChangedSymbol("m.f", "Function", "m.py", "modified", old_start=1, insertions=[(6, 4)])
    assert set(select(end, st, 7, 1, rows).hit) == {"inside", "outside"}  # after the block, at its level
    moved = ChangedSymbol("m.f", "Function", "m.py", "modified", old_start=11, statements={16})
    sel = select(moved, st, 17, 1, rows)  # the function moved 10 lines down since the run
    assert set(sel.hit) == {"inside"} and sel.ran_function_only == {"outside"}


# ------------------------------------------------------------------------------ hostile trees and revisions
def test_links_and_devices_of_the_working_tree_are_never_opened(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc/__init__.py": "", "calc/core.py": CORE})
    for name, target in (("passwd.py", "/etc/passwd"), ("zero.py", "/dev/zero"), ("same.py", "core.py")):
        (root / "calc" / name).symlink_to(target)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "links")
    (root / "notes.txt").symlink_to("/dev/zero")  # untracked and not Python: its lines were counted
    (root / "calc" / "pipe.py").symlink_to("/dev/stdin")
    edit(root, "calc/core.py", "        return -1\n", "        return -2\n")
    with refuse_opening("/etc/passwd", "/dev/zero") as opened:
        _, files = read_change(root, "HEAD~1")  # the working tree against the commit before the links
    assert opened == []
    by = {f.path: f for f in files}
    for name in ("calc/passwd.py", "calc/zero.py", "calc/same.py", "calc/pipe.py"):  # inside the tree or not
        assert by[name].skipped and "symbolic link" in (by[name].note or "") and not by[name].symbols, by[name]
    assert "'/dev/zero'" in (by["calc/zero.py"].note or "")
    assert [(s.name, s.change) for s in by["calc/core.py"].symbols] == [("calc.core.sign", "modified")]
    assert not by["calc/core.py"].skipped
    # committed links: their blob is the target's name, never parsed as code
    _, committed = read_change(root, "HEAD~1..HEAD")
    assert {f.path for f in committed} == {"calc/passwd.py", "calc/zero.py", "calc/same.py"}
    assert all(f.skipped and "symbolic link" in (f.note or "") for f in committed)
    # a file over the size cap is not read, on the git side nor in the working tree
    (root / "calc" / "big.py").write_text("X = 1\n" * 1000, encoding="utf-8")
    git(root, "add", "calc/big.py")
    git(root, "commit", "-qm", "big")
    _, capped = read_change(root, "HEAD~1..HEAD", max_bytes=1000)
    assert [(f.path, f.skipped, "too large" in (f.note or "")) for f in capped] == [("calc/big.py", True, True)]
    edit(root, "calc/big.py", "X = 1\n", "X = 2\n")
    _, capped = read_change(root, max_bytes=1000)
    big = next(f for f in capped if f.path == "calc/big.py")
    assert big.skipped and "6,000 bytes" in (big.note or "") and "GRAPHRAG_CODE_MAX_FILE_BYTES" in (big.note or "")


def test_a_fifo_in_the_working_tree_is_never_opened(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc/__init__.py": "", "calc/core.py": CORE, "calc/pipe.py": "X = 1\n"})
    (root / "calc" / "pipe.py").unlink()
    os.mkfifo(root / "calc" / "pipe.py")  # a read of it would wait for a writer forever
    with refuse_opening() as opened, pytest.raises(gitdiff.GitError, match="calc/pipe.py"):
        read_change(root)  # git itself refuses to hash it: a clear error naming the file, not a hang
    assert opened == []


def test_a_revision_with_a_control_character_is_refused(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = repo(tmp_path, {"m/__init__.py": "", "m/core.py": "X = 1\n"})
    for spec in ("HEAD\0", "HEAD~1..HEAD\0x", "HEAD\nmain"):
        with pytest.raises(ConfigError, match="control character"):
            read_change(root, spec)
    assert main(["ask", "impact", "--diff", "HEAD\0", "--root", str(root), *ONTO]) == 1
    err = capsys.readouterr().err
    assert "control character" in err and "Traceback" not in err


def test_source_nested_deeper_than_the_parser_goes_is_skipped_with_a_record(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc/__init__.py": "", "calc/core.py": CORE})
    edit(root, "calc/core.py", "        return -1\n", "        return -2\n")
    (root / "calc" / "sums.py").write_text("X = " + "1 + " * 100_000 + "1\n", encoding="utf-8")
    (root / "calc" / "signs.py").write_text("X = " + "-" * 100_000 + "1\n", encoding="utf-8")
    _, files = read_change(root)
    by = {f.path: f for f in files}
    for name in ("calc/sums.py", "calc/signs.py"):
        assert by[name].skipped and "nested too deeply" in (by[name].note or ""), by[name]
    assert [(s.name, s.change) for s in by["calc/core.py"].symbols] == [("calc.core.sign", "modified")]


def test_a_newline_in_a_file_name_shifts_no_other_file(tmp_path: Path) -> None:
    odd = "calc/a\nb.py"
    root = repo(tmp_path, {"calc/__init__.py": "", odd: "def f():\n    return 1\n", "calc/core.py": CORE})
    edit(root, odd, "return 1", "return 2")
    edit(root, "calc/core.py", "        return -1\n", "        return -2\n")

    def changes(files: list) -> set[tuple[str, str, str]]:  # type: ignore[type-arg]
        return {(f.path, s.name.rsplit(".", 1)[-1], s.change) for f in files for s in f.symbols}

    expected = {(odd, "f", "modified"), ("calc/core.py", "sign", "modified")}
    assert changes(read_change(root)[1]) == expected  # old side from git, new side from the working tree
    git(root, "add", "-A")
    assert changes(read_change(root, staged=True)[1]) == expected  # the index
    git(root, "commit", "-qm", "two")
    assert changes(read_change(root, "HEAD~1..HEAD")[1]) == expected  # two commits


# ------------------------------------------------------------------------------ with Neo4j
def recorded(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    """A repository of ``files`` whose suite ran once under pytest-cov with per-test contexts, and
    the extraction `code refresh` made of it with that run (loaded)."""
    root = repo(tmp_path, files)
    data = tmp_path / "run.coverage"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=calc",
                           "--cov-context=test", "--cov-report=", "tests"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "COVERAGE_FILE": str(data)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = tmp_path / "code.json"
    assert main(["code", "refresh", str(root), "-o", str(out), "--coverage", str(data), *ONTO]) == 0
    return root, out


@pytest.fixture()
def covered(tmp_path: Path, clean_graph, neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    root, out = recorded(tmp_path, {"calc/__init__.py": "", "calc/core.py": CORE, "tests/test_core.py": TESTS})
    return root, out, clean_graph


def evidence_of(res) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {t.nodeid: t.evidence for t in res.tests}


def test_recorded_coverage_answers_line_by_line_then_goes_stale(covered, neo4j_settings: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root, out, driver = covered
    edit(root, "calc/core.py", "        return -1\n", "        return -2\n")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    assert evidence_of(res) == {"tests/test_core.py::test_neg": "coverage"}
    assert [t.nodeid for t in res.ran_function_only] == ["tests/test_core.py::test_pos"]
    assert [(s.name, s.coverage, s.answered_by) for s in res.symbols] == [("calc.core.sign", "recorded", "coverage")]
    # the static closure names test_pos too, but the run measured it not running the line
    assert "tests/test_core.py::test_pos" in {t.nodeid for t in res.not_run}
    assert main(["ask", "impact", "--diff", "--root", str(root), "--json", *ONTO]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "graphrag_got.impact-diff/2" and data["pytest_args"] == ["tests/test_core.py::test_neg"]
    # a new test in the change is run itself; a module-level call selects the tests that ran the module
    edit(root, "tests/test_core.py", "def test_double():", "def test_zero():\n    assert sign(0) == 1\n\n\n"
                                                        "def test_double():")
    edit(root, "calc/core.py", "def sign(x):", "print(end='')\n\n\ndef sign(x):")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    assert evidence_of(res)["tests/test_core.py::test_zero"] == "changed"
    assert set(evidence_of(res)) == {"tests/test_core.py::test_neg", "tests/test_core.py::test_pos",
                                  "tests/test_core.py::test_double", "tests/test_core.py::test_zero"}
    # commit the change to sign and refresh: the run's evidence is kept, but sign no longer matches it
    edit(root, "calc/core.py", "print(end='')\n\n\n", "")
    edit(root, "tests/test_core.py", "def test_zero():\n    assert sign(0) == 1\n\n\n", "")
    git(root, "commit", "-qam", "two")
    assert main(["code", "refresh", str(root), "-o", str(out), *ONTO]) == 0
    assert "coverage evidence: kept as recorded" in capsys.readouterr().out
    one = impact(driver, neo4j_settings.neo4j, "calc.core.sign", code=neo4j_settings.code)  # one target: its recorded run is older than it
    assert one.stale == 1 and one.not_run == []
    assert {t.nodeid for t in one.tests} == {"tests/test_core.py::test_neg", "tests/test_core.py::test_pos"}
    edit(root, "calc/core.py", "        return -2\n", "        return -3\n")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)  # who enters sign is up to its callers: the run says
    assert [(s.coverage, s.answered_by) for s in res.symbols] == [("stale", "coverage (before it changed)")]
    assert evidence_of(res) == {"tests/test_core.py::test_neg": "coverage (before it changed)",
                                "tests/test_core.py::test_pos": "coverage (before it changed)"}
    # double is unchanged since the run: still answered by it
    edit(root, "calc/core.py", "def sign(x):", "# a comment line\ndef sign(x):")
    edit(root, "calc/core.py", "    return x * 2\n", "    return x + x\n")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    by = {s.name: (s.coverage, s.answered_by) for s in res.symbols}
    assert by["calc.core.double"] == ("recorded", "coverage")
    assert evidence_of(res)["tests/test_core.py::test_double"] == "coverage"


def test_diff_cli_needs_one_of_target_or_diff(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["ask", "impact", *ONTO]) == 1
    assert "either TARGET or --diff" in capsys.readouterr().err
    assert main(["ask", "impact", "f", "--diff", *ONTO]) == 1


def test_imports_type_hints_and_constants_select_what_reads_them(tmp_path: Path) -> None:
    core = ("import os\n\nLIMIT = 3\n\n\ndef small(x: int) -> bool:\n    return x < LIMIT\n\n\n"
            "def big(x):\n    return x > 10\n")
    root = repo(tmp_path, {"m/__init__.py": "", "m/core.py": core})
    edit(root, "m/core.py", "import os\n", "import os\nimport sys\n")  # an import: selects nothing itself
    edit(root, "m/core.py", "LIMIT = 3", "LIMIT = 4")  # a constant: the functions reading it
    edit(root, "m/core.py", "def big(x):", "def big(x: float) -> bool:")  # type hints only
    _, files = read_change(root)
    f = files[0]
    assert f.module_imports == [2] and f.module_lines == [] and f.module_names == ["LIMIT"]
    by = {s.name: s for s in f.symbols}
    assert by["m.core.small"].reads == ["LIMIT"] and not by["m.core.small"].annotations_only
    assert by["m.core.big"].annotations_only and not by["m.core.big"].header


def test_if_type_checking_selects_nothing(tmp_path: Path) -> None:
    root = repo(tmp_path, {"m/__init__.py": "", "m/core.py": "import typing\n\nif typing.TYPE_CHECKING:\n    X = 1\n"})
    edit(root, "m/core.py", "if typing.TYPE_CHECKING:", "if typing.TYPE_CHECKING:  # types\n    Y = 2\nif typing.TYPE_CHECKING:")
    _, files = read_change(root)
    assert files[0].module_lines == [] and files[0].module_names == ["Y"]


# ------------------------------------------------------------------------------ renames and moves
def test_body_fingerprint_ignores_name_docstrings_and_type_hints() -> None:
    import ast

    from graphrag_got.code.lines import body_fingerprint

    def fp(src: str) -> str | None:
        return body_fingerprint(ast.parse(src).body[0])

    base = fp("def f(x):\n    return f(x - 1) if x else 0\n")
    assert base == fp('def _g(x: int) -> int:\n    """Doc."""\n    return _g(x - 1) if x else 0\n')
    assert base != fp("def f(x):\n    return f(x - 2) if x else 0\n")  # the body changed
    assert base != fp("def f(x=1):\n    return f(x - 1) if x else 0\n")  # a default runs
    assert fp("class A:\n    x: int = 1\n") != fp("class A:\n    x: str = 1\n")  # a field's type is kept
    assert fp("x = 1\n") is None


RENAME_CORE = ("def double(x):\n"
               "    return x * 2\n"
               "\n"
               "\n"
               "class Box:\n"
               "    def __init__(self, v):\n"
               "        self.v = v\n"
               "\n"
               "    def get(self):\n"
               "        return double(self.v)\n"
               "\n"
               "\n"
               "def make(x):\n"
               "    if x > 100:\n"
               "        return Box(x)\n"
               "    return None\n")
RENAME_TESTS = ("from calc.core import Box, make\n"
                "from calc.signs import sign\n"
                "\n"
                "\n"
                "def test_box():\n"
                "    assert Box(2).get() == 4\n"
                "\n"
                "\n"
                "def test_make():\n"
                "    assert make(1) is None\n"
                "\n"
                "\n"
                "def test_sign():\n"
                "    assert sign(-2) == -1\n")
SIGNS = "def sign(x):\n    return -1 if x < 0 else 1\n"


def test_renames_and_moves_pair_by_what_the_definitions_do(tmp_path: Path) -> None:
    root = repo(tmp_path, {"calc/__init__.py": "", "calc/core.py": RENAME_CORE, "calc/signs.py": SIGNS,
                           "tests/test_core.py": RENAME_TESTS})
    edit(root, "calc/core.py", "def double(x):\n", 'def _double(x: int) -> int:\n    """Twice x."""\n')
    edit(root, "calc/core.py", "return double(self.v)", "return _double(self.v)")
    _, files = read_change(root)
    got = {(s.name, s.change, s.old_name) for f in files for s in f.symbols}
    assert got == {("calc.core._double", "renamed", "calc.core.double"), ("calc.core.Box.get", "modified", None)}
    git(root, "checkout", "-q", "--", ".")
    edit(root, "calc/core.py", "class Box:\n    def __init__(self, v):", "class _Box:\n    def __init__(self, v: int):")
    edit(root, "calc/core.py", "return Box(x)", "return _Box(x)")
    git(root, "mv", "calc/signs.py", "calc/sign.py")
    _, files = read_change(root)
    got = {(s.name, s.change, s.old_name) for f in files for s in f.symbols}
    assert ("calc.core._Box", "renamed", "calc.core.Box") in got
    assert ("calc.core._Box.__init__", "renamed", "calc.core.Box.__init__") in got  # under the renamed class
    assert ("calc.sign.sign", "moved", "calc.signs.sign") in got
    assert not any(s.change in ("added", "deleted") for f in files for s in f.symbols)
    # twins (two methods `return self`): paired under their renamed classes
    twin = ('class A:\n    x = 1\n\n    def m(self) -> "A":\n        return self\n\n\n'
            'class B:\n    y = 2\n\n    def m(self) -> "B":\n        return self\n')
    root2 = repo(tmp_path / "two", {"t/__init__.py": "", "t/mod.py": twin})
    (root2 / "t" / "mod.py").write_text(twin.replace("A", "A_").replace("B", "B_"), encoding="utf-8")
    _, files2 = read_change(root2)
    assert {(s.name, s.change, s.old_name) for f in files2 for s in f.symbols} == {
        ("t.mod.A_", "renamed", "t.mod.A"), ("t.mod.A_.m", "renamed", "t.mod.A.m"),
        ("t.mod.B_", "renamed", "t.mod.B"), ("t.mod.B_.m", "renamed", "t.mod.B.m")}


def test_overload_stubs_and_conditional_bindings_select_nothing_that_runs(tmp_path: Path) -> None:
    core = ("import sys\n"
            "import typing as t\n"
            "\n"
            "if sys.version_info >= (3, 99):\n"
            "    LIMIT = 1\n"
            "else:\n"
            "    LIMIT = 2\n"
            "\n"
            "\n"
            "def f(x: object) -> object:\n"
            "    return x\n"
            "\n"
            "\n"
            "def g():\n"
            "    return LIMIT\n")
    root = repo(tmp_path, {"m/__init__.py": "", "m/core.py": core})
    edit(root, "m/core.py", "def f(x: object) -> object:", "@t.overload\ndef f(x: int) -> int: ...\n\n\n"
                                                             "@t.overload\ndef f(x: str) -> str: ...\n\n\n"
                                                             "def f(x: int | str) -> int | str:")
    edit(root, "m/core.py", "(3, 99)", "(3, 98)")
    _, files = read_change(root)
    f = files[0]
    by = {(s.name, s.overload): s for s in f.symbols}
    assert by[("m.core.f", True)].lines and by[("m.core.f", False)].annotations_only
    assert f.module_lines == [] and f.module_names == ["LIMIT"] and by[("m.core.g", False)].reads == ["LIMIT"]
    # an `if` that calls something at import is module-level code
    edit(root, "m/core.py", "(3, 98)", "(3, 98) and print()")
    _, files = read_change(root)
    assert files[0].module_lines == [4]


@pytest.fixture()
def renamed_repo(tmp_path: Path, clean_graph, neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    root, out = recorded(tmp_path, {"calc/__init__.py": "", "calc/core.py": RENAME_CORE, "calc/signs.py": SIGNS,
                                    "tests/test_core.py": RENAME_TESTS})
    return root, out, clean_graph


def test_a_rename_or_a_move_answers_with_the_run_of_the_old_name(renamed_repo, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root, out, driver = renamed_repo
    # the class is renamed: the run of its methods answers (test_box built one), not its static
    # closure (make() names it, but test_make never took that branch)
    edit(root, "calc/core.py", "class Box:\n    def __init__(self, v):", "class _Box:\n    def __init__(self, v: int):")
    edit(root, "calc/core.py", "return Box(x)", "return _Box(x)")
    edit(root, "tests/test_core.py", "import Box, make", "import _Box as Box, make")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    by = {s.name: s for s in res.symbols}
    assert (by["calc.core._Box"].change, by["calc.core._Box"].old_name, by["calc.core._Box"].answered_by) == \
        ("renamed", "calc.core.Box", "coverage (renamed)")
    assert by["calc.core.make"].answered_by == "coverage" and by["calc.core.make"].tests == 0
    assert "tests/test_core.py::test_box" in res.pytest_args and "coverage (renamed)" in evidence_of(res)[
        "tests/test_core.py::test_box"]
    assert "tests/test_core.py::test_make" not in res.pytest_args
    assert "tests/test_core.py::test_make" in {t.nodeid for t in res.not_run}
    git(root, "checkout", "-q", "--", ".")
    # a module moved to another file (the tests follow the import): the run of the old name answers
    git(root, "mv", "calc/signs.py", "calc/sign.py")
    edit(root, "tests/test_core.py", "from calc.signs import sign", "from calc.sign import sign")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    moved = [s for s in res.symbols if s.name == "calc.sign.sign"]
    assert [(s.change, s.old_name, s.old_path, s.coverage, s.answered_by, s.tests) for s in moved] == [
        ("moved", "calc.signs.sign", "calc/signs.py", "recorded", "coverage (moved)", 1)]
    assert "coverage (moved)" in evidence_of(res)["tests/test_core.py::test_sign"]


def test_a_test_moved_since_the_run_keeps_its_recorded_lines(renamed_repo, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    root, out, driver = renamed_repo
    body = "def test_box():\n    assert Box(2).get() == 4\n"
    edit(root, "tests/test_core.py", body + "\n\n", "")
    (root / "tests" / "test_box.py").write_text("from calc.core import Box\n\n\n" + body, encoding="utf-8")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)  # the test the change deletes is not listed
    assert evidence_of(res) == {"tests/test_box.py::test_box": "changed"}
    assert [s.answered_by for s in res.symbols if s.change == "deleted"] == ["nothing (deleted)"]
    git(root, "add", "-A")
    git(root, "commit", "-qm", "move test_box")
    assert main(["code", "refresh", str(root), "-o", str(out), *ONTO]) == 0  # the run is kept as recorded
    edit(root, "calc/core.py", "return double(self.v)", "return double(self.v) + 0")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    assert evidence_of(res) == {"tests/test_box.py::test_box": "coverage"}  # measured as test_core.test_box
    assert all(t.nodeid for t in res.tests)
    # a static path from a moved test the run measured without it running the line is overruled
    edit(root, "calc/core.py", "        return Box(x)\n", "        return Box(x + 1)\n")
    res = diff_impact(driver, neo4j_settings.neo4j, root, code=neo4j_settings.code)
    assert "tests/test_box.py::test_box" in res.pytest_args  # it ran Box.get
    assert "tests/test_core.py::test_make" not in res.pytest_args
