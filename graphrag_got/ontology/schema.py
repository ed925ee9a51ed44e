"""Pydantic models generated from an ontology at run time; their JSON schema constrains the LLM.

- one entity model per class: ``type`` is ``Literal[<class>]``, enum properties are ``Literal`` types;
- one relation model per relation: ``relation`` is ``Literal[<name>]`` and ``subject_type`` /
  ``object_type`` are Literals of exactly that relation's domain and range, so constrained decoding
  cannot write a triple whose end classes the relation does not take; the ontology's relation
  attributes (none when it declares none) are optional or required fields as declared;
- the result model holds both lists as discriminated unions, bounded with ``maxItems`` (small models
  otherwise repeat until they run out of tokens).

Decoding is a first line of defence only: ``graphrag_got.extract.validate`` checks every item again, since a
replayed or unconstrained answer may not respect the schema.
"""

from __future__ import annotations

import copy
from typing import Annotated, Any, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, create_model

from graphrag_got.ontology.model import Ontology, PropertySpec



def _prop_field(name: str, spec: PropertySpec) -> tuple[Any, Any]:
    typ: Any = Literal[tuple(spec.values)] if spec.kind == "enum" else str  # type: ignore[valid-type]
    if spec.required:
        return typ, Field(..., alias=name, description=spec.comment or None)
    return Optional[typ], Field(None, alias=name, description=spec.comment or None)


def entity_models(onto: Ontology) -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for cname, klass in onto.classes.items():
        fields: dict[str, Any] = {
            "type": (Literal[cname], Field(...)),  # type: ignore[valid-type]
            "name": (str, Field(..., min_length=1)),
            # How sure the model is that the text names this entity of this class (0-1); optional, so
            # an answer without it is still valid. Mentions under GRAPHRAG_MIN_CONFIDENCE are refused.
            "confidence": (Optional[float], Field(None, ge=0, le=1)),
        }
        # Field names are positional (p0, p1...) with the property name as alias, so any property
        # name (including ones that clash with BaseModel attributes) is safe.
        for i, (pname, spec) in enumerate(klass.properties.items()):
            fields[f"p{i}"] = _prop_field(pname, spec)
        models[cname] = create_model(  # type: ignore[call-overload]
            f"Entity_{cname}",
            __config__=ConfigDict(extra="forbid", populate_by_name=True),
            __doc__=klass.comment or None,
            **fields,
        )
    return models


def relation_models(onto: Ontology) -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    for rel in onto.relations:
        # Exactly domain -> range, symmetric or not: widening both ends independently for a symmetric
        # A-B relation would admit A -> A, which the validator refuses. The validator also accepts a
        # symmetric triple written the other way round, so nothing valid is lost.
        types_s, types_o = rel.domain, rel.range
        fields: dict[str, Any] = {
            "relation": (Literal[rel.name], Field(...)),  # type: ignore[valid-type]
            "subject": (str, Field(..., min_length=1)),
            "subject_type": (Literal[types_s], Field(...)),  # type: ignore[valid-type]
            "object": (str, Field(..., min_length=1)),
            "object_type": (Literal[types_o], Field(...)),  # type: ignore[valid-type]
        }
        for i, (aname, spec) in enumerate(onto.relation_attributes.items()):
            fields[f"a{i}"] = _prop_field(aname, spec)
        models[rel.name] = create_model(  # type: ignore[call-overload]
            f"Relation_{rel.name}",
            __config__=ConfigDict(extra="forbid", populate_by_name=True),
            __doc__=rel.comment or None,
            **fields,
        )
    return models


def extraction_model(onto: Ontology, max_entities: int = 25, max_relations: int = 25) -> type[BaseModel]:
    """The model of one chunk's answer: ``{"entities": [...], "relations": [...]}``."""
    ents = list(entity_models(onto).values())
    rels = list(relation_models(onto).values())
    ent_t: Any = Annotated[Union[tuple(ents)], Field(discriminator="type")] if len(ents) > 1 else ents[0]
    rel_t: Any = Annotated[Union[tuple(rels)], Field(discriminator="relation")] if len(rels) > 1 else rels[0]
    return create_model(  # type: ignore[call-overload]
        "Extraction",
        __config__=ConfigDict(extra="forbid"),
        entities=(list[ent_t], Field(default_factory=list, max_length=max_entities)),
        relations=(list[rel_t], Field(default_factory=list, max_length=max_relations)),
    )


