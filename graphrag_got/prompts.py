"""Every prompt the project sends to a model, each with a version string.

A prompt's text comes only from its arguments (the ontology, the answer language) and the generic
instructions below: no word of any corpus appears here, so any ontology over any corpus, in any
language, gets the same treatment.

Templates: each prompt is a :class:`~graphrag_got.common.prompt_files.PromptTemplate` registered here
by one :func:`template` call (its name, version, text with ``${placeholders}``, the placeholders it
needs); the functions below fill the placeholders. A user replaces any of them with a file
``<name>.txt`` in the folder ``GRAPHRAG_PROMPTS_DIR`` (:func:`load_prompts`; ``graphrag-got prompts
export DIR`` writes the current ones); each function takes the :class:`PromptSet` in use
(``prompts=``, default :data:`BUILTIN`).

Versions: callers put a prompt's version in their cache keys (extraction answers, community
summaries, verdicts, classify calls), so a cached answer obtained under an older wording is never
reused: :meth:`PromptSet.version` gives the built-in version, plus the digest of a custom text.
Whoever edits a built-in prompt's text bumps its version here. Search answers are also cached by
LangChain on the full prompt text, which changes with the wording anyway.

Language: ``language=None`` lets the answer follow the question (search) or the content
(summaries); any other value (``"English"``) forces that language.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from graphrag_got.common.prompt_files import PromptSet, PromptTemplate, load_prompt_set
from graphrag_got.ontology.model import ExtractionExample, Ontology, PropertySpec

EXTRACTION_VERSION = "extract-v4"  # v3: a confidence per entity; v4: the ontology's annotated examples
COMMUNITY_SUMMARY_VERSION = "community-v4"  # v4: a report (findings citing members, rating) with excerpts
ANCHOR_VERSION = "anchor-v2"
LOCAL_ANSWER_VERSION = "local-answer-v4"  # v4: facts first, every part of the question, sources never narrated
MAP_VERSION = "map-v3"  # v3: reads a community report (findings, rating)
REDUCE_VERSION = "reduce-v4"  # v4: facts first, sources never narrated

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
_CONFIDENCE_EXAMPLE = 0.9

#: Every prompt template by name (the name of its override file, ``<name>.txt``), in registration order.
TEMPLATES: dict[str, PromptTemplate] = {}
#: The built-in prompts.
BUILTIN = PromptSet(TEMPLATES)


def template(name: str, version: str, text: str, *, required: Sequence[str] = (), about: str = "") -> str:
    """Register a prompt template (one call per prompt: that is all a new prompt needs to be overridable);
    returns its name, which the prompt's function renders with :meth:`PromptSet.render`."""
    if name in TEMPLATES:
        raise ValueError(f"prompt {name!r} is registered twice")
    TEMPLATES[name] = PromptTemplate(name, version, text, tuple(required), about)
    return name


def load_prompts(directory: str | Path | None) -> PromptSet:
    """The prompts in use: the built-in ones, with the files of ``directory`` (``settings.llm.prompts_dir``;
    None: none) in place of theirs. Raises :class:`~graphrag_got.errors.PromptError` for a bad file."""
    return load_prompt_set(TEMPLATES, directory)


def _set(prompts: PromptSet | None) -> PromptSet:
    return BUILTIN if prompts is None else prompts


def language_tag(language: str | None) -> str:
    """The part of a cache key that tells prompts in different forced languages apart."""
    return "" if language is None else f"|lang={language.strip()}"


def _in_language(language: str | None) -> str:
    """"in Spanish" for a named language, else "in the language of the question"."""
    lang = (language or "").strip()
    return f"in {lang}" if lang else "in the language of the question"


def _answer_language(language: str | None, follow: str) -> str:
    lang = (language or "").strip()
    return f"Answer in {lang}." if lang else f"Answer in the language of {follow}."


