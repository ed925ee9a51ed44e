"""The walkthrough notebook: its source, its checked-in copy, and a real run.

``notebooks/walkthrough.py`` (jupytext percent format) is the source of truth; the checked-in
``notebooks/walkthrough.ipynb`` is produced from it with ``jupytext --sync notebooks/walkthrough.py``.
Without any service, the tests check that the two agree cell by cell, that the .ipynb carries no
outputs, and that every call the notebook makes into the package matches the current signatures
(so an API change cannot silently break the walkthrough).

The end-to-end test runs the notebook top to bottom against the real Neo4j and the embedded model,
with nbclient in a temporary working folder, the small model (GRAPHRAG_TEST_MODEL, default
qwen2.5-coder-0.5b), tight schema bounds and a three-paragraph corpus so it stays quick. The kernel
gets its settings through its environment. It asserts that no cell failed and that the outputs a
reader relies on exist (the drawing as a PNG, the extraction, the report, the HTML view), never what
the model wrote. Skipped when the model or llama-cpp-python is missing, unless
GRAPHRAG_REQUIRE_LLM=1, where that is a failure (as in tests/test_embedded_llm.py).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
from pathlib import Path
from typing import Any

import jupytext
import pytest

from graphrag_got.config import Settings
from support import TEST_MODEL, free_port, require_embedded_model

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "notebooks" / "walkthrough.py"
NOTEBOOK = ROOT / "notebooks" / "walkthrough.ipynb"
MODEL = TEST_MODEL
STALE = "notebooks/walkthrough.ipynb is stale: run `.venv/bin/jupytext --sync notebooks/walkthrough.py`"


def _cells(path: Path) -> list[tuple[str, str]]:
    return [(c.cell_type, c.source) for c in jupytext.read(path).cells]


def test_ipynb_is_in_sync_with_its_jupytext_source() -> None:
    source, notebook = _cells(SOURCE), _cells(NOTEBOOK)
    assert len(source) > 10 and {kind for kind, _ in source} == {"markdown", "code"}
    assert [kind for kind, _ in notebook] == [kind for kind, _ in source], STALE
    for i, (ours, theirs) in enumerate(zip(source, notebook)):
        assert theirs[1] == ours[1], f"cell {i} differs; {STALE}"
    assert jupytext.read(SOURCE).metadata["jupytext"]["formats"] == "ipynb,py:percent"


def test_ipynb_carries_no_outputs() -> None:
    code = [c for c in jupytext.read(NOTEBOOK).cells if c.cell_type == "code"]
    assert code
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), \
        "clear the outputs before committing notebooks/walkthrough.ipynb"


def _package_names(tree: ast.Module) -> dict[str, Any]:
    """Every ``from graphrag_got... import name`` of the notebook, resolved to the object."""
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "graphrag_got":
            module = importlib.import_module(node.module)
            for alias in node.names:
                assert hasattr(module, alias.name), f"the notebook imports {node.module}.{alias.name}, which is gone"
                names[alias.asname or alias.name] = getattr(module, alias.name)
    return names


def _callee(call: ast.Call, names: dict[str, Any]) -> tuple[str, Any] | None:
    """``f(...)`` or ``Cls.method(...)`` where ``f`` / ``Cls`` was imported from the package."""
    if isinstance(call.func, ast.Name) and call.func.id in names:
        return call.func.id, names[call.func.id]
    if (isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name)
            and call.func.value.id in names and inspect.isclass(names[call.func.value.id])):
        owner = names[call.func.value.id]
        label = f"{call.func.value.id}.{call.func.attr}"
        assert hasattr(owner, call.func.attr), f"the notebook calls {label}, which is gone"
        return label, getattr(owner, call.func.attr)
    return None


def test_notebook_calls_match_the_package_api() -> None:
    # the percent-format source is plain Python (markdown and magics are comments): line numbers are real
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"), filename=str(SOURCE))
    names = _package_names(tree)
    assert {"run_extraction", "build_report", "write_report", "load_extraction", "local_search"} <= set(names)
    checked = 0
    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        found = _callee(call, names)
        if found is None or any(isinstance(a, ast.Starred) for a in call.args):
            continue
        label, target = found
        try:
            signature = inspect.signature(target)
        except (TypeError, ValueError):  # a builtin without a signature: nothing to check
            continue
        kwargs = {k.arg: None for k in call.keywords if k.arg is not None}
        try:
            signature.bind(*[None] * len(call.args), **kwargs)
        except TypeError as exc:
            pytest.fail(f"notebooks/walkthrough.py line {call.lineno}: {label}(...) no longer matches "
                        f"{label}{signature}: {exc}", pytrace=False)
        checked += 1
    assert checked >= 15  # the walkthrough makes that many package calls: the walk did find them


@pytest.mark.neo4j
@pytest.mark.llm
def test_walkthrough_notebook_runs_end_to_end(neo4j_settings: Settings, clean_graph, tmp_path: Path) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    from nbclient.exceptions import CellExecutionError

    base = Settings.load()
    require_embedded_model(base, MODEL)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    assert [(c.cell_type, c.source) for c in nb.cells] == _cells(SOURCE), STALE

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paragraphs = (ROOT / "corpus" / "got.txt").read_text(encoding="utf-8").split("\n\n")[:3]
    (corpus / "got3.txt").write_text("\n\n".join(p.strip() for p in paragraphs) + "\n", encoding="utf-8")
    work = tmp_path / "work"
    run_dir = tmp_path / "run"  # the kernel's working folder: not the repository
    run_dir.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRAPHRAG_", "NEO4J_"))}
    env.update({
        "GRAPHRAG_LLM_PROVIDER": "llamacpp",
        "GRAPHRAG_LLAMACPP_MODEL": MODEL,
        "GRAPHRAG_MODELS_DIR": str(base.models_dir.resolve()),
        "GRAPHRAG_MAX_ENTITIES": "5",
        "GRAPHRAG_MAX_RELATIONS": "5",
        "GRAPHRAG_LLM_MAX_TOKENS": "400",
        # one thread: on a busy shared machine llama.cpp's threads spin-wait on each other (minutes
        # per chunk with 2 threads and a load of 6, where one thread stays steady); override if idle
        "GRAPHRAG_LLAMACPP_THREADS": os.environ.get("GRAPHRAG_LLAMACPP_THREADS", "1"),
        "GRAPHRAG_CORPUS": str(corpus),
        "GRAPHRAG_HOME": str(tmp_path / "home"),
        "GRAPHRAG_NOTEBOOK_DIR": str(work),
        "NEO4J_URI": neo4j_settings.neo4j.uri,
        "NEO4J_USERNAME": neo4j_settings.neo4j.username,
        "NEO4J_PASSWORD": neo4j_settings.neo4j.password,
        "NEO4J_DATABASE": neo4j_settings.neo4j.database,
        # the embedded model's llama-server (when built) on a port of its own, not the default one
        "GRAPHRAG_LLAMA_SERVER_PORT": str(free_port()),
    })  # fmt: skip
    if os.environ.get("GRAPHRAG_LLAMA_SERVER"):  # another llama-server program
        env["GRAPHRAG_LLAMA_SERVER"] = os.environ["GRAPHRAG_LLAMA_SERVER"]
    if os.environ.get("GRAPHRAG_REQUIRE_LLM"):
        env["GRAPHRAG_REQUIRE_LLM"] = os.environ["GRAPHRAG_REQUIRE_LLM"]

    timeout = int(os.environ.get("GRAPHRAG_NOTEBOOK_CELL_TIMEOUT", "600"))  # seconds per cell
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(run_dir)}})
    try:
        client.execute(env=env)
    except CellExecutionError as exc:  # the message holds the cell and its traceback
        pytest.fail(f"the notebook failed:\n{exc}", pytrace=False)
    finally:
        nbformat.write(nb, str(tmp_path / "executed.ipynb"))  # kept for inspection
        # the kernel's llama-server (started by its first model call) outlives a kernel that is shut down
        # without running its exit hooks: stop it by its home, as `graphrag-got llm stop` would
        from graphrag_got.llm import server as llm_server

        llm_server.stop(base.with_overrides(home=tmp_path / "home").files)

    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    pngs = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(pngs) == 1, "the community drawing should be one inline PNG"
    assert (work / "community.png").stat().st_size > 10_000

    extraction = json.loads((work / "out" / "extraction.json").read_text(encoding="utf-8"))
    assert extraction["counts"]["chunks"] == 3
    assert extraction["documents"][0]["id"] == "got3.txt"
    assert (work / "out" / "discarded_report.md").read_text(encoding="utf-8").strip()
    assert (work / "out" / "revalidated_edited.json").is_file()
    assert '<p id="counts">' in (work / "out" / "graph.html").read_text(encoding="utf-8")
    assert json.loads((work / "ontology_edited.json").read_text(encoding="utf-8"))
    # the loaded graph holds the notebook's document
    records, _, _ = clean_graph.execute_query("MATCH (d:Document) RETURN d.id AS id",
                                              database_=neo4j_settings.neo4j.database)
    assert [r["id"] for r in records] == ["got3.txt"]
    # every code cell ran (in order) and the HTML view was embedded
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code_cells] == list(range(1, len(code_cells) + 1))
    assert any("<iframe" in o.get("data", {}).get("text/html", "") for o in outputs)
