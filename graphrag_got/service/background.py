"""Run the service in a background thread of this process: for tests, benchmarks and notebooks.

    with serve_in_thread(create_app(settings)) as url:     # "http://127.0.0.1:<free port>"
        httpx.get(url + "/health")

Port 0 lets the OS pick a free port; the real one is read back from the listening socket, so
there is no race between choosing a port and binding it.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Iterator

import uvicorn
from starlette.types import ASGIApp

from graphrag_got.errors import GraphragGotError


@contextlib.contextmanager
def serve_in_thread(app: ASGIApp, host: str = "127.0.0.1", port: int = 0, *,
                    startup_timeout_s: float = 30.0) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a daemon thread; yields the base URL, stops the server on exit."""
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None, access_log=False, lifespan="on",
                                           timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, name="graphrag-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise GraphragGotError(f"the service did not start on {host}:{port} within {startup_timeout_s:g} s")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
