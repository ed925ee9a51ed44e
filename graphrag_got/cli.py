"""`graphrag-got`: one entry point; each command group lives in ``graphrag_got.commands``.

Global options (``--ontology``, ``--provider``, ``--out``, ``-v``...) are accepted before or after
the subcommand: ``graphrag-got --provider replay extract corpus/got.txt`` and
``graphrag-got extract corpus/got.txt --provider replay`` are the same. They are added to every
subparser with ``default=SUPPRESS``, so a value given before the subcommand is not overwritten by
the subparser's default. A subcommand that defines an option of the same name for itself
(``viz --out FILE.html``) keeps its own meaning; the global one is then accepted before it only.

Start-up time: building the parser imports only the command modules, and those import nothing
heavy at module level (no pydantic, rich, langchain, neo4j, llama_cpp, fastapi, networkx); each
command imports what it needs when it runs, so ``--help``, ``--version`` and a usage error answer
at once (``tests/test_cli_startup.py``, ``benchmarks/cli_startup.py``).
"""

from __future__ import annotations

import argparse
import os
import contextlib
import importlib
import logging
import signal
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from graphrag_got import __version__
from graphrag_got.errors import GraphragGotError

if TYPE_CHECKING:  # pragma: no cover - pydantic-settings costs ~0.1 s; `--help` and `--version` never need it
    from graphrag_got.config import Settings

# Command modules in the order `--help` lists them. A module missing from an install is skipped.
COMMANDS = ("ontology", "schema", "prompts", "extract", "report", "review", "examples", "eval", "neo4j", "load", "communities", "ask", "code", "model", "llm",
            "viz", "doctor", "demo", "build", "serve", "mcp")

EXIT_INTERRUPTED = 130  # the shell's convention for "killed by SIGINT"

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GlobalOption:
    flags: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)


GLOBAL_OPTIONS: tuple[GlobalOption, ...] = (
    GlobalOption(("--env-file",), {"metavar": "FILE", "help": "read settings from this .env file (default: ./.env)"}),
    GlobalOption(("--ontology",), {"metavar": "FILE",
                                   "help": "ontology file (env GRAPHRAG_ONTOLOGY; default ontology/got.json)"}),
    GlobalOption(("--home",), {"metavar": "DIR",
                               "help": "state folder for caches, models, Neo4j (env GRAPHRAG_HOME)"}),
    GlobalOption(("--out",), {"metavar": "DIR", "help": "output folder (env GRAPHRAG_OUT; default out/)"}),
    GlobalOption(("--provider",), {"choices": ["auto", "ollama", "llamacpp", "openai", "langchain", "replay"],
                                   "help": "LLM provider (env GRAPHRAG_LLM_PROVIDER; default auto: Ollama if it "
                                           "answers, else llama.cpp)"}),
    GlobalOption(("--model",), {"metavar": "NAME", "help": "Ollama model name; embedded model name / .gguf path "
                                                           "with --provider llamacpp; served model name with "
                                                           "--provider openai; PROVIDER:MODEL (init_chat_model) "
                                                           "with --provider langchain"}),
    GlobalOption(("--base-url",), {"metavar": "URL", "action": "append",
                                   "help": "OpenAI-compatible server for --provider openai (repeat it, or separate "
                                           "URLs with commas, for a pool; env GRAPHRAG_OPENAI_BASE_URLS)"}),
    GlobalOption(("--replay-file",), {"metavar": "FILE", "help": "recorded answers for --provider replay"}),
)

VERBOSE_FLAGS = ("-v", "--verbose")
VERBOSE_HELP = "show more on stderr: -v progress details (INFO), -vv everything (DEBUG)"


