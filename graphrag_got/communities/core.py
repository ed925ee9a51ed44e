"""Communities of the entity graph: hierarchical Leiden (or Louvain), ``:Community`` nodes, LLM reports.

    eg = read_entity_graph(driver, settings, ontology)                # read only
    comms = detect_communities(eg, resolution=1.0, seed=42)           # Leiden, levels, deterministic
    write_communities(driver, settings, comms)                        # replaces previous communities
    rows = sweep(eg, [0.5, 1, 1.5, 2], seed=42)                       # per algorithm; no writes
    run = summarize_communities(driver, settings, chat)               # one LLM call per changed report

Design choices:

* The graph is undirected. A link's weight is the sum, over the distinct relations joining the two
  entities, of the number of chunks supporting each (at least 1). A symmetric relation (stored in
  both directions) counts once. Only the ontology's relation types are read, so HAS_CHUNK,
  MENTIONS and IN_COMMUNITY never take part. With ``cooccurrence=True`` the ``CO_OCCURS`` edges
  (written by ``load``) add their weight (the sum, over the chunks the two entities share, of the
  lower of their two mention confidences): for ontologies with few relations.
* Leiden (``leidenalg``, modularity with a resolution, seeded) is hierarchical as in Microsoft
  GraphRAG: level 0 partitions the whole graph; every community larger than ``max_size`` is
  clustered again on its own subgraph into level-1 sub-communities, and so on for at most
  ``max_levels`` levels. A community that is small enough is final: it has no children, and the
  "view" of the graph at level L (:func:`level_view`) is the level-L communities plus the final
  communities of the levels above. When a community does not split at the resolution asked, the
  resolution is doubled (at most ``SPLIT_TRIES`` times) before the community is left final and
  over the cap (logged). Louvain (networkx) stays as one level for comparison.
* Isolated entities (no relation) become level-0 singleton communities, so every entity has a
  ``communityId`` (its level-0 community). Singletons are not reported by the LLM (their title is
  the entity's name, their summary stays null) and global search therefore skips them.
* Ids are stable and unique across levels: level 0 is numbered first from 0, by size (descending)
  then smallest member uid; each deeper level continues the numbering, ordered by parent id, size,
  smallest uid. Nodes are inserted in uid order, so an algorithm sees the same input for a seed.
* Every membership is an ``IN_COMMUNITY`` relationship with ``communityLevel``; the Community node
  has ``level`` and (below level 0) ``parent``.
* Reports (title, summary, key findings citing members, importance rating 0-10 with its reason)
  are written from the members with their properties, the relations among them and a few chunk
  excerpts (the chunks mentioning most members, bounded in characters). A report is keyed by that
  prompt text, the model label and the prompt version; a rerun on an unchanged graph makes no LLM
  call: the node already holds a report for that key, or the answer is in
  ``<cache_dir>/communities/<key>.json``. ``detect`` carries reports (and their embeddings) over to
  a new community with the same members and relations.
* After the reports, each report text is embedded (``graphrag_got.llm.embeddings.get_embedder``,
  cached by content) into ``Community.embedding`` with the cosine vector index
  ``community_embedding``; global search ranks communities by it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Mapping

import neo4j
import networkx as nx
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, field_validator

from graphrag_got.graph import queries as cypher
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError, LLMError, Neo4jError
from graphrag_got.graph.db import read_all, session
from graphrag_got.llm.client import LLMOutputError, LLMUsage, complete_json, drop_repeated_sentences
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import RESERVED_PROPERTIES
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.prompts import COMMUNITY_SUMMARY_VERSION, community_summary_prompt, language_tag

logger = logging.getLogger(__name__)

Algorithm = Literal["leiden", "louvain"]
ALGORITHMS: tuple[str, ...] = ("leiden", "louvain")

PROMPT_VERSION = COMMUNITY_SUMMARY_VERSION  # in every report key: a new wording never reuses old reports
SUMMARY_MAX_TOKENS = 700  # title, summary, a few findings and a rating fit; a model stuck repeating is cut off
LEVEL = 0
#: Node properties of the graph model itself (the ontology refuses them as property names).
BOOKKEEPING = RESERVED_PROPERTIES | {"embedding", "embedding_hash", "confidence"}
#: Bounds of one report prompt (the embedded model has a 4k context).
MAX_PROMPT_MEMBERS = 60
MAX_PROMPT_RELATIONS = 80
MAX_EXCERPTS = 3  # chunks quoted in a report prompt
MAX_EXCERPT_CHARS = 400  # characters of one chunk excerpt
MAX_EXCERPTS_CHARS = 1000  # characters of all excerpts of one prompt
#: How many times a community that will not split is tried again at twice the resolution.
SPLIT_TRIES = 3


# ---------------------------------------------------------------------------------------------
# Reading the entity graph
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rel:
    start: str
    end: str
    type: str
    attributes: tuple[tuple[str, str], ...]  # the ontology's relation attributes the fact holds
    symmetric: bool
    support: int


@dataclass
class EntityGraph:
    entities: dict[str, dict[str, Any]]  # uid -> {uid, name, type, properties}
    relations: list[Rel]  # deduplicated: a symmetric relation appears once, ends in uid order
    graph: nx.Graph  # undirected, weighted (see module docstring)
    cooccurrence: bool = False  # whether CO_OCCURS edges were added to ``graph``
    cooccurrence_links: int = 0  # CO_OCCURS pairs read (added to ``graph``)


def relation_types(ontology: Any) -> list[str]:
    return sorted(r.name for r in ontology.relations)


def _load_ontology(settings: Settings, ontology: Any) -> Any:
    if ontology is None or isinstance(ontology, (str, Path)):
        from graphrag_got.ontology.model import Ontology

        return Ontology.from_file(ontology or settings.ontology_path)
    return ontology


def dedupe_relations(rows: Iterable[dict[str, Any]]) -> list[Rel]:
    """One Rel per relation: both stored directions of a symmetric relation give one, ends sorted."""
    seen: dict[tuple[Any, ...], Rel] = {}
    for r in rows:
        start, end, sym = r["start"], r["end"], bool(r["symmetric"])
        if sym and end < start:
            start, end = end, start
        attrs = tuple(sorted((str(k), str(v)) for k, v in (r.get("attributes") or [])))
        key = (start, r["type"], end, attrs)
        support = int(r.get("support", 0) or 0)
        old = seen.get(key)
        if old is None or support > old.support:
            seen[key] = Rel(start, end, r["type"], attrs, sym, support)
    return [seen[k] for k in sorted(seen)]


def _add_weight(g: nx.Graph, a: str, b: str, w: float) -> None:
    if g.has_edge(a, b):
        g[a][b]["weight"] += w
    else:
        g.add_edge(a, b, weight=w)


def cooccurrence_weight(row: Mapping[str, Any]) -> float:
    """The link weight of one ``CO_OCCURS`` edge: its ``weight``, else its chunk ``count``, else 1."""
    for key in ("weight", "count"):
        value = row.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return float(value)
    return 1.0


def build_entity_graph(entity_rows: Iterable[Mapping[str, Any]], relation_rows: Iterable[dict[str, Any]],
                       cooccurrence_rows: Iterable[Mapping[str, Any]] | None = None) -> EntityGraph:
    """The weighted undirected graph of the module docstring, from rows as Neo4j returns them.

    ``cooccurrence_rows`` None leaves the ``CO_OCCURS`` edges out; rows ``{start, end, weight, count}``
    add them (self-pairs and unknown ends ignored).
    """
    entities = {
        r["uid"]: {"uid": r["uid"], "name": r["name"], "type": r["type"],
                   "properties": {k: v for k, v in sorted((r["properties"] or {}).items()) if k not in BOOKKEEPING}}
        for r in entity_rows
    }  # fmt: skip
    relations = [x for x in dedupe_relations(relation_rows) if x.start in entities and x.end in entities]
    g = nx.Graph()
    g.add_nodes_from(sorted(entities))
    for rel in relations:
        if rel.start != rel.end:
            _add_weight(g, rel.start, rel.end, max(1, rel.support))
    links = 0
    if cooccurrence_rows is not None:
        for row in sorted(cooccurrence_rows, key=lambda r: (str(r["start"]), str(r["end"]))):
            a, b = row["start"], row["end"]
            if a == b or a not in entities or b not in entities:
                continue
            _add_weight(g, a, b, cooccurrence_weight(row))
            links += 1
    return EntityGraph(entities, relations, g, cooccurrence=cooccurrence_rows is not None, cooccurrence_links=links)


def read_entity_graph(driver: neo4j.Driver, settings: Settings, ontology: Any = None,
                      cooccurrence: bool | None = None) -> EntityGraph:
    """The entity graph from Neo4j, read only. ``cooccurrence`` None follows ``settings.community_cooccurrence``."""
    onto = _load_ontology(settings, ontology)
    use_cooc = settings.community_cooccurrence if cooccurrence is None else cooccurrence
    ents = read_all(driver, settings, cypher.community_entities())
    rels = read_all(driver, settings, cypher.community_relations(), types=relation_types(onto),
                    attributes=list(onto.relation_attributes))
    cooc = read_all(driver, settings, cypher.community_cooccurrences()) if use_cooc else None
    if use_cooc and not cooc:
        logger.warning("co-occurrence asked but the graph has no CO_OCCURS edges: load the extraction with "
                       "GRAPHRAG_COOCCURRENCE=1 to write them")  # fmt: skip
    return build_entity_graph(ents, rels, cooc)


# ---------------------------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


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
    embedding: list[float] | None = None  # carried over from a previous detection, never computed here
    embedding_hash: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)


def community_content(eg: EntityGraph, members: Sequence[str], inner: Sequence[Rel] | None = None) -> tuple[str, str]:
    """The members and relations part of a report prompt, and its hash (the community's content).

    Members with type and properties, and the relations among them (with their attributes), bounded by
    MAX_PROMPT_MEMBERS / MAX_PROMPT_RELATIONS (most connected members, best supported relations).
    ``inner`` (the relations among the members, when the caller has grouped them already) saves a
    scan of every relation.
    """
    if inner is None:
        member_set = set(members)
        inner = [r for r in eg.relations if r.start in member_set and r.end in member_set]
    degree = {u: 0 for u in members}
    for r in inner:
        degree[r.start] += 1
        degree[r.end] += 1
    shown = sorted(members, key=lambda u: (-degree[u], u))[:MAX_PROMPT_MEMBERS]
    lines = [f"MEMBERS ({len(members)}):"]
    for uid in sorted(shown, key=lambda u: (eg.entities[u]["type"], eg.entities[u]["name"])):
        e = eg.entities[uid]
        props = "; ".join(f"{k}: {v}" for k, v in e["properties"].items())
        lines.append(f"- {e['name']} ({e['type']}{'; ' + props if props else ''})")
    if len(members) > len(shown):
        lines.append(f"- ... and {len(members) - len(shown)} more")
    best = sorted(inner, key=lambda r: (-r.support, r.start, r.type, r.end, r.attributes))[:MAX_PROMPT_RELATIONS]
    lines.append(f"RELATIONS AMONG THEM ({len(inner)}):")
    for r in sorted(best, key=lambda r: (r.start, r.type, r.end, r.attributes)):
        lines.append("- " + fact_line(eg.entities[r.start]["name"], r.type, eg.entities[r.end]["name"],
                                      dict(r.attributes)))
    if len(inner) > len(best):
        lines.append(f"- ... and {len(inner) - len(best)} more")
    text = "\n".join(lines)
    return text, _sha(text)


def excerpts_block(chunks: Sequence[Mapping[str, Any]]) -> str:
    """The ``SOURCE EXCERPTS`` part of a report prompt: at most MAX_EXCERPTS chunks (as given: the ones
    mentioning most members first), each cut to MAX_EXCERPT_CHARS, all within MAX_EXCERPTS_CHARS."""
    lines: list[str] = []
    budget = MAX_EXCERPTS_CHARS
    for ch in list(chunks)[:MAX_EXCERPTS]:
        text = _clip(str(ch.get("text") or ""), min(MAX_EXCERPT_CHARS, budget))
        if not text or budget <= 0:
            break
        budget -= len(text)
        lines.append(f"- [{ch.get('id')}] {text}")
    return ("SOURCE EXCERPTS:\n" + "\n".join(lines)) if lines else ""


def fact_line(subject: str, rel_type: str, obj: str, attributes: Mapping[str, str] | None = None) -> str:
    """``Ada Lovelace WORKS_WITH Charles Babbage (since: 1833)``: a fact with its relation attributes."""
    shown = "; ".join(f"{k}: {v}" for k, v in (attributes or {}).items() if v)
    return f"{subject} {rel_type} {obj}" + (f" ({shown})" if shown else "")


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
) -> list[Community]:
    """Communities of every level (level 0 first), numbered as the module docstring says.

    ``algorithm="leiden"``: hierarchical with ``max_size`` / ``max_levels``; ``"louvain"``: one level.
    Deterministic for a seed.
    """
    _check_algorithm(algorithm, resolution, max_size, max_levels)
    if algorithm == "louvain":
        parts: list[list[str]] = [sorted(p) for p in _louvain(eg.graph, resolution, seed)]
        return _number(eg, [(None, p) for p in parts], 0, 0, float(resolution), algorithm)
    view = IGraphView.from_networkx(eg.graph)
    level0 = [sorted(view.names[i] for i in part) for part in view.leiden(None, resolution, seed)]
    out = _number(eg, [(None, p) for p in level0], 0, 0, float(resolution), algorithm)
    frontier = [c for c in out if c.size > max_size]
    for level in range(1, max_levels):
        children: list[tuple[int | None, list[str]]] = []
        for parent in frontier:
            parts = _split(view, parent, resolution, seed)
            children += [(parent.id, p) for p in parts]
        if not children:
            break
        new = _number(eg, children, level, len(out), float(resolution), algorithm)
        out += new
        frontier = [c for c in new if c.size > max_size]
    for c in frontier:
        logger.info("community %s (level %s, size %s) is over the size cap %s: the level cap (%s) was reached",
                    c.id, c.level, c.size, max_size, max_levels)
    return out


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


def _number(eg: EntityGraph, groups: list[tuple[int | None, list[str]]], level: int, first_id: int,
            resolution: float, algorithm: str) -> list[Community]:
    """Communities of one level from (parent, sorted members), ordered by parent, size, smallest uid."""
    ordered = sorted(groups, key=lambda g: (-1 if g[0] is None else g[0], -len(g[1]), g[1][0]))
    inner = _inner_relations(eg, [members for _, members in ordered])
    out = []
    for i, (parent, members) in enumerate(ordered):
        _, content_hash = community_content(eg, members, inner[i])
        c = Community(first_id + i, level, resolution, members, _sha("\n".join(members)), content_hash,
                      parent=parent, algorithm=algorithm)  # fmt: skip
        if len(members) == 1:
            c.title = eg.entities[members[0]]["name"]
        out.append(c)
    return out


def _inner_relations(eg: EntityGraph, groups: Sequence[Sequence[str]]) -> list[list[Rel]]:
    """The relations inside each of ``groups`` (disjoint member lists), in one pass over the relations."""
    where = {u: i for i, members in enumerate(groups) for u in members}
    inner: list[list[Rel]] = [[] for _ in groups]
    for r in eg.relations:
        i = where.get(r.start)
        if i is not None and where.get(r.end) == i:
            inner[i].append(r)
    return inner


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
        membership = leiden_membership(g, resolution, seed, backend)
        groups: dict[int, list[int]] = {}
        for v, m in enumerate(membership):
            groups.setdefault(m, []).append(orig[v])
        return list(groups.values())


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
    import random

    import igraph

    with _RNG_LOCK:
        igraph.set_random_number_generator(random.Random(seed))
        try:
            clusters = g.community_leiden(objective_function="modularity", weights=weights,
                                          resolution=float(resolution), n_iterations=LEIDEN_ITERATIONS)
        finally:
            igraph.set_random_number_generator(random)  # igraph's default generator
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


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _batches(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def write_communities(driver: neo4j.Driver, settings: Settings, communities: list[Community]) -> dict[str, int]:
    """Replace every ``:Community`` node and ``Entity.communityId`` by ``communities``, in one
    transaction (all or nothing). A report (with its embedding) whose content hash is unchanged is
    carried over."""
    try:
        with session(driver, settings, write=True) as ses:
            ses.run(cypher.community_constraint()).consume()
            kept = {r["content_hash"]: r.data() for r in ses.run(cypher.existing_community_summaries())}
            for c in communities:
                old = kept.get(c.content_hash)
                if old and c.size > 1:
                    c.title, c.summary, c.summary_key = old["title"], old["summary"], old["summary_key"]
                    c.findings, c.rating = old.get("findings"), old.get("rating")
                    c.rating_explanation = old.get("rating_explanation")
                    c.embedding, c.embedding_hash = old.get("embedding"), old.get("embedding_hash")
            comm_rows = [
                {"id": c.id, "level": c.level, "parent": c.parent, "algorithm": c.algorithm,
                 "resolution": c.resolution, "size": c.size, "members_hash": c.members_hash,
                 "content_hash": c.content_hash, "title": c.title, "summary": c.summary, "findings": c.findings,
                 "rating": c.rating, "rating_explanation": c.rating_explanation, "summary_key": c.summary_key}
                for c in communities
            ]  # fmt: skip
            member_rows = [{"uid": u, "id": c.id, "level": c.level} for c in communities for u in c.members]
            vector_rows = [{"id": c.id, "embedding": [float(x) for x in c.embedding], "hash": c.embedding_hash}
                           for c in communities if c.embedding and c.summary]  # fmt: skip

            def work(tx: neo4j.ManagedTransaction) -> None:
                tx.run(cypher.delete_communities()).consume()
                tx.run(cypher.clear_entity_communities()).consume()
                for batch in _batches(comm_rows, settings.batch_size):
                    tx.run(cypher.create_communities(), rows=batch).consume()
                for batch in _batches(member_rows, settings.batch_size):
                    tx.run(cypher.link_community_members(), rows=batch).consume()
                for batch in _batches(vector_rows, settings.batch_size):
                    tx.run(cypher.set_community_embeddings(), rows=batch).consume()

            ses.execute_write(work)
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"writing communities failed: {exc}") from exc
    return {"communities": len(comm_rows), "members": len(member_rows),
            "summaries_kept": sum(1 for c in communities if c.summary)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Reports
# ---------------------------------------------------------------------------------------------

MAX_TITLE_CHARS = 120
MAX_SUMMARY_CHARS = 2000
MAX_FINDINGS = 6
MAX_FINDING_CHARS = 300
MAX_FINDING_MEMBERS = 8
MAX_RATING_EXPLANATION_CHARS = 300


class Finding(BaseModel):
    statement: str = Field(min_length=1, description="one short statement about the group")
    members: list[str] = Field(default_factory=list, description="names of the members the statement is about")


class CommunityReport(BaseModel):
    """One community report as the model writes it. Only title and summary are required: a small
    model that leaves out the findings or the rating still gives a usable report."""

    title: str = Field(min_length=1, description="a short name for the group")
    summary: str = Field(min_length=1, description="3-6 sentences on who they are and what links them")
    findings: list[Finding] = Field(default_factory=list)
    rating: float | None = Field(default=None, description="importance of the group to the corpus, 0-10")
    rating_explanation: str = ""

    @field_validator("rating", mode="before")
    @classmethod
    def _clamp_rating(cls, value: Any) -> Any:
        """Out-of-range ratings are clamped to 0-10 (a retry for that would waste a call)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return min(10.0, max(0.0, float(value)))
        return value


#: Kept for callers of the one-summary era: a report is a summary with findings and a rating.
CommunitySummary = CommunityReport

#: The decoding constraint, written out: ``schema.llm_schema`` drops every key named "title" (it
#: also removes the *property* called title), and length bounds make llama.cpp's grammar
#: explode (it segfaulted on maxLength 1500), so the lengths are checked in code instead. Arrays
#: are bounded (small models otherwise repeat items until max_tokens).
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "findings": {"type": "array", "maxItems": MAX_FINDINGS, "items": {
            "type": "object",
            "properties": {"statement": {"type": "string"},
                           "members": {"type": "array", "maxItems": MAX_FINDING_MEMBERS, "items": {"type": "string"}}},
            "required": ["statement", "members"]}},
        "rating": {"type": "number"},
        "rating_explanation": {"type": "string"},
    },
    "required": ["title", "summary", "findings", "rating", "rating_explanation"],
}  # fmt: skip
REPORT_SCHEMA = SUMMARY_SCHEMA

