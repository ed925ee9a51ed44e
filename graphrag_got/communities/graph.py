"""The entity graph communities are detected on, and the text of a community's content.

    eg = read_entity_graph(driver, settings.neo4j, ontology, communities=settings.communities,
                           files=settings.files)                      # read only

* The graph is undirected. A link's weight is the sum, over the distinct relations joining the two
  entities, of the number of chunks supporting each (at least 1). A symmetric relation (stored in
  both directions) counts once. Only the ontology's relation types are read, so HAS_CHUNK,
  MENTIONS and IN_COMMUNITY never take part. With ``cooccurrence=True`` the ``CO_OCCURS`` edges
  (written by ``load``) add their weight (the sum, over the chunks the two entities share, of the
  lower of their two mention confidences): for ontologies with few relations.
* :func:`community_content` writes a community's members (with their properties) and the relations
  among them: the start of its report prompt. Its hash is the community's ``content_hash``, which
  lets a new detection keep the report of a community whose content did not change.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import neo4j
import networkx as nx

from graphrag_got.common.normalize import swap_ends
from graphrag_got.communities import cypher
from graphrag_got.config import CommunitySettings, FilesSettings, Neo4jSettings
from graphrag_got.graph.db import read_all
from graphrag_got.ontology.loading import load_ontology
from graphrag_got.ontology.model import RESERVED_PROPERTIES, Ontology

logger = logging.getLogger(__name__)

#: Node properties of the graph model itself (the ontology refuses them as property names).
BOOKKEEPING = RESERVED_PROPERTIES | {"embedding", "embedding_hash", "confidence"}
#: Bounds of the members and relations part of one report prompt (the embedded model has a 4k context).
MAX_PROMPT_MEMBERS = 60
MAX_PROMPT_RELATIONS = 80


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
    entities: dict[str, dict[str, Any]]  # uid -> {uid, name, type, properties, key, aliases}
    relations: list[Rel]  # deduplicated: a symmetric relation appears once, ends in uid order
    graph: nx.Graph  # undirected, weighted (see module docstring)
    cooccurrence: bool = False  # whether CO_OCCURS edges were added to ``graph``
    cooccurrence_links: int = 0  # CO_OCCURS pairs read (added to ``graph``)


def relation_types(ontology: Ontology) -> list[str]:
    return sorted(r.name for r in ontology.relations)


def dedupe_relations(rows: Iterable[dict[str, Any]]) -> list[Rel]:
    """One Rel per relation: both stored directions of a symmetric relation give one, ends sorted."""
    seen: dict[tuple[Any, ...], Rel] = {}
    for r in rows:
        start, end, sym = r["start"], r["end"], bool(r["symmetric"])
        if swap_ends(start, end, sym):
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


def _names(props: Mapping[str, Any]) -> dict[str, Any]:
    """An entity's key and aliases (bookkeeping, not in its properties): what a matcher of its names reads."""
    aliases = props.get("aliases")
    key = props.get("key")
    return {"key": key if isinstance(key, str) else None,
            "aliases": [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []}


def build_entity_graph(entity_rows: Iterable[Mapping[str, Any]], relation_rows: Iterable[dict[str, Any]],
                       cooccurrence_rows: Iterable[Mapping[str, Any]] | None = None) -> EntityGraph:
    """The weighted undirected graph of the module docstring, from rows as Neo4j returns them.

    ``cooccurrence_rows`` None leaves the ``CO_OCCURS`` edges out; rows ``{start, end, weight, count}``
    add them (self-pairs and unknown ends ignored).
    """
    entities = {
        r["uid"]: {"uid": r["uid"], "name": r["name"], "type": r["type"],
                   "properties": {k: v for k, v in sorted((r["properties"] or {}).items()) if k not in BOOKKEEPING},
                   **_names(r["properties"] or {})}
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


def read_entity_graph(driver: neo4j.Driver, db: Neo4jSettings, ontology: Ontology | str | Path | None = None,
                      cooccurrence: bool | None = None, *, communities: CommunitySettings | None = None,
                      files: FilesSettings) -> EntityGraph:
    """The entity graph from Neo4j, read only. ``cooccurrence`` None follows ``communities.cooccurrence``
    (then ``communities`` is needed); ``files`` locates the default ontology."""
    onto = load_ontology(ontology, files)
    if cooccurrence is None and communities is None:
        raise TypeError("read_entity_graph needs cooccurrence or the communities settings")
    use_cooc = communities.cooccurrence if cooccurrence is None else cooccurrence
    ents = read_all(driver, db, cypher.community_entities())
    grouped = read_all(driver, db, cypher.community_relations(), types=relation_types(onto),
                       attributes=list(onto.relation_attributes))
    rels = [{"start": g["start"], "end": end, "type": rtype, "attributes": attrs, "symmetric": sym, "support": support}
            for g in grouped for end, rtype, attrs, sym, support in g["out"]]
    cooc = read_all(driver, db, cypher.community_cooccurrences()) if use_cooc else None
    if use_cooc and not cooc:
        logger.warning("co-occurrence asked but the graph has no CO_OCCURS edges: load the extraction with "
                       "GRAPHRAG_COOCCURRENCE=1 to write them")  # fmt: skip
    return build_entity_graph(ents, rels, cooc)


def sha(text: str) -> str:
    """The SHA-256 hex digest of ``text`` (member lists, prompt contents, report and embedding keys)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def relations_inside(eg: EntityGraph, groups: Sequence[Sequence[str]]) -> list[list[Rel]]:
    """The relations with both ends inside each of ``groups`` (member lists; a member may be in several
    groups, as in communities of several levels), in one pass over the relations."""
    where: dict[str, list[int]] = {}
    for i, members in enumerate(groups):
        for u in members:
            where.setdefault(u, []).append(i)
    inner: list[list[Rel]] = [[] for _ in groups]
    for r in eg.relations:
        starts = where.get(r.start)
        if not starts:
            continue
        ends = where.get(r.end, ())
        for i in starts:
            if i in ends:
                inner[i].append(r)
    return inner


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
    return text, sha(text)

def fact_line(subject: str, rel_type: str, obj: str, attributes: Mapping[str, str] | None = None) -> str:
    """``Ada Lovelace WORKS_WITH Charles Babbage (since: 1833)``: a fact with its relation attributes."""
    shown = "; ".join(f"{k}: {v}" for k, v in (attributes or {}).items() if v)
    return f"{subject} {rel_type} {obj}" + (f" ({shown})" if shown else "")


__all__ = [
    "BOOKKEEPING", "EntityGraph", "Rel", "build_entity_graph", "community_content", "cooccurrence_weight",
    "dedupe_relations", "fact_line", "read_entity_graph", "relation_types", "sha"
]  # fmt: skip
