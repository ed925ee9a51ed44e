"""What the HTTP service and the MCP server share: the settings sections they read, one Neo4j
driver, one chat model, the ontology, the LLM gate and the worker threads. Everything is built on first use, so a server
starts even while Neo4j is down (``/health`` says so) and never loads a model it is not asked for.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

import neo4j
from langchain_core.language_models import BaseChatModel

from graphrag_got.config import (CodeSettings, EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings,
                                 SearchSettings, ServiceSettings)
from graphrag_got.errors import GraphragGotError, Neo4jError
from graphrag_got.ontology.model import Ontology
from graphrag_got.service import graph_reads
from graphrag_got.service.limits import InputTooLarge, LLMGate, ServiceBusy, run_blocking
from graphrag_got.service.models import AskRequest, CommunityPage, DiffRequest, Health, Neighbourhood

logger = logging.getLogger(__name__)

T = TypeVar("T")
#: What a client is told when Neo4j fails (the URI and the driver's words go to the server log only).
NEO4J_DOWN = ("Neo4j is not reachable, did not answer in time or refused the request: check it with "
              "`graphrag-got neo4j status` and start it with `graphrag-got neo4j start` (or check NEO4J_URI / "
              "NEO4J_PASSWORD where the service runs); the server log has the details")
WORKER_THREADS = 32  # blocking requests served at once (Neo4j reads are short; LLM ones are gated)


class EmptyQuestion(GraphragGotError):
    """The question has no visible text."""


class NoCodeRoot(GraphragGotError):
    """``POST /impact/diff`` on a service started without a repository (``serve --code-root``)."""


class ServiceRuntime:
    """Shared state of one server process, built once at startup from the sections it reads (the
    entry points, :func:`graphrag_got.service.create_app` and :func:`graphrag_got.service.mcp.build_server`,
    take the whole settings). ``chat`` / ``driver`` given here are used as they are (tests pass a
    scripted model and their driver); a driver given is not closed by :meth:`close`."""

    def __init__(self, db: Neo4jSettings, *, search: SearchSettings, llm: LLMSettings, files: FilesSettings,
                 embedding: EmbeddingSettings, service: ServiceSettings, chat: BaseChatModel | None = None,
                 driver: neo4j.Driver | None = None, code: CodeSettings | None = None, code_root: Path | None = None):
        self.db, self.search, self.llm, self.files, self.embedding = db, search, llm, files, embedding
        self.service = service
        self.code, self.code_root = code or CodeSettings(), code_root  # code_root: what /impact/diff reads
        self.gate = LLMGate(service.max_llm_requests)
        self.executor = ThreadPoolExecutor(max_workers=WORKER_THREADS, thread_name_prefix="graphrag-service")
        self._driver = driver
        self._owns_driver = driver is None
        self._chat = chat
        self._ontology: Ontology | None = None
        self._lock = threading.Lock()
        self._model: tuple[str | None, str | None] | None = None

    # --- lazily built parts ------------------------------------------------------------------
    def driver(self) -> neo4j.Driver:
        with self._lock:
            if self._driver is None:
                from graphrag_got.graph.db import connect

                # the budget covers a failed attempt and the one retry the driver always makes; a
                # read still running when its request got 504 is ended by the server too
                wait = self.service.neo4j_timeout_s
                self._driver = connect(self.db, timeout_s=wait / 2, retry_s=wait / 10,
                                       setting="GRAPHRAG_SERVICE_NEO4J_TIMEOUT",
                                       query_timeout_s=self.service.timeout_s)
            return self._driver

    def ontology(self) -> Ontology:
        with self._lock:
            if self._ontology is None:
                self._ontology = Ontology.from_file(self.files.ontology_path)
            return self._ontology

    def chat(self) -> BaseChatModel:
        with self._lock:
            if self._chat is None:
                from graphrag_got.llm.factory import get_chat_model

                self._chat = get_chat_model(self.llm, files=self.files)
            return self._chat

    def model_info(self) -> tuple[str | None, str | None]:
        """(model label, error): which model answers, without loading it (cached: auto pings Ollama)."""
        if self._model is None:
            if self._chat is not None:
                self._model = (f"{type(self._chat).__name__} (given to the service)", None)
            else:
                from graphrag_got.llm.factory import model_label

                try:
                    self._model = (model_label(self.llm), None)
                except GraphragGotError as exc:
                    self._model = (None, str(exc))
        return self._model

    def close(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            if self._owns_driver and self._driver is not None:
                self._driver.close()
                self._driver = None

    # --- limits ------------------------------------------------------------------------------
    def check_question(self, question: str) -> str:
        limit = self.service.max_question_chars
        if len(question) > limit:
            raise InputTooLarge(f"the question is {len(question)} characters long; at most {limit} are accepted "
                                "(GRAPHRAG_SERVICE_MAX_QUESTION_CHARS)", limit=limit, length=len(question))
        if not question.strip():
            raise EmptyQuestion("the question is empty; send {\"question\": \"...\"} with some text")
        return question

    async def run(self, fn: Callable[[], T], *, llm: bool) -> T:
        """``fn()`` off the event loop within the time budget; an LLM-backed call needs a free slot."""
        if llm and not self.gate.try_acquire():
            raise ServiceBusy(f"all {self.gate.slots} LLM slots are busy (GRAPHRAG_SERVICE_MAX_LLM_REQUESTS); "
                              "retry in a moment, or ask with answer=false for retrieval only")
        return await run_blocking(self.executor, fn, self.service.timeout_s,
                                  on_done=self.gate.release if llm else None)

    # --- operations (blocking: call them through run) -----------------------------------------
    def ask(self, req: AskRequest) -> dict[str, Any]:
        from graphrag_got.search.answer import ask

        chat = self.chat() if req.answer else self._chat
        result = ask(self.driver(), self.db, req.question, req.mode, search=self.search, llm=self.llm, files=self.files,
                     embedding=self.embedding, answer=req.answer, chat=chat, retrieval=req.retrieval)
        return result.model_dump(mode="json")

    def diff_impact(self, req: DiffRequest) -> dict[str, Any]:
        """``ask impact --diff`` answered by this process: imports and the driver are paid once, so a
        pre-commit hook gets its tests in about the time of reading the change and the graph."""
        if self.code_root is None:
            raise NoCodeRoot("this service reads no repository: start it with `graphrag-got serve --code-root "
                             "PATH` (the repository the code graph was extracted from) to answer POST /impact/diff")
        from graphrag_got.code.diff import diff_impact

        result = diff_impact(self.driver(), self.db, self.code_root, req.diff or None, code=self.code,
                             staged=req.staged, hops=req.hops)
        return result.to_data()

    def neighbourhood(self, name: str, *, type_: str | None = None, limit: int = 50) -> Neighbourhood:
        return graph_reads.neighbourhood(self.driver(), self.db, name, self.ontology(), search=self.search, type_=type_,
                                         limit=limit)

    def communities(self, *, level: int | None = None, limit: int = 50, offset: int = 0,
                    members: int = 10) -> CommunityPage:
        return graph_reads.communities_page(self.driver(), self.db, level=level, limit=limit, offset=offset,
                                            members=members)

    def health(self) -> Health:
        model, model_error = self.model_info()
        base: dict[str, Any] = {"llm_provider": self.llm.provider,
                                "model": model, "model_error": model_error, "llm_slots": self.gate.slots,
                                "llm_busy": self.gate.busy}
        try:
            entities, communities = graph_reads.graph_counts(self.driver(), self.db)
        except Neo4jError as exc:
            logger.warning("health: %s", exc)
            return Health(status="degraded", neo4j=False, neo4j_error=NEO4J_DOWN, **base)
        status = "ok" if model_error is None else "degraded"
        return Health(status=status, neo4j=True, entities=entities, communities=communities, **base)
