"""Vector and hybrid retrieval of a local question: vector hits and reciprocal rank fusion.

The question's vector is matched against the ``chunk_embedding`` and ``entity_embedding`` indexes
(:mod:`graphrag_got.graph.vectors`): the top-k entities become anchors (``how="vector"``, their
cosine ``score``), the top-k chunks are expanded to the chunks sharing their entities (ranked by
shared-entity weight, ``cypher.chunk_expansion``), and every ranked list is fused by reciprocal
rank fusion (:data:`RRF_K`, :func:`rrf`) into one ranking of facts and chunks (:func:`fuse`).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import neo4j

from graphrag_got.config import Neo4jSettings
from graphrag_got.graph import vector_cypher
from graphrag_got.graph.db import read_all
from graphrag_got.graph.vectors import vector_index_dimensions
from graphrag_got.search import cypher
from graphrag_got.search.anchors import Anchor
from graphrag_got.search.facts import Fact

Retrieval = Literal["graph", "vector", "hybrid"]
RETRIEVALS: tuple[str, ...] = ("graph", "vector", "hybrid")

#: Reciprocal rank fusion constant: an item at rank r (1-based) of a list scores 1 / (RRF_K + r),
#: summed over the lists that hold it. 60 is the value of Cormack, Clarke and Buettcher (SIGIR
#: 2009): it flattens the head of each list, so an item several lists agree on outranks one that a
#: single list puts first, and no list's raw scores (cosine, path distance, weights) need calibrating.
RRF_K = 60
EXPANSION_MAX_MENTIONS = 50  # an entity mentioned by more chunks is a hub: not used to expand
CHUNK_EXCERPT_CHARS = 700  # a vector/hybrid chunk in the context


@dataclass
class RankedChunk:
    """One chunk of the fused ranking: its RRF score and its 1-based rank in each list that had it."""

    chunk_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


def rrf(lists: dict[str, Sequence[Any]], k: int = RRF_K) -> list[tuple[Any, float, dict[str, int]]]:
    """Fuse ranked lists (name -> items, best first; an item at most once per list counts) into one
    ranking ``(item, score, {list name: rank})``, best first; ties keep first-seen order."""
    scores: dict[Any, float] = {}
    ranks: dict[Any, dict[str, int]] = {}
    for name, items in lists.items():
        seen: set[Any] = set()
        for rank, item in enumerate(items, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(item, {})[name] = rank
    order = sorted(scores, key=lambda item: -scores[item])  # sorted() is stable: ties stay in first-seen order
    return [(item, scores[item], ranks[item]) for item in order]


@dataclass
class VectorHits:
    chunks: list[dict[str, Any]] = field(default_factory=list)  # {id, document_id, heading, text, score}
    entities: list[dict[str, Any]] = field(default_factory=list)  # {uid, name, type, score}
    expansion: list[dict[str, Any]] = field(default_factory=list)  # {id, score, shared}


def vector_status(driver: neo4j.Driver, db: Neo4jSettings) -> dict[str, int]:
    """The dimensions of the chunk and entity vector indexes that exist (missing ones left out)."""
    dims = vector_index_dimensions(driver, db)
    return {n: dims[n] for n in (vector_cypher.CHUNK_VECTOR_INDEX, vector_cypher.ENTITY_VECTOR_INDEX) if n in dims}


def vector_hits(driver: neo4j.Driver, db: Neo4jSettings, vector: list[float], top_k: int,
                expand: bool = True) -> VectorHits:  # fmt: skip
    """Top-``top_k`` chunks and entities nearest to ``vector``, and (``expand``) the chunks sharing
    entities with those chunks, ranked by shared-entity weight (:func:`cypher.chunk_expansion`)."""
    hits = VectorHits()
    hits.chunks = read_all(driver, db, cypher.vector_chunks(), index=vector_cypher.CHUNK_VECTOR_INDEX,
                           k=top_k, vector=vector)
    hits.entities = read_all(driver, db, cypher.vector_entities(), index=vector_cypher.ENTITY_VECTOR_INDEX,
                             k=top_k, vector=vector)
    if expand and hits.chunks:
        hits.expansion = read_all(driver, db, cypher.chunk_expansion(), chunk_ids=[c["id"] for c in hits.chunks],
                                  max_mentions=EXPANSION_MAX_MENTIONS, limit=top_k * 2)
    return hits


@dataclass
class VectorSide:
    """The vector half of a question: its hits, or why there are none (``problem``), with the seconds
    spent embedding the question and querying the indexes."""

    hits: VectorHits = field(default_factory=lambda: VectorHits())
    problem: str | None = None
    embed_s: float | None = None
    vector_s: float | None = None


def vector_side(driver: neo4j.Driver, db: Neo4jSettings, embedder: Any, question: str, top_k: int,
                expand: bool) -> VectorSide:
    """Embed ``question`` and query the vector indexes (:func:`vector_hits`); a missing index or a model
    whose dimensions differ from the indexes' is a ``problem``, not an error. Needs nothing of the graph
    side, so local search runs it beside the name matching."""
    dims = vector_status(driver, db)
    if len(dims) < 2:
        return VectorSide(problem="the graph has no vector index (embeddings off, or never computed): run "
                                  "`graphrag-got load` with GRAPHRAG_EMBEDDINGS=1")
    t = time.perf_counter()
    vector = embedder.embed_query(question)
    side = VectorSide(embed_s=round(time.perf_counter() - t, 4))
    if any(d != len(vector) for d in dims.values()):
        side.problem = (f"the vector indexes have {sorted(set(dims.values()))} dimensions but the embedding model "
                        f"gives {len(vector)} (the model changed): run `graphrag-got load` again to re-embed")
        return side
    t = time.perf_counter()
    side.hits = vector_hits(driver, db, vector, top_k, expand=expand)
    side.vector_s = round(time.perf_counter() - t, 4)
    return side


def _fact_rank_by(facts: list[Fact], rank_of: dict[str, int], attr: str) -> list[tuple[Any, ...]]:
    """Fact keys ordered by the best rank (in ``rank_of``) of their ends (``attr="ends"``) or of their
    chunks (``attr="chunks"``); facts with none left out; ties keep the facts' order."""
    scored = []
    for i, f in enumerate(facts):
        keys = [f.start, f.end] if attr == "ends" else f.chunk_ids
        best = min((rank_of[k] for k in keys if k in rank_of), default=None)
        if best is not None:
            scored.append((best, i, f.key()))
    return [key for _, _, key in sorted(scored)]


