"""Cypher of the notes vault structure (:mod:`graphrag_got.graph.notes`).

Folders, tags and links between notes, written with a note's Document in the load transaction
and unlinked and pruned when it is rewritten or removed. The rules of
:mod:`graphrag_got.graph.cypher` apply.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------------
# Labels and relationship types
# ---------------------------------------------------------------------------------------------

FOLDER = "Folder"
TAG = "Tag"
MISSING_NOTE = "MissingNote"
IN_FOLDER = "IN_FOLDER"
TAGGED = "TAGGED"
LINKS_TO = "LINKS_TO"


# ---------------------------------------------------------------------------------------------
# Writes
# ---------------------------------------------------------------------------------------------


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


# ---------------------------------------------------------------------------------------------
# Rewrites and pruning
# ---------------------------------------------------------------------------------------------


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
