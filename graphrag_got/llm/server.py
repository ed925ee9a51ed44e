"""The embedded model served by llama.cpp's own C++ ``llama-server``: parallel slots in one process.

``scripts/setup.sh`` builds ``llama-server`` once from the llama.cpp sources that the pinned
llama-cpp-python source package ships (``scripts/build_llama_server.sh``) into the venv's ``bin/``.
Compared with the in-process model it decodes several calls in one batch (continuous batching over
``GRAPHRAG_LLAMA_SERVER_SLOTS`` slots, so the cores that sit idle while one sequence is generated
work on the others), keeps a prompt cache per slot (the instructions and ontology every extraction
prompt starts with are evaluated once per slot, not once per chunk) and constrains answers to a JSON
schema (``response_format``). The OpenAI-compatible pool (:mod:`graphrag_got.llm.providers.openai_pool`)
talks to it.

It is managed like the embedded Neo4j: its pid file, log and the plan it was started with live in
``<home>/llama-server``; it listens on 127.0.0.1 only.

    backend = choose_backend(settings.llm)    # server or in-process, and why
    info = ensure_running(settings.llm, files=settings.files)  # ours with the same plan, else started
    status(settings.llm, files=settings.files); stop(settings.files)

A server this process starts is stopped by it: at the end of the outermost :func:`scope` (``extract``,
``demo`` and ``build`` open one), else when the interpreter exits.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Iterator

from graphrag_got.common import processes
from graphrag_got.common.files import write_text_atomic
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.config import FilesSettings, LLMSettings
from graphrag_got.errors import LLMServerError

logger = logging.getLogger(__name__)

HOST = "127.0.0.1"
PROGRAM = "llama-server"
START_STEP = "llm start"
#: MiB of prompt states llama-server keeps in RAM (a 2,500-token prefix of the 1.5B model is ~70 MB).
CACHE_RAM_MB = 512
#: Written by scripts/build_llama_server.sh into the venv when the build failed: the reason.
BUILD_FAILED_MARK = ".llama-server-build-failed"


# ------------------------------------------------------------------------------------ where things are
def server_home(files: FilesSettings) -> Path:
    return files.home / "llama-server"


def log_path(files: FilesSettings) -> Path:
    return server_home(files) / "server.log"


def pid_path(files: FilesSettings) -> Path:
    return server_home(files) / "server.pid"


def plan_path(files: FilesSettings) -> Path:
    return server_home(files) / "server.json"


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_binary(llm: LLMSettings) -> Path | None:
    """``GRAPHRAG_LLAMA_SERVER``, else the venv's ``bin/llama-server`` (what setup builds), else PATH."""
    if llm.llama_server is not None:
        path = Path(llm.llama_server).expanduser().absolute()
        return path if _executable(path) else None
    built = Path(sys.prefix) / "bin" / PROGRAM
    if _executable(built):
        return built.absolute()
    found = shutil.which(PROGRAM)
    return Path(found).absolute() if found else None


def missing_reason(llm: LLMSettings) -> str:
    """Why :func:`find_binary` found nothing, and what to do."""
    if llm.llama_server is not None:
        return f"GRAPHRAG_LLAMA_SERVER={llm.llama_server} is not an executable file"
    failed = Path(sys.prefix) / BUILD_FAILED_MARK
    if failed.is_file():
        why = " ".join(failed.read_text(errors="replace").split())[:300]
        return f"building llama-server failed in scripts/setup.sh ({why})"
    return f"{PROGRAM} is not built (scripts/setup.sh builds it into {Path(sys.prefix) / 'bin'})"


@dataclass(frozen=True)
class Backend:
    """Where the embedded model runs: ``server`` (llama-server) or in this process, and why."""

    server: bool
    why: str
    binary: Path | None = None

    def describe(self) -> str:
        return f"llama-server ({self.binary})" if self.server else f"in-process llama-cpp-python ({self.why})"


