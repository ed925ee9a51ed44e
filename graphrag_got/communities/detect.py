"""Community detection on the entity graph: hierarchical Leiden (or Louvain), levels, the sweep.

    comms = detect_communities(eg, resolution=1.0, seed=42)           # Leiden, levels, deterministic
    rows = sweep(eg, [0.5, 1, 1.5, 2], seed=42)                       # per algorithm; no writes

* Leiden (igraph's C core, or ``leidenalg``; modularity with a resolution, seeded) is hierarchical
  as in Microsoft GraphRAG: level 0 partitions the whole graph; every community larger than
  ``max_size`` is clustered again on its own subgraph into level-1 sub-communities, and so on for
  at most ``max_levels`` levels. A community that is small enough is final: it has no children,
  and the "view" of the graph at level L (:func:`level_view`) is the level-L communities plus the
  final communities of the levels above. When a community does not split at the resolution asked,
  the resolution is doubled (at most ``SPLIT_TRIES`` times) before the community is left final and
  over the cap (logged). Louvain (networkx) stays as one level for comparison.
* Isolated entities (no relation) become level-0 singleton communities, so every entity has a
  ``communityId`` (its level-0 community). Singletons are not reported by the LLM (their title is
  the entity's name, their summary stays null) and global search therefore skips them.
* Ids are stable and unique across levels: level 0 is numbered first from 0, by size (descending)
  then smallest member uid; each deeper level continues the numbering, ordered by parent id, size,
  smallest uid. Nodes are inserted in uid order, so an algorithm sees the same input for a seed.
* Incremental (``previous``: the communities of the last detection, Leiden only): a previous
  community is unchanged when what its report is written from did not change: the same members
  with the same names, classes and properties, and the same relations among them (with their
  attributes; ``inner_hash``, over all of them, not only those a report prompt shows), and, below
  level 0, it lies inside its new parent. Relations to entities outside it and how many chunks
  support a relation do not count (they would re-cluster nearly every community of a dense graph
  on any update, and its report would not change). Unchanged communities are kept; the other
  entities (members of changed communities, new entities) are clustered again, starting from their
  previous communities, for the modularity of the whole graph (level 0) or of the parent's subgraph
  (deeper levels): CPM on their subgraph with those degrees as node weights and resolution / 2m is
  that objective with the kept communities held in place (igraph). An entity this leaves alone
  although it has links (all into kept communities) may then join one (a second Leiden pass where
  only such entities move: leidenalg, whose optimiser can hold vertices fixed). A daily update
  therefore pays reports only for the communities it changed.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Mapping

import networkx as nx

from graphrag_got.communities.graph import EntityGraph, Rel, community_content, relations_inside, sha
from graphrag_got.errors import GraphragGotError

logger = logging.getLogger(__name__)

Algorithm = Literal["leiden", "louvain"]
ALGORITHMS: tuple[str, ...] = ("leiden", "louvain")
LEVEL = 0
#: How many times a community that will not split is tried again at twice the resolution.
SPLIT_TRIES = 3


@dataclass
class Community:
    id: int
    level: int
    resolution: float
    members: list[str]  # sorted uids
    members_hash: str
    content_hash: str
    title: str | None = None
    summary: str | None = None
    summary_key: str | None = None
    parent: int | None = None  # the community one level up (None at level 0)
    algorithm: str = "leiden"
    findings: str | None = None  # JSON list of {"statement", "members"} (as stored on the node)
    rating: float | None = None
    rating_explanation: str | None = None
    left_out: str | None = None  # JSON list of what the report check left out (communities.check)
    unbacked_kept: str | None = None  # JSON list of summary sentences kept though not backed
    report_check: str | None = None  # the version of the check the report went through
    embedding: list[float] | None = None  # carried over from a previous detection, never computed here
    embedding_hash: str | None = None
    inner_hash: str | None = None  # its members and the relations among them, in full (see inner_hash())
    kept: bool = False  # carried over unchanged from the previous detection (incremental)

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass(frozen=True)
class PriorCommunity:
    """A community of the previous detection as stored: what an incremental detection compares."""

    members: tuple[str, ...]
    inner_hash: str | None
    id: int = -1
    level: int = 0
    parent: int | None = None


class _Inner:
    """What :func:`inner_hash` hashes, with each entity's line computed once per detection."""

    def __init__(self, eg: EntityGraph) -> None:
        self.entities = eg.entities
        self.lines: dict[str, str] = {}

    def member(self, u: str) -> str:
        line = self.lines.get(u)
        if line is None:
            e = self.entities[u]
            props = json.dumps(e["properties"], sort_keys=True, ensure_ascii=False, default=str)
            line = self.lines[u] = f"{u}\t{e['type']}\t{e['name']}\t{props}\n"
        return line

    def hash(self, members: Sequence[str], inner: Sequence[Rel]) -> str:
        rels = sorted(f"{r.start}\t{r.type}\t{r.end}\t{r.attributes!r}" for r in inner)
        return sha("".join(self.member(u) for u in sorted(members)) + "#\n" + "\n".join(rels))


