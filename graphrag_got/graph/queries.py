"""Every Cypher string of the project, built by small functions.

Rules (see docs/contributing.md):

* Labels and relationship types are the only things spliced into the text. They come from the
  validated ontology (or are fixed names of the graph model) and always pass through
  :func:`escape_name`, which accepts plain identifiers only and backtick-quotes them.
* Every other value (names, keys, properties, ids, texts) is a query parameter.
* Every write takes its data as ``UNWIND $rows AS row`` so callers send batches, never one
  statement per row.

Sections: identifiers, schema, documents and chunks, entities and relations, incremental
updates and pruning, statistics, maintenance. Later modules (communities, search) add their
own sections at the end.
"""

from __future__ import annotations

import re
from typing import Sequence

# ---------------------------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Labels and relationship types of the graph model itself (not from the ontology).
ENTITY = "Entity"
DOCUMENT = "Document"
CHUNK = "Chunk"
HAS_CHUNK = "HAS_CHUNK"
MENTIONS = "MENTIONS"


def escape_name(name: str) -> str:
    """Return ``name`` backtick-quoted for use as a label or relationship type.

    Only plain identifiers (``^[A-Za-z_][A-Za-z0-9_]*$``) are accepted, so a label can never
    carry Cypher syntax; anything else raises ``ValueError``. The backtick doubling is a second
    line of defence and keeps the function correct if the rule above is ever relaxed.
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid label or relationship type: "
            "use letters, digits and '_' only, not starting with a digit"
        )
    return "`" + name.replace("`", "``") + "`"


# ---------------------------------------------------------------------------------------------
# Schema: constraints and indexes (all idempotent)
# ---------------------------------------------------------------------------------------------


def create_constraints(class_labels: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Statements creating the constraints/indexes the loader relies on (``IF NOT EXISTS``).

    ``Entity.uid`` unique is what makes ``MERGE``/``MATCH`` by uid an index seek. One ``key``
    index per class label lets queries like ``MATCH (p:Personaje {key: $k})`` seek too.
    """
    statements = [
        "CREATE CONSTRAINT entity_uid IF NOT EXISTS FOR (e:Entity) REQUIRE e.uid IS UNIQUE",
        "CREATE INDEX entity_key IF NOT EXISTS FOR (e:Entity) ON (e.key)",
        "CREATE CONSTRAINT document_id IF NOT EXISTS FOR (d:Document) REQUIRE d.id IS UNIQUE",
        "CREATE CONSTRAINT chunk_id IF NOT EXISTS FOR (c:Chunk) REQUIRE c.id IS UNIQUE",
        "CREATE INDEX chunk_document_id IF NOT EXISTS FOR (c:Chunk) ON (c.document_id)",
    ]
    for label in class_labels:
        index_name = escape_name(f"class_key_{label}")
        statements.append(f"CREATE INDEX {index_name} IF NOT EXISTS FOR (n:{escape_name(label)}) ON (n.key)")
    return statements


def await_indexes() -> str:
    """Wait until freshly created indexes are online (procedure call, no data)."""
    return "CALL db.awaitIndexes(300)"


# ---------------------------------------------------------------------------------------------
# Documents and chunks
# ---------------------------------------------------------------------------------------------


def existing_documents() -> str:
    """Every loaded document with its content hash and the hash of the ontology it was loaded
    under (both null while a load of it is unfinished, or from a load older than the field)."""
    return "MATCH (d:Document) RETURN d.id AS id, d.hash AS hash, d.ontology_hash AS ontology_hash"


def merge_documents() -> str:
    """Rows ``{id, path, metadata}``. The hash is removed here and set by
    :func:`finalize_documents` at the end of the same transaction (a document is written by one
    transaction), so a document without a hash can only come from a load older than that rule."""
    return (
        "UNWIND $rows AS row\n"
        "MERGE (d:Document {id: row.id})\n"
        "SET d.path = row.path, d.metadata = row.metadata\n"
        "REMOVE d.hash"
    )


def finalize_documents() -> str:
    """Rows ``{id, hash, ontology_hash}``: mark documents as completely loaded, under that ontology."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "SET d.hash = row.hash, d.ontology_hash = row.ontology_hash"
    )


def merge_chunks() -> str:
    """Rows ``{id, document_id, index, start, end, hash, text, heading}``."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.document_id})\n"
        "MERGE (c:Chunk {id: row.id})\n"
        "SET c.document_id = row.document_id, c.index = row.index, c.start = row.start,\n"
        "    c.end = row.end, c.hash = row.hash, c.text = row.text, c.heading = row.heading\n"
        "MERGE (d)-[:HAS_CHUNK]->(c)"
    )


