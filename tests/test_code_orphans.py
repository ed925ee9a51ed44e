"""`ask orphans`: what nothing defines, calls or tests, over a real Neo4j and a real coverage run.

The tree is written here: ``dead`` and ``Dead`` are called by nothing, ``dyn`` only through
``getattr`` (an orphan for the static graph, used once the recorded run is imported), ``outer``'s
``inner`` is returned in a list (nested), dunder methods and properties are not judged; after a recorded
run, ``gone`` is deleted and the graph refreshed: it is known only from the evidence (not_defined)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from graphrag_got.cli import main
from graphrag_got.code.orphans import Reason, orphans
from graphrag_got.config import Settings

REPO = Path(__file__).resolve().parents[1]
ONTO = ["--ontology", str(REPO / "ontology" / "code.json")]
CORE = ("def used():\n    return 1\n\n\n"
        "def dead():\n    return 2\n\n\n"
        "def dyn():\n    return 3\n\n\n"
        "def gone():\n    return 4\n\n\n"
        "def outer():\n    def inner():\n        return 5\n    return [inner]\n\n\n"
        "class Dead:\n    def m(self):\n        return 6\n\n\n"
        "class Alive:\n    def __repr__(self):\n        return 'A'\n\n    @property\n    def size(self):\n"
        "        return 7\n")
TESTS = ("from app import core\nfrom app.core import Alive, gone, outer, used\n\n\n"
         "def test_used():\n    assert used() == 1 and outer()[0]() == 5 and gone() == 4\n\n\n"
         "def test_alive():\n    assert Alive().size == 7\n\n\n"
         "def test_dyn():\n    assert getattr(core, 'd' + 'yn')() == 3\n")


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def listed(report) -> dict[str, tuple[str, list[str]]]:  # type: ignore[no-untyped-def]
    return {o.name: (o.reason.value, o.hints) for o in report.orphans}


def test_orphans_static_then_with_coverage_then_after_a_deletion(tmp_path: Path, clean_graph, neo4j_settings: Settings,
                                                                 capsys) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "repo"
    write(root, {"app/__init__.py": "", "app/core.py": CORE, "tests/test_core.py": TESTS})
    out = tmp_path / "code.json"
    assert main(["code", "refresh", str(root), "-o", str(out), *ONTO]) == 0
    static = orphans(clean_graph, neo4j_settings.neo4j)
    assert not static.coverage
    got = listed(static)
    assert set(got) == {"app.core.dead", "app.core.dyn", "app.core.Dead", "app.core.Dead.m", "app.core.outer.inner"}
    assert got["app.core.dead"] == ("unreferenced", ["public"])
    assert "nested: likely called through a value" in got["app.core.outer.inner"][1]
    assert any("method" in h for h in got["app.core.Dead"][1])
    assert static.excluded["dunder methods"] == 1 and static.excluded["properties"] == 1
    data = tmp_path / "run.coverage"
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=app",
                           "--cov-context=test", "--cov-report=", "tests"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root), "COVERAGE_FILE": str(data)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert main(["code", "refresh", str(root), "-o", str(out), "--coverage", str(data), *ONTO]) == 0
    covered = listed(orphans(clean_graph, neo4j_settings.neo4j))
    assert set(covered) == {"app.core.dead", "app.core.Dead", "app.core.Dead.m"}  # dyn and inner ran in the recorded run
    write(root, {"app/core.py": CORE.replace("def gone():\n    return 4\n\n\n", ""),
                 "tests/test_core.py": TESTS.replace(" and gone() == 4", "").replace("gone, ", "")})
    assert main(["code", "refresh", str(root), "-o", str(out), *ONTO]) == 0
    capsys.readouterr()
    assert main(["ask", "orphans", "--json", *ONTO]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"not_defined": 1, "unreferenced": 3}
    ghost = [o for items in report["files"].values() for o in items if o["reason"] == Reason.NOT_DEFINED.value]
    assert [o["name"] for o in ghost] == ["app.core.gone"] and "coverage evidence" in ghost[0]["hints"][0]
    assert main(["ask", "orphans", *ONTO]) == 0
    text = capsys.readouterr().out
    assert text.startswith("orphans: 4 of") and "app/core.py (3):" in text and "(no file) (1):" in text