#: How every answer is written (local, global's reduce, DRIFT): what a reader checks is the facts
#: and their citations, so the answer states them and never describes its sources.
_ANSWER_STYLE = (
    "Begin with the direct answer. Answer every part of the question (who, what, when, where, why, as "
    "asked), each as a plain statement of the fact followed by its citation. Write about the subject, "
    "not about the sources: never describe, list or summarise the sources, and never write phrases "
    "such as \"according to the sources\" or \"the facts show\"."
)


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


# ---------------------------------------------------------------------------------------------
# Community summaries
# ---------------------------------------------------------------------------------------------


COMMUNITY_REPORT = template(
    "communities.report", COMMUNITY_SUMMARY_VERSION, (
        "You write the report of one community of a knowledge graph: a group of entities that are closely "
        "related.\n"
        "Use only the members, relations and source excerpts given. ${language_rule}\n"
        'Answer with a JSON object {"title": ..., "summary": ..., "findings": [{"statement": ..., '
        '"members": [...]}], "rating": ..., "rating_explanation": ...}:\n'
        "- title: names the group in a few words (what holds it together: its central member, its shared "
        "kind or its main subject);\n"
        "- summary: 3-6 sentences on who or what its key members are, how they are related (using the "
        "relations given) and, when the facts say it, when or where;\n"
        "- findings: 2-5 key findings, each one short statement with the names of the members it is about, "
        "written exactly as in MEMBERS;\n"
        "- rating: how important this group is to the whole corpus, a number from 0 (marginal) to 10 "
        "(central to it);\n"
        "- rating_explanation: one sentence saying why."),
    about="a community report (system part; the members, relations and excerpts follow): ${language_rule} "
          "the sentence saying which language to write in")


def community_summary_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of one community report: title, summary, key findings citing members, rating."""
    lang = (language or "").strip()
    write = f"Write in {lang}." if lang else (
        "Write in the language of the community's content (the language its names and facts are written in).")
    return _set(prompts).render(COMMUNITY_REPORT, language_rule=write)


# ---------------------------------------------------------------------------------------------
# Local search
# ---------------------------------------------------------------------------------------------


SEARCH_ANCHOR = template(
    "search.anchor", ANCHOR_VERSION, (
        "You read a question about a knowledge graph and list the named things it is about${kinds}. "
        "Write each name in full as a text would (the full name, not a first name or a shortened form); "
        "resolve nicknames when you know them. No generic words. "
        'Answer with only a JSON object: {"entities": ["...", "..."]}.'),
    about="local search, the names a question is about (system part): ${kinds} ' (entities of these kinds: "
          "<the ontology's classes>)', or nothing")
SEARCH_LOCAL = template(
    "search.local", LOCAL_ANSWER_VERSION, (
        "You answer questions about a text corpus using ONLY the facts and source excerpts given (taken "
        "from a knowledge graph). Do not use outside knowledge. Every source starts with its id in "
        "brackets: facts [F1], [F2]..., excerpts [C1], [C2].... After each claim, write the ids of the "
        "sources it rests on in brackets, e.g. [F2] or [F1, C3]; cite only ids that appear in the context. "
        "${answer_style} "
        "If the sources are not enough to answer, say plainly that the graph does not contain enough "
        "information, and say what it does contain. "
        "${language_rule} Use a few sentences."),
    about="local search, the answer (system part; the question and its sources follow): ${answer_style} how "
          "every answer is written (facts first, cited); ${language_rule} the sentence saying which language")


def anchor_prompt(class_names: Sequence[str] = (), *, prompts: PromptSet | None = None) -> str:
    """System prompt asking for the names a question is about, optionally listing the ontology's classes."""
    kinds = f" (entities of these kinds: {', '.join(class_names)})" if class_names else ""
    return _set(prompts).render(SEARCH_ANCHOR, kinds=kinds)


