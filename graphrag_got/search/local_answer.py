"""How a local answer is written from its ranked sources: one :class:`LocalAnswerForm` per way.

``search.local_answer`` picks the form (:func:`local_answer_form`):

* ``written`` (:class:`WrittenAnswer`): the model writes every claim from the ranked sources (cited
  claims with the embedded model, prose with the others; :func:`graphrag_got.search.claims.checked_answer`).
* ``extractive`` (:class:`ExtractiveFirst`): the answer's core is the corpus's own sentences. Of the
  ranked sources, the sentences that name the question's entities together (a fact's evidence
  sentence, one sentence of an excerpt) are taken, most entities first, then in rank order, at most
  ``search.extractive_sentences``, each cited to the sources it comes from. The model then writes at
  most two sentences that state the answer from that core only (``search.extractive_connect``; one
  short call over a context of a few sentences, so a small model on two cores answers in seconds),
  shown first. Every claim, the core's and the model's, goes through the same support check. The
  small model given twenty sources wrote claims beside the point and pasted context lines
  (issue 52: the demo's "how did X and Y meet" answer held the meeting only inside a pasted line);
  the sentence that holds the answer is usually already among the sources, and an extractive core
  cannot paste a line or leave the answer out.
  When no sentence names a question's entity, or the corpus's sentences are not in the language
  the answer must be in, the written form answers instead (said in a warning).
* ``auto``: extractive with the embedded model, written with the others.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from langchain_core.language_models import BaseChatModel

from graphrag_got.common.language import question_language, text_language
from graphrag_got.config import LLMSettings, SearchSettings
from graphrag_got.llm.calls import Attempt
from graphrag_got.prompts import claims_answer_prompt, load_prompts, local_answer_prompt
from graphrag_got.search.anchors import Anchor, MatchIndex, normalize_words
from graphrag_got.search.citations import Citation, context_block
from graphrag_got.search.claims import CheckedAnswer, by_model, checked_answer, use_claims
from graphrag_got.search.extractive import CorePiece, extractive_answer, whole_sentences
from graphrag_got.search.support import named_uids

log = logging.getLogger(__name__)

#: Most tokens of a written answer.
ANSWER_MAX_TOKENS = 600



@dataclass
class AnswerInputs:
    """What every form reads: the question, its ranked sources, the anchors and the graph's names."""

    question: str
    sources: list[Citation]
    anchors: list[Anchor]
    index: MatchIndex
    chat: BaseChatModel
    search: SearchSettings
    llm: LLMSettings
    language: str | None = None  # forced answer language (None: the question's)
    ranked: bool = True  # the sources are ranked by the question (one list)


class LocalAnswerForm(Protocol):
    """One way of writing a local answer from its sources (module docstring)."""

    name: str
    least_calls: int  # calls counted when the answer step fails before any response

    def answer(self, inp: AnswerInputs, attempt: Attempt) -> CheckedAnswer: ...


def answer_prompt(question: str, sources: Sequence[Citation], *, ranked: bool) -> str:
    """The user part of a written local answer: the question and its numbered sources."""
    return (f"QUESTION: {question}\n\n{context_block(sources, ranked=ranked)}\n\n"
            "Answer the question from this context only, citing the ids of the sources after each claim.")


class WrittenAnswer:
    """The model writes every claim (or the prose) from the ranked sources."""

    name = "written"
    least_calls = 1

    def system(self, inp: AnswerInputs) -> str:
        prompts = load_prompts(inp.llm.prompts_dir)
        return (claims_answer_prompt(inp.language, max_ids=inp.search.claim_max_sources, prompts=prompts)
                if use_claims(inp.search, inp.chat) else local_answer_prompt(inp.language, prompts=prompts))

    def answer(self, inp: AnswerInputs, attempt: Attempt) -> CheckedAnswer:
        prompts = load_prompts(inp.llm.prompts_dir)
        out = checked_answer(inp.chat, inp.search, llm=inp.llm, claims=use_claims(inp.search, inp.chat),
                              system=self.system(inp), prose_system=local_answer_prompt(inp.language, prompts=prompts),
                              user=answer_prompt(inp.question, inp.sources, ranked=inp.ranked), sources=inp.sources,
                              attempt=attempt, max_tokens=ANSWER_MAX_TOKENS, question=inp.question,
                              language=inp.language, index=inp.index)  # fmt: skip
        out.form = self.name
        return out


