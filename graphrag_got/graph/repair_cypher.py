"""Cypher of ``load --repair`` (:mod:`graphrag_got.graph.repair`): deleting rows by element id.

The element ids come from the graph itself (the view queries of :mod:`graphrag_got.graph.load_cypher`
return them); they travel as a parameter list, batched like every write.
"""

from __future__ import annotations


def delete_relationships_by_element_id() -> str:
    """Delete the relationships whose element ids are ``$ids`` (a stray relation, mention or link)."""
    return "UNWIND $ids AS id MATCH ()-[r]->() WHERE elementId(r) = id DELETE r"


def delete_nodes_by_element_id() -> str:
    """Delete the nodes whose element ids are ``$ids`` and their relationships (a stray entity or chunk)."""
    return "UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id DETACH DELETE n"
