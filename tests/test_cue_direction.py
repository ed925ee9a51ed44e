"""Cue direction: reverse cues (`indicios_inversos`) in the ontology, how a sentence's wording orders a
relation's ends (`ChunkText.stated_order`), and the audited `reversed_by_wording` repair (records, settings,
what is left alone, revalidation without calls)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.config import Settings
from graphrag_got.errors import OntologyError
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import RepairReason
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.repair import ChunkAnswer, repair_answers
from graphrag_got.extract.validate import Validator

LOYAL = ["loyal", "serves"]
MENTOR_CUES = ["mentor", "train", "supervis"]
MENTOR_REVERSE = ["trained under", "student of"]


def _onto(**extra: Any) -> Ontology:
    return Ontology.from_dict({"classes": {"Person": {}, "House": {}}, "relations": [
        {"name": "LOYAL_TO", "domain": ["Person", "House"], "range": ["Person", "House"], "cues": LOYAL},
        {"name": "MENTORED", "domain": "Person", "range": "Person", "cues": MENTOR_CUES,
         "reverse_cues": MENTOR_REVERSE},
        {"name": "MEMBER_OF", "domain": "Person", "range": "House", "cues": ["member", "belongs"]},
        {"name": "ALLIED_WITH", "domain": "House", "range": "House", "symmetric": True, "cues": ["ally", "allied"]},
        {"name": "KNOWS", "domain": "Person", "range": "Person"}], **extra})


# ---------------------------------------------------------------------------- the ontology
def test_reverse_cues_are_read_in_both_languages_count_as_cues_and_stay_out_of_the_hash():
    en = _onto().relation("MENTORED")
    assert en.reverse_cues == ("trained under", "student of") and en.all_cues == (*MENTOR_CUES, *MENTOR_REVERSE)
    es = Ontology.from_dict({"clases": {"Persona": {}}, "relaciones": [
        {"nombre": "ENSENA_A", "dominio": "Persona", "rango": "Persona", "indicios": ["enseña"],
         "indicios_inversos": ["alumno de"]}]})
    assert es.relation("ENSENA_A").reverse_cues == ("alumno de",)
    assert _onto().relation("LOYAL_TO").reverse_cues == ()

    def hashed(reverse: list[str] | None) -> str:
        rel: dict[str, Any] = {"nombre": "ENSENA_A", "dominio": "Persona", "rango": "Persona"}
        if reverse is not None:
            rel["indicios_inversos"] = reverse
        return Ontology.from_dict({"clases": {"Persona": {}}, "relaciones": [rel]}).hash

    assert hashed(["alumno de"]) == hashed(["discípulo de"]) == hashed(None)  # cached answers stay valid


@pytest.mark.parametrize("rel, path, words", [
    ({"indicios_inversos": ["--"]}, "$.relaciones[0].indicios_inversos[0]", "has no word"),
    ({"indicios_inversos": []}, "$.relaciones[0].indicios_inversos", ""),
    ({"simetrica": True, "indicios_inversos": ["casada con"]}, "$.relaciones[0].indicios_inversos", "symmetric"),
])
def test_a_bad_reverse_cue_is_an_error_at_its_json_path(rel: dict[str, Any], path: str, words: str):
    with pytest.raises(OntologyError) as err:
        Ontology.from_dict({"clases": {"Persona": {}}, "relaciones": [
            {"nombre": "R", "dominio": "Persona", "rango": "Persona", **rel}]})
    assert path in str(err.value) and words in str(err.value)


# ---------------------------------------------------------------------------- the wording's order
def test_the_sentence_with_a_cue_between_the_names_tells_the_direction():
    text = ChunkText("Ana, of House Vell, is loyal to Bran. Later Bran travels north.")
    assert text.stated_order("Ana", "Bran", LOYAL).direction == "forward"
    reverse = text.stated_order("Bran", "Ana", LOYAL)
    assert reverse is not None and reverse.direction == "reverse"
    assert text.text[reverse.start:reverse.end] == "Ana, of House Vell, is loyal to Bran"
    # no cue between the two names (the cue after both, or only in another sentence): no direction
    assert ChunkText("Ana met Bran and stayed loyal.").stated_order("Bran", "Ana", LOYAL) is None
    assert ChunkText("Ana met Bran. Bran is loyal.").stated_order("Bran", "Ana", LOYAL) is None


def test_a_reverse_cue_turns_the_reading_around_and_hides_the_plain_cues_inside_it():
    text = ChunkText("Sefa Anand, a young astronomer, trained under Joachim Brede at the Institute.")
    # "trained under" holds the plain cue "train", but the wording puts the student first
    assert text.stated_order("Joachim Brede", "Sefa Anand", MENTOR_CUES, MENTOR_REVERSE).direction == "forward"
    assert text.stated_order("Sefa Anand", "Joachim Brede", MENTOR_CUES, MENTOR_REVERSE).direction == "reverse"
    # without the reverse cue the same sentence reads the other way round: that is what they are for
    assert text.stated_order("Joachim Brede", "Sefa Anand", MENTOR_CUES).direction == "reverse"


def test_sentences_that_disagree_or_cues_inside_names_give_no_direction():
    both = ChunkText("Ana is loyal to Bran. Bran is loyal to Ana.")
    assert both.stated_order("Ana", "Bran", LOYAL) is None
    named = ChunkText("Bran rides with the Loyal Guard and Ana.")
    assert named.stated_order("Ana", "Bran", LOYAL) is None  # a capitalized word inside a sentence is a name
    masked = ChunkText("Bran of the loyal men met Ana.")
    assert masked.stated_order("Ana", "Bran", LOYAL).direction == "reverse"
    assert masked.stated_order("Ana", "Bran", LOYAL, names=["Bran of the loyal men"]) is None


# ---------------------------------------------------------------------------- the repair
def ent(name: str, ctype: str = "Person") -> dict[str, Any]:
    return {"name": name, "type": ctype}


def rel(relation: str, subj: str, obj: str, stype: str = "Person", otype: str = "Person") -> dict[str, Any]:
    return {"relation": relation, "subject": subj, "subject_type": stype, "object": obj, "object_type": otype}


def _repair(onto: Ontology, text: str, answer: dict[str, Any], rules: EvidenceRules | None = EvidenceRules()):
    v = Validator(onto, evidence=rules)
    chunk = ChunkAnswer("c0", "d", answer, ChunkText(text))
    (fixed,) = repair_answers(v, [chunk])
    out = v.validate(fixed.answer, "c0", "d", chunk.text, extra_entities=fixed.extra_entities)
    return fixed, {(r.subject, r.relation, r.object) for r in out.relations}


def test_a_fact_worded_the_other_way_round_has_its_ends_swapped_with_a_record():
    text = "Bran crosses the sea. Ana, of House Vell, is loyal to Bran and gives him her fleet."
    answer = {"entities": [ent("Bran"), ent("Ana"), ent("House Vell", "House")],
              "relations": [rel("LOYAL_TO", "Bran", "Ana")]}
    fixed, kept = _repair(_onto(), text, answer)
    assert kept == {("Ana", "LOYAL_TO", "Bran")}
    (repair,) = fixed.repairs
    assert repair.reason == RepairReason.REVERSED_BY_WORDING == "reversed_by_wording" and repair.kind == "relation"
    assert (repair.before["subject"], repair.after["subject"]) == ("Bran", "Ana")
    assert "Ana, of House Vell, is loyal to Bran" in repair.message and repair.chunk_id == "c0"


@pytest.mark.parametrize("why, answer, rules", [
    ("the sentence agrees with the model",
     {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("LOYAL_TO", "Ana", "Bran")]}, EvidenceRules()),
    ("the reverse breaks domain and range",
     {"entities": [ent("Bran"), ent("Ana"), ent("House Vell", "House")],
      "relations": [rel("MEMBER_OF", "Ana", "House Vell", otype="House")]}, EvidenceRules()),
    ("a symmetric relation has no direction",
     {"entities": [ent("House Vell", "House"), ent("House Orm", "House")],
      "relations": [rel("ALLIED_WITH", "House Orm", "House Vell", "House", "House")]}, EvidenceRules()),
    ("a relation without cues says nothing about its wording",
     {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("KNOWS", "Bran", "Ana")]}, EvidenceRules()),
    ("GRAPHRAG_CUE_DIRECTION off",
     {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("LOYAL_TO", "Bran", "Ana")]},
     EvidenceRules(direction=False)),
    ("cues off", {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("LOYAL_TO", "Bran", "Ana")]},
     EvidenceRules(cues=False)),
    ("no evidence", {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("LOYAL_TO", "Bran", "Ana")]}, None),
])
def test_what_the_wording_repair_leaves_alone(why: str, answer: dict[str, Any], rules: EvidenceRules | None):
    text = ("Ana is loyal to Bran. Ana, who knows Bran, rides with House Vell, allied with House Orm. "
            "House Vell is allied with House Orm. House Vell welcomes a new member, Ana.")
    fixed, kept = _repair(_onto(), text, answer, rules)
    assert fixed.repairs == [], why
    (triple,) = answer["relations"]
    assert kept == {(triple["subject"], triple["relation"], triple["object"])}, why


def test_the_setting_reaches_the_rules():
    cfg = Settings()
    assert EvidenceRules.from_settings(cfg.extract).direction is True
    cfg = Settings(cue_direction=False)
    assert EvidenceRules.from_settings(cfg.extract).direction is False


def test_extract_records_the_swap_and_revalidate_reapplies_it_without_calls(tmp_path: Path):
    corpus = tmp_path / "c.txt"
    corpus.write_text("Ana, of House Vell, is loyal to Bran and gives him her fleet.\n", encoding="utf-8")
    onto_path = tmp_path / "ontology.json"
    onto_path.write_text(json.dumps({"classes": {"Person": {}, "House": {}}, "relations": [
        {"name": "LOYAL_TO", "domain": "Person", "range": "Person", "cues": LOYAL}]}), encoding="utf-8")
    onto = Ontology.from_file(onto_path)
    answer = {"entities": [ent("Bran"), ent("Ana")], "relations": [rel("LOYAL_TO", "Bran", "Ana")]}

    def settings(**over: Any) -> Settings:
        return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay",
                        replay_file=tmp_path / "replay.json", chunk_min_chars=10, ontology_path=onto_path, **over)

    (chunk,) = [c for d in read_corpus(corpus, min_chars=10, max_chars=1500) for c in d.chunks]
    (tmp_path / "replay.json").write_text(json.dumps({"format": "graphrag_got.replay/1", "model": "test", "responses": [
        {"chunk_id": chunk.id, "chunk_hash": chunk.hash, "responses": [json.dumps(answer)]}]}), encoding="utf-8")
    cfg = settings()
    first = run_extraction(cfg.extract, onto, corpus, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    data = json.loads(first.out_path.read_text(encoding="utf-8"))
    assert [(r["subject"], r["object"]) for r in data["relations"]] == [("Ana", "Bran")]
    assert [r["reason"] for r in data["repairs"]] == ["reversed_by_wording"]
    (tmp_path / "replay.json").unlink()  # a model call now would fail
    cfg = settings(cue_direction=False)
    off = run_extraction(cfg.extract, onto, corpus, revalidate=True, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    data = json.loads(off.out_path.read_text(encoding="utf-8"))
    assert off.llm_calls == 0 and data["repairs"] == []
    assert [(r["subject"], r["object"]) for r in data["relations"]] == [("Bran", "Ana")]
    cfg = settings()
    again = run_extraction(cfg.extract, onto, corpus, revalidate=True, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    data = json.loads(again.out_path.read_text(encoding="utf-8"))
    assert again.llm_calls == 0 and [r["reason"] for r in data["repairs"]] == ["reversed_by_wording"]
