"""Dynamic evidence in the code graph: a real coverage run with per-test contexts, imported with
``extract --coverage``, loaded into the real Neo4j and unioned with the static closure by
``ask impact``; the closure's cap; a code graph loads without embeddings.

The tiny package is written here, so which test reaches which function, statically or only at run
time, is known by construction: ``test_direct`` calls ``core.area`` by name (static and coverage),
``test_dynamic`` reaches it through ``getattr`` (coverage only), ``test_skipped`` names it in code
that never runs (static only)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import coverage
import pytest

from graphrag_got.cli import main
from graphrag_got.code import vocabulary as v
from graphrag_got.code.coverage import RECORDED_DOCUMENT, UNMATCHED_CONTEXT, _test_key
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.code.impact import impact
from graphrag_got.config import Settings
from graphrag_got.errors import CorpusError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology

REPO = Path(__file__).resolve().parents[1]
CODE_ONTOLOGY = REPO / "ontology" / "code.json"

TREE = {
    "shapes/__init__.py": "",
    "shapes/core.py": (
        "def helper(x):\n"
        "    return x * 2\n"
        "\n"
        "\n"
        "def area(w, h):\n"
        "    return helper(w) * h / 2\n"
        "\n"
        "\n"
        "def unused():\n"
        "    return 0\n"
        "\n"
        "\n"
        "def outer():\n"
        "    def inner():\n"
        "        return 1\n"
        "    return inner\n"
    ),
    "tests/test_shapes.py": (
        "import pytest\n"
        "from shapes import core\n"
        "from shapes.core import area\n"
        "\n"
        "\n"
        "def test_direct():\n"
        "    assert area(2, 3) == 6\n"
        "\n"
        "\n"
        "@pytest.mark.parametrize('name', ['area'])\n"
        "def test_dynamic(name):\n"
        "    assert getattr(core, name)(1, 1) == 1\n"
        "\n"
        "\n"
        "def test_skipped():\n"
        "    if False:\n"
        "        area(0, 0)\n"
        "\n"
        "\n"
        "INNER = core.outer()\n"
        "\n"
        "\n"
        "def test_closure():\n"
        "    assert INNER() == 1\n"
    ),
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def run_coverage(root: Path, data: Path) -> Path:
    """The package's tests under pytest-cov with per-test contexts, in a fresh interpreter."""
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--cov=shapes",
                           "--cov-context=test", "--cov-report=", "tests"], cwd=root, capture_output=True, text=True,
                          timeout=300, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(root),
                                            "COVERAGE_FILE": str(data)})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert data.is_file()
    return data


def extract_and_load(driver, settings: Settings, root: Path, out: Path, *coverage_files: Path):  # type: ignore[no-untyped-def]
    onto = Ontology.from_file(CODE_ONTOLOGY)
    summary = run_code_extraction(onto, root, out, coverage=coverage_files)
    return summary, load_extraction(driver, settings.neo4j, summary.out_path, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)


def by_name(result) -> dict[str, str]:  # type: ignore[no-untyped-def]
    return {t.name: t.evidence_label for t in result.tests}


@pytest.fixture()
def shapes(tmp_path: Path) -> Path:
    return write_tree(tmp_path / "repo", TREE)


# ------------------------------------------------------------------------------ without Neo4j
def test_context_keys_drop_phase_and_parameters() -> None:
    assert _test_key("tests/test_x.py::TestA::test_b[1-a|b]|run") == "tests/test_x.py::TestA::test_b"
    assert _test_key("tests/test_x.py::test_b|setup") == "tests/test_x.py::test_b"
    assert _test_key("test_x.TestA.test_b") == "test_x.TestA.test_b"


