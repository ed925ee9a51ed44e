"""Statistics of the loaded graph and its consistency checks against the ontology.

:func:`graph_stats` (``graphrag-got stats``): counts per label and relationship type, and the
checks that should all be 0 after a load under that ontology (missing symmetric directions,
relationships and entities the ontology refuses, orphan entities). Its queries are in
:mod:`graphrag_got.graph.load_cypher` (statistics section).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import neo4j

from graphrag_got.config import Neo4jSettings
from graphrag_got.errors import Neo4jError
from graphrag_got.extract.aggregate import identity_attributes
from graphrag_got.graph import cypher, load_cypher
from graphrag_got.graph.db import hang_hint
from graphrag_got.graph.load import one_line
from graphrag_got.graph.load_plan import graph_ontology
from graphrag_got.ontology.model import TERM_CLASS, Ontology


def graph_stats(driver: neo4j.Driver, db: Neo4jSettings, ontology: Ontology | str | Path) -> dict[str, Any]:
    """Counts of the loaded graph (``db.database``) and its consistency checks against ``ontology``.

    ``missing_symmetric``, ``violations`` (relationships the ontology refuses) and
    ``entity_violations`` (entities of no class of the ontology) should all be 0 after a load
    under that ontology. Rows a load under an earlier ontology left are counted there, never an
    error: the next load rewrites their documents (the ontology changed) and removes them.
    """
    onto = graph_ontology(ontology)
    rules = [
        {"type": r.name, "domain": sorted(r.domain), "range": sorted(r.range), "symmetric": r.symmetric}
        for r in onto.relations
    ]
    symmetric = [r.name for r in onto.relations if r.symmetric]
    identity = list(identity_attributes(onto))

    def read(query: str, **params: Any) -> list[neo4j.Record]:
        try:
            with driver.session(
                database=db.database, notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF
            ) as s:
                return s.execute_read(lambda tx: list(tx.run(query, **params)))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"reading graph statistics failed: {one_line(exc)}{hang_hint(exc)}") from exc

    nodes = {r["label"]: r["count"] for r in read(load_cypher.count_nodes_by_label())}
    rels = {r["type"]: r["count"] for r in read(load_cypher.count_relations_by_type())}
    missing = {r["type"]: r["count"]
               for r in read(load_cypher.missing_symmetric_directions(), types=symmetric, identity=identity)}
    violations = {f"{r['type']}:{r['reason']}": r["count"]
                  for r in read(load_cypher.ontology_violations(), rules=rules)}
    entity_violations = {f"{r['type'] or '?'}:unknown_class": r["count"]
                         for r in read(load_cypher.entity_violations(), classes=sorted({*onto.classes, TERM_CLASS}))}  # fmt: skip
    orphans = read(load_cypher.orphan_entities())[0]["count"]
    layers = read(load_cypher.document_layers(), types=[r.name for r in onto.relations])[0]
    return {
        "nodes_by_label": nodes,
        "relations_by_type": rels,
        "documents": nodes.get(cypher.DOCUMENT, 0),
        "chunks": nodes.get(cypher.CHUNK, 0),
        "entities": nodes.get(cypher.ENTITY, 0),
        "entity_relations": sum(v for k, v in rels.items() if onto.relation(k) is not None),
        "missing_symmetric": sum(missing.values()),
        "missing_symmetric_by_type": missing,
        "violations": sum(violations.values()),
        "violations_by_type": violations,
        "entity_violations": sum(entity_violations.values()),
        "entity_violations_by_class": entity_violations,
        "orphan_entities": orphans,
        # the layers of a notes vault: which documents name typed entities, untyped key terms, typed relations
        "untyped_terms": nodes.get(TERM_CLASS, 0),
        "documents_by_layer": {"typed entities": layers["typed_entities"], "untyped terms": layers["terms"],
                               "typed relations": layers["relations"]},
    }
