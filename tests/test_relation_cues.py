"""Relation cues (`indicios`): declaration and errors, matching rules, the `no_cue` refusal, the setting,
the ontology hash, and the report's suggestion."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.errors import OntologyError
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.extraction import Reason
from graphrag_got.ontology.model import Ontology
from graphrag_got.report.discarded_build import build_report
from graphrag_got.report.discarded_render import to_markdown
from graphrag_got.extract.validate import Validator

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


def _onto(cues=("casad", "se cas", "boda")) -> Ontology:
    rel = {"nombre": "CASADO_CON", "dominio": "Persona", "rango": "Persona", "simetrica": True}
    if cues is not None:
        rel["indicios"] = list(cues)
    return Ontology.from_dict({"clases": {"Persona": {}, "Evento": {}}, "relaciones": [
        rel, {"nombre": "CONOCE", "dominio": "Persona", "rango": "Persona"},
        {"nombre": "ASISTE_A", "dominio": "Persona", "rango": "Evento"}]})


def test_cues_are_read_in_both_languages_and_left_out_of_the_hash():
    es = _onto()
    assert es.relation("CASADO_CON").cues == ("casad", "se cas", "boda")
    assert es.relation("CONOCE").cues == ()
    en = Ontology.from_dict({"classes": {"Persona": {}, "Evento": {}}, "relations": [
        {"name": "CASADO_CON", "domain": "Persona", "range": "Persona", "symmetric": True, "cues": ["casad"]},
        {"name": "CONOCE", "domain": "Persona", "range": "Persona"},
        {"name": "ASISTE_A", "domain": "Persona", "range": "Evento"}]})
    assert en.relation("CASADO_CON").cues == ("casad",)
    # editing the cues keeps the hash (cached answers stay valid), anything else changes it
    assert _onto(("otra",)).hash == _onto().hash == _onto(None).hash
    assert Ontology.from_file(GOT).relation("CASADO_CON").cues  # the worked example declares some


@pytest.mark.parametrize("cues, path", [(["--"], "$.relaciones[0].indicios[0]"), ([], "$.relaciones[0].indicios"),
                                        ([""], "$.relaciones[0].indicios[0]"), ("casad", "$.relaciones[0].indicios")])
def test_a_bad_cue_is_an_error_at_its_json_path(cues, path):
    with pytest.raises(OntologyError) as err:
        Ontology.from_dict({"clases": {"Persona": {}}, "relaciones": [
            {"nombre": "CASADO_CON", "dominio": "Persona", "rango": "Persona", "indicios": cues}]})
    assert path in str(err.value)


def test_cue_matching_folds_case_and_accents_takes_a_word_beginning_and_skips_entity_names():
    text = ChunkText("Ana se casó con Luis. Ana y Luis asisten a la boda roja.")
    first = text.sentences[0]
    second = text.sentences[1]
    assert text.has_cue(*first, ["SE CAS"])           # "se casó": the last cue word is a word's beginning
    assert not text.has_cue(*first, ["casad"])        # "casó" does not begin with "casad"
    assert not text.has_cue(*first, ["se casa con"])  # "casa" must be a whole word before the last one
    assert text.has_cue(*second, ["boda"])
    assert not text.has_cue(*second, ["boda"], names=["Boda Roja"])  # inside an entity's mention: no cue


def _check(onto: Ontology, text: str, rules: EvidenceRules | None = None):
    v = Validator(onto, evidence=rules or EvidenceRules())
    ents = [{"name": "Ana", "type": "Persona"}, {"name": "Luis", "type": "Persona"},
            {"name": "Boda Roja", "type": "Evento"}]
    rels = [{"relation": "CASADO_CON", "subject": "Ana", "subject_type": "Persona", "object": "Luis",
             "object_type": "Persona"},
            {"relation": "CONOCE", "subject": "Ana", "subject_type": "Persona", "object": "Luis",
             "object_type": "Persona"}]
    return v.validate({"entities": ents, "relations": rels}, "c1", "d1", text)


def test_a_relation_with_cues_is_kept_only_where_the_text_states_it():
    onto = _onto()
    kept = _check(onto, "Ana se casa con Luis en la Boda Roja.")
    assert {r.relation for r in kept.relations} == {"CASADO_CON", "CONOCE"}
    refused = _check(onto, "Ana y Luis asisten a la Boda Roja.")
    assert [r.relation for r in refused.relations] == ["CONOCE"]  # a relation without cues is not checked
    (rej,) = [r for r in refused.rejections if r.kind == "relation"]
    assert rej.reason == Reason.NO_CUE and rej.allowed == ["casad", "se cas", "boda"]
    assert "'casad'" in rej.message and "'Ana'" in rej.message
    # off by setting; and without evidence (no text) nothing is checked
    off = _check(onto, "Ana y Luis asisten a la Boda Roja.", EvidenceRules(cues=False))
    assert {r.relation for r in off.relations} == {"CASADO_CON", "CONOCE"}
    cfg = Settings(relation_cues=False)
    assert EvidenceRules.from_settings(cfg.extract).cues is False
    cfg = Settings()
    assert EvidenceRules.from_settings(cfg.extract).cues is True


def test_the_report_suggests_what_to_do_with_no_cue_refusals(tmp_path):
    onto = _onto()
    val = _check(onto, "Ana y Luis asisten a la Boda Roja.")
    data = {"format": "graphrag_got.extraction/2", "rejections": [r.model_dump(mode="json") for r in val.rejections],
            "relations": [], "entities": []}
    text = to_markdown(build_report(data, onto, min_repeat=1))
    assert "no_cue" in text and "indicios" in text and "revalidate" in text


def test_capitalized_words_inside_a_sentence_are_name_parts_unless_the_cue_is_capitalized():
    text = ChunkText("Ana y Luis asisten a la Boda Roja. Boda sencilla la de Ana.")
    first, second = text.sentences
    assert not text.has_cue(*first, ["boda"])  # part of a name no entity lists
    assert text.has_cue(*first, ["Boda"])      # a cue written capitalized matches capitalized words
    assert text.has_cue(*second, ["boda"])     # a sentence's first word is not a name for that


def test_names_the_corpus_lists_elsewhere_hide_their_cue_words():
    text = ChunkText("Ana y Luis asisten a la gran boda de primavera.")
    span = text.sentences[0]
    assert text.has_cue(*span, ["boda"])
    assert not text.has_cue(*span, ["boda"], exact_names=["gran boda de primavera"])


def test_extract_hides_cue_words_inside_names_other_chunks_list(tmp_path):
    import json

    from graphrag_got.ingest.chunking import read_corpus
    from graphrag_got.extract.run import run_extraction

    corpus = tmp_path / "c.txt"
    corpus.write_text("Luis prepara la gran boda de primavera, que es un evento.\n\n"
                      "Ana y Luis asisten a la gran boda de primavera.\n", encoding="utf-8")
    onto = _onto()
    first = {"entities": [{"type": "Persona", "name": "Luis"}, {"type": "Evento", "name": "gran boda de primavera"}],
             "relations": [{"relation": "ASISTE_A", "subject": "Luis", "subject_type": "Persona",
                            "object": "gran boda de primavera", "object_type": "Evento"}]}
    second = {"entities": [{"type": "Persona", "name": "Ana"}, {"type": "Persona", "name": "Luis"}],
              "relations": [{"relation": "CASADO_CON", "subject": "Ana", "subject_type": "Persona", "object": "Luis",
                             "object_type": "Persona"}]}
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay",
                        replay_file=tmp_path / "replay.json", chunk_min_chars=10, orphan_entities="keep")
    chunks = [c for d in read_corpus(corpus, min_chars=settings.chunking.min_chars, max_chars=settings.chunking.max_chars)
              for c in d.chunks]
    assert len(chunks) == 2
    (tmp_path / "replay.json").write_text(json.dumps({"format": "graphrag_got.replay/1", "model": "test", "responses": [
        {"chunk_id": c.id, "chunk_hash": c.hash, "responses": [json.dumps(a)]} for c, a in zip(chunks, (first, second))]}),
        encoding="utf-8")
    summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    data = json.loads(summary.out_path.read_text(encoding="utf-8"))
    # "boda" in the second chunk is part of a name the first chunk's answer lists: no cue for CASADO_CON
    assert [r["relation"] for r in data["relations"]] == ["ASISTE_A"]
    assert [r["reason"] for r in data["rejections"] if r["kind"] == "relation"] == ["no_cue"]
