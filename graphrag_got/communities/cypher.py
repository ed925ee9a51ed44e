"""Cypher of community detection and reports (the modules of :mod:`graphrag_got.communities`).

Reads of the entity graph to cluster, the ``(:Community)`` hierarchy writes, reports and their
embeddings. The rules of :mod:`graphrag_got.graph.cypher` apply; the reads of communities by
search live in :mod:`graphrag_got.search.cypher`.
"""

from __future__ import annotations

from graphrag_got.graph.cypher import attribute_pairs
from graphrag_got.graph.vector_cypher import set_embeddings

# ---------------------------------------------------------------------------------------------
# Labels and index names
# ---------------------------------------------------------------------------------------------

COMMUNITY = "Community"
IN_COMMUNITY = "IN_COMMUNITY"
COMMUNITY_VECTOR_INDEX = "community_embedding"


# ---------------------------------------------------------------------------------------------
# The graph to cluster (read only)
# ---------------------------------------------------------------------------------------------


def community_entities() -> str:
    """Every entity (read): uid, name, type, properties. Isolated ones included (they become singletons)."""
    return (
        "MATCH (e:Entity)\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, properties(e) AS properties ORDER BY uid"
    )


def community_relations() -> str:
    """Entity-to-entity relationships of the ontology types ``$types`` (read), with their support: one
    record per start entity holding ``[end, type, attributes, symmetric, support]`` per relationship.

    Grouped because the driver decodes a record far slower than a list item (70,000 relationships of a
    6,000-note vault: 1.5 s as records, 0.5 s grouped). A symmetric relation is stored in both
    directions; the caller counts it once.
    """
    return (
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE type(r) IN $types\n"
        "RETURN a.uid AS start, collect([b.uid, type(r), " + attribute_pairs("r", None) + ",\n"
        "       coalesce(r.symmetric, false), size(coalesce(r.chunk_ids, []))]) AS out"
    )


def community_cooccurrences() -> str:
    """Every ``CO_OCCURS`` edge between entities (read): ends, weight and chunk count.

    Stored once per pair (start uid < end uid); the caller treats it as undirected.
    """
    return (
        "MATCH (a:Entity)-[r:CO_OCCURS]->(b:Entity)\n"
        "RETURN a.uid AS start, b.uid AS end, r.weight AS weight, r.count AS count"
    )


# ---------------------------------------------------------------------------------------------
# Communities and their members
# ---------------------------------------------------------------------------------------------


def community_count() -> str:
    """How many communities the graph holds."""
    return "MATCH (c:Community) RETURN count(c) AS count"


def graph_size() -> str:
    """Entities and relationships of the graph (a part of what detection depends on)."""
    return "RETURN COUNT { MATCH (e:Entity) } AS entities, COUNT { MATCH ()-[r]->() } AS relationships"


def community_constraint() -> str:
    return "CREATE CONSTRAINT community_id IF NOT EXISTS FOR (c:Community) REQUIRE c.id IS UNIQUE"


def existing_community_summaries() -> str:
    """Reports already stored, by the content hash they were written for (read)."""
    return (
        "MATCH (c:Community) WHERE c.summary IS NOT NULL AND c.content_hash IS NOT NULL\n"
        "RETURN c.content_hash AS content_hash, c.summary_key AS summary_key, c.title AS title, c.summary AS summary,\n"
        "       c.findings AS findings, c.rating AS rating, c.rating_explanation AS rating_explanation,\n"
        "       c.left_out AS left_out, c.unbacked_kept AS unbacked_kept, c.report_check AS report_check,\n"
        "       c.embedding AS embedding, c.embedding_hash AS embedding_hash"
    )


def delete_communities() -> str:
    """Remove every ``:Community`` node with its ``IN_COMMUNITY`` relationships."""
    return "MATCH (c:Community) DETACH DELETE c"


def clear_entity_communities() -> str:
    return (
        "MATCH (e:Entity) WHERE e.communityId IS NOT NULL OR e.communityLevel IS NOT NULL\n"
        "REMOVE e.communityId, e.communityLevel"
    )


def create_communities() -> str:
    """Rows ``{id, level, parent, algorithm, resolution, seed, size, members_hash, content_hash, inner_hash,
    title, summary, findings, rating, rating_explanation, left_out, unbacked_kept, report_check, summary_key}``
    (``findings``, ``left_out`` and ``unbacked_kept`` JSON strings)."""
    return (
        "UNWIND $rows AS row\n"
        "CREATE (c:Community {id: row.id, level: row.level, parent: row.parent, algorithm: row.algorithm,\n"
        "  resolution: row.resolution, seed: row.seed, size: row.size, members_hash: row.members_hash,\n"
        "  content_hash: row.content_hash, inner_hash: row.inner_hash,\n"
        "  title: row.title, summary: row.summary, findings: row.findings,\n"
        "  rating: row.rating, rating_explanation: row.rating_explanation, left_out: row.left_out,\n"
        "  unbacked_kept: row.unbacked_kept, report_check: row.report_check, summary_key: row.summary_key})"
    )


