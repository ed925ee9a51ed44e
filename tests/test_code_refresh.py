"""`code refresh` keeps a code graph equal to a full re-extraction, commit after commit.

Real commits in a temporary git repository, with the hooks of ``docs/hooks`` installed: the
post-commit hook refreshes the graph (a real `graphrag-got code refresh` process) and the test
compares the graph it leaves with a full extraction loaded into an emptied database: the same
entities with the same properties, the same relationships with the same attributes and
provenance, the same documents. The commits edit a body, rename a callee (its caller's file is not
touched, yet its CALLS edge must change), delete a file, move a file (every name in it changes),
remove a docstring and add a file."""

from __future__ import annotations

import json
import logging
import os
import pickle
import shutil
import sys
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.code.refresh import ParseCache, refresh
from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology
from support import git, git_repo, write_files

REPO = Path(__file__).resolve().parents[1]
CODE_ONTOLOGY = REPO / "ontology" / "code.json"

TREE = {
    "shop/__init__.py": "",
    "shop/money.py": ('"""Money."""\n\n\ndef cents(x):\n    """In cents."""\n    return round(x * 100)\n\n\n'
                      "def fmt(x):\n    return f'{cents(x)} c'\n"),
    "shop/cart.py": "from shop.money import cents\n\n\ndef total(items):\n    return sum(cents(i) for i in items)\n",
    "shop/old.py": "def legacy():\n    return 0\n",
    "tests/test_cart.py": "from shop.cart import total\n\n\ndef test_total():\n    assert total([1]) == 100\n",
}


def graph_dump(driver, settings: Settings) -> dict[str, object]:  # type: ignore[no-untyped-def]
    """Everything a reader of the graph sees, provenance lists as sets."""
    def norm(props: dict[str, object]) -> dict[str, object]:
        return {k: sorted(v) if isinstance(v, list) else v for k, v in props.items()}

    with driver.session(database=settings.neo4j.database) as s:
        nodes = sorted((sorted(r["labels"]), json.dumps(norm(r["props"]), sort_keys=True))
                       for r in s.run("MATCH (e:Entity) RETURN labels(e) AS labels, properties(e) AS props"))
        rels = sorted((r["a"], r["t"], r["b"], json.dumps(norm(r["props"]), sort_keys=True))
                      for r in s.run("MATCH (a:Entity)-[r]->(b:Entity) RETURN a.uid AS a, type(r) AS t, b.uid AS b, "
                                     "properties(r) AS props"))
        docs = sorted((r["id"], r["hash"]) for r in s.run("MATCH (d:Document) RETURN d.id AS id, d.hash AS hash"))
        chunks = sorted(r["id"] for r in s.run("MATCH (c:Chunk) RETURN c.id AS id"))
    return {"nodes": nodes, "relations": rels, "documents": docs, "chunks": chunks}


