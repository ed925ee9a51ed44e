"""Which process is our llama-server (issue 48): the one the pid file records (pid, start time, arguments)
running in this home, whatever its program is called; a pid file naming anything else is stale and
removed, and the process it names is never signalled.

No model runs here: the "server" is a small Python program of another name that answers llama-server's
/health, /props and /slots, and the foreign processes are ``sleep`` under the name ``llama-server``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from graphrag_got.cli import main
from graphrag_got.common import processes
from graphrag_got.config import Settings
from graphrag_got.llm import server as srv
from support import free_port

#: A stand-in for llama-server: serves /health, /props and /slots on --port until it is signalled.
FAKE_SERVER = """\
import http.server, json, sys

port = int(sys.argv[sys.argv.index("--port") + 1])
slots = int(sys.argv[sys.argv.index("--parallel") + 1])


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = {"/health": {"status": "ok"},
                "/props": {"total_slots": slots, "model_path": sys.argv[sys.argv.index("--model") + 1],
                           "default_generation_settings": {"n_ctx": 512}},
                "/slots": [{"id": i, "is_processing": False} for i in range(slots)]}.get(self.path)
        data = json.dumps(body).encode()
        self.send_response(200 if body is not None else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Settings]:
    """A private home whose embedded model is "served" by a program called ``tiny-model-server``."""
    program = tmp_path / "bin" / "tiny-model-server"
    program.parent.mkdir()
    program.write_text(f"#!{sys.executable}\n{FAKE_SERVER}", encoding="utf-8")
    program.chmod(0o755)
    model = tmp_path / "models" / "tiny.gguf"
    model.parent.mkdir()
    model.write_bytes(b"GGUF")
    env = {"GRAPHRAG_HOME": str(tmp_path / "home"), "GRAPHRAG_LLAMA_SERVER": str(program),
           "GRAPHRAG_LLAMACPP_BACKEND": "server", "GRAPHRAG_LLAMACPP_MODEL": str(model),
           "GRAPHRAG_LLAMA_SERVER_PORT": str(free_port()), "GRAPHRAG_LLAMA_SERVER_SLOTS": "2",
           "GRAPHRAG_LLAMACPP_THREADS": "1"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = Settings.load()
    try:
        yield settings
    finally:
        srv.stop(settings.files, timeout_s=10)
        _kill_left_over(program)


def _kill_left_over(program: Path) -> None:
    """Kill a fake server of this test still running (one `llm stop` could not find): only a process whose
    command line names this test's own program."""
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if str(program).encode() in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


@pytest.fixture()
def foreign(tmp_path: Path) -> Iterator[subprocess.Popen]:
    """A process this home never started, whose program is called ``llama-server`` (``sleep`` by another
    name), running in another folder."""
    link = tmp_path / "elsewhere" / "llama-server"
    link.parent.mkdir()
    link.symlink_to(Path("/bin/sleep") if Path("/bin/sleep").exists() else Path("/usr/bin/sleep"))
    proc = subprocess.Popen([str(link), "300"], cwd=link.parent)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if not processes.alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_server_of_another_name_is_seen_by_status_and_stopped_by_stop(home: Settings,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["llm", "start", "--wait", "60"]) == 0
    out = capsys.readouterr().out
    found = re.search(r"pid (\d+), ready in", out)
    assert "llama-server started at" in out and found, out
    pid = int(found.group(1))

    assert main(["llm", "status"]) == 0
    out = capsys.readouterr().out
    assert "answering" in out and f"our server: running, pid {pid}" in out, out
    assert main(["llm", "start"]) == 0  # ours, with the same plan: found, not started again
    assert f"already answers at http://127.0.0.1:{home.llm.llama_server_port}/v1 (pid {pid}" in \
        capsys.readouterr().out

    assert main(["llm", "stop"]) == 0
    assert f"llama-server stopped (pid {pid})" in capsys.readouterr().out
    assert _gone(pid)  # not orphaned
    assert not srv.pid_path(home.files).exists()
    assert main(["llm", "status"]) == 3
    assert "our server: not running" in capsys.readouterr().out


def test_the_pid_file_records_the_pid_start_time_and_arguments(home: Settings) -> None:
    info = srv.start(home.llm, wait_s=60, files=home.files)
    record = processes.read_pid_file(srv.pid_path(home.files))
    assert record is not None and record.pid == info.pid
    assert record.start_time == processes.start_time(info.pid) and record.start_time is not None
    assert list(record.argv) == info.plan.argv() and record.argv[0].endswith("tiny-model-server")
    assert processes.check_ours(record, srv.server_home(home.files)) is None
    assert srv.stop(home.files) == info.pid and _gone(info.pid)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_a_pid_file_naming_a_llama_server_this_home_never_started_is_stale_and_nothing_is_killed(
        home: Settings, foreign: subprocess.Popen, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    pid_file = srv.pid_path(home.files)
    argv = ["/elsewhere/llama-server", "300"]
    forged = [
        (lambda: f"{foreign.pid}\n", "a bare pid"),  # what the old format was: nothing proves the process
        # the real start time and arguments of that process, but it does not run in this home
        (lambda: json.dumps({"pid": foreign.pid, "start_time": processes.start_time(foreign.pid), "argv": argv}),
         "runs in"),
        # the start time of another process
        (lambda: json.dumps({"pid": foreign.pid, "start_time": 1, "argv": argv}), "not at tick 1"),
    ]
    for make, why in forged:
        text = make()
        _write(pid_file, text)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="graphrag_got.llm.server"):
            assert main(["llm", "stop"]) == 0
        assert "is not running" in capsys.readouterr().out
        assert foreign.poll() is None, f"the foreign llama-server was killed by a pid file holding {text!r}"
        assert not pid_file.exists()
        assert any("stale pid file" in r.getMessage() and why in r.getMessage() for r in caplog.records), \
            (why, caplog.text)
        _write(pid_file, text)
        assert srv.status(home.llm, files=home.files).pid is None and not pid_file.exists()
        assert foreign.poll() is None


@pytest.mark.parametrize("text, why", [
    ("99999999999999999999\n", "names pid 99999999999999999999, which is no process id"),
    ('{"pid": 99999999999999999999, "start_time": 1, "argv": ["x"]}', "which is no process id"),
    ("-1\n", "names pid -1, which is no process id"),  # kill(-1) signals every process we may signal
    ("0\n", "names pid 0, which is no process id"),  # kill(0) signals our own process group
    ("", "holds 'nothing'"),
    ("pid=12\n", "holds 'pid=12'"),
    ('{"pid": true, "start_time": 1, "argv": ["x"]}', "names pid True"),
    ('{"pid": 12, "start_time": "x", "argv": ["x"]}', "start time 'x'"),
    ('{"pid": 12, "start_time": 1}', "no arguments list"),
])
def test_a_malformed_pid_file_is_stale_with_a_clear_log_line_not_a_traceback(
        home: Settings, text: str, why: str, caplog: pytest.LogCaptureFixture,
        capsys: pytest.CaptureFixture[str]) -> None:
    pid_file = srv.pid_path(home.files)
    _write(pid_file, text)
    with caplog.at_level(logging.WARNING, logger="graphrag_got.llm.server"):
        assert main(["llm", "status"]) == 3
    assert "our server: not running" in capsys.readouterr().out
    assert not pid_file.exists()
    assert any(str(pid_file) in r.getMessage() and why in r.getMessage() for r in caplog.records), caplog.text
    _write(pid_file, text)
    assert main(["llm", "stop"]) == 0 and not pid_file.exists()
    assert "is not running" in capsys.readouterr().out


def test_a_server_that_died_and_whose_pid_went_to_another_process_is_not_ours(home: Settings,
                                                                                foreign: subprocess.Popen) -> None:
    """The pid file of a server of this home whose pid now belongs to another process: the start time
    tells them apart (the other one started later)."""
    record = processes.PidRecord(foreign.pid, (processes.start_time(foreign.pid) or 0) - 1, ("/x/llama-server", "300"))
    why = processes.check_ours(record, Path(foreign.args[0]).parent)
    assert why is not None and "another process has the pid now" in why
    assert processes.check_ours(processes.PidRecord(foreign.pid, processes.start_time(foreign.pid),
                                                    ("/x/llama-server", "300")), Path(foreign.args[0]).parent) is None
    os.kill(foreign.pid, signal.SIGKILL)
    foreign.wait(timeout=10)
    assert processes.check_ours(record, Path(foreign.args[0]).parent) == f"no process {foreign.pid} runs"