#: The report prompt in its default form (language of the content); see ``prompts.community_summary_prompt``.
SYSTEM_PROMPT = community_summary_prompt()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if limit <= 1:
        return ""
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def summary_key(content_hash: str, label: str, language: str | None = None) -> str:
    """Cache key of a report: its prompt content, model, prompt version and (when forced) the language."""
    return _sha(f"{content_hash}|{label}|{PROMPT_VERSION}{language_tag(language)}")


def clean_findings(findings: Sequence[Finding], member_names: Sequence[str]) -> list[dict[str, Any]]:
    """Findings as stored: statements clipped, at most MAX_FINDINGS, each citing only real members.

    A cited name is kept when it is a member's name (compared normalized) and written as the member
    is named; members named in the statement itself are cited too. Invented names are dropped.
    """
    by_key = {normalize_name(n): n for n in member_names}
    out: list[dict[str, Any]] = []
    for f in list(findings)[:MAX_FINDINGS]:
        statement = _clip(drop_repeated_sentences(f.statement), MAX_FINDING_CHARS)
        if not statement:
            continue
        cited: list[str] = []
        for name in f.members:
            real = by_key.get(normalize_name(name))
            if real and real not in cited:
                cited.append(real)
        text_words = f" {_words(statement)} "
        for key, real in sorted(by_key.items()):
            if _words(key) and f" {_words(key)} " in text_words and real not in cited:
                cited.append(real)
        out.append({"statement": statement, "members": cited[:MAX_FINDING_MEMBERS]})
    return out


