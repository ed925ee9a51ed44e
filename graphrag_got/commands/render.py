"""What the CLI shows on stderr: log records (rich) and progress events (bars, or plain lines).

Library code reports progress with :class:`~graphrag_got.common.progress.ProgressEvent` and messages with
:mod:`logging`; this module is the only place that turns them into text.

    configure_logging(verbosity)            # WARNING, -v INFO, -vv DEBUG, to stderr
    with progress_bar() as progress:        # a ProgressCallback
        load_extraction(..., progress=progress)

On a terminal each step gets a live ``rich.progress`` bar (done/total, ETA, stats); elsewhere (CI
logs, a file) every step prints plain lines, at most one per ``min_interval`` seconds, plus its
first and its last. The callback also takes a plain string (the older ``progress=print`` style
some library functions still use): it is shown as one line above the bars.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

from rich.console import Console
from rich.logging import RichHandler
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text

from graphrag_got.common.progress import ProgressEvent

#: Attribute set on the log handler we install, so a second call replaces it instead of adding one.
_HANDLER_MARK = "_graphrag_got_cli"

_console: Console | None = None


def stderr_console() -> Console:
    """The one console of the process for stderr: log lines and bars share it so they do not garble."""
    global _console
    if _console is None:
        _console = Console(stderr=True)
    return _console


def log_level(verbosity: int) -> int:
    """0 -> WARNING, 1 (-v) -> INFO, 2 or more (-vv) -> DEBUG."""
    return logging.WARNING if verbosity <= 0 else logging.INFO if verbosity == 1 else logging.DEBUG


def configure_logging(verbosity: int = 0, console: Console | None = None) -> logging.Handler:
    """Send log records of every library to stderr through rich, at the level ``verbosity`` picks.

    Replaces the handler a previous call installed (tests call ``main`` many times) and leaves every
    other handler alone. Returns the handler.
    """
    level = log_level(verbosity)
    handler = RichHandler(
        console=console or stderr_console(),
        level=level,
        show_time=verbosity >= 2,
        show_path=verbosity >= 2,
        markup=False,
        rich_tracebacks=False,
    )
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler


# ----------------------------------------------------------------------------------- formatting

#: Words written in capitals when a stats key is turned into a label ("llm_calls" -> "LLM calls").
_ACRONYMS = {"llm": "LLM", "llms": "LLMs", "ms": "ms"}


def _label(key: str) -> str:
    return " ".join(_ACRONYMS.get(w, w) for w in key.replace("_", " ").split())


def format_stats(stats: Mapping[str, Any]) -> str:
    """``{"llm_calls": 12, "cached": 3}`` -> ``"12 LLM calls · 3 cached"`` (None values are skipped)."""
    parts = []
    for key, value in stats.items():
        if value is None:
            continue
        if isinstance(value, bool):
            parts.append(f"{_label(key)}: {'yes' if value else 'no'}")
        elif isinstance(value, int):
            parts.append(f"{value:,} {_label(key)}")
        elif isinstance(value, float):
            parts.append(f"{value:,.1f} {_label(key)}")
        else:
            parts.append(f"{_label(key)}: {value}")
    return " · ".join(parts)


def format_seconds(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, secs = divmod(int(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


def _tail(event: ProgressEvent) -> str:
    """Stats and message of an event, joined (empty parts left out)."""
    return " · ".join(p for p in (format_stats(event.stats), event.message.strip()) if p)


# ---------------------------------------------------------------------------------- renderers


def _complete(event: ProgressEvent) -> bool:
    return event.finished or (event.total is not None and event.done >= event.total)


def _key(event: ProgressEvent) -> tuple[int, int | None, str]:
    """What a line shows of an event, apart from times."""
    return event.done, event.total, _tail(event)


@dataclass
class _StepState:
    started: float
    first_done: int
    last_emit: float
    last: ProgressEvent
    pending: bool = False  # ``last`` arrived but was not printed (throttled)
    closed: bool = False  # its final line was printed
    last_line: str = ""


class LineRenderer:
    """Plain lines for logs that are not a terminal: first event, then <= 1 line/``min_interval`` s, then last."""

    def __init__(self, write: Callable[[str], None], *, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic):
        self._write, self._min_interval, self._clock = write, min_interval, clock
        self._steps: dict[str, _StepState] = {}
        self._lock = threading.Lock()

    def __call__(self, event: ProgressEvent | str) -> None:
        with self._lock:
            if isinstance(event, str):
                self._write(event)
                return
            now = self._clock()
            st = self._steps.get(event.step)
            complete = _complete(event)
            if st is None or (st.closed and not complete):  # a step that starts (again)
                st = self._steps[event.step] = _StepState(now, event.done, now, event)
                self._emit(st, now)
                return
            if st.closed:  # complete again (say, a `finished` event after done == total)
                if _key(event) != _key(st.last):
                    st.last = event
                    self._emit(st, now)
                return
            st.last = event
            if complete or now - st.last_emit >= self._min_interval:
                self._emit(st, now)
            else:
                st.pending = True

    def close(self) -> None:
        """Print the latest state of every step whose last event was throttled."""
        with self._lock:
            now = self._clock()
            for st in self._steps.values():
                if st.pending:
                    self._emit(st, now)

    def _emit(self, st: _StepState, now: float) -> None:
        line = self.line(st, now)
        if line != st.last_line:  # e.g. a `finished` event repeating the last count
            self._write(line)
            st.last_line = line
        st.last_emit, st.pending = now, False
        st.closed = _complete(st.last)

    @staticmethod
    def line(st: _StepState, now: float) -> str:
        ev = st.last
        elapsed = now - st.started
        if ev.total is None:
            head = f"{ev.step}: {ev.done}" if ev.done else ev.step  # a wait with no count (a server starting)
        else:
            pct = 100 * ev.done / ev.total if ev.total else 100.0
            head = f"{ev.step}: {ev.done}/{ev.total} ({pct:.0f}%)"
        if _complete(ev):
            head += f" · done in {format_seconds(elapsed)}"
        elif ev.own_eta:  # the step's own estimate (work found done, calls in flight, units of unequal size)
            head += f" · ETA {format_seconds(ev.eta_s)}" if ev.eta_s is not None else " · ETA not known yet"
        elif ev.total is not None and ev.done > st.first_done and elapsed > 0:
            rate = (ev.done - st.first_done) / elapsed
            head += f" · ETA {format_seconds((ev.total - ev.done) / rate)}"
        tail = _tail(ev)
        return f"{head} · {tail}" if tail else head


class BarRenderer:
    """One live ``rich.progress`` bar per step (done/total, ETA, stats) on a terminal."""

    def __init__(self, progress: Progress):
        self._progress = progress
        self._tasks: dict[str, TaskID] = {}
        self._lock = threading.Lock()

    def __call__(self, event: ProgressEvent | str) -> None:
        with self._lock:
            if isinstance(event, str):
                self._progress.console.print(Text(event), soft_wrap=True)
                return
            task = self._tasks.get(event.step)
            if task is None:  # starts at the first count: work found done is no progress of the rate
                task = self._tasks[event.step] = self._progress.add_task(event.step, total=event.total, tail="",
                                                                         completed=event.done, eta=_RICH_ETA,
                                                                         eta_at=0.0)
            total = event.total
            if event.finished and total is None:
                total = event.done  # a step that never knew its size: show it complete
            self._progress.update(task, completed=event.done, total=total, tail=_tail(event),
                                  eta=event.eta_s if event.own_eta else _RICH_ETA, eta_at=time.monotonic())
            if event.finished:
                self._progress.stop_task(task)

    def close(self) -> None:
        """Nothing to flush: the bars show the latest state."""


#: The ``eta`` field of a bar whose step gives no ETA of its own: rich estimates it from the bar's speed.
_RICH_ETA = "rich"


class _EtaColumn(TimeRemainingColumn):
    """Time left: the step's own estimate when it gives one (``ProgressEvent.own_eta``), counting down
    between its events; else rich's."""

    def render(self, task: Any) -> Text:
        eta = task.fields.get("eta", _RICH_ETA)
        if eta == _RICH_ETA or task.finished:
            return super().render(task)
        if eta is None:
            return Text("-:--", style="progress.remaining")
        left = max(0.0, eta - (time.monotonic() - task.fields.get("eta_at", 0.0)))
        return Text(format_seconds(left), style="progress.remaining")


