"""Global questions: map over the community summaries, keep the relevant ones, reduce to one answer.

* map: one ``complete_json`` call per summarized community ({relevance 0-10, extract}), in
  parallel (``settings.concurrency`` threads). A call whose answer stays invalid (after the one
  retry of ``complete_json``) or fails is recorded in ``failed`` and skipped, never fatal.
  Each map call passes ``replay_key="community:<id>"`` so recorded answers stay matched to their
  community whatever the thread order.
* keep ratings >= threshold, sorted by relevance (descending) then community id;
* reduce: one ``complete_text`` call that answers from the kept extracts, organised by
  theme or group. Nothing kept: a fixed answer saying so, and no reduce call.

Singleton communities have no summary (see :mod:`graphrag_got.communities`) and are not mapped.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import neo4j
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from .. import cypher
from ..graphdb import read_all
from ..config import Settings
from ..errors import LLMError, SearchError
from ..llm import Attempt, LLMOutputError, LLMUsage, complete_json, complete_text, get_chat_model
from ..prompts import map_prompt, reduce_prompt

MAX_MEMBERS_SHOWN = 15

NOTHING_RELEVANT_ANSWER = (
    "No community summary is relevant enough to this question (threshold {threshold}/10): "
    "the graph does not seem to hold the answer. Try a lower --threshold or a local question."
)


MAP_MAX_TOKENS = 300  # a relevance score and a short extract
REDUCE_MAX_TOKENS = 800


class MapAnswer(BaseModel):
    relevance: int = Field(ge=0, le=10, description="0 = unrelated, 10 = answers the question directly")
    extract: str = Field(description="what this community says that helps answer, in 1-3 sentences; empty if nothing")


#: Written out: plain types only, the 0-10 range is checked by MapAnswer (and retried once).
MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"relevance": {"type": "integer"}, "extract": {"type": "string"}},
    "required": ["relevance", "extract"],
}

#: The map and reduce prompts in their default form (language of the question); see ``graphrag_got.prompts``.
MAP_PROMPT = map_prompt()
REDUCE_PROMPT = reduce_prompt()


@dataclass
class CommunityRating:
    id: int
    title: str | None
    size: int | None
    relevance: int | None = None
    extract: str = ""
    error: str | None = None
    kept: bool = False


@dataclass
class GlobalResult(LLMUsage):
    question: str
    threshold: int
    ratings: list[CommunityRating] = field(default_factory=list)  # every mapped community, by id
    answer: str | None = None

    @property
    def kept(self) -> list[CommunityRating]:
        """Ratings >= threshold, most relevant first (then by id)."""
        return sorted((r for r in self.ratings if r.kept), key=lambda r: (-(r.relevance or 0), r.id))

    @property
    def failed(self) -> list[CommunityRating]:
        return [r for r in self.ratings if r.error is not None]



def global_search(
    driver: neo4j.Driver,
    settings: Settings,
    question: str,
    *,
    chat: BaseChatModel | None = None,
    threshold: int | None = None,
    concurrency: int | None = None,
    language: str | None = None,
) -> GlobalResult:
    """Map-reduce over the community summaries (see module docstring).

    ``language`` forces the extracts' and the answer's language (``"English"``); None answers in the
    language of the question.
    """
    threshold = settings.global_threshold if threshold is None else threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 <= threshold <= 10:
        raise SearchError(f"--threshold must be an integer from 0 to 10, got {threshold!r}")
    if not question.strip():
        raise SearchError("the question is empty")
    rows = read_all(driver, settings, cypher.community_summaries(), members=MAX_MEMBERS_SHOWN)
    if not rows:
        raise SearchError("no community has a summary: run `graphrag-got communities detect` and "
                          "`graphrag-got communities summarize` first")  # fmt: skip
    chat = chat or get_chat_model(settings)
    res = GlobalResult(question=question, threshold=threshold)
    lock = threading.Lock()
    map_system, reduce_system = map_prompt(language), reduce_prompt(language)

    def one(row: dict[str, Any]) -> CommunityRating:
        rating = CommunityRating(row["id"], row["title"], row["size"])
        members = ", ".join(row["members"] or [])
        user = (f"QUESTION: {question}\n\nCOMMUNITY {row['id']}: {row['title'] or ''}\n"
                f"MEMBERS: {members}\nSUMMARY: {row['summary']}")  # fmt: skip
        try:
            obj, attempt = complete_json(chat, map_system, user, MapAnswer, schema=MAP_SCHEMA,
                                          replay_key=f"community:{row['id']}", max_tokens=MAP_MAX_TOKENS)
            with lock:
                res.count(attempt, len(attempt.raw_responses))
            rating.relevance, rating.extract = obj.relevance, obj.extract.strip()
            rating.kept = obj.relevance >= threshold
        except LLMOutputError as exc:
            with lock:
                res.llm_calls += len(exc.raw_responses)
            rating.error = str(exc)
        except LLMError as exc:
            with lock:
                res.llm_calls += 1
            rating.error = str(exc)
        return rating

    workers = max(1, concurrency or settings.concurrency)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        res.ratings = sorted(pool.map(one, rows), key=lambda r: r.id)

    kept = res.kept
    if not kept:
        res.answer = NOTHING_RELEVANT_ANSWER.format(threshold=threshold)
        return res
    blocks = [f"[community {r.id}: {r.title or ''}; relevance {r.relevance}/10]\n{r.extract}" for r in kept]
    user = f"QUESTION: {question}\n\nEXTRACTS:\n\n" + "\n\n".join(blocks) + "\n\nAnswer from these extracts only."
    attempt = Attempt()
    try:
        res.answer = complete_text(chat, reduce_system, user, attempt, max_tokens=REDUCE_MAX_TOKENS)
    finally:
        res.count(attempt, 1)
    return res