def merge_mentions() -> str:
    """Rows ``{chunk_id, uid, weight}``: ``(:Chunk)-[:MENTIONS {weight}]->(:Entity)``, ``weight`` the
    model's confidence (0-1) in that mention (1.0 when the row has none)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (c:Chunk {id: row.chunk_id})\n"
        "MATCH (e:Entity {uid: row.uid})\n"
        "MERGE (c)-[m:MENTIONS]->(e)\n"
        "SET m.weight = coalesce(row.weight, 1.0)"
    )


# ---------------------------------------------------------------------------------------------
# Entities and relations
# ---------------------------------------------------------------------------------------------


def _union(target: str, field: str) -> str:
    """Cypher expression: ``target.field`` plus the row's items it does not hold yet."""
    return f"coalesce({target}.{field}, []) + [x IN row.{field} WHERE NOT x IN coalesce({target}.{field}, [])]"


def merge_entities(label: str) -> str:
    """Rows ``{uid, key, name, type, properties, chunk_ids, doc_ids, aliases}`` of one ontology class.

    ``properties`` holds no nulls (the caller drops them) and is merged with ``+=``, so values
    from earlier loads stay. The display name is the first one seen. ``key`` and ``type`` are
    set after ``+=``; the loader also drops model field names from ``properties``. ``aliases``
    (other names entity resolution merged into the entity) is unioned like the provenance lists.
    """
    lab = escape_name(label)
    return (
        "UNWIND $rows AS row\n"
        "MERGE (e:Entity {uid: row.uid})\n"
        "ON CREATE SET e.name = row.name, e.chunk_ids = row.chunk_ids, e.doc_ids = row.doc_ids,\n"
        "    e.aliases = coalesce(row.aliases, [])\n"
        "ON MATCH SET e.name = coalesce(e.name, row.name),\n"
        f"    e.chunk_ids = {_union('e', 'chunk_ids')},\n"
        f"    e.doc_ids = {_union('e', 'doc_ids')},\n"
        f"    e.aliases = {_union('e', 'aliases')}\n"
        f"SET e:{lab}, e += row.properties, e.key = row.key, e.type = row.type"
    )


def merge_relations(rel_type: str, identity: Sequence[str] = ()) -> str:
    """Rows ``{start, end, identity, attributes, symmetric, chunk_ids, doc_ids, evidence}`` of one type.

    Both ends are matched by ``Entity.uid`` (unique-constraint seek). The relationship is merged on
    (start, type, end) plus the ontology's identity attributes ``identity`` (relation attribute
    names, validated identifiers), whose values in ``row.identity`` are never null (``""`` when
    absent); the other attributes in ``row.attributes`` (no nulls) are set with ``+=``.
    ``evidence`` (the sentences stating the fact) and ``evidence_chunk_ids`` (the chunk of each,
    aligned) gain the sentences not stored yet, so a document rewrite can drop its own. Returns
    ``written``: rows whose two ends existed.
    """
    rel = escape_name(rel_type)
    key = ", ".join(f"{escape_name(a)}: row.identity.{escape_name(a)}" for a in identity)
    pattern = f"[r:{rel} {{{key}}}]" if key else f"[r:{rel}]"
    return (
        "UNWIND $rows AS row\n"
        "MATCH (a:Entity {uid: row.start})\n"
        "MATCH (b:Entity {uid: row.end})\n"
        f"MERGE (a)-{pattern}->(b)\n"
        "ON CREATE SET r.symmetric = row.symmetric, r.chunk_ids = row.chunk_ids, r.doc_ids = row.doc_ids\n"
        "ON MATCH SET r.symmetric = row.symmetric,\n"
        f"    r.chunk_ids = {_union('r', 'chunk_ids')},\n"
        f"    r.doc_ids = {_union('r', 'doc_ids')}\n"
        "WITH r, row, [i IN range(0, size(coalesce(row.evidence, [])) - 1)\n"
        "              WHERE NOT row.evidence[i] IN coalesce(r.evidence, [])] AS fresh\n"
        "SET r += row.attributes,\n"
        "    r.evidence = coalesce(r.evidence, []) + [i IN fresh | row.evidence[i]],\n"
        "    r.evidence_chunk_ids = coalesce(r.evidence_chunk_ids, []) + [i IN fresh | row.evidence_chunk_ids[i]]\n"
        "RETURN count(r) AS written"
    )


# ---------------------------------------------------------------------------------------------
# Incremental updates and pruning
# ---------------------------------------------------------------------------------------------


def chunks_of_documents() -> str:
    """Ids of the chunks of documents ``$doc_ids`` (read)."""
    return "MATCH (c:Chunk) WHERE c.document_id IN $doc_ids RETURN c.id AS id"


def entities_of_documents() -> str:
    """Entities supported by any of ``$doc_ids`` (read, a scan): element id and provenance lists."""
    return (
        "MATCH (e:Entity) WHERE any(d IN coalesce(e.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(e) AS id, e.chunk_ids AS chunk_ids, e.doc_ids AS doc_ids"
    )


