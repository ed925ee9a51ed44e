"""The FastAPI application of ``graphrag-got serve``: a read-only HTTP API over the graph and the
web page that uses it.

    app = create_app(settings)                      # uvicorn.run(app, host="127.0.0.1", port=8765)

Endpoints: ``POST /ask``, ``GET /entities/{name}``, ``GET /communities``, ``GET /health``, ``GET /``
(the page), ``/static/*`` and, when started for a repository (``serve --code-root``), ``POST
/impact/diff`` (``ask impact --diff`` answered by the running process). There is no write path and no Cypher endpoint: questions and names
reach Neo4j only as query parameters, in READ-mode sessions. Errors are JSON
``{"error": {"code", "message", "detail"}}`` with the status saying whose fault it is.
"""

from __future__ import annotations

import json
import logging
import time
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any, AsyncIterator

import neo4j
from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from langchain_core.language_models import BaseChatModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from graphrag_got import __version__
from graphrag_got.common.once import log_warning_counts
from graphrag_got.common.sanitize import replace_surrogates
from graphrag_got.config import Settings
from graphrag_got.code.gitdiff import GitError
from graphrag_got.errors import (ConfigError, GraphragGotError, LLMError, ModeUnavailable, Neo4jError, OntologyError,
                                 SearchError)
from graphrag_got.search.answer import AskResult
from graphrag_got.service.graph_reads import MAX_COMMUNITIES, MAX_MEMBERS, MAX_RELATIONS, BadLookup, EntityNotFound
from graphrag_got.service.limits import InputTooLarge, ServiceBusy, ServiceTimeout
from graphrag_got.service.models import AskRequest, CommunityPage, DiffRequest, ErrorResponse, Health, Neighbourhood
from graphrag_got.service.review_routes import add_review_routes
from graphrag_got.service.runtime import NEO4J_DOWN, EmptyQuestion, NoCodeRoot, ServiceRuntime

logger = logging.getLogger(__name__)
access_log = logging.getLogger("graphrag_got.service.access")
#: Host names always accepted in the Host header (loopback); ``--host`` and a setting add more.
LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "::1")

STATIC = resources.files("graphrag_got") / "service" / "static"
#: The page loads nothing from elsewhere (the machine it runs on may have no internet).
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                               "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
}
BODY_OVERHEAD = 4096  # bytes a request body may hold beyond the question (keys, mode, JSON escapes)


class SafeJSONResponse(JSONResponse):
    """Starlette's JSON response whose text is always valid UTF-8: a lone surrogate that reached a
    value (input echoed in a message or a result) becomes U+FFFD instead of failing the response
    with HTTP 500."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"))
        return replace_surrogates(text).encode("utf-8")


def error_response(status: int, code: str, message: str, **detail: Any) -> JSONResponse:
    body = {"error": {"code": code, "message": message, "detail": detail}}
    return SafeJSONResponse(body, status_code=status)


def _status_of(exc: GraphragGotError) -> tuple[int, str, dict[str, Any]]:
    """HTTP status, error code and detail for one of our errors."""
    if isinstance(exc, InputTooLarge):
        return 413, "too_large", {"limit": exc.limit, "length": exc.length}
    if isinstance(exc, ServiceBusy):
        return 503, "busy", {}
    if isinstance(exc, ServiceTimeout):
        return 504, "timeout", {}
    if isinstance(exc, EntityNotFound):
        return 404, "entity_not_found", {"suggestions": exc.suggestions}
    if isinstance(exc, (BadLookup, EmptyQuestion, ConfigError)):  # ConfigError: a bad revision or hops
        return 422, "invalid_request", {}
    if isinstance(exc, NoCodeRoot):
        return 409, "no_code_root", {}
    if isinstance(exc, GitError):
        return 422, "git_failed", {}
    if isinstance(exc, Neo4jError):
        return 503, "neo4j_unavailable", {}
    if isinstance(exc, LLMError):
        return 502, "llm_failed", {}
    if isinstance(exc, ModeUnavailable):  # the graph's state, not the request, is what is missing
        return 409, "mode_unavailable", {"mode": exc.mode, "command": exc.command}
    if isinstance(exc, SearchError):
        return 400, "search_failed", {}
    if isinstance(exc, OntologyError):
        return 500, "ontology_error", {}
    return 500, "error", {}


def host_name(header: str) -> str:
    """The name in a Host header, without port or IPv6 brackets, lower-case (``[::1]:8766`` -> ``::1``)."""
    value = header.strip().lower()
    if value.startswith("["):
        return value[1:value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


class HostAllowlist:
    """Answer 400 to requests whose Host header names a host not in ``allowed``: a web page the user
    visits cannot rebind its own name to 127.0.0.1 and read the graph (DNS rebinding)."""

    def __init__(self, app: ASGIApp, allowed: set[str]):
        self.app = app
        self.allowed = allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in {"http", "websocket"}:
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"host", b"").decode("latin-1")
        name = host_name(header)
        if name in self.allowed:
            await self.app(scope, receive, send)
            return
        logger.warning("refused a request for host %r (not in the allowed hosts; add it to "
                       "GRAPHRAG_SERVICE_ALLOWED_HOSTS if it is yours)", header[:100])
        response = error_response(400, "host_not_allowed",
                                  f"this service does not answer for host {header[:100]!r}; use one of "
                                  f"{', '.join(sorted(self.allowed))} or add the name to "
                                  "GRAPHRAG_SERVICE_ALLOWED_HOSTS",
                                  allowed=sorted(self.allowed))
        await response(scope, receive, send)


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` (413) before the app reads them whole: by
    Content-Length when sent, else by counting the streamed chunks."""

    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send, int(declared) if declared.isdigit() else -1)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge(seen, self.max_bytes, scope.get("path", ""))
            return message

        try:
            await self.app(scope, counted, send)
        except _TooLarge as exc:
            await self._refuse(scope, receive, send, exc.length)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, length: int) -> None:
        response = error_response(413, "too_large", too_large_message(scope.get("path", ""), self.max_bytes),
                                  limit=self.max_bytes, length=length)
        await response(scope, receive, send)


