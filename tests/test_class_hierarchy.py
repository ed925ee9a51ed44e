"""Class hierarchy (`subclase_de`): validation of the declaration, relations over subclasses, the validator,
the prompt text, the Text2KGBench importer and the replay's typing tie-break."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.errors import OntologyError
from graphrag_got.ontology.text2kgbench import import_text2kgbench
from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import extraction_schema
from graphrag_got.extract.validate import Reason, Validator


def _onto(**classes: dict) -> Ontology:
    base = {"Lugar": {}, "Persona": {}, **classes}
    return Ontology.from_dict({"clases": base, "relaciones": [
        {"nombre": "VIVE_EN", "dominio": "Persona", "rango": "Lugar"},
        {"nombre": "CAPITAL_DE", "dominio": "Ciudad", "rango": "Lugar"} if "Ciudad" in base else
        {"nombre": "CONOCE", "dominio": "Persona", "rango": "Persona"}]})


def test_a_relation_takes_the_subclasses_of_its_classes_at_any_depth():
    onto = _onto(Ciudad={"subclase_de": "Lugar"}, Capital={"subclass_of": ["Ciudad"]})
    vive = onto.relation("VIVE_EN")
    assert vive.range == ("Lugar", "Ciudad", "Capital")
    assert vive.stated_range == ("Lugar",)
    assert vive.accepts("Persona", "Capital") and not vive.accepts("Persona", "Persona")
    assert onto.is_a("Capital", "Lugar") and onto.is_a("Lugar", "Lugar") and not onto.is_a("Lugar", "Ciudad")
    assert onto.ancestors("Capital") == {"Ciudad", "Lugar"}
    # the prompt shows what the file says, and what each class is a kind of
    text = onto.describe()
    assert "- VIVE_EN: Persona -> Lugar." in text
    assert "- Capital (a kind of Ciudad)" in text
    # the answer schema offers the subclasses where the relation takes their parent
    assert "Capital" in json.dumps(extraction_schema(onto, 5, 5))


def test_without_a_hierarchy_relations_are_as_declared():
    onto = _onto()
    assert onto.relation("VIVE_EN").range == ("Lugar",)
    assert onto.relation("VIVE_EN").declared_range == ()


@pytest.mark.parametrize("classes, path, words", [
    ({"Ciudad": {"subclase_de": "Pueblo"}}, "$.clases.Ciudad.subclase_de[0]", "'Pueblo', which is not declared"),
    ({"Ciudad": {"subclase_de": "Ciudad"}}, "$.clases.Ciudad.subclase_de[0]", "subclass of itself"),
    ({"Ciudad": {"subclase_de": "Villa"}, "Villa": {"subclase_de": "Ciudad"}}, "$.clases.Ciudad.subclase_de",
     "cycle: Ciudad -> Villa -> Ciudad"),
    ({"Ciudad": {"subclase_de": 3}}, "$.clases.Ciudad.subclase_de", "3"),
])
def test_a_wrong_hierarchy_is_an_error_at_its_json_path(classes, path, words):
    with pytest.raises(OntologyError) as err:
        _onto(**classes)
    assert path in str(err.value) and words in str(err.value)


def test_the_validator_keeps_a_subclass_end_and_the_entity_s_own_class():
    onto = _onto(Ciudad={"subclase_de": "Lugar"})
    v = Validator(onto)
    entities = [{"name": "Ana", "type": "Persona"}, {"name": "Soria", "type": "Ciudad"}]
    # the triple says Lugar, the entity was extracted as a Ciudad: kept, as the Ciudad
    out = v.validate({"entities": entities, "relations": [
        {"relation": "VIVE_EN", "subject": "Ana", "subject_type": "Persona", "object": "Soria",
         "object_type": "Lugar"}]}, "c1", "d1")
    assert [(r.object, r.object_type) for r in out.relations] == [("Soria", "Ciudad")]
    # untyped: the entity's class is a subclass of the range
    out = v.validate({"entities": entities, "relations": [{"relation": "VIVE_EN", "subject": "Ana",
                                                           "object": "Soria"}]}, "c1", "d1")
    assert len(out.relations) == 1
    # the other way round (a Lugar where a Ciudad is needed) is still refused
    out = v.validate({"entities": [{"name": "Soria", "type": "Lugar"}, {"name": "Tierra", "type": "Lugar"}],
                      "relations": [{"relation": "CAPITAL_DE", "subject": "Soria", "subject_type": "Lugar",
                                     "object": "Tierra", "object_type": "Lugar"}]}, "c1", "d1")
    assert not out.relations and out.rejections[0].reason == Reason.DOMAIN_VIOLATION


def _bench(tmp_path: Path) -> Path:
    path = tmp_path / "onto.json"
    path.write_text(json.dumps({"title": "t", "id": "ont_t", "concepts": [
        {"qid": "City", "label": "City"}, {"qid": "Place", "label": "Place"}, {"qid": "Person", "label": "Person"}],
        "relations": [{"pid": "birthPlace", "label": "birthPlace", "domain": "Person", "range": "Place"},
                      {"pid": "mayor", "label": "mayor", "domain": "City", "range": "Person"}]}))
    return path


def test_the_text2kgbench_importer_links_each_class_to_its_nearest_declared_ancestor(tmp_path):
    parents = {"City": ["Settlement"], "Settlement": ["PopulatedPlace"], "PopulatedPlace": ["Place"],
               "Person": ["Agent"]}
    data, _ = import_text2kgbench(_bench(tmp_path), parents)
    assert data["clases"]["City"]["subclase_de"] == ["Place"]
    assert "subclase_de" not in data["clases"]["Person"]  # Agent is not a class of the file
    onto = Ontology.from_dict(data)
    assert onto.relation("BIRTH_PLACE").accepts("Person", "City")
    plain, _ = import_text2kgbench(_bench(tmp_path))
    assert all("subclase_de" not in c for c in plain["clases"].values())


def test_replay_typing_prefers_the_general_class_on_a_tie_with_its_own_subclasses(tmp_path):
    from benchmarks.text2kgbench.replay import type_entities

    parents = {"City": ["Place"]}
    onto = Ontology.from_dict(import_text2kgbench(_bench(tmp_path), parents)[0])
    flat = Ontology.from_dict(import_text2kgbench(_bench(tmp_path))[0])
    only_place = [{"subject": "Ana", "relation": "BIRTH_PLACE", "object": "Soria"}]
    assert type_entities(only_place, onto)["soria"].type == "Place"  # Place and City tie: the evidence says Place
    both = only_place + [{"subject": "Soria", "relation": "MAYOR", "object": "Luis"}]
    assert type_entities(both, onto)["soria"].type == "City"  # a City is a Place: both uses agree
    decision = type_entities(both, flat)["soria"]
    assert decision.type is None and decision.reason == "tie"  # without the hierarchy: Place vs City


def test_repair_infers_the_stated_class_of_a_range_with_subclasses():
    from graphrag_got.common.text_match import ChunkText
    from graphrag_got.extract.evidence import EvidenceRules
    from graphrag_got.extract.repair import ChunkAnswer, repair_answers

    onto = _onto(Ciudad={"subclase_de": "Lugar"})
    v = Validator(onto, evidence=EvidenceRules())
    answer = {"entities": [{"name": "Ana", "type": "Persona"}],
              "relations": [{"relation": "VIVE_EN", "subject": "Ana", "subject_type": "Persona", "object": "Soria"}]}
    chunk = ChunkAnswer("c0", "d", answer, ChunkText("Ana vive en Soria."))
    (fixed,) = repair_answers(v, [chunk])
    out = v.validate(fixed.answer, "c0", "d", chunk.text, extra_entities=fixed.extra_entities)
    # the range states one class (Lugar) and takes its subclass too: the unlisted end is inferred a Lugar
    assert [(r.object, r.object_type) for r in out.relations] == [("Soria", "Lugar")]
    assert fixed.repairs[0].after == {"name": "Soria", "type": "Lugar"}