def test_coverage_becomes_executes_facts_one_document_per_test_file(shapes: Path, tmp_path: Path) -> None:
    data = run_coverage(shapes, tmp_path / "run1.coverage")
    summary = run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), shapes, tmp_path / "e.json", coverage=[data])
    ext = Extraction.read(summary.out_path)
    facts = {(r.subject, r.object): r.attributes for r in ext.relations if r.relation == v.EXECUTES}
    assert set(facts) == {("test_shapes.test_direct", "shapes.core.area"), ("test_shapes.test_direct", "shapes.core.helper"),
                          ("test_shapes.test_dynamic", "shapes.core.area"), ("test_shapes.test_dynamic", "shapes.core.helper"),
                          ("test_shapes.test_closure", "shapes.core.outer.inner")}  # outer itself ran at import
    assert facts[("test_shapes.test_direct", "shapes.core.area")] == {"source": "coverage", "lines": "6"}
    docs = [d for d in ext.documents if d.id.startswith("coverage:")]
    assert [d.id for d in docs] == ["coverage:tests/test_shapes.py", RECORDED_DOCUMENT]
    # the state the run measured: every function of the measured file and every test of the run, as they were
    recorded = {e.name: e.properties for e in ext.entities if "recorded_fingerprint" in e.properties}
    assert set(recorded) == {"shapes.core.helper", "shapes.core.area", "shapes.core.unused", "shapes.core.outer",
                             "shapes.core.outer.inner", "test_shapes.test_direct", "test_shapes.test_dynamic",
                             "test_shapes.test_closure"}  # test_skipped ran no measured line: no context
    assert all(p["recorded_fingerprint"] == p["fingerprint"] for p in recorded.values())
    assert recorded["shapes.core.area"]["recorded_start_line"] == "5"
    report = summary.extra["coverage"]
    assert (report.contexts, report.contexts_matched, report.contexts_unmatched) == (3, 3, [])
    assert report.files_matched == report.files_measured and report.relations == 5
    assert not ext.rejections


def test_unmatched_contexts_and_files_are_counted_and_recorded(shapes: Path, tmp_path: Path) -> None:
    data = coverage.CoverageData(basename=str(tmp_path / "made.coverage"))
    data.set_context("tests/test_shapes.py::test_direct|run")
    data.add_lines({str(shapes / "shapes" / "core.py"): [2, 6]})
    data.set_context("tests/test_gone.py::test_removed|run")
    data.add_lines({str(shapes / "shapes" / "core.py"): [2], "/elsewhere/vendor/other.py": [1]})
    data.write()
    summary = run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), shapes, tmp_path / "e.json",
                                  coverage=[tmp_path / "made.coverage"])
    report = summary.extra["coverage"]
    assert report.contexts_unmatched == ["tests/test_gone.py::test_removed|run"]
    assert report.files_unmatched == ["/elsewhere/vendor/other.py"]
    ext = Extraction.read(summary.out_path)
    assert {(s.path, s.reason) for s in ext.skipped_files} == {
        ("tests/test_gone.py::test_removed|run", UNMATCHED_CONTEXT), ("/elsewhere/vendor/other.py", "coverage_file_unmatched")}
    assert any("contexts matching no test (1" in line for line in report.lines())


def test_a_data_file_without_test_contexts_is_refused(shapes: Path, tmp_path: Path) -> None:
    data = coverage.CoverageData(basename=str(tmp_path / "plain.coverage"))
    data.add_lines({str(shapes / "shapes" / "core.py"): [2]})
    data.write()
    with pytest.raises(CorpusError, match="no per-test context.*--cov-context=test"):
        run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), shapes, tmp_path / "e.json",
                            coverage=[tmp_path / "plain.coverage"])
    with pytest.raises(CorpusError, match="not found"):
        run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), shapes, tmp_path / "e.json",
                            coverage=[tmp_path / "missing.coverage"])


