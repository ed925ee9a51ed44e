"""`graphrag-got communities detect|sweep|summarize`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from graphrag_got.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings

ALGORITHM_CHOICES = ("leiden", "louvain")


def _add_graph_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--co-occurrence", dest="cooccurrence", action=argparse.BooleanOptionalAction, default=None,
                   help="also use the CO_OCCURS edges between entities of one chunk, for ontologies with few "
                        "relations (default: GRAPHRAG_COMMUNITY_COOCCURRENCE)")  # fmt: skip
    p.add_argument("--seed", type=int, default=None, help="random seed (default: GRAPHRAG_COMMUNITY_SEED)")
    p.add_argument("--max-size", type=int, default=None,
                   help="leiden: split communities larger than this one level down (default: GRAPHRAG_COMMUNITY_MAX_SIZE)")  # fmt: skip
    p.add_argument("--max-levels", type=int, default=None,
                   help="leiden: most levels of the hierarchy (default: GRAPHRAG_COMMUNITY_MAX_LEVELS)")


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("communities", help="communities of the entity graph (hierarchical Leiden or Louvain) and "
                                           "their LLM reports")  # fmt: skip
    csub = p.add_subparsers(dest="communities_command", metavar="ACTION", required=True)

    d = csub.add_parser("detect", help="find communities and write them to Neo4j, replacing earlier ones")
    d.add_argument("--algorithm", choices=ALGORITHM_CHOICES, default=None,
                   help="leiden (hierarchical levels with a size cap) or louvain (one level) "
                        "(default: GRAPHRAG_COMMUNITY_ALGORITHM)")  # fmt: skip
    d.add_argument("--resolution", type=float, default=None,
                   help="higher gives more, smaller communities (default: GRAPHRAG_COMMUNITY_RESOLUTION)")
    d.add_argument("--fresh", action="store_true",
                   help="detect from scratch instead of keeping the unchanged communities of the last detection "
                        "(GRAPHRAG_COMMUNITY_INCREMENTAL)")  # fmt: skip
    _add_graph_options(d)
    d.set_defaults(func=run_detect)

    s = csub.add_parser("sweep", help="compare resolutions and algorithms (communities, modularity); writes nothing")
    s.add_argument("--resolutions", default="0.25,0.5,1,1.5,2", help="comma-separated list (default: %(default)s)")
    s.add_argument("--algorithms", default="leiden,louvain",
                   help="comma-separated, among leiden and louvain (default: %(default)s)")
    _add_graph_options(s)
    s.set_defaults(func=run_sweep)

    m = csub.add_parser("summarize", help="one LLM report per community (cached), then the report embeddings; "
                                          "exports <out>/communities.json")  # fmt: skip
    m.add_argument("--force", action="store_true", help="regenerate even when the node has an up-to-date report "
                                                        "(the disk cache still answers)")  # fmt: skip
    m.add_argument("--no-embeddings", action="store_true",
                   help="do not embed the reports (global search then ranks communities by rating)")
    m.set_defaults(func=run_summarize)


def _connect(settings: Settings):  # type: ignore[no-untyped-def]
    from graphrag_got.graph.db import connect
    from graphrag_got.ontology.model import Ontology

    return connect(settings.neo4j), Ontology.from_file(settings.files.ontology_path)


def _graph_settings(args: argparse.Namespace, settings: Settings) -> Settings:
    return settings.with_overrides(community_seed=args.seed, community_max_size=args.max_size,
                                   community_max_levels=args.max_levels,
                                   community_cooccurrence=args.cooccurrence)  # fmt: skip


def run_detect(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.pipeline.steps import detect_and_write, kept_line

    settings = _graph_settings(args, settings).with_overrides(community_resolution=args.resolution,
                                                              community_algorithm=args.algorithm)  # fmt: skip
    driver, onto = _connect(settings)
    with driver:
        eg, comms, counts = detect_and_write(driver, settings, onto, fresh=args.fresh)
    if not eg.entities:
        print("the graph has no entities: run `graphrag-got load` first")
        return 1
    cooc = f", co-occurrence links: {eg.cooccurrence_links}" if eg.cooccurrence else ""
    print(f"entities: {len(eg.entities)}, links: {eg.graph.number_of_edges()}{cooc} "
          f"({settings.communities.algorithm}, resolution {settings.communities.resolution}, "
          f"seed {settings.communities.seed}){kept_line(comms)}")  # fmt: skip
    levels = sorted({c.level for c in comms})
    for level in levels:
        at = [c for c in comms if c.level == level]
        singletons = sum(1 for c in at if c.size == 1)
        print(f"level {level}: {len(at)} communities ({singletons} singleton(s)), largest {max(c.size for c in at)}")
    if settings.communities.algorithm == "leiden":
        over = [c for c in comms if c.size > settings.communities.max_size
                and not any(k.parent == c.id for k in comms)]  # fmt: skip
        if over:
            print(f"note: {len(over)} final communit{'y is' if len(over) == 1 else 'ies are'} over the size cap "
                  f"{settings.communities.max_size} (they would not split, or --max-levels was reached)")
    print(f"reports kept: {counts['summaries_kept']}")
    for c in comms:
        if c.size == 1:
            continue
        names = sorted(eg.entities[u]["name"] for u in c.members)
        more = f", ... (+{len(names) - 8})" if len(names) > 8 else ""
        parent = f" in {c.parent}" if c.parent is not None else ""
        print(f"  {c.id:>3}  L{c.level}{parent:<6} size {c.size:<3} {', '.join(names[:8])}{more}")
    return 0


def _parse_resolutions(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--resolutions {text!r}: expected numbers separated by commas, e.g. 0.5,1,1.5,2") from None
    if not values or any(not v > 0 for v in values):
        raise ConfigError(f"--resolutions {text!r}: give at least one value, each > 0")
    return values


def _parse_algorithms(text: str) -> list[str]:
    values = [x.strip().lower() for x in text.split(",") if x.strip()]
    bad = [v for v in values if v not in ALGORITHM_CHOICES]
    if not values or bad:
        raise ConfigError(f"--algorithms {text!r}: expected leiden and/or louvain separated by commas"
                          + (f" ({bad[0]!r} is neither)" if bad else ""))
    return list(dict.fromkeys(values))


def run_sweep(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.communities.detect import sweep
    from graphrag_got.communities.graph import read_entity_graph

    resolutions = _parse_resolutions(args.resolutions)
    algorithms = _parse_algorithms(args.algorithms)
    settings = _graph_settings(args, settings)
    driver, onto = _connect(settings)
    with driver:
        eg = read_entity_graph(driver, settings.neo4j, onto, communities=settings.communities, files=settings.files)
    rows = sweep(eg, resolutions, settings.communities.seed, algorithms, max_size=settings.communities.max_size,
                 max_levels=settings.communities.max_levels)  # fmt: skip
    print(f"entities: {len(eg.entities)}, links: {eg.graph.number_of_edges()}"
          + (f" (co-occurrence links: {eg.cooccurrence_links})" if eg.cooccurrence else ""))
    print(f"{'algorithm':<9} {'resolution':>10} {'communities':>11} {'size>=2':>7} {'singletons':>10} {'largest':>7} "
          f"{'levels':>6} {'modularity':>10}")  # fmt: skip
    for r in rows:
        print(f"{r.algorithm:<9} {r.resolution:>10g} {r.communities:>11} {r.sized:>7} {r.singletons:>10} "
              f"{r.largest:>7} {r.levels:>6} {r.modularity:>10.4f}")  # fmt: skip
    print("(counts and modularity of level 0; modularity is the standard one, resolution 1, so rows compare; "
          "nothing was written)")  # fmt: skip
    for r in rows:
        if r.warning:
            print(f"warning: {r.warning}")
    return 0


def run_summarize(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.commands.render import progress_bar
    from graphrag_got.communities.reports import summarize_communities
    from graphrag_got.pipeline.report_check import FactsCheck, check_line

    driver, onto = _connect(settings)
    with driver, progress_bar() as progress:
        res = summarize_communities(driver, settings.neo4j, ontology=onto, force=args.force, progress=progress,
                                    embed=False if args.no_embeddings else None, check=FactsCheck(),
                                    llm=settings.llm, files=settings.files, embedding=settings.embedding,
                                    graph_settings=settings.graph)  # fmt: skip
    print(f"communities: {res.communities} ({res.singletons_skipped} singleton(s) not reported)")
    rechecked = f", {res.rechecked} checked again (no LLM call)" if res.rechecked else ""
    print(f"reports: {res.generated} generated, {res.cached} from cache, {res.unchanged} unchanged{rechecked}, "
          f"{len(res.failed)} failed")  # fmt: skip
    print(check_line(res))
    est = " (estimated, ~4 characters a token)" if res.tokens_estimated else ""
    print(f"LLM calls: {res.llm_calls}; tokens: {res.input_tokens} in, {res.output_tokens} out{est}")
    if res.embedding_error:
        print(f"warning: reports not embedded: {res.embedding_error}")
    elif settings.embedding.enabled and not args.no_embeddings:
        print(f"report embeddings: {res.embedded} written, {res.embeddings_unchanged} unchanged, "
              f"{res.embedding_calls} model call(s), {res.embedding_seconds:.2f} s")  # fmt: skip
    for f in res.failed:
        print(f"  community {f['id']}: {f['error']}")
    if res.export_path:
        print(f"wrote {res.export_path}")
    return 1 if res.failed else 0
