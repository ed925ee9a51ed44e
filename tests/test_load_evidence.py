"""`load` checks each relation's evidence against its chunk's text at the given offsets (issue 27):
evidence that differs is refused (not stored), counted in the load summary with one audit record
each, and printed by the CLI; the relation itself and its correct evidence are loaded."""

from __future__ import annotations

import json
import logging
from pathlib import Path


from graphrag_got.cli import main
from graphrag_got.graph.load import load_extraction
from test_service import GOLD, ONTO, ROOT, meeting_sentence



def _tampered(path: Path) -> tuple[Path, str, str]:
    """The gold extraction whose Jon/Daenerys meeting carries three evidence items: the sentence at its
    offsets, the same offsets with one word changed, and offsets past the chunk's end."""
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    chunk, start, sentence = meeting_sentence(data)
    altered = sentence.replace("Daenerys", "Cersei", 1)
    assert altered != sentence
    end = start + len(sentence)
    rel = next(r for r in data["relations"] if r["relation"] == "SE_ENCUENTRA_CON"
               and {r["subject_key"], r["object_key"]} == {"jon snow", "daenerys targaryen"})
    rel["evidence"] = [
        {"chunk_id": chunk["id"], "start": start, "end": end, "text": sentence},
        {"chunk_id": chunk["id"], "start": start, "end": end, "text": altered},
        {"chunk_id": chunk["id"], "start": len(chunk["text"]) + 5, "end": len(chunk["text"]) + 50, "text": "x"},
    ]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path, sentence, altered


def test_evidence_that_differs_from_the_chunk_is_refused_and_audited(clean_graph, neo4j_settings, tmp_path,
                                                                     caplog) -> None:  # type: ignore[no-untyped-def]
    path, sentence, altered = _tampered(tmp_path / "extraction.json")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", embeddings=False)
    with caplog.at_level(logging.WARNING, logger="graphrag_got.graph.load"):
        summary = load_extraction(clean_graph, settings.neo4j, path, ONTO, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    assert summary.evidence_refused == 2
    first, second = summary.evidence_refusals
    assert first["where"].endswith(".evidence[1]") and "differs" in first["problem"]
    assert first["given"] == altered and first["chunk_text_there"] == sentence
    assert second["where"].endswith(".evidence[2]") and "past the chunk" in second["problem"]
    assert summary.relations_refused == 0 and summary.as_dict()["evidence_refused"] == 2
    assert any("2 evidence sentence(s) refused" in r.getMessage() for r in caplog.records)
    with clean_graph.session(database=settings.neo4j.database) as s:
        stored = [list(r["ev"]) for r in s.run(
            "MATCH (:Personaje {key: 'jon snow'})-[r:SE_ENCUENTRA_CON]-(:Personaje {key: 'daenerys targaryen'}) "
            "RETURN r.evidence AS ev")]
    assert stored and all(ev == [sentence] for ev in stored)  # the relation is loaded, the bad evidence is not


def test_cli_load_prints_the_refused_evidence(clean_graph, neo4j_settings, tmp_path, capsys,
                                              monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GRAPHRAG_EMBEDDINGS", "0")
    path, _, _ = _tampered(tmp_path / "extraction.json")
    code = main(["load", str(path), "--ontology", str(ROOT / "ontology" / "got.json"), "--home", str(tmp_path / "home"),
])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "evidence refused (its text is not the chunk's text at its offsets; not stored): 2" in out
    assert ".evidence[1]" in out and ".evidence[2]" in out
