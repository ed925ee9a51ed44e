"""Warnings that would repeat on every request, logged once per process and counted after that.

    warn_once(log, "hybrid-fallback", "hybrid retrieval falls back to graph: %s", problem)
    repeated_warnings()          # {"hybrid-fallback": 370}

The first occurrence of a key is logged at WARNING; later ones only raise its count (and are
logged at DEBUG), so a long-running service does not fill its log with one message. The counts
can be read (the service logs them when it stops).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

_counts: dict[str, int] = {}
_lock = threading.Lock()


def warn_once(log: logging.Logger, key: str, message: str, *args: Any) -> None:
    """Log ``message % args`` at WARNING the first time ``key`` is seen in this process, else at DEBUG."""
    with _lock:
        count = _counts.get(key, 0) + 1
        _counts[key] = count
    if count == 1:
        log.warning(message + " (logged once; later occurrences are counted)", *args)
    else:
        log.debug(message + " (occurrence %d)", *args, count)


def repeated_warnings() -> dict[str, int]:
    """How often each once-logged warning occurred in this process so far."""
    with _lock:
        return dict(_counts)


def reset_repeated_warnings() -> None:
    """Forget every count, so the next occurrence of each key is logged again (tests start from here)."""
    with _lock:
        _counts.clear()


def log_warning_counts(log: logging.Logger) -> None:
    """One line with the count of every once-logged warning that occurred more than once."""
    counts = {k: v for k, v in repeated_warnings().items() if v > 1}
    if counts:
        log.warning("repeated warnings in this process: %s",
                    ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
