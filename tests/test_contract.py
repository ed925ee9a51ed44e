"""The one extraction contract: the Extraction model, generic relation attributes end to end, the
schema command, and the ontology-generic core (no words of the worked example in the library)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.cli import main
from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionFileError
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import FORMAT, Extraction, Reason
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import extraction_system_prompt
from graphrag_got.ontology.schema import extraction_schema
from graphrag_got.extract.validate import Validator

from support import TEXT2KGBENCH_DATA, needs_text2kgbench

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"

# An ontology of another domain whose relations carry two attributes: one part of a fact's identity
# (an enum), one not (free text).
TRADE = {
    "nombre": "Trade",
    "clases": {"Company": {"propiedades": {"country": "string, optional"}},
               "Product": {}},
    "relaciones": [{"nombre": "SELLS", "dominio": "Company", "rango": "Product"},
                   {"nombre": "PARTNERS_WITH", "dominio": "Company", "rango": "Company", "simetrica": True}],
    "atributos_de_relacion": {
        "year": {"tipo": "enum: 2023 | 2024", "identidad": True},
        "source": {"tipo": "string", "identidad": False, "comment": "where the text says it"},
    },
}
TRADE_TEXT = "Acme sells Widgets since 2023 according to its report. Acme partners with Globex."


def _trade_answer() -> dict[str, Any]:
    return {
        "entities": [{"type": "Company", "name": "Acme"}, {"type": "Company", "name": "Globex"},
                     {"type": "Product", "name": "Widgets"}],
        "relations": [
            {"relation": "SELLS", "subject": "Acme", "subject_type": "Company", "object": "Widgets",
             "object_type": "Product", "year": "2023", "source": "its report"},
            {"relation": "SELLS", "subject": "Acme", "subject_type": "Company", "object": "Widgets",
             "object_type": "Product", "year": "2024"},
            {"relation": "PARTNERS_WITH", "subject": "Globex", "subject_type": "Company", "object": "Acme",
             "object_type": "Company", "year": "1999"},
        ],
    }


def _trade_extraction(tmp_path: Path) -> tuple[Ontology, Path]:
    onto_path = tmp_path / "trade.json"
    onto_path.write_text(json.dumps(TRADE), encoding="utf-8")
    onto = Ontology.from_file(onto_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "trade.txt").write_text(TRADE_TEXT, encoding="utf-8")
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay",
                        replay_file=tmp_path / "replay.json", chunk_min_chars=10)
    (chunk,) = [c for d in read_corpus(corpus, min_chars=10, max_chars=settings.chunking.max_chars) for c in d.chunks]
    settings.llm.replay_file.write_text(json.dumps({"responses": [{"chunk_hash": chunk.hash, "responses": [
        json.dumps(_trade_answer())]}]}), encoding="utf-8")
    summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    return onto, summary.out_path


def test_attributes_come_from_the_declaration(tmp_path: Path) -> None:
    onto, path = _trade_extraction(tmp_path)
    assert onto.identity_attributes == ("year",)
    ext = Extraction.read(path)
    assert ext.format == FORMAT
    sells = sorted((r for r in ext.relations if r.relation == "SELLS"), key=lambda r: r.attributes["year"])
    # the identity attribute separates facts; the other one is kept, not part of the key
    assert [r.attributes for r in sells] == [{"year": "2023", "source": "its report"}, {"year": "2024"}]
    (refused,) = [r for r in ext.rejections if r.reason == Reason.INVALID_ENUM_VALUE]
    assert refused.kind == "property" and refused.property == "year" and refused.value == "1999"
    assert refused.allowed == ["2023", "2024"] and refused.relation == "PARTNERS_WITH"
    schema = json.dumps(extraction_schema(onto))
    prompt = extraction_system_prompt(onto)
    for name in ("year", "source"):
        assert f'"{name}"' in schema and name in prompt
    assert "momento" not in schema and "momento" not in prompt


def test_ontology_without_attributes_gets_none() -> None:
    onto = Ontology.from_dict({"clases": {"A": {}}, "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]})
    assert onto.relation_attributes == {} and onto.identity_attributes == ()
    item = extraction_schema(onto)["properties"]["relations"]["items"]
    assert set(item["properties"]) == {"relation", "subject", "subject_type", "object", "object_type"}
    out = Validator(onto).validate({"entities": [{"type": "A", "name": "x"}, {"type": "A", "name": "y"}],
                                    "relations": [{"relation": "R", "subject": "x", "subject_type": "A",
                                                   "object": "y", "object_type": "A", "momento": "later"}]})
    # an attribute the ontology does not declare is refused (audited), the relation is kept
    assert len(out.relations) == 1 and out.relations[0].attributes == {}
    assert [r.reason for r in out.rejections] == [Reason.UNKNOWN_ATTRIBUTE]


@needs_text2kgbench
def test_text2kgbench_ontology_prompt_and_schema_have_no_attribute(tmp_path: Path, capsys) -> None:
    source = sorted((TEXT2KGBENCH_DATA / "dbpedia_webnlg" / "ontologies").glob("*.json"))[0]
    out = tmp_path / "imported.json"
    assert main(["ontology", "import", "--from", "text2kgbench", str(source), "-o", str(out)]) == 0
    capsys.readouterr()
    assert main(["--ontology", str(out), "ontology", "schema"]) == 0
    schema_text = capsys.readouterr().out
    assert main(["ontology", "show", "--prompt", str(out)]) == 0
    prompt_text = capsys.readouterr().out
    assert "momento" not in schema_text and "momento" not in prompt_text
    assert json.loads(schema_text)["properties"]["relations"]


def test_extraction_file_round_trip_and_schema_command(tmp_path: Path, capsys) -> None:
    _, path = _trade_extraction(tmp_path)
    ext = Extraction.read(path)
    again = tmp_path / "again.json"
    ext.write(again)
    assert Extraction.read(again) == ext
    assert main(["schema", "extraction"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$id"] == FORMAT and {"entities", "relations", "rejections", "repairs"} <= set(schema["properties"])


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.update(format="graphrag_got.extraction/9"), "$.format"),
        (lambda d: d["relations"][0].update(attributes={"year": {"nested": 1}}), "$.relations[0].attributes.year"),
        (lambda d: d["rejections"][0].update(reason="no_such_reason"), "$.rejections[0].reason"),
        (lambda d: d["entities"][0].update(chunk_ids=["nope"]), "$.entities[0].chunk_ids[0]"),
    ],
)
def test_bad_file_names_the_path_and_field(tmp_path: Path, mutate, where) -> None:
    _, path = _trade_extraction(tmp_path)
    data = json.loads(path.read_text(encoding="utf-8"))
    mutate(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ExtractionFileError) as info:
        Extraction.read(bad)
    assert str(bad) in str(info.value) and where in str(info.value)


def test_recorded_answers_give_the_same_counts_as_before(tmp_path: Path) -> None:
    """The refactor keeps the graph of the recorded answers: same kept entities and relations and
    the same refusals by reason as before it (88 / 88 / 83, measured on the previous release).
    This pins the raw configuration: ontology rules only, no evidence, repair or resolution."""
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay", replay_file=REPLAY,
                        evidence=False, repair=False, resolution=False, orphan_entities="keep")
    summary = run_extraction(settings.extract, Ontology.from_file(ROOT / "ontology" / "got.json"), ROOT / "corpus" / "got.txt", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert (summary.entities, summary.relations, summary.rejected_relations) == (88, 88, 83)
    assert summary.by_reason == {"object_not_extracted": 26, "object_type_mismatch": 28, "self_relation": 3,
                                 "subject_not_extracted": 2, "subject_type_mismatch": 24}
    assert summary.repairs == 0


def test_recorded_answers_counts_with_evidence_and_repair(tmp_path: Path) -> None:
    """The default evidence and repair settings on the same answers (resolution off, so only this
    step is pinned): hallucinated names are refused as not_in_text, facts whose ends never meet as
    ends_not_near, and the audited repairs recover relations the raw run refused."""
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay", replay_file=REPLAY,
                        resolution=False, orphan_entities="keep", relation_cues=False)  # cues: the ladder's +cues
    assert settings.extract.evidence and settings.extract.repair and settings.extract.evidence_window == 1
    summary = run_extraction(settings.extract, Ontology.from_file(ROOT / "ontology" / "got.json"), ROOT / "corpus" / "got.txt", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    counts = (summary.entities, summary.relations, summary.rejected_relations, summary.rejected_entities)
    assert counts == (85, 101, 63, 32)  # 101: two facts told apart only by an invented attribute value are one
    assert summary.by_reason == {"ends_not_near": 7, "not_in_text": 63, "object_not_extracted": 2,
                                 "object_type_mismatch": 21, "self_relation": 3, "subject_type_mismatch": 16}
    assert summary.repairs_by_reason == {"flipped_ends": 3, "inferred_class": 11, "majority_class": 7}
    ext = Extraction.read(summary.out_path)
    assert len(ext.repairs) == 21 and all(r.chunk_id and r.message and r.before and r.after for r in ext.repairs)
    assert all(r.evidence for r in ext.relations)


def test_library_has_no_words_of_the_worked_example() -> None:
    pattern = re.compile(r"casa stark|boda roja|juego de tronos|daenerys|faction|momento", re.IGNORECASE)
    files = [p for p in (ROOT / "graphrag_got").rglob("*") if p.is_file() and p.suffix in {".py", ".j2", ".txt", ".json"}]
    # the one exception: reading files of format /1, whose relations had a fixed `momento` field
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files if p.name != "extraction_legacy.py"
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert not hits, hits


def test_every_declared_attribute_reaches_neo4j(tmp_path: Path, neo4j_driver, neo4j_settings, clean_graph) -> None:
    """Attributes other than the worked example's are loaded, not dropped; the MERGE key is the
    identity attributes only; a reload changes nothing."""
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.graph.stats import graph_stats

    onto, path = _trade_extraction(tmp_path)
    first = load_extraction(neo4j_driver, neo4j_settings.neo4j, path, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert first.relations_unmatched == 0

    def rows() -> list[dict[str, Any]]:
        with neo4j_driver.session(database=neo4j_settings.neo4j.database) as s:
            return [r.data() for r in s.run(
                "MATCH (a)-[r:SELLS|PARTNERS_WITH]->(b) RETURN a.name AS a, type(r) AS t, b.name AS b, "
                "r.year AS year, r.source AS source ORDER BY a, t, b, year")]

    assert rows() == [
        {"a": "Acme", "t": "PARTNERS_WITH", "b": "Globex", "year": "", "source": None},
        {"a": "Acme", "t": "SELLS", "b": "Widgets", "year": "2023", "source": "its report"},
        {"a": "Acme", "t": "SELLS", "b": "Widgets", "year": "2024", "source": None},
        {"a": "Globex", "t": "PARTNERS_WITH", "b": "Acme", "year": "", "source": None},
    ]
    stats = graph_stats(neo4j_driver, neo4j_settings.neo4j, onto)
    assert stats["missing_symmetric"] == 0 and stats["violations"] == 0
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, path, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert again.documents_unchanged == 1 and again.relationships_created == 0


def test_evidence_follows_its_chunk_when_a_document_changes(tmp_path: Path, neo4j_driver, neo4j_settings,
                                                              clean_graph) -> None:
    """Each evidence sentence is stored with its chunk; rewriting the document drops the old one."""
    from graphrag_got.graph.load import load_extraction

    onto, path = _trade_extraction(tmp_path)
    load_extraction(neo4j_driver, neo4j_settings.neo4j, path, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)

    def evidence() -> list[tuple[list[str], list[str]]]:
        with neo4j_driver.session(database=neo4j_settings.neo4j.database) as s:
            return [(r["e"], r["c"]) for r in s.run(
                "MATCH ()-[r:SELLS {year: '2023'}]->() RETURN r.evidence AS e, r.evidence_chunk_ids AS c")]

    ((texts, chunks),) = evidence()
    assert texts and len(texts) == len(chunks) and all(c.startswith("trade.txt:") for c in chunks)
    assert any("2023" in t for t in texts)
    # the same fact, stated in new words: the document is rewritten, the old sentence must go
    (tmp_path / "corpus" / "trade.txt").write_text(
        "In 2023 Acme sells Widgets, as its report says. Acme partners with Globex.", encoding="utf-8")
    _, path2 = _trade_extraction_again(tmp_path, onto)
    load_extraction(neo4j_driver, neo4j_settings.neo4j, path2, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    ((texts2, chunks2),) = evidence()
    assert texts2 and all("In 2023" in t for t in texts2) and set(chunks2).isdisjoint(chunks)


def _trade_extraction_again(tmp_path: Path, onto: Ontology) -> tuple[Ontology, Path]:
    corpus = tmp_path / "corpus"
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out2", llm_provider="replay",
                        replay_file=tmp_path / "replay2.json", chunk_min_chars=10)
    (chunk,) = [c for d in read_corpus(corpus, min_chars=10, max_chars=settings.chunking.max_chars) for c in d.chunks]
    settings.llm.replay_file.write_text(json.dumps({"responses": [{"chunk_hash": chunk.hash, "responses": [
        json.dumps(_trade_answer())]}]}), encoding="utf-8")
    return onto, run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).out_path
