"""The constraints and indexes the loader relies on, set up so that concurrent loads all succeed.

Every statement is idempotent and goes through :func:`graphrag_got.graph.db.run_schema`, which takes
"another process made the same rule a moment ago" (``EquivalentSchemaRuleAlreadyExists``) as success:
two loads starting at once on a fresh database both set the schema up without an error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

import neo4j

from graphrag_got.errors import Neo4jError
from graphrag_got.graph import cypher, load_cypher
from graphrag_got.graph import notes as notes_graph
from graphrag_got.graph.db import run_schema
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)


def ensure_schema(session: neo4j.Session, class_labels: Iterable[str]) -> None:
    """Create the constraints and indexes (idempotent, safe under concurrency) and wait for them to be online."""
    try:
        run_schema(session, [*load_cypher.create_constraints(list(class_labels)), *notes_graph.schema_statements()])
        session.run(cypher.await_indexes()).consume()
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(
            f"creating the constraints and indexes failed: {exc}. If existing data breaks a uniqueness "
            "constraint (duplicate Entity.uid, Document.id, Chunk.id, Folder.path, Tag.name or MissingNote.name), "
            "clear the database and load again."
        ) from exc


def ensure_attribute_index(session: neo4j.Session, onto: Ontology) -> None:
    """The full-text index over the ontology's relation attributes (local search's "fact placed at an
    anchor"): created when missing, recreated when the ontology's relation types or attributes changed,
    dropped when the ontology has no attributes."""
    types = sorted(r.name for r in onto.relations)
    attributes = sorted(onto.relation_attributes)
    try:
        rows = session.execute_read(lambda tx: list(tx.run(load_cypher.relation_attribute_index_definition(),
                                                            name=load_cypher.RELATION_ATTRIBUTE_INDEX)))
        if rows and (sorted(rows[0]["types"]) != types or sorted(rows[0]["properties"]) != attributes
                     or not attributes):
            run_schema(session, [load_cypher.drop_relation_attribute_index()])
            logger.info("relation attribute index dropped: the ontology's relations or attributes changed")
        if attributes:
            run_schema(session, [load_cypher.relation_attribute_index(types, attributes)])
            session.run(cypher.await_indexes()).consume()
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"creating the relation attribute index failed: {exc}") from exc
