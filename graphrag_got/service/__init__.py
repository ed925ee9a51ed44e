"""`graphrag-got serve`: a read-only HTTP API over the graph (FastAPI) and the web page on it.

    from graphrag_got.service import create_app
    app = create_app(settings)          # run it with uvicorn; see graphrag_got.commands.serve

The MCP server (``graphrag_got.service.mcp``) offers the same operations as tools and shares
:class:`~graphrag_got.service.runtime.ServiceRuntime` with the HTTP app.
"""

from __future__ import annotations

from graphrag_got.service.app import create_app
from graphrag_got.service.runtime import ServiceRuntime

__all__ = ["ServiceRuntime", "create_app"]
