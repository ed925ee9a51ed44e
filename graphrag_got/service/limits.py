"""Request limits of the service: input size, a time budget per request, and a cap on the
requests that call the LLM at once.

Blocking work (the Neo4j driver, the chat model) runs in worker threads. A thread cannot be
killed, so on timeout the request is answered (504) and the thread is left to finish on its own;
an LLM slot is given back only when its thread really ends, so the cap holds even then.
"""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, TypeVar

from graphrag_got.errors import GraphragGotError

T = TypeVar("T")


class ServiceLimitError(GraphragGotError):
    """A request was refused or stopped by a service limit (the client may retry differently)."""


class InputTooLarge(ServiceLimitError):
    """A question (or the request body) is longer than the service accepts."""

    def __init__(self, message: str, *, limit: int, length: int):
        super().__init__(message)
        self.limit = limit
        self.length = length


class ServiceBusy(ServiceLimitError):
    """Every LLM slot is taken: retry later, or ask with ``answer: false`` (retrieval only)."""


class ServiceTimeout(ServiceLimitError):
    """The request took longer than the time budget."""


class LLMGate:
    """At most ``slots`` LLM-backed requests at once; the next one is refused, not queued (a queue
    in front of a CPU model only turns into timeouts)."""

    def __init__(self, slots: int):
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.slots = slots
        self._sem = threading.BoundedSemaphore(slots)
        self._lock = threading.Lock()
        self._busy = 0

    def try_acquire(self) -> bool:
        if not self._sem.acquire(blocking=False):
            return False
        with self._lock:
            self._busy += 1
        return True

    def release(self) -> None:
        with self._lock:
            self._busy -= 1
        self._sem.release()

    @property
    def busy(self) -> int:
        with self._lock:
            return self._busy


async def run_blocking(executor: ThreadPoolExecutor, fn: Callable[[], T], timeout_s: float, *,
                       on_done: Callable[[], None] | None = None) -> T:
    """``fn()`` in a worker thread, awaited at most ``timeout_s`` seconds (ServiceTimeout after that).

    ``on_done`` runs in the worker when ``fn`` returns or raises, whether or not the caller still waits.
    """

    def job() -> T:
        try:
            return fn()
        finally:
            if on_done is not None:
                on_done()

    loop = asyncio.get_running_loop()
    try:
        future = loop.run_in_executor(executor, job)
    except RuntimeError:  # executor shut down while the server stops
        if on_done is not None:
            on_done()
        raise ServiceLimitError("the service is shutting down; retry in a moment") from None
    try:
        return await asyncio.wait_for(asyncio.shield(future), timeout_s)
    except asyncio.TimeoutError:
        # the worker goes on; read its outcome when it ends so no "exception never retrieved" is logged
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        raise ServiceTimeout(f"the request took longer than {timeout_s:g} s (GRAPHRAG_SERVICE_TIMEOUT); "
                             "ask a narrower question, use answer=false, or raise the timeout") from None
