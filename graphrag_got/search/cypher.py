"""Cypher of search (read only): local, hybrid, global and DRIFT search and routing.

Used by :mod:`graphrag_got.search.local`, :mod:`~graphrag_got.search.global_`,
:mod:`~graphrag_got.search.drift` and :mod:`~graphrag_got.search.answer` (the entity catalog
also by the service). The rules of :mod:`graphrag_got.graph.cypher` apply.
"""

from __future__ import annotations

from typing import Sequence

from graphrag_got.graph.cypher import attribute_pairs
from graphrag_got.graph.load_cypher import RELATION_ATTRIBUTE_INDEX

# ---------------------------------------------------------------------------------------------
# Entity catalog (anchor matching)
# ---------------------------------------------------------------------------------------------


def search_entity_catalog() -> str:
    """Every entity's uid, key, name, type and aliases: the vocabulary the anchor matcher works on."""
    return ("MATCH (e:Entity) RETURN e.uid AS uid, e.key AS key, e.name AS name, e.type AS type, "
            "coalesce(e.aliases, []) AS aliases ORDER BY uid")


def search_catalog_fingerprint() -> str:
    """Cheap signs that the entity catalog changed: the entity count (from the count store) and
    every document's content and ontology hash."""
    return (
        "MATCH (e:Entity) WITH count(e) AS entities\n"
        "OPTIONAL MATCH (d:Document)\n"
        "WITH entities, d ORDER BY d.id\n"
        "RETURN entities, collect([d.id, d.hash, d.ontology_hash]) AS documents"
    )


# ---------------------------------------------------------------------------------------------
# Local search: facts around the anchors
# ---------------------------------------------------------------------------------------------

#: Upper bound of the hop count accepted by :func:`local_neighborhood` (Settings.local_hops has le=4).
MAX_HOPS = 4