# ------------------------------------------------------------------------------ with Neo4j
def test_impact_unions_static_and_coverage_and_reimport_replaces(clean_graph, neo4j_settings: Settings,  # type: ignore[no-untyped-def]
                                                                 shapes: Path, tmp_path: Path) -> None:
    data = run_coverage(shapes, tmp_path / "run1.coverage")
    extract_and_load(clean_graph, neo4j_settings, shapes, tmp_path / "e1.json", data)
    res = impact(clean_graph, neo4j_settings.neo4j, "core.area", code=neo4j_settings.code)
    assert by_name(res) == {"test_shapes.test_direct": "static exact + coverage",
                            "test_shapes.test_dynamic": "coverage", "test_shapes.test_skipped": "static exact"}
    helper = impact(clean_graph, neo4j_settings.neo4j, "core.helper", code=neo4j_settings.code)
    assert by_name(helper)["test_shapes.test_dynamic"] == "coverage"  # ran it through area
    assert helper.tests[0].distance == 0
    assert "tests/test_shapes.py::test_dynamic  [coverage]" in "\n".join(res.lines())
    assert impact(clean_graph, neo4j_settings.neo4j, "core.unused", code=neo4j_settings.code).tests == []
    nested = impact(clean_graph, neo4j_settings.neo4j, "core.outer", code=neo4j_settings.code)  # the closure's body is part of outer's text
    assert [n.name for n in nested.changed] == ["shapes.core.outer.inner"]
    # the static resolver types INNER by outer()'s return value, so both kinds of evidence find the test
    assert by_name(nested) == {"test_shapes.test_closure": "static exact + coverage"}

    # the tests change and run again: the newer data file replaces the evidence of that test file
    write_tree(shapes, {"tests/test_shapes.py": TREE["tests/test_shapes.py"].replace(
        "    assert getattr(core, name)(1, 1) == 1\n", "    assert getattr(core, 'unused')() == 0\n")})
    data2 = run_coverage(shapes, tmp_path / "run2.coverage")
    _, loaded = extract_and_load(clean_graph, neo4j_settings, shapes, tmp_path / "e2.json", data2)
    assert loaded.documents_updated >= 1
    assert by_name(impact(clean_graph, neo4j_settings.neo4j, "core.area", code=neo4j_settings.code)) == {
        "test_shapes.test_direct": "static exact + coverage", "test_shapes.test_skipped": "static exact"}
    assert by_name(impact(clean_graph, neo4j_settings.neo4j, "core.unused", code=neo4j_settings.code)) == {"test_shapes.test_dynamic": "coverage"}

    # extracted without coverage: the evidence documents leave the graph
    _, loaded = extract_and_load(clean_graph, neo4j_settings, shapes, tmp_path / "e3.json")
    assert loaded.documents_pruned == 2  # the test file's evidence and the state the run recorded
    assert impact(clean_graph, neo4j_settings.neo4j, "core.unused", code=neo4j_settings.code).tests == []


