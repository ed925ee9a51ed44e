"""Progress reporting: library steps emit :class:`ProgressEvent`s to a callback; only the CLI renders them.

A long step (extraction, load, summaries, a benchmark) calls ``progress(ProgressEvent(...))`` once
when it knows its total and again after each unit of work. The CLI turns the events into progress
bars (``graphrag_got.commands.render``); Python callers pass any callable, or nothing.
Library code never prints: messages that are not progress go through :mod:`logging`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class ProgressEvent:
    """Where one step stands.

    ``step`` names the work ("extract", "load", "summaries"); ``done`` of ``total`` units are
    finished (``total`` None when unknown); ``message`` is a short human line about the latest unit;
    ``stats`` carries counters the renderer may show (LLM calls, cache hits, failures, calls in flight...).
    ``own_eta``: the step estimates the time left itself, in ``eta_s`` (None: not known yet), for a
    step whose rate the renderer cannot see from ``done`` alone (an extraction whose cached chunks
    finish at once, then several calls at a time); otherwise the renderer estimates it from done/elapsed.
    Events may come from worker threads.
    """

    step: str
    done: int = 0
    total: int | None = None
    message: str = ""
    stats: dict[str, Any] = field(default_factory=dict)
    finished: bool = False
    own_eta: bool = False
    eta_s: float | None = None


class ProgressCallback(Protocol):
    def __call__(self, event: ProgressEvent) -> None: ...


def no_progress(event: ProgressEvent) -> None:
    """The default callback: ignore every event."""


class RateMeter:
    """The rate of the work a step does itself and the time it has left, from a clock.

    ``total`` is the work to do (any unit: characters of text, calls); work found already done is
    not counted, so a rerun that skips most of it does not make the rate look high. The rate is the
    work done over the time since :meth:`start` (the first unit's start, not the step's: loading a
    model is not part of it). The time left is the work left at the pace since the first unit
    finished, once a second one has: the first also pays what is paid once (a model loaded on first
    use, a shared prompt evaluated once), and counting it would overstate every unit after it.
    None until some work is done.
    """

    def __init__(self, total: float, clock: Callable[[], float] = time.monotonic):
        self.total, self.done = float(total), 0.0
        self.clock = clock
        self.started: float | None = None
        self._first: tuple[float, float] | None = None  # (time, work done) when the first unit finished
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self.started is None:
                self.started = self.clock()

    def add(self, work: float) -> None:
        with self._lock:
            now = self.clock()
            if self.started is None:
                self.started = now
            self.done += work
            if self._first is None:
                self._first = (now, self.done)

    def elapsed(self) -> float:
        return 0.0 if self.started is None else max(0.0, self.clock() - self.started)

    def rate(self, count: float | None = None) -> float | None:
        """``count`` (default: the work done) per second since the start; None before any time passed."""
        elapsed = self.elapsed()
        return None if elapsed <= 0 else (self.done if count is None else count) / elapsed

    def eta(self) -> float | None:
        """Seconds left (0 when all is done; None before any work is done)."""
        if self.done >= self.total:
            return 0.0
        if self._first is not None and self.done > self._first[1]:
            since = self.clock() - self._first[0]
            if since > 0:
                return (self.total - self.done) * since / (self.done - self._first[1])
        rate = self.rate()
        return None if not rate else (self.total - self.done) / rate
