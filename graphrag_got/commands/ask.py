"""`graphrag-got ask "QUESTION"` (routed) and `graphrag-got ask local|global|drift "QUESTION"`.

The bare form routes the question (:mod:`graphrag_got.search.route`) and says which mode it chose
and why; ``--mode`` overrides the route. Every answer is followed by its reference list; ``--json``
prints the whole :class:`graphrag_got.search.answer.AskResult` instead, and nothing else.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from graphrag_got.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings

#: The subcommand the bare form `ask "QUESTION"` runs.
AUTO = "auto"
RETRIEVALS = ("graph", "vector", "hybrid")


class _AnyName(Mapping[str, argparse.ArgumentParser]):
    """The choices of `ask` as argparse checks them: the KIND parsers, but every word is accepted
    (a word that is no KIND is the question)."""

    def __init__(self, parsers: dict[str, argparse.ArgumentParser]) -> None:
        self._parsers = parsers

    def __getitem__(self, key: str) -> argparse.ArgumentParser:
        return self._parsers[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parsers)

    def __len__(self) -> int:
        return len(self._parsers)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str)


class _KindOrQuestion(argparse._SubParsersAction):  # type: ignore[type-arg]
    """`ask KIND ...` or `ask "QUESTION" ...`: a first word that names no KIND is the question of
    `ask auto` (argparse has no optional subcommand; this keeps one parser, its help and the global
    options it receives from cli.py)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.choices = _AnyName(self._name_parser_map)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:  # fmt: skip
        if values and values[0] not in self._name_parser_map:
            values = [AUTO, *values]
        super().__call__(parser, namespace, values, option_string)


def _add_output(p: argparse.ArgumentParser, no_answer_help: str) -> None:
    p.add_argument("--json", action="store_true", help="print the whole result as JSON (and nothing else)")
    p.add_argument("--no-answer", action="store_true", help=no_answer_help)


def _add_local_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hops", type=int, default=None, help="neighbourhood depth, 1-4 (default: GRAPHRAG_LOCAL_HOPS)")
    p.add_argument("--max-facts", type=int, default=None, help="facts in the context (default: GRAPHRAG_LOCAL_MAX_FACTS)")


def _add_drift_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--depth", type=int, default=None, help="drift: rounds of follow-ups (default: GRAPHRAG_DRIFT_DEPTH)")
    p.add_argument("--followups", type=int, default=None,
                   help="drift: follow-up questions per round (default: GRAPHRAG_DRIFT_FOLLOWUPS)")  # fmt: skip
    p.add_argument("--max-calls", type=int, default=None,
                   help="drift: most LLM calls in all (default: GRAPHRAG_DRIFT_MAX_CALLS)")  # fmt: skip


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("ask", help="answer a question from the graph: routed, or local / global / drift",
                       description='`ask "QUESTION"` picks the mode itself and says why (--mode overrides); '
                                   '`ask local|global|drift "QUESTION"` uses that mode.')  # fmt: skip
    asub = p.add_subparsers(dest="ask_command", metavar="KIND|QUESTION", required=True, action=_KindOrQuestion)

    au = asub.add_parser(AUTO, help='route the question (what `ask "QUESTION"` runs): local, global or drift')
    au.add_argument("question", metavar="QUESTION")
    au.add_argument("--mode", choices=["auto", "local", "global", "drift"], default="auto",
                    help="force this mode instead of routing")  # fmt: skip
    au.add_argument("--retrieval", choices=RETRIEVALS, default=None, help="local retrieval (local and drift)")
    au.add_argument("--classifier", action=argparse.BooleanOptionalAction, default=None,
                    help="ask the LLM when no routing rule decides (default: GRAPHRAG_ROUTE_CLASSIFIER)")  # fmt: skip
    au.add_argument("--threshold", type=int, default=None, help="global: keep communities rated at least this")
    au.add_argument("--show-context", action="store_true", help="print the retrieved sources too")
    _add_local_options(au)
    _add_drift_options(au)
    _add_output(au, "retrieve only, no LLM call: print the retrieved context")
    au.set_defaults(func=run_auto)

    lo = asub.add_parser("local", help="from the neighbourhood of the entities the question names")
    lo.add_argument("question", metavar="QUESTION")
    _add_local_options(lo)
    lo.add_argument("--mode", "--retrieval", dest="retrieval", choices=RETRIEVALS, default=None,
                    help="retrieval: graph (named entities), vector, hybrid (default: GRAPHRAG_LOCAL_RETRIEVAL)")  # fmt: skip
    lo.add_argument("--show-context", action="store_true", help="print the anchors, matches, facts and excerpts")
    _add_output(lo, "retrieve only: deterministic anchors, no LLM call at all (implies --show-context)")
    lo.set_defaults(func=run_local)

    gl = asub.add_parser("global", help="map-reduce over the community summaries (broad questions)")
    gl.add_argument("question", metavar="QUESTION")
    gl.add_argument("--threshold", type=int, default=None,
                    help="keep communities rated at least this relevant, 0-10 (default: GRAPHRAG_GLOBAL_THRESHOLD)")  # fmt: skip
    gl.add_argument("--show-context", action="store_true", help="print every community's relevance and extract")
    _add_output(gl, "no LLM call: print the community reports most similar to the question")
    gl.set_defaults(func=run_global)

    dr = asub.add_parser("drift", help="community reports, then local searches of follow-up questions (connective questions)")
    dr.add_argument("question", metavar="QUESTION")
    _add_drift_options(dr)
    dr.add_argument("--retrieval", choices=RETRIEVALS, default=None, help="retrieval of the follow-up local searches")
    _add_local_options(dr)
    dr.add_argument("--show-context", action="store_true", help="print the reports, follow-ups and sources")
    _add_output(dr, "no LLM call: print the reports and the facts of the question's own local search")
    dr.set_defaults(func=run_drift)

    from graphrag_got.commands.impact import add_parser as add_impact_parser  # code graphs: `ask impact TARGET`

    add_impact_parser(asub)


