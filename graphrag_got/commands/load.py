"""`graphrag-got load EXTRACTION_JSON [--batch-size N] [--repair] [--lock-wait SECONDS]` and
`graphrag-got stats [--json] [--strict]`."""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_got.errors import ExtractionFileError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "load",
        help="write an extraction.json into Neo4j (batched, idempotent, incremental per document)",
    )
    p.add_argument("extraction", metavar="EXTRACTION_JSON", help="the file written by `graphrag-got extract`")
    p.add_argument("--batch-size", type=int, default=None, help="rows per UNWIND batch (default: GRAPHRAG_BATCH_SIZE)")
    p.add_argument("--embed", action=argparse.BooleanOptionalAction, default=None,
                   help="embed the loaded chunks and entities (default: GRAPHRAG_EMBEDDINGS; a code graph only with "
                        "GRAPHRAG_CODE_EMBEDDINGS)")
    p.add_argument("--repair", action="store_true",
                   help="compare the graph with the file first and make it equal: remove what the file does not "
                        "back (stray entities, relations, copies), write again every document whose graph differs "
                        "(an edited name...), whatever the documents' digests say (what `stats --strict` advises)")
    p.add_argument("--lock-wait", type=float, default=None, metavar="SECONDS",
                   help="how long to wait for the graph lock another writer holds (default: GRAPHRAG_LOCK_WAIT; "
                        "0: refuse at once)")
    p.set_defaults(func=run)

    s = sub.add_parser("stats", help="counts of the loaded graph and its consistency checks against the ontology")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")
    s.add_argument("--strict", action="store_true",
                   help="exit 1 when a consistency check finds a problem or the graph differs from its extraction "
                        "file (default: report it, exit 0)")
    s.add_argument("--extraction", metavar="EXTRACTION_JSON", default=None,
                   help="the extraction file the graph was loaded from, compared with the graph (default: "
                        "<GRAPHRAG_OUT>/extraction.json when it exists)")
    s.set_defaults(func=run_stats)


def _connect_and_ontology(settings: Settings):  # type: ignore[no-untyped-def]
    from graphrag_got.graph.db import connect
    from graphrag_got.ontology.model import Ontology

    return connect(settings.neo4j), Ontology.from_file(settings.files.ontology_path)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.graph.load import load_extraction

    if not Path(args.extraction).is_file():  # say so before asking for a server
        raise ExtractionFileError(f"{args.extraction}: extraction file not found; run `graphrag-got extract` first.")
    if args.batch_size is not None or args.lock_wait is not None:
        settings = settings.with_overrides(batch_size=args.batch_size, lock_wait_s=args.lock_wait)
    driver, ontology = _connect_and_ontology(settings)
    with driver, progress_bar() as progress:
        s = load_extraction(driver, settings.neo4j, args.extraction, ontology, progress=progress,
                            embed=getattr(args, "embed", None), repair=getattr(args, "repair", False),
                            graph=settings.graph, extract=settings.extract,
                            embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    for line in s.report_lines():
        print(line)
    return 0


def _file_comparison(args: argparse.Namespace, settings: Settings, driver, ontology) -> dict | None:  # type: ignore[no-untyped-def]
    """The graph against its extraction file (``--extraction``, else the default one when it exists)."""
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.graph.compare import compare_with_file

    path = Path(args.extraction) if args.extraction else settings.files.out_dir / "extraction.json"
    if not path.is_file():
        if args.extraction:
            raise ExtractionFileError(f"{path}: extraction file not found (stats --extraction)")
        return {"path": str(path), "compared": False}
    result = compare_with_file(driver, settings.neo4j, Extraction.read(path), ontology, graph=settings.graph,
                               extract=settings.extract)
    return {"path": str(path), "compared": True, "equal": result.equal, "differences": result.total,
            "by_section": result.by_section, "first": [d.line() for d in result.differences]}


def run_stats(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.graph.stats import graph_stats

    driver, ontology = _connect_and_ontology(settings)
    with driver:
        st = graph_stats(driver, settings.neo4j, ontology)
        st["extraction"] = _file_comparison(args, settings, driver, ontology)
    file_check = st["extraction"]
    differs = bool(file_check and file_check["compared"] and not file_check["equal"])
    problems = st["missing_symmetric"] or st["violations"] or st["entity_violations"] or differs
    if args.json:
        print(json.dumps(st, indent=2, ensure_ascii=False))
        return 1 if problems and args.strict else 0
    print(f"documents: {st['documents']}  chunks: {st['chunks']}  entities: {st['entities']}  "
          f"entity relations: {st['entity_relations']}")  # fmt: skip
    print("nodes by label:")
    for label, n in sorted(st["nodes_by_label"].items()):
        print(f"  {label:<24} {n}")
    print("relations by type:")
    for rtype, n in sorted(st["relations_by_type"].items()):
        print(f"  {rtype:<24} {n}")
    print(f"symmetric relations missing a direction: {st['missing_symmetric']}")
    for k, n in st["missing_symmetric_by_type"].items():
        print(f"  {k}: {n}")
    print(f"relations violating the ontology: {st['violations']}")
    for k, n in st["violations_by_type"].items():
        print(f"  {k}: {n}")
    print(f"entities of no class of the ontology: {st['entity_violations']}")
    for k, n in st["entity_violations_by_class"].items():
        print(f"  {k}: {n}")
    print(f"orphan entities (no relation): {st['orphan_entities']}")
    print(f"entities: {st['entities'] - st['untyped_terms']} typed by the ontology's classes, {st['untyped_terms']} "
          "untyped key terms (Term)")
    print("documents by layer: " + ", ".join(f"{n} with {what}" for what, n in st["documents_by_layer"].items()))
    if problems and (st["violations"] or st["entity_violations"]):
        print("note: rows an earlier load made under another ontology stay until their documents are rewritten; "
              "`graphrag-got load` rewrites every document loaded under another ontology and removes them")
    if not file_check["compared"]:
        print(f"graph against its extraction file: not compared (no {file_check['path']}; pass --extraction)")
    elif file_check["equal"]:
        print(f"graph against {file_check['path']}: equal (what a clean load of it writes)")
    else:
        sections = ", ".join(f"{k} {n}" for k, n in sorted(file_check["by_section"].items()))
        print(f"graph against {file_check['path']}: {file_check['differences']} difference(s) ({sections}); first:")
        for line in file_check["first"]:
            print(f"  {line}")
        print(f"  repair it (`graphrag-got load {shlex.quote(file_check['path'])} --repair`): removes what the file "
              "does not back and writes again every document whose graph differs")
    return 1 if problems and args.strict else 0
