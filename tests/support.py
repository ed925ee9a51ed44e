"""Helpers shared by test modules (fixtures live in conftest.py)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler

from graphrag_got.config import Settings
from graphrag_got.llm.model_store import is_installed

REPO = Path(__file__).resolve().parents[1]

#: The small embedded model the LLM tests run (scripts/test.sh installs it).
TEST_MODEL = os.environ.get("GRAPHRAG_TEST_MODEL", "qwen2.5-coder-0.5b")

#: Text2KGBench data: ../shared beside the repo (as in CI), or TEXT2KGBENCH_DIR.
TEXT2KGBENCH_DATA = Path(os.environ.get("TEXT2KGBENCH_DIR") or REPO.parent / "shared" / "data" / "text2kgbench")
needs_text2kgbench = pytest.mark.skipif(
    not (TEXT2KGBENCH_DATA / "dbpedia_webnlg").is_dir(),
    reason=f"Text2KGBench data not found at {TEXT2KGBENCH_DATA} "
           "(set TEXT2KGBENCH_DIR to the folder holding dbpedia_webnlg/)",
)


def require_embedded_model(settings: Settings, model: str = TEST_MODEL) -> None:
    """Skip when llama-cpp-python or the model is missing; fail instead under GRAPHRAG_REQUIRE_LLM=1 (CI)."""
    missing = []
    if importlib.util.find_spec("llama_cpp") is None:
        missing.append("llama-cpp-python is not installed")
    elif not is_installed(model, settings.llm, files=settings.files):
        missing.append(f"model {model} is not installed (graphrag-got model install {model})")
    if missing:
        if os.environ.get("GRAPHRAG_REQUIRE_LLM") == "1":
            pytest.fail("; ".join(missing))
        pytest.skip("; ".join(missing))


def require_llama_server(settings: Settings) -> Path:
    """The llama-server program; skip when it is not built, but fail under GRAPHRAG_REQUIRE_LLM=1 (CI)
    unless the build was turned off on purpose (GRAPHRAG_BUILD_LLAMA_SERVER=0): setup was to build it."""
    from graphrag_got.llm.server import find_binary, missing_reason

    binary = find_binary(settings.llm)
    if binary is not None:
        return binary
    reason = missing_reason(settings.llm)
    if os.environ.get("GRAPHRAG_REQUIRE_LLM") == "1" and os.environ.get("GRAPHRAG_BUILD_LLAMA_SERVER", "1") != "0":
        pytest.fail(f"{reason}; scripts/setup.sh was to build it (GRAPHRAG_BUILD_LLAMA_SERVER=0 turns that off)")
    pytest.skip(reason)


class CallCounter(BaseCallbackHandler):
    """Counts chat-model calls (and keeps their prompts) independently of the code under test."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompts: list[str] = []

    def on_chat_model_start(self, serialized: Any, messages: Any, **kwargs: Any) -> None:
        self.calls += 1
        self.prompts.append("\n".join(str(m.content) for batch in messages for m in batch))


