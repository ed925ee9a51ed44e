"""The arrays answer form: JSON, each entity and fact an array, names written once, no keys.

``{"ents": [["Class", "name"], ["Class", "name", {"property": "value"}]], "facts": [["subject",
"RELATION", "object"], ["subject", "RELATION", "object", {"attribute": "value"}]]}``: for providers
whose convention is JSON-schema constrained output (Ollama's ``format``, OpenAI structured outputs),
where a grammar cannot be given. The schema enumerates classes and relations; relation ends are
names, and their classes come from the entity arrays, as in :mod:`graphrag_got.extract.forms.lines`.

An array that is not one of the two shapes is kept in the answer's ``unparsed`` list (the validator
refuses it with reason ``unparsed``), never dropped unseen.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from graphrag_got.extract.forms.base import Constraint, Fact, full_answer
from graphrag_got.extract.forms.full import JsonForm
from graphrag_got.ontology.model import Ontology, PropertySpec

_NAME = {"type": "string", "minLength": 1}


def _value_schema(spec: PropertySpec) -> dict[str, Any]:
    return {"enum": list(spec.values)} if spec.kind == "enum" and spec.values else {"type": "string"}


def _object_schema(specs: dict[str, PropertySpec]) -> dict[str, Any]:
    return {"type": "object", "properties": {k: _value_schema(s) for k, s in specs.items()},
            "additionalProperties": False}


def _tuple(items: list[dict[str, Any]]) -> dict[str, Any]:
    # no "items": false: llama.cpp's schema converter takes a schema object there, and minItems/maxItems bound it
    return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _extras(value: Any, item: Any, unparsed: list[dict[str, str]]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        unparsed.append({"line": json.dumps(item, ensure_ascii=False), "why": "its last element is not an object "
                                                                              "of key: value pairs"})
        return {}
    return {str(k): v for k, v in value.items() if v is not None and v != ""}


def read_arrays(value: dict[str, Any]) -> dict[str, Any]:
    """The full form of an arrays answer (``unparsed``: the arrays that are neither shape)."""
    entities: list[dict[str, Any]] = []
    facts: list[Fact] = []
    unparsed: list[dict[str, str]] = []

    def bad(item: Any, why: str) -> None:
        unparsed.append({"line": json.dumps(item, ensure_ascii=False), "why": why})

    ents, rels = value.get("ents"), value.get("facts")
    for item in ents if isinstance(ents, list) else ([] if ents is None else [ents]):
        if not isinstance(item, list) or len(item) not in (2, 3) or not _text(item[0]) or not _text(item[1]):
            bad(item, "an entity must be [\"Class\", \"name\"] (and an object of properties)")
            continue
        entities.append({"type": _text(item[0]), "name": _text(item[1]),
                         **_extras(item[2] if len(item) == 3 else None, item, unparsed)})
    for item in rels if isinstance(rels, list) else ([] if rels is None else [rels]):
        if not isinstance(item, list) or len(item) not in (3, 4) or not all(_text(x) for x in item[:3]):
            bad(item, "a fact must be [\"subject\", \"RELATION\", \"object\"] (and an object of attributes)")
            continue
        s, r, o = (_text(x) or "" for x in item[:3])
        facts.append((s, None, r, o, None, _extras(item[3] if len(item) == 4 else None, item, unparsed)))
    return full_answer(entities, facts, unparsed)


class ArraysForm(JsonForm):
    name = "arrays"
    cache_tag = "arrays-v1"
    about = "JSON arrays without keys ([\"Class\", \"name\"], [\"subject\", \"RELATION\", \"object\"]), for " \
            "providers constrained by a JSON schema"

    def schema(self, onto: Ontology, max_entities: int, max_relations: int) -> dict[str, Any]:
        ents: list[dict[str, Any]] = []
        for cname, klass in onto.classes.items():
            ents.append(_tuple([{"const": cname}, _NAME]))
            if klass.properties:
                ents.append(_tuple([{"const": cname}, _NAME, _object_schema(klass.properties)]))
        names = [r.name for r in onto.relations]
        facts: list[dict[str, Any]] = []
        if names:
            facts.append(_tuple([_NAME, {"enum": names}, _NAME]))
            if onto.relation_attributes:
                facts.append(_tuple([_NAME, {"enum": names}, _NAME, _object_schema(onto.relation_attributes)]))
        one_of = (lambda alts: alts[0] if len(alts) == 1 else {"anyOf": alts})
        props: dict[str, Any] = {"ents": {"type": "array", "items": one_of(ents), "maxItems": max_entities}}
        if facts:
            props["facts"] = {"type": "array", "items": one_of(facts), "maxItems": max_relations}
        return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}

    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        return Constraint(schema=self.schema(onto, max_entities, max_relations))

    def recognizes(self, value: JsonValue) -> bool:
        return isinstance(value, dict) and ("ents" in value or "facts" in value) \
            and "entities" not in value and "relations" not in value

    def expand(self, value: JsonValue) -> JsonValue:
        assert isinstance(value, dict)
        return read_arrays(value)