def make_bar_progress(console: Console) -> Progress:
    """The columns of a step's bar: name, bar, done/total, time left, stats and message.

    The stats and message column is capped to what the terminal has left, so on a narrow terminal
    it is cut (with an ellipsis) instead of the counts and the time.
    """
    bar_width = 20 if console.width < 100 else 30
    tail_width = max(10, console.width - bar_width - 30)  # step name, counts, time and gaps: ~30
    return Progress(
        TextColumn("[bold]{task.description}[/]", table_column=Column(no_wrap=True)),
        BarColumn(bar_width=bar_width, table_column=Column(no_wrap=True)),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        _EtaColumn(compact=True, elapsed_when_finished=True, table_column=Column(no_wrap=True)),
        TextColumn("{task.fields[tail]}", markup=False,
                   table_column=Column(no_wrap=True, overflow="ellipsis", max_width=tail_width)),
        console=console,
        # Our own stdout lines are only routed through the live display when stdout is that
        # same terminal; a redirected stdout must keep receiving exactly what the command prints.
        redirect_stdout=bool(console.is_terminal and sys.stdout.isatty()),
        redirect_stderr=True,
    )


@contextlib.contextmanager
def progress_bar(console: Console | None = None, *, min_interval: float = 1.0,
                 clock: Callable[[], float] = time.monotonic) -> Iterator[Callable[[ProgressEvent | str], None]]:
    """A :class:`~graphrag_got.common.progress.ProgressCallback` rendering to stderr while the block runs.

    Bars when ``console`` (default: stderr) is a terminal, plain lines otherwise.
    """
    console = console or stderr_console()
    if console.is_terminal:
        bars = make_bar_progress(console)
        renderer = BarRenderer(bars)
        with bars:
            yield renderer
        return
    lines = LineRenderer(lambda s: console.print(Text(s), soft_wrap=True, highlight=False), min_interval=min_interval,
                         clock=clock)
    try:
        yield lines
    finally:
        lines.close()