def test_cli_extract_with_coverage_and_impact_json(clean_graph, shapes: Path, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    data = run_coverage(shapes, tmp_path / "run.coverage")
    out = tmp_path / "code.json"
    onto = ["--ontology", str(CODE_ONTOLOGY)]
    assert main(["extract", "--extractor", "code", str(shapes), "-o", str(out), "--coverage", str(data), *onto]) == 0
    printed = capsys.readouterr().out
    assert "3 test context(s), 3 matched to a test" in printed and "5 EXECUTES fact(s)" in printed
    assert main(["load", str(out), *onto]) == 0
    assert "embeddings: none for a code graph" in capsys.readouterr().out
    assert main(["ask", "impact", "shapes.core.area", "--json"]) == 0
    data_out = json.loads(capsys.readouterr().out)
    assert data_out["counts"]["tests_by_evidence"] == {"static": 1, "coverage": 1, "both": 1}
    assert data_out["fixed_point"] is True and data_out["cut"] is False
    rows = {t["name"]: t for t in data_out["tests"]}
    assert rows["test_shapes.test_dynamic"]["executed"] == "shapes.core.area (lines 6)"
    assert main(["extract", str(shapes), "--coverage", str(data), *onto]) == 1  # the LLM extractor: refused
    assert "--coverage applies to --extractor code only" in capsys.readouterr().err


CHAIN = {f"m{i}.py": (f"from m{i + 1} import f{i + 1}\n\n\ndef f{i}():\n    return f{i + 1}()\n" if i < 7
                      else f"def f{i}():\n    return 1\n") for i in range(8)}
CHAIN["test_chain.py"] = "from m0 import f0\n\n\ndef test_top():\n    assert f0() == 1\n"


def test_closure_reaches_its_fixed_point_and_the_cap_cuts_it(clean_graph, neo4j_settings: Settings,  # type: ignore[no-untyped-def]
                                                              tmp_path: Path) -> None:
    root = write_tree(tmp_path / "chain", CHAIN)
    extract_and_load(clean_graph, neo4j_settings, root, tmp_path / "c.json")
    full = impact(clean_graph, neo4j_settings.neo4j, "m7.f7", code=neo4j_settings.code)
    assert {n.name: n.distance for n in full.affected} == {f"m{i}.f{i}": 7 - i for i in range(7)}
    assert full.steps == 7 and not full.cut
    assert {t.name: t.distance for t in full.tests} == {"test_chain.test_top": 7}  # a test is not a step
    capped = impact(clean_graph, neo4j_settings.neo4j, "m7.f7",
                    code=neo4j_settings.with_overrides(impact_max_nodes=4).code)
    assert capped.cut and [n.name for n in capped.affected] == ["m6.f6", "m5.f5", "m4.f4"]
    assert capped.tests == [] and "cut at 4 nodes (GRAPHRAG_IMPACT_MAX_NODES)" in capped.lines()[1]
    assert impact(clean_graph, neo4j_settings.neo4j, "m7.f7", hops=2, code=neo4j_settings.code).affected[-1].name == "m5.f5"


def test_code_graph_loads_without_embeddings_by_default(clean_graph, neo4j_settings: Settings,  # type: ignore[no-untyped-def]
                                                        shapes: Path, tmp_path: Path) -> None:
    settings = neo4j_settings.with_overrides(embeddings=True)
    _, loaded = extract_and_load(clean_graph, settings, shapes, tmp_path / "e.json")
    assert loaded.code_graph and loaded.embeddings == {"skipped": True, "reason": "code_graph"}
    with clean_graph.session(database=settings.neo4j.database) as s:
        embedded = s.run("MATCH (n) WHERE n.embedding IS NOT NULL RETURN count(n) AS n").single()["n"]
    assert embedded == 0


BRANCHES = {
    "shapes/__init__.py": "",
    "shapes/core.py": (
        "def one():\n"
        "    return 1\n"
        "\n"
        "\n"
        "def two():\n"
        "    return 2\n"
        "\n"
        "\n"
        "def pick(flag):\n"
        "    if flag:\n"
        "        return one()\n"
        "    return two()\n"
    ),
    "tests/test_pick.py": (
        "from shapes.core import pick\n"
        "\n"
        "\n"
        "def test_first():\n"
        "    assert pick(True) == 1\n"
    ),
}


def test_recorded_run_overrules_a_static_branch_it_did_not_take(clean_graph, neo4j_settings: Settings,  # type: ignore[no-untyped-def]
                                                                tmp_path: Path) -> None:
    """Statically test_first reaches both branches of pick(); the recorded run saw it execute only one()."""
    root = write_tree(tmp_path / "repo", BRANCHES)
    data = run_coverage(root, tmp_path / "run.coverage")
    extract_and_load(clean_graph, neo4j_settings, root, tmp_path / "e.json", data)
    taken = impact(clean_graph, neo4j_settings.neo4j, "core.one", code=neo4j_settings.code)
    assert by_name(taken) == {"test_pick.test_first": "static exact + coverage"} and taken.not_run == []
    other = impact(clean_graph, neo4j_settings.neo4j, "core.two", code=neo4j_settings.code)
    assert other.tests == [] and [t.name for t in other.not_run] == ["test_pick.test_first"]
    data_out = other.to_data()
    assert data_out["pytest_args"] == [] and data_out["counts"]["static_not_run"] == 1
    assert any(line.startswith("not listed: 1 test(s)") for line in other.lines())

    # without coverage the static closure stands: the same test is listed for two()
    extract_and_load(clean_graph, neo4j_settings, root, tmp_path / "e2.json")
    alone = impact(clean_graph, neo4j_settings.neo4j, "core.two", code=neo4j_settings.code)
    assert by_name(alone) == {"test_pick.test_first": "static exact"} and alone.not_run == []