def _words(text: str) -> str:
    """``text`` normalized to its words separated by single spaces (punctuation dropped)."""
    return " ".join(re.findall(r"\w+", normalize_name(text)))


def parse_findings(value: Any) -> list[dict[str, Any]]:
    """The findings stored on a node (a JSON string) as a list; anything unreadable is no finding."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, str) and value:
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            return []
    else:
        return []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("statement"), str)] if isinstance(items, list) else []


def report_text(title: str | None, summary: str | None, findings: Any = None) -> str:
    """The text a report is embedded (and cited) as: title, summary, then one line per finding."""
    lines = [t for t in ((title or "").strip(), (summary or "").strip()) if t]
    lines += [f"- {f['statement']}" for f in parse_findings(findings)]
    return "\n".join(lines)


@dataclass
class SummarizeResult(LLMUsage):
    communities: int = 0
    eligible: int = 0  # non-singletons
    generated: int = 0
    cached: int = 0
    unchanged: int = 0
    singletons_skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    export_path: str | None = None
    seconds: float = 0.0
    embedded: int = 0  # report embeddings computed or refreshed
    embeddings_unchanged: int = 0  # reports whose stored embedding matches their text
    embedding_calls: int = 0  # calls to the embedding model (0 when every vector came from its cache)
    embedding_error: str | None = None  # why the reports were not embedded (global search then ranks by rating)
    embedding_seconds: float = 0.0


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # torn or missing: a miss, never an error
    return data if isinstance(data, dict) and data.get("title") and data.get("summary") else None


def _excerpts(driver: neo4j.Driver, settings: Settings, groups: list[tuple[int, list[str]]]) -> dict[int, str]:
    """Community id -> its SOURCE EXCERPTS block (the chunks mentioning most of its members)."""
    out: dict[int, str] = {}
    rows = [{"id": cid, "uids": uids} for cid, uids in groups]
    for batch in _batches(rows, max(1, min(settings.batch_size, 500))):
        for r in read_all(driver, settings, cypher.community_chunk_excerpts(), rows=batch, limit=MAX_EXCERPTS):
            out[r["id"]] = excerpts_block(r["chunks"] or [])
    return out


def report_record(obj: CommunityReport, member_names: Sequence[str]) -> dict[str, Any]:
    """What is cached and stored of one model report (clipped, findings checked against the members)."""
    return {
        "title": _clip(obj.title, MAX_TITLE_CHARS),
        "summary": _clip(drop_repeated_sentences(obj.summary), MAX_SUMMARY_CHARS),
        "findings": clean_findings(obj.findings, member_names),
        "rating": None if obj.rating is None else round(float(obj.rating), 1),
        "rating_explanation": _clip(obj.rating_explanation, MAX_RATING_EXPLANATION_CHARS),
    }


def _node_row(cid: int, record: Mapping[str, Any], key: str) -> dict[str, Any]:
    findings = record.get("findings") or []
    return {"id": cid, "title": record["title"], "summary": record["summary"],
            "findings": json.dumps(findings, ensure_ascii=False) if findings else None,
            "rating": record.get("rating"), "rating_explanation": record.get("rating_explanation") or None,
            "summary_key": key}  # fmt: skip


def summarize_communities(
    driver: neo4j.Driver,
    settings: Settings,
    chat: BaseChatModel | None = None,
    *,
    ontology: Any = None,
    label: str | None = None,
    force: bool = False,
    export: bool = True,
    progress: ProgressCallback | None = None,
    language: str | None = None,
    embedder: Embeddings | None = None,
    embed: bool | None = None,
) -> SummarizeResult:
    """One LLM call per non-singleton community whose report is missing or out of date, then the
    report embeddings.

    ``label`` names the model in the cache key (default: ``llm.model_label(settings)``).
    ``force`` ignores the reports on the nodes (the disk cache still answers).
    A community whose answer stays invalid is reported in ``failed`` and left without a report.
    ``language`` forces the reports' language (``"English"``); None writes them in the language of
    each community's content. ``embed`` (default ``settings.embeddings``) embeds the reports with
    ``embedder`` (default ``embeddings.get_embedder(settings)``); an embedding failure is recorded in
    ``embedding_error``, never fatal (the reports are written).
    """
    from graphrag_got.common.files import write_json_atomic

    t0 = time.perf_counter()
    eg = read_entity_graph(driver, settings, ontology, cooccurrence=False)
    stored = read_all(driver, settings, cypher.communities_with_members())
    if not stored:
        raise GraphragGotError("the graph has no communities: run `graphrag-got communities detect` first")
    if label is None:
        from graphrag_got.llm.client import model_label

        label = model_label(settings)
    res = SummarizeResult(communities=len(stored))
    cache_dir = settings.cache_dir / "communities"
    rows: list[dict[str, Any]] = []
    todo: list[tuple[dict[str, Any], str, str, list[str]]] = []
    eligible: list[tuple[dict[str, Any], list[str]]] = []
    for rec in stored:
        members = [m["uid"] for m in rec["members"] if m.get("uid") in eg.entities]
        if len(members) < 2:
            res.singletons_skipped += 1
            continue
        eligible.append((rec, members))
    res.eligible = len(eligible)
    excerpts = _excerpts(driver, settings, [(rec["id"], members) for rec, members in eligible])
    for rec, members in eligible:
        content, _ = community_content(eg, members)
        text = content + ("\n" + excerpts[rec["id"]] if excerpts.get(rec["id"]) else "")
        key = summary_key(_sha(text), label, language)
        names = [eg.entities[u]["name"] for u in members]
        if not force and rec["summary_key"] == key and rec["summary"]:
            res.unchanged += 1
            continue
        hit = _read_json(cache_dir / f"{key}.json")
        if hit is not None:
            res.cached += 1
            rows.append(_node_row(rec["id"], hit, key))
            continue
        todo.append((dict(rec), text, key, names))

    total = len(todo)
    system = community_summary_prompt(language)
    if total:
        if chat is None:
            from graphrag_got.llm.client import get_chat_model

            chat = get_chat_model(settings)
        lock = threading.Lock()
        done = 0

        def one(rec: dict[str, Any], text: str, key: str, names: list[str]) -> tuple[Any, ...]:
            """(rec, key, names, report or None, attempt or None, error or None, calls made)"""
            try:
                obj, attempt = complete_json(chat, system, f"COMMUNITY {rec['id']}\n{text}",
                                             CommunityReport, schema=SUMMARY_SCHEMA,
                                             max_tokens=SUMMARY_MAX_TOKENS)
                return rec, key, names, obj, attempt, None, len(attempt.raw_responses)
            except LLMOutputError as exc:
                return rec, key, names, None, None, str(exc), len(exc.raw_responses)
            except LLMError as exc:
                return rec, key, names, None, None, str(exc), 1

        with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
            futures = [pool.submit(one, *t) for t in todo]
            for fut in as_completed(futures):
                rec, key, names, obj, attempt, error, calls = fut.result()
                with lock:
                    done += 1
                    res.count(attempt, calls)
                    if obj is None:
                        res.failed.append({"id": rec["id"], "error": error})
                    else:
                        res.generated += 1
                        record = report_record(obj, names)
                        record.update({"model": label, "prompt_version": PROMPT_VERSION, "community": rec["id"],
                                       "raw_responses": attempt.raw_responses if attempt else []})  # fmt: skip
                        write_json_atomic(cache_dir / f"{key}.json", record)
                        rows.append(_node_row(rec["id"], record, key))
                    if progress is not None:
                        progress(ProgressEvent(step="summaries", done=done, total=total, message=str(rec["id"]),
                                               stats={"LLM calls": res.llm_calls, "failed": len(res.failed)},
                                               finished=done >= total))
    if rows:
        try:
            with session(driver, settings, write=True) as ses:
                for batch in _batches(sorted(rows, key=lambda r: r["id"]), settings.batch_size):
                    ses.execute_write(lambda tx, b=batch: tx.run(cypher.set_community_summaries(), rows=b).consume())
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"writing community reports failed: {exc}") from exc
    if settings.embeddings if embed is None else embed:
        t1 = time.perf_counter()
        try:
            embed_reports(driver, settings, embedder, res, progress=progress)
        except GraphragGotError as exc:
            if isinstance(exc, Neo4jError):
                raise
            res.embedding_error = str(exc)
            logger.warning("community reports were not embedded (global search will rank by rating): %s", exc)
        res.embedding_seconds = round(time.perf_counter() - t1, 3)
    if export:
        path = Path(settings.out_dir) / "communities.json"
        write_json_atomic(path, export_communities(driver, settings))
        res.export_path = str(path)
    res.failed.sort(key=lambda f: f["id"])
    res.seconds = round(time.perf_counter() - t0, 3)
    return res


def _embedder_id(embedder: Embeddings) -> str:
    """The embedding model's name: ``model_id`` (CachedEmbeddings), else ``model`` / ``model_name``."""
    for attr in ("model_id", "model", "model_name"):
        value = getattr(embedder, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(embedder).__name__


def embedding_key(embedder: Embeddings, text: str) -> str:
    """What ``Community.embedding_hash`` records: the model and the report text it embedded."""
    return _sha(f"{_embedder_id(embedder)}\0{text}")


def embed_reports(driver: neo4j.Driver, settings: Settings, embedder: Embeddings | None = None,
                  result: SummarizeResult | None = None, *, progress: ProgressCallback | None = None) -> SummarizeResult:
    """Embed every report whose stored embedding is missing or was made from another text or model,
    and make sure the cosine vector index ``community_embedding`` exists with the model's dimension."""
    res = result or SummarizeResult()
    if embedder is None:
        from graphrag_got.llm.embeddings import get_embedder

        embedder = get_embedder(settings)
    reports = read_all(driver, settings, cypher.community_reports_to_embed())
    todo: list[tuple[int, str, str]] = []
    for r in reports:
        text = report_text(r["title"], r["summary"], r["findings"])
        key = embedding_key(embedder, text)
        if r["embedded"] and r["embedding_hash"] == key:
            res.embeddings_unchanged += 1
        else:
            todo.append((r["id"], text, key))
    calls_before = _embedding_calls(embedder)
    vectors: list[list[float]] = []
    size = max(1, settings.embeddings_batch_size)
    for start in range(0, len(todo), size):
        part = todo[start : start + size]
        vectors += _embed_documents(embedder, [t for _, t, _ in part])
        if progress is not None:
            progress(ProgressEvent(step="report embeddings", done=min(start + size, len(todo)), total=len(todo),
                                   finished=start + size >= len(todo)))  # fmt: skip
    res.embedding_calls += max(0, _embedding_calls(embedder) - calls_before) if calls_before is not None \
        else (len(todo) + size - 1) // size
    dims = {len(v) for v in vectors}
    if len(dims) > 1:
        raise GraphragGotError(f"the embedding model returned vectors of sizes {sorted(dims)} for the reports")
    rows = [{"id": cid, "embedding": [float(x) for x in vec], "hash": key}
            for (cid, _, key), vec in zip(todo, vectors)]  # fmt: skip
    try:
        with session(driver, settings, write=True) as ses:
            dim = dims.pop() if dims else _stored_dimension(ses)
            if dim:
                _ensure_vector_index(ses, dim)
            for batch in _batches(rows, size):
                ses.execute_write(lambda tx, b=batch: tx.run(cypher.set_community_embeddings(), rows=b).consume())
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"writing community report embeddings failed: {exc}") from exc
    res.embedded += len(rows)
    return res


