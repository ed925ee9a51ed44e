"""The vault structure of notes in Neo4j: folders, tags, links (written by :mod:`graphrag_got.graph.load`).

For each written document with a :class:`~graphrag_got.extract.extraction.NoteRecord`:

* ``Document`` gets ``title``, ``date``, ``tags``, ``folder``, ``folder_tags``;
* ``(:Document)-[:IN_FOLDER]->(:Folder {path, name})``, nested folders chained
  ``(:Folder)-[:IN_FOLDER]->(:Folder)`` (a note at the corpus root has none);
* ``(:Document)-[:TAGGED {source}]->(:Tag {name})``, ``source`` ``"tag"`` (written in the note)
  or ``"folder"`` (a folder on its path);
* ``(:Document)-[:LINKS_TO {kind, text, heading, target}]->(:Document)``, one per (note, kind,
  target); a link whose target is not in the graph goes to ``(:MissingNote {name: target})``.

Incremental rules (all inside the transaction of the documents' group):

* writing a note claims the missing notes it answers to (its path, or any trailing part of its
  path such as its file name, without ``.md``, lower case), so a link written before its target
  existed now points at it;
* rewriting a note first removes its properties and outgoing structure (links pointing at it stay);
* deleting a note turns the links of other notes pointing at it into ``MissingNote`` links again;
* folders with no document under them, tags nobody is tagged with and missing notes nobody links
  to are deleted (only among those the group touched).

The functions take the loader's batched ``write(query, rows, kind)`` and ``read(query, **params)``
so the rows share its batching, timing and error reporting.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphrag_got.graph import notes_cypher
from graphrag_got.extract.extraction import DocumentRecord
from graphrag_got.ingest.notes import note_key

Write = Callable[[str, list[dict[str, Any]], str], list[Any]]
Read = Callable[..., list[Any]]


@dataclass
class NoteRows:
    """The note structure rows of the documents one transaction writes."""

    properties: list[dict[str, Any]] = field(default_factory=list)
    folders: list[dict[str, Any]] = field(default_factory=list)
    document_folders: list[dict[str, Any]] = field(default_factory=list)
    tags: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    claims: list[dict[str, Any]] = field(default_factory=list)

    def __len__(self) -> int:
        return (len(self.properties) + len(self.folders) + len(self.document_folders) + len(self.tags)
                + len(self.links) + len(self.claims))  # fmt: skip


@dataclass
class Touched:
    """Folders, tags and missing notes that may be left without edges (prune candidates)."""

    folders: set[str] = field(default_factory=set)
    tags: set[str] = field(default_factory=set)
    missing: set[str] = field(default_factory=set)

    def update(self, other: "Touched") -> None:
        self.folders |= other.folders
        self.tags |= other.tags
        self.missing |= other.missing


def _ancestors(folder: str) -> list[str]:
    """``"a/b/c"`` -> ``["a", "a/b", "a/b/c"]``."""
    parts = folder.split("/") if folder else []
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def claim_names(doc_id: str) -> list[str]:
    """Missing-note names a note answers to: its key and every trailing part of it
    (``a/b/note.md`` -> ``a/b/note``, ``b/note``, ``note``), as a wikilink resolves."""
    parts = note_key(doc_id).split("/")
    return ["/".join(parts[i:]) for i in range(len(parts))]


def note_rows(documents: Sequence[DocumentRecord]) -> NoteRows:
    """Rows for the documents about to be written (those without a note record give none)."""
    rows = NoteRows()
    folders: dict[str, dict[str, Any]] = {}
    claims: dict[str, str] = {}
    for d in documents:
        note = d.note
        if note is None:
            continue
        rows.properties.append({"id": d.id, "title": note.title, "date": note.date, "tags": list(note.tags),
                                "folder": note.folder, "folder_tags": list(note.folder_tags)})  # fmt: skip
        for path in _ancestors(note.folder):
            parent = posixpath.dirname(path)
            folders.setdefault(path, {"path": path, "name": posixpath.basename(path), "parent": parent or None})
        if note.folder:
            rows.document_folders.append({"id": d.id, "folder": note.folder})
        rows.tags += [{"id": d.id, "name": t, "source": "tag"} for t in note.tags]
        rows.tags += [{"id": d.id, "name": t, "source": "folder"} for t in note.folder_tags]
        rows.links += [{"id": d.id, "target_id": link.resolved, "missing": link.target, "kind": link.kind,
                        "text": link.text, "heading": link.heading} for link in note.links]  # fmt: skip
        for name in claim_names(d.id):
            best = claims.get(name)
            if best is None or (len(d.id), d.id) < (len(best), best):  # shortest path wins, as in resolution
                claims[name] = d.id
    rows.folders = sorted(folders.values(), key=lambda r: (r["path"].count("/"), r["path"]))
    rows.claims = [{"id": doc_id, "name": name} for name, doc_id in sorted(claims.items())]
    return rows


def write_notes(write: Write, rows: NoteRows) -> Touched:
    """Write the rows (after the documents themselves); returns the claimed missing notes."""
    write(notes_cypher.set_note_properties(), rows.properties, "note properties")
    write(notes_cypher.merge_folders(), rows.folders, "folders")
    write(notes_cypher.link_documents_to_folders(), rows.document_folders, "note folders")
    write(notes_cypher.merge_tags(), rows.tags, "tags")
    write(notes_cypher.merge_note_links(), rows.links, "note links")
    write(notes_cypher.claim_missing_notes(), rows.claims, "claim missing notes")
    return Touched(missing={r["name"] for r in rows.claims})


def strip_notes(write: Write, read: Read, doc_ids: Sequence[str], deleted: Sequence[str]) -> Touched:
    """Remove the note structure of ``doc_ids`` (rewritten or deleted documents; ``deleted`` are
    removed for good, so links to them become missing-note links). Run before the documents'
    chunks and nodes are deleted; returns the prune candidates."""
    touched = Touched()
    if not doc_ids:
        return touched
    for rec in read(notes_cypher.note_structure_of_documents(), doc_ids=list(doc_ids)):
        touched.folders.update(rec["folders"] or [])
        touched.tags.update(rec["tags"] or [])
        touched.missing.update(rec["missing"] or [])
    for rec in write(notes_cypher.orphan_incoming_links(), [{"id": d} for d in deleted], "orphan note links"):
        touched.missing.add(rec["name"])
    write(notes_cypher.unlink_note_structure(), [{"id": d} for d in doc_ids], "unlink note structure")
    return touched


def prune_notes(write: Write, touched: Touched) -> None:
    """Delete the touched folders, tags and missing notes that are left without edges."""
    write(notes_cypher.prune_folders(), [{"path": p} for p in sorted(touched.folders)], "prune folders")
    write(notes_cypher.prune_tags(), [{"name": t} for t in sorted(touched.tags)], "prune tags")
    write(notes_cypher.prune_missing_notes(), [{"name": m} for m in sorted(touched.missing)], "prune missing notes")


def schema_statements() -> list[str]:
    """Constraints of the note structure (idempotent), for the loader's schema step."""
    return notes_cypher.note_constraints()

