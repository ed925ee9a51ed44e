"""Models generated from the ontology, and the JSON schema that constrains the LLM."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import entity_models, extraction_model, extraction_schema, relation_models

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(GOT)


def test_one_entity_model_per_class_with_enum_literals(onto):
    models = entity_models(onto)
    assert set(models) == set(onto.classes)
    ok = models["Personaje"].model_validate({"type": "Personaje", "name": "Arya Stark", "genero": "femenino"})
    assert ok.model_dump(by_alias=True)["genero"] == "femenino"
    with pytest.raises(ValidationError):
        models["Personaje"].model_validate({"type": "Personaje", "name": "Arya", "genero": "otro"})
    with pytest.raises(ValidationError):
        models["Personaje"].model_validate({"type": "Personaje", "name": "Arya", "color": "gris"})


def test_relation_models_constrain_types_per_relation(onto):
    models = relation_models(onto)
    gob = models["GOBIERNA"]
    gob.model_validate({"relation": "GOBIERNA", "subject": "Robb", "subject_type": "Personaje",
                        "object": "El Norte", "object_type": "Region"})
    with pytest.raises(ValidationError):
        gob.model_validate({"relation": "GOBIERNA", "subject": "Robb", "subject_type": "Personaje",
                            "object": "Guardia", "object_type": "Organizacion"})


def test_extraction_model_is_a_discriminated_union_with_bounds(onto):
    model = extraction_model(onto, max_entities=2, max_relations=1)
    model.model_validate({"entities": [{"type": "Region", "name": "Invernalia"}], "relations": []})
    with pytest.raises(ValidationError):
        model.model_validate({"entities": [{"type": "Region", "name": str(i)} for i in range(3)]})
    with pytest.raises(ValidationError):  # CONTRATA's object must be an Organizacion
        model.model_validate({"relations": [{"relation": "CONTRATA", "subject": "Cersei", "subject_type": "Personaje",
                                             "object": "Jaime", "object_type": "Personaje"}]})


def test_llm_schema_is_plain_bounded_and_agrees_with_the_model(onto):
    schema = extraction_schema(onto, 7, 9)
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text and "discriminator" not in text
    assert schema["properties"]["entities"]["maxItems"] == 7
    assert schema["properties"]["relations"]["maxItems"] == 9
    rels = schema["properties"]["relations"]["items"]["oneOf"]
    by_name = {r["properties"]["relation"]["const"]: r for r in rels}
    assert set(by_name) == {r.name for r in onto.relations}
    assert by_name["GOBIERNA"]["properties"]["object_type"]["const"] == "Region"
    good = {"entities": [{"type": "Personaje", "name": "Cersei Lannister"}],
            "relations": [{"relation": "CONTRATA", "subject": "Cersei Lannister", "subject_type": "Personaje",
                           "object": "Compañía Dorada", "object_type": "Organizacion", "momento": None}]}
    jsonschema.validate(good, schema)
    bad = json.loads(json.dumps(good))
    bad["relations"][0]["object_type"] = "Personaje"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_symmetric_relation_schema_is_exactly_domain_to_range():
    """The decoding schema admits A -> B only (not A -> A, which the validator refuses); a replayed
    B -> A answer is still accepted by the validator, since the relation is symmetric."""
    import pydantic

    from graphrag_got.extract.validate import Validator

    onto = Ontology.from_dict({"clases": {"A": {}, "B": {}},
                               "relaciones": [{"nombre": "R", "dominio": "A", "rango": "B", "simetrica": True}]})
    model = relation_models(onto)["R"]
    model.model_validate({"relation": "R", "subject": "a", "subject_type": "A", "object": "b", "object_type": "B"})
    for s_type, o_type in (("A", "A"), ("B", "B"), ("B", "A")):
        with pytest.raises(pydantic.ValidationError):
            model.model_validate({"relation": "R", "subject": "x", "subject_type": s_type, "object": "y",
                                  "object_type": o_type})
    out = Validator(onto).validate({"entities": [{"type": "A", "name": "a"}, {"type": "B", "name": "b"}],
                                    "relations": [{"relation": "R", "subject": "b", "subject_type": "B",
                                                   "object": "a", "object_type": "A"}]})
    assert len(out.relations) == 1 and not out.rejections


def test_property_names_that_clash_with_pydantic_are_safe():
    onto = Ontology.from_dict({"clases": {"A": {"propiedades": {"model_config": "string", "schema": "string"}}},
                               "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]})
    m = entity_models(onto)["A"].model_validate({"type": "A", "name": "x", "schema": "s", "model_config": "c"})
    assert m.model_dump(by_alias=True)["schema"] == "s"


def test_llm_schema_keeps_a_field_named_title():
    from pydantic import BaseModel

    from graphrag_got.ontology.schema import llm_schema

    class Summary(BaseModel):
        title: str
        summary: str

    schema = llm_schema(Summary)
    assert set(schema["properties"]) == {"title", "summary"}
    assert "title" not in schema["properties"]["title"]  # the keyword is dropped, the field is kept
    assert schema["required"] == ["title", "summary"]