def inner_hash(eg: EntityGraph, members: Sequence[str], inner: Sequence[Rel] | None = None) -> str:
    """The hash of ``members`` (uid, class, name, properties) and of every relation among them (with its
    attributes, without its support): what decides whether a community's report could change.
    ``inner``: the relations among them when the caller has them."""
    if inner is None:
        inner = relations_inside(eg, [members])[0]
    return _Inner(eg).hash(members, inner)


class _Prior:
    """The previous detection: which of its communities are unchanged, and where each entity was."""

    def __init__(self, eg: EntityGraph, previous: Sequence[PriorCommunity], hasher: _Inner) -> None:
        candidates = [p for p in previous if p.members and p.inner_hash and all(u in eg.entities for u in p.members)]
        inner = relations_inside(eg, [p.members for p in candidates])
        self.unchanged: dict[int, list[PriorCommunity]] = {}  # level -> its unchanged communities
        for p, among in zip(candidates, inner):
            if hasher.hash(p.members, among) == p.inner_hash:
                self.unchanged.setdefault(p.level, []).append(p)
        self.where: dict[int, dict[str, int]] = {}  # level -> uid -> its community at that level
        for i, p in enumerate(previous):
            for u in p.members:
                self.where.setdefault(p.level, {})[u] = i


def _check_algorithm(algorithm: str, resolution: float, max_size: int, max_levels: int) -> None:
    if algorithm not in ALGORITHMS:
        raise GraphragGotError(f"unknown community algorithm {algorithm!r}: use one of {', '.join(ALGORITHMS)}")
    if isinstance(resolution, bool) or not isinstance(resolution, (int, float)) or not resolution > 0:
        raise GraphragGotError(f"resolution must be > 0, got {resolution!r}")
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size < 2:
        raise GraphragGotError(f"max community size must be an integer >= 2, got {max_size!r}")
    if isinstance(max_levels, bool) or not isinstance(max_levels, int) or max_levels < 1:
        raise GraphragGotError(f"max levels must be an integer >= 1, got {max_levels!r}")


def detect_communities(
    eg: EntityGraph,
    resolution: float = 1.0,
    seed: int = 42,
    *,
    algorithm: str = "leiden",
    max_size: int = 10,
    max_levels: int = 3,
    previous: Sequence[PriorCommunity] | None = None,
) -> list[Community]:
    """Communities of every level (level 0 first), numbered as the module docstring says.

    ``algorithm="leiden"``: hierarchical with ``max_size`` / ``max_levels``; ``"louvain"``: one level.
    Deterministic for a seed (and, with ``previous``, for the previous communities). ``previous``
    (Leiden only; the caller checks they were detected with the same algorithm, resolution and seed)
    makes the detection incremental: see the module docstring; the kept communities have ``kept``.
    """
    _check_algorithm(algorithm, resolution, max_size, max_levels)
    if algorithm == "louvain":
        parts: list[list[str]] = [sorted(p) for p in _louvain(eg.graph, resolution, seed)]
        return _number(eg, [(None, p, False) for p in parts], 0, 0, float(resolution), algorithm)
    view = IGraphView.from_networkx(eg.graph)
    hasher = _Inner(eg)
    prior = _Prior(eg, previous, hasher) if previous else None
    level0 = _partition(view, view.names, 0, resolution, seed, prior)
    if level0 is None:
        level0 = [(sorted(view.names[i] for i in part), False) for part in view.leiden(None, resolution, seed)]
    out = _number(eg, [(None, p, k) for p, k in level0], 0, 0, float(resolution), algorithm, hasher)
    frontier = [c for c in out if c.size > max_size]
    for level in range(1, max_levels):
        children: list[tuple[int | None, list[str], bool]] = []
        for parent in frontier:
            parts = _partition(view, parent.members, level, resolution, seed, prior)
            if parts is None:
                parts = [(p, False) for p in _split(view, parent, resolution, seed)]
            children += [(parent.id, p, k) for p, k in parts]
        if not children:
            break
        new = _number(eg, children, level, len(out), float(resolution), algorithm, hasher)
        out += new
        frontier = [c for c in new if c.size > max_size]
    for c in frontier:
        logger.info("community %s (level %s, size %s) is over the size cap %s: the level cap (%s) was reached",
                    c.id, c.level, c.size, max_size, max_levels)
    if prior is not None:
        logger.info("incremental detection: %s of %s communities kept from the last detection",
                    sum(1 for c in out if c.kept), len(out))  # fmt: skip
    return out


