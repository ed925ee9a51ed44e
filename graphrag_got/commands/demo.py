"""`graphrag-got demo`: the whole pipeline on the worked example (or your corpus and ontology)."""

from __future__ import annotations

import argparse

from ..config import Settings
from ..demo import GLOBAL_QUESTION, LOCAL_QUESTION, run_demo


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("demo", help="run everything: extract, report, load, communities, a local and a global question")
    p.add_argument("--corpus", help="corpus file or folder (default: corpus/)")
    p.add_argument("--local-question", default=LOCAL_QUESTION)
    p.add_argument("--global-question", default=GLOBAL_QUESTION)
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if args.corpus:
        settings = settings.with_overrides(corpus_path=args.corpus)
    run_demo(settings, local_question=args.local_question, global_question=args.global_question)
    return 0
