"""Every prompt the project sends to a model, each with a version string.

A prompt's text comes only from its arguments (the ontology, the answer language) and the generic
instructions below: no word of any corpus appears here, so any ontology over any corpus, in any
language, gets the same treatment.

Versions: callers put a prompt's version in their cache keys (extraction answers, community
summaries), so a cached answer obtained under an older wording is never reused. Whoever edits a
prompt's text bumps its version here. Search answers are also cached by LangChain on the full prompt
text, which changes with the wording anyway.

Language: ``language=None`` lets the answer follow the question (search) or the content
(summaries); any other value (``"English"``) forces that language.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .ontology import Ontology, PropertySpec

EXTRACTION_VERSION = "extract-v2"
COMMUNITY_SUMMARY_VERSION = "community-v3"
ANCHOR_VERSION = "anchor-v2"
LOCAL_ANSWER_VERSION = "local-answer-v2"
MAP_VERSION = "map-v2"
REDUCE_VERSION = "reduce-v2"

#: Prompt name -> version, for display and for callers that key caches on several prompts.
VERSIONS: dict[str, str] = {
    "extraction": EXTRACTION_VERSION,
    "community_summary": COMMUNITY_SUMMARY_VERSION,
    "anchor": ANCHOR_VERSION,
    "local_answer": LOCAL_ANSWER_VERSION,
    "map": MAP_VERSION,
    "reduce": REDUCE_VERSION,
}

_NAME_PLACEHOLDER = "<name from the text>"


def language_tag(language: str | None) -> str:
    """The part of a cache key that tells prompts in different forced languages apart."""
    return "" if language is None else f"|lang={language.strip()}"


def _answer_language(language: str | None, follow: str) -> str:
    lang = (language or "").strip()
    return f"Answer in {lang}." if lang else f"Answer in the language of {follow}."


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


def extraction_rules(onto: Ontology) -> str:
    """The numbered rules; one rule per relation attribute, none when the ontology has none."""
    rules = [
        "Use only the entity classes and relations listed above. Never invent a class or a relation.",
        "Every relation must respect its types: the subject's class must be one of the relation's subject\n"
        "   types and the object's class one of its object types. If a fact fits no relation, leave it out.",
        'Every subject and object of a relation must also be listed in "entities", with the same name and type.',
        "Write names in full as the text gives them (the full name, not a first name or a shortened form),\n"
        "   the same way every time.",
    ]
    rules += [_attribute_rule(name, spec) for name, spec in onto.relation_attributes.items()]
    rules += [
        "Only facts stated in the text. No outside knowledge. Property values only when the text says them.",
        'Answer with a single JSON object {"entities": [...], "relations": [...]} and nothing else.',
    ]
    return "RULES\n" + "\n".join(f"{i}. {rule}" for i, rule in enumerate(rules, 1))


def extraction_example(onto: Ontology) -> dict[str, Any]:
    """A format example built from the ontology's first relation (shape only, no content)."""
    if not onto.relations:
        first = next(iter(onto.classes))
        return {"entities": [{"type": first, "name": _NAME_PLACEHOLDER}], "relations": []}
    rel = onto.relations[0]
    s_cls, o_cls = rel.domain[0], rel.range[0]
    relation: dict[str, Any] = {"relation": rel.name, "subject": _NAME_PLACEHOLDER, "subject_type": s_cls,
                                "object": _NAME_PLACEHOLDER, "object_type": o_cls}
    relation.update({name: _attribute_example(spec) for name, spec in onto.relation_attributes.items()})
    return {
        "entities": [{"type": s_cls, "name": _NAME_PLACEHOLDER}, {"type": o_cls, "name": _NAME_PLACEHOLDER}],
        "relations": [relation],
    }


def extraction_system_prompt(onto: Ontology) -> str:
    """The shared prefix of every extraction call: the ontology, the rules, a format example.

    It depends on the ontology only (never on a chunk), so providers can reuse it across calls.
    The ontology's ``description`` is the domain hint; it is part of ``onto.describe()``.
    """
    return (
        "You build a knowledge graph from a text, following an ontology strictly.\n\n"
        f"{onto.describe()}\n\n{extraction_rules(onto)}\n\nFORMAT EXAMPLE (shape only, not content):\n"
        f"{json.dumps(extraction_example(onto), ensure_ascii=False)}"
    )


