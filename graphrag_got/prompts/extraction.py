"""Extraction prompts: the generative strategy's ontology, rules and examples, and verification."""

from __future__ import annotations

import json
from typing import Any

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.ontology.model import ExtractionExample, Ontology, PropertySpec
from graphrag_got.prompts.registry import EXTRACTION_VERSION, _set, template

_NAME_PLACEHOLDER = "<name from the text>"
_CONFIDENCE_EXAMPLE = 0.9


# ---------------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------------


def _attribute_guidance(spec: PropertySpec) -> str:
    """What the ontology says about an attribute: its comment (what it means), then its hint (how to fill it)."""
    parts = (spec.comment, str(getattr(spec, "hint", "") or ""))
    return "; ".join(p.strip().rstrip(".").strip() for p in parts if p.strip().rstrip(".").strip())


def _attribute_rule(name: str, spec: PropertySpec) -> str:
    guidance = _attribute_guidance(spec)
    detail = f" ({guidance})" if guidance else ""
    values = f" with one of: {', '.join(spec.values)}" if spec.kind == "enum" else ""
    if spec.required:
        return f'Fill "{name}"{values} on every relation{detail}, as the text gives it.'
    return f'Fill "{name}"{values} when the text gives it for that fact{detail}; otherwise leave it null.'


def _attribute_example(spec: PropertySpec) -> Any:
    if not spec.required:
        return None
    return f"<one of: {' | '.join(spec.values)}>" if spec.kind == "enum" else "<value from the text>"


#: Answer forms: ``full`` repeats each relation end's name and class; ``compact`` uses short keys and
#: refers to relation ends by their position in the answer's entity list (fewer output tokens).
ANSWER_FORMS = ("full", "compact")


def extraction_rules(onto: Ontology, form: str = "full") -> str:
    """The numbered rules; one rule per relation attribute, none when the ontology has none."""
    if form == "compact":
        ends = ('"s" and "o" of a relation are the positions (0 = first) in "e" of its subject and object:\n'
                '   list in "e" every entity a relation uses, then point at it.')
        answer = 'Answer with a single JSON object {"e": [...], "r": [...]} and nothing else.'
        confidence = 'Give every entity a "c" (confidence) from 0 to 1: how sure you are that the text names it, with that class.'
    else:
        ends = 'Every subject and object of a relation must also be listed in "entities", with the same name and type.'
        answer = 'Answer with a single JSON object {"entities": [...], "relations": [...]} and nothing else.'
        confidence = 'Give every entity a "confidence" from 0 to 1: how sure you are that the text names it, with that class.'
    rules = [
        "Use only the entity classes and relations listed above. Never invent a class or a relation.",
        "Every relation must respect its types: the subject's class must be one of the relation's subject\n"
        "   types and the object's class one of its object types. If a fact fits no relation, leave it out.",
        ends,
        "Write names in full as the text gives them (the full name, not a first name or a shortened form),\n"
        "   the same way every time.",
    ]
    rules += [_attribute_rule(name, spec) for name, spec in onto.relation_attributes.items()]
    rules += [
        confidence,
        "Only facts stated in the text. No outside knowledge. Property values only when the text says them.",
        answer,
    ]
    return "RULES\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, 1))


def extraction_example(onto: Ontology, form: str = "full") -> dict[str, Any]:
    """A format example built from the ontology's first relation (shape only, no content)."""
    if form == "compact":
        if not onto.relations:
            first = next(iter(onto.classes))
            return {"e": [{"t": first, "n": _NAME_PLACEHOLDER, "c": _CONFIDENCE_EXAMPLE}], "r": []}
        rel = onto.relations[0]
        compact: dict[str, Any] = {"r": rel.name, "s": 0, "o": 1}
        compact.update({name: _attribute_example(spec) for name, spec in onto.relation_attributes.items()})
        return {"e": [{"t": rel.domain[0], "n": _NAME_PLACEHOLDER, "c": _CONFIDENCE_EXAMPLE},
                      {"t": rel.range[0], "n": _NAME_PLACEHOLDER, "c": _CONFIDENCE_EXAMPLE}],
                "r": [compact]}
    if not onto.relations:
        first = next(iter(onto.classes))
        return {"entities": [{"type": first, "name": _NAME_PLACEHOLDER, "confidence": _CONFIDENCE_EXAMPLE}],
                "relations": []}
    rel = onto.relations[0]
    s_cls, o_cls = rel.domain[0], rel.range[0]
    relation: dict[str, Any] = {"relation": rel.name, "subject": _NAME_PLACEHOLDER, "subject_type": s_cls,
                                "object": _NAME_PLACEHOLDER, "object_type": o_cls}
    relation.update({name: _attribute_example(spec) for name, spec in onto.relation_attributes.items()})
    return {
        "entities": [{"type": s_cls, "name": _NAME_PLACEHOLDER, "confidence": _CONFIDENCE_EXAMPLE},
                     {"type": o_cls, "name": _NAME_PLACEHOLDER, "confidence": _CONFIDENCE_EXAMPLE}],
        "relations": [relation],
    }


