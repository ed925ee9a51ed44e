"""The command lines a Markdown page shows, and a check of each against the real thing.

Used by ``tests/test_readme_commands.py`` (README: every command) and ``tests/test_docs.py`` (the
pages of the docs site). A command is a line of a ``bash``/``sh``/``shell`` code block (``\\``
continuations joined, ``# comments`` dropped by :mod:`shlex`), or an inline code span of the prose
that starts like one. :func:`problem` answers ``None`` when the command is sound:

- ``graphrag-got ...`` (also ``.venv/bin/graphrag-got``): parses with the CLI's own parser
  (``graphrag_got.cli.build_parser``) and reaches a command function;
- ``scripts/x.sh``: exists and is executable;
- ``python -m MODULE`` (also ``.venv/bin/python``): the module is found;
- ``docker compose up -d [SERVICE...]``: the services are in ``docker-compose.yml``;
- ``mkdocs serve|build``: ``mkdocs.yml`` exists;
- ``VAR=value`` before any of these, or alone: ``VAR`` is a setting (``graphrag_got.config.ENV``) or
  one of :data:`OTHER_VARIABLES`.

Anything else is a problem too, so a page cannot show a command nobody checks.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
SHELL_LANGS = ("bash", "sh", "shell")
#: Variables a page may set that are not settings of graphrag_got.config (read by the scripts or tools).
OTHER_VARIABLES = frozenset({"LLAMA_CMAKE_ARGS", "PYTHON", "TEXT2KGBENCH_DIR", "NO_MKDOCS_2_WARNING"})
_FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
_INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_INLINE_STARTS = ("graphrag-got ", ".venv/bin/graphrag-got ", "scripts/", "python -m ", ".venv/bin/python -m ")


@dataclass(frozen=True)
class Command:
    where: str  # "README.md:42"
    text: str  # as written, continuations joined
    argv: tuple[str, ...]  # the words after the variable assignments
    env: tuple[str, ...]  # the variables assigned before the command

    def __str__(self) -> str:
        return f"{self.where}: {self.text}"


def _where(path: Path, number: int) -> str:
    return f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path}:{number}"


def _command(where: str, text: str) -> Command | None:
    try:
        words = shlex.split(text, comments=True)
    except ValueError as exc:  # an unbalanced quote: report it as the command itself
        return Command(where, text, ("<unreadable>", str(exc)), ())
    env = []
    while words and _ASSIGNMENT.match(words[0]):
        env.append(words.pop(0).split("=", 1)[0])
    if not words and not env:
        return None
    return Command(where, text, tuple(words), tuple(env))


def block_commands(path: Path) -> list[Command]:
    """Every command line of the shell code blocks of ``path``."""
    out: list[Command] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    fence: str | None = None
    lang = ""
    pending: list[str] = []
    start = 0
    for number, line in enumerate(lines, 1):
        m = _FENCE.match(line)
        if fence is None:
            if m:
                fence, lang = m.group(2), m.group(3).lower()
            continue
        if m and m.group(2).startswith(fence) and not m.group(3):
            fence = None
            continue
        if lang not in SHELL_LANGS:
            continue
        if not pending:
            start = number
        pending.append(line.rstrip())
        if line.rstrip().endswith("\\"):
            pending[-1] = pending[-1][:-1]
            continue
        cmd = _command(_where(path, start), " ".join(p.strip() for p in pending))
        pending = []
        if cmd is not None:
            out.append(cmd)
    return out


def inline_commands(path: Path) -> list[Command]:
    """Inline code spans of the prose (outside code blocks) that start like a command."""
    out: list[Command] = []
    fence: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        m = _FENCE.match(line)
        if m and (fence is None or (m.group(2).startswith(fence) and not m.group(3))):
            fence = m.group(2) if fence is None else None
            continue
        if fence is not None:
            continue
        for span in _INLINE.findall(line):
            if span.startswith(_INLINE_STARTS) and "..." not in span and "|" not in span:
                cmd = _command(_where(path, number), span)
                if cmd is not None:
                    out.append(cmd)
    return out


def cli_function(argv: tuple[str, ...]) -> tuple[str | None, str]:
    """Parse ``graphrag-got`` arguments with the real parser: (the command function's qualified name,
    or None, and argparse's message)."""
    from graphrag_got.cli import build_parser

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args: argparse.Namespace = build_parser().parse_args(list(argv))
    except SystemExit:
        return None, err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "argparse exited"
    func = getattr(args, "func", None)
    if func is None:
        return None, "no command function (an incomplete command)"
    return f"{func.__module__}.{func.__qualname__}", ""


def problem(cmd: Command) -> str | None:
    """Why ``cmd`` is not a sound command of this repository, or None."""
    from graphrag_got.config import ENV

    unknown = [v for v in cmd.env if v not in ENV.values() and v not in OTHER_VARIABLES]
    if unknown:
        return f"unknown variable(s) {unknown}"
    if not cmd.argv:
        return None
    head, rest = cmd.argv[0], cmd.argv[1:]
    if head in ("graphrag-got", ".venv/bin/graphrag-got"):
        func, message = cli_function(rest)
        return None if func else f"the CLI refuses it: {message}"
    if head.startswith("scripts/"):
        script = REPO / head
        if not script.is_file():
            return f"{head} does not exist"
        return None if os.access(script, os.X_OK) else f"{head} is not executable"
    if head in ("python", "python3", ".venv/bin/python") and rest[:1] == ("-m",) and len(rest) > 1:
        return None if importlib.util.find_spec(rest[1]) is not None else f"no module {rest[1]}"
    if head == "docker" and rest[:3] == ("compose", "up", "-d"):
        services = yaml.safe_load((REPO / "docker-compose.yml").read_text(encoding="utf-8"))["services"]
        missing = [s for s in rest[3:] if s not in services]
        return f"docker-compose.yml has no service {missing}" if missing else None
    if head in ("mkdocs", ".venv/bin/mkdocs") and rest[:1] in (("serve",), ("build",)):
        return None if (REPO / "mkdocs.yml").is_file() else "no mkdocs.yml"
    return f"{head!r} is not a command this check knows (see tests/markdown_commands.py)"
