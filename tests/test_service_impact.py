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
from support import free_port, git, git_repo

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
