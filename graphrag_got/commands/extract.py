"""`graphrag-got extract [CORPUS]`: chunk, extract with the LLM, validate, write extraction.json."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..config import Settings
from ..extract import run_extraction
from ..ontology import Ontology
from .render import progress_bar


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("extract", help="extract entities and relations from the corpus with the LLM, validated")
    p.add_argument("corpus", nargs="?", help="corpus file or folder (default: corpus/)")
    p.add_argument("-o", "--output", help="extraction file (default: <out>/extraction.json)")
    p.add_argument("--revalidate", action="store_true",
                   help="re-apply the current ontology to stored answers, without calling the LLM")
    p.add_argument("--retry-failed", action="store_true", help="call the LLM again for chunks whose answer was unusable")
    p.add_argument("--concurrency", type=int, help="parallel LLM calls (Ollama; llama.cpp runs one at a time)")
    p.add_argument("--chunker", choices=["auto", "paragraph", "markdown"])
    p.add_argument("--export-replay", metavar="FILE", help="also write the raw answers as a replay file")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    settings = settings.with_overrides(concurrency=args.concurrency, chunker=args.chunker)
    onto = Ontology.from_file(settings.ontology_path)
    with progress_bar() as progress:
        summary = run_extraction(settings, onto, args.corpus, args.output, revalidate=args.revalidate,
                                 retry_failed=args.retry_failed,
                                 export_replay=Path(args.export_replay) if args.export_replay else None,
                                 progress=progress)
    for line in summary.lines():
        print(line)
    return 0
