"""Evidence: names must be mentioned in their chunk, a relation's ends must meet within the sentence
window, kept relations carry their sentences to extraction.json, Neo4j rows and local search."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_got.common.text_match import ChunkText, fold, name_words
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, EntityRecord, Evidence, Extraction, Reason
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.validate import Validator
from graphrag_got.extract.aggregate import aggregate

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"

TEXT = ("Jon Snow es miembro de la Guardia de la Noche. Años después, en Rocadragón, se encuentra con "
        "Daenerys Targaryen. Los Inmaculados combaten por ella.")


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(GOT)


def _validator(onto: Ontology, window: int = 1, threshold: float = 0.85) -> Validator:
    # mentions and windows only: relation cues have their own tests (test_relation_cues.py)
    return Validator(onto, evidence=EvidenceRules(window=window, threshold=threshold, cues=False))


def _ent(name: str, ctype: str) -> dict[str, str]:
    return {"name": name, "type": ctype}


def _rel(relation: str, subj: str, stype: str, obj: str, otype: str) -> dict[str, str]:
    return {"relation": relation, "subject": subj, "subject_type": stype, "object": obj, "object_type": otype}


# ---------------------------------------------------------------------------- mentions
def test_fold_keeps_one_character_per_character() -> None:
    text = "Rocadragón, ÁNGEL y ﬁn"
    assert len(fold(text)) == len(text)
    assert fold(text).startswith("rocadragon, angel y")


def test_name_is_found_whatever_the_case_accents_and_leading_article() -> None:
    text = ChunkText(TEXT)
    (m,) = text.find("ROCADRAGON")
    assert TEXT[m.start:m.end] == "Rocadragón" and m.score == 1.0
    (g,) = text.find("La Guardia de la Noche")  # the article is not required in the text
    assert TEXT[g.start:g.end] == "Guardia de la Noche"
    assert name_words("The Night's Watch") == ["night", "s", "watch"]
    assert name_words("La") == ["la"]  # a name made only of an article keeps it


def test_plural_inflection_is_tolerated_both_ways() -> None:
    text = ChunkText(TEXT)
    assert text.mentions("Inmaculado")  # the text says "Inmaculados"
    assert ChunkText("El ejército de los caminante blanco").mentions("Caminantes Blancos")
    assert not ChunkText("Un as en la manga").mentions("A")  # "as" is no plural of a one-letter word


def test_fuzzy_mention_needs_the_threshold() -> None:
    text = ChunkText("Edmure Tully se casa con Roslin Frey en Los Gemelos.")
    (m,) = text.find("Rosslin Frey", threshold=0.85)  # one letter off: ratio 0.96
    assert 0.85 <= m.score < 1.0
    assert text.find("Rosslin Frey", threshold=0.99) == []
    assert text.find("Wolfgang Frey") == []  # a name the text never contains


def test_sentences_split_at_end_marks_blank_lines_and_headings() -> None:
    text = ChunkText("# Title\nFirst «sentence.» Second one!\n\nThird, no stop")
    assert [text.text[a:b] for a, b in text.sentences] == ["# Title", "First «sentence.»", "Second one!",
                                                            "Third, no stop"]


# ---------------------------------------------------------------------------- validator: entities
def test_entity_not_mentioned_in_its_chunk_is_refused_as_not_in_text(onto: Ontology) -> None:
    out = _validator(onto).validate({"entities": [_ent("Jon Snow", "Personaje"), _ent("Wolfgang Frey", "Personaje")],
                                     "relations": []}, "c1", "d1", TEXT)
    assert [e.name for e in out.entities] == ["Jon Snow"]
    (rej,) = out.rejections
    assert rej.reason == Reason.NOT_IN_TEXT and rej.kind == "entity"
    assert rej.entity_name == "Wolfgang Frey" and rej.chunk_id == "c1" and "not mentioned" in rej.message


def test_validate_without_text_checks_no_evidence(onto: Ontology) -> None:
    """Callers that pass no text (load re-checking a file) get the ontology rules only."""
    answer = {"entities": [_ent("Wolfgang Frey", "Personaje"), _ent("Jon Snow", "Personaje")],
              "relations": [_rel("SE_ENCUENTRA_CON", "Wolfgang Frey", "Personaje", "Jon Snow", "Personaje")]}
    out = _validator(onto).validate(answer, "c1", "d1")
    assert not out.rejections and len(out.relations) == 1 and out.relations[0].evidence == []
    assert Validator(onto).validate(answer, "c1", "d1", TEXT).relations  # no rules: text is ignored


# ---------------------------------------------------------------------------- validator: relations
ENTITIES = [_ent("Jon Snow", "Personaje"), _ent("Daenerys Targaryen", "Personaje"),
            _ent("Guardia de la Noche", "Organizacion"), _ent("Rocadragón", "Region")]


def test_relation_in_one_sentence_keeps_its_evidence_with_offsets(onto: Ontology) -> None:
    item = _rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion")
    out = _validator(onto, window=0).validate({"entities": ENTITIES, "relations": [item]}, "c1", "d1", TEXT,
                                              text_start=100)
    (rel,) = out.relations
    (ev,) = rel.evidence
    assert ev.text == "Jon Snow es miembro de la Guardia de la Noche."
    assert TEXT[ev.start:ev.end] == ev.text and ev.chunk_id == "c1"
    assert (ev.document_start, ev.document_end) == (100 + ev.start, 100 + ev.end)


def test_window_decides_whether_adjacent_sentences_count(onto: Ontology) -> None:
    item = _rel("SE_ENCUENTRA_CON", "Jon Snow", "Personaje", "Daenerys Targaryen", "Personaje")
    answer = {"entities": ENTITIES, "relations": [item]}
    near = _validator(onto, window=1).validate(answer, "c1", "d1", TEXT)
    (rel,) = near.relations
    assert rel.evidence[0].text.startswith("Jon Snow es miembro") and rel.evidence[0].text.endswith("Targaryen.")
    far = _validator(onto, window=0).validate(answer, "c1", "d1", TEXT)
    assert not far.relations
    (rej,) = far.rejections
    assert rej.reason == Reason.ENDS_NOT_NEAR and "in the same sentence" in rej.message and rej.item == item


def test_relation_end_not_in_text_is_refused_as_not_in_text(onto: Ontology) -> None:
    item = _rel("SE_ENCUENTRA_CON", "Jon Snow", "Personaje", "Samwell Tarly", "Personaje")
    out = _validator(onto).validate({"entities": ENTITIES, "relations": [item]}, "c1", "d1", TEXT)
    (rej,) = out.rejections
    assert rej.reason == Reason.NOT_IN_TEXT and rej.kind == "relation" and rej.end == "object"
    assert rej.end_name == "Samwell Tarly"


def test_a_name_inside_a_longer_name_of_the_chunk_is_no_evidence(onto: Ontology) -> None:
    """In "Sansa Stark", "Stark" names Sansa, not the house: a house relation needs its own mention."""
    entities = [_ent("Sansa Stark", "Personaje"), _ent("Stark", "CasaNoble"), _ent("Jon Snow", "Personaje")]
    text = "Jon Snow y Sansa Stark luchan juntos. Mucho después llegan los Stark."
    item = _rel("LEAL_A", "Jon Snow", "Personaje", "Stark", "CasaNoble")
    out = _validator(onto, window=0).validate({"entities": entities, "relations": [item]}, "c", "d", text)
    assert [r.reason for r in out.rejections] == [Reason.ENDS_NOT_NEAR]
    ok = _validator(onto, window=1).validate({"entities": entities, "relations": [item]}, "c", "d", text)
    assert ok.relations and ok.relations[0].evidence[0].text.endswith("llegan los Stark.")


def test_evidence_is_unioned_over_chunks_when_aggregating(onto: Ontology) -> None:
    item = _rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion")
    v = _validator(onto)
    a = v.validate({"entities": ENTITIES, "relations": [item]}, "c1", "d", TEXT)
    b = v.validate({"entities": ENTITIES, "relations": [item]}, "c2", "d", "Jon Snow jura ante la Guardia de la Noche.")
    again = v.validate({"entities": ENTITIES, "relations": [item]}, "c1", "d", TEXT)
    _, (rel,) = aggregate([a, b, again])
    assert [(e.chunk_id, e.text) for e in rel.evidence] == [
        ("c1", "Jon Snow es miembro de la Guardia de la Noche."), ("c2", "Jon Snow jura ante la Guardia de la Noche.")]


def test_bad_evidence_rules_are_refused() -> None:
    with pytest.raises(ValueError, match="window"):
        EvidenceRules(window=-1)
    with pytest.raises(ValueError, match="threshold"):
        EvidenceRules(threshold=0)


# ---------------------------------------------------------------------------- downstream
def _extraction(onto: Ontology) -> Extraction:
    text = "Jon Snow es miembro de la Guardia de la Noche."
    out = _validator(onto).validate(
        {"entities": ENTITIES[:1] + ENTITIES[2:3],
         "relations": [_rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion")]},
        "doc.txt:abc", "doc.txt", text)
    entities, relations = aggregate([out])
    return Extraction(documents=[DocumentRecord(id="doc.txt", hash="h")],
                      chunks=[ChunkRecord(id="doc.txt:abc", document_id="doc.txt", index=0, start=0, end=len(text),
                                          hash="h", text=text)],
                      entities=entities, relations=relations)


def test_evidence_round_trips_through_the_file_and_bad_chunk_ids_are_named(onto: Ontology, tmp_path: Path) -> None:
    ext = _extraction(onto)
    back = Extraction.read(ext.write(tmp_path / "x.json"))
    assert back.relations[0].evidence == ext.relations[0].evidence != []
    data = ext.to_data()
    data["relations"][0]["evidence"][0]["chunk_id"] = "nowhere:1"
    from graphrag_got.errors import ExtractionFileError

    with pytest.raises(ExtractionFileError, match=r"\$\.relations\[0\]\.evidence\[0\]\.chunk_id"):
        Extraction.read(data)


def test_load_plan_writes_evidence_and_does_not_require_it(onto: Ontology) -> None:
    from graphrag_got.graph.load_plan import build_plan

    ext = _extraction(onto)
    ext.relations.append(ext.relations[0].model_copy(update={"object": "Pueblo Libre", "object_key": "pueblo libre",
                                                             "evidence": []}))
    ext.entities.append(EntityRecord(uid="Organizacion|pueblo libre", key="pueblo libre", name="Pueblo Libre",
                                     type="Organizacion", chunk_ids=["doc.txt:abc"]))
    plan = build_plan(ext, onto)
    rows = sorted(plan.relations.values(), key=lambda r: r["end"])
    assert [r["evidence"] for r in rows] == [["Jon Snow es miembro de la Guardia de la Noche."], []]


def test_local_search_context_shows_one_evidence_sentence_per_fact() -> None:
    from graphrag_got.search.facts import Fact
    from graphrag_got.search.local import LocalResult

    facts = [Fact("Personaje|jon snow", "Jon Snow", "ES_MIEMBRO_DE", "Organizacion|guardia de la noche",
                  "Guardia de la Noche", (), False, ["c1"], 1, "path",
                  ["Jon Snow es miembro\nde la Guardia de la Noche.", "Otra frase."]),
             Fact("Personaje|jon snow", "Jon Snow", "LEAL_A", "Personaje|daenerys targaryen", "Daenerys Targaryen",
                  (), False, ["c2"], 1, "path")]
    lines = LocalResult(question="q", hops=1, facts=facts).context_lines
    assert lines[0].endswith('"Jon Snow es miembro de la Guardia de la Noche."') and "Otra frase" not in lines[0]
    assert lines[1] == facts[1].line
    assert Evidence(start=0, end=1, text="x").chunk_id is None


# ---------------------------------------------------------------------------- attribute values
def test_an_attribute_value_the_text_does_not_say_is_dropped_and_the_fact_kept(onto: Ontology) -> None:
    text = "Tras la Boda Roja, la Casa Frey traicionó a la Casa Stark. La Casa Frey gobierna Los Gemelos."
    answer = {"entities": [_ent("Casa Frey", "CasaNoble"), _ent("Casa Stark", "CasaNoble"),
                           _ent("Los Gemelos", "Region")],
              "relations": [{**_rel("TRAICIONA_A", "Casa Frey", "CasaNoble", "Casa Stark", "CasaNoble"),
                             "momento": "tras la Boda Roja"},
                            {**_rel("GOBIERNA", "Casa Frey", "CasaNoble", "Los Gemelos", "Region"),
                             "momento": "desde la traición"}]}
    result = _validator(onto).validate(answer, "c1", "d", text)
    kept = {r.relation: r.attributes for r in result.relations}
    assert kept == {"TRAICIONA_A": {"momento": "tras la Boda Roja"}, "GOBIERNA": {}}
    (rej,) = [r for r in result.rejections if r.reason is Reason.NOT_IN_TEXT]
    assert rej.kind == "property" and rej.property == "momento" and rej.value == "desde la traición"
    assert rej.relation == "GOBIERNA" and "does not occur in the text" in rej.message
    # without evidence rules the value is not checked
    plain = Validator(onto).validate(answer, "c1", "d", text)
    assert {r.relation: r.attributes for r in plain.relations}["GOBIERNA"] == {"momento": "desde la traición"}