def served_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings whose embedded model (the test model) is served by llama-server on a free port with a private
    home, one thread (next to other work llama.cpp's threads spin-wait on each other), skipped as
    :func:`require_llama_server` says; ``overrides`` on top (slots, context, answer length, retries...)."""
    base = Settings.load()
    require_embedded_model(base, TEST_MODEL)
    require_llama_server(base)
    values: dict[str, Any] = dict(
        home=tmp_path / "home", out_dir=tmp_path / "out", models_path=base.models_dir.resolve(),
        llm_provider="llamacpp", llamacpp_backend="server", llamacpp_model=TEST_MODEL, llama_server_port=free_port(),
        concurrency=None, llamacpp_threads=int(os.environ.get("GRAPHRAG_LLAMACPP_THREADS", "1")))
    return base.with_overrides(**{**values, **overrides})


def nested_groups(seed: int = 7) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Entity and relation rows (as Neo4j returns them) of 4 groups of 30 entities, each made of 3 dense
    sub-groups of 10 loosely tied together, the groups tied in a ring: a graph with two levels."""
    import random

    rng = random.Random(seed)

    def rel(a: str, b: str, support: int) -> dict[str, Any]:
        return {"start": a, "end": b, "type": "R", "symmetric": False, "support": support, "attributes": []}

    ents: list[dict[str, Any]] = []
    rels: list[dict[str, Any]] = []
    for g in range(4):
        for s in range(3):
            members = [f"T|g{g}s{s}n{i}" for i in range(10)]
            ents += [{"uid": u, "name": u[2:], "type": "T", "properties": {}} for u in members]
            rels += [rel(a, b, 3) for i, a in enumerate(members) for b in members[i + 1:] if rng.random() < 0.8]
            rels += [rel(f"T|g{g}s{s}n{k}", f"T|g{g}s{(s + 1) % 3}n{k + 1}", 3) for k in range(6)]
        rels.append(rel(f"T|g{g}s0n5", f"T|g{(g + 1) % 4}s0n6", 1))
    return ents, rels


def free_port() -> int:
    """A TCP port nothing listens on now (loopback)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def write_files(root: Path, files: dict[str, str | None]) -> None:
    """Write ``files`` (path under ``root`` -> text) into ``root``; None deletes the file."""
    for rel, text in files.items():
        p = root / rel
        if text is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``git ARGS`` in ``root`` (raises when it fails)."""
    return subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)


def git_repo(root: Path, files: dict[str, str | None], *, commit: bool = True) -> Path:
    """A new git repository at ``root`` holding ``files``, committed once unless ``commit`` is False."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q")
    git(root, "config", "user.email", "t@example.org")
    git(root, "config", "user.name", "t")
    write_files(root, files)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-qm", "one")
    return root


#: Paths the audit hook refuses to open while :func:`refuse_opening` is active, and what it caught.
_REFUSED: list[tuple[set[str], list[str]]] = []
_HOOKED = False


def _open_audit(event: str, args: tuple[Any, ...]) -> None:
    if event != "open" or not _REFUSED or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    import stat

    path = os.fsdecode(args[0])
    real = os.path.realpath(path)
    try:
        special = not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        special = False
    for refused, opened in _REFUSED:
        if real in refused or special:
            opened.append(path)
            # not an OSError: the code under test must not be able to swallow it as "unreadable"
            raise AssertionError(f"opened {path!r} (really {real}), which the test forbids")


class refuse_opening:
    """``with refuse_opening("/etc/passwd", "/dev/zero") as opened:`` fails any ``open`` in this process
    of those paths (links to them included, by real path) or of a pipe, socket or device, with an
    AssertionError, and lists the paths tried in ``opened`` (a Python audit hook: it sees ``open()``,
    ``Path.read_bytes`` and ``os.open`` alike)."""

    def __init__(self, *paths: str) -> None:
        self.entry: tuple[set[str], list[str]] = ({os.path.realpath(p) for p in paths}, [])

    def __enter__(self) -> list[str]:
        global _HOOKED
        if not _HOOKED:
            import sys

            sys.addaudithook(_open_audit)  # cannot be removed: it does nothing outside this block
            _HOOKED = True
        _REFUSED.append(self.entry)
        return self.entry[1]

    def __exit__(self, *exc: object) -> None:
        _REFUSED.remove(self.entry)


#: A small catalog of another domain than the example corpus, for the answer checks' unit tests
#: (tests/test_answer_support.py, tests/test_answer_extractive.py): entity rows as the matcher reads them.
LOVELACE_CATALOG = [
    {"uid": "Person|ada lovelace", "key": "ada lovelace", "name": "Ada Lovelace", "type": "Person",
     "aliases": ["Condesa de Lovelace"]},
    {"uid": "Person|charles babbage", "key": "charles babbage", "name": "Charles Babbage", "type": "Person"},
    {"uid": "Person|mary somerville", "key": "mary somerville", "name": "Mary Somerville", "type": "Person"},
    {"uid": "Machine|analytical engine", "key": "analytical engine", "name": "Analytical Engine", "type": "Machine"},
    {"uid": "Place|london", "key": "london", "name": "London", "type": "Place"},
]  # fmt: skip
