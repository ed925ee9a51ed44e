"""The package's layout is its pipeline: stage folders, small modules, no import cycle (no server, no model)."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parents[1] / "graphrag_got"
STAGES = ("ingest", "extract", "graph", "communities", "search", "llm", "ontology", "pipeline", "report", "teach",
          "common", "service", "code", "commands")
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in PACKAGE.rglob("*.py"):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def _import_graph(*, inside_functions: bool) -> nx.DiGraph:
    """Module -> the package modules it imports (a ``from pkg import module`` counts as the module);
    ``inside_functions`` adds the imports made when a function runs. Imports under
    ``if TYPE_CHECKING:`` never run and are left out."""
    modules = _modules()
    graph = nx.DiGraph()
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        todo: list[ast.AST] = list(tree.body)
        while todo:
            node = todo.pop()
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            if inside_functions or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                todo.extend(ast.iter_child_nodes(node))
            elif isinstance(node, ast.ClassDef):  # class bodies run at import time; their methods do not
                todo.extend(n for n in node.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("graphrag_got"):
                subs = [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in modules]
                targets = subs or [node.module]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names if a.name.startswith("graphrag_got")]
            graph.add_edges_from((name, t) for t in targets if t in modules and t != name)
    return graph


def test_every_stage_has_its_folder_and_the_top_level_holds_only_entry_points() -> None:
    for stage in STAGES:
        assert (PACKAGE / stage / "__init__.py").is_file(), stage
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert top == ["__init__.py", "cli.py", "errors.py"]
    assert all((PACKAGE / p / "__init__.py").is_file() for p in ("config", "prompts"))  # settings and prompts: packages


def test_no_module_is_over_the_size_limit() -> None:
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in _modules().items()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_no_import_cycle_at_import_time() -> None:
    assert list(nx.simple_cycles(_import_graph(inside_functions=False))) == []


def test_the_only_call_time_cycles_are_the_ontology_constructors() -> None:
    """``Ontology.from_file``/``from_dict``/``describe`` stay methods of the model and hand off to the
    reading, checking and describing modules when called (those modules build the model): every other
    module depends one way, also through the imports its functions make."""
    cycles = list(nx.simple_cycles(_import_graph(inside_functions=True)))
    assert all(all(m.startswith("graphrag_got.ontology.") for m in c) for c in cycles), cycles


#: The pipeline's order. A stage may import the stages before it, never one after it (also not from inside a
#: function): the foundation (errors, common, config) imports no stage; ontology and ingest come before the
#: model and extraction; the graph before what reads it; the entry points last. ``code`` (the code graph)
#: writes an extraction file and reads the graph it loads (impact, orphans): after the graph stage. ``teach``
#: (the review page, corrected passages, eval) reads extractions and their refusals: after the report.
PIPELINE = (("errors", "common", "config"), ("ontology",), ("ingest",), ("llm",), ("prompts",), ("extract",),
            ("graph",), ("code",), ("communities",), ("search",), ("report",), ("teach",), ("pipeline",), ("service",),
            ("commands",), ("cli", "__main__"))


def _stage(module: str) -> str:
    return module.split(".")[1] if "." in module else ""


def test_no_stage_imports_a_later_one() -> None:
    rank = {stage: i for i, group in enumerate(PIPELINE) for stage in group}
    graph = _import_graph(inside_functions=True)
    assert set(map(_stage, graph.nodes)) - {""} <= set(rank), "a new stage: place it in PIPELINE"
    backwards = sorted(f"{a} -> {b}" for a, b in graph.edges
                       if _stage(a) in rank and _stage(b) in rank and rank[_stage(b)] > rank[_stage(a)])
    assert backwards == []