def local_answer_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of a local answer, written from the facts and excerpts given only."""
    return _set(prompts).render(SEARCH_LOCAL, answer_style=_ANSWER_STYLE,
                                language_rule=_answer_language(language, "the question"))


# ---------------------------------------------------------------------------------------------
# Global search
# ---------------------------------------------------------------------------------------------


SEARCH_MAP = template(
    "search.map", MAP_VERSION, (
        "You rate how useful one report on a group of related entities (a community of a knowledge graph: "
        "its summary and key findings) is for answering a question, and extract what helps. Use only the "
        "report. "
        'Answer with only a JSON object: {"relevance": <integer 0-10>, "extract": "<1-3 sentences, '
        '${language}; empty if irrelevant>"}.'),
    about="global search, one map call (system part; the question and one report follow): ${language} 'in "
          "<language>' or 'in the language of the question'")
SEARCH_REDUCE = template(
    "search.reduce", REDUCE_VERSION, (
        "You answer a broad question about a text corpus from extracts of community reports of a "
        "knowledge graph, each with its relevance (0-10). Use only these extracts, no outside knowledge. "
        "Every extract starts with the id of its report in brackets: [R1], [R2].... After each claim, write "
        "the ids of the reports it rests on in brackets, e.g. [R2] or [R1, R3]; cite only ids that appear "
        "in the extracts. Organise the answer by theme or group (one short paragraph or bullet group each), "
        "most relevant first. ${answer_style} If the extracts are not enough, say so. "
        "${language_rule}"),
    about="global search, the reduce call (system part; the question and the kept extracts follow): "
          "${answer_style}, ${language_rule} as in search.local")


def map_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of one map call: rate a community report for the question, extract what helps."""
    return _set(prompts).render(SEARCH_MAP, language=_in_language(language))


