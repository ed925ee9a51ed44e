"""`graphrag-got demo`: the whole pipeline on the worked example (or your corpus and ontology)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("demo", help="run everything: extract, report, load, communities, a local and a global question")
    p.add_argument("--corpus", help="corpus file or folder (default: GRAPHRAG_CORPUS, corpus/got.txt)")
    p.add_argument("--local-question", help="default: the corpus's demo_questions.json")
    p.add_argument("--global-question", help="default: the corpus's demo_questions.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.pipeline.demo import run_demo

    if args.corpus:
        settings = settings.with_overrides(corpus_path=args.corpus)
    with progress_bar() as progress:
        run_demo(settings, local_question=args.local_question, global_question=args.global_question,
                 say=lambda line: print(line, flush=True), progress=progress)
    return 0