def compact_extraction_model(onto: Ontology, max_entities: int = 25, max_relations: int = 25) -> type[BaseModel]:
    """The compact answer: ``{"e": [{"t", "n", "c", <property>...}], "r": [{"r", "s", "o", <attribute>...}]}``.

    ``s``/``o`` are positions in ``e``, so a relation does not repeat its ends' names and classes
    (:mod:`graphrag_got.extract.answer_form` expands it to the full form before validation). Domain and range
    are no longer enforced by decoding here: the validator checks them on the expanded triple.
    """
    ents: list[type[BaseModel]] = []
    for cname, klass in onto.classes.items():
        fields: dict[str, Any] = {
            "t": (Literal[cname], Field(...)),  # type: ignore[valid-type]
            "n": (str, Field(..., min_length=1)),
            "c": (Optional[float], Field(None, ge=0, le=1)),
        }
        for i, (pname, spec) in enumerate(klass.properties.items()):
            fields[f"p{i}"] = _prop_field(pname, spec)
        ents.append(create_model(f"E_{cname}", __config__=ConfigDict(extra="forbid", populate_by_name=True),
                                 **fields))  # type: ignore[call-overload]
    rels: list[type[BaseModel]] = []
    position = (int, Field(..., ge=0, le=max(0, max_entities - 1)))
    for rel in onto.relations:
        fields = {"r": (Literal[rel.name], Field(...)), "s": position, "o": position}  # type: ignore[valid-type]
        for i, (aname, spec) in enumerate(onto.relation_attributes.items()):
            fields[f"a{i}"] = _prop_field(aname, spec)
        rels.append(create_model(f"R_{rel.name}", __config__=ConfigDict(extra="forbid", populate_by_name=True),
                                 **fields))  # type: ignore[call-overload]
    ent_t: Any = Annotated[Union[tuple(ents)], Field(discriminator="t")] if len(ents) > 1 else ents[0]
    rel_t: Any = Annotated[Union[tuple(rels)], Field(discriminator="r")] if len(rels) > 1 else rels[0]
    return create_model(  # type: ignore[call-overload]
        "CompactExtraction",
        __config__=ConfigDict(extra="forbid"),
        e=(list[ent_t], Field(default_factory=list, max_length=max_entities)),
        r=(list[rel_t], Field(default_factory=list, max_length=max_relations)),
    )


def extraction_schema(onto: Ontology, max_entities: int = 25, max_relations: int = 25,
                      form: str = "full") -> dict[str, Any]:
    """The JSON schema of the full (or compact) answer form, references inlined and titles dropped. What
    constrains each answer form (a schema or a grammar) is its own: :mod:`graphrag_got.extract.forms`."""
    if form == "compact":
        return llm_schema(compact_extraction_model(onto, max_entities, max_relations))
    return llm_schema(extraction_model(onto, max_entities, max_relations))


def llm_schema(model: type[BaseModel]) -> dict[str, Any]:
    """A model's JSON schema made portable for grammar-constrained decoders.

    Inlines ``$ref``s and drops ``title``/``discriminator`` keys: Ollama's and llama.cpp's schema to
    grammar converters handle a plain tree more reliably than pydantic's ``$defs`` + mapping form, and
    the schema gets shorter.
    """
    raw = model.model_json_schema(by_alias=True)
    defs = raw.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = node["$ref"].rsplit("/", 1)[-1]
                return inline(copy.deepcopy(defs[target]))
            out = {}
            for k, v in node.items():
                if k in {"title", "discriminator"}:
                    continue
                # "properties" maps field names (which may be called "title") to schemas
                out[k] = {name: inline(sub) for name, sub in v.items()} if k == "properties" else inline(v)
            return out
        if isinstance(node, list):
            return [inline(v) for v in node]
        return node

    return inline(raw)
