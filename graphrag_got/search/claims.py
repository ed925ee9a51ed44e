"""Answers written as cited claims (the ``claims`` answer format), checked before they are shown.

Asked for prose that cites ``[F1]`` after each claim, the embedded 1.5B model answered in a form a
reader cannot check (``benchmarks/qa/results/modes-live.md``): it listed every id at the end after
"the sources are:", copied source lines, described its sources, and cited with parentheses. Small
models copy spans and fill slots well, so in this format the model fills a JSON object instead::

    {"claims": [{"statement": "one sentence stating one fact", "sources": ["F2", "C1"]}, ...]}

under a schema whose ``sources`` admit only the ids of the context (an enum; with llama.cpp the
schema becomes a grammar, so no other id can be written), at least one and at most
``search.claim_max_sources`` per claim.

:func:`checked_answer` is the one answer step of local, global and DRIFT search:

1. the answer call (claims, or prose with ``text``); a claims answer that stays unusable after its
   retry falls back to one prose call, whose sentences are then checked as claims;
2. the **language check**: the answer's language is identified
   (:func:`graphrag_got.common.language.text_language`); when it is not the question's (or the one
   asked for), the answer is asked again once with the language instruction placed last in the
   prompt (``search.answer_language_retry``); a warning says when it still differs;
3. the **support check** of every claim (:mod:`graphrag_got.search.support`): the claims its cited
   sources do not back are left out, with their reason;
4. the kept claims are rendered as the answer text, ``statement [F2, C1].`` each, and go through the
   same citation resolution as a prose answer.

``search.answer_format``: ``claims``, ``text`` (prose, not checked), or ``auto`` (claims for
the embedded model, whose answers motivated it; prose for the others, which follow the prose
instructions).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graphrag_got.common.language import question_language, text_language
from graphrag_got.config import LLMSettings, SearchSettings
from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import Attempt, LLMContextError, LLMOutputError, complete_text, is_embedded
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.prompts import language_reminder, load_prompts
from graphrag_got.search.anchors import MatchIndex
from graphrag_got.search.citations import Citation, CitationKind, ResolvedAnswer, resolve_citations, split_inline_ids
from graphrag_got.search.support import MAX_IDS, SupportReport, check_claims

log = logging.getLogger(__name__)

#: Most claims in one answer, and most source ids one claim may cite (the schema's bound; the setting
#: ``claim_max_sources`` gives the value answers use).
MAX_CLAIMS = 6
MAX_IDS_PER_CLAIM = MAX_IDS

#: The answer when the check leaves out every claim (the left-out list says why), in English.
NO_SUPPORTED_CLAIM = "No claim of the answer is supported by the sources it cites (see the claims left out)."
#: The same line in the question's language (by the English name :func:`question_language` gives),
#: for the languages written here; any other language gets the English line.
NO_SUPPORTED_CLAIM_IN: dict[str, str] = {
    "English": NO_SUPPORTED_CLAIM,
    "Spanish": "Ninguna afirmación de la respuesta está respaldada por las fuentes que cita (ver las afirmaciones omitidas).",
    "French": "Aucune affirmation de la réponse n'est étayée par les sources qu'elle cite (voir les affirmations écartées).",
    "German": "Keine Aussage der Antwort wird von den Quellen gestützt, die sie zitiert (siehe die ausgelassenen Aussagen).",
    "Italian": "Nessuna affermazione della risposta è sostenuta dalle fonti che cita (vedi le affermazioni escluse).",
    "Portuguese": "Nenhuma afirmação da resposta é sustentada pelas fontes que cita (veja as afirmações deixadas de fora).",
}  # fmt: skip


def no_supported_claim(language: str | None) -> str:
    """The answer shown when no claim is kept, in ``language`` when it is written here, else in English."""
    return NO_SUPPORTED_CLAIM_IN.get(language or "", NO_SUPPORTED_CLAIM)


class Claim(BaseModel):
    statement: str
    sources: list[str] = Field(default_factory=list)


class ClaimsAnswer(BaseModel):
    claims: list[Claim] = Field(default_factory=list)


def use_claims(search: SearchSettings, chat: BaseChatModel) -> bool:
    """Whether an answer of ``chat`` is asked as claims (see the module docstring)."""
    fmt = search.answer_format
    return is_embedded(chat) if fmt == "auto" else fmt == "claims"


def by_model(setting: str, chat: BaseChatModel, *, embedded: str, other: str) -> str:
    """A form setting with ``auto`` resolved: ``embedded`` for the embedded small model, whose answers
    motivated the form, ``other`` for the rest; any other value as set."""
    if setting != "auto":
        return setting
    return embedded if is_embedded(chat) else other


def claims_schema(ids: list[str], max_claims: int = MAX_CLAIMS, max_ids: int = MAX_IDS_PER_CLAIM) -> dict[str, Any]:
    """The JSON schema of a claims answer whose sources can only be ``ids`` (at most ``max_ids`` each)."""
    source: dict[str, Any] = {"type": "string", "enum": list(dict.fromkeys(ids))} if ids else {"type": "string"}
    return {
        "type": "object",
        "properties": {"claims": {
            "type": "array", "minItems": 1, "maxItems": max_claims,
            "items": {"type": "object", "properties": {
                "statement": {"type": "string"},
                "sources": {"type": "array", "minItems": 1 if ids else 0, "maxItems": max_ids, "items": source},
            }, "required": ["statement", "sources"]},
        }},
        "required": ["claims"],
    }  # fmt: skip


def render_statements(claims: list[tuple[str, list[str]]]) -> str:
    """The answer text of (statement, ids) pairs: one sentence each, its ids in brackets before the stop."""
    parts = []
    for statement, sources in claims:
        text = " ".join(statement.split())
        if not text:
            continue
        stop = text[-1] if text[-1] in ".!?" else "."
        body = text[:-1].rstrip() if text[-1] in ".!?" else text
        ids = list(dict.fromkeys(s.strip() for s in sources if s.strip()))
        parts.append(f"{body} [{', '.join(ids)}]{stop}" if ids else f"{body}{stop}")
    return " ".join(parts)


def render_claims(answer: ClaimsAnswer) -> str:
    """The answer text of a claims answer, every claim as the model wrote it."""
    return render_statements([(c.statement, list(c.sources)) for c in answer.claims])


_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def prose_claims(text: str) -> list[Claim]:
    """The sentences of a prose answer as claims with their bracketed ids; ids opening a sentence
    belong to the sentence before it ("... en la isla.\\n[F1]")."""
    out: list[Claim] = []
    for sentence in _SENTENCE.split(text or ""):
        statement, ids = split_inline_ids(sentence.strip())
        if not statement.strip(" .!?") and ids and out:
            out[-1].sources += [i for i in ids if i not in out[-1].sources]
        elif statement.strip():
            out.append(Claim(statement=statement, sources=ids))
    return out


def ask_claims(chat: BaseChatModel, system: str, user: str, ids: list[str], attempt: Attempt, max_tokens: int,
               max_ids: int = MAX_IDS_PER_CLAIM) -> ClaimsAnswer:  # fmt: skip
    """Ask ``chat`` for a claims answer over sources ``ids``. Its raw responses and tokens go to
    ``attempt``; raises :class:`LLMOutputError` when no valid JSON came back."""
    try:
        value, inner = complete_json(chat, system, user, ClaimsAnswer, schema=claims_schema(ids, max_ids=max_ids),
                                     max_tokens=max_tokens)  # fmt: skip
    except LLMOutputError as exc:
        attempt.raw_responses.extend(exc.raw_responses)
        raise
    attempt.raw_responses.extend(inner.raw_responses)
    attempt.input_tokens += inner.input_tokens
    attempt.output_tokens += inner.output_tokens
    attempt.tokens_estimated = attempt.tokens_estimated or inner.tokens_estimated
    attempt.transport_retries += inner.transport_retries
    return value


def complete_claims(chat: BaseChatModel, system: str, user: str, ids: list[str], attempt: Attempt,
                    max_tokens: int) -> str:  # fmt: skip
    """:func:`ask_claims`, rendered as text (every claim, unchecked)."""
    return render_claims(ask_claims(chat, system, user, ids, attempt, max_tokens))


@dataclass
class _Draft:
    text: str  # the raw answer (prose) or the claims rendered unchecked
    claims: list[Claim] | None  # None: prose, not checked
    fallback: bool = False  # claims were asked, the answer is the prose fallback's sentences

    def plain(self) -> str:
        return " ".join(c.statement for c in self.claims) if self.claims is not None else self.text


def _draft(chat: BaseChatModel, *, claims: bool, system: str, prose_system: str, user: str, ids: list[str],
           attempt: Attempt, max_tokens: int, max_ids: int) -> _Draft:  # fmt: skip
    """One answer: claims (``system`` is then the claims prompt), or prose. A claims answer that stays
    unusable after its retry falls back to one prose call (logged), whose sentences become the claims,
    so a question is never lost to the format. Every raw response lands in ``attempt.raw_responses``:
    its length is the number of calls made."""
    if claims:
        try:
            value = ask_claims(chat, system, user, ids, attempt, max_tokens, max_ids)
            return _Draft(render_claims(value), list(value.claims))
        except LLMOutputError as exc:
            if isinstance(exc, LLMContextError):
                raise
            log.warning("the claims answer was unusable (%s); asking for prose instead", exc)
    text = complete_text(chat, prose_system if claims else system, user, attempt, max_tokens=max_tokens)
    attempt.raw_responses.append(text)
    return _Draft(text, prose_claims(text), fallback=True) if claims else _Draft(text, None)


@dataclass
class CheckedAnswer:
    """The answer of one question after the language and support checks (module docstring)."""

    text: str  # what is shown: the kept claims rendered (or the prose), citations resolved
    raw: str  # the model's answer before the checks (claims rendered as written)
    format: Literal["claims", "text"]
    citations: list[Citation] = field(default_factory=list)
    invented: list[str] = field(default_factory=list)  # cited ids not in the context (removed)
    support: SupportReport | None = None  # None: a prose answer, not checked
    question_language: str | None = None  # the language the answer had to be in (None: not identified)
    answer_language: str | None = None  # the answer's language as identified (None: too short to tell)
    language_retry: bool = False  # the answer was asked again for the question's language
    warnings: list[str] = field(default_factory=list)
    form: str | None = None  # the local answer form that wrote it (search/local_answer.py), when one did
    covered: int = 0  # global: claims added from the best points of reports the answer did not cite


@dataclass(kw_only=True)
class AnswerChecks:
    """What the checks of a mode's answer found; the results of the modes that answer inherit it."""

    answer_format: str | None = None  # "claims" or "text"; None: no answer was asked of the model
    support: SupportReport | None = None  # the claims kept and left out (None: prose, or no answer)
    answer_language: str | None = None  # the answer's language as identified (None: not told)
    language_retry: bool = False  # the answer was asked again for the question's language

    def record(self, checked: CheckedAnswer) -> None:
        self.answer_format, self.support = checked.format, checked.support
        self.answer_language, self.language_retry = checked.answer_language, checked.language_retry


