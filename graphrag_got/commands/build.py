"""`graphrag-got build VAULT`: the incremental pipeline (extract, load, embeddings, communities) for a daily job."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("build", help="bring the graph in line with a corpus or notes vault: only new and changed "
                                     "notes cost model calls; deleted notes are pruned")
    p.add_argument("corpus", nargs="?", help="corpus file or folder, e.g. a Markdown vault (default: GRAPHRAG_CORPUS)")
    p.add_argument("--no-communities", action="store_true", help="stop after load and embeddings")
    p.add_argument("--json", action="store_true", help="print the build summary as JSON at the end")
    p.add_argument("--relations-for", nargs="+", metavar="PATH", default=[],
                   help="with the terms or mentions strategy: also ask the typed relations of these notes or folders (paths "
                        "inside the vault, or on disk under it; after the vault: build VAULT --relations-for PATH...); "
                        "cached, so a rerun asks nothing again")
    p.add_argument("--strategy", choices=["auto", "generate", "classify", "mentions", "terms"],
                   help="extraction strategy (setting GRAPHRAG_EXTRACTION; auto: terms for a notes vault with a "
                        "small model, else generate)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.prompts import print_prompt_lines
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.extract.run import prompt_names
    from graphrag_got.pipeline.build import run_build
    from graphrag_got.prompts import COMMUNITY_REPORT

    print_prompt_lines(settings, prompt_names(settings.extract)
                       + (() if args.no_communities else (COMMUNITY_REPORT,)))
    with progress_bar() as progress:
        res = run_build(settings.with_overrides(extraction=args.strategy), args.corpus,
                        communities=not args.no_communities, say=lambda line: print(line, flush=True),
                        progress=progress, relations_for=args.relations_for)
    print(f"build done in {res.seconds:.1f}s: {res.total_llm_calls} LLM calls, "
          f"{res.total_embedding_calls} embedding calls"
          + (" (nothing changed)" if res.total_llm_calls == 0 and res.total_embedding_calls == 0 else ""))
    if args.json:
        print(json.dumps(res.as_dict(), indent=2))
    return 0
