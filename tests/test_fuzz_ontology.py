"""Property-based tests (hypothesis) of reading an ontology: whatever the dict or the file bytes,
``Ontology.from_dict`` / ``Ontology.from_file`` give a valid ``Ontology`` or one ``OntologyError``,
never another exception. No Neo4j, no model.

Profiles (tests/conftest.py): "default" on every run, ``--hypothesis-profile=thorough`` for a long search.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graphrag_got.errors import OntologyError
from graphrag_got.ontology.model import Ontology

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# ------------------------------------------------------------------------------------ strategies

#: Text a hostile user may type: any code point (lone surrogates included), or a short plausible word.
hostile_text = st.one_of(
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12),
    st.sampled_from(["", " ", "Person", "Place", "HAS_CHUNK", "Entity", "uid", "a b", "1abc", "abc\n", "ÑANDÚ",
                     "x" * 300, "`x`", "a|b"]),
)
names = st.one_of(st.from_regex(IDENTIFIER, fullmatch=True).filter(lambda s: len(s) < 20), hostile_text)
specs = st.one_of(
    st.sampled_from(["string", "string, required", "string optional, a hint", "text", "texto obligatorio",
                     "enum: a | b", "enum: a | b, required, hint", "enum: a, b", "enum:", "enum: a | a",
                     "string required optional", "hint without a type", "string_libre", ""]),
    hostile_text,
    st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(["string", "enum", "enum: x | y", "number", ""]),
        "tipo": st.sampled_from(["string", "enum"]),
        "values": st.lists(hostile_text, max_size=3),
        "required": st.one_of(st.booleans(), hostile_text),
        "identity": st.one_of(st.booleans(), st.integers()),
        "comment": hostile_text,
    }),
    st.integers(), st.none(), st.lists(st.integers(), max_size=2),
)
name_or_names = st.one_of(names, st.lists(names, max_size=3), st.integers(), st.none())


@st.composite
def ontology_like(draw: st.DrawFn) -> dict[str, Any]:
    """Mostly the shape of an ontology (either language of keys), with hostile values anywhere."""
    es = draw(st.booleans())
    k = (lambda es_key, en_key: es_key if es else en_key)  # noqa: E731
    classes = draw(st.dictionaries(names, st.one_of(
        st.fixed_dictionaries({}, optional={"comment": hostile_text,
                                            k("propiedades", "properties"): st.dictionaries(names, specs, max_size=3)}),
        specs), max_size=3))  # fmt: skip
    relation = st.fixed_dictionaries(
        {k("nombre", "name"): names},
        optional={k("dominio", "domain"): name_or_names, k("rango", "range"): name_or_names,
                  k("simetrica", "symmetric"): st.one_of(st.booleans(), hostile_text), "comment": hostile_text},
    )  # fmt: skip
    data: dict[str, Any] = {k("nombre", "name"): draw(hostile_text), k("clases", "classes"): classes,
                            k("relaciones", "relations"): draw(st.lists(relation, max_size=3))}  # fmt: skip
    if draw(st.booleans()):
        data[k("atributos_de_relacion", "relation_attributes")] = draw(st.dictionaries(names, specs, max_size=2))
    if draw(st.booleans()):  # an alias given next to its key, or an unknown key
        data[draw(st.sampled_from(["classes", "clases", "relations", "extra", "descripcion"]))] = draw(specs)
    return data


identifiers = st.from_regex(r"[A-Z][a-z]{1,6}", fullmatch=True)
good_specs = st.sampled_from(["string", "string, required", "string optional, a hint", "text",
                              "enum: a | b", "enum: a | b, required, hint", {"type": "enum", "values": ["x", "y"]},
                              {"type": "string", "required": True, "comment": "c"}])


@st.composite
def near_valid(draw: st.DrawFn) -> dict[str, Any]:
    """A valid ontology, then (most of the time) one value somewhere replaced by a hostile one."""
    classes = draw(st.lists(identifiers, min_size=1, max_size=3, unique=True))
    rel_names = draw(st.lists(identifiers.map(str.upper), min_size=1, max_size=3, unique=True))
    data: dict[str, Any] = {
        "name": "fuzz",
        "classes": {c: {"properties": draw(st.dictionaries(identifiers.map(str.lower), good_specs, max_size=2))}
                    for c in classes},
        "relations": [{"name": r, "domain": draw(st.sampled_from(classes)),
                       "range": draw(st.lists(st.sampled_from(classes), min_size=1, max_size=2, unique=True)),
                       "symmetric": draw(st.booleans())} for r in rel_names],
        "relation_attributes": draw(st.dictionaries(identifiers.map(str.lower), good_specs, max_size=2)),
    }  # fmt: skip
    spot = draw(st.sampled_from(["none", "class", "property", "relation", "domain", "attribute", "name"]))
    bad = draw(st.one_of(hostile_text, specs, name_or_names))
    if spot == "class":
        data["classes"][draw(hostile_text)] = {"properties": {}}
    elif spot == "property":
        data["classes"][classes[0]]["properties"][draw(names)] = bad
    elif spot == "relation":
        data["relations"][0]["name"] = bad
    elif spot == "domain":
        data["relations"][0][draw(st.sampled_from(["domain", "range"]))] = bad
    elif spot == "attribute":
        data["relation_attributes"][draw(names)] = bad
    elif spot == "name":
        data["name"] = bad
    return data


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | hostile_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(hostile_text, inner, max_size=3),
    max_leaves=12,
)


def assert_valid(onto: Ontology) -> None:
    """What a returned ontology promises the rest of the package."""
    assert onto.classes and onto.relations
    for name in [*onto.classes, *(r.name for r in onto.relations), *onto.relation_attributes]:
        assert IDENTIFIER.fullmatch(name), name
    for rel in onto.relations:
        assert rel.domain and rel.range and set(rel.domain) | set(rel.range) <= set(onto.classes)
    assert re.fullmatch(r"[0-9a-f]{64}", onto.hash)
    assert isinstance(onto.describe(), str)


def read_dict(data: Any) -> None:
    try:
        onto = Ontology.from_dict(data, source="fuzz.json")
    except OntologyError as exc:
        assert str(exc).strip()
    else:
        assert_valid(onto)


# ------------------------------------------------------------------------------------ properties


@given(st.one_of(ontology_like(), near_valid()))
def test_ontology_shaped_dict_is_an_ontology_or_one_ontology_error(data: dict[str, Any]) -> None:
    read_dict(data)


@given(json_values)
def test_any_json_value_is_an_ontology_or_one_ontology_error(data: Any) -> None:
    read_dict(data)


def _file_bytes() -> st.SearchStrategy[bytes]:
    def encoded(data: Any) -> bytes:
        return json.dumps(data, ensure_ascii=False).encode("utf-8", "surrogatepass")

    return st.one_of(
        st.binary(max_size=200),  # binary, truncated UTF-8, NUL bytes
        ontology_like().map(encoded),
        near_valid().map(encoded),
        ontology_like().map(lambda d: b"\xef\xbb\xbf" + encoded(d)),  # BOM
        ontology_like().map(lambda d: json.dumps(d).encode("utf-16")),  # not UTF-8
        ontology_like().map(lambda d: encoded(d)[: max(1, len(encoded(d)) // 2)]),  # cut in the middle
        st.integers(min_value=1, max_value=3000).map(lambda n: b"[" * n + b"]" * n),  # deep nesting
        st.sampled_from([b"", b"   ", b"null", b"{}", b'{"a": 1, "a": 2}', b"\xff\xfe", b"{" * 100_000]),
    )


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(_file_bytes())
def test_any_file_content_is_an_ontology_or_one_ontology_error(content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "ontology.json"
        path.write_bytes(content)
        try:
            onto = Ontology.from_file(path)
        except OntologyError as exc:
            assert str(exc).strip()
        else:
            assert_valid(onto)


def test_a_folder_or_a_missing_path_is_one_ontology_error(tmp_path: Path) -> None:
    for path in (tmp_path, tmp_path / "missing.json"):
        try:
            Ontology.from_file(path)
        except OntologyError as exc:
            assert str(path) in str(exc)
        else:  # pragma: no cover - the assertion below explains the failure
            raise AssertionError(f"{path} was read as an ontology")