def link_community_members() -> str:
    """Rows ``{uid, id, level}``: ``(:Entity)-[:IN_COMMUNITY {communityLevel}]->(:Community)``; a level-0
    membership also sets ``Entity.communityId`` / ``communityLevel`` (level 0 covers every entity)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (e:Entity {uid: row.uid})\n"
        "MATCH (c:Community {id: row.id})\n"
        "FOREACH (_ IN CASE WHEN row.level = 0 THEN [1] ELSE [] END |\n"
        "  SET e.communityId = row.id, e.communityLevel = row.level)\n"
        "MERGE (e)-[m:IN_COMMUNITY]->(c)\n"
        "SET m.communityLevel = row.level"
    )


def previous_communities() -> str:
    """The communities of the last detection (read): how they were detected, their place in the
    hierarchy, their inner hash and their member uids (what an incremental detection
    compares)."""
    return (
        "MATCH (c:Community)\n"
        "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)\n"
        "WITH c, e ORDER BY e.uid\n"
        "RETURN c.id AS id, c.level AS level, c.parent AS parent, c.algorithm AS algorithm,\n"
        "       c.resolution AS resolution, c.seed AS seed,\n"
        "       c.inner_hash AS inner_hash, collect(e.uid) AS members\n"
        "ORDER BY id"
    )


def communities_with_members() -> str:
    """Every community with its members (uid, name, type, properties) (read)."""
    return (
        "MATCH (c:Community)\n"
        "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)\n"
        "WITH c, e ORDER BY e.uid\n"
        "RETURN c.id AS id, c.level AS level, c.parent AS parent, c.algorithm AS algorithm, c.size AS size,\n"
        "       c.members_hash AS members_hash, c.content_hash AS content_hash, c.title AS title,\n"
        "       c.summary AS summary, c.findings AS findings, c.rating AS rating,\n"
        "       c.rating_explanation AS rating_explanation, c.summary_key AS summary_key,\n"
        "       c.left_out AS left_out, c.unbacked_kept AS unbacked_kept, c.report_check AS report_check,\n"
        "       c.embedding_hash AS embedding_hash, c.resolution AS resolution,\n"
        "       collect({uid: e.uid, name: e.name, type: e.type, properties: properties(e)}) AS members\n"
        "ORDER BY id"
    )


# ---------------------------------------------------------------------------------------------
# Reports and their embeddings
# ---------------------------------------------------------------------------------------------


def set_community_summaries() -> str:
    """Rows ``{id, title, summary, findings, rating, rating_explanation, left_out, unbacked_kept, report_check,
    summary_key}`` (a report and what its check left out)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (c:Community {id: row.id})\n"
        "SET c.title = row.title, c.summary = row.summary, c.findings = row.findings, c.rating = row.rating,\n"
        "    c.rating_explanation = row.rating_explanation, c.left_out = row.left_out,\n"
        "    c.unbacked_kept = row.unbacked_kept, c.report_check = row.report_check, c.summary_key = row.summary_key"
    )


def community_chunk_excerpts() -> str:
    """Rows ``{id, uids}``: per community, the ``$limit`` chunks mentioning most of its members (read),
    as ``{id, text, mentioned}`` maps, most members first, then chunk id."""
    return (
        "UNWIND $rows AS row\n"
        "CALL (row) {\n"
        "  MATCH (ch:Chunk)-[:MENTIONS]->(e:Entity) WHERE e.uid IN row.uids\n"
        "  WITH ch, count(DISTINCT e) AS mentioned ORDER BY mentioned DESC, ch.id LIMIT $limit\n"
        "  RETURN collect({id: ch.id, text: ch.text, mentioned: mentioned}) AS chunks\n"
        "}\n"
        "RETURN row.id AS id, chunks"
    )


def community_reports_to_embed() -> str:
    """Communities with a report (read): id, the report fields and the stored embedding hash."""
    return (
        "MATCH (c:Community) WHERE c.summary IS NOT NULL\n"
        "RETURN c.id AS id, c.title AS title, c.summary AS summary, c.findings AS findings,\n"
        "       c.embedding_hash AS embedding_hash, c.embedding IS NOT NULL AS embedded\n"
        "ORDER BY id"
    )


def set_community_embeddings() -> str:
    """Rows ``{id, embedding, hash}``: a report's vector (float32 vector property) and its text hash."""
    return set_embeddings(COMMUNITY, "id")