def full_graph(driver, settings: Settings, root: Path, out: Path, wipe) -> dict[str, object]:  # type: ignore[no-untyped-def]
    onto = Ontology.from_file(CODE_ONTOLOGY)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        run_code_extraction(onto, Path("."), out)
    finally:
        os.chdir(cwd)
    wipe()
    load_extraction(driver, settings.neo4j, out, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    return graph_dump(driver, settings)


def same_extraction(a: Path, b: Path) -> None:
    da, db = (Extraction.read(p).model_dump(mode="json") for p in (a, b))
    for d in (da, db):
        d.pop("created")
    assert da == db


@pytest.fixture()
def hooked_repo(tmp_path: Path, neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    root = git_repo(tmp_path / "repo", {**TREE, ".gitignore": ".graphrag/\n"}, commit=False)
    for hook in ("pre-commit", "post-commit"):
        shutil.copy(REPO / "docs" / "hooks" / hook, root / ".git" / "hooks" / hook)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(REPO), "PYTHON": sys.executable, "GRAPHRAG_ONTOLOGY": str(CODE_ONTOLOGY),
           "GRAPHRAG_HOOK_RUN": "0", "NEO4J_URI": neo4j_settings.neo4j.uri}
    return root, env


def commit(root: Path, env: dict[str, str], message: str) -> str:
    git(root, "add", "-A")
    done = git(root, "commit", "-q", "-m", message, env=env)
    return done.stdout + done.stderr


def test_hooks_keep_the_graph_equal_to_a_full_extraction(hooked_repo, clean_graph, neo4j_settings: Settings,
                                                         wipe_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root, env = hooked_repo
    refreshed = root / ".graphrag" / "code.json"
    steps: list[tuple[str, dict[str, str | None]]] = [
        ("initial", {}),
        ("edit a body", {"shop/cart.py": "from shop.money import cents\n\n\ndef total(items):\n"
                                         "    return sum(cents(i) for i in items) + 0\n"}),
        ("rename a callee", {"shop/money.py": '"""Money."""\n\n\ndef to_cents(x):\n    """In cents."""\n'
                                              "    return round(x * 100)\n\n\ndef fmt(x):\n    return f'{to_cents(x)} c'\n"}),
        ("delete a file", {"shop/old.py": None}),
        ("move a file", {"shop/cart.py": None,
                         "shop/basket.py": "from shop.money import cents\n\n\ndef total(items):\n"
                                           "    return sum(cents(i) for i in items) + 0\n",
                         "tests/test_cart.py": "from shop.basket import total\n\n\ndef test_total():\n"
                                               "    assert total([1]) == 100\n"}),
        ("drop a docstring, add a file", {"shop/money.py": '"""Money."""\n\n\ndef to_cents(x):\n'
                                                           "    return round(x * 100)\n\n\ndef fmt(x):\n"
                                                           "    return f'{to_cents(x)} c'\n",
                                          "shop/tax.py": "from shop.money import fmt\n\n\ndef vat(x):\n"
                                                         "    return fmt(x * 1.2)\n"}),
    ]
    seen_output = []
    for message, files in steps:
        write_files(root, files)
        seen_output.append(commit(root, env, message))
        refreshed_graph = graph_dump(clean_graph, neo4j_settings)
        assert refreshed_graph["nodes"], f"{message}: the post-commit hook left no graph: {seen_output[-1]}"
        full = full_graph(clean_graph, neo4j_settings, root, tmp_path / "full.json", wipe_graph)
        assert refreshed_graph == full, message
        same_extraction(refreshed, tmp_path / "full.json")
    # the pre-commit hook asked the graph which tests the staged change reaches, and listed them
    assert any("reaches 1 test(s)" in out and "tests/test_cart.py::test_total" in out for out in seen_output[1:])
    names = {n[1] for n in graph_dump(clean_graph, neo4j_settings)["nodes"]}
    assert not any('"shop.cart.total"' in n or '"shop.old.legacy"' in n for n in names)


def committed_tree(tmp_path: Path) -> Path:
    """A git repository holding :data:`TREE` in one commit."""
    return git_repo(tmp_path / "repo", TREE)


def test_refresh_parses_only_what_changed_and_since_trusts_git(tmp_path: Path) -> None:
    root = committed_tree(tmp_path)
    onto = Ontology.from_file(CODE_ONTOLOGY)
    out = tmp_path / "code.json"
    _, first = refresh(onto, root, out)
    assert first.full and first.parsed == 5 and first.reused == 0
    _, again = refresh(onto, root, out)
    assert (again.parsed, again.reused, again.documents_changed) == (0, 5, [])
    write_files(root, {"shop/money.py": TREE["shop/money.py"].replace("100", "1000")})
    git(root, "commit", "-qam", "two")
    _, since = refresh(onto, root, out, since="HEAD~1")
    assert since.touched == ["shop/money.py"] and since.parsed == 1 and since.reused == 4
    # money.py changed; cart.py's facts did not (it calls cents either way)
    assert since.documents_changed == ["shop/money.py"]
    cache = ParseCache(out.with_name(out.name + ".facts"))
    assert set(cache.entries) == set(TREE)
    (out.with_name(out.name + ".facts")).write_bytes(b"not a cache")
    _, broken = refresh(onto, root, out)
    assert broken.parsed == 5  # a foreign cache file is ignored, never trusted
    full = tmp_path / "full.json"
    run_code_extraction(onto, root, full)
    same_extraction(out, full)


def test_refresh_cli_refuses_a_text_extraction_and_a_bad_revision(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write_files(root, {"a.py": "def f():\n    return 1\n"})
    text = tmp_path / "text.json"
    ext = Extraction.read(REPO / "tests" / "data" / "got_extraction.json") if (
        REPO / "tests" / "data" / "got_extraction.json").is_file() else None
    if ext is not None:
        ext.write(text)
        assert main(["code", "refresh", str(root), "-o", str(text), "--no-load", "--ontology", str(CODE_ONTOLOGY)]) == 1
        assert "not a code extraction" in capsys.readouterr().err
    assert main(["code", "refresh", str(root), "--since", "nope", "-o", str(tmp_path / "c.json"), "--no-load",
                 "--ontology", str(CODE_ONTOLOGY)]) == 1
    assert "names no commit" in capsys.readouterr().err


def test_kept_coverage_evidence_is_validated_once(tmp_path: Path, monkeypatch, caplog) -> None:  # type: ignore[no-untyped-def]
    """issue 40: a refresh keeps a coverage run's evidence as recorded, and on a real package it is most of the
    records (click: 42,000 EXECUTES facts in 574 chunks, which took most of a refresh to validate again). Its
    validation is kept beside the extraction (``<extraction>.evidence``): the next refresh validates the code's
    own chunks only, and writes the same file as validating everything (and, on the code the run measured, as
    a full extraction with the run). A damaged or foreign memo is ignored with a log line; a memo of other
    inputs is not used."""
    import coverage

    from graphrag_got.code.evidence_memo import SUFFIX
    from graphrag_got.extract.validate import Validator

    root = committed_tree(tmp_path)
    data = coverage.CoverageData(basename=str(tmp_path / "run.coverage"))
    data.set_context("tests/test_cart.py::test_total|run")
    data.add_lines({str(root / "shop" / "cart.py"): [5], str(root / "shop" / "money.py"): [6],
                    str(root / "tests" / "test_cart.py"): [5]})
    data.write()
    onto = Ontology.from_file(CODE_ONTOLOGY)
    out, memo = tmp_path / "code.json", tmp_path / ("code.json" + SUFFIX)
    calls: list[str | None] = []
    validate = Validator.validate

    def counted(self, raw, chunk_id=None, document_id=None, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(document_id)
        return validate(self, raw, chunk_id, document_id, *args, **kwargs)

    monkeypatch.setattr(Validator, "validate", counted)
    _, first = refresh(onto, root, out, coverage=[data.data_filename()])
    assert first.coverage.endswith("; validated (memo written)") and memo.is_file()
    evidence = [c for c in calls if c.startswith("coverage:")]
    assert len(evidence) == 4  # the test's chunk; the recorded state, a chunk per measured file
    monkeypatch.setattr(Validator, "validate", validate)
    full = tmp_path / "full.json"
    run_code_extraction(onto, root, full, coverage=[data.data_filename()])
    same_extraction(out, full)
    _, unchanged = refresh(onto, root, out)
    assert unchanged.coverage.endswith("(memo)")
    same_extraction(out, full)
    monkeypatch.setattr(Validator, "validate", counted)
    calls.clear()
    write_files(root, {"shop/money.py": TREE["shop/money.py"].replace("100", "1000")})
    git(root, "commit", "-qam", "two")
    _, second = refresh(onto, root, out, since="HEAD~1")
    assert second.coverage == "kept as recorded (2 document(s)); validated at an earlier refresh (memo)"
    code_chunks = [c for c in Extraction.read(out).chunks if not c.document_id.startswith("coverage:")]
    assert calls == [c.document_id for c in code_chunks]  # the code's own chunks, once each
    monkeypatch.setattr(Validator, "validate", validate)

    # the same file as validating everything again
    again = tmp_path / "again.json"
    shutil.copy(out, again)
    refresh(onto, root, again, use_cache=False)
    same_extraction(out, again)

    # a damaged memo, a foreign one, one of other inputs: ignored, the evidence validated again, the same file
    blob = memo.read_bytes()
    head = blob[:blob.index(b"\n", blob.index(b"\n") + 1) + 1]
    for damaged, log in ((head + b"not a pickle", "unreadable"), (head + pickle.dumps({"x": 1}), "other data"),
                         (b"something else\n" + blob, "not an evidence memo"),
                         (head.replace(head[-65:-1], b"0" * 64) + blob[len(head):], "changed since")):
        memo.write_bytes(damaged)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="graphrag_got.code.evidence_memo"):
            _, summary = refresh(onto, root, out)
        assert summary.coverage.endswith("; validated (memo written)"), log
        assert log in caplog.text
        same_extraction(out, again)
        assert memo.read_bytes()[len(head):] != damaged[len(head):]  # written again
    _, last = refresh(onto, root, out)
    assert last.coverage.endswith("(memo)")


def test_moved_lines_rewrite_only_their_file(clean_graph, neo4j_settings: Settings, wipe_graph,
                                             tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """issue 40: a line added at the top of a file moves every function below it (their start_line and
    end_line change). The file is written again, and only it: the files calling those functions and the
    coverage documents of the tests running them cite the functions, they do not hold their fields (on
    click with a coverage run, 9 of 112 documents and 170,000 rows were sent for a one-file commit). The
    graph still equals a clean load of the refreshed file."""
    import coverage

    root = committed_tree(tmp_path)
    data = coverage.CoverageData(basename=str(tmp_path / "run.coverage"))
    data.set_context("tests/test_cart.py::test_total|run")
    data.add_lines({str(root / "shop" / "cart.py"): [5], str(root / "shop" / "money.py"): [6]})
    data.write()
    onto = Ontology.from_file(CODE_ONTOLOGY)
    out = tmp_path / "code.json"
    ext, _ = refresh(onto, root, out, coverage=[data.data_filename()])
    load_extraction(clean_graph, neo4j_settings.neo4j, ext, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    write_files(root, {"shop/money.py": "# money\n" + TREE["shop/money.py"]})
    git(root, "commit", "-qam", "a line on top")
    ext, summary = refresh(onto, root, out, since="HEAD~1")
    chunk_doc = ext.chunk_documents()
    cents = next(e for e in ext.entities if e.name == "shop.money.cents")
    assert {chunk_doc[c] for c in cents.chunk_ids} == {"shop/money.py", "shop/cart.py", "coverage:tests/test_cart.py",
                                                       "coverage:<recorded>"}
    load = load_extraction(clean_graph, neo4j_settings.neo4j, ext, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert summary.documents_changed == ["shop/money.py"]
    assert (load.documents_updated, load.documents_added) == (1, 0)
    start = clean_graph.execute_query("MATCH (e:Entity {name: 'shop.money.cents'}) RETURN e.start_line AS s",
                                      database_=neo4j_settings.neo4j.database).records
    assert [r["s"] for r in start] == ["5"]
    refreshed = graph_dump(clean_graph, neo4j_settings)
    wipe_graph()
    load_extraction(clean_graph, neo4j_settings.neo4j, out, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)  # the refreshed file, loaded clean
    assert graph_dump(clean_graph, neo4j_settings) == refreshed