def reduce_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of the reduce call: one answer from the kept extracts, citing their reports."""
    return _set(prompts).render(SEARCH_REDUCE, answer_style=_ANSWER_STYLE,
                                language_rule=_answer_language(language, "the question"))


__all__ = [
    "ANCHOR_VERSION", "COMMUNITY_SUMMARY_VERSION", "EXTRACTION_VERSION", "LOCAL_ANSWER_VERSION", "MAP_VERSION",
    "REDUCE_VERSION", "VERSIONS", "anchor_prompt", "community_summary_prompt", "example_answer", "extraction_example",
    "extraction_rules", "extraction_system_prompt", "extraction_user_prompt", "language_tag",
    "local_answer_prompt", "map_prompt", "reduce_prompt",
    "BUILTIN", "COMMUNITY_REPORT", "EXTRACT_PROMPTS", "EXTRACT_SYSTEM", "EXTRACT_USER", "PromptSet", "SEARCH_ANCHOR",
    "SEARCH_LOCAL", "SEARCH_MAP", "SEARCH_REDUCE", "TEMPLATES", "load_prompts", "template",
]  # fmt: skip


# --- routing and DRIFT search (graphrag_got/search/route.py, search/drift.py) ---

ROUTE_CLASSIFIER_VERSION = "route-v1"
DRIFT_PRIMER_VERSION = "drift-primer-v1"
DRIFT_ANSWER_VERSION = "drift-answer-v2"  # v2: facts first, sources never narrated
CLAIMS_ANSWER_VERSION = "claims-answer-v2"  # v2: at most N ids a claim, no repeats with other names, names as written
LANGUAGE_REMINDER_VERSION = "language-reminder-v1"  # the last line of an answer asked again for its language
VERSIONS.update({"route_classifier": ROUTE_CLASSIFIER_VERSION, "drift_primer": DRIFT_PRIMER_VERSION,
                 "drift_answer": DRIFT_ANSWER_VERSION, "claims_answer": CLAIMS_ANSWER_VERSION,
                 "language_reminder": LANGUAGE_REMINDER_VERSION})  # fmt: skip


SEARCH_ROUTE = template(
    "search.route", ROUTE_CLASSIFIER_VERSION, (
        "You choose how a question about a text corpus should be searched in its knowledge graph.\n"
        '- "local": the question is about specific named things (people, places, organizations, objects) '
        "and their facts.\n"
        '- "global": the question is about the corpus as a whole (main themes, groups, trends, a summary).\n'
        '- "drift": the question connects or compares things, or asks how one influences another, and '
        "needs both the broad picture and specific facts.\n"
        'Answer with only a JSON object: {"mode": "local" | "global" | "drift", "reason": "<one short sentence>"}.'),
    about="`ask` routing, the optional classifier (system part; the question follows)")
SEARCH_DRIFT_PRIMER = template(
    "search.drift_primer", DRIFT_PRIMER_VERSION, (
        "You start answering a question about a text corpus from reports on groups of related entities "
        "(communities of its knowledge graph) and, when given, facts found so far. Use only what is given, "
        "no outside knowledge. Write a short draft answer (2-4 sentences) citing the ids of what you use, "
        "like [R1] or [F2]. Then write at most "
        "${followups} follow-up questions that would fill the gaps of the draft with specific facts: each "
        "one short, about named entities that appear in the reports or facts, written with their full names. "
        'Write both ${language}. Answer with only a JSON object: {"answer": "...", "follow_ups": ["...", "..."]}.'),
    about="DRIFT search, a primer or refine step (system part): ${followups} the most follow-up questions; "
          "${language} 'in <language>' or 'in the language of the question'")
SEARCH_DRIFT_ANSWER = template(
    "search.drift_answer", DRIFT_ANSWER_VERSION, (
        "You answer a question about a text corpus from three kinds of numbered sources taken from its "
        "knowledge graph: community reports [R1] (the broad themes), facts [F1] and source excerpts [C1] "
        "(the details). Use only these sources, no outside knowledge. Start from the broad picture, then "
        "support it with the specific facts; say how the details relate to the themes. After every claim "
        "put the ids of the sources it stands on in brackets, like [F2] or [R1, C3]; never write an id "
        "that is not in the sources. ${answer_style} If the sources are not enough, say so. "
        "${language_rule} Use at most two short paragraphs."),
    about="DRIFT search, the final answer (system part): ${answer_style}, ${language_rule} as in search.local")
SEARCH_CLAIMS = template(
    "search.claims", CLAIMS_ANSWER_VERSION, (
        "You answer a question about a text corpus using ONLY the numbered sources given (facts [F1], source "
        "excerpts [C1], community reports [R1]), no outside knowledge. Answer with a JSON object "
        '{"claims": [{"statement": "...", "sources": ["F1", ...]}, ...]}: at most '
        "${max_claims} claims, the direct answer first. Each statement is one short sentence ${language} that "
        "states one fact about the subject of the question (who, what, when, where, why, as asked), with the "
        "ids of the sources that say it (at most ${max_ids}). Every name in a statement must appear in the "
        "sources it cites, written as they write it. Never repeat a statement with other names: each claim "
        "states a different fact. Write about the subject, never about the sources. If the sources "
        "do not answer the question, the first statement says that the graph does not contain the answer "
        "and the next ones state what it does contain."),
    about="an answer as cited claims (local, global and DRIFT search with the embedded model): ${max_claims} the "
          "most claims; ${max_ids} the most source ids a claim; ${language} 'in <language>' or 'in the language "
          "of the question'")
LANGUAGE_REMINDER = template(
    "search.language_reminder", LANGUAGE_REMINDER_VERSION,
    "Write the whole answer in ${language}, the language of the question: every sentence in ${language}.",
    about="the last line of an answer asked again because it came in another language: ${language} the "
          "question's language (e.g. Spanish)")


def route_classifier_prompt(*, prompts: PromptSet | None = None) -> str:
    """System prompt of the routing classifier: which search mode suits a question (constrained JSON)."""
    return _set(prompts).render(SEARCH_ROUTE)


def drift_primer_prompt(followups: int, language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of a DRIFT primer (or refine) step: a draft answer and follow-up questions."""
    return _set(prompts).render(SEARCH_DRIFT_PRIMER, followups=followups, language=_in_language(language))