def _add_global_options(parser: argparse.ArgumentParser, *, depth: int) -> None:
    """The global options on ``parser``: real defaults at the top (depth 0), SUPPRESS below.

    ``-v`` counts per level (dest ``verbose_<depth>``) and the levels are summed, so
    ``-v extract -v`` is ``-vv``; a subparser would otherwise overwrite the count given before it.
    """
    top = depth == 0
    group = parser if top else parser.add_argument_group("global options (also accepted before the command)")
    taken = set(parser._option_string_actions)  # argparse has no public view of the defined flags
    for opt in GLOBAL_OPTIONS:
        if taken.intersection(opt.flags):
            continue  # the subcommand's own option of that name wins
        kwargs = dict(opt.kwargs, dest=opt.flags[0].lstrip("-").replace("-", "_"))
        if not top:
            kwargs["default"] = argparse.SUPPRESS
        group.add_argument(*opt.flags, **kwargs)
    if not taken.intersection(VERBOSE_FLAGS):
        group.add_argument(*VERBOSE_FLAGS, action="count", dest=f"verbose_{depth}",
                           default=0 if top else argparse.SUPPRESS, help=VERBOSE_HELP)


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    seen: set[int] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                if id(child) not in seen:  # aliases map several names to one parser
                    seen.add(id(child))
                    yield child


def _add_global_options_below(parser: argparse.ArgumentParser, depth: int = 1) -> None:
    for child in _subparsers(parser):
        _add_global_options(child, depth=depth)
        _add_global_options_below(child, depth + 1)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphrag-got",
        description="Ontology-constrained knowledge graphs in Neo4j from text, and GraphRAG questions over them.",
        epilog="Global options may also be given after the command.",
    )
    parser.add_argument("--version", action="version", version=f"graphrag-got {__version__}")
    _add_global_options(parser, depth=0)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f"graphrag_got.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"commands.{name}"):
                continue
            raise
        module.register(sub)
    _add_global_options_below(parser)
    return parser


def verbosity(args: argparse.Namespace) -> int:
    """How many ``-v`` were given, before and after the subcommand together."""
    return sum(v for k, v in vars(args).items() if k.startswith("verbose_") and isinstance(v, int))


def settings_from_args(args: argparse.Namespace) -> Settings:
    """Settings.load() with the global flags on top; ``--model`` goes to the provider it is for."""
    from graphrag_got.config import Settings

    overrides: dict[str, object] = {
        "ontology_path": getattr(args, "ontology", None),
        "home": getattr(args, "home", None),
        "out_dir": getattr(args, "out", None),
        "llm_provider": getattr(args, "provider", None),
        "replay_file": getattr(args, "replay_file", None),
        "openai_base_urls": getattr(args, "base_url", None),
    }
    settings = Settings.load(env_file=getattr(args, "env_file", None), **overrides)
    model = getattr(args, "model", None)
    if model:
        key = {"llamacpp": "llamacpp_model", "openai": "openai_model",
               "langchain": "langchain_model"}.get(settings.llm.provider, "ollama_model")
        settings = settings.with_overrides(**{key: model})
    return settings


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """No KeyboardInterrupt while the block runs (a second Ctrl-C while we report the first)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code (0 ok, 1 error, 2 usage, 130 interrupted)."""
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if not getattr(args, "func", None):
            parser.print_help()
            return 2
        from graphrag_got.commands.render import configure_logging

        configure_logging(verbosity(args))
        settings = settings_from_args(args)
        logger.debug("settings: %s", {k: v for k, v in settings.flat().items() if k != "neo4j_password"})
        return int(args.func(args, settings) or 0)
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        with _sigint_ignored():
            print("interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED


def entry() -> None:  # pragma: no cover - the console script; tests call main()
    try:
        code = main()
    except BrokenPipeError:
        # the reader went away (`graphrag-got schema extraction | head`): not an error of ours; point
        # stdout at devnull so the interpreter's final flush does not raise again
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    if code == EXIT_INTERRUPTED and threading.current_thread() is threading.main_thread():
        # Interpreter shutdown still joins worker threads (e.g. an LLM call in flight): a Ctrl-C
        # there would print a traceback after "interrupted".
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
