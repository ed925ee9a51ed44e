"""`graphrag-got communities detect|sweep|summarize`."""

from __future__ import annotations

import argparse

from ..config import Settings
from ..errors import ConfigError
from .render import progress_bar


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("communities", help="Louvain communities of the entity graph and their LLM summaries")
    csub = p.add_subparsers(dest="communities_command", metavar="ACTION", required=True)

    d = csub.add_parser("detect", help="find communities (Louvain) and write them to Neo4j, replacing earlier ones")
    d.add_argument("--resolution", type=float, default=None,
                   help="Louvain resolution: higher gives more, smaller communities (default: GRAPHRAG_COMMUNITY_RESOLUTION)")  # fmt: skip
    d.add_argument("--seed", type=int, default=None, help="random seed (default: GRAPHRAG_COMMUNITY_SEED)")
    d.set_defaults(func=run_detect)

    s = csub.add_parser("sweep", help="compare resolutions (counts, singletons, largest, modularity); writes nothing")
    s.add_argument("--resolutions", default="0.5,1,1.5,2", help="comma-separated list (default: %(default)s)")
    s.add_argument("--seed", type=int, default=None, help="random seed (default: GRAPHRAG_COMMUNITY_SEED)")
    s.set_defaults(func=run_sweep)

    m = csub.add_parser("summarize", help="one LLM summary per community (cached); exports <out>/communities.json")
    m.add_argument("--force", action="store_true", help="regenerate even when the node has an up-to-date summary "
                                                        "(the disk cache still answers)")  # fmt: skip
    m.set_defaults(func=run_summarize)


def _connect(settings: Settings):  # type: ignore[no-untyped-def]
    from ..graphdb import connect
    from ..ontology import Ontology

    return connect(settings), Ontology.from_file(settings.ontology_path)


def run_detect(args: argparse.Namespace, settings: Settings) -> int:
    from .. import communities as cm

    settings = settings.with_overrides(community_resolution=args.resolution, community_seed=args.seed)
    driver, onto = _connect(settings)
    with driver:
        eg = cm.read_entity_graph(driver, settings, onto)
        if not eg.entities:
            print("the graph has no entities: run `graphrag-got load` first")
            return 1
        comms = cm.detect_communities(eg, settings.community_resolution, settings.community_seed)
        counts = cm.write_communities(driver, settings, comms)
    singletons = sum(1 for c in comms if c.size == 1)
    print(f"entities: {len(eg.entities)}, links: {eg.graph.number_of_edges()} "
          f"(resolution {settings.community_resolution}, seed {settings.community_seed})")  # fmt: skip
    print(f"communities: {len(comms)} ({singletons} singleton(s)); summaries kept: {counts['summaries_kept']}")
    for c in comms:
        if c.size == 1:
            continue
        names = sorted(eg.entities[u]["name"] for u in c.members)
        more = f", ... (+{len(names) - 8})" if len(names) > 8 else ""
        print(f"  {c.id:>3}  size {c.size:<3} {', '.join(names[:8])}{more}")
    return 0


def _parse_resolutions(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise ConfigError(f"--resolutions {text!r}: expected numbers separated by commas, e.g. 0.5,1,1.5,2") from None
    if not values or any(v <= 0 for v in values):
        raise ConfigError(f"--resolutions {text!r}: give at least one value, each > 0")
    return values


def run_sweep(args: argparse.Namespace, settings: Settings) -> int:
    from .. import communities as cm

    resolutions = _parse_resolutions(args.resolutions)
    seed = settings.community_seed if args.seed is None else args.seed
    driver, onto = _connect(settings)
    with driver:
        eg = cm.read_entity_graph(driver, settings, onto)
    rows = cm.sweep(eg, resolutions, seed)
    print(f"{'resolution':>10} {'communities':>11} {'singletons':>10} {'largest':>7} {'modularity':>10}")
    for r in rows:
        print(f"{r.resolution:>10g} {r.communities:>11} {r.singletons:>10} {r.largest:>7} {r.modularity:>10.4f}")
    print("(modularity is the standard one, resolution 1, so rows compare; nothing was written)")
    return 0


def run_summarize(args: argparse.Namespace, settings: Settings) -> int:
    from .. import communities as cm

    driver, onto = _connect(settings)
    with driver, progress_bar() as progress:
        res = cm.summarize_communities(driver, settings, ontology=onto, force=args.force, progress=progress)
    print(f"communities: {res.communities} ({res.singletons_skipped} singleton(s) not summarized)")
    print(f"summaries: {res.generated} generated, {res.cached} from cache, {res.unchanged} unchanged, "
          f"{len(res.failed)} failed")  # fmt: skip
    est = " (estimated, ~4 characters a token)" if res.tokens_estimated else ""
    print(f"LLM calls: {res.llm_calls}; tokens: {res.input_tokens} in, {res.output_tokens} out{est}")
    for f in res.failed:
        print(f"  community {f['id']}: {f['error']}")
    if res.export_path:
        print(f"wrote {res.export_path}")
    return 1 if res.failed else 0
