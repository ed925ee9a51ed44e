"""The impact benchmark's bound (benchmarks/code/bound.py, calltrace.py): real calls traced from a real
pytest run of a small package, the closure over them, and the precision ceiling."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from benchmarks.code.bound import TakenGraph, ceiling, def_lines, summarize
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.extract.extraction import Extraction
from graphrag_got.ontology.model import Ontology

REPO = Path(__file__).resolve().parents[1]


def _package(root: Path) -> None:
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "src" / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "src" / "pkg" / "mod.py").write_text(textwrap.dedent("""\
        import functools


        def helper(x):
            return x * 2


        @functools.lru_cache(maxsize=None)
        def cached(x):
            return helper(x)


        def entry(flag):
            if flag:
                return cached(3)
            return 0


        def unused():
            return helper(1)
        """), encoding="utf-8")
    (root / "tests" / "conftest.py").write_text(textwrap.dedent("""\
        import pytest

        from pkg.mod import helper


        @pytest.fixture
        def doubled():
            return helper(5)
        """), encoding="utf-8")
    (root / "tests" / "test_mod.py").write_text(textwrap.dedent("""\
        from pkg.mod import entry


        def test_taken():
            assert entry(True) == 6


        def test_not_taken():
            assert entry(False) == 0


        def test_fixture(doubled):
            assert doubled == 10
        """), encoding="utf-8")


def test_traced_calls_give_the_closure_a_perfect_call_graph_lists(tmp_path: Path) -> None:
    root = tmp_path / "pkg-1.0"
    _package(root)
    calls = tmp_path / "calls.json"
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    proc = subprocess.run([sys.executable, str(REPO / "benchmarks" / "code" / "calltrace.py"), str(root), str(calls),
                           "-q", "-p", "no:cacheprovider", "tests"], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    edges = {(r[0], r[2], r[3], r[5]) for r in json.loads(calls.read_text(encoding="utf-8"))["edges"]}
    # a call through functools' cache wrapper links the two functions of the tree it joins
    assert ("src/pkg/mod.py", "entry", "src/pkg/mod.py", "cached") in edges
    assert ("src/pkg/mod.py", "cached", "src/pkg/mod.py", "helper") in edges
    assert ("tests/test_mod.py", "test_taken", "src/pkg/mod.py", "entry") in edges
    assert not any(callee == "unused" for *_, callee in edges)  # never called: no edge

    onto = Ontology.from_file(REPO / "ontology" / "code.json")
    summary = run_code_extraction(onto, root, tmp_path / "ext.json")
    graph = TakenGraph(Extraction.read(summary.out_path), calls, root)
    assert graph.pytest_exit_code == 0 and graph.calls == len(edges) and graph.fixture_links >= 1
    names = {n.rsplit("::", 1)[-1] for n in graph.closure("pkg.mod.helper")}
    # the fixture link stands for pytest's call; test_not_taken never ran helper, but it calls entry,
    # which another test saw calling cached -> helper: the closure cannot tell the branches apart
    assert names == {"test_taken", "test_fixture", "test_not_taken"}
    assert ceiling(true=2, listed=len(names), hits=2) == 0.667
    assert {n.rsplit("::", 1)[-1] for n in graph.closure("pkg.mod.entry")} == {"test_taken", "test_not_taken"}


def test_def_lines_map_the_first_decorator_to_the_def(tmp_path: Path) -> None:
    f = tmp_path / "m.py"
    f.write_text("import functools\n\n@functools.cache\n@staticmethod\ndef f():\n    pass\n", encoding="utf-8")
    assert def_lines(f) == {5: 5, 3: 5}


def test_ceiling_is_the_best_precision_a_superset_closure_can_reach() -> None:
    assert ceiling(true=10, listed=40, hits=10) == 0.25  # all true found among 40: adding edges cannot help
    assert ceiling(true=10, listed=4, hits=2) == 0.833  # 2 wrong listed, 8 true still to add at best: 10/12
    assert ceiling(true=3, listed=0, hits=0) == 1.0
    assert summarize([1.0, 0.5, 0.95]) == {"mean": 0.817, "targets_below": 1, "targets": 3, "at": 0.9}