def _partition(view: "IGraphView", members: Sequence[str], level: int, resolution: float, seed: int,
               prior: _Prior | None) -> list[tuple[list[str], bool]] | None:
    """The communities at ``level`` inside the parent community of ``members`` (sorted; every entity at
    level 0) as (members, kept), by the incremental rule of the module docstring; None when the
    previous detection says nothing about these entities at this level, or when the result would not
    split the parent (the caller then detects from scratch)."""
    if prior is None:
        return None
    where = prior.where.get(level, {})
    if not any(u in where for u in members):
        return None
    inside = set(members)
    kept = [sorted(p.members) for p in prior.unchanged.get(level, []) if inside.issuperset(p.members)]
    taken = {u for members in kept for u in members}
    within = None if level == 0 else [view.index[u] for u in members]
    loose = [view.index[u] for u in members if u not in taken]
    start = [where.get(view.names[i], ("new", i)) for i in loose]
    groups = kept + [sorted(view.names[i] for i in part) for part in view.leiden_in(loose, resolution, seed, start, within)]
    # An entity left alone although it has links in ``parent`` (they all lead into unchanged communities)
    # may join one: a second pass where only such entities move.
    alone = [g[0] for g in groups if len(g) == 1 and g[0] not in taken and view.graph.degree(view.index[g[0]]) > 0]
    if alone:
        home = {u: i for i, g in enumerate(groups) for u in g}
        movable = set(alone)
        parts = view.leiden_fixed(within, resolution, seed, [home[u] for u in members],
                                  [u not in movable for u in members])  # fmt: skip
        groups = [sorted(view.names[i] for i in part) for part in parts]
    if level > 0 and len(groups) < 2:
        return None
    same = {tuple(m) for m in kept}
    return [(m, tuple(m) in same) for m in groups]


def _split(view: Any, parent: Community, resolution: float, seed: int) -> list[list[str]]:
    """Sub-communities of ``parent`` (two or more), or [] when it will not split (left final)."""
    index = [view.index[u] for u in parent.members]
    res = float(resolution)
    for _ in range(SPLIT_TRIES + 1):
        parts = view.leiden(index, res, seed)
        if len(parts) > 1:
            return [sorted(view.names[i] for i in p) for p in parts]
        res *= 2
    logger.info("community %s (size %s) does not split even at resolution %g: left final over the size cap",
                parent.id, parent.size, res / 2)
    return []


def _number(eg: EntityGraph, groups: list[tuple[int | None, list[str], bool]], level: int, first_id: int,
            resolution: float, algorithm: str, hasher: _Inner | None = None) -> list[Community]:
    """Communities of one level from (parent, sorted members, kept), ordered by parent, size, smallest uid."""
    ordered = sorted(groups, key=lambda g: (-1 if g[0] is None else g[0], -len(g[1]), g[1][0]))
    inner = relations_inside(eg, [members for _, members, _ in ordered])
    out = []
    for i, (parent, members, kept) in enumerate(ordered):
        _, content_hash = community_content(eg, members, inner[i])
        c = Community(first_id + i, level, resolution, members, sha("\n".join(members)), content_hash,
                      parent=parent, algorithm=algorithm, kept=kept)  # fmt: skip
        if hasher is not None:
            c.inner_hash = hasher.hash(members, inner[i])
        if len(members) == 1:
            c.title = eg.entities[members[0]]["name"]
        out.append(c)
    return out


def _louvain(g: nx.Graph, resolution: float, seed: int) -> list[set[str]]:
    if g.number_of_nodes() == 0:
        return []
    if g.number_of_edges() == 0:
        return [{n} for n in g.nodes]
    return list(nx.community.louvain_communities(g, weight="weight", resolution=resolution, seed=seed))


def level_view(communities: Sequence[Any], level: int) -> list[Any]:
    """The communities that partition the graph at depth ``level``: those of that level, and the final
    ones (no children) of the levels above. Works on :class:`Community` objects or rows with ``id``,
    ``level`` and ``parent``."""

    def get(c: Any, key: str) -> Any:
        return c[key] if isinstance(c, Mapping) else getattr(c, key)

    parents = {get(c, "parent") for c in communities if get(c, "parent") is not None}
    return [c for c in communities
            if (get(c, "level") or 0) == level or ((get(c, "level") or 0) < level and get(c, "id") not in parents)]


