"""Global questions: pick a level, keep the community reports closest to the question, map, reduce, cite.

* level: ``level`` (``--level``), else the level whose number of reports is closest to
  ``search.global_target_communities`` (ties: the lower level). The communities "of" a level are
  its view (:func:`graphrag_got.communities.detect.level_view`): that level's communities plus the final
  communities of the levels above, so every part of the graph is represented once.
* selection, before any LLM call: the question is embedded (``embed_query``) and the level's reports
  are ranked by the cosine similarity of their embedding (``Community.embedding``); the first
  ``global_max_communities`` whose similarity is at least ``global_min_similarity`` are kept, the
  others are skipped. Without embeddings (reports not embedded, embeddings off or failing) the
  reports are ranked by their importance rating (then size, then id) and the first
  ``global_max_communities`` are kept; the result says which ranking was used.
* map: one ``complete_json`` call per kept community, in the form ``search.global_map`` names
  (:mod:`graphrag_got.search.global_map`: {relevance 0-10, extract}, or scored points), in parallel
  (as many threads as the model's server takes calls at once, :mod:`graphrag_got.llm.concurrency`).
  An answer that stays invalid (after the one retry of ``complete_json``) or a failing call is
  recorded in ``failed`` and skipped, never fatal. Each map call passes ``replay_key="community:<id>"``
  so recorded answers stay matched to their community.
* keep map ratings >= threshold, sorted by relevance (descending) then community id; these reports
  become the answer's sources ``[R1]``, ``[R2]``... (:mod:`graphrag_got.search.citations`).
* reduce, in the form ``search.global_answer`` names (:mod:`graphrag_got.search.global_map`):
  ``written``, one call that answers from the kept extracts (or the best points across reports) and
  the reports' key findings, citing their ids, through :func:`graphrag_got.search.claims.checked_answer`:
  claims (the embedded model; every claim must cite a report and is checked against the reports it
  cites, summary and findings) or prose; the answer's language checked, asked again once when it is
  not the question's; ``extractive``, the reports' best points and their communities' fact sentences
  in turns are the answer's core and one short call states the answer from them. Ids the model
  invents are removed and counted. Nothing kept: a fixed answer, no reduce.

LLM calls: at most the kept communities + 1 (plus one retry per invalid map answer, and one more
reduce when the answer came in another language).
Singleton communities have no report (see :mod:`graphrag_got.communities.detect`) and are never candidates.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

import neo4j
import numpy as np
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from graphrag_got.search import cypher
from graphrag_got.communities.detect import level_view
from graphrag_got.communities.store import parse_findings
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings, SearchSettings
from graphrag_got.errors import GraphragGotError, LLMError, SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.llm.calls import Attempt, LLMOutputError
from graphrag_got.llm.concurrency import calls_in_flight
from graphrag_got.llm.factory import get_chat_model
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.llm.usage import LLMUsage
from graphrag_got.prompts import load_prompts, map_prompt, reduce_prompt
from graphrag_got.search.anchors import entity_catalog
from graphrag_got.search.citations import Citation, Finding, number_sources
from graphrag_got.search.claims import AnswerChecks
from graphrag_got.search.global_map import (MAP_SCHEMA, MapAnswer, MapPoint, ReduceInputs, map_form,
                                            reduce_form)

logger = logging.getLogger(__name__)

MAX_MEMBERS_SHOWN = 15
MAX_FINDINGS_SHOWN = 5
MAX_COMMUNITY_FACTS = 200  # facts of one community an extractive answer reads sentences from

NOTHING_RELEVANT_ANSWER = (
    "No community summary is relevant enough to this question (threshold {threshold}/10): "
    "the graph does not seem to hold the answer. Try a lower --threshold or a local question."
)
NOTHING_SIMILAR_ANSWER = (
    "No community report is similar enough to this question (cosine similarity >= {min_similarity:g}, "
    "best {best}): the graph does not seem to hold the answer. Try a lower GRAPHRAG_GLOBAL_MIN_SIMILARITY, "
    "another --level or a local question."
)


Selection = Literal["similarity", "rating"]


#: The map and reduce prompts in their default form (language of the question); see ``graphrag_got.prompts``.
MAP_PROMPT = map_prompt()
REDUCE_PROMPT = reduce_prompt()


@dataclass
class CommunityRating:
    """One mapped community: its relevance to the question (the map answer) and extract."""

    id: int
    title: str | None
    size: int | None
    relevance: int | None = None
    extract: str = ""
    error: str | None = None
    kept: bool = False
    similarity: float | None = None  # cosine similarity of its report to the question (None: not embedded)
    level: int = 0
    points: list[MapPoint] = field(default_factory=list)  # the scored points (``global_map=points``)


@dataclass
class CommunityChoice:
    """One candidate community of the chosen level and whether it was selected for the map step."""

    id: int
    title: str | None
    size: int | None
    level: int
    similarity: float | None  # None when the report has no embedding (or no ranking by similarity)
    rating: float | None  # the report's importance rating (0-10), when it has one
    selected: bool = False
    reason: str = ""  # why it was skipped ("" when selected)


@dataclass
class GlobalResult(LLMUsage, AnswerChecks):
    question: str
    threshold: int
    ratings: list[CommunityRating] = field(default_factory=list)  # every mapped community, by id
    answer: str | None = None
    level: int | None = None  # the level whose communities were candidates
    levels: dict[int, int] = field(default_factory=dict)  # level -> reports in its view
    selection: Selection = "rating"  # how candidates were ranked
    min_similarity: float | None = None  # the similarity floor used (None when ranking by rating)
    max_communities: int = 0
    candidates: list[CommunityChoice] = field(default_factory=list)  # best ranked first
    sources: list[Citation] = field(default_factory=list)  # the reports the reduce step was given: R1..
    citations: list[Citation] = field(default_factory=list)  # the sources the answer cites, first use first
    invented_citations: int = 0  # ids the answer cited that were not among its sources (removed)
    invented_ids: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)  # seconds: select, map, reduce, total
    warnings: list[str] = field(default_factory=list)
    map_form: str = "extract"  # what each map call gave: extract | points (search/global_map.py)
    covered: int = 0  # claims added from uncited reports' best points (search/global_map.py)
    reduce_form: str = "written"  # how the answer was written: written | extractive (search/global_map.py)

    @property
    def kept(self) -> list[CommunityRating]:
        """Ratings >= threshold, most relevant first (then by id)."""
        return sorted((r for r in self.ratings if r.kept), key=lambda r: (-(r.relevance or 0), r.id))

    @property
    def failed(self) -> list[CommunityRating]:
        return [r for r in self.ratings if r.error is not None]

    @property
    def selected(self) -> list[CommunityChoice]:
        """Candidates sent to the map step."""
        return [c for c in self.candidates if c.selected]

    @property
    def skipped(self) -> list[CommunityChoice]:
        """Candidates skipped before the map step (too dissimilar, or beyond the maximum)."""
        return [c for c in self.candidates if not c.selected]


def choose_level(counts: dict[int, int], target: int) -> int:
    """The level whose report count is closest to ``target`` (ties: the lower level); 0 when none."""
    if not counts:
        return 0
    return min(sorted(counts), key=lambda lv: (abs(counts[lv] - target), lv))


def cosine(a: Any, b: Any) -> float:
    va, vb = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValueError(f"vectors of {va.shape} and {vb.shape} dimensions")
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    return float(va @ vb / (na * nb)) if na and nb else 0.0


def _rating_order(row: dict[str, Any]) -> tuple[Any, ...]:
    rating = row.get("rating")
    return (-(float(rating) if isinstance(rating, (int, float)) else -1.0), -(row.get("size") or 0), row["id"])


def select_communities(
    rows: list[dict[str, Any]],
    question_vector: list[float] | None,
    *,
    max_communities: int,
    min_similarity: float,
) -> tuple[list[CommunityChoice], Selection]:
    """Rank the candidate report rows and mark the ones to map (see module docstring).

    Ranking is by similarity when ``question_vector`` is given and at least one row has an embedding
    (rows without one, or of another dimension, rank last and are skipped); else by rating.
    """
    use_sim = question_vector is not None and any(r.get("embedding") for r in rows)
    choices: list[CommunityChoice] = []
    for r in rows:
        sim = None
        if use_sim and r.get("embedding"):
            try:
                sim = round(cosine(question_vector, r["embedding"]), 4)
            except ValueError:
                sim = None
        rating = r.get("rating") if isinstance(r.get("rating"), (int, float)) else None
        choices.append(CommunityChoice(r["id"], r.get("title"), r.get("size"), int(r.get("level") or 0), sim, rating))
    if use_sim:
        choices.sort(key=lambda c: (c.similarity is None, -(c.similarity or 0.0), c.id))
    else:
        order = {r["id"]: i for i, r in enumerate(sorted(rows, key=_rating_order))}
        choices.sort(key=lambda c: order[c.id])
    taken = 0
    for c in choices:
        if use_sim and c.similarity is None:
            c.reason = "report not embedded"
        elif use_sim and c.similarity is not None and c.similarity < min_similarity:
            c.reason = f"similarity {c.similarity:.3f} < {min_similarity:g}"
        elif taken >= max_communities:
            c.reason = f"beyond the {max_communities} most {'similar' if use_sim else 'important'}"
        else:
            c.selected = True
            taken += 1
    return choices, "similarity" if use_sim else "rating"


def _question_vector(embedding: EmbeddingSettings, question: str, embedder: Embeddings | None,
                     warnings: list[str], *, llm: LLMSettings, files: FilesSettings) -> list[float] | None:
    if embedder is None:
        if not embedding.enabled:
            return None
        try:
            from graphrag_got.llm.embeddings import get_embedder

            embedder = get_embedder(embedding, llm=llm, files=files)
        except GraphragGotError as exc:
            warnings.append(f"no embedding model ({exc}): communities ranked by rating")
            return None
    try:
        return [float(x) for x in embedder.embed_query(question)]
    except GraphragGotError as exc:
        warnings.append(f"the question could not be embedded ({exc}): communities ranked by rating")
    except Exception as exc:  # noqa: BLE001 - any provider failure: rank by rating instead
        warnings.append(f"the question could not be embedded ({type(exc).__name__}: {exc}): "
                        "communities ranked by rating")  # fmt: skip
    return None


def _report_block(row: dict[str, Any]) -> str:
    lines = [f"COMMUNITY {row['id']}: {row['title'] or ''}", f"MEMBERS: {', '.join(row['members'] or [])}",
             f"SUMMARY: {row['summary']}"]  # fmt: skip
    findings = parse_findings(row.get("findings"))[:MAX_FINDINGS_SHOWN]
    if findings:
        lines.append("KEY FINDINGS:\n" + "\n".join(f"- {f['statement']}" for f in findings))
    if isinstance(row.get("rating"), (int, float)):
        lines.append(f"IMPORTANCE: {row['rating']:g}/10" + (f" ({row['rating_explanation']})"
                                                            if row.get("rating_explanation") else ""))  # fmt: skip
    return "\n".join(lines)


def global_search(
    driver: neo4j.Driver,
    db: Neo4jSettings,
    question: str,
    *,
    search: SearchSettings,
    llm: LLMSettings,
    files: FilesSettings,
    embedding: EmbeddingSettings,
    chat: BaseChatModel | None = None,
    threshold: int | None = None,
    concurrency: int | None = None,
    language: str | None = None,
    level: int | None = None,
    max_communities: int | None = None,
    min_similarity: float | None = None,
    embedder: Embeddings | None = None,
) -> GlobalResult:
    """Select, map and reduce over the community reports (see module docstring).

    ``language`` forces the extracts' and the answer's language (``"English"``); None answers in the
    language of the question. ``level``, ``max_communities`` and ``min_similarity`` default to the
    settings (``level`` None: chosen as the module docstring says). ``embedder`` embeds the question
    (default ``embeddings.get_embedder(embedding, llm=llm, files=files)`` when
    ``embedding.enabled``).
    """
    t0 = time.perf_counter()
    threshold = search.global_threshold if threshold is None else threshold
    if isinstance(threshold, bool) or not isinstance(threshold, int) or not 0 <= threshold <= 10:
        raise SearchError(f"--threshold must be an integer from 0 to 10, got {threshold!r}")
    max_communities = search.global_max_communities if max_communities is None else max_communities
    if isinstance(max_communities, bool) or not isinstance(max_communities, int) or max_communities < 1:
        raise SearchError(f"the most communities to map must be an integer >= 1, got {max_communities!r}")
    min_similarity = search.global_min_similarity if min_similarity is None else min_similarity
    if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)) or not -1 <= min_similarity <= 1:
        raise SearchError(f"the minimum similarity must be a number from -1 to 1, got {min_similarity!r}")
    if not question.strip():
        raise SearchError("the question is empty")
    rows = read_all(driver, db, cypher.community_summaries(), members=MAX_MEMBERS_SHOWN)
    if not rows:
        raise SearchError("no community has a summary: run `graphrag-got communities detect` and "
                          "`graphrag-got communities summarize` first")  # fmt: skip
    hierarchy = read_all(driver, db, cypher.community_levels())
    reported = {r["id"] for r in rows}
    present = sorted({int(h["level"]) for h in hierarchy})
    counts = {lv: sum(1 for h in level_view(hierarchy, lv) if h["id"] in reported) for lv in present}
    if level is None:
        level = choose_level({lv: n for lv, n in counts.items() if n}, search.global_target_communities)
    elif isinstance(level, bool) or not isinstance(level, int) or level not in counts:
        raise SearchError(f"--level {level!r} does not exist: the communities have levels "
                          f"{', '.join(map(str, present))} (run `graphrag-got communities detect` to change them)")
    view_ids = {h["id"] for h in level_view(hierarchy, level)}
    candidates = [r for r in rows if r["id"] in view_ids]

    res = GlobalResult(question=question, threshold=threshold, level=level, levels=counts,
                       max_communities=max_communities)  # fmt: skip
    qvec = (_question_vector(embedding, question, embedder, res.warnings, llm=llm, files=files)
            if any(r.get("embedding") for r in candidates) else None)  # fmt: skip
    if qvec is None and not res.warnings:
        res.warnings.append("the community reports have no embeddings (run `graphrag-got communities summarize` "
                            "with embeddings on): communities ranked by rating")  # fmt: skip
    res.candidates, res.selection = select_communities(candidates, qvec, max_communities=max_communities,
                                                       min_similarity=float(min_similarity))  # fmt: skip
    res.min_similarity = float(min_similarity) if res.selection == "similarity" else None
    t_select = time.perf_counter()
    res.timings["select"] = round(t_select - t0, 4)
    chosen = {c.id: c for c in res.selected}
    to_map = [r for r in candidates if r["id"] in chosen]
    if not to_map:
        best = max((c.similarity for c in res.candidates if c.similarity is not None), default=None)
        res.answer = NOTHING_SIMILAR_ANSWER.format(min_similarity=float(min_similarity),
                                                   best="none" if best is None else f"{best:.3f}")  # fmt: skip
        res.timings["total"] = round(time.perf_counter() - t0, 4)
        return res

    chat = chat or get_chat_model(llm, files=files)
    lock = threading.Lock()
    prompts = load_prompts(llm.prompts_dir)
    form = map_form(search, chat)  # a rating and extract, or scored points (search/global_map.py)
    res.map_form = form.name
    map_system, reduce_system = form.system(language, prompts), reduce_prompt(language, prompts=prompts)

    def one(row: dict[str, Any]) -> CommunityRating:
        rating = CommunityRating(row["id"], row["title"], row["size"], similarity=chosen[row["id"]].similarity,
                                 level=int(row.get("level") or 0))  # fmt: skip
        user = f"QUESTION: {question}\n\n{_report_block(row)}"
        try:
            obj, attempt = complete_json(chat, map_system, user, form.answer_model, schema=form.schema,
                                          replay_key=f"community:{row['id']}", max_tokens=form.max_tokens)
            with lock:
                res.count(attempt, len(attempt.raw_responses))
            reading = form.read(obj)
            rating.relevance, rating.extract, rating.points = reading.relevance, reading.extract, reading.points
            rating.kept = reading.relevance >= threshold
            rating.points = [p for p in rating.points if p.score >= threshold]
        except LLMOutputError as exc:
            with lock:
                res.llm_calls += len(exc.raw_responses)
            rating.error = str(exc)
        except LLMError as exc:
            with lock:
                res.llm_calls += 1
            rating.error = str(exc)
        return rating

    workers = max(1, concurrency or calls_in_flight(llm, chat).calls)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        res.ratings = sorted(pool.map(one, to_map), key=lambda r: r.id)
    t_map = time.perf_counter()
    res.timings["map"] = round(t_map - t_select, 4)

    kept = res.kept
    if not kept:
        res.answer = NOTHING_RELEVANT_ANSWER.format(threshold=threshold)
        res.timings["total"] = round(time.perf_counter() - t0, 4)
        return res
    by_id = {r["id"]: r for r in candidates}
    res.sources = number_sources(
        Citation(id="R0", kind="report", text=f"{r.title or ''}: {by_id[r.id]['summary']}".strip(": "),
                 community_id=str(r.id), entities=list(by_id[r.id]["members"] or []),
                 findings=[Finding(statement=f["statement"], members=[str(m) for m in f.get("members") or []])
                           for f in parse_findings(by_id[r.id].get("findings"))[:MAX_FINDINGS_SHOWN]])
        for r in kept
    )  # fmt: skip
    pairs = list(zip(res.sources, kept))
    reducer = reduce_form(search, chat)  # the model writes the claims, or the best points are the core

    def facts_of(community_id: str) -> list[dict[str, Any]]:
        return read_all(driver, db, cypher.community_facts(), community=int(community_id), limit=MAX_COMMUNITY_FACTS)

    index = entity_catalog(driver, db, search=search)[1] if reducer.needs_index(search, chat) else None
    attempt = Attempt()
    try:
        checked = reducer.answer(ReduceInputs(question=question, pairs=pairs, sources=res.sources, index=index,
                                              chat=chat, search=search, llm=llm, language=language, map_form=form,
                                              reduce_system=reduce_system, facts_of=facts_of), attempt)  # fmt: skip
    finally:
        res.count(attempt, max(len(attempt.raw_responses), reducer.least_calls))
    res.reduce_form, res.covered = reducer.name, checked.covered
    res.answer, res.citations = checked.text, checked.citations
    res.invented_ids, res.invented_citations = checked.invented, len(checked.invented)
    res.warnings.extend(checked.warnings)
    res.record(checked)
    if checked.invented:
        logger.info("global answer cited %d id(s) not among its sources, removed: %s",
                    len(checked.invented), ", ".join(checked.invented))
    res.timings["reduce"] = round(time.perf_counter() - t_map, 4)
    res.timings["total"] = round(time.perf_counter() - t0, 4)
    return res


__all__ = [
    "CommunityChoice", "CommunityRating", "GlobalResult", "MAP_SCHEMA", "MapAnswer", "NOTHING_RELEVANT_ANSWER",
    "NOTHING_SIMILAR_ANSWER", "choose_level", "cosine", "global_search", "select_communities",
]  # fmt: skip
