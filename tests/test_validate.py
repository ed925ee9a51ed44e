"""Every validation reason, the records it produces, and aggregation into extraction.json lists."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.validate import Reason, Validator
from graphrag_got.extract.aggregate import aggregate

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


@pytest.fixture(scope="module")
def validator() -> Validator:
    return Validator(Ontology.from_file(GOT))


ENTITIES = [
    {"type": "Personaje", "name": "Jon Snow", "genero": "masculino"},
    {"type": "Personaje", "name": "Daenerys Targaryen"},
    {"type": "CasaNoble", "name": "Casa Stark"},
    {"type": "Organizacion", "name": "Guardia de la Noche"},
    {"type": "Region", "name": "Rocadragón"},
]


def rel(relation, subject, stype, obj, otype, **extra):
    return {"relation": relation, "subject": subject, "subject_type": stype, "object": obj, "object_type": otype,
            **extra}


def only_reason(validator, relation_item, entities=ENTITIES):
    out = validator.validate({"entities": entities, "relations": [relation_item]}, "c1", "d1")
    rel_rej = [r for r in out.rejections if r.kind == "relation"]
    assert len(rel_rej) == 1, out.rejections
    assert not out.relations
    r = rel_rej[0]
    assert r.chunk_id == "c1" and r.document_id == "d1"
    assert r.item == (relation_item if isinstance(relation_item, dict) else {"value": relation_item})
    return r


def test_valid_relation_is_kept_with_momento(validator):
    item = rel("SE_ENCUENTRA_CON", "Jon Snow", "Personaje", "Daenerys Targaryen", "Personaje",
               momento="en Rocadragón")
    out = validator.validate({"entities": ENTITIES, "relations": [item]})
    assert not out.rejections
    (r,) = out.relations
    assert r.attributes == {"momento": "en Rocadragón"} and r.symmetric


@pytest.mark.parametrize(
    "item, reason, words",
    [
        ("not an object", Reason.MALFORMED, "must be an object"),
        ({"subject": "Jon Snow", "object": "Casa Stark"}, Reason.MALFORMED, "without a 'relation'"),
        (rel("LEAL_A", "  ", "Personaje", "Casa Stark", "CasaNoble"), Reason.EMPTY_NAME, "without a subject"),
        (rel("AMA_A", "Jon Snow", "Personaje", "Daenerys Targaryen", "Personaje"), Reason.UNKNOWN_RELATION, "'AMA_A'"),
        (rel("LEAL_A", "Jon Snow", "Dragon", "Casa Stark", "CasaNoble"), Reason.UNKNOWN_CLASS, "'Dragon'"),
        (rel("ES_MIEMBRO_DE", "Casa Stark", "CasaNoble", "Guardia de la Noche", "Organizacion"),
         Reason.DOMAIN_VIOLATION, "subject of type Personaje, not CasaNoble"),
        (rel("GOBIERNA", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion"),
         Reason.RANGE_VIOLATION, "object of type Region, not Organizacion"),
        (rel("PERTENECE_A", "Jon Snow", "Personaje", "Rocadragón", "CasaNoble"),
         Reason.OBJECT_TYPE_MISMATCH, "extracted as Region"),
        (rel("LEAL_A", "Rocadragón", "CasaNoble", "Casa Stark", "CasaNoble"),
         Reason.SUBJECT_TYPE_MISMATCH, "extracted as Region"),
        (rel("LEAL_A", "Samwell Tarly", "Personaje", "Jon Snow", "Personaje"),
         Reason.SUBJECT_NOT_EXTRACTED, "'Samwell Tarly'"),
        (rel("GOBIERNA", "Jon Snow", "Personaje", "El Norte", "Region"),
         Reason.OBJECT_NOT_EXTRACTED, "'El Norte'"),
        (rel("LEAL_A", "Jon Snow", "Personaje", "jon  snow", "Personaje"), Reason.SELF_RELATION, "itself"),
    ],
)
def test_each_relation_reason(validator, item, reason, words):
    r = only_reason(validator, item)
    assert r.reason == reason
    assert words in r.message


def test_names_match_by_normalized_key(validator):
    item = rel("ES_MIEMBRO_DE", "JON SNOW", "Personaje", "guardia de la  noche", "Organizacion")
    out = validator.validate({"entities": ENTITIES, "relations": [item]})
    assert len(out.relations) == 1 and not out.rejections


def test_symmetric_relation_accepts_reversed_types():
    onto = Ontology.from_dict({"clases": {"A": {}, "B": {}},
                               "relaciones": [{"nombre": "R", "dominio": "A", "rango": "B", "simetrica": True}]})
    out = Validator(onto).validate({"entities": [{"type": "A", "name": "a"}, {"type": "B", "name": "b"}],
                                    "relations": [rel("R", "b", "B", "a", "A")]})
    assert len(out.relations) == 1


def test_missing_types_are_inferred_from_entities(validator):
    out = validator.validate({"entities": ENTITIES, "relations": [
        {"relation": "ES_MIEMBRO_DE", "subject": "Jon Snow", "object": "Guardia de la Noche"}]})
    assert out.relations[0].subject_type == "Personaje"


def test_entity_reasons(validator):
    out = validator.validate({"entities": [
        {"type": "Personaje", "name": ""},
        {"type": "Dragon", "name": "Drogon"},
        {"type": "Personaje", "name": "Arya Stark", "genero": "FEMENINO", "estado": "zombi", "espada": "Aguja"},
        "Tyrion",
        {"type": "Personaje", "name": "x" * 300},
    ]})
    reasons = sorted(r.reason.value for r in out.rejections)
    assert reasons == sorted(["empty_name", "unknown_class", "invalid_enum_value", "unknown_property", "malformed",
                              "name_too_long"])
    (arya,) = out.entities
    # the enum value matched after normalization is stored in its declared spelling
    assert arya.properties == {"genero": "femenino"}
    kinds = {r.reason: r.kind for r in out.rejections}
    assert kinds[Reason.INVALID_ENUM_VALUE] == "property" and kinds[Reason.UNKNOWN_CLASS] == "entity"


def test_required_property_missing_rejects_entity():
    onto = Ontology.from_dict({"clases": {"A": {"propiedades": {"p": "string, requerido"}}},
                               "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]})
    out = Validator(onto).validate({"entities": [{"type": "A", "name": "x"}, {"type": "A", "name": "y", "p": "1"}]})
    assert [e.name for e in out.entities] == ["y"]
    assert out.rejections[0].reason == Reason.MISSING_REQUIRED_PROPERTY


def test_unknown_relation_attribute_is_dropped_not_the_relation(validator):
    item = rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion", lugar="El Muro")
    out = validator.validate({"entities": ENTITIES, "relations": [item]})
    assert len(out.relations) == 1
    assert [r.reason for r in out.rejections] == [Reason.UNKNOWN_ATTRIBUTE]


def test_answer_shape_errors(validator):
    assert validator.validate([]).rejections[0].reason == Reason.MALFORMED
    out = validator.validate({"entities": "Jon", "relations": {}})
    assert len(out.rejections) == 2


def test_counts(validator):
    out = validator.validate({"entities": ENTITIES, "relations": [
        rel("GOBIERNA", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion"),
        rel("GOBIERNA", "Daenerys Targaryen", "Personaje", "Guardia de la Noche", "Organizacion"),
        rel("ES_MIEMBRO_DE", "Jon Snow", "Personaje", "Guardia de la Noche", "Organizacion"),
    ]})
    c = out.counts()
    assert c["relations"] == 1 and c["rejected_relations"] == 2 and c["by_reason"] == {"range_violation": 2}


def test_aggregate_merges_entities_and_symmetric_relations(validator):
    a = validator.validate({"entities": ENTITIES, "relations": [
        rel("SE_ENCUENTRA_CON", "Jon Snow", "Personaje", "Daenerys Targaryen", "Personaje", momento="en Rocadragón")]},
        "c1")
    b = validator.validate({"entities": [{"type": "Personaje", "name": "jon snow", "estado": "vivo"},
                                         {"type": "Personaje", "name": "Daenerys Targaryen", "genero": "femenino"}],
                            "relations": [rel("SE_ENCUENTRA_CON", "Daenerys Targaryen", "Personaje", "Jon Snow",
                                              "Personaje", momento="en Rocadragón"),
                                          rel("SE_ENCUENTRA_CON", "Daenerys Targaryen", "Personaje", "Jon Snow",
                                              "Personaje")]}, "c2")
    entities, relations = aggregate([a, b], ("momento",))
    jon = next(e for e in entities if e.uid == "Personaje|jon snow")
    assert jon.name == "Jon Snow"  # first display name wins
    assert jon.properties == {"genero": "masculino", "estado": "vivo"}  # none lost
    assert jon.chunk_ids == ["c1", "c2"]
    meets = [r for r in relations if r.relation == "SE_ENCUENTRA_CON"]
    # same symmetric fact from both directions merges; a different identity attribute is a separate fact
    assert len(meets) == 2
    with_m = next(r for r in meets if r.attributes.get("momento"))
    assert with_m.chunk_ids == ["c1", "c2"]
    assert with_m.subject_key < with_m.object_key
    # without identity attributes the attribute no longer separates facts: one fact, the first value kept
    _, merged = aggregate([a, b], ())
    (one,) = [r for r in merged if r.relation == "SE_ENCUENTRA_CON"]
    assert one.attributes == {"momento": "en Rocadragón"} and one.chunk_ids == ["c1", "c2"]


# ---------------------------------------------------------------------------- mention confidence
def test_low_confidence_mentions_are_refused_with_their_own_reason() -> None:
    v = Validator(Ontology.from_file(GOT), min_confidence=0.5)
    out = v.validate({"entities": [{"type": "Personaje", "name": "Jon Snow", "confidence": 0.3},
                                   {"type": "Region", "name": "Rocadragón", "confidence": 0.8}],
                      "relations": []}, "c1", "d1")
    assert [e.name for e in out.entities] == ["Rocadragón"]
    assert out.entities[0].mentions == {"c1": 0.8} and out.entities[0].confidence("c1") == 0.8
    low = [r for r in out.rejections if r.reason == Reason.LOW_CONFIDENCE]
    assert len(low) == 1 and low[0].entity_name == "Jon Snow" and low[0].value == "0.3"
    assert "0.5" in low[0].message and low[0].chunk_id == "c1"


def test_a_bad_confidence_is_dropped_and_the_mention_kept() -> None:
    v = Validator(Ontology.from_file(GOT), min_confidence=0.5)
    for bad in (1.7, -0.1, "very", True, [0.5], float("nan")):
        out = v.validate({"entities": [{"type": "Personaje", "name": "Jon Snow", "confidence": bad}],
                          "relations": []}, "c1", "d1")
        assert [e.name for e in out.entities] == ["Jon Snow"], bad
        assert out.entities[0].mentions == {} and out.entities[0].confidence("c1") == 1.0
        assert [(r.kind, r.reason, r.property) for r in out.rejections] == [("property", Reason.INVALID_VALUE,
                                                                             "confidence")], bad


def test_without_a_confidence_a_mention_counts_as_certain_and_aggregation_keeps_the_highest() -> None:
    v = Validator(Ontology.from_file(GOT), min_confidence=0.9)
    a = v.validate({"entities": [{"type": "Personaje", "name": "Jon Snow"}], "relations": []}, "c1", "d1")
    assert a.entities and not a.rejections  # no confidence given: never refused as low
    b = v.validate({"entities": [{"type": "Personaje", "name": "Jon Snow", "confidence": 0.95},
                                 {"type": "Personaje", "name": "jon snow", "confidence": 0.99}],
                    "relations": []}, "c2", "d1")
    c = v.validate({"entities": [{"type": "Personaje", "name": "Jon Snow", "confidence": 0.92}],
                    "relations": []}, "c3", "d1")
    entities, _ = aggregate([a, b, c])
    assert len(entities) == 1
    assert entities[0].mentions == {"c2": 0.99, "c3": 0.92}
    assert entities[0].confidence("c1") == 1.0
