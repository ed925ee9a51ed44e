"""Answers written as cited claims: the ``claims`` answer format.

Asked for prose that cites ``[F1]`` after each claim, the embedded 1.5B model answered in a form a
reader cannot check (``benchmarks/qa/results/modes-live.md``): it listed every id at the end after
"the sources are:", copied source lines, described its sources, and cited with parentheses. Small
models copy spans and fill slots well, so in this format the model fills a JSON object instead::

    {"claims": [{"statement": "one sentence stating one fact", "sources": ["F2", "C1"]}, ...]}

under a schema whose ``sources`` admit only the ids of the context (an enum; with llama.cpp the
schema becomes a grammar, so no other id can be written) and at least one id per claim. Code then
renders the claims as the answer text, ``statement [F2, C1].`` each, so every sentence carries its
own citations and an invented id cannot occur. The answer then goes through the same citation
resolution as a prose answer.

``settings.search.answer_format``: ``claims``, ``text`` (prose), or ``auto`` (claims for the embedded
model, whose answers motivated it; prose for the others, which follow the prose instructions).
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graphrag_got.config import Settings
from graphrag_got.llm.calls import Attempt, LLMContextError, LLMOutputError, complete_text, is_embedded
from graphrag_got.llm.json_answers import complete_json

log = logging.getLogger(__name__)

#: Most claims in one answer, and most source ids one claim may cite.
MAX_CLAIMS = 6
MAX_IDS_PER_CLAIM = 4


class Claim(BaseModel):
    statement: str
    sources: list[str] = Field(default_factory=list)


class ClaimsAnswer(BaseModel):
    claims: list[Claim] = Field(default_factory=list)


def use_claims(settings: Settings, chat: BaseChatModel) -> bool:
    """Whether an answer of ``chat`` is asked as claims (see the module docstring)."""
    fmt = settings.search.answer_format
    return is_embedded(chat) if fmt == "auto" else fmt == "claims"


def claims_schema(ids: list[str], max_claims: int = MAX_CLAIMS) -> dict[str, Any]:
    """The JSON schema of a claims answer whose sources can only be ``ids``."""
    source: dict[str, Any] = {"type": "string", "enum": list(dict.fromkeys(ids))} if ids else {"type": "string"}
    return {
        "type": "object",
        "properties": {"claims": {
            "type": "array", "minItems": 1, "maxItems": max_claims,
            "items": {"type": "object", "properties": {
                "statement": {"type": "string"},
                "sources": {"type": "array", "minItems": 1 if ids else 0, "maxItems": MAX_IDS_PER_CLAIM, "items": source},
            }, "required": ["statement", "sources"]},
        }},
        "required": ["claims"],
    }  # fmt: skip


def render_claims(answer: ClaimsAnswer) -> str:
    """The answer text: one sentence per claim, its ids in brackets before the final stop."""
    parts = []
    for claim in answer.claims:
        text = " ".join(claim.statement.split())
        if not text:
            continue
        stop = text[-1] if text[-1] in ".!?" else "."
        body = text[:-1].rstrip() if text[-1] in ".!?" else text
        ids = list(dict.fromkeys(s.strip() for s in claim.sources if s.strip()))
        parts.append(f"{body} [{', '.join(ids)}]{stop}" if ids else f"{body}{stop}")
    return " ".join(parts)


def complete_claims(chat: BaseChatModel, system: str, user: str, ids: list[str], attempt: Attempt,
                    max_tokens: int) -> str:  # fmt: skip
    """Ask ``chat`` for a claims answer over sources ``ids`` and render it. Its raw responses and
    tokens go to ``attempt``; raises :class:`LLMOutputError` when no valid JSON came back."""
    try:
        value, inner = complete_json(chat, system, user, ClaimsAnswer, schema=claims_schema(ids),
                                     max_tokens=max_tokens)  # fmt: skip
    except LLMOutputError as exc:
        attempt.raw_responses.extend(exc.raw_responses)
        raise
    attempt.raw_responses.extend(inner.raw_responses)
    attempt.input_tokens += inner.input_tokens
    attempt.output_tokens += inner.output_tokens
    attempt.tokens_estimated = attempt.tokens_estimated or inner.tokens_estimated
    attempt.transport_retries += inner.transport_retries
    return render_claims(value)


def answer_call(chat: BaseChatModel, *, claims: bool, system: str, prose_system: str, user: str, ids: list[str],
                attempt: Attempt, max_tokens: int) -> str:  # fmt: skip
    """The answer text of one question: claims (``system`` is then the claims prompt) or prose.

    A claims answer that stays unusable after its retry falls back to one prose call (logged), so a
    question is never lost to the format. Every raw response lands in ``attempt.raw_responses``:
    its length is the number of calls made."""
    if claims:
        try:
            return complete_claims(chat, system, user, ids, attempt, max_tokens)
        except LLMOutputError as exc:
            if isinstance(exc, LLMContextError):
                raise
            log.warning("the claims answer was unusable (%s); asking for prose instead", exc)
        system = prose_system
    text = complete_text(chat, system, user, attempt, max_tokens=max_tokens)
    attempt.raw_responses.append(text)
    return text


__all__ = ["MAX_CLAIMS", "Claim", "ClaimsAnswer", "answer_call", "claims_schema", "complete_claims", "render_claims",
           "use_claims"]  # fmt: skip
