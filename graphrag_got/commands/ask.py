"""`graphrag-got ask local "QUESTION"` and `graphrag-got ask global "QUESTION"`."""

from __future__ import annotations

import argparse

from ..config import Settings
from ..errors import ConfigError


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("ask", help="answer a question from the graph: local (entities) or global (communities)")
    asub = p.add_subparsers(dest="ask_command", metavar="KIND", required=True)

    lo = asub.add_parser("local", help="from the neighbourhood of the entities the question names")
    lo.add_argument("question", metavar="QUESTION")
    lo.add_argument("--hops", type=int, default=None, help="neighbourhood depth, 1-4 (default: GRAPHRAG_LOCAL_HOPS)")
    lo.add_argument("--max-facts", type=int, default=None, help="facts in the context (default: GRAPHRAG_LOCAL_MAX_FACTS)")
    lo.add_argument("--show-context", action="store_true", help="print the anchors, matches, facts and excerpts")
    lo.add_argument("--no-answer", action="store_true",
                    help="retrieve only: deterministic anchors, no LLM call at all (implies --show-context)")  # fmt: skip
    lo.set_defaults(func=run_local)

    gl = asub.add_parser("global", help="map-reduce over the community summaries (broad questions)")
    gl.add_argument("question", metavar="QUESTION")
    gl.add_argument("--threshold", type=int, default=None,
                    help="keep communities rated at least this relevant, 0-10 (default: GRAPHRAG_GLOBAL_THRESHOLD)")  # fmt: skip
    gl.add_argument("--show-context", action="store_true", help="print every community's relevance and extract")
    gl.set_defaults(func=run_global)

    from .impact import add_parser as add_impact_parser  # code graphs: `ask impact TARGET`

    add_impact_parser(asub)


def _tokens(res) -> str:  # type: ignore[no-untyped-def]
    est = ", estimated" if res.tokens_estimated else ""
    return f"LLM calls: {res.llm_calls} (tokens: {res.input_tokens} in, {res.output_tokens} out{est})"


def run_local(args: argparse.Namespace, settings: Settings) -> int:
    from ..graphdb import connect
    from ..ontology import Ontology
    from ..search.local import local_search

    settings = settings.with_overrides(local_hops=args.hops, local_max_facts=args.max_facts)  # validates 1..4
    onto = Ontology.from_file(settings.ontology_path)
    driver = connect(settings)
    with driver:
        res = local_search(driver, settings, args.question, answer=not args.no_answer, ontology=onto)
    show = args.show_context or args.no_answer
    if show or res.no_anchor:
        for m in res.matches:
            target = ", ".join(m.names) if m.names else "-"
            print(f"match [{m.source}] {m.how:<10} {m.term!r} -> {target}")
    if show:
        print("anchors: " + (", ".join(f"{a.name} ({a.type}, {a.how})" for a in res.anchors) or "none"))
        print(f"context ({len(res.facts)} facts, up to {res.hops} hop(s)):")
        for f in res.facts:
            print(f"  [{f.dist}{'a' if f.via == 'attribute' else ''}] {f.line}")
        for e in res.excerpts:
            print(f"  excerpt {e.chunk_id}: {e.text}")
    for err in res.llm_errors:
        print(f"warning: {err}")
    if res.answer is not None:
        print()
        print(res.answer)
    print(_tokens(res))
    return 0


def run_global(args: argparse.Namespace, settings: Settings) -> int:
    from ..graphdb import connect
    from ..search.global_ import global_search

    if args.threshold is not None and not 0 <= args.threshold <= 10:
        raise ConfigError(f"--threshold must be from 0 to 10, got {args.threshold}")
    driver = connect(settings)
    with driver:
        res = global_search(driver, settings, args.question, threshold=args.threshold)
    if args.show_context:
        print(f"communities rated ({len(res.ratings)}; kept >= {res.threshold}):")
        for r in sorted(res.ratings, key=lambda r: (-(r.relevance if r.relevance is not None else -1), r.id)):
            if r.error is not None:
                print(f"  {r.id:>3}  failed  {r.title or ''}: {r.error}")
            else:
                mark = "kept" if r.kept else "    "
                print(f"  {r.id:>3}  {r.relevance:>2}/10 {mark}  {r.title or ''}: {r.extract}")
    elif res.failed:
        print(f"warning: {len(res.failed)} community rating(s) failed and were skipped (see --show-context)")
    print()
    print(res.answer)
    print(_tokens(res))
    return 0