def drift_answer_prompt(language: str | None = None, *, prompts: PromptSet | None = None) -> str:
    """System prompt of the final DRIFT answer: detail joined with the broad themes, cited."""
    return _set(prompts).render(SEARCH_DRIFT_ANSWER, answer_style=_ANSWER_STYLE,
                                language_rule=_answer_language(language, "the question"))


def claims_answer_prompt(language: str | None = None, max_claims: int = 6, max_ids: int = 3, *,
                         prompts: PromptSet | None = None) -> str:
    """System prompt of an answer written as cited claims (the ``claims`` answer format)."""
    return _set(prompts).render(SEARCH_CLAIMS, max_claims=max_claims, max_ids=max_ids,
                                language=_in_language(language))


def language_reminder(language: str, *, prompts: PromptSet | None = None) -> str:
    """The last line of an answer asked again because it came in another language than ``language``."""
    return _set(prompts).render(LANGUAGE_REMINDER, language=language.strip())


__all__ += [
    "LANGUAGE_REMINDER", "SEARCH_CLAIMS", "SEARCH_DRIFT_ANSWER", "SEARCH_DRIFT_PRIMER", "SEARCH_ROUTE",
    "CLAIMS_ANSWER_VERSION", "DRIFT_ANSWER_VERSION", "DRIFT_PRIMER_VERSION", "LANGUAGE_REMINDER_VERSION",
    "ROUTE_CLASSIFIER_VERSION", "claims_answer_prompt", "drift_answer_prompt", "drift_primer_prompt",
    "language_reminder", "route_classifier_prompt",
]  # fmt: skip


# --- verification (graphrag_got.extract.verify) ---
VERIFY_VERSION = "verify-v1"
VERSIONS["verify"] = VERIFY_VERSION


VERIFY_SYSTEM = template(
    "verify.system", VERIFY_VERSION, (
        "You check one statement against a passage of a text. Answer yes only if the passage itself states "
        "the statement (in any wording), with the same subject, relation and object in that direction. "
        "Answer no if the passage does not say it, says something else about these names, or states the "
        'reverse. No outside knowledge. Answer with only a JSON object: {"answer": "yes"} or {"answer": "no"}.'),
    about="verification of a kept triple (GRAPHRAG_VERIFY), system part")
VERIFY_QUESTION = template(
    "verify.question", VERIFY_VERSION, (
        "PASSAGE:\n${passage}\n\nSTATEMENT: ${subject} (${subject_type}) ${relation}${meaning} ${object} "
        "(${object_type})${attributes}\n\nDoes the passage state this? Answer yes or no."),
    required=("passage", "subject", "relation", "object"),
    about="verification, the question about one triple: ${passage} its evidence; ${subject}, ${subject_type}, "
          "${relation}, ${object}, ${object_type}; ${meaning} ' (<the relation's comment>)' or nothing; "
          "${attributes} '; <attribute>: <value>' per attribute")
#: The prompts of one verification call (their version keys the stored verdicts).
VERIFY_PROMPTS = (VERIFY_SYSTEM, VERIFY_QUESTION)


def verification_prompt(*, prompts: PromptSet | None = None) -> str:
    """System prompt of one yes/no check of a candidate triple against its passage."""
    return _set(prompts).render(VERIFY_SYSTEM)


def verification_question(subject: str, subject_type: str, relation: str, comment: str, obj: str, object_type: str,
                          attributes: dict[str, str], passage: str, *, prompts: PromptSet | None = None) -> str:
    """The user part of one check: the passage, then the statement with the relation's meaning."""
    meaning = f" ({comment.strip().rstrip('.')})" if comment and comment.strip() else ""
    extra = "".join(f"; {k}: {v}" for k, v in sorted(attributes.items()) if v)
    return _set(prompts).render(VERIFY_QUESTION, passage=passage, subject=subject, subject_type=subject_type,
                                relation=relation, meaning=meaning, object=obj, object_type=object_type,
                                attributes=extra)