def extraction_user_prompt(text: str) -> str:
    """The per-chunk part of an extraction call."""
    return f"TEXT:\n{text}\n\nExtract the entities and relations of this text as JSON."


# ---------------------------------------------------------------------------------------------
# Community summaries
# ---------------------------------------------------------------------------------------------


def community_summary_prompt(language: str | None = None) -> str:
    """System prompt of one community summary (a JSON object with a title and a summary)."""
    lang = (language or "").strip()
    write = f"Write in {lang}." if lang else (
        "Write in the language of the community's content (the language its names and facts are written in).")
    return (
        "You summarize one community of a knowledge graph: a group of entities that are closely related.\n"
        f"Use only the members and relations given. {write}\n"
        'Answer with a JSON object {"title": ..., "summary": ...}: the title names the group in a few '
        "words (what holds it together: its central member, its shared kind or its main subject); the "
        "summary, 3-6 sentences, says who or what its key members are, how they are related (using the "
        "relations given) and, when the facts say it, when or where."
    )


# ---------------------------------------------------------------------------------------------
# Local search
# ---------------------------------------------------------------------------------------------


def anchor_prompt(class_names: Sequence[str] = ()) -> str:
    """System prompt asking for the names a question is about, optionally listing the ontology's classes."""
    kinds = f" (entities of these kinds: {', '.join(class_names)})" if class_names else ""
    return (
        f"You read a question about a knowledge graph and list the named things it is about{kinds}. "
        "Write each name in full as a text would (the full name, not a first name or a shortened form); "
        "resolve nicknames when you know them. No generic words. "
        'Answer with only a JSON object: {"entities": ["...", "..."]}.'
    )


def local_answer_prompt(language: str | None = None) -> str:
    """System prompt of a local answer, written from the facts and excerpts given only."""
    return (
        "You answer questions about a text corpus using ONLY the facts and source excerpts given (taken "
        "from a knowledge graph). Do not use outside knowledge. If they are not enough to answer, say "
        "plainly that the graph does not contain enough information, and say what it does contain. "
        f"{_answer_language(language, 'the question')} Use a few sentences."
    )


# ---------------------------------------------------------------------------------------------
# Global search
# ---------------------------------------------------------------------------------------------


def map_prompt(language: str | None = None) -> str:
    """System prompt of one map call: rate a community summary for the question, extract what helps."""
    lang = (language or "").strip()
    in_lang = f"in {lang}" if lang else "in the language of the question"
    return (
        "You rate how useful one summary of a group of related entities (a community of a knowledge graph) "
        "is for answering a question, and extract what helps. Use only the summary. "
        'Answer with only a JSON object: {"relevance": <integer 0-10>, "extract": "<1-3 sentences, '
        f'{in_lang}; empty if irrelevant>"}}.'
    )


def reduce_prompt(language: str | None = None) -> str:
    """System prompt of the reduce call: one answer from the kept extracts."""
    return (
        "You answer a broad question about a text corpus from extracts of community summaries of a "
        "knowledge graph, each with its relevance (0-10). Use only these extracts, no outside knowledge. "
        "Organise the answer by theme or group (one short paragraph or bullet group each), most relevant "
        f"first. If the extracts are not enough, say so. {_answer_language(language, 'the question')}"
    )


__all__ = [
    "ANCHOR_VERSION", "COMMUNITY_SUMMARY_VERSION", "EXTRACTION_VERSION", "LOCAL_ANSWER_VERSION", "MAP_VERSION",
    "REDUCE_VERSION", "VERSIONS", "anchor_prompt", "community_summary_prompt", "extraction_example",
    "extraction_rules", "extraction_system_prompt", "extraction_user_prompt", "language_tag",
    "local_answer_prompt", "map_prompt", "reduce_prompt",
]  # fmt: skip
