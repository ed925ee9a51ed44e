"""Background server processes we start ourselves: is a pid still ours, stopping it, the end of its log.

Used by the embedded ``llama-server`` (:mod:`graphrag_got.llm.server`). A pid file can outlive its
process, the pid can be reused by an unrelated program, and a file can name a process we never
started, so "ours" means: alive, not a zombie, and (on Linux, where ``/proc`` tells) the very process
we started: the pid file (:class:`PidRecord`, :func:`write_pid_file`) records the pid, the process's
start time (field 22 of ``/proc/PID/stat``, which a reused pid does not share) and its arguments, and
:func:`check_ours` compares them, and the working directory we started it in, with what ``/proc``
shows. A program's name proves nothing: a server may run under any name, and anyone's program may be
called ``llama-server``.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from graphrag_got.common.files import write_text_atomic

#: Popen objects of processes this interpreter started, by pid: ``poll()`` reaps a child that exited,
#: which ``kill -0`` alone would still see (a zombie).
_CHILDREN: dict[int, subprocess.Popen] = {}


def remember_child(proc: subprocess.Popen) -> None:
    _CHILDREN[proc.pid] = proc


def forget_child(pid: int) -> None:
    _CHILDREN.pop(pid, None)


def child(pid: int) -> subprocess.Popen | None:
    return _CHILDREN.get(pid)


#: Highest pid accepted from a file: Linux allows at most 2**22 (``/proc/sys/kernel/pid_max``); anything
#: larger, zero or negative (``kill(0)`` and ``kill(-1)`` signal whole groups) is not a pid.
MAX_PID = 2**22


def valid_pid(pid: object) -> bool:
    return isinstance(pid, int) and not isinstance(pid, bool) and 0 < pid <= MAX_PID


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
    if not valid_pid(pid):
        return False
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


def start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot, field 22 of ``/proc/PID/stat``); None without /proc or
    process. The pair (pid, start time) names one process: a pid reused later has a later start time."""
    try:
        # the name (field 2) is in parentheses and may hold spaces or ")": split after the last ")"
        return int((Path(f"/proc/{pid}") / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _cwd(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/cwd")
    except OSError:  # gone, or not ours to look at
        return None


@dataclass(frozen=True)
class PidRecord:
    """What a pid file says about the process we started: its pid, its start time (None where there is
    no /proc) and the arguments we started it with."""

    pid: int
    start_time: int | None
    argv: tuple[str, ...]


class StalePidFile(ValueError):
    """A pid file that names no process of ours; the message says why."""


def write_pid_file(path: Path, pid: int, argv: list[str]) -> PidRecord:
    """Record the process ``pid`` we just started with ``argv`` (atomically: temp file + rename)."""
    record = PidRecord(pid, start_time(pid), tuple(argv))
    write_text_atomic(path, json.dumps({"pid": record.pid, "start_time": record.start_time,
                                        "argv": list(record.argv)}, indent=2) + "\n")
    return record


def read_pid_file(path: Path) -> PidRecord | None:
    """The record of ``path``; None when there is no file. Raises :class:`StalePidFile` when the file is
    not one :func:`write_pid_file` wrote (a bare number, a pid out of range, not JSON, a field missing)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StalePidFile(f"cannot be read ({exc.strerror})") from None
    shown = " ".join(text.split())[:60] or "nothing"
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, int) and not isinstance(data, bool):
        if not valid_pid(data):
            raise StalePidFile(f"names pid {data}, which is no process id (1 to {MAX_PID})")
        raise StalePidFile(f"holds a bare pid ({data}), not the record this program writes (pid, start time, "
                           "arguments): written by hand or by an older version, so nothing proves the process is "
                           f"ours; if the server of this home still runs as pid {data}, stop it with `kill {data}`")
    if not isinstance(data, dict):
        raise StalePidFile(f"holds {shown!r}, not the record this program writes (pid, start time, arguments)")
    pid, started, argv = data.get("pid"), data.get("start_time"), data.get("argv")
    if not valid_pid(pid):
        raise StalePidFile(f"names pid {pid!r}, which is no process id (1 to {MAX_PID})")
    if started is not None and not (isinstance(started, int) and not isinstance(started, bool) and started >= 0):
        raise StalePidFile(f"holds the start time {started!r}, not a number of clock ticks")
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise StalePidFile("holds no arguments list")
    return PidRecord(pid, started, tuple(argv))


def check_ours(record: PidRecord, cwd: Path, proc: subprocess.Popen | None = None) -> str | None:
    """None when ``record`` names the process we started in ``cwd`` and it still runs; else why not.

    Where /proc tells: the same start time (a reused pid has another), the working directory we started
    it in (the pid file of another home names another) and the arguments we gave it at the end of its
    command line (a program run through an interpreter or a wrapper shows more in front). Without
    /proc (macOS) a live pid is trusted.
    """
    pid = record.pid
    if not alive(pid, proc=proc):
        return f"no process {pid} runs"
    if not Path("/proc").is_dir():
        return None
    started = start_time(pid)
    if record.start_time is None or started != record.start_time:
        return (f"process {pid} started at tick {started}, not at tick {record.start_time} as recorded: "
                "another process has the pid now")
    where = _cwd(pid)
    if where is None or os.path.realpath(where) != os.path.realpath(cwd):
        return f"process {pid} runs in {where or 'a folder we cannot see'}, not in {cwd}"
    fields = _proc_fields(pid)
    cmdline = fields[1] if fields else []
    if cmdline and cmdline[-1] == "":
        cmdline = cmdline[:-1]  # /proc/PID/cmdline ends each argument with a NUL
    args = list(record.argv[1:])
    if fields is None or len(cmdline) <= len(args) or cmdline[len(cmdline) - len(args):] != args:
        return f"process {pid} does not run with the arguments recorded"
    return None


def read_pid(path: Path) -> int | None:
    """The pid a file :func:`write_pid_file` wrote names (no check that it runs); None when there is no
    such file or it is malformed."""
    try:
        record = read_pid_file(path)
    except StalePidFile:
        return None
    return record.pid if record else None


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
