"""Many calls at once: the calls in flight, and a stop that loses no answer.

:func:`ask_batches` keeps ``workers`` calls in flight (what the server takes, see
:mod:`graphrag_got.llm.concurrency`); a call answers a batch of chunks (one chunk, or several short ones
for the mentions strategy) and its records are handed to the caller as they arrive, so the per-chunk
cache is written answer by answer whatever the order. When the provider stops answering (an
:class:`~graphrag_got.errors.LLMError` from a call) or the user presses Ctrl-C, no new call starts, the
calls already in flight are waited for and their answers kept, and :class:`StoppedRun` says which
chunks failed and which were not asked: a rerun asks exactly the chunks without an answer. The
progress (done, in flight, time left from the aggregate rate) is :mod:`graphrag_got.extract.progress`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from graphrag_got.errors import LLMError
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.ingest.chunking import Chunk


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


def ask_batches(batches: list[list[Chunk]], ask: Callable[[list[Chunk]], list[CacheRecord]], workers: int,
                keep: Callable[[list[Chunk], list[CacheRecord]], None],
                on_provider_failure: Callable[[Chunk, LLMError], CacheRecord]) -> StoppedRun | None:
    """Ask every batch with ``ask`` (one record per chunk of the batch, in its order), ``workers`` at a time;
    ``keep`` gets each batch's records as they arrive (in the calling thread). Returns None when every
    batch was asked, else why and what is left.

    A Ctrl-C while waiting stops new calls and waits for the ones in flight (their answers are kept); a
    second one stops waiting (KeyboardInterrupt). A call's records handed to ``keep`` when the first Ctrl-C
    came may be handed again (``keep`` must tolerate that: the cache overwrites with the same record)."""
    stop: StoppedRun | None = None
    hurry = False  # a Ctrl-C came: a second one stops waiting for the calls in flight
    pool = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="extract")
    futures: dict[Future[list[CacheRecord]], list[Chunk]] = {pool.submit(ask, batch): batch for batch in batches}
    pending: set[Future[list[CacheRecord]]] = set(futures)
    ready: list[Future[list[CacheRecord]]] = []  # finished, not yet handed to keep

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
                    batch = futures[fut]
                    try:
                        recs = fut.result()
                    except LLMError as exc:  # the provider is broken (down, unreachable): stop asking
                        if stop is None:
                            stop = halt(f"provider down: {exc}")
                        stop.failed.extend(ch for ch in batch if ch not in stop.failed)
                        recs = [on_provider_failure(ch, exc) for ch in batch]
                    except KeyboardInterrupt:  # raised inside the call: these chunks have no answer
                        ready.pop()
                        hurry, stop = True, stop or halt("interrupted")
                        continue
                    keep(batch, recs)
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
        stop.not_asked = [ch for f, batch in futures.items() if f.cancelled() for ch in batch]
    return stop
