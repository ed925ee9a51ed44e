"""One entry point for every question: route it (or take the mode given), search, cite.

    from graphrag_got.search.answer import ask
    res = ask(driver, settings.neo4j, "How does Ada Lovelace relate to the Analytical Engine?",
              search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    res.route.mode, res.route.reason      # "drift", "connective question (rule connective.en ...)"
    res.answer, res.citations             # the answer and the sources it cites ([F1], [C2], [R1])
    res.claims, res.left_out              # claims format: the claims kept, and those left out with their reason
    res.model_dump(mode="json")           # the CLI's --json output and the service's response body

``mode="auto"`` asks :mod:`graphrag_got.search.route` (rules first, then the optional LLM
classifier); ``"local"``, ``"global"`` and ``"drift"`` skip routing. ``answer=False`` retrieves only:
local and drift then make no LLM call at all (drift and global return the community reports most
similar to the question instead of rating them), which is what ``--no-answer`` and the service's
load test use.

Every mode fills the same :class:`AskResult`; what a mode does not have stays empty (global has no
anchors, local has no communities). The full result of the mode (``LocalResult``, ``GlobalResult``,
``DriftResult``) stays reachable as :attr:`AskResult.detail` for printing, but is not serialized.
"""

from __future__ import annotations

import inspect
import logging
import time
from pathlib import Path
from typing import Any, Literal

import neo4j
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, PrivateAttr

from graphrag_got.search import cypher
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings, SearchSettings
from graphrag_got.common.language import question_language
from graphrag_got.common.once import warn_once
from graphrag_got.errors import ModeUnavailable, SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import load_prompts
from graphrag_got.search.citations import Citation
from graphrag_got.search.route import Route, route_question
from graphrag_got.search.support import KeptClaim, LeftOutClaim

logger = logging.getLogger(__name__)

AskMode = Literal["auto", "local", "global", "drift"]
MODES: tuple[str, ...] = ("auto", "local", "global", "drift")
RETRIEVALS: tuple[str, ...] = ("graph", "vector", "hybrid")

#: Longest question accepted (characters): longer input is refused before any work.
MAX_QUESTION_CHARS = 2000


class AskResult(BaseModel):
    """What one question produced, the same shape for every mode (``model_dump(mode="json")``)."""

    question: str
    mode: Literal["local", "global", "drift"]
    route: Route
    answer: str | None = None
    citations: list[Citation] = Field(default_factory=list)  # sources the answer cites, first use first
    sources: list[Citation] = Field(default_factory=list)  # every source the answer was given
    anchors: list[str] = Field(default_factory=list)  # names of the entities the search started from
    communities: list[int] = Field(default_factory=list)  # community ids kept (global, drift)
    retrieval: str | None = None  # local retrieval used: graph | vector | hybrid (None: not local)
    context_order: Literal["retrieval", "question"] | None = None  # local: how the answer's sources are ordered
    ranked_out: int = 0  # local, ordered by question: sources retrieved but ranked below the ones given
    followups: list[str] = Field(default_factory=list)  # drift: the follow-up questions searched
    bounds: dict[str, int] = Field(default_factory=dict)  # drift: depth, follow-ups, max calls
    timings: dict[str, float] = Field(default_factory=dict)  # seconds per step, and "total"
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    invented_citations: int = 0  # ids the model wrote that were not in its context (removed)
    language: str | None = None  # the answer's language as asked of the model (None: "the question's")
    answer_format: Literal["claims", "text"] | None = None  # how the answer was asked (None: no answer asked)
    answer_form: str | None = None  # local and global: written | extractive (search/local_answer.py, global_map.py)
    claims: list[KeptClaim] = Field(default_factory=list)  # claims format: the claims shown, with their check
    left_out: list[LeftOutClaim] = Field(default_factory=list)  # claims left out: not supported by their sources
    answer_language: str | None = None  # the answer's language as identified (None: too short to tell)
    language_retry: bool = False  # the answer was asked again because it came in another language
    warnings: list[str] = Field(default_factory=list)

    _detail: Any = PrivateAttr(default=None)

    @property
    def detail(self) -> Any:
        """The mode's own result object (LocalResult, GlobalResult, DriftResult), for display."""
        return self._detail

    def reference_lines(self) -> list[str]:
        """The reference list printed under the answer: one entry per cited source."""
        return [c.reference_line() for c in self.citations]

    def context_lines(self) -> list[str]:
        """The retrieved context as the answering model reads it (``--no-answer`` prints this)."""
        return [c.context_line() for c in self.sources]


