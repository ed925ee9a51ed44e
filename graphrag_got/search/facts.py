"""Facts of a local question: the ontology relations around its anchors, and excerpts of their chunks.

Ontology relations on paths of 1..hops from the anchors (read-only session, variable-length Cypher
path whose relationship types are restricted to the ontology's, the hop bound a validated integer
literal, at most ``path_limit`` paths); plus, from 2 hops on, relations one of whose relation
attributes names an anchor ("after the Great Fire" for the event Great Fire). A symmetric relation
(stored both ways) appears once. Ranking: nearest first, then facts joining two anchors, then
attribute hits, then most supported (number of chunks). Excerpts are the sentences of the chunks
behind the best facts that name an anchor.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j

from graphrag_got.common.normalize import swap_ends
from graphrag_got.communities.graph import fact_line
from graphrag_got.config import Neo4jSettings
from graphrag_got.graph.db import read_all
from graphrag_got.search import cypher
from graphrag_got.search.anchors import Anchor, normalize_words

log = logging.getLogger(__name__)

PATH_LIMIT = 5000  # paths expanded at most per neighbourhood query (hub guard)
MAX_EXCERPTS = 3
EXCERPT_CHARS = 400


@dataclass
class Fact:
    start: str
    start_name: str
    type: str
    end: str
    end_name: str
    attributes: tuple[tuple[str, str], ...]  # the ontology's relation attributes the fact holds
    symmetric: bool
    chunk_ids: list[str]
    dist: int
    via: str  # "path", or "attribute" (an attribute value names an anchor)
    evidence: list[str] = field(default_factory=list)  # sentences of the corpus stating the fact

    @property
    def context_line(self) -> str:
        """The fact and, when the graph holds one, the first sentence that states it."""
        if not self.evidence:
            return self.line
        sentence = " ".join(self.evidence[0].split())
        return f"{self.line} — \"{sentence[:300]}{'…' if len(sentence) > 300 else ''}\""

    @property
    def support(self) -> int:
        return len(self.chunk_ids)

    @property
    def line(self) -> str:
        return fact_line(self.start_name, self.type, self.end_name, dict(self.attributes))

    def key(self) -> tuple[Any, ...]:
        a, b = (self.start, self.end)
        if swap_ends(a, b, self.symmetric):
            a, b = b, a
        return (a, self.type, b, self.attributes)


@dataclass
class Excerpt:
    chunk_id: str
    text: str
    document_id: str | None = None
    heading: str | None = None
    score: float = 0.0  # fused (RRF) score in vector/hybrid retrieval
    via: list[str] = field(default_factory=list)  # the ranked lists that brought the chunk
    location: str | None = None  # where in its document: "p. 12", "Installation > Network"


def _facts(rows: list[dict[str, Any]], via: str) -> list[Fact]:
    return [Fact(r["start"], r["start_name"], r["type"], r["end"], r["end_name"],
                 tuple(sorted((str(k), str(v)) for k, v in (r.get("attributes") or []))),
                 bool(r["symmetric"]), list(r["chunk_ids"] or []), int(r["dist"]), via,
                 [str(e) for e in r.get("evidence") or []]) for r in rows]  # fmt: skip


def _attribute_rows(driver: neo4j.Driver, db: Neo4jSettings, names: list[str], limit: int,
                    params: dict[str, Any]) -> list[dict[str, Any]]:
    """Facts whose attribute values name an anchor: through the full-text index ``load`` creates;
    a graph loaded before that index existed falls back to reading every relationship (slow on a big
    graph: load it again to get the index)."""
    try:
        return read_all(driver, db, cypher.local_attribute_facts_indexed(),
                        terms=cypher.lucene_phrases(names), limit=limit, **params)
    except neo4j.exceptions.ClientError as exc:
        if "relation_attributes" not in str(exc) and "index" not in str(exc).lower():
            raise
        log.warning("no relation attribute index (load the graph again to create it); scanning every "
                       "relationship instead")
        return read_all(driver, db, cypher.local_attribute_facts(), names=names, limit=limit, **params)


def retrieve_facts(driver: neo4j.Driver, db: Neo4jSettings, anchors: list[Anchor], hops: int, types: list[str],
                   max_facts: int, path_limit: int = PATH_LIMIT,
                   attributes: Sequence[str] = ()) -> list[Fact]:  # fmt: skip
    """The ranked, deduplicated facts around ``anchors`` (read-only session).

    ``attributes``: the ontology's relation attribute names, returned with each fact; facts one of
    whose attribute values names an anchor are retrieved too (a fact placed at an event).
    """
    uids = [a.uid for a in anchors]
    params = {"anchors": uids, "types": types, "attributes": list(attributes)}
    found = _facts(read_all(driver, db, cypher.local_anchor_facts(), limit=max_facts * 2, **params), "path")
    if hops >= 2:
        q = cypher.local_neighborhood(hops)
        found += _facts(read_all(driver, db, q, path_limit=path_limit, limit=max_facts * 4, **params), "path")
        names = sorted({a.name.lower() for a in anchors if len(a.name) >= 4})
        if names and attributes:
            found += _facts(_attribute_rows(driver, db, names, max_facts, params), "attribute")
    best: dict[tuple[str, str, str, str], Fact] = {}
    for f in found:
        if swap_ends(f.start, f.end, f.symmetric):  # show a symmetric pair in one fixed direction
            f = Fact(f.end, f.end_name, f.type, f.start, f.start_name, f.attributes, True, f.chunk_ids, f.dist, f.via,
                     f.evidence)
        k = f.key()
        old = best.get(k)
        if old is None:
            best[k] = f
        else:
            old.dist = min(old.dist, f.dist)
            if f.via == "attribute":
                old.via = "attribute"
    anchor_set = set(uids)

    def rank(f: Fact) -> tuple[Any, ...]:
        both = f.start in anchor_set and f.end in anchor_set
        return (f.dist, not both, f.via != "attribute", -f.support, f.line)

    return sorted(best.values(), key=rank)[:max_facts]


_SENTENCE = re.compile(r"(?<=[.!?»])\s+")


def excerpts_for(driver: neo4j.Driver, db: Neo4jSettings, facts: list[Fact], anchors: list[Anchor],
                 limit: int = MAX_EXCERPTS) -> list[Excerpt]:  # fmt: skip
    """Short excerpts of the chunks behind the best facts: the sentences naming an anchor."""
    ids: list[str] = []
    for f in facts:
        for cid in f.chunk_ids:
            if cid not in ids:
                ids.append(cid)
        if len(ids) >= limit:
            break
    ids = ids[:limit]
    if not ids:
        return []
    texts = {r["id"]: r["text"] or "" for r in read_all(driver, db, cypher.chunk_texts(), ids=ids)}
    names = [normalize_words(a.name) for a in anchors]
    out = []
    for cid in ids:
        text = texts.get(cid, "")
        sentences = [s for s in _SENTENCE.split(text) if any(n and n in normalize_words(s) for n in names)]
        body = " ".join(sentences) if sentences else text
        if len(body) > EXCERPT_CHARS:
            body = body[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"
        if body:
            out.append(Excerpt(cid, body))
    return out


def sentence_excerpt(text: str, names: list[str], limit: int) -> str:
    """The sentences of ``text`` naming one of ``names`` (all of it when none does), cut at ``limit``."""
    sentences = [s for s in _SENTENCE.split(text) if any(n and n in normalize_words(s) for n in names)]
    body = " ".join(sentences) if sentences else text
    body = " ".join(body.split())
    if len(body) > limit:
        body = body[: limit - 1].rsplit(" ", 1)[0] + "…"
    return body


def sentence_units(excerpts: list[Excerpt]) -> list[Excerpt]:
    """Every sentence of ``excerpts`` as an excerpt of its own (same chunk, document, heading, score),
    in order, repeats of a sentence already given left out: the units a context ranked by question
    lists (:mod:`graphrag_got.search.rank`)."""
    out: list[Excerpt] = []
    seen: set[str] = set()
    for e in excerpts:
        for sentence in _SENTENCE.split(e.text):
            text = " ".join(sentence.split())
            if text and text not in seen:
                seen.add(text)
                out.append(Excerpt(e.chunk_id, text, e.document_id, e.heading, e.score, list(e.via), e.location))
    return out


__all__ = [
    "EXCERPT_CHARS", "Excerpt", "Fact", "MAX_EXCERPTS", "PATH_LIMIT", "excerpts_for", "retrieve_facts",
    "sentence_excerpt", "sentence_units"
]  # fmt: skip
