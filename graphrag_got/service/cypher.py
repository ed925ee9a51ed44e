"""Cypher of the service (``graphrag-got serve``, ``graphrag-got mcp``; read only).

Used by :mod:`graphrag_got.service.graph_reads`. The rules of :mod:`graphrag_got.graph.cypher` apply.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# Entities
# ---------------------------------------------------------------------------------------------


def service_entities_by_key() -> str:
    """Entities whose normalized ``key`` is one of ``$keys`` (index seek), of the class ``$type``
    unless it is null, at most ``$limit``."""
    return (
        "MATCH (e:Entity) WHERE e.key IN $keys AND ($type IS NULL OR e.type = $type)\n"
        "RETURN e.uid AS uid, e.key AS key, e.name AS name, e.type AS type,\n"
        "       coalesce(e.aliases, []) AS aliases, properties(e) AS properties\n"
        "ORDER BY type, uid LIMIT $limit"
    )


def service_entity_aliases() -> str:
    """uid and aliases of every entity that has aliases (matched in Python after normalization)."""
    return "MATCH (e:Entity) WHERE size(coalesce(e.aliases, [])) > 0 RETURN e.uid AS uid, e.aliases AS aliases"


def service_entities_by_uid() -> str:
    """The entities ``$uids``, of the class ``$type`` unless it is null."""
    return (
        "MATCH (e:Entity) WHERE e.uid IN $uids AND ($type IS NULL OR e.type = $type)\n"
        "RETURN e.uid AS uid, e.key AS key, e.name AS name, e.type AS type,\n"
        "       coalesce(e.aliases, []) AS aliases, properties(e) AS properties\n"
        "ORDER BY type, uid"
    )


def service_neighbourhood() -> str:
    """Relationships of the ontology types ``$types`` touching the entities ``$uids``, most supported
    first, at most ``$limit``; with every property and the documents of the evidence chunks."""
    return (
        "MATCH (e:Entity) WHERE e.uid IN $uids\n"
        "MATCH (e)-[r]-(:Entity) WHERE type(r) IN $types\n"
        "WITH DISTINCT r\n"
        "WITH r, startNode(r) AS s, endNode(r) AS o\n"
        "ORDER BY size(coalesce(r.chunk_ids, [])) DESC, s.uid, type(r), o.uid\n"
        "LIMIT $limit\n"
        "RETURN s.uid AS start, s.name AS start_name, s.type AS start_type, type(r) AS type,\n"
        "       o.uid AS end, o.name AS end_name, o.type AS end_type, properties(r) AS properties,\n"
        "       COLLECT { MATCH (c:Chunk) WHERE c.id IN coalesce(r.evidence_chunk_ids, [])\n"
        "                 RETURN {id: c.id, document_id: c.document_id} } AS evidence_chunks"
    )


# ---------------------------------------------------------------------------------------------
# Communities and health
# ---------------------------------------------------------------------------------------------


def service_communities() -> str:
    """Communities of level ``$level`` (every level when null), by level then id, ``$offset`` /
    ``$limit`` paged, with up to ``$members`` member names."""
    return (
        "MATCH (c:Community) WHERE $level IS NULL OR c.level = $level\n"
        "WITH c ORDER BY c.level, c.id SKIP $offset LIMIT $limit\n"
        "OPTIONAL MATCH (e:Entity)-[:IN_COMMUNITY]->(c)\n"
        "WITH c, e ORDER BY e.name\n"
        "WITH c, collect(e.name) AS names\n"
        "RETURN c.id AS id, c.level AS level, c.size AS size, c.title AS title, c.summary AS summary,\n"
        "       names[0..$members] AS members\n"
        "ORDER BY level, id"
    )


def service_community_counts() -> str:
    """How many communities there are at level ``$level`` (all when null), and every level present."""
    return (
        "MATCH (c:Community)\n"
        "RETURN count(CASE WHEN $level IS NULL OR c.level = $level THEN 1 END) AS total,\n"
        "       [l IN collect(DISTINCT c.level) WHERE l IS NOT NULL] AS levels"
    )


def service_health() -> str:
    """Entity and community counts (both from the count store: cheap on any graph)."""
    return (
        "CALL { MATCH (e:Entity) RETURN count(e) AS entities }\n"
        "CALL { MATCH (c:Community) RETURN count(c) AS communities }\n"
        "RETURN entities, communities"
    )