def relations_of_documents() -> str:
    """Entity-to-entity relationships supported by any of ``$doc_ids`` (read, a scan)."""
    return (
        "MATCH (:Entity)-[r]->(:Entity) WHERE any(d IN coalesce(r.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(r) AS id, r.chunk_ids AS chunk_ids, r.doc_ids AS doc_ids"
    )


def entities_by_ids() -> str:
    """The entities ``$ids`` (element ids, a seek) still supported by one of ``$doc_ids`` (read):
    uid, type, labels and provenance lists. The support test skips an element id that a later
    node reused after the entity it was read for was deleted."""
    return (
        "MATCH (e:Entity) WHERE elementId(e) IN $ids AND any(d IN coalesce(e.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(e) AS id, e.uid AS uid, e.type AS type, labels(e) AS labels,\n"
        "       e.chunk_ids AS chunk_ids, e.doc_ids AS doc_ids"
    )


def relations_by_ids() -> str:
    """The relationships ``$ids`` (element ids, a seek) still supported by one of ``$doc_ids``
    (read): type, the labels of both ends and provenance lists (see :func:`entities_by_ids`)."""
    return (
        "MATCH (a:Entity)-[r]->(b:Entity)\n"
        "WHERE elementId(r) IN $ids AND any(d IN coalesce(r.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(r) AS id, type(r) AS type, labels(a) AS start_labels, labels(b) AS end_labels,\n"
        "       r.chunk_ids AS chunk_ids, r.doc_ids AS doc_ids, r.evidence AS evidence,\n"
        "       r.evidence_chunk_ids AS evidence_chunk_ids"
    )


def add_entity_provenance() -> str:
    """Rows ``{uid, chunk_ids, doc_ids}``: union more provenance into entities already written
    (cheaper than :func:`merge_entities` when the rest of the row is written already)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (e:Entity {uid: row.uid})\n"
        f"SET e.chunk_ids = {_union('e', 'chunk_ids')},\n"
        f"    e.doc_ids = {_union('e', 'doc_ids')}"
    )


def set_entity_provenance() -> str:
    """Rows ``{id, chunk_ids, doc_ids}``: replace an entity's provenance lists (by element id)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (e:Entity) WHERE elementId(e) = row.id\n"
        "SET e.chunk_ids = row.chunk_ids, e.doc_ids = row.doc_ids"
    )


def set_relation_provenance() -> str:
    """Rows ``{id, chunk_ids, doc_ids, evidence, evidence_chunk_ids}``: replace a relationship's
    provenance lists and its evidence sentences (with their chunks)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH ()-[r]->() WHERE elementId(r) = row.id\n"
        "SET r.chunk_ids = row.chunk_ids, r.doc_ids = row.doc_ids,\n"
        "    r.evidence = row.evidence, r.evidence_chunk_ids = row.evidence_chunk_ids"
    )


def delete_chunks() -> str:
    """Rows ``{id}``: delete chunks with their ``HAS_CHUNK``/``MENTIONS`` relationships."""
    return "UNWIND $rows AS row\nMATCH (c:Chunk {id: row.id})\nDETACH DELETE c"


def delete_documents() -> str:
    """Rows ``{id}``: delete documents (their chunks are deleted first by :func:`delete_chunks`)."""
    return "UNWIND $rows AS row\nMATCH (d:Document {id: row.id})\nDETACH DELETE d"


def prune_relations() -> str:
    """Rows ``{id}``: delete those relationships that no chunk supports any more."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH ()-[r]->() WHERE elementId(r) = row.id AND size(coalesce(r.chunk_ids, [])) = 0\n"
        "DELETE r"
    )


def prune_entities() -> str:
    """Rows ``{id}``: delete those entities that no chunk supports and no relation connects;
    returns the ``uid`` of each one deleted."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (e:Entity) WHERE elementId(e) = row.id AND size(coalesce(e.chunk_ids, [])) = 0\n"
        "  AND NOT EXISTS { (e)--(:Entity) }\n"
        "WITH e, e.uid AS uid\n"
        "DETACH DELETE e\n"
        "RETURN uid"
    )


def delete_relations() -> str:
    """Rows ``{id, type}``: delete those relationships (the current ontology refuses them). The
    type is checked too, so a stale element id never deletes another relationship."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH ()-[r]->() WHERE elementId(r) = row.id AND type(r) = row.type\n"
        "DELETE r"
    )


