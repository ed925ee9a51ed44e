"""Cypher of the graph view (:func:`graphrag_got.report.viz.graph_from_neo4j`; read only).

The rules of :mod:`graphrag_got.graph.cypher` apply.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# Graph view
# ---------------------------------------------------------------------------------------------


def viz_entities() -> str:
    """The ``$limit`` best connected entities (most distinct entity neighbours; a symmetric relation,
    stored both ways, counts once), of community ``$community`` (a string) unless it is null.

    ``communityId`` is compared as a string so the CLI's ``--community 3`` matches ints and strings.
    """
    return (
        "MATCH (e:Entity) "
        "WHERE $community IS NULL OR toString(e.communityId) = $community "
        "WITH e, COUNT { MATCH (e)-[:!CO_OCCURS]-(o:Entity) RETURN DISTINCT o } AS degree "
        "ORDER BY degree DESC, e.uid "
        "LIMIT $limit "
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, e.communityId AS communityId, "
        "properties(e) AS properties"
    )


def viz_relations() -> str:
    """Relations among the entities ``$uids``; a symmetric relation (stored both ways) is returned once."""
    return (
        "MATCH (a:Entity)-[r:!CO_OCCURS]->(b:Entity) "
        "WHERE a.uid IN $uids AND b.uid IN $uids "
        "AND (coalesce(r.symmetric, false) = false OR a.uid <= b.uid) "
        "RETURN a.uid AS source, b.uid AS target, type(r) AS type, properties(r) AS properties, "
        "coalesce(r.symmetric, false) AS symmetric "
        "ORDER BY source, type, target "
        "LIMIT $limit"
    )


def viz_community_titles() -> str:
    """Titles of the communities ``$ids`` (ids as strings) for the legend."""
    return (
        "MATCH (c:Community) WHERE toString(c.id) IN $ids "
        "RETURN toString(c.id) AS id, c.title AS title"
    )
