"""Ontology parsing, file schema, semantic checks and the error messages users see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.errors import OntologyError
from graphrag_got.ontology.model import Ontology, PropertySpec

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
    from graphrag_got.extract.run import system_prompt

    assert main(["ontology", "show", str(GOT)]) == 0
    shown = capsys.readouterr().out.strip()
    assert shown == Ontology.from_file(GOT).describe()
    assert shown in system_prompt(Ontology.from_file(GOT))


def test_cli_schema_prints_json_schema(capsys):
    assert main(["ontology", "schema", str(GOT)]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["properties"]["entities"]["maxItems"] > 0


# ------------------------------------------------------------------ the tutorial's forms
TUTORIAL = {
    "nombre": "Tutorial",
    "clases": {
        "CasaNoble": {
            "comment": "Un linaje.",
            "propiedades": {
                "nombre_corto": "string, obligatorio",
                "sede": "string opcional, ej. 'Invernalia', 'Roca Casterly'",
                "lema": "string opcional, si se menciona en el texto",
                "estado": "enum: vivo | muerto | desconocido",
                "region": "enum: norte | sur, requerido",
                "fundador": {"tipo": "string_libre", "comment": "Quien la fundó", "obligatorio": False},
                "rango": {"type": "enum: alto | bajo", "required": True},
                "blason": {"tipo": "texto", "requerido": True},
                "religion": {"valores": ["antiguos", "nuevos"]},
            },
        },
        "Personaje": {"properties": {"apodo": "String, REQUERIDO", "titulo": "string, requerido",
                                     "alias_corto": "string, required"}},
    },
    "relaciones": [
        {"nombre": "LEAL_A", "dominio": ["Personaje", "CasaNoble"], "rango": "CasaNoble", "comment": "Fidelidad."},
        {"name": "CASADO_CON", "domain": "Personaje", "range": ["Personaje"], "symmetric": True},
    ],
    "atributos_de_relacion": {
        "momento": {"tipo": "string_libre", "comment": "Cuándo en la historia se cumple el hecho",
                    "obligatorio": False},
        "lugar": {"tipo": "string", "comment": "Dónde", "identidad": False},
        "certeza": "enum: segura | rumor, opcional",
        "fuente": {"type": "texto", "identity": True, "required": True},
    },
}


def test_tutorial_forms_parse_to_the_expected_specs():
    onto = Ontology.from_dict(json.loads(json.dumps(TUTORIAL)))
    casa = onto.classes["CasaNoble"].properties
    got = {name: (s.kind, s.values, s.required, s.hint, s.comment, s.identity) for name, s in casa.items()}
    assert got == {
        "nombre_corto": ("string", (), True, "", "", False),
        "sede": ("string", (), False, "ej. 'Invernalia', 'Roca Casterly'", "", False),
        "lema": ("string", (), False, "si se menciona en el texto", "", False),
        "estado": ("enum", ("vivo", "muerto", "desconocido"), False, "", "", False),
        "region": ("enum", ("norte", "sur"), True, "", "", False),
        "fundador": ("string", (), False, "", "Quien la fundó", False),
        "rango": ("enum", ("alto", "bajo"), True, "", "", False),
        "blason": ("string", (), True, "", "", False),
        "religion": ("enum", ("antiguos", "nuevos"), False, "", "", False),
    }
    assert all(s.required for s in onto.classes["Personaje"].properties.values())
    attrs = {n: (s.kind, s.values, s.required, s.comment, s.identity) for n, s in onto.relation_attributes.items()}
    assert attrs == {
        "momento": ("string", (), False, "Cuándo en la historia se cumple el hecho", True),
        "lugar": ("string", (), False, "Dónde", False),
        "certeza": ("enum", ("segura", "rumor"), False, "", True),
        "fuente": ("string", (), True, "", True),
    }
    # identity defaults to true for relation attributes; declaration order is kept
    assert onto.identity_attributes == ("momento", "certeza", "fuente")
    assert [r.name for r in onto.relations] == ["LEAL_A", "CASADO_CON"] and onto.relation("CASADO_CON").symmetric


def test_the_file_schema_accepts_every_tutorial_form():
    from graphrag_got.ontology.loading import file_schema_problems

    assert file_schema_problems(TUTORIAL) == []


@pytest.mark.parametrize(
    "spec, required, hint",
    [
        ("string, obligatorio", True, ""),
        ("string, requerido", True, ""),
        ("string, required", True, ""),
        ("String, REQUERIDO", True, ""),
        ("texto OPCIONAL", False, ""),
        ("string requerido", True, ""),
        ("string opcional, ej. 'Invernalia', 'Roca Casterly'", False, "ej. 'Invernalia', 'Roca Casterly'"),
        ("string opcional si se menciona", False, "si se menciona"),
        ("string, obligatorio; el nombre completo", True, "el nombre completo"),
        ("enum: a | b, requerido, si el texto lo dice", True, "si el texto lo dice"),
    ],
)
def test_required_words_and_hints(spec, required, hint):
    p = PropertySpec.parse(spec)
    assert (p.required, p.hint) == (required, hint)


def test_describe_shows_hints_and_comments_in_show_and_prompt(capsys):
    onto = Ontology.from_dict(json.loads(json.dumps(TUTORIAL)))
    text = onto.describe()
    assert "property sede: text, optional (hint: ej. 'Invernalia', 'Roca Casterly')" in text
    assert "property nombre_corto: text, required" in text
    assert "- momento: text, optional - Cuándo en la historia se cumple el hecho" in text
    assert main(["ontology", "show", str(GOT)]) == 0
    assert "(hint: ej. 'Invernalia', 'Roca Casterly')" in capsys.readouterr().out


def test_got_ontology_reads_like_the_tutorial_without_new_required_properties():
    onto = Ontology.from_file(GOT)
    props = {(c, p): s for c, k in onto.classes.items() for p, s in k.properties.items()}
    # every property stays optional: the recorded model answers give entities without them
    assert not any(s.required for s in props.values())
    assert props[("CasaNoble", "sede")].hint == "ej. 'Invernalia', 'Roca Casterly'"
    assert props[("CasaNoble", "lema")].hint == "si se menciona en el texto"
    assert props[("Personaje", "titulo")].hint == "ej. 'Rey en el Norte'"
    enums = {k: s.values for k, s in props.items() if s.kind == "enum"}
    assert enums == {
        ("Personaje", "genero"): ("masculino", "femenino"),
        ("Personaje", "estado"): ("vivo", "muerto", "desconocido"),
        ("Organizacion", "tipo"): ("militar", "religiosa", "mercenaria", "politica", "otra"),
        ("Region", "continente"): ("Poniente", "Essos", "otro"),
        ("Evento", "tipo"): ("batalla", "boda", "asedio", "reunion", "otro"),
    }
    momento = onto.relation_attributes["momento"]
    assert (momento.kind, momento.required, momento.identity) == ("string", False, True) and momento.comment
    assert onto.identity_attributes == ("momento",)
    raw = json.loads(GOT.read_text(encoding="utf-8"))["atributos_de_relacion"]["momento"]
    assert raw["tipo"] == "string_libre" and raw["obligatorio"] is False and raw["identidad"] is True


def test_schema_files_are_byte_identical():
    packaged = ROOT / "graphrag_got" / "data" / "ontology.schema.json"
    assert packaged.read_bytes() == (ROOT / "ontology" / "ontology.schema.json").read_bytes()


# ------------------------------------------------------------------ refused: what would break later
def _dict_problems(data: dict) -> list[tuple[str, str]]:
    with pytest.raises(OntologyError) as info:
        Ontology.from_dict(data)
    return info.value.problems


def _minimal(**extra) -> dict:
    data = {"clases": {"A": {}}, "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]}
    data.update(extra)
    return data


def _write(tmp_path: Path, text: str | bytes, name: str = "onto.json") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "data, path, keys",
    [
        (_minimal(nombre="x", name="y"), "$", ("nombre", "name")),
        ({"clases": {"A": {"propiedades": {}, "properties": {}}},
          "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]}, "$.clases.A", ("propiedades", "properties")),
        ({"clases": {"A": {}}, "relaciones": [{"nombre": "R", "dominio": "A", "domain": "A", "rango": "A"}]},
         "$.relaciones[0]", ("dominio", "domain")),
        ({"clases": {"A": {}}, "relaciones": [{"nombre": "R", "name": "S", "dominio": "A", "rango": "A"}]},
         "$.relaciones[0]", ("nombre", "name")),
        ({"clases": {"A": {"propiedades": {"p": {"tipo": "string", "type": "string"}}}},
          "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}]}, "$.clases.A.propiedades.p", ("tipo", "type")),
        (_minimal(atributos_de_relacion={"m": {"obligatorio": True, "required": True}}),
         "$.atributos_de_relacion.m", ("obligatorio", "required")),
    ],
)
def test_regression_key_and_its_alias_together_names_path_and_both_keys(data, path, keys):
    problems = dict(_dict_problems(data))
    assert path in problems
    assert all(repr(k) in problems[path] for k in keys)


def test_regression_duplicate_json_keys_are_refused_with_path_key_and_line(tmp_path):
    text = ('{\n  "clases": {"A": {"propiedades": {\n    "p": "string",\n    "p": "enum: x | y"}}},\n'
            '  "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}],\n'
            '  "relaciones": [{"nombre": "S", "dominio": "A", "rango": "A"}]\n}\n')
    problems = _problems(_write(tmp_path, text))
    assert [p for p, _ in problems] == ["$.clases.A.propiedades.p", "$.relaciones"]
    assert "'p'" in problems[0][1] and "line 4" in problems[0][1] and "first at line 3" in problems[0][1]
    assert "'relaciones'" in problems[1][1] and "line 6" in problems[1][1]


def test_regression_duplicate_key_inside_a_replaced_value_still_gets_its_path(tmp_path):
    text = '{"clases": {"A": {"propiedades": {"p": "string", "p": "string"}}, "A": {}}, "relaciones": []}'
    paths = [p for p, _ in _problems(_write(tmp_path, text))]
    assert paths == ["$.clases.A.propiedades.p", "$.clases.A"]


@pytest.mark.parametrize("bad", ["Personaje\n", "Personaje\r\n", " Personaje", "Personaje "])
def test_regression_names_with_a_trailing_newline_are_not_identifiers(bad):
    from graphrag_got.ontology.loading import file_schema_problems
    from graphrag_got.ontology.model import IDENTIFIER, OntologyClass, Relation

    assert not IDENTIFIER.fullmatch(bad)
    data = {"clases": {bad: {}}, "relaciones": [{"nombre": "R", "dominio": bad, "rango": bad}]}
    paths = [p for p, _ in file_schema_problems(data)]
    assert paths == [f"$.clases[{json.dumps(bad)}]", "$.relaciones[0].dominio", "$.relaciones[0].rango"]
    rel = {"nombre": bad.replace("Personaje", "R"), "dominio": "A", "rango": "A"}
    rel_paths = [p for p, _ in file_schema_problems({"clases": {"A": {}}, "relaciones": [rel]})]
    assert rel_paths == ["$.relaciones[0].nombre"]
    # the semantic checks refuse them too (a model built without the file schema)
    with pytest.raises(ValueError, match="not a valid identifier"):
        Ontology(classes={bad: OntologyClass(name=bad)},
                 relations=[Relation(name="R", domain=(bad,), range=(bad,))])


def test_regression_property_and_attribute_names_with_a_newline_are_refused():
    problems = dict(_dict_problems({"clases": {"A": {"propiedades": {"p\n": "string"}}},
                                    "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A"}],
                                    "atributos_de_relacion": {"m\n": "string"}}))
    assert set(problems) == {'$.clases.A.propiedades["p\\n"]', '$.atributos_de_relacion["m\\n"]'}


@pytest.mark.parametrize("data", [{"clases": {"A": {}}}, {"clases": {"A": {}}, "relaciones": []},
                                  {"classes": {"A": {}}, "relations": []}])
def test_regression_an_ontology_without_relations_is_refused(data):
    (path, msg), = _dict_problems(data)
    assert path in {"$", "$.relaciones", "$.relations"}
    assert "an ontology needs at least one relation" in msg


def test_regression_model_without_relations_is_refused_too():
    from graphrag_got.ontology.model import OntologyClass

    with pytest.raises(ValueError, match="at least one relation"):
        Ontology(classes={"A": OntologyClass(name="A")}, relations=[])


def test_regression_non_utf8_file_is_one_clear_error(tmp_path):
    path = _write(tmp_path, '{"clases": {"Ñandú": {}}}'.encode("latin-1"))
    with pytest.raises(OntologyError) as info:
        Ontology.from_file(path)
    assert "not UTF-8" in str(info.value) and str(path) in str(info.value) and "0xd1" in str(info.value)


def test_regression_binary_file_is_one_clear_error(tmp_path):
    path = _write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(OntologyError, match="not a text file"):
        Ontology.from_file(path)


def test_regression_deeply_nested_json_is_one_clear_error(tmp_path):
    path = _write(tmp_path, '{"clases": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(OntologyError, match="nested too deeply"):
        Ontology.from_file(path)


def test_regression_deeply_nested_dict_is_one_clear_error():
    deep: list = []
    for _ in range(100_000):
        deep = [deep]
    with pytest.raises(OntologyError, match="nested too deeply"):
        Ontology.from_dict({"clases": {"A": {"comment": deep}}, "relaciones": []})


def test_regression_folder_is_one_clear_error(tmp_path):
    with pytest.raises(OntologyError, match="is a folder"):
        Ontology.from_file(tmp_path)


def test_regression_cli_check_reports_bad_files_without_traceback(tmp_path, capsys):
    for path in (_write(tmp_path, b"\xff\xfe{\x00}\x00", "utf16.json"), tmp_path):
        assert main(["ontology", "check", str(path)]) == 1
        err = capsys.readouterr().err
        assert "Traceback" not in err and str(path) in err


def test_utf8_bom_is_accepted(tmp_path):
    text = json.dumps(_minimal(nombre="Con BOM"), ensure_ascii=False)
    onto = Ontology.from_file(_write(tmp_path, text.encode("utf-8-sig")))
    assert onto.name == "Con BOM"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("enum: a, b", "separated by '|'"),
        ("enum: a | b, c", "separated by '|'"),
        ("enum: a | b, opcional, requerido", "two required/optional words"),
        ("enum: a | b, requerido, opcional", "two required/optional words"),
        ("string, opcional, requerido", "two required/optional words"),
        ("enum: a | b opcional", "put a comma before it"),
        ("enum: a | | b", "empty value"),
        ("enum: a | b |", "empty value"),
        ("enum: a | a", "repeats a value"),
        ("enum: ", "at least one value"),
        ("enum a | b", "colon after 'enum'"),
        ("string, obligatoro", "required/optional word before any hint"),
        ("string, ej. 'Invernalia'", "required/optional word before any hint"),
        ("integer", "cannot read property spec"),
        ({"tipo": "entero"}, "unknown type"),
        ({"tipo": "enum: a | b, requerido"}, "'tipo' holds only the type"),
        ({"tipo": "enum: a | b", "valores": ["a", "b"]}, "given twice"),
        ({"tipo": "enum"}, "at least one value"),
        ({"tipo": "string", "valores": ["a"]}, "only an enum"),
    ],
)
def test_regression_bad_spec_text_is_refused_with_its_location(spec, message):
    problems = _dict_problems(_minimal(clases={"A": {"propiedades": {"p": spec}}}))
    (path, msg), = problems
    assert path == "$.clases.A.propiedades.p"
    assert message in msg and json.dumps(spec, ensure_ascii=False) in msg


def test_bad_spec_object_keys_are_refused_by_schema_and_parser():
    paths = dict(_dict_problems(_minimal(clases={"A": {"propiedades": {"p": {"obligatorio": "si"},
                                                                       "q": {"tipo": "string", "pista": "x"}}}})))
    assert "boolean" in paths["$.clases.A.propiedades.p.obligatorio"]
    assert "pista" in paths["$.clases.A.propiedades.q"]
    with pytest.raises(ValueError, match="true or false"):
        PropertySpec.parse({"obligatorio": "si"})
    with pytest.raises(ValueError, match="unknown key"):
        PropertySpec.parse({"tipo": "string", "pista": "x"})


def test_regression_enum_with_commas_is_not_one_value_shown_as_two():
    with pytest.raises(ValueError, match=r"separated by '\|'"):
        PropertySpec.parse("enum: vivo, muerto")


def test_regression_identity_on_a_class_property_is_refused():
    problems = _dict_problems(_minimal(clases={"A": {"propiedades": {"p": {"tipo": "string", "identidad": True}}}}))
    (path, msg), = problems
    assert path == "$.clases.A.propiedades.p" and "relation attributes" in msg
    with pytest.raises(ValueError, match="relation attributes"):
        PropertySpec.parse({"identity": False})
    assert PropertySpec.parse({"identity": False}, relation_attribute=True).identity is False


def test_regression_file_schema_leaves_spec_text_to_the_parser():
    """The schema used to refuse "String, REQUERIDO", which the parser accepts."""
    from graphrag_got.ontology.loading import file_schema_problems

    data = _minimal(clases={"A": {"propiedades": {"p": "String, REQUERIDO", "q": "enum: a, b"}}})
    assert file_schema_problems(data) == []
    (path, msg), = _dict_problems(data)
    assert path == "$.clases.A.propiedades.q"


@pytest.mark.parametrize("name", ["evidence", "aliases", "chunk_ids", "doc_ids", "uid", "name"])
def test_regression_reserved_property_names(name):
    paths = dict(_dict_problems(_minimal(clases={"A": {"propiedades": {name: "string"}}})))
    assert "reserved" in paths[f"$.clases.A.propiedades.{name}"]


@pytest.mark.parametrize("name", ["symmetric", "evidence", "aliases", "chunk_ids", "doc_ids", "subject", "object",
                                  "relation"])
def test_regression_reserved_relation_attribute_names(name):
    paths = dict(_dict_problems(_minimal(atributos_de_relacion={name: "string"})))
    assert "reserved" in paths[f"$.atributos_de_relacion.{name}"]


@pytest.mark.parametrize("name", ["año", "fecha-inicio", "1momento", "con espacio"])
def test_regression_property_and_attribute_names_must_be_identifiers(name):
    paths = dict(_dict_problems(_minimal(clases={"A": {"propiedades": {name: "string"}}},
                                         atributos_de_relacion={name: "string"})))
    assert set(paths) == {f"$.clases.A.propiedades[{json.dumps(name, ensure_ascii=False)}]",
                          f"$.atributos_de_relacion[{json.dumps(name, ensure_ascii=False)}]"}
    assert all("identifier" in msg for msg in paths.values())


def test_spec_problems_and_semantic_problems_are_reported_together():
    paths = dict(_dict_problems(_minimal(clases={"A": {"propiedades": {"p": "enum: a, b", "evidence": "string"}}})))
    assert set(paths) == {"$.clases.A.propiedades.p", "$.clases.A.propiedades.evidence"}


# ------------------------------------------------------------------ issue 37: messages a hostile file gets
def _from_file_within(path: Path, seconds: float = 10.0) -> OntologyError:
    """The OntologyError reading ``path`` raises, failing the test if the read blocks (a FIFO)."""
    import threading

    out: list[BaseException] = []

    def read() -> None:
        try:
            Ontology.from_file(path)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            out.append(exc)

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"reading {path} blocked for {seconds} s"
    assert out and isinstance(out[0], OntologyError), out
    return out[0]


def test_a_fifo_is_not_a_regular_file_and_is_never_read(tmp_path):
    import os

    fifo = tmp_path / "onto.json"
    os.mkfifo(fifo)
    message = str(_from_file_within(fifo))
    assert "not a regular file" in message and "not found" not in message, message
    assert str(fifo) in message and "GRAPHRAG_ONTOLOGY" in message


def test_a_link_to_a_device_is_not_a_regular_file(tmp_path):
    link = tmp_path / "onto.json"
    link.symlink_to("/dev/zero")
    message = str(_from_file_within(link))
    assert "not a regular file" in message and "/dev/zero" in message and "not found" not in message, message
    broken = tmp_path / "broken.json"
    broken.symlink_to(tmp_path / "nowhere.json")
    message = str(_from_file_within(broken))
    assert "not found" in message and "nowhere.json" in message, message  # a link to nothing is still "not found"


def test_a_huge_integer_is_a_located_problem_not_the_int_limit_text(tmp_path):
    digits = "7" * 100_000
    path = _write(tmp_path, '{"clases": {"A": {}},\n "relaciones": [{"nombre": "R", "dominio": "A", "rango": "A",\n'
                            f'   "simetrica": {digits}}}]}}')
    error = _from_file_within(path)
    message = str(error)
    assert "int_max_str_digits" not in message and "4300" not in message, message
    assert "$.relaciones[0].simetrica" in message and "line 3" in message and "100,000 digits" in message, message
    assert len(message) < 1000
    assert error.problems and error.problems[0][0] == "$.relaciones[0].simetrica"


def test_a_relation_without_a_name_is_one_problem_not_also_no_relation():
    problems = _dict_problems({"clases": {"A": {}}, "relaciones": [{"dominio": "A", "rango": "A"}]})
    assert problems == [("$.relaciones[0]", "relation is missing 'nombre'")], problems
    problems = _dict_problems({"classes": {"A": {}}, "relations": [{"domain": "A"}]})
    assert len(problems) == 1 and "missing" in problems[0][1] and "at least one relation" not in problems[0][1]


@pytest.mark.parametrize("where", [("relaciones", 0, "dominio"), ("relaciones", 0, "rango"),
                                   ("relaciones", 0, "simetrica"), ("relaciones", 0), ("clases", "A"),
                                   ("clases", "A", "propiedades", "p"), ("atributos_de_relacion", "m"),
                                   ("nombre",), ("relaciones", 0, "indicios")])
@pytest.mark.parametrize("value", [None, [{"x": 1}], {"x": None}, True, [None], 1.5])
def test_values_in_messages_are_json_never_python_reprs(where, value):
    data = _minimal(atributos_de_relacion={"m": "string"})
    data["clases"]["A"] = {"propiedades": {"p": "string"}}
    node = data
    for key in where[:-1]:
        node = node[key]
    node[where[-1]] = value
    try:
        Ontology.from_dict(data)
    except OntologyError as exc:
        message = str(exc)
    else:
        return  # a value the ontology takes (e.g. a float where any JSON is allowed)
    for python in ("None", "True", "{'", "['", "'x'", "dict does", "list does"):
        assert python not in message, (python, message)