def delete_entities() -> str:
    """Rows ``{id, uid}``: delete those entities with their relationships (the current ontology
    refuses their class); returns the ``uid`` of each one deleted."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (e:Entity) WHERE elementId(e) = row.id AND e.uid = row.uid\n"
        "WITH e, e.uid AS uid\n"
        "DETACH DELETE e\n"
        "RETURN uid"
    )


# ---------------------------------------------------------------------------------------------
# Statistics (read only)
# ---------------------------------------------------------------------------------------------


def count_nodes_by_label() -> str:
    return "MATCH (n) UNWIND labels(n) AS label RETURN label, count(*) AS count ORDER BY label"


def count_relations_by_type() -> str:
    return "MATCH ()-[r]->() RETURN type(r) AS type, count(*) AS count ORDER BY type"


def count_label(label: str) -> str:
    """Count of one label (answered from the count store)."""
    return f"MATCH (n:{escape_name(label)}) RETURN count(n) AS count"


def missing_symmetric_directions() -> str:
    """Per type in ``$types`` (the symmetric ones): relationships whose reverse (same type and
    same values of the identity attributes ``$identity``) is missing."""
    return (
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE type(r) IN $types\n"
        "  AND NOT EXISTS { MATCH (b)-[r2]->(a) WHERE type(r2) = type(r)\n"
        "                   AND all(k IN $identity WHERE r2[k] = r[k]) }\n"
        "RETURN type(r) AS type, count(*) AS count ORDER BY type"
    )


def ontology_violations() -> str:
    """Entity-to-entity relationships breaking ``$rules`` (list of ``{type, domain, range,
    symmetric}``): unknown type, or end labels outside domain/range (a symmetric relationship may
    match them either way round). Returns per (type, reason) counts. CO_OCCURS (not an ontology
    relation) is left out."""
    return (
        "MATCH (a:Entity)-[r:!CO_OCCURS]->(b:Entity)\n"
        "WITH a, r, b, [x IN $rules WHERE x.type = type(r)] AS matching\n"
        "WITH r, CASE\n"
        "  WHEN size(matching) = 0 THEN 'unknown_type'\n"
        "  WHEN any(l IN labels(a) WHERE l IN matching[0].domain)\n"
        "       AND any(l IN labels(b) WHERE l IN matching[0].range) THEN null\n"
        "  WHEN matching[0].symmetric AND any(l IN labels(b) WHERE l IN matching[0].domain)\n"
        "       AND any(l IN labels(a) WHERE l IN matching[0].range) THEN null\n"
        "  ELSE 'domain_range' END AS reason\n"
        "WHERE reason IS NOT NULL\n"
        "RETURN type(r) AS type, reason, count(*) AS count ORDER BY type, reason"
    )


def entity_violations() -> str:
    """Entities none of whose labels is a class in ``$classes`` (a class the ontology dropped),
    counted per stored ``type``."""
    return (
        "MATCH (e:Entity) WHERE none(l IN labels(e) WHERE l IN $classes)\n"
        "RETURN coalesce(toStringOrNull(e.type), '') AS type, count(*) AS count ORDER BY type"
    )


def orphan_entities() -> str:
    """Entities with no relationship to another entity (CO_OCCURS does not count)."""
    return "MATCH (e:Entity) WHERE NOT EXISTS { (e)-[:!CO_OCCURS]-(:Entity) } RETURN count(e) AS count"


# ---------------------------------------------------------------------------------------------
# Maintenance
# ---------------------------------------------------------------------------------------------


def delete_all_in_batches(batch: int = 10000) -> str:
    """Delete every node and relationship in batches. Needs an auto-commit (implicit)
    transaction: ``CALL ... IN TRANSACTIONS`` is refused inside an explicit one."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    return f"MATCH (n) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF {batch} ROWS"


# ---------------------------------------------------------------------------------------------
# viz (read only; used by graphrag_got.report.viz.graph_from_neo4j)
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


# ---------------------------------------------------------------------------------------------
# communities (used by graphrag_got.communities.core)
# ---------------------------------------------------------------------------------------------

COMMUNITY = "Community"
IN_COMMUNITY = "IN_COMMUNITY"
COMMUNITY_VECTOR_INDEX = "community_embedding"


def community_entities() -> str:
    """Every entity (read): uid, name, type, properties. Isolated ones included (they become singletons)."""
    return (
        "MATCH (e:Entity)\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, properties(e) AS properties ORDER BY uid"
    )


def community_relations() -> str:
    """Entity-to-entity relationships of the ontology types ``$types`` (read), with their support.

    A symmetric relation is stored in both directions; the caller counts it once.
    """
    return (
        "MATCH (a:Entity)-[r]->(b:Entity) WHERE type(r) IN $types\n"
        "RETURN a.uid AS start, b.uid AS end, type(r) AS type, " + _attribute_pairs("r") + ",\n"
        "       coalesce(r.symmetric, false) AS symmetric, size(coalesce(r.chunk_ids, [])) AS support"
    )


def community_cooccurrences() -> str:
    """Every ``CO_OCCURS`` edge between entities (read): ends, weight and chunk count.

    Stored once per pair (start uid < end uid); the caller treats it as undirected.
    """
    return (
        "MATCH (a:Entity)-[r:CO_OCCURS]->(b:Entity)\n"
        "RETURN a.uid AS start, b.uid AS end, r.weight AS weight, r.count AS count"
    )


def community_constraint() -> str:
    return "CREATE CONSTRAINT community_id IF NOT EXISTS FOR (c:Community) REQUIRE c.id IS UNIQUE"