@dataclass
class CoreSentence:
    """One sentence of an extractive answer's core, with the sources it comes from."""

    text: str
    ids: list[str]
    anchors: int  # how many of the question's entities it names
    rank: int  # the place of its first source in the ranked context


def _sentences(src: Citation) -> list[str]:
    """The whole sentences a source holds: a fact's evidence and an excerpt, cut at sentence ends; a
    last piece with no end mark is a cut span, not a sentence, and is left out."""
    return whole_sentences((src.evidence or "") if src.kind == "fact" else src.text if src.kind == "chunk" else "")


def core_sentences(sources: Sequence[Citation], anchors: Sequence[Anchor], index: MatchIndex, *,
                   limit: int, max_ids: int) -> list[CoreSentence]:  # fmt: skip
    """The corpus sentences of ``sources`` about the question (module docstring): the sentences naming
    an entity of the question, in the order the context ranks them (by the question's words), the one
    naming the most of them always among them; a sentence several sources hold is one sentence citing
    them (at most ``max_ids``). Without named anchors (a question found only by vector similarity),
    the best-ranked sentences."""
    wanted = {a.uid for a in anchors if a.how != "vector"}
    found: dict[str, CoreSentence] = {}
    for rank, src in enumerate(sources):
        for text in _sentences(src):
            key = normalize_words(text)
            if not key:
                continue
            if key in found:
                if src.id not in found[key].ids and len(found[key].ids) < max_ids:
                    found[key].ids.append(src.id)
                continue
            found[key] = CoreSentence(text, [src.id], len(wanted & named_uids(text, index)), rank)
    pool = [c for c in found.values() if c.anchors or not wanted]
    chosen = pool[:limit]
    most = max(pool, key=lambda c: (c.anchors, -c.rank), default=None)
    if most is not None and most not in chosen and most.anchors > max(c.anchors for c in chosen):
        chosen = [*chosen[: limit - 1], most]
    return sorted(chosen, key=lambda c: c.rank)


class ExtractiveFirst:
    """The corpus's sentences holding the question's entities are the answer; the model states it (module docstring)."""

    name = "extractive"
    least_calls = 0

    def __init__(self, fallback: LocalAnswerForm | None = None) -> None:
        self.fallback = fallback or WrittenAnswer()

    def answer(self, inp: AnswerInputs, attempt: Attempt) -> CheckedAnswer:
        search = inp.search
        core = core_sentences(inp.sources, inp.anchors, inp.index, limit=search.extractive_sentences,
                              max_ids=search.claim_max_sources)  # fmt: skip
        expected = inp.language or question_language(inp.question)
        core_language = text_language(" ".join(c.text for c in core)) if core else None
        why = ("no sentence of the sources names an entity of the question" if not core
               else f"the sources' sentences are in {core_language}, the answer must be in {expected}"
               if expected and core_language and core_language != expected else None)
        if why is not None:
            log.info("extractive answer not possible (%s): the model writes it", why)
            out = self.fallback.answer(inp, attempt)
            out.warnings.append(f"written answer instead of an extractive one: {why}")
            return out
        return extractive_answer(inp.chat, inp.question, [CorePiece(c.text, c.ids) for c in core], inp.sources,
                                 inp.index, attempt, search=search, llm=inp.llm, language=inp.language,
                                 expected=expected, form=self.name)  # fmt: skip


#: The forms by name; ``auto`` is resolved by :func:`local_answer_form`.
LOCAL_ANSWER_FORMS: dict[str, Callable[[], LocalAnswerForm]] = {"written": WrittenAnswer, "extractive": ExtractiveFirst}


def local_answer_form(search: SearchSettings, chat: BaseChatModel) -> LocalAnswerForm:
    """The form ``search.local_answer`` names (``auto``: extractive with the embedded model)."""
    return LOCAL_ANSWER_FORMS[by_model(search.local_answer, chat, embedded="extractive", other="written")]()


__all__ = ["ANSWER_MAX_TOKENS", "LOCAL_ANSWER_FORMS", "AnswerInputs", "CoreSentence", "ExtractiveFirst",
           "LocalAnswerForm", "WrittenAnswer", "answer_prompt", "core_sentences", "local_answer_form"]
