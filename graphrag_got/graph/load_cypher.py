"""Cypher of the loader (:mod:`graphrag_got.graph.load`) and of the graph statistics.

Sections: schema (constraints and indexes, the relation attribute full-text index), documents
and chunks, entities and relations, co-occurrence, incremental updates and pruning, statistics
(read only; :mod:`graphrag_got.graph.stats`), maintenance. Identifiers come from
:mod:`graphrag_got.graph.cypher`, whose rules apply here.
"""

from __future__ import annotations

from typing import Sequence

from graphrag_got.graph.cypher import escape_name

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


# ---------------------------------------------------------------------------------------------
# Documents and chunks
# ---------------------------------------------------------------------------------------------


def existing_documents() -> str:
    """Every loaded document with its content hash, the hash of the ontology it was loaded under and
    the digest of the records written for it (:mod:`graphrag_got.graph.load_digest`); null while a
    load of it is unfinished, or from a load older than the field."""
    return ("MATCH (d:Document) RETURN d.id AS id, d.hash AS hash, d.ontology_hash AS ontology_hash,\n"
            "       d.records_hash AS records_hash, d.rootless_hash AS rootless_hash")


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
    """Rows ``{id, hash, ontology_hash, records_hash, rootless_hash}``: mark documents as completely loaded,
    under that ontology, with those records (and those of the rows no chunk supports)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.id})\n"
        "SET d.hash = row.hash, d.ontology_hash = row.ontology_hash, d.records_hash = row.records_hash,\n"
        "    d.rootless_hash = row.rootless_hash"
    )


def merge_chunks() -> str:
    """Rows ``{id, document_id, index, start, end, hash, text, heading, page, section, location}`` (``page``,
    ``section``, ``location``: where in the document, :class:`graphrag_got.extract.extraction.ChunkRecord`;
    null for a text file's chunk, as ``heading`` outside Markdown)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (d:Document {id: row.document_id})\n"
        "MERGE (c:Chunk {id: row.id})\n"
        "SET c.document_id = row.document_id, c.index = row.index, c.start = row.start,\n"
        "    c.end = row.end, c.hash = row.hash, c.text = row.text, c.heading = row.heading,\n"
        "    c.page = row.page, c.section = row.section, c.location = row.location\n"
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


def _drop_stale(target: str, fields: str) -> str:
    """Cypher: remove from ``target`` the keys that are neither the toolkit's own (``$reserved``) nor in
    the row's maps ``fields`` (``keys(row.a) + keys(row.b)``): values an earlier version of its record
    had. Dynamic property keys (``SET e[k]``, Neo4j 5.26); the keys come from the stored node itself."""
    return (f"WITH {target}, row, [k IN keys({target}) WHERE NOT k IN $reserved AND NOT k IN {fields}] AS stale\n"
            f"FOREACH (k IN stale | SET {target}[k] = null)\n")


def merge_entities(label: str) -> str:
    """Rows ``{uid, key, name, type, properties, chunk_ids, doc_ids, aliases, record_hash}`` of one ontology
    class; ``$reserved``: the node fields the toolkit writes (``RESERVED_PROPERTIES``). ``record_hash``: the
    digest of the record's own fields (:mod:`graphrag_got.graph.load_digest`).

    The row is the entity's whole record in the extraction file (every document it appears in sees the
    same one), so name, aliases and properties are set from it, and a property the record no longer
    has is removed; ``properties`` holds no nulls (the caller drops them and model field names).
    ``chunk_ids``/``doc_ids`` are this group's provenance, unioned with what other documents gave.
    """
    lab = escape_name(label)
    return (
        "UNWIND $rows AS row\n"
        "MERGE (e:Entity {uid: row.uid})\n"
        "ON CREATE SET e.chunk_ids = row.chunk_ids, e.doc_ids = row.doc_ids\n"
        f"ON MATCH SET e.chunk_ids = {_union('e', 'chunk_ids')},\n"
        f"    e.doc_ids = {_union('e', 'doc_ids')}\n"
        + _drop_stale("e", "keys(row.properties)")
        + f"SET e:{lab}, e += row.properties, e.name = row.name, e.aliases = coalesce(row.aliases, []),\n"
        "    e.key = row.key, e.type = row.type, e.record_hash = row.record_hash"
    )


def entity_record_hashes() -> str:
    """``uid`` and ``record_hash`` of every entity: whose own fields the file changed (``graph.load``)."""
    return "MATCH (e:Entity) RETURN e.uid AS uid, e.record_hash AS record_hash"


def merge_relations(rel_type: str, identity: Sequence[str] = ()) -> str:
    """Rows ``{start, end, identity, attributes, symmetric, chunk_ids, doc_ids, evidence}`` of one type.

    Both ends are matched by ``Entity.uid`` (unique-constraint seek). The relationship is merged on
    (start, type, end) plus the ontology's identity attributes ``identity`` (relation attribute
    names, validated identifiers), whose values in ``row.identity`` are never null (``""`` when
    absent); the other attributes in ``row.attributes`` (no nulls) are set from the relation's record
    and an attribute it no longer has is removed (``$reserved``: ``RESERVED_RELATION_ATTRIBUTES``).
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
        + _drop_stale("r", "keys(row.attributes) + keys(row.identity)")
        + "WITH r, row, [i IN range(0, size(coalesce(row.evidence, [])) - 1)\n"
        "              WHERE NOT row.evidence[i] IN coalesce(r.evidence, [])] AS fresh\n"
        "SET r += row.attributes,\n"
        "    r.evidence = coalesce(r.evidence, []) + [i IN fresh | row.evidence[i]],\n"
        "    r.evidence_chunk_ids = coalesce(r.evidence_chunk_ids, []) + [i IN fresh | row.evidence_chunk_ids[i]]\n"
        "RETURN count(r) AS written"
    )


# ---------------------------------------------------------------------------------------------
# Co-occurrence (CO_OCCURS between the entities of one chunk)
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Incremental updates and pruning
# ---------------------------------------------------------------------------------------------


def chunks_of_documents() -> str:
    """Ids of the chunks of documents ``$doc_ids`` (read)."""
    return "MATCH (c:Chunk) WHERE c.document_id IN $doc_ids RETURN c.id AS id"


def entities_of_documents() -> str:
    """Entities supported by any of ``$doc_ids`` (read, a scan): element id and which of ``$doc_ids``
    support it (only those: an entity of a large vault has thousands of chunk and document ids)."""
    return (
        "MATCH (e:Entity) WHERE any(d IN coalesce(e.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(e) AS id, [d IN e.doc_ids WHERE d IN $doc_ids] AS doc_ids"
    )


def relations_of_documents() -> str:
    """Entity-to-entity relationships supported by any of ``$doc_ids`` (read, a scan): element id and
    which of ``$doc_ids`` support it."""
    return (
        "MATCH (:Entity)-[r]->(:Entity) WHERE any(d IN coalesce(r.doc_ids, []) WHERE d IN $doc_ids)\n"
        "RETURN elementId(r) AS id, [d IN r.doc_ids WHERE d IN $doc_ids] AS doc_ids"
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
    """Rows ``{id}``: delete those relationships that no chunk supports any more; returns the element ids
    of the ends of each one deleted (an end may have lost its last relation: see :func:`prune_entities`)."""
    return (
        "UNWIND $rows AS row\n"
        "MATCH (a)-[r]->(b) WHERE elementId(r) = row.id AND size(coalesce(r.chunk_ids, [])) = 0\n"
        "WITH r, elementId(a) AS start, elementId(b) AS end\n"
        "DELETE r\n"
        "RETURN start, end"
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


def rootless_entities() -> str:
    """Entities no document supports (read, a scan): element id and uid."""
    return "MATCH (e:Entity) WHERE size(coalesce(e.doc_ids, [])) = 0 RETURN elementId(e) AS id, e.uid AS uid"


def rootless_relations() -> str:
    """Entity-to-entity relationships no document supports (read, a scan; CO_OCCURS always has one):
    element id, ends, type and the values of the identity attributes ``$identity``."""
    return (
        "MATCH (a:Entity)-[r:!CO_OCCURS]->(b:Entity) WHERE size(coalesce(r.doc_ids, [])) = 0\n"
        "RETURN elementId(r) AS id, a.uid AS start, type(r) AS type, b.uid AS end,\n"
        "       [k IN $identity | coalesce(r[k], '')] AS identity"
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
    relation) is left out.

    The second line of the domain/range rule: the rule itself is
    :meth:`graphrag_got.ontology.model.Relation.accepts_any`, which keeps every refused triple out of
    the graph (the validator in ``extract``, and in ``load`` when the ontology changed) and removes
    what a new ontology refuses from rewritten documents. This query states it again in Cypher so that
    ``graphrag-got stats`` checks what the graph holds, whoever wrote it (loads under an earlier
    ontology, another tool); ``tests/test_cypher_guard.py`` checks that both say the same."""
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


def document_layers() -> str:
    """What the documents' chunks hold (``stats``): documents naming a typed entity, an untyped key term
    (``Term``), and documents a typed relation of ``$types`` comes from."""
    return (
        "MATCH (d:Document)\n"
        "WITH d, EXISTS { (d)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(e:Entity) WHERE NOT e:Term } AS typed,\n"
        "     EXISTS { (d)-[:HAS_CHUNK]->(:Chunk)-[:MENTIONS]->(:Term) } AS terms\n"
        "WITH count(CASE WHEN typed THEN 1 END) AS typed_entities, count(CASE WHEN terms THEN 1 END) AS terms\n"
        "CALL () { MATCH (:Entity)-[r]->(:Entity) WHERE type(r) IN $types UNWIND r.doc_ids AS id\n"
        "                   RETURN count(DISTINCT id) AS relations }\n"
        "RETURN typed_entities, terms, coalesce(relations, 0) AS relations"
    )


def orphan_entities() -> str:
    """Entities with no relationship to another entity (CO_OCCURS does not count)."""
    return "MATCH (e:Entity) WHERE NOT EXISTS { (e)-[:!CO_OCCURS]-(:Entity) } RETURN count(e) AS count"


# ---------------------------------------------------------------------------------------------
# The stored graph as data (read only; graph.compare: `stats --strict` against the extraction file)
# ---------------------------------------------------------------------------------------------


def _fields(var: str) -> str:
    """Cypher: ``var``'s properties but those in ``$skip`` (vectors), as ``[[key, value], ...]``."""
    return f"[k IN keys({var}) WHERE NOT k IN $skip | [k, {var}[k]]]"


# Each view query also returns ``eid``, the element id of the row's node or relationship: ``load --repair``
# deletes by it what the file does not back (:mod:`graphrag_got.graph.repair`).


def view_documents() -> str:
    return f"MATCH (d:Document) RETURN d.id AS id, {_fields('d')} AS fields, elementId(d) AS eid"


def view_chunks() -> str:
    """Chunks with the document that holds them (``HAS_CHUNK``; null when none does)."""
    return (f"MATCH (c:Chunk) OPTIONAL MATCH (d:Document)-[:HAS_CHUNK]->(c)\n"
            f"RETURN c.id AS id, {_fields('c')} AS fields, collect(d.id) AS documents, elementId(c) AS eid")


def view_entities() -> str:
    return f"MATCH (e:Entity) RETURN e.uid AS uid, labels(e) AS labels, {_fields('e')} AS fields, elementId(e) AS eid"


def view_relations() -> str:
    """Entity-to-entity relationships (``CO_OCCURS`` too; the caller sorts them out)."""
    return (f"MATCH (a:Entity)-[r]->(b:Entity)\n"
            f"RETURN a.uid AS start, type(r) AS type, b.uid AS end, {_fields('r')} AS fields, elementId(r) AS eid")


def view_mentions() -> str:
    return ("MATCH (c:Chunk)-[m:MENTIONS]->(e:Entity)\n"
            "RETURN c.id AS chunk, e.uid AS uid, m.weight AS weight, elementId(m) AS eid")


def view_note_structure() -> str:
    """A note's folder, tags and links: ``(:Document)-[:IN_FOLDER|TAGGED|LINKS_TO]->(x)``, ``x`` named by
    its id, path or name."""
    return (
        "MATCH (d:Document)-[r:IN_FOLDER|TAGGED|LINKS_TO]->(x)\n"
        "RETURN d.id AS id, type(r) AS type, [l IN labels(x) | l][0] AS label,\n"
        "       coalesce(x.id, x.path, x.name) AS target, properties(r) AS fields, elementId(r) AS eid"
    )


def view_folders() -> str:
    return ("MATCH (f:Folder) OPTIONAL MATCH (f)-[:IN_FOLDER]->(p:Folder)\n"
            "RETURN f.path AS path, f.name AS name, collect(p.path) AS parents, elementId(f) AS eid")


# ---------------------------------------------------------------------------------------------
# Maintenance
# ---------------------------------------------------------------------------------------------


def delete_all_in_batches(batch: int = 10000) -> str:
    """Delete every node and relationship in batches. Needs an auto-commit (implicit)
    transaction: ``CALL ... IN TRANSACTIONS`` is refused inside an explicit one."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    return f"MATCH (n) CALL (n) {{ DETACH DELETE n }} IN TRANSACTIONS OF {batch} ROWS"


def delete_relationships_in_batches(batch: int = 50000) -> str:
    """Delete every relationship in batches (auto-commit transaction, like
    :func:`delete_all_in_batches`). Run first on a dense graph: detaching a batch of nodes that hold
    millions of relationships (co-occurrences) can exceed the server's transaction memory."""
    if not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, got {batch!r}")
    return f"MATCH ()-[r]->() CALL (r) {{ DELETE r }} IN TRANSACTIONS OF {batch} ROWS"
