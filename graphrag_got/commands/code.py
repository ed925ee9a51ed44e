"""`graphrag-got code refresh [ROOT]`: re-extract and reload only what a change touched (no LLM).

The work is :mod:`graphrag_got.code.refresh`; the load is the usual incremental one
(:func:`graphrag_got.graph.load.load_extraction`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("code", help="code graphs: keep one fresh per commit (`code refresh`)")
    csub = p.add_subparsers(dest="code_command", metavar="ACTION", required=True)
    r = csub.add_parser("refresh", help="re-extract the changed Python files of ROOT and reload what changed")
    r.add_argument("root", nargs="?", default=".", metavar="ROOT",
                   help="the folder the code graph is extracted from (default: the current one)")
    r.add_argument("--since", metavar="REV",
                   help="trust git: only the files changed since REV (and untracked ones) are read again "
                        "(default: every file is compared by content with the last refresh)")
    r.add_argument("-o", "--output", help="the code extraction to refresh (default: <out>/extraction.json); "
                                          "without one, a full extraction")
    r.add_argument("--coverage", action="append", metavar="FILE",
                   help="a new coverage.py data file with per-test contexts: replaces the coverage evidence "
                        "(default: the evidence of the previous extraction is kept as recorded)")
    r.add_argument("--no-load", action="store_true", help="write the extraction only; do not load it into Neo4j")
    r.add_argument("--no-cache", action="store_true",
                   help="parse every file and validate the coverage evidence again (no parse cache, no evidence memo)")
    r.set_defaults(func=run_refresh)


def run_refresh(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.code.refresh import refresh
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.ontology.model import Ontology

    onto = Ontology.from_file(settings.files.ontology_path)
    out = Path(args.output) if args.output else settings.files.out_dir / "extraction.json"
    with progress_bar() as progress:
        ext, summary = refresh(onto, args.root, out, since=args.since, coverage=args.coverage or (),
                               use_cache=not args.no_cache, progress=progress,
                               max_file_bytes=settings.code.max_file_bytes,
                               max_file_seconds=settings.code.max_file_seconds,
                               follow_outside_links=settings.chunking.follow_outside_links)
        if not args.no_load:
            from graphrag_got.graph.db import connect
            from graphrag_got.graph.load import load_extraction

            with connect(settings.neo4j) as driver:
                summary.load = load_extraction(driver, settings.neo4j, ext, onto, progress=progress, source=str(out),
                                               graph=settings.graph, extract=settings.extract,
                                               embedding=settings.embedding, code=settings.code, llm=settings.llm,
                                               files=settings.files)
    for line in summary.lines():
        print(line)
    return 0
