"""Cypher of vector indexes and embeddings (:mod:`graphrag_got.graph.vectors`).

Vector indexes (Neo4j 5.26 Community) and the embedding reads and writes. Index names, labels and
property names pass through :func:`~graphrag_got.graph.cypher.escape_name`; the dimension is
spliced as a validated int (index OPTIONS do not take parameters); every value (vectors, ids, k)
is a parameter. The vector reads of hybrid local search live in :mod:`graphrag_got.search.cypher`.
"""

from __future__ import annotations

from graphrag_got.graph.cypher import escape_name

# ---------------------------------------------------------------------------------------------
# Vector indexes
# ---------------------------------------------------------------------------------------------

CHUNK_VECTOR_INDEX = "chunk_embedding"
ENTITY_VECTOR_INDEX = "entity_embedding"
EMBEDDING = "embedding"
EMBEDDING_HASH = "embedding_hash"
MAX_VECTOR_DIMENSIONS = 4096  # Neo4j 5.26's upper bound for vector.dimensions


def _vector_dimensions(dimensions: int) -> int:
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) \
            or not 1 <= dimensions <= MAX_VECTOR_DIMENSIONS:
        raise ValueError(f"vector dimensions must be an int from 1 to {MAX_VECTOR_DIMENSIONS}, got {dimensions!r}")
    return dimensions


def vector_indexes() -> str:
    """Every vector index: name, state, label, property and its configured dimension."""
    return (
        "SHOW INDEXES YIELD name, type, state, labelsOrTypes, properties, options\n"
        "WHERE type = 'VECTOR'\n"
        "RETURN name, state, labelsOrTypes AS labels, properties,\n"
        "       options.indexConfig['vector.dimensions'] AS dimensions,\n"
        "       options.indexConfig['vector.similarity_function'] AS similarity"
    )


def create_vector_index(name: str, label: str, dimensions: int, prop: str = EMBEDDING) -> str:
    """``CREATE VECTOR INDEX name IF NOT EXISTS`` on ``(:label).prop``, cosine, ``dimensions`` wide."""
    dims = _vector_dimensions(dimensions)
    return (
        f"CREATE VECTOR INDEX {escape_name(name)} IF NOT EXISTS\n"
        f"FOR (n:{escape_name(label)}) ON (n.{escape_name(prop)})\n"
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {dims}, `vector.similarity_function`: 'cosine'}}}}"
    )


def drop_index(name: str) -> str:
    """Drop the index ``name`` (a vector index whose dimension no longer matches the model)."""
    return f"DROP INDEX {escape_name(name)} IF EXISTS"


# ---------------------------------------------------------------------------------------------
# Embedding reads and writes
# ---------------------------------------------------------------------------------------------


def chunks_for_embedding() -> str:
    """One page of chunks after ``$after`` (id order, ``$limit`` rows): id, heading, text, stored hash."""
    return (
        "MATCH (c:Chunk) WHERE c.id > $after\n"
        "RETURN c.id AS id, c.heading AS heading, c.text AS text, c.embedding_hash AS embedding_hash\n"
        "ORDER BY c.id LIMIT $limit"
    )


def entities_for_embedding() -> str:
    """One page of entities after ``$after`` (uid order, ``$limit`` rows): name, class, aliases, the
    properties not in ``$skip`` (as ``[key, value]`` pairs) and the stored hash."""
    return (
        "MATCH (e:Entity) WHERE e.uid > $after\n"
        "RETURN e.uid AS id, e.name AS name, e.type AS type, coalesce(e.aliases, []) AS aliases,\n"
        "       [k IN keys(e) WHERE NOT k IN $skip | [k, e[k]]] AS properties,\n"
        "       e.embedding_hash AS embedding_hash\n"
        "ORDER BY e.uid LIMIT $limit"
    )


def stored_embedding_hashes(label: str, key: str) -> str:
    """``{id, hash}`` of the ``label`` nodes whose ``key`` is in ``$ids``."""
    return (f"MATCH (n:{escape_name(label)}) WHERE n.{escape_name(key)} IN $ids\n"
            f"RETURN n.{escape_name(key)} AS id, n.{EMBEDDING_HASH} AS hash")


def set_embeddings(label: str, key: str) -> str:
    """Rows ``{id, embedding, hash}``: store the vector (as a float32 vector property) and its text hash
    on the ``label`` node whose ``key`` is ``row.id``. Returns ``written``."""
    return (
        "UNWIND $rows AS row\n"
        f"MATCH (n:{escape_name(label)} {{{escape_name(key)}: row.id}})\n"
        f"CALL db.create.setNodeVectorProperty(n, '{EMBEDDING}', row.embedding)\n"
        f"SET n.{EMBEDDING_HASH} = row.hash\n"
        "RETURN count(n) AS written"
    )