def too_large_message(path: str, limit: int) -> str:
    """What a client sending a body over ``limit`` bytes to ``path`` should do instead."""
    if path.rstrip("/") == "/impact/diff":  # its body names a change; the change itself is read by the server
        return (f"the request body is larger than {limit} bytes; POST /impact/diff takes a small JSON object "
                "({\"diff\": \"REV\", \"staged\": false, \"hops\": null}) naming the change, which the service "
                "reads from its own repository: send the revision, not the diff")
    if path.rstrip("/") == "/examples":  # a passage's corrected facts: the CLI takes any size
        return (f"the request body is larger than {limit} bytes; correct a passage this large with "
                "`graphrag-got examples add CHUNK_ID` instead")
    return (f"the request body is larger than {limit} bytes; send a shorter question "
            "(GRAPHRAG_SERVICE_MAX_QUESTION_CHARS)")


class _TooLarge(StarletteHTTPException):
    """Raised from inside the app while it reads the body (FastAPI turns other exceptions there
    into 400), answered by the HTTP error handler of :func:`create_app` or by :class:`BodyLimit`."""

    def __init__(self, length: int, limit: int, path: str = ""):
        super().__init__(413, too_large_message(path, limit))
        self.length = length
        self.limit = limit


def create_app(settings: Settings, *, chat: BaseChatModel | None = None,
               driver: neo4j.Driver | None = None, host: str = "127.0.0.1", code_root: Path | None = None,
               allow_examples: bool = False) -> FastAPI:
    """The service for ``settings``. ``chat``: the model answering questions (default: the configured
    one, built on the first question that needs it); ``driver``: a Neo4j driver to use (default: one
    connected on first use and closed when the app stops); ``host``: the address it listens on (its
    name is accepted in the Host header, with loopback names and GRAPHRAG_SERVICE_ALLOWED_HOSTS);
    ``code_root``: the git repository ``POST /impact/diff`` reads (None: that endpoint answers 409);
    ``allow_examples``: ``POST /examples`` stores corrected passages from the review page (else 403)."""
    runtime = ServiceRuntime(settings.neo4j, search=settings.search, llm=settings.llm, files=settings.files,
                             embedding=settings.embedding, service=settings.service, chat=chat, driver=driver,
                             code=settings.code, code_root=code_root)
    allowed = {*LOOPBACK_HOSTS, host_name(host), *settings.service.allowed_hosts}

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        runtime.close()
        log_warning_counts(logger)

    app = FastAPI(title="graphrag-got", version=__version__, lifespan=lifespan, default_response_class=SafeJSONResponse,
                  description="Read-only questions over an ontology-constrained knowledge graph.",
                  docs_url=None, redoc_url=None)  # the interactive docs load scripts from a CDN
    app.state.runtime = runtime
    # a question of the longest length, every character escaped as \uXXXX in the JSON body
    app.add_middleware(BodyLimit, max_bytes=settings.service.max_question_chars * 6 + BODY_OVERHEAD)

    @app.middleware("http")
    async def security_headers(request: Request, call_next: Any) -> Any:
        start = time.perf_counter()
        response = await call_next(request)
        for k, v in SECURITY_HEADERS.items():
            response.headers.setdefault(k, v)
        client = request.client.host if request.client else "-"
        access_log.info("%s %s %s %d %.0f ms", client, request.method, request.url.path, response.status_code,
                        (time.perf_counter() - start) * 1000)
        return response

    app.add_middleware(HostAllowlist, allowed=allowed)  # outermost: a foreign host reaches nothing

    @app.exception_handler(GraphragGotError)
    async def our_error(_: Request, exc: GraphragGotError) -> JSONResponse:
        status, code, detail = _status_of(exc)
        if status >= 500:
            logger.warning("%s: %s", code, exc)
        if isinstance(exc, Neo4jError):  # its text names the URI and the driver's own words: log only
            return error_response(status, code, NEO4J_DOWN, **detail)
        return error_response(status, code, str(exc), **detail)

    @app.exception_handler(RequestValidationError)
    async def invalid(_: Request, exc: RequestValidationError) -> JSONResponse:
        problems = [{"where": ".".join(str(p) for p in e.get("loc", ())), "problem": e.get("msg", "")}
                    for e in exc.errors()]
        text = "; ".join(f"{p['where']}: {p['problem']}" for p in problems)
        return error_response(422, "invalid_request", f"the request is not valid: {text}", problems=problems)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        if isinstance(exc, _TooLarge):
            return error_response(413, "too_large", str(exc.detail), limit=exc.limit, length=exc.length)
        messages = {404: "no such endpoint; the service has POST /ask, GET /entities/{name}, GET /communities, "
                         "GET /health, GET / and POST /impact/diff",
                    405: "this endpoint does not take that method (the service is read-only: only POST /ask "
                         "and POST /impact/diff take a body)"}
        response = error_response(exc.status_code, "http_error", messages.get(exc.status_code, str(exc.detail)))
        for k, v in (exc.headers or {}).items():
            response.headers[k] = v
        return response

    @app.exception_handler(Exception)
    async def unexpected(_: Request, exc: Exception) -> JSONResponse:
        logger.exception("unexpected error in a request")
        return error_response(500, "internal_error", f"internal error ({type(exc).__name__}); see the server log")

    errors: dict[int | str, dict[str, Any]] = {s: {"model": ErrorResponse} for s in (413, 422, 503, 504)}

    @app.post("/ask", response_model=AskResult, responses=errors,
              summary="Answer a question (mode auto, local, global or drift)",
              description="The cited answer and its sources. In the claims format, `claims` are the claims shown "
                          "and `left_out` the claims left out because the sources they cite do not support them "
                          "(each with its `reason` and `detail`); a claim with `cited_as` was re-cited: the "
                          "ids it had did not state it, the ids it shows do.")
    async def ask(req: AskRequest) -> JSONResponse:
        runtime.check_question(req.question)
        result = await runtime.run(lambda: runtime.ask(req), llm=req.answer)
        return SafeJSONResponse(result)

    @app.post("/impact/diff", responses={**errors, 409: {"model": ErrorResponse}},
              summary="The tests a change of the repository reaches (ask impact --diff --json)",
              description="The change of the repository the service was started for (`serve --code-root`): "
                          "`diff` REV, A..B or A...B (none: the working tree vs HEAD), or `staged`. The body is "
                          "`ask impact --diff --json`'s (format graphrag_got.impact-diff/2, with `pytest_args`). "
                          "It reads git and the graph only.")
    async def impact_diff(req: DiffRequest) -> JSONResponse:
        return SafeJSONResponse(await runtime.run(lambda: runtime.diff_impact(req), llm=False))

    @app.get("/entities/{name:path}", response_model=Neighbourhood, responses=errors,
             summary="An entity (by name or alias) and its relations, with attributes and evidence")
    async def entity(name: str, type: str | None = Query(None, description="only this class"),
                     limit: int = Query(50, ge=1, le=MAX_RELATIONS)) -> Neighbourhood:
        return await runtime.run(lambda: runtime.neighbourhood(name, type_=type, limit=limit), llm=False)

    @app.get("/communities", response_model=CommunityPage, responses=errors,
             summary="Communities with their reports, by level")
    async def communities(level: int | None = Query(None, ge=0), limit: int = Query(50, ge=1, le=MAX_COMMUNITIES),
                          offset: int = Query(0, ge=0), members: int = Query(10, ge=0, le=MAX_MEMBERS)
                          ) -> CommunityPage:  # fmt: skip
        return await runtime.run(lambda: runtime.communities(level=level, limit=limit, offset=offset,
                                                             members=members), llm=False)

    @app.get("/health", response_model=Health, summary="Is Neo4j reachable, how big is the graph, which model")
    async def health() -> JSONResponse:
        report = await runtime.run(runtime.health, llm=False)
        return SafeJSONResponse(report.model_dump(mode="json"), status_code=200 if report.neo4j else 503)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), media_type="text/html; charset=utf-8")

    add_review_routes(app, settings, allow_examples=allow_examples)  # /review pages, /examples (graph untouched)
    app.mount("/static", StaticFiles(directory=str(STATIC)), name="static")
    return app
