"""`graphrag-got`: one entry point; each command group lives in ``graphrag_got.commands``."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Sequence

from . import __version__
from .config import Settings
from .errors import GraphragGotError, OntologyError

# Command modules in the order `--help` lists them. A module missing from an install is skipped.
COMMANDS = ("ontology", "extract", "report", "neo4j", "load", "communities", "ask", "model", "viz",
            "doctor", "demo")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="graphrag-got",
        description="Ontology-constrained knowledge graphs in Neo4j from text, and GraphRAG questions over them.",
    )
    parser.add_argument("--version", action="version", version=f"graphrag-got {__version__}")
    parser.add_argument("--env-file", metavar="FILE", help="read settings from this .env file (default: ./.env)")
    parser.add_argument("--ontology", metavar="FILE", help="ontology file (env GRAPHRAG_ONTOLOGY; default ontology/got.json)")
    parser.add_argument("--home", metavar="DIR", help="state folder for caches, models, Neo4j (env GRAPHRAG_HOME)")
    parser.add_argument("--out", metavar="DIR", help="output folder (env GRAPHRAG_OUT; default out/)")
    parser.add_argument("--provider", choices=["auto", "ollama", "llamacpp", "replay"],
                        help="LLM provider (env GRAPHRAG_LLM_PROVIDER; default auto: Ollama if it answers, else llama.cpp)")
    parser.add_argument("--model", metavar="NAME",
                        help="Ollama model name, or embedded model name / .gguf path with --provider llamacpp")
    parser.add_argument("--replay-file", metavar="FILE", help="recorded answers for --provider replay")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        try:
            module = importlib.import_module(f".commands.{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"commands.{name}"):
                continue
            raise
        module.register(sub)
    return parser


def settings_from_args(args: argparse.Namespace) -> Settings:
    overrides: dict[str, object] = {
        "ontology_path": args.ontology,
        "home": args.home,
        "out_dir": args.out,
        "llm_provider": args.provider,
        "replay_file": args.replay_file,
    }
    if args.model:
        provider = args.provider or "auto"
        overrides["llamacpp_model" if provider == "llamacpp" else "ollama_model"] = args.model
    return Settings.load(env_file=args.env_file, **overrides)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        settings = settings_from_args(args)
        return int(args.func(args, settings) or 0)
    except OntologyError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def entry() -> None:  # pragma: no cover
    sys.exit(main())


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
