"""Extraction prompts: the generative strategy's ontology, rules and examples, and verification."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.prompts.answer_forms import WRITERS, writer
from graphrag_got.ontology.model import ExtractionExample, Ontology, PropertySpec
from graphrag_got.prompts.registry import EXTRACTION_VERSION, _set, template



# ---------------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------------


def _attribute_guidance(spec: PropertySpec) -> str:
    """What the ontology says about an attribute: its comment (what it means), then its hint (how to fill it)."""
    parts = (spec.comment, str(getattr(spec, "hint", "") or ""))
    return "; ".join(p.strip().rstrip(".").strip() for p in parts if p.strip().rstrip(".").strip())


@dataclass(frozen=True)
class FormText:
    """The prompt sentences about writing an answer in one form (the ontology's part is the same for all)."""

    ends: str  # how entities and facts are written, and that every relation end is an entity
    answer: str  # what the answer is, and nothing else
    confidence: str | None  # the confidence rule (None: the form writes none)
    required: str  # a required relation attribute: {name}, {values}, {detail}
    optional: str  # an optional relation attribute
    user: str  # the per-chunk prompt's name (a template)
    again: str = "Answer again with only the JSON object, complete and valid, nothing else."  # after a bad answer


# the JSON forms' attribute sentences (full and compact name attributes the same way)
_JSON_REQUIRED = 'Fill "{name}"{values} on every relation{detail}, as the text gives it.'
_JSON_OPTIONAL = 'Fill "{name}"{values} when the text gives it for that fact{detail}; otherwise leave it null.'

#: The sentences of each answer form (:mod:`graphrag_got.extract.forms`), by form name.
FORM_TEXT: dict[str, FormText] = {
    "full": FormText(
        ends='Every subject and object of a relation must also be listed in "entities", with the same name and type.',
        answer='Answer with a single JSON object {"entities": [...], "relations": [...]} and nothing else.',
        confidence='Give every entity a "confidence" from 0 to 1: how sure you are that the text names it, with that class.',
        required=_JSON_REQUIRED, optional=_JSON_OPTIONAL,
        user="extract.user"),
    "compact": FormText(
        ends=('"s" and "o" of a relation are the positions (0 = first) in "e" of its subject and object:\n'
              '   list in "e" every entity a relation uses, then point at it.'),
        answer='Answer with a single JSON object {"e": [...], "r": [...]} and nothing else.',
        confidence='Give every entity a "c" (confidence) from 0 to 1: how sure you are that the text names it, with that class.',
        required=_JSON_REQUIRED, optional=_JSON_OPTIONAL,
        user="extract.user"),
    "lines": FormText(
        ends=('One line per fact: the subject\'s name and class, the relation, the object\'s name and class:\n'
              '   "name (Class) -RELATION-> name (Class)". After the facts, one line for each entity with a property\n'
              '   the text gives: its class, a colon, its name, " | property=value". Write each line once.'),
        answer="Answer with these lines only, nothing before or after them.",
        confidence=None,
        required='End every fact line with " | {name}=value"{values}{detail}, as the text gives it.',
        optional=('End a fact line with " | {name}=value"{values} when the text gives it for that fact{detail}; '
                  'otherwise write nothing for it.'),
        user="extract.user.lines",
        again="Answer again with only the lines, one fact a line: name (Class) -RELATION-> name (Class)."),
    "arrays": FormText(
        ends=('Write each entity as ["Class", "name"] in "ents" and each fact as ["subject", "RELATION", "object"] in\n'
              '   "facts", with the names exactly as in "ents"; every subject and object is also in "ents".\n'
              '   Properties the text gives are a third element of the entity: ["Class", "name", {"property": "value"}].'),
        answer='Answer with a single JSON object {"ents": [...], "facts": [...]} and nothing else.',
        confidence=None,
        required='Give every fact a fourth element {{"{name}": value}}{values}{detail}, as the text gives it.',
        optional=('Give a fact a fourth element {{"{name}": value}}{values} when the text gives it for that '
                  'fact{detail}; otherwise leave it out.'),
        user="extract.user"),
}


def form_text(form: str) -> FormText:
    writer(form)  # an unknown form's error
    return FORM_TEXT[form]


def _attribute_rule(name: str, spec: PropertySpec, text: FormText) -> str:
    guidance = _attribute_guidance(spec)
    detail = f" ({guidance})" if guidance else ""
    values = f" with one of: {', '.join(spec.values)}" if spec.kind == "enum" else ""
    return (text.required if spec.required else text.optional).format(name=name, values=values, detail=detail)


#: Answer forms: ``full`` repeats each relation end's name and class; ``compact`` uses short keys and
#: refers to relation ends by their position; ``lines`` and ``arrays`` write each fact once, without keys.
ANSWER_FORMS = tuple(WRITERS)


def extraction_rules(onto: Ontology, form: str = "full") -> str:
    """The numbered rules; one rule per relation attribute, none when the ontology has none."""
    text = form_text(form)
    rules = [
        "Use only the entity classes and relations listed above. Never invent a class or a relation.",
        "Every relation must respect its types: the subject's class must be one of the relation's subject\n"
        "   types and the object's class one of its object types. If a fact fits no relation, leave it out.",
        text.ends,
        "Write names in full as the text gives them (the full name, not a first name or a shortened form),\n"
        "   the same way every time.",
    ]
    rules += [_attribute_rule(name, spec, text) for name, spec in onto.relation_attributes.items()]
    rules += [text.confidence] if text.confidence else []
    rules += [
        "Only facts stated in the text. No outside knowledge. Property values only when the text says them.",
        text.answer,
    ]
    return "RULES\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, 1))


def extraction_example(onto: Ontology, form: str = "full") -> Any:
    """A format example built from the ontology's first relation (shape only, no content): the parsed
    JSON for a JSON form, the text for another."""
    w = writer(form)
    text = w.format_example(onto)
    return json.loads(text) if w.json else text


def example_answer(onto: Ontology, example: ExtractionExample, form: str = "full") -> Any:
    """The answer an annotated example expects, written in ``form`` (parsed JSON for a JSON form, with
    the schema's key order; the text for another).

    Optional attributes the example does not give are left out (the schema allows it), which
    teaches the model not to spend tokens on ``null``s.
    """
    w = writer(form)
    text = w.example_answer(onto, example)
    return json.loads(text) if w.json else text


def _examples_block(onto: Ontology, form: str) -> str:
    f = writer(form)
    if not onto.examples:
        return f"FORMAT EXAMPLE (shape only, not content):\n{f.format_example(onto)}"
    parts = ["EXAMPLES (other texts, to show how a text is read: never copy their names or facts)"]
    for i, ex in enumerate(onto.examples, 1):
        parts.append(f"Example {i} TEXT:\n{ex.text.strip()}\nExample {i} ANSWER:\n{f.example_answer(onto, ex)}")
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
EXTRACT_USER_LINES = template(
    "extract.user.lines", "extract-lines-v1",
    "TEXT:\n${text}\n\nExtract the entities and relations of this text, one per line.", required=("text",),
    about="extraction (generative strategy, GRAPHRAG_ANSWER_FORM=lines), the part of each call about one chunk: "
          "${text} the chunk")
EXTRACT_GLEAN = template(
    "extract.glean", "glean-v1",
    "Some entities and facts the text states may be missing from your answer. Write only those that are "
    "missing, in the same form as your answer and by the same rules, without repeating any of it; write nothing "
    "if none is missing.",
    about="extraction (generative strategy), a recall pass (GRAPHRAG_GLEANINGS): the message after the model's "
          "answer that asks for what it missed")
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


def gleaning_prompt(*, prompts: PromptSet | None = None) -> str:
    """The message of a recall pass, after the model's answer in the same conversation."""
    return _set(prompts).render(EXTRACT_GLEAN)


def extraction_user_prompt(text: str, *, prompts: PromptSet | None = None, form: str = "full") -> str:
    """The per-chunk part of an extraction call (its last sentence in the answer form's words)."""
    return _set(prompts).render(form_text(form).user, text=text)


__all__ = ["ANSWER_FORMS", "EXTRACT_GLEAN", "FORM_TEXT", "FormText", "form_text", "gleaning_prompt", "EXTRACT_PROMPTS", "EXTRACT_SYSTEM", "EXTRACT_USER", "example_answer", "extraction_example",
           "extraction_rules", "extraction_system_prompt", "extraction_user_prompt"]  # fmt: skip