def example_answer(onto: Ontology, example: ExtractionExample, form: str = "full") -> dict[str, Any]:
    """The answer an annotated example expects, written in ``form`` with the schema's key order.

    Optional attributes the example does not give are left out (the schema allows it), which
    teaches the model not to spend tokens on ``null``s.
    """
    classes = {}
    for ent in example.entities:
        classes.setdefault(ent.name, ent.class_name)

    def props(ent: Any) -> dict[str, str]:  # in the class's declared order, as the schema wants them
        return {k: ent.properties[k] for k in onto.classes[ent.class_name].properties if k in ent.properties}

    def attrs(rel: Any) -> dict[str, str]:
        return {k: rel.attributes[k] for k in onto.relation_attributes if k in rel.attributes}
    if form == "compact":
        position = {}
        entities: list[dict[str, Any]] = []
        for ent in example.entities:
            position.setdefault(ent.name, len(entities))
            entities.append({"t": ent.class_name, "n": ent.name, "c": _CONFIDENCE_EXAMPLE, **props(ent)})
        rels = [{"r": r.relation, "s": position[r.subject], "o": position[r.object], **attrs(r)}
                for r in example.relations]
        return {"e": entities, "r": rels}
    entities = [{"type": e.class_name, "name": e.name, "confidence": _CONFIDENCE_EXAMPLE, **props(e)}
                for e in example.entities]
    rels = [{"relation": r.relation, "subject": r.subject, "subject_type": classes[r.subject], "object": r.object,
             "object_type": classes[r.object], **attrs(r)} for r in example.relations]
    return {"entities": entities, "relations": rels}


def _examples_block(onto: Ontology, form: str) -> str:
    if not onto.examples:
        return ("FORMAT EXAMPLE (shape only, not content):\n"
                f"{json.dumps(extraction_example(onto, form), ensure_ascii=False)}")
    parts = ["EXAMPLES (other texts, to show how a text is read: never copy their names or facts)"]
    for i, ex in enumerate(onto.examples, 1):
        parts.append(f"Example {i} TEXT:\n{ex.text.strip()}\nExample {i} ANSWER:\n"
                     f"{json.dumps(example_answer(onto, ex, form), ensure_ascii=False)}")
    return "\n\n".join(parts)


EXTRACT_SYSTEM = template(
    "extract.system", EXTRACTION_VERSION,
    "You build a knowledge graph from a text, following an ontology strictly.\n\n${ontology}\n\n${rules}\n\n${examples}",
    required=("ontology",),
    about="extraction (generative strategy), the shared prefix of every call: ${ontology} the classes, relations "
          "and attributes with their comments; ${rules} the numbered rules (one per relation attribute); "
          "${examples} the ontology's annotated examples, or a format example")
EXTRACT_USER = template(
    "extract.user", EXTRACTION_VERSION,
    "TEXT:\n${text}\n\nExtract the entities and relations of this text as JSON.", required=("text",),
    about="extraction (generative strategy), the part of each call about one chunk: ${text} the chunk")
#: The prompts of one extraction call (their versions key the stored answers).
EXTRACT_PROMPTS = (EXTRACT_SYSTEM, EXTRACT_USER)


def extraction_system_prompt(onto: Ontology, form: str = "full", *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every extraction call: the ontology, the rules, examples.

    The examples are the ontology's annotated ones (``ejemplos``) when it has some, else a format
    example built from its first relation. It depends on the ontology (and the answer form) only,
    never on a chunk, so llama.cpp reuses its evaluated tokens across calls (KV-cache prefix) and
    remote providers can cache it. The ontology's ``description`` is the domain hint; it is part of
    ``onto.describe()``.
    """
    return _set(prompts).render(EXTRACT_SYSTEM, ontology=onto.describe(), rules=extraction_rules(onto, form),
                                examples=_examples_block(onto, form))


def extraction_user_prompt(text: str, *, prompts: PromptSet | None = None) -> str:
    """The per-chunk part of an extraction call."""
    return _set(prompts).render(EXTRACT_USER, text=text)


__all__ = ["ANSWER_FORMS", "EXTRACT_PROMPTS", "EXTRACT_SYSTEM", "EXTRACT_USER", "example_answer", "extraction_example",
           "extraction_rules", "extraction_system_prompt", "extraction_user_prompt"]  # fmt: skip