def _check(question: str, mode: str, retrieval: str | None) -> str:
    if not isinstance(question, str) or not question.strip():
        raise SearchError("the question is empty: pass the question as text, e.g. ask \"Who rules the city?\"")
    if len(question) > MAX_QUESTION_CHARS:
        raise SearchError(f"the question is {len(question)} characters long; at most {MAX_QUESTION_CHARS} "
                          "are accepted: shorten it")  # fmt: skip
    if mode not in MODES:
        raise SearchError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    if retrieval is not None and retrieval not in RETRIEVALS:
        raise SearchError(f"unknown retrieval {retrieval!r}: use one of {', '.join(RETRIEVALS)}")
    return question.strip()


def _supports(func: Any, name: str) -> bool:
    """Whether ``func`` takes keyword ``name`` (the search functions gain options over time)."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # pragma: no cover - builtins
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def _usage(out: AskResult, res: Any) -> None:
    out.llm_calls += int(getattr(res, "llm_calls", 0) or 0)
    out.input_tokens += int(getattr(res, "input_tokens", 0) or 0)
    out.output_tokens += int(getattr(res, "output_tokens", 0) or 0)
    out.tokens_estimated = out.tokens_estimated or bool(getattr(res, "tokens_estimated", False))


def _checks(out: AskResult, res: Any) -> None:
    """What the answer's checks found (search/claims.py), from a mode's result."""
    out.answer_format = getattr(res, "answer_format", None)
    support = getattr(res, "support", None)
    if support is not None:
        out.claims, out.left_out = list(support.kept), list(support.left_out)
    out.answer_language = getattr(res, "answer_language", None)
    out.language_retry = bool(getattr(res, "language_retry", False))


def _catalog(driver: neo4j.Driver, db: Neo4jSettings) -> list[dict[str, Any]]:
    catalog = read_all(driver, db, cypher.search_entity_catalog())
    if not catalog:
        raise SearchError("the graph has no entities: run `graphrag-got load` first")
    return catalog


#: What makes global and drift possible on a loaded graph.
ENABLE_REPORTS = "graphrag-got communities summarize"


def _has_reports(driver: neo4j.Driver, db: Neo4jSettings) -> bool:
    return bool(read_all(driver, db, cypher.community_report_count())[0]["n"])


def _check_mode_can_run(driver: neo4j.Driver, db: Neo4jSettings, mode: str) -> None:
    """An explicit global or drift needs community reports: without them, say what to run."""
    if mode in {"global", "drift"} and not _has_reports(driver, db):
        n = read_all(driver, db, cypher.community_count())[0]["n"]
        first = "" if n else "`graphrag-got communities detect`, then "
        raise ModeUnavailable(f"mode {mode} needs community reports and the graph has none: run {first}"
                              f"`{ENABLE_REPORTS}`, or ask in mode auto or local", mode=mode,
                              command=("graphrag-got communities detect && " if not n else "") + ENABLE_REPORTS)


def _route(driver: neo4j.Driver, db: Neo4jSettings, question: str, *, search: SearchSettings, llm: LLMSettings,
           files: FilesSettings, chat: BaseChatModel | None, answer: bool,
           classifier: bool | None) -> Route:  # fmt: skip
    """Route ``question``; the classifier's model is built only when no rule decides. A route to
    global or drift on a graph without community reports goes to local (with a warning saying what
    to run to enable it): a routed question never fails for the graph's state."""
    catalog = _catalog(driver, db)
    route = route_question(question, catalog)
    use_classifier = search.route_classifier if classifier is None else classifier
    if route.decided_by == "default" and use_classifier and answer:
        if chat is None:
            from graphrag_got.llm.factory import get_chat_model

            chat = get_chat_model(llm, files=files)
        route = route_question(question, catalog, chat=chat, classifier=True,
                               prompts=load_prompts(llm.prompts_dir))
    if route.mode in {"global", "drift"} and not _has_reports(driver, db):
        warning = (f"the question was routed to {route.mode} ({route.reason}), but the graph has no community "
                   f"reports, so local retrieval answered it; to enable {route.mode} answers run "
                   f"`{ENABLE_REPORTS}`")
        warn_once(logger, "routed without community reports", "%s", warning)
        route = route.model_copy(update={
            "mode": "local", "reason": f"{route.reason}; no community reports, so local",
            "warnings": [*route.warnings, warning]})  # fmt: skip
    return route