def local_neighborhood(hops: int) -> str:
    """Relationships on paths of 1..``hops`` ontology relations from the anchors ``$anchors`` (uids).

    ``hops`` is spliced into the text as an integer literal (Cypher does not take a parameter as a
    variable-length bound), so it is checked here to be a plain int in 1..MAX_HOPS. Relationship
    types are restricted to ``$types`` (the ontology's), which keeps HAS_CHUNK, MENTIONS and
    IN_COMMUNITY out. At most ``$path_limit`` paths are expanded, so a hub cannot explode the
    result; each relationship is returned once with ``dist`` = its smallest position (1-based)
    on a path from an anchor, best first (nearest, then most supported), at most ``$limit`` rows.
    """
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise ValueError(f"hops must be an integer from 1 to {MAX_HOPS}, got {hops!r}")
    return (
        "MATCH (a:Entity) WHERE a.uid IN $anchors\n"
        f"MATCH p = (a)-[rels*1..{hops}]-(:Entity)\n"
        "WHERE all(r IN rels WHERE type(r) IN $types)\n"
        "WITH p LIMIT $path_limit\n"
        "UNWIND range(0, length(p) - 1) AS i\n"
        "WITH relationships(p)[i] AS r, i + 1 AS dist\n"
        "WITH r, min(dist) AS dist\n"
        "WITH r, dist, startNode(r) AS s, endNode(r) AS o\n"
        "RETURN s.uid AS start, s.name AS start_name, o.uid AS end, o.name AS end_name, type(r) AS type,\n"
        "       " + attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, dist\n"
        "ORDER BY dist ASC, size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def local_direct_facts() -> str:
    """The anchors' own relationships (types ``$types``), most supported first, at most ``$limit``:
    guarantees the 1-hop facts even when :func:`local_neighborhood` hit its path limit."""
    return (
        "MATCH (s:Entity)-[r]->(o:Entity)\n"
        "WHERE (s.uid IN $anchors OR o.uid IN $anchors) AND type(r) IN $types\n"
        "RETURN s.uid AS start, s.name AS start_name, o.uid AS end, o.name AS end_name, type(r) AS type,\n"
        "       " + attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 1 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def local_anchor_facts() -> str:
    """The same rows as :func:`local_direct_facts` (the anchors' own relationships of types
    ``$types``, most supported first, at most ``$limit``), found from the anchors by their uid index
    instead of by scanning every relationship and testing its ends: ~6x faster on a 16k-relation
    graph, and the gap grows with the graph."""
    return (
        "MATCH (a:Entity) WHERE a.uid IN $anchors\n"
        "MATCH (a)-[r]-(:Entity)\n"
        "WHERE type(r) IN $types\n"
        "WITH DISTINCT r\n"
        "WITH r, startNode(r) AS s, endNode(r) AS o\n"
        "RETURN s.uid AS start, s.name AS start_name, o.uid AS end, o.name AS end_name, type(r) AS type,\n"
        "       " + attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 1 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def lucene_phrases(names: Sequence[str]) -> str:
    """A Lucene query matching any of ``names`` as a phrase (quotes and backslashes escaped), for the
    full-text procedures; the result is passed as a parameter, never spliced into Cypher."""
    quoted = []
    for name in names:
        text = " ".join(str(name).split())
        if text:
            quoted.append('"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"')
    return " OR ".join(quoted)


def local_attribute_facts_indexed() -> str:
    """As :func:`local_attribute_facts`, through the full-text index (``$terms`` from
    :func:`lucene_phrases`): an index lookup instead of a scan of every relationship."""
    return (
        f"CALL db.index.fulltext.queryRelationships('{RELATION_ATTRIBUTE_INDEX}', $terms) YIELD relationship AS r\n"
        "WITH r, startNode(r) AS s, endNode(r) AS o WHERE type(r) IN $types AND s:Entity AND o:Entity\n"
        "RETURN s.uid AS start, s.name AS start_name, o.uid AS end, o.name AS end_name, type(r) AS type,\n"
        "       " + attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 2 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def local_attribute_facts() -> str:
    """Relationships (types ``$types``) one of whose relation attributes ``$attributes`` names one
    of ``$names`` (lower-case anchor names): a fact placed "at" an event anchor is found through the
    event's name; most supported first."""
    return (
        "MATCH (s:Entity)-[r]->(o:Entity)\n"
        "WHERE type(r) IN $types\n"
        "  AND any(k IN $attributes WHERE any(n IN $names WHERE toLower(toString(coalesce(r[k], ''))) CONTAINS n))\n"
        "RETURN s.uid AS start, s.name AS start_name, o.uid AS end, o.name AS end_name, type(r) AS type,\n"
        "       " + attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 2 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def chunk_texts() -> str:
    """Texts of the chunks ``$ids``."""
    return "MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id AS id, c.text AS text"


# ---------------------------------------------------------------------------------------------
# Hybrid local search: vector reads and chunk expansion
# ---------------------------------------------------------------------------------------------


def vector_chunks() -> str:
    """The ``$k`` chunks nearest to ``$vector`` in the index ``$index``, best first."""
    return (
        "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score\n"
        "RETURN node.id AS id, node.document_id AS document_id, node.heading AS heading, node.location AS location,\n"
        "       node.text AS text, score\n"
        "ORDER BY score DESC, id"
    )


def vector_entities() -> str:
    """The ``$k`` entities nearest to ``$vector`` in the index ``$index``, best first."""
    return (
        "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score\n"
        "RETURN node.uid AS uid, node.name AS name, node.type AS type, score\n"
        "ORDER BY score DESC, uid"
    )


def chunk_expansion() -> str:
    """Chunks sharing entities with the chunks ``$chunk_ids``, ranked by shared-entity weight.

    For a candidate chunk c: sum over the entities e it shares with the given chunks of
    max over those chunks s of ``w(s, e) * w(c, e)``, where ``w`` is ``MENTIONS.weight``
    (``1.0`` when a mention has none). Entities mentioned by more than ``$max_mentions`` chunks
    are skipped (a hub says little about a chunk and would expand to everything). At most
    ``$limit`` chunks, the given ones excluded; ``shared`` names up to 5 shared entities.
    """
    return (
        "MATCH (s:Chunk)-[m1:MENTIONS]->(e:Entity)\n"
        "WHERE s.id IN $chunk_ids AND COUNT { (:Chunk)-[:MENTIONS]->(e) } <= $max_mentions\n"
        "MATCH (c:Chunk)-[m2:MENTIONS]->(e)\n"
        "WHERE NOT c.id IN $chunk_ids\n"
        "WITH c, e, max(coalesce(m1.weight, 1.0) * coalesce(m2.weight, 1.0)) AS w\n"
        "WITH c, sum(w) AS score, collect(e.name) AS names\n"
        "RETURN c.id AS id, score, names[..5] AS shared\n"
        "ORDER BY score DESC, id LIMIT $limit"
    )


def chunk_sources() -> str:
    """Id, document, heading, location (``p. 12``, ``A > B``) and text of the chunks ``$ids``."""
    return ("MATCH (c:Chunk) WHERE c.id IN $ids\n"
            "RETURN c.id AS id, c.document_id AS document_id, c.heading AS heading, c.location AS location,\n"
            "       c.text AS text")


# ---------------------------------------------------------------------------------------------
# Global and DRIFT search, routing (community reports)
# ---------------------------------------------------------------------------------------------


def community_summaries() -> str:
    """Communities with a report, with up to ``$members`` member names, their level, parent, findings
    (JSON string), rating and embedding (null when not embedded) (read)."""
    return (
        "MATCH (c:Community) WHERE c.summary IS NOT NULL\n"
        "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)\n"
        "WITH c, e ORDER BY e.name\n"
        "WITH c, collect(e.name) AS names\n"
        "RETURN c.id AS id, coalesce(c.level, 0) AS level, c.parent AS parent, c.title AS title,\n"
        "       c.summary AS summary, c.size AS size, c.findings AS findings, c.rating AS rating,\n"
        "       c.rating_explanation AS rating_explanation, c.embedding AS embedding,\n"
        "       names[0..$members] AS members\n"
        "ORDER BY id"
    )


def community_facts() -> str:
    """The relationships with evidence sentences whose two ends are members of community ``$community``
    (each row: its ends' names, type, evidence list, chunk ids), at most ``$limit``, most supported first
    (read; global search's extractive answer reads their sentences)."""
    return (
        "MATCH (s:Entity)-[:IN_COMMUNITY]->(c:Community {id: $community})<-[:IN_COMMUNITY]-(o:Entity)\n"
        "MATCH (s)-[r]->(o)\n"
        "WHERE r.evidence IS NOT NULL AND size(r.evidence) > 0\n"
        "RETURN s.name AS start_name, o.name AS end_name, type(r) AS type, r.evidence AS evidence,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids\n"
        "ORDER BY size(chunk_ids) DESC, start_name, type, end_name\n"
        "LIMIT $limit"
    )


def community_levels() -> str:
    """Every community's id, level, parent, size and whether it has a report (read): the hierarchy."""
    return (
        "MATCH (c:Community)\n"
        "RETURN c.id AS id, coalesce(c.level, 0) AS level, c.parent AS parent, c.size AS size,\n"
        "       c.summary IS NOT NULL AS reported\n"
        "ORDER BY id"
    )


def drift_community_reports() -> str:
    """Every community with a summary: its id, all its properties (title, summary, findings,
    rating, embedding, whatever the report holds) and up to ``$members`` member names."""
    return (
        "MATCH (c:Community) WHERE c.summary IS NOT NULL\n"
        "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)\n"
        "WITH c, e ORDER BY e.name\n"
        "WITH c, collect(e.name) AS names\n"
        "RETURN c.id AS id, properties(c) AS props, names[0..$members] AS members\n"
        "ORDER BY id"
    )


def community_count() -> str:
    """How many communities exist (with or without a summary)."""
    return "MATCH (c:Community) RETURN count(c) AS n"


def community_report_count() -> str:
    """How many communities have a summary (routing checks global/drift can answer at all)."""
    return "MATCH (c:Community) WHERE c.summary IS NOT NULL RETURN count(c) AS n"
