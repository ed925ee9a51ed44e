"""Background server processes we start ourselves: is a pid still ours, stopping it, the end of its log.

Used by the embedded ``llama-server`` (:mod:`graphrag_got.llm.server`). A pid file can outlive its
process and the pid can be reused by an unrelated program, so "ours" means: alive, not a zombie,
and (on Linux, where ``/proc`` tells) running the program we started.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
import time
from collections import deque
from pathlib import Path
from typing import Callable, Iterator

#: Popen objects of processes this interpreter started, by pid: ``poll()`` reaps a child that exited,
#: which ``kill -0`` alone would still see (a zombie).
_CHILDREN: dict[int, subprocess.Popen] = {}


def remember_child(proc: subprocess.Popen) -> None:
    _CHILDREN[proc.pid] = proc


def forget_child(pid: int) -> None:
    _CHILDREN.pop(pid, None)


def child(pid: int) -> subprocess.Popen | None:
    return _CHILDREN.get(pid)


def _proc_fields(pid: int) -> tuple[str, list[str]] | None:
    """(state letter, argv) from /proc, or None when /proc does not show the process."""
    base = Path(f"/proc/{pid}")
    try:
        state = (base / "stat").read_text().rsplit(")", 1)[1].split()[0]
        argv = (base / "cmdline").read_bytes().decode(errors="replace").split("\0")
    except (OSError, IndexError):
        return None
    return state, argv


def alive(pid: int, matches: Callable[[list[str]], bool] | None = None,
          proc: subprocess.Popen | None = None) -> bool:
    """Whether ``pid`` runs (and is not a zombie); with ``matches``, whether its argv is one we started
    (a recycled pid is not ours). ``proc``: its Popen when the caller keeps its own."""
    proc = proc or _CHILDREN.get(pid)
    if proc is not None and proc.poll() is not None:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # someone else's process: alive, and surely not ours when /proc can tell
    if not Path("/proc").is_dir():
        return True  # no /proc (macOS): trust the signal
    fields = _proc_fields(pid)
    if fields is None:
        return False
    state, argv = fields
    if state == "Z":
        return False
    return matches is None or matches(argv)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def stop_process(pid: int, timeout_s: float, proc: subprocess.Popen | None = None) -> bool:
    """SIGTERM, wait up to ``timeout_s``, then SIGKILL. True when it ended on SIGTERM. ``proc``: its Popen
    when the caller keeps its own (else the one :func:`remember_child` was given, if any)."""
    proc = proc or _CHILDREN.get(pid)

    def ended() -> bool:
        return proc.poll() is not None if proc is not None else not alive(pid)

    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True
    limit = time.monotonic() + timeout_s
    while time.monotonic() < limit:
        if ended():
            return True
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    if proc is not None:
        proc.wait(timeout=10)
    return False


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log, for an error message."""
    try:
        with path.open(errors="replace") as fh:
            text = "".join(deque(fh, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"
    return text or "(empty log)"


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock on ``path`` (created), held while the block runs: one start or stop
    at a time across processes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
