"""The extraction's progress: chunks done, notes done, calls in flight, the rate in notes per second and
the time left.

One :class:`~graphrag_got.common.progress.ProgressEvent` (step ``extract``) says the chunks already
answered from the cache at once, then one per chunk answered. The rate and the time left count only
what this run asks: a daily build that finds 5,990 of 6,000 notes cached reports the speed of the
ten it asks, not a thousand notes a second. The time left is the work still to do at the pace so
far (:class:`~graphrag_got.common.progress.RateMeter`), a chunk's work being its characters plus
:data:`CHUNK_WORK`: a long chunk costs a small model more than a short one, and every chunk costs its
answer's lines, so the estimate holds when notes of unequal length come in any order. With several
calls in flight (a server's slots) the pace is the aggregate one: work done over time since the first
call started, however many run at once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence

from graphrag_got.common.progress import ProgressCallback, ProgressEvent, RateMeter
from graphrag_got.ingest.chunking import Chunk, ChunkedDocument


#: A chunk's work apart from its text, in characters: the question's own words and the answer's lines
#: (with the embedded models, writing a mention costs about what reading a few hundred characters does).
CHUNK_WORK = 1000


class ExtractProgress:
    """Counts finished chunks and notes (documents whose every chunk is answered) and the calls in flight,
    and reports them. Its methods may be called from worker threads."""

    def __init__(self, docs: Sequence[ChunkedDocument], callback: ProgressCallback | None,
                 clock: Callable[[], float] = time.monotonic):
        self.callback = callback
        self.total = sum(len(d.chunks) for d in docs)
        self.done = self.calls = self.hits = self.failed = 0
        self.notes_total = len(docs)
        self.notes_done = self.notes_asked = 0  # notes_asked: finished by this run's calls
        self._doc = {c.id: d.document.id for d in docs for c in d.chunks}
        self._left = {d.document.id: len(d.chunks) for d in docs}
        self._asked_docs: set[str] = set()
        self._work = {c.id: len(c.text) + CHUNK_WORK for d in docs for c in d.chunks}
        self.notes_done = sum(1 for n in self._left.values() if n == 0)  # a note with no chunk is done
        self.meter = RateMeter(0, clock)
        self.in_flight = 0
        self.asked_chunks = 0  # chunks answered by this run's calls
        self._lock = threading.Lock()

    def cached(self, records: dict[str, bool]) -> None:
        """The chunks answered from the cache (chunk id -> failed), said in one event."""
        with self._lock:
            for chunk_id, failed in records.items():
                self._finish(chunk_id, asked=False)
                self.hits += 1
                self.failed += int(failed)
        if records:
            self._emit("")

    def start(self, todo: Sequence[Chunk]) -> None:
        """The chunks this run asks; the clock of the rate starts now (after the model is loaded)."""
        with self._lock:
            self.meter.total = float(sum(self._work.get(c.id, 0) for c in todo))
            for c in todo:
                self._asked_docs.add(self._doc.get(c.id, ""))
        self.meter.start()

    def note(self, message: str) -> None:
        """Say what happens before the calls start (the counts stay as they are)."""
        self._emit(message)

    def begin(self, chunk_id: str = "") -> None:
        """A call starts (from the worker thread that makes it)."""
        with self._lock:
            self.in_flight += 1
        self._emit(f"asking {chunk_id}" if chunk_id else "")

    def end(self) -> None:
        """A call ended, answered or not (its chunks are counted by :meth:`asked`)."""
        with self._lock:
            self.in_flight -= 1

    def step(self, *, cached: bool, failed: bool, calls: int, chunk_id: str = "") -> None:
        """One chunk answered (``cached``: from the cache)."""
        if cached:
            self.cached({chunk_id: failed})
        else:
            self.asked([(chunk_id, failed, calls)])

    def asked(self, answered: Sequence[tuple[str, bool, int]]) -> None:
        """The chunks one call answered, as (chunk id, failed, calls): their work counts as one unit of
        the pace (they finish together), then one event."""
        if not answered:
            return
        with self._lock:
            for chunk_id, failed, calls in answered:
                self._finish(chunk_id, asked=True)
                self.asked_chunks += 1
                self.failed += int(failed)
                self.calls += calls
            self.meter.add(sum(self._work.get(chunk_id, 0) for chunk_id, _, _ in answered))
        self._emit(answered[-1][0])

    def _finish(self, chunk_id: str, *, asked: bool) -> None:
        self.done += 1
        doc = self._doc.get(chunk_id)
        if doc is None:
            return
        self._left[doc] -= 1
        if self._left[doc] == 0:
            self.notes_done += 1
            self.notes_asked += int(doc in self._asked_docs)

    def stats(self) -> dict[str, object]:
        out: dict[str, object] = {"notes": f"{self.notes_done}/{self.notes_total}"}
        rate = self.meter.rate(self.notes_asked) if self.notes_asked else None
        if rate is not None:
            out["rate"] = f"{rate:.3g} notes/s"
        out.update({"LLM calls": self.calls, "cached": self.hits, "failed": self.failed})
        if self.meter.started is not None:
            out["in flight"] = self.in_flight
            if self.asked_chunks:  # amortized over the calls in flight
                out["s per chunk"] = round(self.meter.elapsed() / self.asked_chunks, 1)
        return out

    def _emit(self, message: str) -> None:
        with self._lock:
            started = self.meter.started is not None
            event = ProgressEvent(step="extract", done=self.done, total=self.total, message=message,
                                  stats=self.stats(), finished=self.done >= self.total, own_eta=started,
                                  eta_s=self.meter.eta() if started else None)
        if self.callback is not None:
            self.callback(event)
