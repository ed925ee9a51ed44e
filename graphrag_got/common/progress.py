"""Progress reporting: library steps emit :class:`ProgressEvent`s to a callback; only the CLI renders them.

A long step (extraction, load, summaries, a benchmark) calls ``progress(ProgressEvent(...))`` once
when it knows its total and again after each unit of work. The CLI turns the events into progress
bars (``graphrag_got.commands.render``); Python callers pass any callable, or nothing.
Library code never prints: messages that are not progress go through :mod:`logging`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


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