# ---------------------------------------------------------------------------------------------
# Running and printing
# ---------------------------------------------------------------------------------------------


def _tokens(res: Any) -> str:
    est = ", estimated" if res.tokens_estimated else ""
    return f"LLM calls: {res.llm_calls} (tokens: {res.input_tokens} in, {res.output_tokens} out{est})"


def _ask(args: argparse.Namespace, settings: Settings, mode: str, **kwargs: Any) -> Any:
    from graphrag_got.graph.db import connect
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.search.answer import ask

    onto = Ontology.from_file(settings.files.ontology_path)
    driver = connect(settings.neo4j)
    with driver:
        return ask(driver, settings.neo4j, args.question, mode, search=settings.search, llm=settings.llm,  # type: ignore[arg-type]
                   files=settings.files, embedding=settings.embedding, answer=not args.no_answer, ontology=onto, **kwargs)


def _print_json(res: Any) -> None:
    print(json.dumps(res.model_dump(mode="json"), ensure_ascii=False, indent=2))


def _print_sources(res: Any) -> None:
    if not res.sources:
        print("context: nothing retrieved")
        return
    order = ""
    if getattr(res, "context_order", None) == "question":
        below = f"; {res.ranked_out} more ranked below them, not given" if res.ranked_out else ""
        order = f", ranked by the question{below}"
    print(f"context ({len(res.sources)} sources{order}):")
    for line in res.context_lines():
        print(f"  {line}")


def _print_answer(res: Any) -> None:
    """The answer, its reference list and the usage line (the end of every text output)."""
    for w in res.warnings:
        print(f"warning: {w}")
    if res.answer is not None:
        print()
        print(res.answer)
        if res.citations:
            print()
            print("References:")
            for line in res.reference_lines():
                print(line)
        elif res.sources:
            print()
            print("References: none (the answer cites no source)")
        if res.invented_citations:
            print(f"({res.invented_citations} citation(s) not in the context were removed)")
        for line in check_lines(res):
            print(line)
    print(_tokens(res))


def check_lines(res: Any) -> list[str]:
    """What the answer's checks found (:func:`graphrag_got.search.support.check_lines`), after a blank line."""
    from graphrag_got.search.support import check_lines as lines

    found = lines(res.answer_format, len(res.claims), res.left_out, language_retry=res.language_retry,
                  language=res.language, recited=[c for c in res.claims if c.recited],
                  rewritten=[c for c in res.claims if c.pasted is not None])  # fmt: skip
    if found and res.answer_form == "extractive":
        found.insert(0, EXTRACTIVE_LINE[res.mode] if res.mode in EXTRACTIVE_LINE else "answer form: extractive")
    return ["", *found] if found else []


#: The line saying how an extractive answer was made (GRAPHRAG_LOCAL_ANSWER, GRAPHRAG_GLOBAL_ANSWER).
EXTRACTIVE_LINE = {
    "local": "answer form: extractive (the corpus's sentences naming the question's entities, after what the model "
             "stated from them)",
    "global": "answer form: extractive (the reports' best points and their communities' fact sentences, in turns, "
              "after what the model stated from them)",
}  # fmt: skip


