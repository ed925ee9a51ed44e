"""The documentation site (``docs/``, ``mkdocs.yml``) builds strictly and stays in step with the code.

The build runs MkDocs itself with ``--strict``: a broken link or anchor, a snippet whose file is
missing, or a page left out of ``nav`` fails it. Without MkDocs (``pip install -e '.[dev]'``) the
build test is skipped, and under GRAPHRAG_REQUIRE_LLM=1 (CI: everything is installed) it fails.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from markdown_commands import REPO, block_commands, problem

from graphrag_got.extract.extraction import FailureReason, Reason, RepairReason

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))
SNIPPET = re.compile(r'^\s*--8<--\s+"([^"]+)"', re.MULTILINE)


def _included() -> set[str]:
    """Every file a page includes with ``--8<-- "path"`` (a ``:start:end`` line range dropped)."""
    return {m.split(":", 1)[0] for page in PAGES for m in SNIPPET.findall(page.read_text(encoding="utf-8"))}


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        message = "mkdocs and mkdocs-material are not installed (pip install -e '.[dev]')"
        if os.environ.get("GRAPHRAG_REQUIRE_LLM") == "1":
            pytest.fail(message)
        pytest.skip(message)
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")  # the theme's notice about MkDocs 2.0, not a problem of ours
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    # the pages are there, with the text the snippets brought in
    settings_page = (tmp_path / "site" / "reference" / "settings" / "index.html").read_text(encoding="utf-8")
    assert "GRAPHRAG_CHUNK_MAX_CHARS" in settings_page
    routing = (tmp_path / "site" / "benchmarks" / "search" / "index.html").read_text(encoding="utf-8")
    assert "routing accuracy:" in routing


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    """The strict build can fail: the same configuration on a copy of the docs with one bad link."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[gone](nowhere.md)\n", encoding="utf-8")
    config = (REPO / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - Home: index.md\n", encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=tmp_path, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode != 0 and "nowhere.md" in run.stdout + run.stderr


def test_every_results_file_is_on_a_benchmark_page() -> None:
    results = [p for p in (REPO / "benchmarks").glob("results/*.txt")]
    results += [p for p in (REPO / "benchmarks").glob("*/results/*.md")]
    results += [p for p in (REPO / "benchmarks").glob("*/README.md")]
    included = _included()
    missing = sorted(str(p.relative_to(REPO)) for p in results if str(p.relative_to(REPO)) not in included)
    assert missing == [], "include these in a page of docs/benchmarks/ (--8<-- \"path\")"


def test_every_included_file_exists() -> None:
    assert sorted(p for p in _included() if not (REPO / p).is_file()) == []


def test_every_command_has_a_row_in_the_cli_reference() -> None:
    from graphrag_got.cli import build_parser

    page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    rows = {m for m in re.findall(r"^\| `([a-z0-9-]+)` \|", page, re.MULTILINE)}
    commands = {name for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)
                for name in action.choices}
    assert sorted(commands - rows) == [], "add a row for these commands to docs/reference/cli.md"
    assert sorted(rows - commands) == [], "docs/reference/cli.md lists commands the CLI does not have"


def test_every_reason_code_is_explained() -> None:
    page = (DOCS / "concepts" / "audit.md").read_text(encoding="utf-8")
    codes = [c.value for enum in (Reason, RepairReason, FailureReason) for c in enum]
    assert [c for c in codes if f"`{c}`" not in page] == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_the_commands_of_a_page_are_sound(page: Path) -> None:
    bad = [f"{c}: {why}" for c in block_commands(page) if (why := problem(c))]
    assert bad == []
