"""How an answer is written in each extraction answer form: the format example and the annotated
examples of the prompt (:mod:`graphrag_got.prompts.extraction`). What constrains a form and how its
text is read are the form's own (:mod:`graphrag_got.extract.forms`), which hands its examples to these
writers."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphrag_got.ontology.model import ExtractionExample, Ontology, PropertySpec

NAME_PLACEHOLDER = "<name from the text>"
CONFIDENCE_EXAMPLE = 0.9


def attribute_example(spec: PropertySpec) -> Any:
    """A required attribute's placeholder in a format example (None for an optional one)."""
    if not spec.required:
        return None
    return f"<one of: {' | '.join(spec.values)}>" if spec.kind == "enum" else "<value from the text>"


def ordered_properties(onto: Ontology, class_name: str, given: dict[str, str]) -> dict[str, str]:
    """An example entity's properties in its class's declared order (the order the schema wants)."""
    return {k: given[k] for k in onto.classes[class_name].properties if k in given}


def ordered_attributes(onto: Ontology, given: dict[str, str]) -> dict[str, str]:
    return {k: given[k] for k in onto.relation_attributes if k in given}


def _classes(example: ExtractionExample) -> dict[str, str]:
    classes: dict[str, str] = {}
    for ent in example.entities:
        classes.setdefault(ent.name, ent.class_name)
    return classes


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


# ------------------------------------------------------------------------------------------- full
def _full_format(onto: Ontology) -> str:
    if not onto.relations:
        first = next(iter(onto.classes))
        return _dump({"entities": [{"type": first, "name": NAME_PLACEHOLDER, "confidence": CONFIDENCE_EXAMPLE}],
                      "relations": []})
    rel = onto.relations[0]
    s_cls, o_cls = rel.domain[0], rel.range[0]
    relation: dict[str, Any] = {"relation": rel.name, "subject": NAME_PLACEHOLDER, "subject_type": s_cls,
                                "object": NAME_PLACEHOLDER, "object_type": o_cls}
    relation.update({name: attribute_example(spec) for name, spec in onto.relation_attributes.items()})
    return _dump({"entities": [{"type": s_cls, "name": NAME_PLACEHOLDER, "confidence": CONFIDENCE_EXAMPLE},
                               {"type": o_cls, "name": NAME_PLACEHOLDER, "confidence": CONFIDENCE_EXAMPLE}],
                  "relations": [relation]})


def _full_answer(onto: Ontology, example: ExtractionExample) -> str:
    classes = _classes(example)
    entities = [{"type": e.class_name, "name": e.name, "confidence": CONFIDENCE_EXAMPLE,
                 **ordered_properties(onto, e.class_name, e.properties)} for e in example.entities]
    rels = [{"relation": r.relation, "subject": r.subject, "subject_type": classes[r.subject], "object": r.object,
             "object_type": classes[r.object], **ordered_attributes(onto, r.attributes)} for r in example.relations]
    return _dump({"entities": entities, "relations": rels})


# ---------------------------------------------------------------------------------------- compact
def _compact_format(onto: Ontology) -> str:
    if not onto.relations:
        first = next(iter(onto.classes))
        return _dump({"e": [{"t": first, "n": NAME_PLACEHOLDER, "c": CONFIDENCE_EXAMPLE}], "r": []})
    rel = onto.relations[0]
    item: dict[str, Any] = {"r": rel.name, "s": 0, "o": 1}
    item.update({name: attribute_example(spec) for name, spec in onto.relation_attributes.items()})
    return _dump({"e": [{"t": rel.domain[0], "n": NAME_PLACEHOLDER, "c": CONFIDENCE_EXAMPLE},
                        {"t": rel.range[0], "n": NAME_PLACEHOLDER, "c": CONFIDENCE_EXAMPLE}], "r": [item]})