def _embedding_calls(embedder: Embeddings) -> int | None:
    stats = getattr(embedder, "stats", None)
    calls = getattr(stats, "model_calls", None)
    return calls if isinstance(calls, int) else None


def _embed_documents(embedder: Embeddings, texts: list[str]) -> list[list[float]]:
    from graphrag_got.llm.embeddings import EmbeddingError, normalize_vector

    try:
        vectors = embedder.embed_documents(texts)
    except GraphragGotError:
        raise
    except Exception as exc:  # noqa: BLE001 - any provider failure becomes one clear error
        raise EmbeddingError(f"embedding the community reports failed: {type(exc).__name__}: {exc}") from exc
    if len(vectors) != len(texts):
        raise EmbeddingError(f"the embedding model returned {len(vectors)} vectors for {len(texts)} reports")
    return [normalize_vector(v) for v in vectors]


def _stored_dimension(ses: neo4j.Session) -> int | None:
    for r in ses.run(cypher.vector_indexes()):
        if r["name"] == cypher.COMMUNITY_VECTOR_INDEX and r["dimensions"]:
            return int(r["dimensions"])
    return None


def _ensure_vector_index(ses: neo4j.Session, dimensions: int) -> None:
    """Create ``community_embedding`` (cosine); re-create it when the model's dimension changed."""
    current = _stored_dimension(ses)
    if current is not None and current != dimensions:
        logger.info("re-creating the vector index %s: %s dimensions, now %s",
                    cypher.COMMUNITY_VECTOR_INDEX, current, dimensions)
        ses.run(cypher.drop_index(cypher.COMMUNITY_VECTOR_INDEX)).consume()
    ses.run(cypher.create_community_vector_index(dimensions)).consume()


