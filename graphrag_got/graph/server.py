"""The embedded Neo4j 5.26 Community server: a real server for machines without Docker.

The jars come from Maven Central (``neo4j/pom.xml``, copied into the git-ignored ``neo4j/lib``) and
``neo4j/Launcher.java`` runs them as a single-file Java program (no compile step). The server's
home (databases, Neo4j's own logs), the launcher log and the pid file live in
``files.home / "neo4j"``; Bolt listens on the host and port of ``neo4j.uri`` (the functions take the
``neo4j`` section as ``db`` and the ``files`` section, never the whole settings).

    info = ensure_running(settings.neo4j, files=settings.files)  # reuse what answers at NEO4J_URI, else start ours
    status(settings.neo4j, files=settings.files); stop(settings.files)

We start a plain ``java`` process ourselves instead of using neo4j-harness (test libraries, random
ports, deletes its folder on close) or a Neo4j tarball (not on the registries we can reach).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import shutil
import socket
import subprocess
import time
import warnings
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit

from graphrag_got.common import processes
from graphrag_got.common.files import write_text_atomic
from graphrag_got.config import FilesSettings, Neo4jSettings
from graphrag_got.errors import Neo4jServerError
from graphrag_got.common.progress import ProgressCallback, ProgressEvent

logger = logging.getLogger(__name__)

#: Folder holding pom.xml, Launcher.java and (after the download) lib/.
NEO4J_DIR = Path(__file__).resolve().parents[2] / "neo4j"

#: JVM flags Neo4j's own 5.x distribution passes; embedded mode has to pass them itself.
JVM_FLAGS = [
    "-Xms256m",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:-OmitStackTraceInFastThrow",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djdk.nio.maxCachedBufferSize=1024",
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Dfile.encoding=UTF-8",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--enable-native-access=ALL-UNNAMED",
]
PAGECACHE = "512m"
LOCAL_HOSTS = {"127.0.0.1", "localhost", "::1"}
MIN_JAVA = 17
LOG_TAIL_LINES = 40


@dataclass(frozen=True)
class JarInfo:
    """The jar folder; ``downloaded`` is True when this call fetched it (then ``download_s`` is set)."""

    lib_dir: Path
    version: str
    jar_count: int
    size_mb: float
    downloaded: bool
    download_s: float | None = None


@dataclass(frozen=True)
class ServerInfo:
    """A server answering at ``uri``. ``started`` is False when an already running one was reused."""

    uri: str
    started: bool
    pid: int | None
    home: Path
    log_path: Path
    version: str | None
    startup_s: float | None = None
    jars: JarInfo | None = None


@dataclass(frozen=True)
class ServerStatus:
    uri: str
    answering: bool  # something speaks Bolt at uri
    auth_ok: bool | None  # our credentials work (None when not answering)
    server_agent: str | None  # e.g. "Neo4j/5.26.30"
    pid: int | None  # pid from our pid file, when that process is alive
    home: Path
    log_path: Path
    detail: str = ""

    @property
    def ours(self) -> bool:
        """True when our embedded server process is alive (it may still be starting)."""
        return self.pid is not None


# --------------------------------------------------------------------------------------- paths


def server_home(files: FilesSettings) -> Path:
    return files.home / "neo4j"


def log_path(files: FilesSettings) -> Path:
    return server_home(files) / "launcher.log"


def pid_path(files: FilesSettings) -> Path:
    return server_home(files) / "neo4j.pid"


def _report(progress: ProgressCallback | None, step: str, message: str, *, done: int = 0,
            finished: bool = False) -> None:
    """A start-up milestone: to the caller's progress callback, else to the log (INFO)."""
    if progress is None:
        logger.info("%s: %s", step, message)
    else:
        progress(ProgressEvent(step=step, done=done, message=message, finished=finished))


JARS_STEP = "neo4j jars"
START_STEP = "neo4j start"


# ---------------------------------------------------------------------------------------- jars


def _jar_version_ok(lib: Path, version: str) -> bool:
    return (lib / f"neo4j-{version}.jar").is_file() and (lib / f"neo4j-bolt-{version}.jar").is_file()


def _folder_mb(folder: Path) -> tuple[int, float]:
    jars = list(folder.glob("*.jar"))
    return len(jars), sum(j.stat().st_size for j in jars) / 1e6


