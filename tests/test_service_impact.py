"""`ask impact --diff` answered by a running service (`serve --code-root`, `POST /impact/diff`,
`ask impact --diff --server URL`): the same answer as the command reading the graph itself, served
for real by uvicorn on loopback against the real Neo4j, over a git repository written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from graphrag_got.cli import main
from graphrag_got.config import Settings
from graphrag_got.service import create_app
from graphrag_got.service.background import serve_in_thread
from support import free_port, git, git_repo, refuse_opening

REPO = Path(__file__).resolve().parents[1]
ONTO = ["--ontology", str(REPO / "ontology" / "code.json")]
FILES = {
    "calc/__init__.py": "",
    "calc/core.py": "def sign(x):\n    if x < 0:\n        return -1\n    return 1\n\n\ndef double(x):\n    return x * 2\n",
    "tests/test_core.py": ("from calc.core import double, sign\n\n\ndef test_neg():\n    assert sign(-5) == -1\n\n\n"
                           "def test_double():\n    assert double(2) == 4\n"),
}


@pytest.fixture()
def code_graph(tmp_path: Path, clean_graph, neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    """A repository of FILES, its code graph loaded (static: no coverage run), and a change to `sign`
    in the working tree."""
    root = git_repo(tmp_path / "repo", dict(FILES))
    assert main(["code", "refresh", str(root), "-o", str(tmp_path / "code.json"), *ONTO]) == 0
    core = root / "calc" / "core.py"
    core.write_text(core.read_text(encoding="utf-8").replace("return -1", "return -2"), encoding="utf-8")
    return root, clean_graph


def _without_timing(data: dict) -> dict:  # type: ignore[type-arg]
    return {k: v for k, v in data.items() if k != "seconds"}


def test_the_service_answers_a_diff_as_the_command_does(code_graph, neo4j_settings: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root, driver = code_graph
    assert main(["ask", "impact", "--diff", "--root", str(root), "--json", *ONTO]) == 0
    here = json.loads(capsys.readouterr().out)
    assert here["pytest_args"] == ["tests/test_core.py::test_neg"]
    app = create_app(neo4j_settings, driver=driver, code_root=root)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        res = client.post("/impact/diff", json={})
        assert res.status_code == 200, res.text
        assert _without_timing(res.json()) == _without_timing(here)
        # the CLI as a client of the service: the same JSON, and a short text form
        assert main(["ask", "impact", "--diff", "--server", url, "--json", *ONTO]) == 0
        assert _without_timing(json.loads(capsys.readouterr().out)) == _without_timing(here)
        assert main(["ask", "impact", "--diff", "--server", url + "/", *ONTO]) == 0
        assert capsys.readouterr().out.splitlines() == ["working tree vs HEAD: 1 test(s) to run:",
                                                        "  tests/test_core.py::test_neg"]
        # a pre-commit hook's question: the index against HEAD
        assert client.post("/impact/diff", json={"staged": True}).json()["pytest_args"] == []
        git(root, "add", "-A")
        staged = client.post("/impact/diff", json={"staged": True}).json()
        assert staged["change"] == "index vs HEAD" and staged["pytest_args"] == ["tests/test_core.py::test_neg"]
        # the ready pre-commit hook, pointed at the service
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               "PYTHONPATH": str(REPO), "PYTHON": sys.executable, "GRAPHRAG_HOOK_RUN": "0",
               "GRAPHRAG_IMPACT_SERVER": url, "NEO4J_URI": "bolt://127.0.0.1:1"}  # the hook does not reach Neo4j itself
        hook = subprocess.run(["sh", str(REPO / "docs" / "hooks" / "pre-commit")], cwd=root, env=env,
                              capture_output=True, text=True, timeout=120)
        assert hook.returncode == 0, hook.stdout + hook.stderr
        assert "reaches 1 test(s)" in hook.stdout and "tests/test_core.py::test_neg" in hook.stdout
        # bad requests say what is wrong; nothing is read outside the repository it was started for
        for body, code in (({"diff": "--output=/tmp/x"}, "invalid_request"), ({"diff": "nosuchrev"}, "git_failed"),
                           ({"hops": 0}, "invalid_request"), ({"hops": 5000}, "invalid_request"),
                           ({"root": "/"}, "invalid_request")):
            res = client.post("/impact/diff", json=body)
            assert res.status_code == 422 and res.json()["error"]["code"] == code, (body, res.text)
            assert res.json()["error"]["message"]


def test_without_a_code_root_the_endpoint_says_how_to_start_it(code_graph, neo4j_settings: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    _, driver = code_graph
    with serve_in_thread(create_app(neo4j_settings, driver=driver)) as url, httpx.Client(base_url=url) as client:
        res = client.post("/impact/diff", json={})
        assert res.status_code == 409 and res.json()["error"]["code"] == "no_code_root"
        assert "--code-root" in res.json()["error"]["message"]
        assert main(["ask", "impact", "--diff", "--server", url, *ONTO]) == 1
        assert "refused the change" in capsys.readouterr().err
    port = free_port()  # nobody listens on it
    assert main(["ask", "impact", "--diff", "--server", f"http://127.0.0.1:{port}", *ONTO]) == 1
    assert "no answer from" in capsys.readouterr().err
    assert main(["ask", "impact", "calc.core.sign", "--server", f"http://127.0.0.1:{port}", *ONTO]) == 1
    assert "--server applies to --diff only" in capsys.readouterr().err


def test_links_in_the_working_tree_are_reported_never_opened(code_graph, neo4j_settings: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root, driver = code_graph
    (root / "calc" / "passwd.py").symlink_to("/etc/passwd")
    (root / "calc" / "zero.py").symlink_to("/dev/zero")  # read, it filled memory: HTTP 500 MemoryError
    app = create_app(neo4j_settings, driver=driver, code_root=root)
    with refuse_opening("/etc/passwd", "/dev/zero") as opened, serve_in_thread(app) as url, \
            httpx.Client(base_url=url, timeout=60) as client:
        res = client.post("/impact/diff", json={})
        assert res.status_code == 200, res.text
        data = res.json()
        notes = {f["path"]: f["note"] for f in data["files"] if f["skipped"]}
        assert set(notes) == {"calc/passwd.py", "calc/zero.py"}, data["files"]
        assert "symbolic link to '/etc/passwd'" in notes["calc/passwd.py"]
        assert data["pytest_args"] == ["tests/test_core.py::test_neg"]  # the rest of the change is answered
        assert any("2 changed Python file(s) not read" in w for w in data["warnings"])
        # the command reading the graph itself: the same records, as lines
        assert main(["ask", "impact", "--diff", "--root", str(root), *ONTO]) == 0
    assert opened == []
    out = capsys.readouterr().out
    assert "calc/zero.py: a symbolic link to '/dev/zero': not followed" in out
    assert "warning: 2 changed Python file(s) not read" in out


def test_deeply_nested_source_is_a_record_not_a_500(code_graph, neo4j_settings: Settings, capsys) -> None:  # type: ignore[no-untyped-def]
    root, driver = code_graph
    (root / "calc" / "sums.py").write_text("X = " + "1 + " * 100_000 + "1\n", encoding="utf-8")  # RecursionError
    with serve_in_thread(create_app(neo4j_settings, driver=driver, code_root=root)) as url, \
            httpx.Client(base_url=url, timeout=60) as client:
        res = client.post("/impact/diff", json={})
    assert res.status_code == 200, res.text
    files = {f["path"]: f for f in res.json()["files"]}
    assert files["calc/sums.py"]["skipped"] and "nested too deeply" in files["calc/sums.py"]["note"]
    assert res.json()["pytest_args"] == ["tests/test_core.py::test_neg"]
    assert main(["ask", "impact", "--diff", "--root", str(root), *ONTO]) == 0
    assert "calc/sums.py: nested too deeply to parse" in capsys.readouterr().out


def test_a_nul_in_the_revision_is_a_422(tmp_path: Path, neo4j_settings: Settings) -> None:
    root = git_repo(tmp_path / "repo", dict(FILES))
    with serve_in_thread(create_app(neo4j_settings, code_root=root)) as url, httpx.Client(base_url=url) as client:
        for diff in ("HEAD\u0000", "HEAD~1..HEAD\u0000"):
            res = client.post("/impact/diff", json={"diff": diff})
            assert res.status_code == 422 and res.json()["error"]["code"] == "invalid_request", res.text
            assert "control character" in res.json()["error"]["message"]


def test_a_body_too_large_for_impact_diff_says_what_the_body_holds(tmp_path: Path, neo4j_settings: Settings) -> None:
    root = git_repo(tmp_path / "repo", dict(FILES))
    with serve_in_thread(create_app(neo4j_settings, code_root=root)) as url, httpx.Client(base_url=url) as client:
        for content in (b"x" * 200_000, iter([b"x" * 1000] * 200)):  # declared length, or streamed without one
            res = client.post("/impact/diff", content=content, headers={"content-type": "application/json"})
            assert res.status_code == 413 and res.json()["error"]["code"] == "too_large", res.text
            message = res.json()["error"]["message"]
            assert "question" not in message and "/impact/diff" in message and "revision" in message
        assert "shorter question" in client.post("/ask", content=b"x" * 200_000).json()["error"]["message"]


def _stub_server(replies: list[bytes]):  # type: ignore[no-untyped-def]
    """An HTTP server on loopback answering each POST with the next of ``replies`` (raw bytes on the
    socket: a status line and headers, or anything else)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the name http.server calls
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.wfile.write(replies.pop(0))
            self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_reply_that_is_not_the_diff_json_is_a_clear_error(capsys) -> None:  # type: ignore[no-untyped-def]
    def ok(body: bytes, kind: str = "application/json") -> bytes:
        return (b"HTTP/1.1 200 OK\r\ncontent-type: " + kind.encode() + b"\r\ncontent-length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)

    replies = [ok(b"<html>hello</html>", "text/html"), ok(b"[1, 2]"), ok(b'{"detail": "not found"}'),
               ok(b'{"format": "graphrag_got.impact-diff/2", "pytest_args": "tests"}'), ok(b"\xff\xfe"),
               b"SSH-2.0-OpenSSH\r\n"]
    server = _stub_server(list(replies))
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        for reply in replies:
            assert main(["ask", "impact", "--diff", "--server", url, *ONTO]) == 1, reply
            captured = capsys.readouterr()
            assert "Traceback" not in captured.err and captured.out == "", reply
            assert url in captured.err and "--server" in captured.err, (reply, captured.err)
    finally:
        server.shutdown()
        server.server_close()


def test_serve_refuses_a_code_root_outside_git(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import uvicorn

    started: list[bool] = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, *a, **k: started.append(True))
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # no repository above tmp_path counts
    (tmp_path / "plain").mkdir()
    assert main(["serve", "--code-root", str(tmp_path / "plain"), "--port", str(free_port()), *ONTO]) == 1
    err = capsys.readouterr().err
    assert started == [] and "not inside a git repository" in err and "--code-root" in err