def choose_backend(llm: LLMSettings) -> Backend:
    """``GRAPHRAG_LLAMACPP_BACKEND``: ``auto`` takes llama-server when it is built, else runs in-process."""
    choice = llm.llamacpp_backend
    if choice == "in_process":
        return Backend(False, "GRAPHRAG_LLAMACPP_BACKEND=in_process")
    binary = find_binary(llm)
    if binary is None:
        if choice == "server":
            raise LLMServerError(f"GRAPHRAG_LLAMACPP_BACKEND=server but {missing_reason(llm)}. Run "
                                 "scripts/setup.sh, point GRAPHRAG_LLAMA_SERVER to a llama-server program, or set "
                                 "GRAPHRAG_LLAMACPP_BACKEND=in_process.")
        return Backend(False, missing_reason(llm))
    return Backend(True, f"GRAPHRAG_LLAMACPP_BACKEND={choice}", binary)


# ------------------------------------------------------------------------------------------- the plan
@dataclass(frozen=True)
class ServerPlan:
    """What one server runs: program, model, port, slots, context per slot, threads."""

    binary: str
    model: str
    port: int
    slots: int
    ctx_per_slot: int
    threads: int
    #: how hard llama.cpp's threads spin while they wait for work (0-100, its --poll); spinning takes the
    #: cores from other work, and waiting on a thread that lost its core wastes the spin
    poll: int = 50
    #: tokens evaluated in one step (its --batch-size; llama.cpp's default is 2048). The server writes
    #: prompt progress, and every other slot gets its next token, once a step: 512 keeps a busy machine's
    #: steps short enough that a streamed call hears from the server well within its stall limit.
    batch: int = 512

    @property
    def url(self) -> str:
        """The OpenAI-compatible base URL."""
        return f"http://{HOST}:{self.port}/v1"

    @property
    def alias(self) -> str:
        """The model name the server answers to (the GGUF file's stem)."""
        return Path(self.model).stem

    def argv(self) -> list[str]:
        # llama-server divides --ctx-size evenly among the slots (-np given: no unified KV cache). Each slot
        # keeps its last prompt; --cache-ram keeps prompts in RAM too (OpenAIPoolChatModel.share_prefix copies
        # the shared prefix of the extraction prompts into every slot through it), capped at CACHE_RAM_MB
        # (llama-server's default, 8 GB, would let a long run grow that much).
        return [self.binary, "--model", self.model, "--alias", self.alias, "--host", HOST, "--port", str(self.port),
                "--parallel", str(self.slots), "--ctx-size", str(self.slots * self.ctx_per_slot),
                "--threads", str(self.threads), "--threads-batch", str(self.threads), "--poll", str(self.poll),
                "--batch-size", str(self.batch), "--ubatch-size", str(min(self.batch, 512)),
                "--cont-batching", "--cache-prompt", "--cache-ram", str(CACHE_RAM_MB), "--no-webui", "--seed", "0"]

    def describe(self) -> str:
        return (f"{Path(self.model).name}, {self.slots} slot(s) x {self.ctx_per_slot} tokens, {self.threads} "
                f"thread(s), port {self.port}")


def _thread_limit(llm: LLMSettings) -> int:
    """GRAPHRAG_LLAMACPP_THREADS, else one per usable core."""
    from graphrag_got.llm.cpu_threads import usable_cpus

    return llm.llamacpp_threads or max(1, len(usable_cpus()))


def server_threads(llm: LLMSettings, sample: Any = None) -> int:
    """The server's threads: at most GRAPHRAG_LLAMACPP_THREADS (else one per usable core) and, with adaptive
    threads (``GRAPHRAG_LLAMACPP_ADAPTIVE_THREADS``, the default), no more than the cores free when it starts,
    at least one: the in-process model's rule (:mod:`graphrag_got.llm.cpu_threads`), applied once, since a
    server's threads are fixed for its life. Measured beside one CPU-bound process on 2 cores
    (``benchmarks/results/llm_server_contention.txt``): 2 threads sharing a core with it wait on each other
    at every step, so 4 slots wrote several times fewer tokens a second than 1 thread on the free core."""
    from graphrag_got.llm.cpu_threads import choose_threads, sample_cpu

    limit = _thread_limit(llm)
    if not llm.llamacpp_adaptive_threads:
        return limit
    return choose_threads(sample_cpu() if sample is None else sample, limit)


