"""`graphrag-got mcp`: the graph's read-only tools for agent clients, over stdio, with the official
MCP SDK (``mcp.server.mcpserver.MCPServer``).

Tools (all read-only; annotated so clients know they change nothing):

- ``ask(question, mode="auto", answer=True, retrieval=None)``: the same result as ``POST /ask``;
- ``neighbourhood(name, type=None, limit=50)``: an entity by name or alias and its relations;
- ``communities(level=None, limit=20, offset=0)``: community reports;
- ``ontology()``: the classes, relations and attributes the graph obeys.

They share :class:`graphrag_got.service.runtime.ServiceRuntime` with the HTTP service: the same
limits (question length, timeout, LLM slots) and the same READ-mode Neo4j sessions. Errors reach
the client as tool errors carrying our message (what is wrong, what to do); a line the server
cannot parse gets a JSON-RPC error (:mod:`graphrag_got.service.mcp_stdio`). stdout is the protocol
channel: nothing here prints, logs go to stderr.
"""

from __future__ import annotations

from typing import Any, Awaitable, Callable, Literal, TypeVar

import anyio
import neo4j
from langchain_core.language_models import BaseChatModel
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ToolAnnotations
from pydantic import ValidationError

from graphrag_got import __version__
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError
from graphrag_got.service.mcp_stdio import answering_stdio
from graphrag_got.service.models import AskRequest
from graphrag_got.service.runtime import ServiceRuntime

T = TypeVar("T")

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
INSTRUCTIONS = (
    "Questions over a knowledge graph built from a text corpus under an ontology. Call `ontology` to see "
    "which classes and relations exist, `neighbourhood` for what the graph states about one entity (with the "
    "evidence sentences), `communities` for the themes, and `ask` for a cited answer: each claim carries "
    "[F1]-style ids resolved in `citations`; claims the cited sources do not support are not in the answer but "
    "in `left_out`, each with its reason. Every tool is read-only."
)


async def _tool_call(work: Callable[[], Awaitable[T]]) -> T:
    """Our errors become tool errors with their own message (the SDK hides other exceptions' text)."""
    try:
        return await work()
    except GraphragGotError as exc:
        raise ToolError(str(exc)) from exc


def _arguments_problem(exc: ValidationError) -> str:
    """pydantic's errors as one readable line: ``mode: must be one of 'auto', ...``."""
    parts = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()) if p != "model") or "arguments"
        parts.append(f"{where}: {err.get('msg', 'invalid').lower()}")
    return "; ".join(parts)


class GraphServer(MCPServer):
    """The SDK's server, stricter on arguments: an argument the tool does not take is refused (the
    HTTP API answers 422 to it; the SDK would drop it silently) and a wrong type gets one readable
    line instead of pydantic's raw report."""

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        if tool is not None:
            known = set((tool.parameters or {}).get("properties", {}))
            unknown = sorted(set(arguments) - known)
            if unknown:
                raise ToolError(f"tool {name} does not take {', '.join(repr(u) for u in unknown)}; its arguments are "
                                f"{', '.join(sorted(known)) or 'none'}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise ToolError(f"invalid arguments for tool {name}: {_arguments_problem(exc.__cause__)}") from None
            raise

    async def run_answering_stdio(self) -> None:
        """Serve over stdin/stdout like the SDK's ``run("stdio")``, through our transport, which
        answers a line it cannot parse with a JSON-RPC error instead of dropping it
        (:mod:`graphrag_got.service.mcp_stdio`)."""
        server = self._lowlevel_server
        async with answering_stdio() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def ontology_summary(runtime: ServiceRuntime) -> dict[str, Any]:
    onto = runtime.ontology()
    return {
        "name": onto.name,
        "description": onto.description,
        "classes": {name: {"comment": k.comment,
                           "properties": {p: spec.describe() for p, spec in k.properties.items()}}
                    for name, k in onto.classes.items()},
        "relations": [{"name": r.name, "domain": list(r.domain), "range": list(r.range), "symmetric": r.symmetric,
                       "comment": r.comment} for r in onto.relations],
        "relation_attributes": {a: spec.describe() for a, spec in onto.relation_attributes.items()},
        "text": onto.describe(),
    }


def build_server(settings: Settings, *, chat: BaseChatModel | None = None,
                 driver: neo4j.Driver | None = None) -> GraphServer:
    """The MCP server for ``settings`` (``chat``/``driver`` as in :func:`graphrag_got.service.create_app`)."""
    runtime = ServiceRuntime(settings.neo4j, search=settings.search, llm=settings.llm, files=settings.files,
                             embedding=settings.embedding, service=settings.service, chat=chat, driver=driver)
    server = GraphServer(name="graphrag-got", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(annotations=READ_ONLY)
    async def ask(question: str, mode: Literal["auto", "local", "global", "drift"] = "auto", answer: bool = True,
                  retrieval: Literal["graph", "vector", "hybrid"] | None = None) -> dict[str, Any]:
        """Answer a question from the graph, with citations ([F1] facts, [C1] excerpts, [R1] reports).

        mode: auto routes the question (local for named entities, global for corpus-wide questions,
        drift for how things relate); answer=false retrieves the sources only, without the LLM.
        In the claims answer format, `left_out` lists the claims left out of the answer because the
        sources they cite do not support them, with the reason of each; a kept claim with `cited_as`
        was re-cited (the ids it had did not state it; the ids it shows do), one with `pasted` pasted a
        context line and is shown as the sentence of the fact it pasted. `answer_form` says how the
        answer was made: `written` by the model, or `extractive` (built on the sources' own sentences).
        """
        async def work() -> dict[str, Any]:
            runtime.check_question(question)
            try:
                req = AskRequest(question=question, mode=mode, answer=answer, retrieval=retrieval)
            except ValidationError as exc:  # the SDK validated the types already; this is a safety net
                raise ToolError(f"invalid arguments: {exc.errors()[0]['msg']}") from None
            return await runtime.run(lambda: runtime.ask(req), llm=answer)

        return await _tool_call(work)

    @server.tool(annotations=READ_ONLY)
    async def neighbourhood(name: str, type: str | None = None, limit: int = 50) -> dict[str, Any]:
        """An entity by name or alias (optionally of one ontology class) and its relations, most
        supported first, each with its attributes and the evidence sentences and their documents."""
        async def work() -> dict[str, Any]:
            res = await runtime.run(lambda: runtime.neighbourhood(name, type_=type, limit=limit), llm=False)
            return res.model_dump(mode="json")

        return await _tool_call(work)

    @server.tool(annotations=READ_ONLY)
    async def communities(level: int | None = None, limit: int = 20, offset: int = 0) -> dict[str, Any]:
        """Communities of the graph (groups of closely related entities) with their report title,
        summary and first members; filter by level, page with limit/offset."""
        async def work() -> dict[str, Any]:
            res = await runtime.run(lambda: runtime.communities(level=level, limit=limit, offset=offset), llm=False)
            return res.model_dump(mode="json")

        return await _tool_call(work)

    @server.tool(name="ontology", annotations=READ_ONLY)
    async def ontology_tool() -> dict[str, Any]:
        """The ontology the graph obeys: entity classes with their properties, relations with their
        domain and range, relation attributes, and the same as readable text."""
        return await _tool_call(lambda: runtime.run(lambda: ontology_summary(runtime), llm=False))

    return server


def serve_stdio(settings: Settings) -> None:
    """Run the server on stdin/stdout until the client closes the connection."""
    anyio.run(build_server(settings).run_answering_stdio)