def fuse(graph_facts: list[Fact], vector_facts: list[Fact], hits: VectorHits, max_facts: int,
          mode: str) -> tuple[list[Fact], list[RankedChunk]]:  # fmt: skip
    """One RRF ranking over facts and chunks (see module docstring); returns the facts to keep
    (at most ``max_facts``) and every chunk of the fused ranking, best first.

    ``graph_facts``: the neighbourhood of the name-matched anchors (hybrid only), ranked as in
    graph mode; ``vector_facts``: the one-hop facts of the vector anchors.
    """
    unique: dict[tuple[Any, ...], Fact] = {}
    for f in [*graph_facts, *vector_facts]:
        unique.setdefault(f.key(), f)  # a fact both lists hold: the graph one (nearest dist) is kept
    facts = list(unique.values())
    chunk_rank = {c["id"]: i for i, c in enumerate(hits.chunks, start=1)}
    entity_rank = {e["uid"]: i for i, e in enumerate(hits.entities, start=1)}
    lists: dict[str, list[Any]] = {
        "vector_chunks": [("C", c["id"]) for c in hits.chunks],
        "vector_entity_facts": [("F", k) for k in _fact_rank_by(facts, entity_rank, "ends")],
        "vector_chunk_facts": [("F", k) for k in _fact_rank_by(facts, chunk_rank, "chunks")],
    }
    if mode == "hybrid":
        lists["graph_facts"] = [("F", f.key()) for f in graph_facts]
        # One chunk list per retriever, so neither side votes twice in the fusion: the graph side's
        # chunks are those behind its facts, then the chunks the expansion through shared entities found.
        behind: list[Any] = []
        for f in graph_facts:
            behind += [("C", cid) for cid in f.chunk_ids]
        lists["graph_chunks"] = behind + [("C", c["id"]) for c in hits.expansion]
    fused = rrf(lists)
    by_key = {f.key(): f for f in facts}
    kept_facts = [by_key[key] for (kind, key), _, _ in fused if kind == "F"][:max_facts]
    chunks = [RankedChunk(key, score, ranks) for (kind, key), score, ranks in fused if kind == "C"]
    return kept_facts, chunks


def vector_anchors(hits: VectorHits, taken: set[str]) -> list[Anchor]:
    return [Anchor(e["uid"], e["name"] or e["uid"], e["type"] or "", "vector", "", float(e["score"]))
            for e in hits.entities if e["uid"] not in taken]


__all__ = [
    "CHUNK_EXCERPT_CHARS", "EXPANSION_MAX_MENTIONS", "RETRIEVALS", "RRF_K", "RankedChunk", "Retrieval",
    "VectorHits", "fuse", "rrf", "vector_anchors", "vector_hits", "vector_status"
]  # fmt: skip
