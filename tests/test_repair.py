"""Audited repair: each repair kind, the cases where nothing is guessed, the records it leaves in
extraction.json and the report, `--no-repair`, and `--revalidate` re-applying repairs with no call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.cli import main
from graphrag_got.config import Settings
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import Extraction, Reason, RepairReason
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.repair import ChunkAnswer, ClassVotes, RepairedAnswer, repair_answers
from graphrag_got.report.discarded_build import build_report
from graphrag_got.report.discarded_render import to_html, to_markdown
from graphrag_got.extract.validate import Validator

from support import CallCounter

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(GOT)


def ent(name: str, ctype: str, **props: str) -> dict[str, Any]:
    return {"name": name, "type": ctype, **props}


def rel(relation: str, subj: str, stype: str | None, obj: str, otype: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"relation": relation, "subject": subj, "object": obj}
    if stype is not None:
        out["subject_type"] = stype
    if otype is not None:
        out["object_type"] = otype
    return out


def run(onto: Ontology, chunks: list[tuple[str, dict[str, Any]]], *, evidence: bool = True,
        window: int = 1) -> tuple[list[RepairedAnswer], list[Any]]:
    """Repair then validate each (text, answer); returns the repaired answers and the validations."""
    v = Validator(onto, evidence=EvidenceRules(window=window) if evidence else None)
    answers = [ChunkAnswer(f"c{i}", "d", answer, ChunkText(text)) for i, (text, answer) in enumerate(chunks)]
    fixed = repair_answers(v, answers)
    return fixed, [v.validate(f.answer, a.chunk_id, a.document_id, a.text, extra_entities=f.extra_entities)
                   for a, f in zip(answers, fixed)]


def triples(validation: Any) -> set[tuple[str, str, str, str, str]]:
    return {(r.subject, r.subject_type, r.relation, r.object, r.object_type) for r in validation.relations}


# ---------------------------------------------------------------------------- inferred class
def test_end_never_extracted_gets_the_only_class_the_range_allows(onto: Ontology) -> None:
    text = "Robb Stark participa en la Boda Roja, en Los Gemelos."
    answer = {"entities": [ent("Robb Stark", "Personaje")],
              "relations": [rel("PARTICIPA_EN", "Robb Stark", "Personaje", "Boda Roja", "Evento")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert triples(out) == {("Robb Stark", "Personaje", "PARTICIPA_EN", "Boda Roja", "Evento")}
    assert not [r for r in out.rejections if r.kind == "relation"]
    (repair,) = fixed.repairs
    assert repair.reason == RepairReason.INFERRED_CLASS and repair.kind == "entity"
    assert repair.after == {"name": "Boda Roja", "type": "Evento"} and repair.before["object"] == "Boda Roja"
    assert "only class the range of PARTICIPA_EN allows" in repair.message and repair.chunk_id == "c0"
    assert {e.name for e in out.entities} == {"Robb Stark", "Boda Roja"}


def test_end_never_extracted_keeps_the_allowed_class_the_triple_gives(onto: Ontology) -> None:
    text = "La Casa Tyrell es aliada de la Casa Lannister."
    answer = {"entities": [ent("Casa Tyrell", "CasaNoble")],
              "relations": [rel("ALIADA_DE", "Casa Tyrell", "CasaNoble", "Casa Lannister", "CasaNoble")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert triples(out) and fixed.repairs[0].after == {"name": "Casa Lannister", "type": "CasaNoble"}


def test_no_repair_when_two_classes_are_possible_and_none_is_given(onto: Ontology) -> None:
    text = "La Casa Tyrell es aliada de la Compañía Dorada."
    answer = {"entities": [ent("Casa Tyrell", "CasaNoble")],
              "relations": [rel("ALIADA_DE", "Casa Tyrell", "CasaNoble", "Compañía Dorada", None)]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert fixed.repairs == [] and not out.relations
    assert [r.reason for r in out.rejections] == [Reason.UNKNOWN_CLASS]  # the model's own mistake, unchanged


def test_no_inference_for_a_name_the_text_does_not_contain(onto: Ontology) -> None:
    answer = {"entities": [ent("Robb Stark", "Personaje")],
              "relations": [rel("PARTICIPA_EN", "Robb Stark", "Personaje", "Boda Púrpura", "Evento")]}
    (fixed,), (out,) = run(onto, [("Robb Stark participa en la Boda Roja.", answer)], evidence=False)
    assert fixed.repairs == []
    assert [r.reason for r in out.rejections] == [Reason.OBJECT_NOT_EXTRACTED]


@pytest.mark.parametrize("text, inferred", [
    ("Joffrey Baratheon ocupa el trono y gobierna.", False),  # "el trono": an article, then only lower case
    ("Joffrey Baratheon ocupa El Trono y gobierna.", True),   # written as a name
    ("Joffrey Baratheon ocupa trono y gobierna.", True),      # no article: lower case alone is not enough
])
def test_no_inference_for_a_common_noun_phrase(onto: Ontology, text: str, inferred: bool) -> None:
    name = "el trono" if "el trono" in text else "El Trono" if "El Trono" in text else "trono"
    answer = {"entities": [ent("Joffrey Baratheon", "Personaje")],
              "relations": [rel("GOBIERNA", "Joffrey Baratheon", "Personaje", name, "Region")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert [r.reason for r in fixed.repairs] == ([RepairReason.INFERRED_CLASS] if inferred else [])
    assert bool(out.relations) is inferred
    if not inferred:
        assert [r.reason for r in out.rejections] == [Reason.OBJECT_NOT_EXTRACTED]
    assert ChunkText("Ana sirve al rey.").common_noun("al rey") is False  # "al" is no leading article
    caseless = ChunkText("Ana crosses the שער at dawn.")
    assert caseless.mentions("the שער") and caseless.common_noun("the שער") is False  # no case: never lower case


def test_no_inference_when_the_corpus_lists_the_name_with_another_class(onto: Ontology) -> None:
    chunks = [("Sansa Stark vuelve a Invernalia.", {"entities": [ent("Invernalia", "Region")], "relations": []}),
              ("Sansa Stark participa en Invernalia.",
               {"entities": [ent("Sansa Stark", "Personaje")],
                "relations": [rel("PARTICIPA_EN", "Sansa Stark", "Personaje", "Invernalia", "Evento")]})]
    fixed, outs = run(onto, chunks)
    assert all(f.repairs == [] for f in fixed) and not outs[1].relations


# ---------------------------------------------------------------------------- majority class
def test_entity_class_is_corrected_to_a_strict_majority(onto: Ontology) -> None:
    text = "Jon Snow es miembro de la Guardia de la Noche."
    other = {"entities": [ent("Guardia de la Noche", "Organizacion", tipo="militar")], "relations": []}
    wrong = {"entities": [ent("Jon Snow", "Personaje"), ent("Guardia de la Noche", "CasaNoble", lema="x")],
             "relations": [rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion")]}
    fixed, outs = run(onto, [(text, other), (text, other), (text, wrong)])
    assert triples(outs[2]) == {("Jon Snow", "Personaje", "ES_MIEMBRO_DE", "Guardia de la Noche", "Organizacion")}
    (repair,) = fixed[2].repairs
    assert repair.reason == RepairReason.MAJORITY_CLASS and repair.kind == "entity"
    assert repair.before["type"] == "CasaNoble"
    assert repair.after == {"name": "Guardia de la Noche", "type": "Organizacion"}
    assert "strict majority" in repair.message and "Organizacion in 2" in repair.message and "lema" in repair.message


def test_plurality_without_strict_majority_corrects_only_to_make_a_relation_valid(onto: Ontology) -> None:
    votes = [("Braavos es rica.", {"entities": [ent("Braavos", c)], "relations": []})
             for c in ("Region", "Region", "Region", "Organizacion")]  # with the two below: Region 3 of 6
    alone = ("Braavos es rica.", {"entities": [ent("Braavos", "Personaje")], "relations": []})
    used = ("Cersei Lannister gobierna Braavos.",
            {"entities": [ent("Cersei Lannister", "Personaje"), ent("Braavos", "Organizacion")],
             "relations": [rel("GOBIERNA", "Cersei Lannister", "Personaje", "Braavos", "Region")]})
    fixed, outs = run(onto, [*votes, alone, used])
    assert ClassVotes([a for _, a in [*votes, alone, used]], onto.classes).majority("Braavos") == ("Region", False)
    assert fixed[4].repairs == []  # a plurality alone does not retype an entity nothing uses
    assert [r.reason for r in fixed[5].repairs] == [RepairReason.MAJORITY_CLASS]
    assert "makes a relation valid" in fixed[5].repairs[0].message
    assert triples(outs[5]) == {("Cersei Lannister", "Personaje", "GOBIERNA", "Braavos", "Region")}


def test_a_tie_between_classes_corrects_nothing(onto: Ontology) -> None:
    chunks = [("Aguasdulces.", {"entities": [ent("Aguasdulces", "Region")], "relations": []}),
              ("Aguasdulces.", {"entities": [ent("Aguasdulces", "Personaje")], "relations": []})]
    fixed, _ = run(onto, chunks)
    assert all(f.repairs == [] for f in fixed)


def test_triple_end_typed_against_its_entity_is_retyped_to_the_majority(onto: Ontology) -> None:
    text = "Robb Stark gobierna el Norte."
    answer = {"entities": [ent("Robb Stark", "Personaje"), ent("Norte", "Region")],
              "relations": [rel("GOBIERNA", "Robb Stark", "CasaNoble", "Norte", "Region")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert triples(out) == {("Robb Stark", "Personaje", "GOBIERNA", "Norte", "Region")}
    (repair,) = fixed.repairs
    assert repair.reason == RepairReason.MAJORITY_CLASS and repair.kind == "relation"
    assert repair.before["subject_type"] == "CasaNoble" and repair.after["subject_type"] == "Personaje"


# ---------------------------------------------------------------------------- flipped ends
def test_ends_are_flipped_when_only_the_reverse_fits(onto: Ontology) -> None:
    text = "Olenna Tyrell pertenece a la Casa Tyrell."
    answer = {"entities": [ent("Olenna Tyrell", "Personaje"), ent("Casa Tyrell", "CasaNoble")],
              "relations": [rel("PERTENECE_A", "Casa Tyrell", "Personaje", "Olenna Tyrell", "CasaNoble")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert triples(out) == {("Olenna Tyrell", "Personaje", "PERTENECE_A", "Casa Tyrell", "CasaNoble")}
    (repair,) = fixed.repairs  # the types stay where the model wrote them: a flip only
    assert repair.reason == RepairReason.FLIPPED_ENDS and repair.before["subject"] == "Casa Tyrell"
    assert repair.after["subject"] == "Olenna Tyrell" and "swapped" in repair.message


def test_no_repair_is_kept_unless_the_repaired_triple_is_valid(onto: Ontology) -> None:
    """A flip that fits the ontology but whose ends never meet in the text is not applied."""
    text = "Olenna Tyrell llega. Pasan los años. Mucho después cae la Casa Tyrell."
    answer = {"entities": [ent("Olenna Tyrell", "Personaje"), ent("Casa Tyrell", "CasaNoble")],
              "relations": [rel("PERTENECE_A", "Casa Tyrell", "Personaje", "Olenna Tyrell", "CasaNoble")]}
    (fixed,), (out,) = run(onto, [(text, answer)], window=0)
    assert fixed.repairs == [] and fixed.answer.as_json() == answer
    assert [r.reason for r in out.rejections] == [Reason.SUBJECT_TYPE_MISMATCH]
    (again,), _ = run(onto, [(text, answer)], evidence=False)  # without evidence the flip is valid
    assert [r.reason for r in again.repairs] == [RepairReason.FLIPPED_ENDS]


def test_valid_triples_and_symmetric_relations_are_left_alone(onto: Ontology) -> None:
    text = "Jon Snow se encuentra con Daenerys Targaryen."
    answer = {"entities": [ent("Jon Snow", "Personaje"), ent("Daenerys Targaryen", "Personaje")],
              "relations": [rel("SE_ENCUENTRA_CON", "Daenerys Targaryen", "Personaje", "Jon Snow", "Personaje")]}
    (fixed,), (out,) = run(onto, [(text, answer)])
    assert fixed.repairs == [] and len(out.relations) == 1


# ---------------------------------------------------------------------------- through the pipeline
PARAGRAPHS = ["Robb Stark participa en la Boda Roja, en Los Gemelos.",
              "Olenna Tyrell pertenece a la Casa Tyrell, que gobierna Altojardín."]
ANSWERS = [
    {"entities": [ent("Robb Stark", "Personaje")],
     "relations": [rel("PARTICIPA_EN", "Robb Stark", "Personaje", "Boda Roja", "Evento")]},
    {"entities": [ent("Olenna Tyrell", "Personaje"), ent("Casa Tyrell", "CasaNoble"),
                  ent("Wolfgang Frey", "Personaje")],
     "relations": [rel("PERTENECE_A", "Casa Tyrell", "Personaje", "Olenna Tyrell", "CasaNoble")]},
]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "mini.txt").write_text("\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    return d


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10, resolution=False, **kw)


def _chat(counter: CallCounter) -> FakeListChatModel:
    return FakeListChatModel(responses=[json.dumps(a, ensure_ascii=False) for a in ANSWERS], callbacks=[counter])


def test_repairs_are_records_of_the_extraction_and_revalidate_reapplies_them_without_calls(
        onto: Ontology, corpus: Path, tmp_path: Path) -> None:
    counter = CallCounter()
    cfg = _settings(tmp_path)
    first = run_extraction(cfg.extract, onto, corpus, chat=_chat(counter), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert counter.calls == 2 and first.repairs == 2
    assert first.repairs_by_reason == {"flipped_ends": 1, "inferred_class": 1}
    assert any("audited repairs 2" in line for line in first.lines())
    ext = Extraction.read(first.out_path)
    assert ext.counts.repairs == 2 and ext.counts.repairs_by_reason == first.repairs_by_reason
    assert {(r.subject, r.relation, r.object) for r in ext.relations} == {
        ("Robb Stark", "PARTICIPA_EN", "Boda Roja"), ("Olenna Tyrell", "PERTENECE_A", "Casa Tyrell")}
    assert [r.reason for r in ext.rejections] == [Reason.NOT_IN_TEXT]  # Wolfgang Frey

    cfg = _settings(tmp_path)
    again = run_extraction(cfg.extract, onto, corpus, chat=_chat(counter), revalidate=True, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert counter.calls == 2 and again.llm_calls == 0 and again.revalidated
    ext2 = Extraction.read(again.out_path)
    assert ext2.repairs == ext.repairs and ext2.relations == ext.relations

    cfg = _settings(tmp_path, repair=False)
    off = run_extraction(cfg.extract, onto, corpus, chat=_chat(counter), revalidate=True, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert counter.calls == 2 and off.repairs == 0 and off.relations == 0
    assert off.by_reason == {"not_in_text": 1, "object_not_extracted": 1, "subject_type_mismatch": 1}


def test_cli_no_repair_flag_turns_repairs_off(onto: Ontology, corpus: Path, tmp_path: Path, capsys,
                                              monkeypatch) -> None:
    counter = CallCounter()
    cfg = _settings(tmp_path)
    run_extraction(cfg.extract, onto, corpus, chat=_chat(counter), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)  # fills the cache
    label = f"custom:{FakeListChatModel.__name__}"
    replay = tmp_path / "replay.json"
    from graphrag_got.ingest.chunking import read_corpus

    chunks = read_corpus(corpus, min_chars=10, max_chars=1500)[0].chunks
    replay.write_text(json.dumps({"format": "graphrag_got.replay/1", "model": label, "responses": [
        {"chunk_id": c.id, "chunk_hash": c.hash, "responses": [json.dumps(a, ensure_ascii=False)]}
        for c, a in zip(chunks, ANSWERS)]}, ensure_ascii=False), encoding="utf-8")
    monkeypatch.setenv("GRAPHRAG_CHUNK_MIN_CHARS", "10")
    monkeypatch.setenv("GRAPHRAG_RESOLUTION", "false")
    base = ["--home", str(tmp_path / "h2"), "--out", str(tmp_path / "o2"), "--provider", "replay",
            "--replay-file", str(replay), "extract", str(corpus)]
    assert main(base) == 0
    assert "audited repairs 2" in capsys.readouterr().out
    assert main([*base, "--revalidate", "--no-repair"]) == 0
    text = capsys.readouterr().out
    assert "audited repairs" not in text and "relations kept 0" in text and "subject_type_mismatch 1" in text
    assert Extraction.read(tmp_path / "o2" / "extraction.json").repairs == []


def test_report_shows_repairs_by_reason_with_examples(onto: Ontology, corpus: Path, tmp_path: Path) -> None:
    cfg = _settings(tmp_path)
    summary = run_extraction(cfg.extract, onto, corpus, chat=_chat(CallCounter()), files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    report = build_report(summary.out_path, onto)
    assert report.totals.repairs == 2 and report.repair_reasons == {"flipped_ends": 1, "inferred_class": 1}
    flip = next(g for g in report.repair_groups if g.reason == "flipped_ends")
    (ex,) = flip.examples
    assert ex.before == "(Casa Tyrell : Personaje) -[PERTENECE_A]-> (Olenna Tyrell : CasaNoble)"
    assert ex.after == "(Olenna Tyrell : Personaje) -[PERTENECE_A]-> (Casa Tyrell : CasaNoble)"
    assert flip.relations == {"PERTENECE_A": 1} and ex.excerpt is not None
    md = to_markdown(report)
    assert "## Audited repairs" in md and "| inferred_class | 1 |" in md
    assert "Boda Roja : Evento" in md and "| audited repairs | 2 |" in md
    html = to_html(report)
    assert "<h2>Audited repairs</h2>" in html and "Olenna Tyrell : Personaje" in html
    assert next(g for g in report.entity_groups if g.reason == "not_in_text").suggestion is None  # 1x: below min_repeat


# ---------------------------------------------------------------------------- narrowed class
@pytest.fixture(scope="module")
def crew() -> Ontology:
    """A made-up ontology with a hierarchy: an Astronaut and a Politician are kinds of Person."""
    return Ontology.from_dict({
        "nombre": "crew",
        "clases": {"Person": {"propiedades": {"nickname": "string opcional, what friends call them"}},
                   "Astronaut": {"subclase_de": "Person"}, "Politician": {"subclase_de": "Person"},
                   "Mission": {}, "Place": {}, "Party": {}},
        "relaciones": [
            {"nombre": "MISSION", "dominio": "Astronaut", "rango": "Mission"},
            {"nombre": "BIRTH_PLACE", "dominio": "Person", "rango": "Place"},
            {"nombre": "PARTY", "dominio": "Politician", "rango": "Party"},
        ],
    })


def test_a_general_class_is_narrowed_to_the_subclass_its_facts_take(crew: Ontology) -> None:
    text = "Ann Lee, born in Oslo, flew on Apollo 9."
    answer = {"entities": [ent("Ann Lee", "Person", nickname="Annie"), ent("Oslo", "Place"),
                           ent("Apollo 9", "Mission")],
              "relations": [rel("MISSION", "Ann Lee", "Astronaut", "Apollo 9", "Mission"),
                            rel("BIRTH_PLACE", "Ann Lee", None, "Oslo", "Place")]}
    # without the repair the listed class refuses the MISSION fact
    plain = Validator(crew).validate(answer)
    assert [r.reason for r in plain.rejections if r.kind == "relation"] == [Reason.SUBJECT_TYPE_MISMATCH]
    (fixed,), (out,) = run(crew, [(text, answer)], evidence=False)
    assert triples(out) == {("Ann Lee", "Astronaut", "MISSION", "Apollo 9", "Mission"),
                            ("Ann Lee", "Astronaut", "BIRTH_PLACE", "Oslo", "Place")}
    (repair,) = fixed.repairs
    assert repair.reason == RepairReason.NARROWED_CLASS and repair.kind == "entity"
    assert repair.before == ent("Ann Lee", "Person", nickname="Annie") and repair.after == ent("Ann Lee", "Astronaut")
    assert "MISSION" in repair.message and "a kind of Person" in repair.message
    assert "properties nickname dropped" in repair.message   # Astronaut declares no nickname: said, not silent
    assert {(e.name, e.type) for e in out.entities} >= {("Ann Lee", "Astronaut")}


@pytest.mark.parametrize("relations", [
    # two unrelated subclasses would each fit one fact: no guess
    [rel("MISSION", "Ann Lee", None, "Apollo 9", "Mission"), rel("PARTY", "Ann Lee", None, "Greens", "Party")],
    # the listed class already fits every fact
    [rel("BIRTH_PLACE", "Ann Lee", None, "Oslo", "Place")],
])
def test_no_narrowing_without_one_subclass_every_fact_takes(crew: Ontology, relations: list[Any]) -> None:
    text = "Ann Lee, born in Oslo, flew on Apollo 9 for the Greens."
    answer = {"entities": [ent("Ann Lee", "Person"), ent("Oslo", "Place"), ent("Apollo 9", "Mission"),
                           ent("Greens", "Party")], "relations": relations}
    (fixed,), _outs = run(crew, [(text, answer)], evidence=False)
    assert not [r for r in fixed.repairs if r.reason == RepairReason.NARROWED_CLASS]


def test_no_narrowing_to_a_class_that_is_not_a_subclass(crew: Ontology) -> None:
    """A Mission listed where a Person is expected is a wrong fact, not a class to narrow."""
    text = "Apollo 9 was born in Oslo."
    answer = {"entities": [ent("Apollo 9", "Mission"), ent("Oslo", "Place")],
              "relations": [rel("BIRTH_PLACE", "Apollo 9", None, "Oslo", "Place")]}
    (fixed,), (out,) = run(crew, [(text, answer)], evidence=False)
    assert not fixed.repairs and not out.relations
