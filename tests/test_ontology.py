"""Ontology parsing, file schema, semantic checks and the error messages users see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.errors import OntologyError
from graphrag_got.ontology import Ontology, PropertySpec

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"
BAD = Path(__file__).parent / "data" / "bad_ontologies"


def test_got_ontology_loads_with_expected_shape():
    onto = Ontology.from_file(GOT)
    assert set(onto.classes) == {"Personaje", "CasaNoble", "Organizacion", "Region", "Evento"}
    names = [r.name for r in onto.relations]
    assert names == ["CASADO_CON", "PERTENECE_A", "ES_MIEMBRO_DE", "LEAL_A", "ALIADA_DE", "TRAICIONA_A",
                     "EN_GUERRA_CON", "GOBIERNA", "PARTICIPA_EN", "CONTRATA", "SE_ENCUENTRA_CON"]
    assert {r.name for r in onto.relations if r.symmetric} == {"ALIADA_DE", "CASADO_CON", "EN_GUERRA_CON",
                                                               "SE_ENCUENTRA_CON"}
    assert onto.relation("GOBIERNA").range == ("Region",)
    assert onto.relation("LEAL_A").domain == ("Personaje", "CasaNoble")
    assert "momento" in onto.relation_attributes
    genero = onto.classes["Personaje"].properties["genero"]
    assert genero.kind == "enum" and genero.values == ("masculino", "femenino") and not genero.required


def test_schema_file_in_package_matches_the_one_for_editors():
    packaged = ROOT / "graphrag_got" / "data" / "ontology.schema.json"
    assert json.loads(packaged.read_text()) == json.loads((ROOT / "ontology" / "ontology.schema.json").read_text())


@pytest.mark.parametrize(
    "spec, kind, values, required",
    [
        ("string", "string", (), False),
        ("string, opcional", "string", (), False),
        ("texto, requerido", "string", (), True),
        ("enum: a | b | c", "enum", ("a", "b", "c"), False),
        ("enum:  Poniente|Essos , required", "enum", ("Poniente", "Essos"), True),
        ({"tipo": "enum", "valores": ["x", "y"], "requerido": True}, "enum", ("x", "y"), True),
        ({"type": "string"}, "string", (), False),
    ],
)
def test_property_spec_forms(spec, kind, values, required):
    p = PropertySpec.parse(spec)
    assert (p.kind, p.values, p.required) == (kind, values, required)


def _problems(path: Path) -> list[tuple[str, str]]:
    with pytest.raises(OntologyError) as info:
        Ontology.from_file(path)
    assert str(path) in str(info.value)
    return info.value.problems


def test_syntax_error_points_at_line_and_column():
    with pytest.raises(OntologyError) as info:
        Ontology.from_file(BAD / "syntax_error.json")
    assert "syntax_error.json:4:3:" in str(info.value)
    assert "not valid JSON" in str(info.value)


def test_undeclared_range_class_names_the_path_and_value():
    problems = _problems(BAD / "unknown_range_class.json")
    assert problems[0][0] == "$.relaciones[0].rango[1]"
    assert "'Ejercito'" in problems[0][1] and "not declared" in problems[0][1]


def test_bad_identifiers_are_all_reported():
    paths = dict(_problems(BAD / "bad_identifiers.json"))
    assert '$.clases["Casa Noble"]' in paths
    assert "$.relaciones[0].nombre" in paths
    assert "LEAL-A" in paths["$.relaciones[0].nombre"]


def test_duplicate_relation():
    problems = _problems(BAD / "duplicate_relation.json")
    assert problems == [("$.relaciones[1].nombre",
                         "duplicate relation 'CASADO_CON' (first declared at $.relaciones[0])")]


def test_empty_enum():
    (path, msg), = _problems(BAD / "empty_enum.json")
    assert path == "$.clases.Personaje.propiedades.genero"
    assert "at least one value" in msg


def test_unreadable_spec_names_the_value():
    (path, msg), = _problems(BAD / "bad_spec.json")
    assert path == "$.clases.Personaje.propiedades.edad"
    assert '"integer"' in msg


def test_reserved_names_rejected():
    paths = dict(_problems(BAD / "reserved_names.json"))
    assert "$.clases.Chunk" in paths
    assert "$.clases.Personaje.propiedades.name" in paths
    assert "$.relaciones[0].nombre" in paths


def test_unknown_key_is_named():
    (path, msg), = _problems(BAD / "unknown_key.json")
    assert path == "$.relaciones[0]"
    assert "simetric" in msg


def test_english_aliases_are_accepted_and_equivalent():
    es = Ontology.from_dict({"clases": {"A": {"propiedades": {"p": "enum: x | y"}}, "B": {}},
                             "relaciones": [{"nombre": "R", "dominio": "A", "rango": ["B"], "simetrica": False}]})
    en = Ontology.from_dict({"classes": {"A": {"properties": {"p": "enum: x | y"}}, "B": {}},
                             "relations": [{"name": "R", "domain": "A", "range": ["B"], "symmetric": False}]})
    assert es.classes == en.classes and es.relations == en.relations


def test_alias_and_canonical_key_together_is_an_error():
    with pytest.raises(OntologyError) as info:
        Ontology.from_dict({"clases": {"A": {}}, "classes": {"A": {}}, "relaciones": []})
    assert "alias" in str(info.value)


def test_hash_changes_with_any_edit_and_is_stable():
    data = json.loads(GOT.read_text())
    h1 = Ontology.from_dict(data).hash
    assert Ontology.from_dict(json.loads(GOT.read_text())).hash == h1
    data["relaciones"][7]["rango"] = ["Region", "Organizacion"]
    assert Ontology.from_dict(data).hash != h1


def test_describe_mentions_every_class_relation_and_enum():
    onto = Ontology.from_file(GOT)
    text = onto.describe()
    for name in list(onto.classes) + [r.name for r in onto.relations]:
        assert name in text
    assert "one of: masculino, femenino" in text
    assert "CASADO_CON: Personaje -> Personaje [symmetric]" in text


def test_symmetric_relation_accepts_both_orders():
    onto = Ontology.from_dict({"clases": {"A": {}, "B": {}},
                               "relaciones": [{"nombre": "R", "dominio": "A", "rango": "B", "simetrica": True},
                                              {"nombre": "S", "dominio": "A", "rango": "B"}]})
    assert onto.relation("R").accepts("B", "A")
    assert not onto.relation("S").accepts("B", "A")
    assert onto.relations_accepting("A", "B") == ["R", "S"]


def test_cli_check_exit_codes(capsys):
    assert main(["ontology", "check", str(GOT)]) == 0
    assert "valid ontology: 5 classes, 11 relations" in capsys.readouterr().out
    assert main(["ontology", "check", str(BAD / "unknown_range_class.json")]) == 1
    err = capsys.readouterr().err
    assert "$.relaciones[0].rango[1]" in err and "Ejercito" in err


def test_cli_show_is_the_prompt_text(capsys):
    from graphrag_got.extract import system_prompt

    assert main(["ontology", "show", str(GOT)]) == 0
    shown = capsys.readouterr().out.strip()
    assert shown == Ontology.from_file(GOT).describe()
    assert shown in system_prompt(Ontology.from_file(GOT))


def test_cli_schema_prints_json_schema(capsys):
    assert main(["ontology", "schema", str(GOT)]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["entities"]["maxItems"] > 0