def plan_for(llm: LLMSettings, binary: Path | None = None, *, files: FilesSettings) -> ServerPlan:
    """The plan ``llm`` asks for (the model must be installed)."""
    from graphrag_got.llm.model_store import resolve_model_path

    binary = binary or find_binary(llm)
    if binary is None:
        raise LLMServerError(f"{missing_reason(llm)}; set GRAPHRAG_LLAMA_SERVER to a llama-server program, "
                             "or use the in-process model (GRAPHRAG_LLAMACPP_BACKEND=in_process)")
    return ServerPlan(binary=str(binary), model=str(resolve_model_path(llm, files=files)), port=llm.llama_server_port,
                      slots=llm.llama_server_slots, ctx_per_slot=llm.llamacpp_n_ctx,
                      threads=server_threads(llm), poll=llm.llama_server_poll,
                      batch=llm.llama_server_batch)


def _same_plan(running: ServerPlan | None, wanted: ServerPlan, llm: LLMSettings) -> bool:
    """Whether a running server serves what ``wanted`` asks. Threads chosen from the cores free at a start
    (adaptive threads) differ from one sample to the next without anyone asking for another server: they
    are not compared then (the running server's own work makes its cores look busy to a new sample)."""
    if running is None:
        return False
    if llm.llamacpp_adaptive_threads:
        return replace(running, threads=wanted.threads) == wanted
    return running == wanted


