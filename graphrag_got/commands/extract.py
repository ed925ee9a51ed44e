"""`graphrag-got extract [CORPUS]`: chunk, extract with the LLM, validate, write extraction.json."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("extract", help="extract entities and relations from the corpus with the LLM, validated")
    p.add_argument("corpus", nargs="?", help="corpus file or folder (default: GRAPHRAG_CORPUS, corpus/got.txt)")
    p.add_argument("-o", "--output", help="extraction file (default: <out>/extraction.json)")
    p.add_argument("--revalidate", action="store_true",
                   help="re-apply the current ontology to stored answers, without calling the LLM")
    p.add_argument("--retry-failed", action="store_true", help="call the LLM again for chunks whose answer was unusable")
    p.add_argument("--strict", action="store_true",
                   help="stop at the first corpus file that cannot be read (not UTF-8, binary, malformed front "
                        "matter, a link leaving the folder) instead of skipping it with a record (GRAPHRAG_STRICT_INPUTS)")
    p.add_argument("--concurrency", type=int, help="LLM calls in flight (default: what the server takes, e.g. "
                                                    "llama-server's slots; the in-process model runs one at a time)")
    p.add_argument("--chunker", choices=["auto", "paragraph", "markdown"])
    p.add_argument("--export-replay", metavar="FILE", help="also write the raw answers as a replay file")
    p.add_argument("--no-repair", action="store_true",
                   help="refuse model mistakes as they are: no audited repair (inferred end class, majority "
                        "class, flipped ends) before validation (setting GRAPHRAG_REPAIR)")
    p.add_argument("--no-evidence", action="store_true",
                   help="do not require entities to be mentioned in their chunk nor relation ends to meet "
                        "in the text (setting GRAPHRAG_EVIDENCE)")
    p.add_argument("--evidence-window", type=int, metavar="N",
                   help="sentences apart the two ends of a relation may be (0 = same sentence)")
    p.add_argument("--strategy", choices=["auto", "generate", "classify", "mentions", "terms"],
                   help="generate: the model writes the JSON answer; classify: mentions copied from the chunk, then "
                        "one scored choice per pair of mentions; mentions: entity mentions only; terms: key terms "
                        "found without a model, the shared ones typed once per term; auto: terms for a "
                        "notes vault with a small model, else generate (setting GRAPHRAG_EXTRACTION)")
    p.add_argument("--min-fact-probability", type=float, metavar="P",
                   help="classify: refuse facts chosen with a lower probability (setting GRAPHRAG_MIN_FACT_PROBABILITY; "
                        "with --revalidate, no model call)")
    p.add_argument("--extractor", choices=["llm", "code"], default="llm",
                   help="llm (default): the language model over a text corpus; code: a Python source tree "
                        "read with tree-sitter, no LLM (use with --ontology ontology/code.json)")
    p.add_argument("--coverage", action="append", metavar="FILE",
                   help="--extractor code: a coverage.py data file with per-test contexts (pytest --cov=PKG "
                        "--cov-context=test); each test's executed functions become EXECUTES facts that ask impact "
                        "unions with the static ones (repeat the flag to merge several files)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "extractor", "llm") == "code":
        return _run_code(args, settings)
    if getattr(args, "coverage", None):
        from graphrag_got.errors import ConfigError

        raise ConfigError("--coverage applies to --extractor code only (test coverage of a code base).")
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.extract.run import run_extraction
    from graphrag_got.ontology.model import Ontology

    settings = settings.with_overrides(concurrency=args.concurrency, chunker=args.chunker,
                                       strict_inputs=True if args.strict else None,
                                       repair=False if args.no_repair else None,
                                       evidence=False if args.no_evidence else None,
                                       evidence_window=args.evidence_window, extraction=args.strategy,
                                       min_fact_probability=args.min_fact_probability)
    onto = Ontology.from_file(settings.files.ontology_path)
    from graphrag_got.commands.prompts import print_prompt_lines
    from graphrag_got.extract.run import prompt_names

    print_prompt_lines(settings, prompt_names(settings.extract))
    with progress_bar() as progress:
        summary = run_extraction(settings.extract, onto, args.corpus, args.output, revalidate=args.revalidate,
                                 retry_failed=args.retry_failed,
                                 export_replay=Path(args.export_replay) if args.export_replay else None,
                                 progress=progress, files=settings.files, chunking=settings.chunking,
                                 llm=settings.llm, embedding=settings.embedding)
    for line in summary.lines():
        print(line)
    return 0


def _run_code(args: argparse.Namespace, settings: Settings) -> int:
    """`extract --extractor code REPO`: the deterministic Python extractor (graphrag_got.code)."""
    from graphrag_got.code.extractor import run_code_extraction
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.errors import ConfigError
    from graphrag_got.ontology.model import Ontology

    llm_only = [flag for flag, given in (("--revalidate", args.revalidate), ("--retry-failed", args.retry_failed),
                                         ("--concurrency", args.concurrency is not None),
                                         ("--chunker", args.chunker is not None),
                                         ("--strict", args.strict), ("--strategy", args.strategy is not None),
                                         ("--export-replay", args.export_replay is not None)) if given]
    if llm_only:
        raise ConfigError(f"{', '.join(llm_only)} only apply to --extractor llm; the code extractor calls no model "
                          "and is rerun in seconds: drop the flag.")
    if not args.corpus:
        raise ConfigError("--extractor code needs the folder (or .py file) to read: "
                          "graphrag-got extract --extractor code REPO --ontology ontology/code.json")
    onto = Ontology.from_file(settings.files.ontology_path)
    with progress_bar() as progress:
        summary = run_code_extraction(onto, args.corpus, args.output or settings.files.out_dir / "extraction.json",
                                      progress=progress, max_file_bytes=settings.code.max_file_bytes,
                                      max_file_seconds=settings.code.max_file_seconds,
                                      follow_outside_links=settings.chunking.follow_outside_links,
                                      coverage=args.coverage or ())
    for line in summary.lines():
        print(line)
    if "coverage" in summary.extra:
        for line in summary.extra["coverage"].lines():
            print(line)
    return 0