def shown_answer(support: SupportReport, sources: Sequence[Citation], language: str | None) -> ResolvedAnswer:
    """What a checked claims answer shows: its kept claims rendered (or, none kept, the line saying so in
    ``language``), citations resolved against ``sources``."""
    text = render_statements([(c.statement, c.sources) for c in support.kept]) or no_supported_claim(language)
    return resolve_citations(text, sources)


def checked_answer(chat: BaseChatModel, search: SearchSettings, *, llm: LLMSettings, claims: bool, system: str,
                   prose_system: str, user: str, sources: list[Citation], attempt: Attempt, max_tokens: int,
                   question: str, language: str | None, index: MatchIndex | None,
                   required_kind: CitationKind | None = None) -> CheckedAnswer:  # fmt: skip
    """Ask, check the language (asking again once), check every claim's support, render and resolve
    citations (see the module docstring). ``language``: the language asked for (None: the
    question's, identified here); ``index``: the graph's match index (entity names and aliases;
    needed for claims, None for prose);
    ``required_kind``: a kind of source every claim must cite (``"report"`` for global answers)."""
    if claims and index is None:
        raise ValueError("a claims answer is checked against the graph: pass its match index")
    max_ids = search.claim_max_sources
    ids = [c.id for c in sources]
    expected = language or question_language(question)
    draft = _draft(chat, claims=claims, system=system, prose_system=prose_system, user=user, ids=ids,
                   attempt=attempt, max_tokens=max_tokens, max_ids=max_ids)  # fmt: skip
    out = CheckedAnswer(text="", raw=draft.text, format="claims" if draft.claims is not None else "text",
                        question_language=expected, answer_language=text_language(draft.plain()))  # fmt: skip
    if draft.fallback:
        out.warnings.append("the claims answer was unusable; its prose fallback was checked sentence by sentence")
    if expected and out.answer_language and out.answer_language != expected:
        first = out.answer_language
        if search.answer_language_retry:
            out.language_retry = True
            log.info("the answer is in %s, the question in %s: asking again once", first, expected)
            try:
                reminder = language_reminder(expected, prompts=load_prompts(llm.prompts_dir))
                draft = _draft(chat, claims=claims, system=system, prose_system=prose_system,
                               user=f"{user}\n\n{reminder}", ids=ids, attempt=attempt,
                               max_tokens=max_tokens, max_ids=max_ids)  # fmt: skip
            except LLMError as exc:
                out.warnings.append(f"the answer is in {first}, not in {expected} like the question; asking again "
                                    f"failed ({exc})")
            else:
                out.raw, out.answer_language = draft.text, text_language(draft.plain())
                out.format = "claims" if draft.claims is not None else "text"
                if out.answer_language and out.answer_language != expected:
                    out.warnings.append(f"the answer is in {out.answer_language}, not in {expected} like the "
                                        "question, even after asking again once")
        else:
            out.warnings.append(f"the answer is in {first}, not in {expected} like the question")
    if draft.claims is not None and index is not None:
        out.support = check_claims(draft.claims, sources, index, max_ids=max_ids, required_kind=required_kind)
        out.invented = list(out.support.invented)
        if out.support.left_out:
            log.info("answer check: %s", out.support.summary())
        resolved = shown_answer(out.support, sources, expected)
    else:
        resolved = resolve_citations(draft.text, sources)
    out.text, out.citations = resolved.answer, resolved.citations
    out.invented += resolved.invented
    return out


__all__ = ["MAX_CLAIMS", "MAX_IDS_PER_CLAIM", "NO_SUPPORTED_CLAIM", "NO_SUPPORTED_CLAIM_IN", "AnswerChecks", "CheckedAnswer", "Claim", "ClaimsAnswer",
           "ask_claims", "by_model", "checked_answer", "claims_schema", "complete_claims", "no_supported_claim", "prose_claims", "render_claims",
           "render_statements", "shown_answer", "use_claims"]  # fmt: skip