def existing_community_summaries() -> str:
    """Reports already stored, by the content hash they were written for (read)."""
    return (
        "MATCH (c:Community) WHERE c.summary IS NOT NULL AND c.content_hash IS NOT NULL\n"
        "RETURN c.content_hash AS content_hash, c.summary_key AS summary_key, c.title AS title, c.summary AS summary,\n"
        "       c.findings AS findings, c.rating AS rating, c.rating_explanation AS rating_explanation,\n"
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
    """Rows ``{id, level, parent, algorithm, resolution, size, members_hash, content_hash, title, summary,
    findings, rating, rating_explanation, summary_key}`` (``findings`` a JSON string)."""
    return (
        "UNWIND $rows AS row\n"
        "CREATE (c:Community {id: row.id, level: row.level, parent: row.parent, algorithm: row.algorithm,\n"
        "  resolution: row.resolution, size: row.size, members_hash: row.members_hash,\n"
        "  content_hash: row.content_hash, title: row.title, summary: row.summary, findings: row.findings,\n"
        "  rating: row.rating, rating_explanation: row.rating_explanation, summary_key: row.summary_key})"
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
        "       c.embedding_hash AS embedding_hash, c.resolution AS resolution,\n"
        "       collect({uid: e.uid, name: e.name, type: e.type, properties: properties(e)}) AS members\n"
        "ORDER BY id"
    )


def set_community_summaries() -> str:
    """Rows ``{id, title, summary, findings, rating, rating_explanation, summary_key}`` (a report)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (c:Community {id: row.id})\n"
        "SET c.title = row.title, c.summary = row.summary, c.findings = row.findings, c.rating = row.rating,\n"
        "    c.rating_explanation = row.rating_explanation, c.summary_key = row.summary_key"
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


def create_community_vector_index(dimensions: int) -> str:
    """The cosine vector index ``community_embedding`` on ``Community.embedding`` (idempotent)."""
    return create_vector_index(COMMUNITY_VECTOR_INDEX, COMMUNITY, dimensions)


def community_levels() -> str:
    """Every community's id, level, parent, size and whether it has a report (read): the hierarchy."""
    return (
        "MATCH (c:Community)\n"
        "RETURN c.id AS id, coalesce(c.level, 0) AS level, c.parent AS parent, c.size AS size,\n"
        "       c.summary IS NOT NULL AS reported\n"
        "ORDER BY id"
    )


# ---------------------------------------------------------------------------------------------
# search (read only; used by graphrag_got.search.local and graphrag_got.search.global_)
# ---------------------------------------------------------------------------------------------

#: Upper bound of the hop count accepted by :func:`local_neighborhood` (Settings.local_hops has le=4).
MAX_HOPS = 4


def search_entity_catalog() -> str:
    """Every entity's uid, key, name, type and aliases: the vocabulary the anchor matcher works on."""
    return ("MATCH (e:Entity) RETURN e.uid AS uid, e.key AS key, e.name AS name, e.type AS type, "
            "coalesce(e.aliases, []) AS aliases ORDER BY uid")


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
        "       " + _attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
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
        "       " + _attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 1 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


RELATION_ATTRIBUTE_INDEX = "relation_attributes"


def relation_attribute_index(types: Sequence[str], attributes: Sequence[str]) -> str:
    """A full-text index over the relation attributes of the ontology's relation types.

    Local search finds a fact placed "at" an anchor (an attribute value naming it) through this
    index instead of reading every relationship of the graph. Names come from the validated
    ontology and are escaped like any label.
    """
    if not types or not attributes:
        raise ValueError("a relation attribute index needs at least one relation type and one attribute")
    rel_types = "|".join(escape_name(t) for t in types)
    props = ", ".join(f"r.{escape_name(a)}" for a in attributes)
    return (f"CREATE FULLTEXT INDEX {RELATION_ATTRIBUTE_INDEX} IF NOT EXISTS FOR ()-[r:{rel_types}]-() "
            f"ON EACH [{props}]")


def relation_attribute_index_definition() -> str:
    """``types``, ``properties`` of the relation attribute index (no row when it does not exist)."""
    return ("SHOW FULLTEXT INDEXES YIELD name, labelsOrTypes, properties WHERE name = $name "
            "RETURN labelsOrTypes AS types, properties")


def drop_relation_attribute_index() -> str:
    return f"DROP INDEX {RELATION_ATTRIBUTE_INDEX} IF EXISTS"


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
        "       " + _attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
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
        "       " + _attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 2 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


def _attribute_pairs(var: str) -> str:
    """``[[name, value], ...]`` of the relation attributes ``$attributes`` that ``var`` holds (read)."""
    return (f"[k IN $attributes WHERE {var}[k] IS NOT NULL AND toString({var}[k]) <> '' "
            f"| [k, toString({var}[k])]] AS attributes")


def chunk_texts() -> str:
    """Texts of the chunks ``$ids``."""
    return "MATCH (c:Chunk) WHERE c.id IN $ids RETURN c.id AS id, c.text AS text"


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


# ---------------------------------------------------------------------------------------------
# code impact (used by graphrag_got.code.impact; read only)
# ---------------------------------------------------------------------------------------------


def code_impact_candidates() -> str:
    """Entities of the classes ``$types`` whose key is ``$key`` or ends with one of ``$suffixes``
    (``.name`` for a qualified name, ``/name`` for a path), at most ``$limit``."""
    return (
        "MATCH (e:Entity) WHERE e.type IN $types\n"
        "  AND (e.key = $key OR any(s IN $suffixes WHERE e.key ENDS WITH s))\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, e.path AS path, e.start_line AS start_line,\n"
        "       e.nodeid AS nodeid\n"
        "ORDER BY size(e.name), e.name LIMIT $limit"
    )


def code_impact_members() -> str:
    """What the entities ``$uids`` hold through the relationship types ``$types`` (a file's
    definitions, a class's methods), restricted to the classes ``$classes``."""
    return (
        "MATCH (s:Entity)-[r]->(m:Entity) WHERE s.uid IN $uids AND type(r) IN $types AND m.type IN $classes\n"
        "RETURN DISTINCT m.uid AS uid, m.name AS name, m.type AS type, m.path AS path,\n"
        "       m.start_line AS start_line, m.nodeid AS nodeid, s.uid AS via, type(r) AS relation\n"
        "ORDER BY name"
    )


def code_impact_dependents(relations: Sequence[str]) -> str:
    """One step of the blast radius: entities with a relationship of ``relations`` *towards* one of
    ``$frontier`` (uids): the callers, subclasses, importers and tests of the frontier."""
    if not relations:
        raise ValueError("code_impact_dependents needs at least one relationship type")
    types = "|".join(escape_name(r) for r in relations)
    return (
        f"MATCH (a:Entity)-[r:{types}]->(b:Entity) WHERE b.uid IN $frontier\n"
        "RETURN a.uid AS uid, a.name AS name, a.type AS type, a.path AS path, a.start_line AS start_line,\n"
        "       a.nodeid AS nodeid, b.uid AS via, b.name AS via_name, type(r) AS relation, r.lines AS lines\n"
        "ORDER BY uid, via"
    )


def code_graph_size() -> str:
    """How many entities of the classes ``$types`` the graph holds (is a code graph loaded?)."""
    return "MATCH (e:Entity) WHERE e.type IN $types RETURN count(e) AS count"


def code_impact_unresolved() -> str:
    """``unresolved_calls`` of the entities ``$uids`` (a property the code extractor writes)."""
    return "MATCH (e:Entity) WHERE e.uid IN $uids RETURN e.uid AS uid, e.unresolved_calls AS unresolved"


# --- service (graphrag-got serve, graphrag-got mcp; read only) ---


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


# --- embeddings and hybrid retrieval ---
# Vector indexes (Neo4j 5.26 Community), the embedding writes and the vector / chunk-expansion reads
# of hybrid local search. Index names, labels and property names pass through escape_name; the
# dimension is spliced as a validated int (index OPTIONS do not take parameters); every value
# (vectors, ids, k) is a parameter.

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


def vector_chunks() -> str:
    """The ``$k`` chunks nearest to ``$vector`` in the index ``$index``, best first."""
    return (
        "CALL db.index.vector.queryNodes($index, $k, $vector) YIELD node, score\n"
        "RETURN node.id AS id, node.document_id AS document_id, node.heading AS heading, node.text AS text, score\n"
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
    """Id, document, heading and text of the chunks ``$ids``."""
    return ("MATCH (c:Chunk) WHERE c.id IN $ids\n"
            "RETURN c.id AS id, c.document_id AS document_id, c.heading AS heading, c.text AS text")


def search_catalog_fingerprint() -> str:
    """Cheap signs that the entity catalog changed: the entity count (from the count store) and
    every document's content and ontology hash."""
    return (
        "MATCH (e:Entity) WITH count(e) AS entities\n"
        "OPTIONAL MATCH (d:Document)\n"
        "WITH entities, d ORDER BY d.id\n"
        "RETURN entities, collect([d.id, d.hash, d.ontology_hash]) AS documents"
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
        "       " + _attribute_pairs("r") + ", coalesce(r.symmetric, false) AS symmetric,\n"
        "       coalesce(r.chunk_ids, []) AS chunk_ids, coalesce(r.evidence, []) AS evidence, 1 AS dist\n"
        "ORDER BY size(chunk_ids) DESC, start, type, end\n"
        "LIMIT $limit"
    )


# --- DRIFT search (graphrag_got/search/drift.py; read only) ---


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


def community_report_count() -> str:
    """How many communities have a summary (routing checks global/drift can answer at all)."""
    return "MATCH (c:Community) WHERE c.summary IS NOT NULL RETURN count(c) AS n"


# --- notes vault structure and co-occurrence (used by graphrag_got.graph.notes and graphrag_got.graph.load) ---

FOLDER = "Folder"
TAG = "Tag"
MISSING_NOTE = "MissingNote"
IN_FOLDER = "IN_FOLDER"
TAGGED = "TAGGED"
LINKS_TO = "LINKS_TO"
#: Entities mentioned in one chunk; not an ontology relation (stats, viz, search leave it out).
CO_OCCURS = "CO_OCCURS"


def note_constraints() -> list[str]:
    """Uniqueness of ``Folder.path``, ``Tag.name`` and ``MissingNote.name`` (idempotent)."""
    return [
        "CREATE CONSTRAINT folder_path IF NOT EXISTS FOR (f:Folder) REQUIRE f.path IS UNIQUE",
        "CREATE CONSTRAINT tag_name IF NOT EXISTS FOR (t:Tag) REQUIRE t.name IS UNIQUE",
        "CREATE CONSTRAINT missing_note_name IF NOT EXISTS FOR (m:MissingNote) REQUIRE m.name IS UNIQUE",
    ]


def set_note_properties() -> str:
    """Rows ``{id, title, date, tags, folder, folder_tags}``: a note's own properties on its Document."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "SET d.title = row.title, d.date = row.date, d.tags = row.tags, d.folder = row.folder,\n"
        "    d.folder_tags = row.folder_tags"
    )


def merge_folders() -> str:
    """Rows ``{path, name, parent}`` (every folder on the written notes' paths; ``parent`` null at
    the top): ``(:Folder)-[:IN_FOLDER]->(:Folder)`` chains nested folders."""
    return (
        "UNWIND $rows AS row\n"
        "MERGE (f:Folder {path: row.path})\n"
        "SET f.name = row.name\n"
        "WITH f, row WHERE row.parent IS NOT NULL\n"
        "MERGE (p:Folder {path: row.parent})\n"
        "MERGE (f)-[:IN_FOLDER]->(p)"
    )


def link_documents_to_folders() -> str:
    """Rows ``{id, folder}``: ``(:Document)-[:IN_FOLDER]->(:Folder)``."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "MATCH (f:Folder {path: row.folder})\n"
        "MERGE (d)-[:IN_FOLDER]->(f)"
    )


def merge_tags() -> str:
    """Rows ``{id, name, source}``: ``(:Document)-[:TAGGED {source}]->(:Tag {name})``, ``source``
    ``tag`` (written in the note) or ``folder`` (a folder on its path)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "MERGE (t:Tag {name: row.name})\n"
        "MERGE (d)-[:TAGGED {source: row.source}]->(t)"
    )


def merge_note_links() -> str:
    """Rows ``{id, target_id, missing, kind, text, heading}``: ``(:Document)-[:LINKS_TO {kind}]->``
    the Document ``target_id`` when it is in the graph, else ``(:MissingNote {name: missing})``.
    ``r.target`` keeps the link's key, the name it falls back to if its target is deleted."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "OPTIONAL MATCH (t:Document {id: row.target_id})\n"
        "WITH d, t, row\n"
        "FOREACH (_ IN CASE WHEN t IS NULL THEN [1] ELSE [] END |\n"
        "  MERGE (m:MissingNote {name: row.missing})\n"
        "  MERGE (d)-[r:LINKS_TO {kind: row.kind}]->(m)\n"
        "  SET r.text = row.text, r.heading = row.heading, r.target = row.missing)\n"
        "FOREACH (_ IN CASE WHEN t IS NULL THEN [] ELSE [1] END |\n"
        "  MERGE (d)-[r:LINKS_TO {kind: row.kind}]->(t)\n"
        "  SET r.text = row.text, r.heading = row.heading, r.target = row.missing)"
    )