def _print_drift_context(res: Any) -> None:
    d = res.detail
    if d is None:
        return
    print(f"reports ({len(d.reports)}, ranked by {d.ranking}):")
    for r in d.reports:
        print(f"  {r.id:>3}  {r.score:.3f}  {r.title}")
    for f in d.followups:
        label = "question" if f.round == 0 else f"round {f.round}"
        anchors = ", ".join(f.anchors) or "none"
        found = f"error: {f.error}" if f.error else f"{f.facts} facts, {f.chunks} excerpts; anchors: {anchors}"
        print(f"  [{label}] {f.question} -> {found}")
    bounds = ", ".join(f"{k} {v}" for k, v in res.bounds.items())
    print(f"bounds: {bounds}" + (f" (stopped: {d.stopped})" if d.stopped else ""))


def run_auto(args: argparse.Namespace, settings: Settings) -> int:
    if args.threshold is not None and not 0 <= args.threshold <= 10:
        raise ConfigError(f"--threshold must be from 0 to 10, got {args.threshold}")
    res = _ask(args, settings, args.mode, retrieval=args.retrieval, hops=args.hops, max_facts=args.max_facts,
               threshold=args.threshold, classifier=args.classifier, depth=args.depth, followups=args.followups,
               max_calls=args.max_calls)  # fmt: skip
    if args.json:
        _print_json(res)
        return 0
    print(f"mode: {res.route.describe()}")
    if res.mode == "drift" and (args.show_context or args.no_answer):
        _print_drift_context(res)
    if args.show_context or args.no_answer:
        _print_sources(res)
    _print_answer(res)
    return 0


def run_local(args: argparse.Namespace, settings: Settings) -> int:
    settings = settings.with_overrides(local_hops=args.hops, local_max_facts=args.max_facts)  # validates 1..4
    res = _ask(args, settings, "local", retrieval=args.retrieval)
    if args.json:
        _print_json(res)
        return 0
    lr = res.detail
    show = args.show_context or args.no_answer
    if show or lr.no_anchor:
        for m in lr.matches:
            target = ", ".join(m.names) if m.names else "-"
            print(f"match [{m.source}] {m.how:<10} {m.term!r} -> {target}")
    if show:
        print("anchors: " + (", ".join(f"{a.name} ({a.type}, {a.how})" for a in lr.anchors) or "none"))
        print(f"context ({len(lr.facts)} facts, up to {lr.hops} hop(s)):")
        for f in lr.facts:
            print(f"  [{f.dist}{'a' if f.via == 'attribute' else ''}] {f.line}")
        for e in lr.excerpts:
            print(f"  excerpt {e.chunk_id}: {e.text}")
    _print_answer(res)
    return 0


def run_global(args: argparse.Namespace, settings: Settings) -> int:
    if args.threshold is not None and not 0 <= args.threshold <= 10:
        raise ConfigError(f"--threshold must be from 0 to 10, got {args.threshold}")
    res = _ask(args, settings, "global", threshold=args.threshold)
    if args.json:
        _print_json(res)
        return 0
    gr = res.detail
    if args.no_answer:
        _print_sources(res)
    elif args.show_context:
        print(f"communities rated ({len(gr.ratings)}; kept >= {gr.threshold}):")
        for r in sorted(gr.ratings, key=lambda r: (-(r.relevance if r.relevance is not None else -1), r.id)):
            if r.error is not None:
                print(f"  {r.id:>3}  failed  {r.title or ''}: {r.error}")
            else:
                mark = "kept" if r.kept else "    "
                print(f"  {r.id:>3}  {r.relevance:>2}/10 {mark}  {r.title or ''}: {r.extract}")
    _print_answer(res)
    return 0


def run_drift(args: argparse.Namespace, settings: Settings) -> int:
    res = _ask(args, settings, "drift", retrieval=args.retrieval, hops=args.hops, max_facts=args.max_facts,
               depth=args.depth, followups=args.followups, max_calls=args.max_calls)  # fmt: skip
    if args.json:
        _print_json(res)
        return 0
    if args.show_context or args.no_answer:
        _print_drift_context(res)
        _print_sources(res)
    else:
        print("bounds: " + ", ".join(f"{k} {v}" for k, v in res.bounds.items()))
    _print_answer(res)
    return 0