def ask(
    driver: neo4j.Driver,
    db: Neo4jSettings,
    question: str,
    mode: AskMode = "auto",
    *,
    search: SearchSettings,
    llm: LLMSettings,
    files: FilesSettings,
    embedding: EmbeddingSettings,
    answer: bool = True,
    chat: BaseChatModel | None = None,
    retrieval: str | None = None,
    hops: int | None = None,
    max_facts: int | None = None,
    threshold: int | None = None,
    ontology: Ontology | str | Path | None = None,
    language: str | None = None,
    classifier: bool | None = None,
    depth: int | None = None,
    followups: int | None = None,
    max_calls: int | None = None,
) -> AskResult:
    """Answer ``question`` in ``mode`` (``"auto"``: routed), with citations; see the module docstring.

    ``retrieval`` (graph | vector | hybrid) is passed to local search (and drift's follow-ups) when
    it supports it; ``classifier`` overrides ``search.route_classifier``; ``depth``, ``followups``
    and ``max_calls`` bound drift (defaults from settings). Raises :class:`SearchError` on bad input
    or a graph that cannot answer (no entities, no communities).
    """
    question = _check(question, mode, retrieval)
    t0 = time.perf_counter()
    timings: dict[str, float] = {}
    if mode == "auto":
        route = _route(driver, db, question, search=search, llm=llm, files=files, chat=chat, answer=answer,
                       classifier=classifier)
        timings["route"] = round(time.perf_counter() - t0, 4)
    else:
        _check_mode_can_run(driver, db, mode)
        route = Route(mode=mode, reason=f"{mode} asked explicitly", rule="explicit", decided_by="explicit")
    if language is None and answer:
        # Named, not "the question's language": small models otherwise drift into English.
        language = question_language(question)
    out = AskResult(question=question, mode=route.mode, route=route, language=language)
    _usage(out, route)
    out.warnings.extend(route.warnings)

    t1 = time.perf_counter()
    if route.mode == "local":
        _run_local(out, driver, db, question, search=search, llm=llm, files=files, embedding=embedding,
                   answer=answer, chat=chat, retrieval=retrieval, hops=hops,
                   max_facts=max_facts, ontology=ontology, language=language)  # fmt: skip
    elif route.mode == "global":
        _run_global(out, driver, db, question, search=search, llm=llm, files=files, embedding=embedding,
                    answer=answer, chat=chat, threshold=threshold,
                    language=language)  # fmt: skip
    else:
        _run_drift(out, driver, db, question, search=search, llm=llm, files=files, embedding=embedding,
                   answer=answer, chat=chat, retrieval=retrieval, hops=hops,
                   max_facts=max_facts, ontology=ontology, language=language, depth=depth, followups=followups,
                   max_calls=max_calls)  # fmt: skip
    timings["search"] = round(time.perf_counter() - t1, 4)
    for k, v in (getattr(out.detail, "timings", None) or {}).items():
        if isinstance(v, (int, float)):
            timings.setdefault(f"{route.mode}.{k}", round(float(v), 4))
    timings["total"] = round(time.perf_counter() - t0, 4)
    out.timings = timings
    return out