__all__ += ["VERIFY_PROMPTS", "VERIFY_QUESTION", "VERIFY_SYSTEM", "VERIFY_VERSION", "verification_prompt", "verification_question"]  # fmt: skip


# --- the classify extraction (graphrag_got.extract.classify) ---
CLASSIFY_VERSION = "classify-v1"
VERSIONS["classify"] = CLASSIFY_VERSION

#: The answer the choice questions offer when no listed relation holds (its label is the last letter).
NO_RELATION = "none of these"


CLASSIFY_SYSTEM = template(
    "classify.system", CLASSIFY_VERSION, (
        "You read a text and answer short questions about the entities it names and the facts it states.\n"
        "Use only what the text says, no outside knowledge.\n\nENTITY CLASSES:\n${classes}\n\n"
        "RELATIONS (subject -> object):\n${relations}\n\n"
        "A question quotes a passage of the text and lists lettered statements about two of its entities. "
        'Answer with the letter of the statement the text states, or the letter of "${no_relation}" when it '
        "states none of them. Answer with the letter only."),
    required=("classes", "relations"),
    about="extraction (classify strategy), the shared prefix of every question: ${classes} one line per class, "
          "${relations} one line per relation; ${no_relation} the last option's words")
CLASSIFY_TEXT = template(
    "classify.text", CLASSIFY_VERSION, 'TEXT:\n"""\n${text}\n"""\n\n', required=("text",),
    about="classify strategy, the chunk that starts every question of it: ${text}")
CLASSIFY_MENTIONS = template(
    "classify.mentions", CLASSIFY_VERSION, (
        "List every entity of the classes above that the text names, one per line, as\n"
        "- <name exactly as the text writes it> (<class>)\n"
        "Use the fullest name the text gives. List each entity once. Skip common nouns that name nothing "
        "in particular."),
    about="classify strategy, the mentions question (the answer's names are held to spans of the text)")
CLASSIFY_CHOICE = template(
    "classify.choice", CLASSIFY_VERSION, 'PASSAGE: "${passage}"\nWhich of these does the text state?\n${options}',
    required=("passage", "options"),
    about="classify strategy, one pair's question: ${passage} where the two names meet; ${options} one line "
          "'<letter>. <statement>' per option")
#: The prompts of the classify strategy (their version keys its stored calls).
CLASSIFY_PROMPTS = (CLASSIFY_SYSTEM, CLASSIFY_TEXT, CLASSIFY_MENTIONS, CLASSIFY_CHOICE)