# ---------------------------------------------------------------------------------------------
# Leiden on igraph
# ---------------------------------------------------------------------------------------------

#: Which Leiden implementation partitions a level: ``"igraph"`` (igraph's C core,
#: ``Graph.community_leiden``) or ``"leidenalg"`` (the reference package, same algorithm and
#: objective). Both are seeded; igraph's is 5-7x faster on large graphs (benchmarks/community_detection.py).
LEIDEN_BACKEND = "igraph"
LEIDEN_ITERATIONS = 2  # passes of the Leiden iteration (each: move nodes, refine, aggregate)
_RNG_LOCK = threading.Lock()  # igraph's random generator is process-global


@dataclass
class IGraphView:
    """The entity graph as an igraph ``Graph`` (vertices in uid order) for Leiden on any subset of it."""

    names: list[str]
    index: dict[str, int]
    graph: Any  # igraph.Graph with a "weight" edge attribute and an "i" vertex attribute (its index)

    @classmethod
    def from_networkx(cls, g: nx.Graph) -> "IGraphView":
        import igraph

        names = sorted(g.nodes)
        index = {n: i for i, n in enumerate(names)}
        edges = sorted((min(index[a], index[b]), max(index[a], index[b]), float(d.get("weight", 1.0)))
                       for a, b, d in g.edges(data=True))  # fmt: skip
        graph = igraph.Graph(n=len(names), edges=[(a, b) for a, b, _ in edges])
        graph.es["weight"] = [w for _, _, w in edges]
        graph.vs["i"] = list(range(len(names)))
        return cls(names, index, graph)

    def leiden(self, subset: Sequence[int] | None, resolution: float, seed: int,
               backend: str | None = None) -> list[list[int]]:
        """Leiden communities (vertex indexes) of the whole graph or of the subgraph induced by ``subset``."""
        g = self.graph if subset is None else self.graph.induced_subgraph(sorted(subset))
        if g.vcount() == 0:
            return []
        orig = g.vs["i"]
        if g.ecount() == 0:
            return [[i] for i in orig]
        return _groups(leiden_membership(g, resolution, seed, backend), orig)

    def leiden_in(self, subset: Sequence[int], resolution: float, seed: int, start: Sequence[Any],
                  within: Sequence[int] | None = None) -> list[list[int]]:
        """Leiden communities of the vertices ``subset`` (sorted) that optimise the modularity of the
        subgraph induced by ``within`` (None: the whole graph) while its other vertices stay where they
        are and take no one in: CPM on the subgraph of ``subset`` with the weighted degrees in ``within``
        as node weights and resolution / 2m of ``within`` (the same objective: the edges to the other
        vertices only add a constant). ``start``: a starting community label per vertex of ``subset``."""
        if not subset:
            return []
        if within is None:
            strength = self.graph.strength(weights="weight")
            weight_of = {i: strength[i] for i in subset}
        else:
            whole = self.graph.induced_subgraph(list(within))
            strength = whole.strength(weights="weight")
            weight_of = dict(zip(whole.vs["i"], strength))
        total = float(sum(strength))
        g = self.graph.induced_subgraph(list(subset))
        orig = g.vs["i"]
        if g.ecount() == 0 or total <= 0:
            return [[i] for i in orig]
        with _seeded_igraph(seed):
            clusters = g.community_leiden(objective_function="CPM", weights="weight", resolution=resolution / total,
                                          node_weights=[weight_of[i] for i in orig], initial_membership=_dense(start),
                                          n_iterations=LEIDEN_ITERATIONS)  # fmt: skip
        return _groups(clusters.membership, orig)

    def leiden_fixed(self, within: Sequence[int] | None, resolution: float, seed: int, start: Sequence[Any],
                     fixed: Sequence[bool]) -> list[list[int]]:
        """Leiden communities of the subgraph induced by ``within`` (sorted vertex indexes; None: the whole
        graph), modularity with ``resolution``, starting from ``start`` (a label per vertex) where the
        vertices with ``fixed`` True stay in their starting community (others may join it).

        leidenalg, not igraph: only its optimiser can hold vertices fixed."""
        import leidenalg

        g = self.graph if within is None else self.graph.induced_subgraph(list(within))
        orig = g.vs["i"]
        initial = _dense(start)
        if g.ecount() > 0:
            part = leidenalg.RBConfigurationVertexPartition(g, initial_membership=initial, weights="weight",
                                                            resolution_parameter=float(resolution))  # fmt: skip
            optimiser = leidenalg.Optimiser()
            optimiser.set_rng_seed(int(seed) % (2**31))
            optimiser.optimise_partition(part, n_iterations=LEIDEN_ITERATIONS, is_membership_fixed=list(fixed))
            initial = list(part.membership)
        return _groups(initial, orig)


