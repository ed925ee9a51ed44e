"""`graphrag-got mcp`: the read-only graph tools for agent clients (MCP over stdio)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings



def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "mcp", help="serve the read-only graph tools (ask, neighbourhood, communities, ontology) to an MCP "
                    "client over stdio",
        description="Model Context Protocol server on stdin/stdout, for agent clients: register the command "
                    "`graphrag-got mcp` (with the same environment as the CLI) in the client. Nothing but the "
                    "protocol is written to stdout; logs go to stderr.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.service.mcp import serve_stdio

    serve_stdio(settings)  # stdout is the protocol: print nothing here
    return 0
