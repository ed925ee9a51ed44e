"""`graphrag-got serve`: a read-only HTTP API over the graph (FastAPI) and the web page on it.

    from graphrag_got.service import create_app
    app = create_app(settings)          # run it with uvicorn; see graphrag_got.commands.serve

The MCP server (``graphrag_got.mcp_server``) offers the same operations as tools and shares
:class:`~graphrag_got.service.runtime.ServiceRuntime` with the HTTP app.
"""

from __future__ import annotations

from .app import create_app
from .runtime import ServiceRuntime

__all__ = ["ServiceRuntime", "create_app"]