def _groups(membership: Sequence[int], orig: Sequence[int]) -> list[list[int]]:
    """Vertex indexes (``orig``, the whole graph's) grouped by community number."""
    groups: dict[int, list[int]] = {}
    for v, m in enumerate(membership):
        groups.setdefault(m, []).append(orig[v])
    return list(groups.values())


def _dense(labels: Sequence[Any]) -> list[int]:
    """Community labels of any kind as numbers 0, 1, 2... in order of first appearance (igraph and
    leidenalg want a membership list)."""
    numbers: dict[Any, int] = {}
    return [numbers.setdefault(label, len(numbers)) for label in labels]


@contextmanager
def _seeded_igraph(seed: int) -> Iterator[None]:
    """igraph's process-global random generator seeded for one call, then back to its default."""
    import random

    import igraph

    with _RNG_LOCK:
        igraph.set_random_number_generator(random.Random(seed))
        try:
            yield
        finally:
            igraph.set_random_number_generator(random)  # igraph's default generator


def leiden_membership(g: Any, resolution: float, seed: int, backend: str | None = None) -> list[int]:
    """One Leiden partition (modularity with ``resolution``, weighted) of igraph graph ``g``: a
    community number per vertex. Deterministic for a seed."""
    backend = backend or LEIDEN_BACKEND
    weights = "weight" if "weight" in g.es.attributes() else None
    if backend == "leidenalg":
        import leidenalg

        part = leidenalg.find_partition(g, leidenalg.RBConfigurationVertexPartition, weights=weights,
                                        resolution_parameter=float(resolution), seed=int(seed) % (2**31),
                                        n_iterations=LEIDEN_ITERATIONS)  # fmt: skip
        return list(part.membership)
    if backend != "igraph":
        raise GraphragGotError(f"unknown Leiden backend {backend!r}: use igraph or leidenalg")
    with _seeded_igraph(seed):
        clusters = g.community_leiden(objective_function="modularity", weights=weights,
                                      resolution=float(resolution), n_iterations=LEIDEN_ITERATIONS)
    return list(clusters.membership)


@dataclass
class SweepRow:
    resolution: float
    communities: int  # level 0
    singletons: int
    largest: int
    modularity: float  # standard modularity (resolution 1) of level 0, so rows compare
    algorithm: str = "louvain"
    levels: int = 1  # levels of the hierarchy (leiden)
    sized: int = 0  # level-0 communities of size >= 2
    warning: str | None = None  # set when no community of size >= 2 came out

    @property
    def ok(self) -> bool:
        return self.warning is None


def sweep(eg: EntityGraph, resolutions: Sequence[float], seed: int = 42,
          algorithms: Sequence[str] = ("louvain",), *, max_size: int = 10, max_levels: int = 3) -> list[SweepRow]:
    """Community counts and modularity per (algorithm, resolution); nothing is written.

    A row whose resolution yields no community of size >= 2 carries a ``warning`` (the caller shows
    it): nothing would be worth a report at that resolution.
    """
    rows = []
    for algorithm in algorithms:
        for res in resolutions:
            _check_algorithm(algorithm, res, max_size, max_levels)
            comms = detect_communities(eg, res, seed, algorithm=algorithm, max_size=max_size, max_levels=max_levels)
            top = [set(c.members) for c in comms if c.level == 0]
            mod = (nx.community.modularity(eg.graph, top, weight="weight")
                   if eg.graph.number_of_edges() else 0.0)  # fmt: skip
            sized = sum(1 for p in top if len(p) >= 2)
            warning = None
            if sized == 0:
                warning = (f"{algorithm} at resolution {res:g} yields no community of 2 or more entities "
                           f"({len(eg.entities)} entities, {eg.graph.number_of_edges()} links): try a lower "
                           "resolution" + ("" if eg.cooccurrence else ", or --co-occurrence"))
            rows.append(SweepRow(float(res), len(top), sum(1 for p in top if len(p) == 1),
                                 max((len(p) for p in top), default=0), round(float(mod), 4), algorithm,
                                 1 + max((c.level for c in comms), default=0), sized, warning))  # fmt: skip
    return rows


__all__ = [
    "ALGORITHMS", "Community", "IGraphView", "PriorCommunity", "SweepRow", "detect_communities",
    "inner_hash", "leiden_membership", "level_view", "sweep"
]  # fmt: skip