def export_communities(driver: neo4j.Driver, settings: Settings) -> dict[str, Any]:
    """The stored communities as a JSON-ready dict (``communities.json``)."""
    records = read_all(driver, settings, cypher.communities_with_members())
    comms = []
    for r in records:
        comms.append({
            "id": r["id"], "level": r["level"], "parent": r["parent"], "algorithm": r["algorithm"],
            "resolution": r["resolution"], "size": r["size"], "title": r["title"], "summary": r["summary"],
            "findings": parse_findings(r["findings"]), "rating": r["rating"],
            "rating_explanation": r["rating_explanation"], "members_hash": r["members_hash"],
            "members": [{"uid": m["uid"], "name": m["name"], "type": m["type"]} for m in r["members"] if m.get("uid")],
        })  # fmt: skip
    return {"format": "graphrag_got.communities/2", "prompt_version": PROMPT_VERSION, "communities": comms}


def stored_communities(driver: neo4j.Driver, settings: Settings) -> list[dict[str, Any]]:
    return export_communities(driver, settings)["communities"]


__all__ = [
    "ALGORITHMS", "Community", "CommunityReport", "CommunitySummary", "EntityGraph", "Finding", "IGraphView",
    "Rel", "SummarizeResult", "SweepRow", "build_entity_graph", "clean_findings", "community_content",
    "dedupe_relations", "detect_communities", "embed_reports", "export_communities", "fact_line",
    "leiden_membership", "level_view", "parse_findings", "read_entity_graph", "relation_types", "report_text",
    "stored_communities", "summarize_communities", "sweep", "write_communities",
]  # fmt: skip
