"""Search prompts: anchors, local, global (map and reduce), routing, DRIFT, cited claims, the language reminder."""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.prompts.registry import (_ANSWER_STYLE, ANCHOR_VERSION, LOCAL_ANSWER_VERSION, MAP_VERSION,
                                           REDUCE_VERSION, VERSIONS, _answer_language, _in_language, _set, template)


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


__all__ = ["SEARCH_ANCHOR", "SEARCH_LOCAL", "SEARCH_MAP", "SEARCH_REDUCE", "anchor_prompt", "local_answer_prompt",
           "map_prompt", "reduce_prompt"]  # fmt: skip


# --- routing and DRIFT search (graphrag_got/search/route.py, search/drift.py) ---

ROUTE_CLASSIFIER_VERSION = "route-v1"
DRIFT_PRIMER_VERSION = "drift-primer-v1"
DRIFT_ANSWER_VERSION = "drift-answer-v2"  # v2: facts first, sources never narrated
CLAIMS_ANSWER_VERSION = "claims-answer-v2"  # v2: at most N ids a claim, no repeats with other names, names as written
LANGUAGE_REMINDER_VERSION = "language-reminder-v1"  # the last line of an answer asked again for its language
EXTRACTIVE_ANSWER_VERSION = "extractive-answer-v1"  # the sentences stating an extractive answer's core
MAP_POINTS_VERSION = "map-points-v1"  # global map: scored points instead of one rating and extract
VERSIONS.update({"extractive_answer": EXTRACTIVE_ANSWER_VERSION, "map_points": MAP_POINTS_VERSION})
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


SEARCH_EXTRACTIVE = template(
    "search.extractive", EXTRACTIVE_ANSWER_VERSION, (
        "You are given a question about a text corpus and numbered sentences taken from the corpus that "
        "answer it. Answer with a JSON object "
        '{"claims": [{"statement": "...", "sources": ["F1", ...]}]}: at most ${max_claims} claims. Each '
        "statement is one short sentence ${language} that answers the question directly (who, what, when, "
        "where, why, as asked), said in your own words from the numbered sentences only, with the ids of "
        "the sentences that say it (at most ${max_ids}). Write every name as the sentences write it. Do "
        "not copy a sentence whole, and add nothing the sentences do not say."),
    about="an extractive local answer: the sentences stating the answer from its core of cited corpus "
          "sentences (${max_claims} the most claims; ${max_ids} the most ids a claim; ${language} 'in "
          "<language>' or 'in the language of the question')")
SEARCH_MAP_POINTS = template(
    "search.map_points", MAP_POINTS_VERSION, (
        "You read one report on a group of related entities (a community of a knowledge graph: its summary "
        "and key findings) and list the points of it that help answer a question. Use only the report. "
        "Each point is one sentence ${language} naming the entities it is about as the report names them, "
        "with a score from 0 (no help) to 10 (answers the question directly). At most ${max_points} points; "
        "none when the report does not help. "
        'Answer with only a JSON object: {"points": [{"description": "...", "score": <integer 0-10>}]}.'),
    about="global search, one map call giving scored points (system part; the question and one report "
          "follow): ${max_points} the most points; ${language} 'in <language>' or 'in the language of the "
          "question'")


def extractive_answer_prompt(language: str | None = None, max_claims: int = 2, max_ids: int = 3, *,
                             prompts: PromptSet | None = None) -> str:
    """System prompt of the sentences that state an extractive local answer from its cited core."""
    return _set(prompts).render(SEARCH_EXTRACTIVE, max_claims=max_claims, max_ids=max_ids,
                                language=_in_language(language))


def map_points_prompt(language: str | None = None, max_points: int = 3, *, prompts: PromptSet | None = None) -> str:
    """System prompt of one global map call that lists a report's scored points for the question."""
    return _set(prompts).render(SEARCH_MAP_POINTS, max_points=max_points, language=_in_language(language))


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
    "EXTRACTIVE_ANSWER_VERSION", "MAP_POINTS_VERSION", "SEARCH_EXTRACTIVE", "SEARCH_MAP_POINTS",
    "extractive_answer_prompt", "map_points_prompt",
    "LANGUAGE_REMINDER", "SEARCH_CLAIMS", "SEARCH_DRIFT_ANSWER", "SEARCH_DRIFT_PRIMER", "SEARCH_ROUTE",
    "CLAIMS_ANSWER_VERSION", "DRIFT_ANSWER_VERSION", "DRIFT_PRIMER_VERSION", "LANGUAGE_REMINDER_VERSION",
    "ROUTE_CLASSIFIER_VERSION", "claims_answer_prompt", "drift_answer_prompt", "drift_primer_prompt",
    "language_reminder", "route_classifier_prompt",
]  # fmt: skip
