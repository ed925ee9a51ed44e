"""The walkthrough notebook runs top to bottom against the real Neo4j and the embedded model.

Executed with nbclient in a temporary working folder, with the small model (GRAPHRAG_TEST_MODEL,
default qwen2.5-coder-0.5b), tight schema bounds and a three-paragraph corpus so it stays quick. The
kernel gets its settings through its environment. Asserts that no cell failed and that the outputs
a reader relies on exist (the drawing as a PNG, the extraction, the report, the HTML view), never
what the model wrote. Skipped when the model or llama-cpp-python is missing, unless
GRAPHRAG_REQUIRE_LLM=1, where that is a failure (as in tests/test_embedded_llm.py).
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from support import TEST_MODEL, require_embedded_model

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
from nbclient.exceptions import CellExecutionError  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "walkthrough.ipynb"
MODEL = TEST_MODEL

pytestmark = [pytest.mark.neo4j, pytest.mark.llm]


def test_walkthrough_notebook_runs_end_to_end(neo4j_settings: Settings, clean_graph, tmp_path: Path) -> None:
    base = Settings.load()
    require_embedded_model(base, MODEL)
    # the committed notebook is what scripts/make_notebook.py generates, and carries no outputs
    nb = nbformat.read(NOTEBOOK, as_version=4)
    spec = importlib.util.spec_from_file_location("make_notebook", ROOT / "scripts" / "make_notebook.py")
    assert spec and spec.loader
    maker = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(maker)
    assert [c.source for c in maker.build().cells] == [c.source for c in nb.cells], \
        "notebooks/walkthrough.ipynb is stale: run scripts/make_notebook.py"
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")

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
        "NEO4J_URI": neo4j_settings.neo4j_uri,
        "NEO4J_USERNAME": neo4j_settings.neo4j_username,
        "NEO4J_PASSWORD": neo4j_settings.neo4j_password,
        "NEO4J_DATABASE": neo4j_settings.neo4j_database,
    })  # fmt: skip
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
                                              database_=neo4j_settings.neo4j_database)
    assert [r["id"] for r in records] == ["got3.txt"]
    # every code cell ran (in order) and the HTML view was embedded
    code_cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in code_cells] == list(range(1, len(code_cells) + 1))
    assert any("<iframe" in o.get("data", {}).get("text/html", "") for o in outputs)