def ensure_jars(db: Neo4jSettings, neo4j_dir: Path = NEO4J_DIR, *,
                progress: ProgressCallback | None = None) -> JarInfo:
    """Make sure ``neo4j/lib`` holds the jars of ``db.version``; runs Maven once if not.

    The download goes to a temporary folder that replaces ``lib`` only when Maven succeeded, so an
    interrupted download never leaves a half-filled (or mixed-version) classpath behind.
    """
    version = db.version
    lib = neo4j_dir / "lib"
    if _jar_version_ok(lib, version):
        n, mb = _folder_mb(lib)
        return JarInfo(lib, version, n, round(mb, 1), downloaded=False)

    pom = neo4j_dir / "pom.xml"
    if not pom.is_file():
        raise Neo4jServerError(f"{pom} is missing: run graphrag_got from its source checkout (it holds neo4j/pom.xml)")
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Neo4jServerError(
            "Maven (`mvn`) is not installed; it downloads the embedded Neo4j jars once. Install it "
            "(e.g. `apt-get install maven`) or run Neo4j with Docker: `docker compose up -d neo4j`."
        )
    _java()  # fail early, before a 120 MB download, when Java is missing or too old

    tmp = neo4j_dir / f"lib.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    cmd = [mvn, "-B", "-Dstyle.color=never", "-f", str(pom), "dependency:copy-dependencies",
           f"-Dneo4j.version={version}", f"-Dlib.dir={tmp}"]
    _report(progress, JARS_STEP, f"downloading Neo4j {version} jars from Maven Central into {lib} "
            "(about 125 MB, first time only)")
    t0 = time.monotonic()
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    errors: list[str] = []
    files = 0
    try:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise Neo4jServerError(f"cannot run Maven ({mvn}): {exc}") from None
    assert proc.stdout is not None
    for line in proc.stdout:
        tail.append(line.rstrip())
        if line.startswith("[ERROR]") and len(errors) < 2 and line.strip() != "[ERROR]":
            errors.append(line.rstrip())
        if "Downloaded from" in line:
            files += 1
            if files % 10 == 0:
                _report(progress, JARS_STEP, f"{files} files downloaded", done=files)
    rc = proc.wait()
    if rc != 0 or not _jar_version_ok(tmp, version):
        shutil.rmtree(tmp, ignore_errors=True)
        raise Neo4jServerError(
            f"Maven could not download org.neo4j:neo4j:{version} (exit code {rc}). Check the network "
            f"access to Maven Central and GRAPHRAG_NEO4J_VERSION (a 5.26.x release). Maven said:\n"
            + "\n".join(errors or tail)
        )
    old = neo4j_dir / f"lib.old-{os.getpid()}"
    if lib.exists():
        lib.rename(old)  # another version: never mix two Neo4j versions on one classpath
    tmp.rename(lib)
    shutil.rmtree(old, ignore_errors=True)
    seconds = time.monotonic() - t0
    n, mb = _folder_mb(lib)
    _report(progress, JARS_STEP, f"downloaded {n} jars, {mb:.1f} MB, in {seconds:.1f} s", done=files, finished=True)
    return JarInfo(lib, version, n, round(mb, 1), downloaded=True, download_s=round(seconds, 1))


