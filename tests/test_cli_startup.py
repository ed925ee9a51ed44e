"""The CLI starts at once: building the parser (``--help``, ``--version``, a usage error) imports no
heavy library. Each case runs in a fresh interpreter, since the test session itself has imported
everything long before."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: Top-level packages the parser must not import: the LLM stacks, the Neo4j driver, the HTTP service,
#: the graph libraries and pydantic (settings and the pipeline's models), rich (only the commands
#: that print progress need it) and the template engine.
HEAVY = ("langchain", "langchain_core", "langchain_ollama", "langchain_openai", "langsmith", "llama_cpp", "neo4j",
         "fastapi", "starlette", "uvicorn", "mcp", "networkx", "igraph", "leidenalg", "numpy", "pydantic",
         "pydantic_settings", "rich", "jinja2", "tree_sitter", "fastembed", "onnxruntime", "openai", "httpx")

#: After the interpreter runs the snippet (``cli`` is imported), it prints the top-level packages loaded.
_PROBE = textwrap.dedent("""
    import json, sys
    from graphrag_got import cli
    {body}
    print(json.dumps(sorted({{name.partition(".")[0] for name in sys.modules}})))
""")


def _loaded_after(body: str) -> set[str]:
    proc = subprocess.run([sys.executable, "-c", _PROBE.format(body=textwrap.dedent(body))], cwd=REPO,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin", "COLUMNS": "100"},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: importing a command's engine (pydantic and langchain) shows up."""
    loaded = _loaded_after("import graphrag_got.extract.run")
    assert {"pydantic", "langchain_core"} <= loaded


@pytest.mark.parametrize("body", [
    "",  # importing the CLI module
    "cli.build_parser()",  # every command registered, as `--help` and `--version` do
], ids=["import", "build_parser"])
def test_building_the_parser_imports_nothing_heavy(body: str) -> None:
    assert sorted(_loaded_after(body).intersection(HEAVY)) == []


@pytest.mark.parametrize("argv", [["--help"], ["--version"], ["ask", "impact", "--help"], ["ask", "local", "--help"],
                                  ["extract", "--help"], ["viz", "--help"], ["report", "--help"],
                                  ["no-such-command"]])
def test_help_version_and_usage_errors_import_nothing_heavy(argv: list[str]) -> None:
    body = f"""
        import contextlib, io
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                cli.main({argv!r})
            except SystemExit:
                pass
    """
    assert sorted(_loaded_after(body).intersection(HEAVY)) == []


def test_a_command_still_loads_what_it_needs() -> None:
    """The imports moved into the commands still happen when one runs (here `schema extraction`)."""
    body = """
        import contextlib, io
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert cli.main(["schema", "extraction"]) == 0
        assert '"$id": "graphrag_got.extraction/2"' in out.getvalue()
    """
    assert "pydantic" in _loaded_after(body)