def _compact_answer(onto: Ontology, example: ExtractionExample) -> str:
    position: dict[str, int] = {}
    entities: list[dict[str, Any]] = []
    for ent in example.entities:
        position.setdefault(ent.name, len(entities))
        entities.append({"t": ent.class_name, "n": ent.name, "c": CONFIDENCE_EXAMPLE,
                         **ordered_properties(onto, ent.class_name, ent.properties)})
    rels = [{"r": r.relation, "s": position[r.subject], "o": position[r.object],
             **ordered_attributes(onto, r.attributes)} for r in example.relations]
    return _dump({"e": entities, "r": rels})


# ------------------------------------------------------------------------------------------ lines
def _lines_format(onto: Ontology) -> str:
    if not onto.relations:
        return f"{next(iter(onto.classes))}: {NAME_PLACEHOLDER}"
    rel = onto.relations[0]
    return f"{NAME_PLACEHOLDER} ({rel.domain[0]}) -{rel.name}-> {NAME_PLACEHOLDER} ({rel.range[0]})"


def _lines_answer(onto: Ontology, example: ExtractionExample) -> str:
    """The facts first, then an entity line for each entity with a property, or in no fact."""
    classes = _classes(example)
    out = []
    for rel in example.relations:
        attrs = ordered_attributes(onto, rel.attributes)
        out.append(f"{rel.subject} ({classes[rel.subject]}) -{rel.relation}-> {rel.object} ({classes[rel.object]})"
                   + "".join(f" | {k}={v}" for k, v in attrs.items()))
    in_facts = {n for rel in example.relations for n in (rel.subject, rel.object)}
    for ent in example.entities:
        props = ordered_properties(onto, ent.class_name, ent.properties)
        if props or ent.name not in in_facts:
            out.append(f"{ent.class_name}: {ent.name}" + "".join(f" | {k}={v}" for k, v in props.items()))
    return "\n".join(out)


# ----------------------------------------------------------------------------------------- arrays
def _arrays_format(onto: Ontology) -> str:
    if not onto.relations:
        return _dump({"ents": [[next(iter(onto.classes)), NAME_PLACEHOLDER]], "facts": []})
    rel = onto.relations[0]
    return _dump({"ents": [[rel.domain[0], NAME_PLACEHOLDER], [rel.range[0], NAME_PLACEHOLDER]],
                  "facts": [[NAME_PLACEHOLDER, rel.name, NAME_PLACEHOLDER]]})


def _arrays_answer(onto: Ontology, example: ExtractionExample) -> str:
    ents: list[list[Any]] = []
    for ent in example.entities:
        props = ordered_properties(onto, ent.class_name, ent.properties)
        ents.append([ent.class_name, ent.name, props] if props else [ent.class_name, ent.name])
    facts: list[list[Any]] = []
    for rel in example.relations:
        attrs = ordered_attributes(onto, rel.attributes)
        facts.append([rel.subject, rel.relation, rel.object, attrs] if attrs else [rel.subject, rel.relation, rel.object])
    return _dump({"ents": ents, "facts": facts})


@dataclass(frozen=True)
class Writer:
    """How one form writes an answer: a shape-only example, an annotated example's answer; ``json``: the
    text is JSON."""

    format_example: Callable[[Ontology], str]
    example_answer: Callable[[Ontology, ExtractionExample], str]
    json: bool = True


#: Each answer form's writer, by form name (the names of ``GRAPHRAG_ANSWER_FORM``).
WRITERS: dict[str, Writer] = {
    "full": Writer(_full_format, _full_answer),
    "compact": Writer(_compact_format, _compact_answer),
    "lines": Writer(_lines_format, _lines_answer, json=False),
    "arrays": Writer(_arrays_format, _arrays_answer),
}


def writer(form: str) -> Writer:
    try:
        return WRITERS[form]
    except KeyError:
        raise ValueError(f"unknown answer form {form!r}; choose from {', '.join(WRITERS)}") from None
