"""An answer whose core is given text, each piece cited, and the model states the answer from it.

The extractive answers of local search (the corpus's sentences naming the question's entities,
:mod:`graphrag_got.search.local_answer`) and of global search (the best points of the reports, taken
in turns, :mod:`graphrag_got.search.global_map`) share this step: at most :data:`STATE_MAX_CLAIMS`
sentences stating the answer from the core are asked of the model (one short call over a context of
a few lines; ``search.extractive_connect``), shown first, and every claim, the core's and the
model's, goes through the support check (:func:`graphrag_got.search.support.check_claims`). A stated
sentence in another language than the answer's is not shown, nor one naming no entity of the graph
(``no_entity``: "the answer is in the text given" states nothing).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from graphrag_got.common.language import text_language
from graphrag_got.config import LLMSettings, SearchSettings
from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import Attempt
from graphrag_got.prompts import extractive_answer_prompt, load_prompts
from graphrag_got.search.anchors import MatchIndex
from graphrag_got.search.citations import Citation, CitationKind
from graphrag_got.search.claims import CheckedAnswer, Claim, ask_claims, render_statements, shown_answer
from graphrag_got.search.support import check_claims

log = logging.getLogger(__name__)

_SENTENCE = re.compile(r"(?<=[.!?»])\s+|\n+")
_ENDS = frozenset(".!?»\"'”)")


def whole_sentences(text: str) -> list[str]:
    """The sentences of ``text``, spaces folded; a last piece with no end mark is a cut span (an
    evidence span stored cut), not a sentence, and is left out."""
    parts = [" ".join(x.split()) for x in _SENTENCE.split(text or "") if x.strip()]
    return [x for x in parts if x[-1] in _ENDS]


#: Most tokens of the sentences stating an extractive answer, and most such sentences.
STATE_MAX_TOKENS = 200
STATE_MAX_CLAIMS = 2


@dataclass
class CorePiece:
    """One piece of an extractive answer's core: its text and the ids of the sources it comes from."""

    text: str
    ids: list[str]


def state_answer(chat: BaseChatModel, question: str, core: Sequence[CorePiece], attempt: Attempt, *,
                 llm: LLMSettings, max_ids: int, language: str | None, expected: str | None) -> list[Claim]:  # fmt: skip
    """At most two sentences stating the answer from ``core`` (one short call); none on a failure."""
    ids = list(dict.fromkeys(i for c in core for i in c.ids))
    system = extractive_answer_prompt(language, max_claims=STATE_MAX_CLAIMS, max_ids=max_ids,
                                      prompts=load_prompts(llm.prompts_dir))  # fmt: skip
    lines = "\n".join(f"[{', '.join(c.ids)}] {c.text}" for c in core)
    user = (f"QUESTION: {question}\n\nSENTENCES:\n{lines}\n\n"
            "State the answer to the question from these sentences only, citing their ids.")
    try:
        value = ask_claims(chat, system, user, ids, attempt, STATE_MAX_TOKENS, max_ids=max_ids)
    except LLMError as exc:
        log.warning("the sentences stating the extractive answer failed (%s): the core alone is shown", exc)
        return []
    stated = list(value.claims)[:STATE_MAX_CLAIMS]
    if expected:  # a stated sentence in another language than the answer's is not shown
        stated = [c for c in stated if text_language(c.statement) in (None, expected)]
    return stated


def extractive_answer(chat: BaseChatModel, question: str, core: Sequence[CorePiece], sources: Sequence[Citation],
                      index: MatchIndex, attempt: Attempt, *, search: SearchSettings, llm: LLMSettings,
                      language: str | None, expected: str | None, form: str,
                      required_kind: CitationKind | None = None) -> CheckedAnswer:  # fmt: skip
    """The stated sentences (when ``search.extractive_connect``), then the core, checked and rendered."""
    max_ids = search.claim_max_sources
    stated = (state_answer(chat, question, core, attempt, llm=llm, max_ids=max_ids, language=language,
                           expected=expected) if search.extractive_connect else [])  # fmt: skip
    claims = [*stated, *(Claim(statement=c.text, sources=list(c.ids)) for c in core)]
    support = check_claims(claims, sources, index, max_ids=max_ids, required_kind=required_kind, require_entity=True)
    resolved = shown_answer(support, sources, expected)
    if support.left_out:
        log.info("extractive answer check: %s", support.summary())
    return CheckedAnswer(text=resolved.answer, raw=render_statements([(c.statement, c.sources) for c in claims]),
                         format="claims", citations=resolved.citations,
                         invented=[*support.invented, *resolved.invented], support=support,
                         question_language=expected,
                         answer_language=text_language(" ".join(c.statement for c in support.kept)), form=form)  # fmt: skip


__all__ = ["STATE_MAX_CLAIMS", "STATE_MAX_TOKENS", "CorePiece", "extractive_answer", "state_answer", "whole_sentences"]