def _read_plan(files: FilesSettings) -> ServerPlan | None:
    try:
        return ServerPlan(**json.loads(plan_path(files).read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError):
        return None


def _our_pid(files: FilesSettings) -> int | None:
    """The pid of our running server, or None. Ours is the process the pid file records (pid, start time,
    arguments) running in this home, whatever the program is called; a pid file that names anything else
    (a dead or reused pid, another home's server, a bare or malformed pid) is stale: it is removed, with a
    warning, and the process it names is left alone."""
    path = pid_path(files)
    try:
        record = processes.read_pid_file(path)
    except processes.StalePidFile as exc:
        _drop_stale(path, str(exc))
        return None
    if record is None:
        return None
    why = processes.check_ours(record, server_home(files))
    if why is None:
        return record.pid
    _drop_stale(path, why)
    return None


def _drop_stale(path: Path, why: str) -> None:
    logger.warning("%s is a stale pid file (%s); removed it and stopped no process", path, why)
    path.unlink(missing_ok=True)


# ----------------------------------------------------------------------------------------- HTTP probes
def _get(url: str, timeout: float) -> tuple[int, Any]:
    """(HTTP status, parsed JSON or None); status 0 when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback URL we built)
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        body, status = exc.read(), exc.code
    except (urllib.error.URLError, OSError):
        return 0, None
    try:
        return status, json.loads(body.decode("utf-8"))
    except ValueError:
        return status, None


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class ServerStatus:
    """What answers at the configured port, and whether our server process runs."""

    url: str
    health: str  # "ok", "loading", "down" (nothing answers) or "error: ..."
    pid: int | None  # our server's pid when it is alive
    plan: ServerPlan | None  # what ours was started with
    slots: int | None = None  # /props total_slots
    slots_busy: int | None = None  # /slots: slots processing a call now
    model: str | None = None  # /props model_path
    ctx_per_slot: int | None = None  # /props default_generation_settings.n_ctx
    log: Path | None = None

    @property
    def answering(self) -> bool:
        return self.health == "ok"


def probe(port: int, timeout: float = 2.0) -> tuple[str, dict[str, Any]]:
    """(health, what /props and /slots say) of a llama-server on loopback ``port``."""
    root = f"http://{HOST}:{port}"
    code, body = _get(root + "/health", timeout)
    if code == 0:
        return "down", {}
    if code == 503:
        return "loading", {}
    if code != 200:
        return f"error: /health answered HTTP {code}", {}
    info: dict[str, Any] = {}
    code, props = _get(root + "/props", timeout)
    if code == 200 and isinstance(props, dict):
        info["slots"] = props.get("total_slots") if isinstance(props.get("total_slots"), int) else None
        info["model"] = props.get("model_path")
        n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
        info["ctx_per_slot"] = n_ctx if isinstance(n_ctx, int) else None
    code, slots = _get(root + "/slots", timeout)
    if code == 200 and isinstance(slots, list):
        info["slots_busy"] = sum(1 for s in slots if isinstance(s, dict) and s.get("is_processing"))
    return "ok", info


def status(llm: LLMSettings, *, files: FilesSettings) -> ServerStatus:
    port = llm.llama_server_port
    pid = _our_pid(files)
    health, info = probe(port)
    return ServerStatus(url=f"http://{HOST}:{port}/v1", health=health, pid=pid,
                        plan=_read_plan(files) if pid is not None else None, log=log_path(files), **info)


# ------------------------------------------------------------------------------------------ start/stop
@dataclass(frozen=True)
class ServerInfo:
    """A server of ours answering with ``plan``; ``started`` is False when it was already running."""

    plan: ServerPlan
    pid: int
    started: bool
    log: Path
    startup_s: float | None = None

    @property
    def url(self) -> str:
        return self.plan.url


def _report(progress: ProgressCallback | None, message: str, *, finished: bool = False) -> None:
    if progress is None:
        logger.info("%s: %s", START_STEP, message)
    else:
        progress(ProgressEvent(step=START_STEP, message=message, finished=finished))


_STATE_LOCK = threading.RLock()
#: Servers this process started that are still to be stopped: pid -> the files settings naming their home.
_STARTED_HERE: dict[int, FilesSettings] = {}
_scope_depth = 0
_scope_keep: frozenset[int] = frozenset()
_atexit_registered = False


def start(llm: LLMSettings, wait_s: float = 300, *, files: FilesSettings,
          progress: ProgressCallback | None = None) -> ServerInfo:
    """Start our server in the background and wait (up to ``wait_s``) until it answers ``/health``.

    A server of ours already running with the same plan is returned as it is (``started`` False);
    one running with another plan, or another program on the port, is an :class:`LLMServerError`.
    """
    plan = plan_for(llm, files=files)
    log = log_path(files)
    with processes.file_lock(server_home(files) / "start.lock"):
        pid = _our_pid(files)
        if pid is not None:
            running = _read_plan(files)
            if not _same_plan(running, plan, llm):
                raise LLMServerError(
                    f"our llama-server (pid {pid}) runs {running.describe() if running else 'an unknown plan'}; "
                    f"this needs {plan.describe()}. Stop it (`graphrag-got llm stop`) or use the same settings.")
            plan = replace(plan, threads=running.threads) if running is not None else plan
            return _wait_ready(files, plan, pid, None, time.monotonic(), wait_s, started=False, progress=progress)
        if _port_open(plan.port):
            raise LLMServerError(f"another program listens on {HOST}:{plan.port} (not our llama-server). Stop it, or "
                                 f"set GRAPHRAG_LLAMA_SERVER_PORT to a free port such as {plan.port + 1}.")
        server_home(files).mkdir(parents=True, exist_ok=True)
        if log.exists():
            log.replace(log.with_suffix(".log.1"))  # the previous run's log, for diagnosis
        wanted = _thread_limit(llm)
        if plan.threads < wanted:  # adaptive threads: other work holds cores now
            logger.warning("the cores are busy: llama-server starts with %d thread(s) instead of %d, and keeps them "
                           "until it stops (threads sharing a core with other work wait on each other at every "
                           "step; GRAPHRAG_LLAMACPP_ADAPTIVE_THREADS=false starts it with %d)", plan.threads, wanted,
                           wanted)
        _report(progress, f"starting llama-server: {plan.describe()} (log {log})")
        t0 = time.monotonic()
        with open(log, "wb") as out:
            try:
                proc = subprocess.Popen(plan.argv(), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                        start_new_session=True, close_fds=True, cwd=server_home(files))
            except OSError as exc:
                raise LLMServerError(f"cannot run {plan.binary}: {exc}") from None
        processes.remember_child(proc)
        write_text_atomic(plan_path(files), json.dumps(asdict(plan), indent=2) + "\n")
        processes.write_pid_file(pid_path(files), proc.pid, plan.argv())
        with _STATE_LOCK:
            _STARTED_HERE[proc.pid] = files
            _register_atexit()
        return _wait_ready(files, plan, proc.pid, proc, t0, wait_s, started=True, progress=progress)


def _wait_ready(files: FilesSettings, plan: ServerPlan, pid: int, proc: subprocess.Popen | None, t0: float,
                wait_s: float, *, started: bool, progress: ProgressCallback | None) -> ServerInfo:
    log = log_path(files)
    deadline = t0 + wait_s
    noted = time.monotonic()
    while True:
        health, _info = probe(plan.port, timeout=2.0)
        if health == "ok":
            seconds = time.monotonic() - t0
            if started:
                _report(progress, f"ready at {plan.url} (pid {pid}) in {seconds:.1f} s", finished=True)
            return ServerInfo(plan, pid, started, log, round(seconds, 1) if started else None)
        dead = proc.poll() is not None if proc is not None else _our_pid(files) != pid
        if dead:
            _forget(files, pid)
            raise LLMServerError(f"llama-server did not start ({plan.describe()}). Log {log} ends with:\n"
                                 f"{processes.tail(log)}")
        if time.monotonic() > deadline:
            processes.stop_process(pid, timeout_s=10)
            _forget(files, pid)
            raise LLMServerError(f"llama-server did not answer within {wait_s:.0f} s and was stopped. Log {log} "
                                 f"ends with:\n{processes.tail(log)}")
        if time.monotonic() - noted > 5:
            _report(progress, f"still loading the model ({time.monotonic() - t0:.0f} s)")
            noted = time.monotonic()
        time.sleep(0.2)


def _forget(files: FilesSettings, pid: int) -> None:
    pid_path(files).unlink(missing_ok=True)
    processes.forget_child(pid)
    with _STATE_LOCK:
        _STARTED_HERE.pop(pid, None)


def stop(files: FilesSettings, timeout_s: float = 30) -> int | None:
    """Stop our server. Returns its pid, or None when it was not running."""
    with processes.file_lock(server_home(files) / "start.lock"):
        pid = _our_pid(files)
        if pid is None:
            return None
        clean = processes.stop_process(pid, timeout_s)
        _forget(files, pid)
        if not clean:
            logger.warning("llama-server (pid %s) did not stop within %.0f s and was killed", pid, timeout_s)
        return pid


def ensure_running(llm: LLMSettings, wait_s: float = 300, *, files: FilesSettings,
                   progress: ProgressCallback | None = None) -> ServerInfo:
    """Ours when it runs with the plan ``llm`` asks for, else started now (stopped by this process later:
    see :func:`scope`)."""
    return start(llm, wait_s=wait_s, files=files, progress=progress)


def keep_running(pid: int) -> None:
    """Leave the server ``pid`` running when this process ends (``graphrag-got llm start``)."""
    with _STATE_LOCK:
        _STARTED_HERE.pop(pid, None)


def started_here(pid: int) -> bool:
    with _STATE_LOCK:
        return pid in _STARTED_HERE


def stop_started_here(keep: frozenset[int] = frozenset()) -> None:
    """Stop the servers this process started (but those in ``keep``)."""
    with _STATE_LOCK:
        started = [(pid, f) for pid, f in _STARTED_HERE.items() if pid not in keep]
    for pid, files in started:
        if processes.read_pid(pid_path(files)) == pid:
            logger.info("stopping llama-server (pid %s), started by this command", pid)
            stop(files)
        _forget(files, pid)


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        atexit.register(stop_started_here)
        _atexit_registered = True


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """Servers this process starts while the outermost scope is open are stopped when it closes
    (``run_extraction``, ``run_demo`` and ``run_build`` each open one; nested scopes share it)."""
    global _scope_depth, _scope_keep
    with _STATE_LOCK:
        if _scope_depth == 0:
            _scope_keep = frozenset(_STARTED_HERE)  # started before the scope: not its to stop
        _scope_depth += 1
    try:
        yield
    finally:
        with _STATE_LOCK:
            _scope_depth -= 1
            outermost = _scope_depth == 0
        if outermost:
            stop_started_here(_scope_keep)