def claim_missing_notes() -> str:
    """Rows ``{id, name}``: links to ``(:MissingNote {name})`` now point to the Document ``id``
    (the note was written). Each name is in one row only (the caller picks one note per name)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "MATCH (s:Document)-[r:LINKS_TO]->(:MissingNote {name: row.name})\n"
        "WITH d, s, collect(r) AS links\n"
        "UNWIND links AS r\n"
        "MERGE (s)-[n:LINKS_TO {kind: r.kind}]->(d)\n"
        "SET n.text = r.text, n.heading = r.heading, n.target = r.target\n"
        "DELETE r"
    )


def note_structure_of_documents() -> str:
    """Folders (with their ancestors), tags and missing notes the documents ``$doc_ids`` reach
    (read): what may be left without edges once they are rewritten or deleted."""
    return (
        "MATCH (d:Document) WHERE d.id IN $doc_ids\n"
        "RETURN COLLECT { MATCH (d)-[:IN_FOLDER*1..]->(f:Folder) RETURN DISTINCT f.path } AS folders,\n"
        "       COLLECT { MATCH (d)-[:TAGGED]->(t:Tag) RETURN DISTINCT t.name } AS tags,\n"
        "       COLLECT { MATCH (d)-[:LINKS_TO]->(m:MissingNote) RETURN DISTINCT m.name } AS missing"
    )


def unlink_note_structure() -> str:
    """Rows ``{id}``: remove a document's note properties and outgoing IN_FOLDER, TAGGED and
    LINKS_TO relationships (links pointing at it stay)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "REMOVE d.title, d.date, d.tags, d.folder, d.folder_tags\n"
        "WITH d\n"
        "CALL (d) { MATCH (d)-[r:IN_FOLDER|TAGGED|LINKS_TO]->() DELETE r }"
    )