def classify_system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every classify question: the classes and relations (names, meanings,
    domain and range), without properties or examples. It depends on the ontology only."""
    classes = []
    for cname, klass in onto.classes.items():
        kind = f" (a kind of {', '.join(klass.parents)})" if klass.parents else ""
        classes.append(f"- {cname}{kind}: {klass.comment}".rstrip(": "))
    relations = []
    for rel in onto.relations:
        sym = ", either direction" if rel.symmetric else ""
        relations.append(f"- {rel.name} ({' | '.join(rel.stated_domain)} -> {' | '.join(rel.stated_range)}{sym}): "
                         f"{rel.comment}".rstrip(": "))
    return _set(prompts).render(CLASSIFY_SYSTEM, classes="\n".join(classes), relations="\n".join(relations),
                                no_relation=NO_RELATION)


def classify_text_block(text: str, *, prompts: PromptSet | None = None) -> str:
    """The chunk, first in the user message so that every question of a chunk shares it."""
    return _set(prompts).render(CLASSIFY_TEXT, text=text)


def classify_mentions_task(*, prompts: PromptSet | None = None) -> str:
    """The mentions question (the answer's names are constrained to spans of the text)."""
    return _set(prompts).render(CLASSIFY_MENTIONS)


def classify_choice_question(passage: str, options: Sequence[tuple[str, str]], *,
                             prompts: PromptSet | None = None) -> str:
    """One pair's question: the passage where the two names meet, then the lettered statements."""
    return _set(prompts).render(CLASSIFY_CHOICE, passage=passage,
                                options="\n".join(f"{label}. {option}" for label, option in options))


__all__ += ["CLASSIFY_CHOICE", "CLASSIFY_MENTIONS", "CLASSIFY_PROMPTS", "CLASSIFY_SYSTEM", "CLASSIFY_TEXT",
            "CLASSIFY_VERSION", "NO_RELATION", "classify_choice_question", "classify_mentions_task",
            "classify_system_prompt", "classify_text_block"]  # fmt: skip


# --- the mentions extraction (graphrag_got.extract.mentions_only) ---
MENTIONS_VERSION = "mentions-v1"
VERSIONS["mentions"] = MENTIONS_VERSION
MENTIONS_SYSTEM = template(
    "mentions.system", MENTIONS_VERSION, (
        "You read texts and list the entities they name.\nUse only what the text says, no outside knowledge.\n\n"
        "ENTITY CLASSES:\n${classes}${examples}"),
    required=("classes",),
    about="extraction (mentions strategy), the shared prefix of every call: ${classes} one line per class; "
          "${examples} the entities of the ontology's annotated examples (empty without examples)")
MENTIONS_BATCH = template(
    "mentions.batch", MENTIONS_VERSION, (
        "${texts}For each text, list every entity of the classes above that it names. Answer text by text: "
        "the line \"## TEXT <number>\", then one line per entity, as\n"
        "- <name exactly as that text writes it> (<class>)\n"
        "Use the fullest name the text gives. List each entity once per text. Skip common nouns that "
        "name nothing in particular."),
    required=("texts",),
    about="mentions strategy, a question over several short chunks: ${texts} the chunks, each as 'TEXT <n>:' and "
          "the text in triple quotes (a question over one chunk is classify.text and classify.mentions)")
#: The prompts of the mentions strategy (their version keys its stored answers).
MENTIONS_PROMPTS = (MENTIONS_SYSTEM, MENTIONS_BATCH, CLASSIFY_TEXT, CLASSIFY_MENTIONS)


def mentions_system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The shared prefix of every mentions question: the entity classes (names and meanings) and the
    entities of the ontology's annotated examples; no relation is asked. It depends on the ontology only."""
    classes = []
    for cname, klass in onto.classes.items():
        kind = f" (a kind of {', '.join(klass.parents)})" if klass.parents else ""
        classes.append(f"- {cname}{kind}: {klass.comment}".rstrip(": "))
    examples = []
    for example in onto.examples:  # the ontology's annotated examples, their entities only
        examples += ["", "EXAMPLE TEXT:", f'"""\n{example.text}\n"""', "Its entities:"]
        examples += [f"- {e.name} ({e.class_name})" for e in example.entities]
    return _set(prompts).render(MENTIONS_SYSTEM, classes="\n".join(classes),
                                examples="\n" + "\n".join(examples) if examples else "")


def mentions_section(n: int) -> str:
    """The line that opens the answer for text ``n`` of a question with several texts."""
    return f"## TEXT {n}\n"


def mentions_user_prompt(texts: Sequence[str], *, prompts: PromptSet | None = None) -> str:
    """One question over one or several chunks: the texts, then the task (names constrained to spans)."""
    if len(texts) == 1:
        return classify_text_block(texts[0], prompts=prompts) + classify_mentions_task(prompts=prompts)
    blocks = "".join(f'TEXT {n}:\n"""\n{text}\n"""\n\n' for n, text in enumerate(texts, 1))
    return _set(prompts).render(MENTIONS_BATCH, texts=blocks)


__all__ += ["MENTIONS_BATCH", "MENTIONS_PROMPTS", "MENTIONS_SYSTEM", "MENTIONS_VERSION", "mentions_section",
            "mentions_system_prompt", "mentions_user_prompt"]  # fmt: skip
