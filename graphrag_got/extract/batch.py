"""Many chunks asked at once: the calls in flight, their progress, and a stop that loses no answer.

:func:`ask_chunks` keeps ``workers`` calls in flight (what the server takes, see
:mod:`graphrag_got.llm.concurrency`) and hands every record to the caller as it arrives, so the per-chunk
cache is written answer by answer whatever the order. When the provider stops answering (an
:class:`~graphrag_got.errors.LLMError` from a call) or the user presses Ctrl-C, no new call starts, the
calls already in flight are waited for and their answers kept, and :class:`StoppedRun` says which
chunks failed and which were not asked: a rerun asks exactly the chunks without an answer.
:class:`ChunkProgress` reports done, in flight and the time left from the aggregate rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.errors import LLMError
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.ingest.chunking import Chunk


class ChunkProgress:
    """Counts finished chunks and the calls in flight, and reports them as progress events
    (step ``extract``): one when a call starts, one when a chunk is done.

    The time left comes from the aggregate rate of this run's answered chunks (answers per second since the
    first call started, however many are in flight), not from the cached chunks that finish at once."""

    def __init__(self, total: int, callback: ProgressCallback | None, clock: Any = time.monotonic):
        self.total, self.done, self.calls, self.hits, self.failed = total, 0, 0, 0, 0
        self.in_flight = 0
        self.answered = 0  # chunks done by a call of this run
        self.callback = callback
        self.clock = clock
        self.first_call: float | None = None
        self._lock = threading.Lock()

    def _event(self, message: str) -> ProgressEvent:
        eta = None
        per_chunk = None
        if self.first_call is not None and self.answered:
            per_chunk = (self.clock() - self.first_call) / self.answered  # amortized over the calls in flight
            eta = per_chunk * (self.total - self.done)
        stats: dict[str, Any] = {"LLM calls": self.calls, "cached": self.hits, "failed": self.failed}
        if self.first_call is not None:
            stats["in flight"] = self.in_flight
        if per_chunk is not None:
            stats["s per chunk"] = round(per_chunk, 1)
        return ProgressEvent(step="extract", done=self.done, total=self.total, message=message, stats=stats,
                             finished=self.done >= self.total, own_eta=self.first_call is not None, eta_s=eta)

    def _emit(self, event: ProgressEvent) -> None:
        if self.callback is not None:
            self.callback(event)

    def note(self, message: str) -> None:
        """Say what happens before the calls start (the counts stay as they are)."""
        with self._lock:
            event = self._event(message)
        self._emit(event)

    def begin(self, chunk_id: str = "") -> None:
        """A call for a chunk starts (called from the worker thread)."""
        with self._lock:
            if self.first_call is None:
                self.first_call = self.clock()
            self.in_flight += 1
            event = self._event(f"asking {chunk_id}" if chunk_id else "")
        self._emit(event)

    def end(self) -> None:
        """A call ended, answered or not (its chunk is counted by :meth:`step`)."""
        with self._lock:
            self.in_flight -= 1

    def step(self, *, cached: bool, failed: bool, calls: int, chunk_id: str = "") -> None:
        with self._lock:
            self.done += 1
            self.hits += int(cached)
            self.answered += int(not cached)
            self.failed += int(failed)
            self.calls += calls
            event = self._event(chunk_id)
        self._emit(event)


@dataclass
class StoppedRun:
    """Why asking stopped early, and the chunks it left without an answer."""

    why: str  # "interrupted" or "provider down: ..."
    failed: list[Chunk] = field(default_factory=list)  # in flight when the provider stopped answering
    not_asked: list[Chunk] = field(default_factory=list)

    def message(self, answered: int, total: int) -> str:
        ids = ", ".join(c.id for c in self.failed[:8]) + (" ..." if len(self.failed) > 8 else "")
        lines = [self.why, f"{answered} of {total} chunks are cached"
                 + (f"; {len(self.failed)} failed when the provider stopped answering ({ids})" if self.failed else "")
                 + (f"; {len(self.not_asked)} not asked" if self.not_asked else "")
                 + ". Rerun the same command to resume: it asks only the chunks without an answer."]
        return "\n".join(lines)


def provider_failure(exc: LLMError, base: dict[str, Any], setup: str | None) -> CacheRecord:
    """The record of a chunk whose call the provider did not answer (asked again by the next run)."""
    from graphrag_got.extract.extraction import FailureReason

    return CacheRecord(**base, status="failed", error=str(exc), raw_responses=[], parsed=None, calls=0,
                       reason=FailureReason.PROVIDER.value, setup=setup)


def ask_chunks(todo: list[Chunk], ask: Callable[[Chunk], CacheRecord], workers: int,
               keep: Callable[[Chunk, CacheRecord], None],
               on_provider_failure: Callable[[Chunk, LLMError], CacheRecord]) -> StoppedRun | None:
    """Ask every chunk of ``todo`` with ``ask``, ``workers`` at a time; ``keep`` gets each record as it arrives
    (in the calling thread). Returns None when every chunk was asked, else why and what is left.

    A Ctrl-C while waiting stops new calls and waits for the ones in flight (their answers are kept); a
    second one stops waiting (KeyboardInterrupt). A call's record handed to ``keep`` when the first Ctrl-C
    came may be handed again (``keep`` must tolerate that: the cache overwrites with the same record)."""
    stop: StoppedRun | None = None
    hurry = False  # a Ctrl-C came: a second one stops waiting for the calls in flight
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="extract")
    futures: dict[Future[CacheRecord], Chunk] = {pool.submit(ask, ch): ch for ch in todo}
    pending: set[Future[CacheRecord]] = set(futures)
    ready: list[Future[CacheRecord]] = []  # finished, not yet handed to keep

    def halt(why: str) -> StoppedRun:
        for f in pending:
            f.cancel()  # not started yet: never asked; running ones finish and are kept
        return StoppedRun(why)

    try:
        while pending or ready:
            try:
                if not ready:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    ready.extend(f for f in done if not f.cancelled())
                while ready:
                    fut = ready[-1]
                    ch = futures[fut]
                    try:
                        rec = fut.result()
                    except LLMError as exc:  # the provider is broken (down, unreachable): stop asking
                        if stop is None:
                            stop = halt(f"provider down: {exc}")
                        if ch not in stop.failed:
                            stop.failed.append(ch)
                        rec = on_provider_failure(ch, exc)
                    except KeyboardInterrupt:  # raised inside the call: this chunk has no answer
                        ready.pop()
                        hurry, stop = True, stop or halt("interrupted")
                        continue
                    keep(ch, rec)
                    ready.pop()
            except KeyboardInterrupt:
                if hurry:
                    raise
                hurry = True  # the next Ctrl-C stops waiting
                stop = stop or halt("interrupted")
    except BaseException:  # a second Ctrl-C, or a bug: leave the calls in flight behind
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)
    if stop is not None:
        stop.not_asked = [futures[f] for f in futures if f.cancelled()]
    return stop