def orphan_incoming_links() -> str:
    """Rows ``{id}`` (documents about to be deleted): links to them point to
    ``(:MissingNote {name: r.target})`` again; returns the ``name`` of each missing note linked.
    (Links from a document deleted too go with it: the caller prunes what is left unlinked.)"""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (s:Document)-[r:LINKS_TO]->(d:Document {id: row.id})\n"
        "WITH s, d, collect(r) AS links\n"
        "UNWIND links AS r\n"
        "MERGE (m:MissingNote {name: coalesce(r.target, toLower(d.id))})\n"
        "MERGE (s)-[n:LINKS_TO {kind: r.kind}]->(m)\n"
        "SET n.text = r.text, n.heading = r.heading, n.target = m.name\n"
        "DELETE r\n"
        "RETURN DISTINCT m.name AS name"
    )


def prune_folders() -> str:
    """Rows ``{path}``: delete those folders with no document under them (at any depth)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (f:Folder {path: row.path})\n"
        "WHERE NOT EXISTS { (:Document)-[:IN_FOLDER*1..]->(f) }\n"
        "WITH collect(f) AS empty\n"
        "UNWIND empty AS f\n"
        "DETACH DELETE f"
    )


def prune_tags() -> str:
    """Rows ``{name}``: delete those tags no document is tagged with."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (t:Tag {name: row.name}) WHERE NOT EXISTS { ()-[:TAGGED]->(t) }\n"
        "DELETE t"
    )