def _java() -> str:
    """The java executable ($JAVA_HOME first), checked to be Java >= 17."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home and (Path(java_home) / "bin" / "java").is_file() \
        else shutil.which("java")
    if java is None:
        raise Neo4jServerError(
            "Java is not installed; the embedded Neo4j 5.26 needs Java 17 or 21 (e.g. `apt-get install "
            "openjdk-17-jre-headless`). Or run Neo4j with Docker: `docker compose up -d neo4j`."
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Neo4jServerError(f"cannot run {java} -version: {exc}") from None
    m = re.search(r'version "(\d+)', out)
    if m and int(m.group(1)) < MIN_JAVA:
        raise Neo4jServerError(
            f"{java} is Java {m.group(1)}; Neo4j 5.26 needs Java 17 or 21. Set JAVA_HOME to a newer JDK."
        )
    return java


# ------------------------------------------------------------------------------ address, pid


def bolt_address(db: Neo4jSettings) -> tuple[str, int]:
    """(host, port) of ``db.uri``, which must point at this machine for the embedded server."""
    uri = db.uri
    parts = urlsplit(uri)
    if parts.scheme not in {"bolt", "neo4j"}:
        raise Neo4jServerError(
            f"NEO4J_URI={uri!r}: the embedded server speaks plain Bolt; use bolt://127.0.0.1:7687"
        )
    try:
        port = parts.port or 7687
    except ValueError:
        raise Neo4jServerError(f"NEO4J_URI={uri!r} has an invalid port; use e.g. bolt://127.0.0.1:7687") from None
    host = parts.hostname or "127.0.0.1"
    if host not in LOCAL_HOSTS:
        raise Neo4jServerError(
            f"NEO4J_URI={uri!r} points at another machine ({host}); the embedded server only listens "
            "locally. Use bolt://127.0.0.1:<port>, or start that remote server yourself."
        )
    return ("127.0.0.1" if host == "localhost" else host), port


def _port_open(host: str, port: int, timeout: float = 1.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


# Popen objects of servers started by this Python process: poll() reaps them, so a server that
# died is not mistaken for a live one (a zombie still answers `kill -0`).
_CHILDREN: dict[int, subprocess.Popen] = {}


def _is_our_launcher(pid: int, home: Path) -> bool:
    """Alive, not a zombie, and (where /proc tells) the launcher of this home: a recycled pid is not ours."""
    home_arg = str(home.resolve())
    return processes.alive(pid, lambda argv: any(a.endswith("Launcher.java") for a in argv) and home_arg in argv,
                           proc=_CHILDREN.get(pid))


def _read_pid(files: FilesSettings) -> int | None:
    """The pid of our running launcher, or None (a stale pid file is removed)."""
    path = pid_path(files)
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    if _is_our_launcher(pid, server_home(files)):
        return pid
    path.unlink(missing_ok=True)
    return None


def _log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    try:
        with path.open(errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines)).rstrip() or "(empty: the JVM had not printed anything yet)"
    except OSError:
        return "(no log)"


@contextlib.contextmanager
def _start_lock(files: FilesSettings) -> Iterator[None]:
    """Serialises start/stop between processes (e.g. parallel test runs) on one home."""
    home = server_home(files)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "start.lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


# ------------------------------------------------------------------------------------- status


def status(db: Neo4jSettings, timeout_s: float = 3.0, *, files: FilesSettings) -> ServerStatus:
    """Is a server answering at ``db.uri`` (and do our credentials work)? Is our pid (in ``files.home``) alive?"""
    home = server_home(files)
    pid = _read_pid(files) if pid_path(files).exists() else None
    answering, auth_ok, agent, detail = False, None, None, ""
    parts = urlsplit(db.uri)
    try:
        host, port = parts.hostname or "127.0.0.1", parts.port or 7687
    except ValueError:
        return ServerStatus(db.uri, False, None, None, pid, home, log_path(files),
                            "invalid port in NEO4J_URI")
    if _port_open(host, port, timeout=timeout_s):
        import neo4j  # the driver; imported late so `graphrag-got --help` stays fast

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                driver = neo4j.GraphDatabase.driver(
                    db.uri, auth=(db.username, db.password),
                    connection_timeout=timeout_s, connection_acquisition_timeout=timeout_s,
                )
            except Exception as exc:  # bad URI: reported, not raised
                return ServerStatus(db.uri, False, None, None, pid, home, log_path(files), str(exc))
            try:
                info = driver.get_server_info()
                answering, auth_ok, agent = True, True, info.agent
            except neo4j.exceptions.AuthError as exc:
                answering, auth_ok, detail = True, False, exc.message or str(exc)
            except Exception as exc:  # port open but no Bolt (or still starting)
                detail = f"port {port} is open but no Bolt server answers: {exc}"
            finally:
                driver.close()
    else:
        detail = f"nothing listens on {host}:{port}"
    return ServerStatus(db.uri, answering, auth_ok, agent, pid, home, log_path(files), detail)


# -------------------------------------------------------------------------------- start / stop


def start(db: Neo4jSettings, wait_s: float = 180, *, files: FilesSettings,
          progress: ProgressCallback | None = None) -> ServerInfo:
    """Start the embedded server in the background and wait (up to ``wait_s``) until it answers.

    Returns the running server unchanged when our launcher for this home is already running.
    Raises Neo4jServerError with the end of the log when it cannot start. ``progress`` receives the
    milestones (jar download, start, still starting, ready); without it they are logged at INFO.
    """
    host, port = bolt_address(db)
    if db.username != "neo4j":
        raise Neo4jServerError(
            f"NEO4J_USERNAME={db.username!r}: the embedded server has the single user 'neo4j'"
        )
    if len(db.password) < 8:
        raise Neo4jServerError("NEO4J_PASSWORD must have at least 8 characters (Neo4j's minimum)")
    home = server_home(files)
    log = log_path(files)
    with _start_lock(files):
        pid = _read_pid(files)
        if pid is not None:
            return _wait_ready(db, files, pid, None, time.monotonic(), wait_s, None, started=False,
                               progress=progress)
        if _port_open(host, port):
            raise Neo4jServerError(
                f"another server already listens on {host}:{port} (not ours). Use it (`graphrag-got neo4j "
                f"status`), stop it, or set NEO4J_URI to a free port such as bolt://127.0.0.1:{port + 1}."
            )
        jars = ensure_jars(db, progress=progress)
        java = _java()
        launcher = NEO4J_DIR / "Launcher.java"
        cmd = [java, *JVM_FLAGS, "-cp", str(jars.lib_dir / "*"), str(launcher), str(home.resolve()),
               "--host", host, "--port", str(port), "--pagecache", PAGECACHE]
        if log.exists():
            log.replace(log.with_suffix(".log.1"))  # keep the previous run's log for diagnosis
        env = {**os.environ, "NEO4J_PASSWORD": db.password}
        _report(progress, START_STEP, f"starting Neo4j {db.version} on bolt://{host}:{port} "
                f"(home {home}, log {log})")
        t0 = time.monotonic()
        with open(log, "wb") as out:
            try:
                proc = subprocess.Popen(cmd, cwd=home, env=env, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, start_new_session=True, close_fds=True)
            except OSError as exc:
                raise Neo4jServerError(f"cannot run {java}: {exc}") from None
        _CHILDREN[proc.pid] = proc
        write_text_atomic(pid_path(files), f"{proc.pid}\n")
        return _wait_ready(db, files, proc.pid, proc, t0, wait_s, jars, started=True, progress=progress)


def _wait_ready(db: Neo4jSettings, files: FilesSettings, pid: int, proc: subprocess.Popen | None, t0: float,
                wait_s: float, jars: JarInfo | None, *, started: bool,
                progress: ProgressCallback | None = None) -> ServerInfo:
    log = log_path(files)
    deadline = t0 + wait_s
    last_note = time.monotonic()
    while True:
        ready = failed = None
        try:
            for line in log.read_text(errors="replace").splitlines():
                if line.startswith("READY "):
                    ready = line
                elif line.startswith("FAILED "):
                    failed = line[len("FAILED "):]
        except OSError:
            pass
        if ready:
            seconds = time.monotonic() - t0
            if started:
                _report(progress, START_STEP, f"ready at {db.uri} (pid {pid}) in {seconds:.1f} s",
                        finished=True)
            return ServerInfo(db.uri, started, pid, server_home(files), log,
                              db.version, round(seconds, 1) if started else None, jars)
        dead = (proc.poll() is not None) if proc is not None else not _is_our_launcher(pid, server_home(files))
        if failed or dead:
            pid_path(files).unlink(missing_ok=True)
            why = failed or "the server process exited"
            raise Neo4jServerError(
                f"Neo4j did not start: {why}\nLog {log} ends with:\n{_log_tail(log)}"
            )
        if time.monotonic() > deadline:
            _terminate(pid, proc, timeout_s=30)
            pid_path(files).unlink(missing_ok=True)
            raise Neo4jServerError(
                f"Neo4j did not become ready within {wait_s:.0f} s and was stopped; on a slow machine "
                f"pass a longer wait (--wait). Log {log} ends with:\n{_log_tail(log)}"
            )
        if time.monotonic() - last_note > 5:
            _report(progress, START_STEP, f"still starting ({time.monotonic() - t0:.0f} s)")
            last_note = time.monotonic()
        time.sleep(0.25)


def _terminate(pid: int, proc: subprocess.Popen | None, timeout_s: float) -> bool:
    """SIGTERM (clean shutdown via the launcher's hook), then SIGKILL after timeout_s."""
    return processes.stop_process(pid, timeout_s, proc)


def stop(files: FilesSettings, timeout_s: float = 60) -> int | None:
    """Stop our embedded server of ``files.home`` (clean shutdown). Returns its pid, or None when it was
    not running."""
    with _start_lock(files):
        pid = _read_pid(files)
        if pid is None:
            return None
        clean = _terminate(pid, _CHILDREN.get(pid), timeout_s)
        _CHILDREN.pop(pid, None)
        pid_path(files).unlink(missing_ok=True)
        if not clean:
            logger.warning("Neo4j (pid %s) did not stop within %.0f s and was killed", pid, timeout_s)
        return pid


def ensure_running(db: Neo4jSettings, wait_s: float = 180, *, files: FilesSettings,
                   progress: ProgressCallback | None = None) -> ServerInfo:
    """Reuse a server answering at NEO4J_URI (Docker, ours, any), else start the embedded one."""
    st = status(db, files=files)
    if st.answering:
        return ServerInfo(db.uri, False, st.pid, st.home, st.log_path,
                          (st.server_agent or "").removeprefix("Neo4j/") or None)
    return start(db, wait_s=wait_s, files=files, progress=progress)