def _run_local(out: AskResult, driver: neo4j.Driver, db: Neo4jSettings, question: str, *,
               search: SearchSettings, llm: LLMSettings, files: FilesSettings, embedding: EmbeddingSettings,
               answer: bool, chat: BaseChatModel | None, retrieval: str | None, hops: int | None, max_facts: int | None,
               ontology: Ontology | str | Path | None, language: str | None) -> None:  # fmt: skip
    from graphrag_got.search.local import local_search, local_sources

    kwargs: dict[str, Any] = {"chat": chat, "hops": hops, "max_facts": max_facts, "answer": answer,
                              "ontology": ontology, "language": language}  # fmt: skip
    if retrieval is not None:
        if _supports(local_search, "retrieval"):
            kwargs["retrieval"] = retrieval
        elif retrieval != "graph":
            raise SearchError(f"retrieval {retrieval!r} is not available in this install: use graph")
    res = local_search(driver, db, question, search=search, llm=llm, files=files, embedding=embedding, **kwargs)
    out._detail = res
    _usage(out, res)
    out.retrieval = getattr(res, "retrieval", None) or retrieval or "graph"
    out.context_order = getattr(res, "context_order", None)
    out.ranked_out = int(getattr(res, "ranked_out", 0) or 0)
    out.answer_form = getattr(res, "answer_form", None)
    out.anchors = [a.name for a in res.anchors]
    out.sources = local_sources(res)
    out.citations = list(getattr(res, "citations", None) or [])
    out.invented_citations = int(getattr(res, "invented_citations", 0) or 0)
    out.answer = res.answer
    _checks(out, res)
    out.warnings.extend(getattr(res, "llm_errors", None) or [])
    out.warnings.extend(getattr(res, "warnings", None) or [])


def _run_global(out: AskResult, driver: neo4j.Driver, db: Neo4jSettings, question: str, *,
                search: SearchSettings, llm: LLMSettings, files: FilesSettings, embedding: EmbeddingSettings,
                answer: bool, chat: BaseChatModel | None, threshold: int | None, language: str | None) -> None:  # fmt: skip
    from graphrag_got.search.drift import community_reports, rank_reports, report_citations

    if not answer:  # retrieval only: the reports most similar to the question, no LLM
        reports = rank_reports(embedding, question, community_reports(driver, db), llm=llm, files=files)
        top = reports[: search.drift_reports]
        out.sources = report_citations(top)
        out.communities = [r.id for r in top]
        return
    from graphrag_got.search.global_ import global_search

    res = global_search(driver, db, question, search=search, llm=llm, files=files, embedding=embedding, chat=chat,
                        threshold=threshold, language=language)
    out._detail = res
    _usage(out, res)
    out.answer = res.answer
    out.communities = [r.id for r in res.kept]
    out.sources = list(getattr(res, "sources", None) or [])
    out.citations = list(getattr(res, "citations", None) or [])
    out.invented_citations = int(getattr(res, "invented_citations", 0) or 0)
    out.answer_form = getattr(res, "reduce_form", None)
    _checks(out, res)
    out.warnings.extend(w for w in res.warnings if w not in out.warnings)
    if res.failed:
        out.warnings.append(f"{len(res.failed)} community rating(s) failed and were skipped")


def _run_drift(out: AskResult, driver: neo4j.Driver, db: Neo4jSettings, question: str, *,
               search: SearchSettings, llm: LLMSettings, files: FilesSettings, embedding: EmbeddingSettings,
               answer: bool, chat: BaseChatModel | None, retrieval: str | None, hops: int | None, max_facts: int | None,
               ontology: Ontology | str | Path | None, language: str | None, depth: int | None,
               followups: int | None, max_calls: int | None) -> None:  # fmt: skip
    from graphrag_got.search.drift import drift_search

    res = drift_search(driver, db, question, search=search, llm=llm, files=files, embedding=embedding, chat=chat,
                       answer=answer, retrieval=retrieval, hops=hops,
                       max_facts=max_facts, ontology=ontology, language=language, depth=depth,
                       followups=followups, max_calls=max_calls)  # fmt: skip
    out._detail = res
    _usage(out, res)
    out.answer = res.answer
    out.sources = list(res.sources)
    out.citations = list(res.citations)
    out.invented_citations = res.invented_citations
    out.communities = list(res.communities)
    out.anchors = list(res.anchors)
    out.followups = [f.question for f in res.followups if f.round > 0]
    out.retrieval = retrieval or "graph"
    out.bounds = res.bounds
    _checks(out, res)
    out.warnings.extend(res.warnings)


__all__ = ["AskMode", "AskResult", "MAX_QUESTION_CHARS", "MODES", "RETRIEVALS", "ask"]