def prune_missing_notes() -> str:
    """Rows ``{name}``: delete those missing notes no link points at."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (m:MissingNote {name: row.name}) WHERE NOT EXISTS { ()-[:LINKS_TO]->(m) }\n"
        "DELETE m"
    )


def merge_cooccurrences() -> str:
    """Rows ``{start, end, chunk_ids, chunk_weights, doc_ids}`` (``start`` < ``end``, stored once):
    ``(:Entity)-[:CO_OCCURS]->(:Entity)``. ``chunk_weights`` is aligned with ``chunk_ids`` (the
    lower confidence of the two mentions in that chunk); the chunks not stored yet are added, then
    ``weight`` = their sum and ``count`` = the number of chunks. Returns ``written``."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (a:Entity {uid: row.start})\n"
        "MATCH (b:Entity {uid: row.end})\n"
        "MERGE (a)-[r:CO_OCCURS]->(b)\n"
        "WITH r, row, [i IN range(0, size(row.chunk_ids) - 1)\n"
        "              WHERE NOT row.chunk_ids[i] IN coalesce(r.chunk_ids, [])] AS fresh\n"
        "SET r.chunk_ids = coalesce(r.chunk_ids, []) + [i IN fresh | row.chunk_ids[i]],\n"
        "    r.chunk_weights = coalesce(r.chunk_weights, []) + [i IN fresh | row.chunk_weights[i]],\n"
        f"    r.doc_ids = {_union('r', 'doc_ids')}\n"
        "SET r.count = size(r.chunk_ids), r.weight = reduce(s = 0.0, w IN r.chunk_weights | s + w)\n"
        "RETURN count(r) AS written"
    )


def cooccurrences_by_ids() -> str:
    """The CO_OCCURS relationships ``$ids`` (element ids) still supported by one of ``$doc_ids``
    (read): provenance and per-chunk weights."""
    return (
        "MATCH (:Entity)-[r:CO_OCCURS]->(:Entity)\n"
        "WHERE elementId(r) IN $ids AND any(d IN coalesce(r.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(r) AS id, r.chunk_ids AS chunk_ids, r.chunk_weights AS chunk_weights,\n"
        "       r.doc_ids AS doc_ids"
    )


def set_cooccurrence_provenance() -> str:
    """Rows ``{id, chunk_ids, chunk_weights, doc_ids}``: replace a CO_OCCURS relationship's
    provenance, then recompute ``weight`` and ``count`` from it."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (:Entity)-[r:CO_OCCURS]->(:Entity) WHERE elementId(r) = row.id\n"
        "SET r.chunk_ids = row.chunk_ids, r.chunk_weights = row.chunk_weights, r.doc_ids = row.doc_ids,\n"
        "    r.count = size(row.chunk_ids), r.weight = reduce(s = 0.0, w IN row.chunk_weights | s + w)"
    )
