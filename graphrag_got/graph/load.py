"""Write an ``extraction.json`` into Neo4j, and report on the loaded graph.

The load is idempotent (everything is ``MERGE``d; provenance lists are unioned), batched
(``UNWIND $rows`` of ``settings.batch_size`` rows) and all-or-nothing per document:

* the documents to write are cut into groups of whole documents, about ``GROUP_BATCHES`` batches
  of rows each (a bigger document is a group of its own). One group is ONE write transaction
  holding everything of its documents: removing their previous version, their chunks, entities,
  mentions and relations, pruning what lost its last support, and their hashes. A failure rolls
  the group back and the group is retried document by document, so the error names the one
  document that cannot be written, and every document before it is committed whole;
* an entity or relation is written in a group with the provenance (chunk and document ids) of
  that group's documents only, so the graph never cites a chunk it does not hold; an entity
  shared by documents of several groups is MERGEd in each (in full the first time, then only its
  provenance);
* every ``(:Document)`` stores its content hash and the hash of the ontology it was loaded under;
  a document with both unchanged is skipped (no writes at all when nothing changed); a changed
  one (its text or the ontology) is rewritten: its chunks and its ids on entities and relations
  are removed first, in the same transaction;
* a document missing from the extraction is removed the same way;
* relations left with no supporting chunk are deleted, and so are entities with no supporting
  chunk and no relation left; the relations and entities of the rewritten documents that the
  current ontology refuses (a type or class it no longer has, ends outside domain/range: left by
  loads under an earlier ontology) are deleted.

Each chunk's mentions carry the model's confidence as ``MENTIONS.weight``. The entities of one
chunk are joined by ``CO_OCCURS`` (stored once, start = the smaller uid; ``settings.cooccurrence``
turns it off; at most ``settings.cooccurrence_max_entities`` entities per chunk, the most confident):
``weight`` = the sum over chunks of the lower confidence of the two, ``count`` = the chunks. Its
provenance (``chunk_ids`` with aligned ``chunk_weights``, ``doc_ids``) is unlinked and pruned on
a rewrite exactly like a relation's. Documents with a note record (:mod:`graphrag_got.ingest.notes`) get
their folders, tags and links in the same transaction (:mod:`graphrag_got.graph.notes`).

Rows are checked against the current ontology before anything is written, with the validator
``extract`` uses (same reason codes): what it refuses is counted in the summary, never written.
Values the graph cannot hold (an integer beyond 64 bits, text that is not valid Unicode) are
reported with their document and JSON path before anything is written.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import json
import time
from collections import Counter, defaultdict, deque
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from graphrag_got.graph import queries as cypher

from graphrag_got.graph import notes as notes_graph
from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionFileError, GraphragGotError, Neo4jError, OntologyError
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, EntityRecord, Extraction, Rejection
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.extract.validate import Validator, identity_attributes, known_entities

logger = logging.getLogger(__name__)

#: A write transaction holds the rows of whole documents, about this many batches of them.
GROUP_BATCHES = 4
#: Integers Neo4j stores (64-bit signed).
_INT64 = (-(2**63), 2**63 - 1)
#: Driver errors meaning the server is gone: stop at once, no per-document retry.
_CONNECTION_ERRORS = (neo4j.exceptions.ServiceUnavailable, neo4j.exceptions.SessionExpired)
#: Errors one group's writes can raise: the server refusing a write, or the driver refusing to
#: send a value (packing), which surfaces as one of the built-in errors.
_WRITE_ERRORS = (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, ValueError, TypeError,
                 OverflowError)  # fmt: skip


def _ontology(ontology: Ontology | str | Path) -> Ontology:
    """The current ontology (an instance or a path); its names are checked again for the graph."""
    onto = Ontology.from_file(ontology) if isinstance(ontology, (str, Path)) else ontology
    for name in [*onto.classes, *(r.name for r in onto.relations), *onto.relation_attributes]:
        try:
            cypher.escape_name(name)
        except ValueError as exc:  # the ontology module checks this too; never trust it blindly
            raise OntologyError(f"ontology name refused for the graph: {exc}") from None
    return onto


def read_extraction(extraction: Extraction | dict[str, Any] | str | Path) -> tuple[Extraction, str]:
    """Parse and check an extraction (see :meth:`Extraction.read`); returns it with a source label."""
    source = "<extraction dict>" if isinstance(extraction, (dict, Extraction)) else str(extraction)
    return Extraction.read(extraction), source


# ---------------------------------------------------------------------------------------------
# Planning: what to write, in Python, before touching the database
# ---------------------------------------------------------------------------------------------


@dataclass
class _Plan:
    entities: dict[str, dict[str, Any]]  # uid -> row (accepted only)
    relations: dict[tuple[Any, ...], dict[str, Any]]  # (start, type, end, identity values) canonical
    refused: Counter[str] = field(default_factory=Counter)
    refused_examples: list[str] = field(default_factory=list)
    entities_refused: int = 0
    relations_refused: int = 0
    properties_dropped: int = 0
    #: uid -> {chunk id: the model's confidence in that mention} (accepted entities only)
    confidence: dict[str, dict[str, float]] = field(default_factory=dict)
    #: (start uid, end uid), start < end -> {start, end, chunk_ids, chunk_weights, doc_ids}
    cooccurrences: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)


def _refuse(plan: _Plan, rejection: Rejection, where: str) -> None:
    plan.refused[rejection.reason.value] += 1
    if rejection.kind == "property":
        plan.properties_dropped += 1
    elif rejection.kind == "entity":
        plan.entities_refused += 1
    else:
        plan.relations_refused += 1
    if len(plan.refused_examples) < 20:
        plan.refused_examples.append(f"{rejection.reason.value}: {where} {rejection.message}")


def _unique(items: list[str]) -> list[str]:
    """Items without repeats, first-seen order (the common single-item case without copying work)."""
    return list(items) if len(items) < 2 else list(dict.fromkeys(items))


def _docs_of(chunk_ids: list[str], chunk_doc: dict[str, str]) -> list[str]:
    if len(chunk_ids) == 1:
        return [chunk_doc[chunk_ids[0]]]
    return sorted({chunk_doc[c] for c in chunk_ids})


def _plan(ext: Extraction, onto: Ontology, *, cooccurrence_max: int | None = None) -> _Plan:
    """Re-check every record against the current ontology with the extraction's own validator
    (same reason codes), then build the rows to write. ``cooccurrence_max``: most entities per
    chunk joined by CO_OCCURS (None: no co-occurrence)."""
    validator = Validator(onto)
    identity = identity_attributes(onto)
    chunk_doc = ext.chunk_documents()
    plan = _Plan(entities={}, relations={})
    for i, e in enumerate(ext.entities):
        record, rejections = validator.check_entity({"name": e.name, "type": e.type, "properties": e.properties})
        for rej in rejections:
            _refuse(plan, rej, f"$.entities[{i}]")
        if record is None:
            continue
        conf = plan.confidence.setdefault(record.uid, {})
        for cid in e.chunk_ids:
            conf[cid] = max(conf.get(cid, 0.0), e.confidence(cid))
        row = plan.entities.get(record.uid)
        if row is None:
            plan.entities[record.uid] = {
                "uid": record.uid, "key": record.key, "name": record.name, "type": record.type,
                "properties": record.properties, "chunk_ids": _unique(e.chunk_ids),
                "aliases": _unique(e.aliases),
            }  # fmt: skip
        else:  # the file should hold one entry per uid; aggregate like `extract` does if not
            for k, v in record.properties.items():
                row["properties"].setdefault(k, v)
            row["chunk_ids"] = _unique([*row["chunk_ids"], *e.chunk_ids])
            row["aliases"] = _unique([*row["aliases"], *e.aliases])
    for row in plan.entities.values():
        row["doc_ids"] = _docs_of(row["chunk_ids"], chunk_doc)

    known = known_entities(EntityRecord.model_construct(key=row["key"], type=row["type"])
                           for row in plan.entities.values())
    for i, r in enumerate(ext.relations):
        raw = {"relation": r.relation, "subject": r.subject, "subject_type": r.subject_type, "object": r.object,
               "object_type": r.object_type, "attributes": r.attributes}
        record, rejections = validator.check_relation(raw, known)
        for rej in rejections:
            _refuse(plan, rej, f"$.relations[{i}] ({r.subject} {r.relation} {r.object}):")
        if record is None:
            continue
        start, end = record.subject_uid, record.object_uid
        if record.symmetric and end < start:
            start, end = end, start
        ident = dict(zip(identity, record.identity(identity)))
        key = (start, record.relation, end, tuple(ident.values()))
        row = plan.relations.get(key)
        if row is None:
            plan.relations[key] = {"start": start, "end": end, "type": record.relation, "identity": ident,
                                   "attributes": dict(record.attributes), "symmetric": record.symmetric,
                                   "chunk_ids": _unique(r.chunk_ids), "evidence": [], "evidence_chunk_ids": []}  # fmt: skip
            row = plan.relations[key]
        else:
            for k, v in record.attributes.items():
                row["attributes"].setdefault(k, v)
            row["chunk_ids"] = _unique([*row["chunk_ids"], *r.chunk_ids])
        # evidence sentences, each with the chunk it comes from (aligned lists: a document rewrite
        # drops the sentences of its old chunks, see _strip)
        for ev in r.evidence:
            cid = ev.chunk_id or (r.chunk_ids[0] if r.chunk_ids else "")
            if cid in chunk_doc and ev.text not in row["evidence"]:
                row["evidence"].append(ev.text)
                row["evidence_chunk_ids"].append(cid)
    for row in plan.relations.values():
        row["doc_ids"] = _docs_of(row["chunk_ids"], chunk_doc)
    if cooccurrence_max is not None:
        plan.cooccurrences = _cooccurrences(plan, chunk_doc, cooccurrence_max)
    return plan


def _cooccurrences(plan: _Plan, chunk_doc: dict[str, str], cap: int) -> dict[tuple[str, str], dict[str, Any]]:
    """One row per pair of entities sharing a chunk. Per chunk only the ``cap`` most confident
    entities (ties by uid) are paired, so a chunk naming hundreds of entities does not write n^2
    edges; a pair's chunk weight is the lower of its two confidences."""
    by_chunk: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for uid, row in plan.entities.items():
        conf = plan.confidence.get(uid, {})
        for cid in row["chunk_ids"]:
            by_chunk[cid].append((conf.get(cid, 1.0), uid))
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for cid in sorted(by_chunk):
        ranked = sorted(by_chunk[cid], key=lambda cu: (-cu[0], cu[1]))[:cap]
        ranked.sort(key=lambda cu: cu[1])
        for i, (conf_a, a) in enumerate(ranked):
            for conf_b, b in ranked[i + 1 :]:
                row = out.get((a, b))
                if row is None:
                    row = out[(a, b)] = {"start": a, "end": b, "chunk_ids": [], "chunk_weights": [], "doc_ids": []}
                row["chunk_ids"].append(cid)
                row["chunk_weights"].append(min(conf_a, conf_b))
    for row in out.values():
        row["doc_ids"] = _docs_of(row["chunk_ids"], chunk_doc)
    return out


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building hundreds of thousands of small objects
    (none of them cyclic): its repeated full scans made parsing and planning ~4x slower."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------


@dataclass
class LoadSummary:
    source: str = ""
    documents_added: int = 0
    documents_updated: int = 0
    documents_reloaded_for_ontology: int = 0  # of documents_updated: same text, loaded under another ontology
    documents_unchanged: int = 0
    documents_pruned: int = 0
    chunks_written: int = 0
    entities_written: int = 0
    relations_written: int = 0  # directed relationships (a symmetric relation counts twice)
    relations_unmatched: int = 0  # rows whose ends were not found (should stay 0)
    mentions_written: int = 0
    cooccurrences_written: int = 0  # CO_OCCURS rows written (one per entity pair and group)
    cooccurrences_pruned: int = 0  # CO_OCCURS left without a supporting chunk, deleted
    notes_written: int = 0  # documents written with their note structure (folders, tags, links)
    entities_refused: int = 0
    relations_refused: int = 0
    refused_by_reason: dict[str, int] = field(default_factory=dict)
    refused_examples: list[str] = field(default_factory=list)
    properties_dropped: int = 0
    relations_pruned: int = 0
    entities_pruned: int = 0
    relations_removed_by_ontology: int = 0  # stored relationships of rewritten documents the ontology refuses
    entities_removed_by_ontology: int = 0  # stored entities of rewritten documents of a class it no longer has
    nodes_created: int = 0
    relationships_created: int = 0
    batches: int = 0
    transactions: int = 0  # committed write transactions (one per group of whole documents)
    embeddings: dict[str, Any] | None = None  # what embedding the loaded graph did (vectors.EmbedSummary)
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)  # write time per kind of rows
    ontology_path: str = ""  # the ontology the records were checked against (the configured one)
    ontology_hash: str = ""
    extraction_ontology_path: str = ""  # the ontology the extraction file says it was made with
    extraction_ontology_hash: str = ""

    @property
    def ontology_mismatch(self) -> bool:
        """The extraction was made with another ontology than the one it was checked against."""
        return bool(self.extraction_ontology_hash) and self.extraction_ontology_hash != self.ontology_hash

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Values the graph cannot hold
# ---------------------------------------------------------------------------------------------


def _unstorable_values(ext: Extraction, doc_ids: set[str]) -> list[tuple[str, str, str]]:
    """``(json path, document id, problem)`` for each value of the documents ``doc_ids`` that
    Neo4j cannot store: an integer beyond 64 bits, metadata that is not JSON or not valid Unicode.

    Entity and relation records hold text only, which the file contract checks (valid Unicode).
    """
    problems: list[tuple[str, str, str]] = []
    for i, d in enumerate(ext.documents):
        if d.id not in doc_ids:
            continue
        try:
            json.dumps(d.metadata, ensure_ascii=False, sort_keys=True).encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append((f"$.documents[{i}].metadata", d.id, f"holds text that is not valid Unicode ({exc.reason})"))
        except (TypeError, ValueError) as exc:
            problems.append((f"$.documents[{i}].metadata", d.id, f"is not JSON data ({exc})"))
    lo, hi = _INT64
    for i, c in enumerate(ext.chunks):
        if c.document_id not in doc_ids:
            continue
        for name in ("index", "start", "end"):
            value = getattr(c, name)
            if not lo <= value <= hi:
                shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:27]}..."
                problems.append((f"$.chunks[{i}].{name}", c.document_id,
                                 f"{shown} is beyond the 64-bit integers Neo4j stores"))  # fmt: skip
    return problems


def _unstorable_error(source: str, problems: list[tuple[str, str, str]]) -> ExtractionFileError:
    lines = [f"  {where} (document {_shown(doc)}): {what}" for where, doc, what in problems[:10]]
    if len(problems) > 10:
        lines.append(f"  ... and {len(problems) - 10} more")
    return ExtractionFileError(
        f"{source}: {len(problems)} value(s) cannot be stored in Neo4j; nothing was written:\n" + "\n".join(lines)
        + "\nFix the file or produce it again with `graphrag-got extract`, then load again."
    )


# ---------------------------------------------------------------------------------------------
# Groups: whole documents per write transaction
# ---------------------------------------------------------------------------------------------


class _Support:
    """Which planned entity and relation rows each document supports (through its chunks)."""

    def __init__(self, ext: Extraction, plan: _Plan):
        self.chunk_doc = ext.chunk_documents()
        self.chunks: dict[str, list[ChunkRecord]] = defaultdict(list)
        for c in ext.chunks:
            self.chunks[c.document_id].append(c)
        self.entities: dict[str, list[str]] = defaultdict(list)
        self.unsupported_entities: list[str] = []
        for uid, row in plan.entities.items():
            for d in row["doc_ids"]:
                self.entities[d].append(uid)
            if not row["doc_ids"]:
                self.unsupported_entities.append(uid)
        self.relations: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
        self.unsupported_relations: list[tuple[Any, ...]] = []
        for key, row in plan.relations.items():
            for d in row["doc_ids"]:
                self.relations[d].append(key)
            if not row["doc_ids"]:
                self.unsupported_relations.append(key)
        self.cooccurrences: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for pair, row in plan.cooccurrences.items():
            for d in row["doc_ids"]:
                self.cooccurrences[d].append(pair)
        self.notes = {d.id: d for d in ext.documents if d.note is not None}

    def weight(self, doc_id: str) -> int:
        """Rows one document writes, about: chunks, entities and their mentions, relations,
        co-occurrences, note structure."""
        doc = self.notes.get(doc_id)
        note = doc.note if doc is not None else None
        note_rows = 1 + len(note.tags) + len(note.folder_tags) + len(note.links) if note is not None else 0
        return (1 + len(self.chunks[doc_id]) + 2 * len(self.entities[doc_id]) + len(self.relations[doc_id])
                + len(self.cooccurrences[doc_id]) + note_rows)  # fmt: skip


@dataclass
class _Group:
    """Documents written (or removed) by one transaction."""

    write: list[DocumentRecord] = field(default_factory=list)  # new or changed documents
    strip: list[str] = field(default_factory=list)  # stored versions removed first (changed or missing)
    delete: list[str] = field(default_factory=list)  # missing from the extraction: removed for good
    first: bool = False  # also writes the rows no chunk supports
    #: per stripped document, element ids of the stored entities and relations it supports
    touched: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    weight: int = 0

    @property
    def documents(self) -> list[str]:
        return [d.id for d in self.write] + list(self.delete)

    def split(self) -> list["_Group"]:
        """One group per document (to find the one whose writes fail)."""
        stripped = set(self.strip)
        parts = [_Group(write=[d], strip=[d.id] if d.id in stripped else [],
                        touched={d.id: self.touched[d.id]} if d.id in self.touched else {})
                 for d in self.write]  # fmt: skip
        parts += [_Group(strip=[d], delete=[d], touched={d: self.touched[d]} if d in self.touched else {})
                  for d in self.delete]  # fmt: skip
        firsts = [p for p in parts if p.write]
        if self.first and firsts:
            firsts[0].first = True
        return parts

    def touched_ids(self) -> tuple[list[str], list[str]]:
        entities = list(dict.fromkeys(i for ents, _ in self.touched.values() for i in ents))
        relations = list(dict.fromkeys(i for _, rels in self.touched.values() for i in rels))
        return entities, relations


def _groups(write: list[DocumentRecord], changed: set[str], missing: list[str], support: _Support,
            touched: dict[str, tuple[list[str], list[str]]], max_rows: int) -> list[_Group]:
    """Cut the work into groups of whole documents of about ``max_rows`` rows: removed documents
    first, then the documents to write in file order."""
    groups: list[_Group] = []
    current = _Group()

    def add(doc: DocumentRecord | None, doc_id: str, weight: int) -> None:
        nonlocal current
        if current.weight and current.weight + weight > max_rows:
            groups.append(current)
            current = _Group()
        if doc is None:
            current.strip.append(doc_id)
            current.delete.append(doc_id)
        else:
            current.write.append(doc)
            if doc_id in changed:
                current.strip.append(doc_id)
        if doc_id in touched:
            current.touched[doc_id] = touched[doc_id]
        current.weight += weight

    for doc_id in missing:
        ents, rels = touched.get(doc_id, ([], []))
        add(None, doc_id, 1 + len(ents) + len(rels))
    if current.weight:  # removals do not share a transaction with writes
        groups.append(current)
        current = _Group()
    for doc in write:
        ents, rels = touched.get(doc.id, ([], []))
        add(doc, doc.id, support.weight(doc.id) + len(ents) + len(rels))
    if current.weight:
        groups.append(current)
    firsts = [g for g in groups if g.write]
    if firsts:
        firsts[0].first = True
    return groups


@dataclass
class _Rows:
    """The rows one group writes, computed before its transaction (a retry reuses them)."""

    documents: list[dict[str, Any]] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)
    entities: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # label -> full rows
    provenance: list[dict[str, Any]] = field(default_factory=list)  # {uid, chunk_ids, doc_ids}
    mentions: list[dict[str, Any]] = field(default_factory=list)
    relations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)  # type -> rows
    relation_keys: list[tuple[Any, ...]] = field(default_factory=list)  # (key, reversed) per row
    finalize: list[dict[str, Any]] = field(default_factory=list)
    new_uids: set[str] = field(default_factory=set)
    cooccurrences: list[dict[str, Any]] = field(default_factory=list)
    notes: notes_graph.NoteRows = field(default_factory=notes_graph.NoteRows)


def _restricted(row: dict[str, Any], docs: set[str], chunk_doc: dict[str, str]) -> dict[str, Any]:
    """``row`` with only the provenance (and evidence) of ``docs``."""
    out = {**row, "chunk_ids": [c for c in row["chunk_ids"] if chunk_doc[c] in docs],
           "doc_ids": [d for d in row["doc_ids"] if d in docs]}  # fmt: skip
    if "evidence_chunk_ids" in row:
        pairs = [(t, c) for t, c in zip(row["evidence"], row["evidence_chunk_ids"]) if chunk_doc[c] in docs]
        out["evidence"], out["evidence_chunk_ids"] = [t for t, _ in pairs], [c for _, c in pairs]
    return out


def _group_rows(g: _Group, plan: _Plan, support: _Support, written: set[str], ontology_hash: str) -> _Rows:
    """What ``g`` writes. ``written`` holds the uids already written by earlier groups: those get
    only their new provenance."""
    rows = _Rows()
    if not g.write:
        return rows
    docs = {d.id for d in g.write}
    chunk_doc = support.chunk_doc
    rows.documents = [{"id": d.id, "path": d.path, "metadata": json.dumps(d.metadata, ensure_ascii=False,
                                                                           sort_keys=True)} for d in g.write]  # fmt: skip
    rows.chunks = [c.model_dump() for d in g.write for c in support.chunks[d.id]]
    rows.finalize = [{"id": d.id, "hash": d.hash, "ontology_hash": ontology_hash} for d in g.write]

    rel_keys = list(dict.fromkeys(k for d in g.write for k in support.relations[d.id]))
    if g.first:
        rel_keys += support.unsupported_relations
    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    ends: set[str] = set()
    for key in rel_keys:
        row = _restricted(plan.relations[key], docs, chunk_doc)
        by_type[row["type"]].append(row)
        rows.relation_keys.append((key, False))
        ends.update((row["start"], row["end"]))
        if row["symmetric"] and row["start"] != row["end"]:
            by_type[row["type"]].append({**row, "start": row["end"], "end": row["start"]})
            rows.relation_keys.append((key, True))
    rows.relations = {t: by_type[t] for t in sorted(by_type)}

    supported = set(uid for d in g.write for uid in support.entities[d.id])
    if g.first:
        supported.update(support.unsupported_entities)
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for uid in sorted(supported | (ends - written)):  # relation ends must exist first
        row = _restricted(plan.entities[uid], docs, chunk_doc)
        if uid in written:
            rows.provenance.append({"uid": uid, "chunk_ids": row["chunk_ids"], "doc_ids": row["doc_ids"]})
        else:
            by_label[row["type"]].append(row)
            rows.new_uids.add(uid)
        conf = plan.confidence.get(uid, {})
        rows.mentions.extend({"chunk_id": cid, "uid": uid, "weight": conf.get(cid, 1.0)} for cid in row["chunk_ids"])
    rows.entities = {label: by_label[label] for label in sorted(by_label)}
    for pair in dict.fromkeys(p for d in g.write for p in support.cooccurrences[d.id]):
        full = plan.cooccurrences[pair]
        kept = [(c, w) for c, w in zip(full["chunk_ids"], full["chunk_weights"]) if chunk_doc[c] in docs]
        rows.cooccurrences.append({"start": full["start"], "end": full["end"], "chunk_ids": [c for c, _ in kept],
                                   "chunk_weights": [w for _, w in kept],
                                   "doc_ids": [d for d in full["doc_ids"] if d in docs]})  # fmt: skip
    rows.notes = notes_graph.note_rows(g.write)
    return rows


# ---------------------------------------------------------------------------------------------
# Writing one group in one transaction
# ---------------------------------------------------------------------------------------------


@dataclass
class _TxResult:
    """What one group transaction did; added to the summary only once it committed."""

    batches: int = 0
    nodes_created: int = 0
    relationships_created: int = 0
    relations_written: int = 0
    relations_pruned: int = 0
    entities_pruned: int = 0
    relations_removed: int = 0
    entities_removed: int = 0
    cooccurrences_written: int = 0
    cooccurrences_pruned: int = 0
    deleted_uids: set[str] = field(default_factory=set)
    phase_seconds: Counter[str] = field(default_factory=Counter)


class _Tx:
    """Runs ``UNWIND $rows`` queries in batches inside one transaction."""

    def __init__(self, tx: neo4j.ManagedTransaction, batch_size: int, phase: list[str]):
        self.tx = tx
        self.batch_size = batch_size
        self.phase = phase  # what is being written: named by the error if the transaction fails
        self.result = _TxResult()

    def write(self, query: str, rows: list[dict[str, Any]], kind: str) -> list[neo4j.Record]:
        if not rows:
            return []
        self.phase[0] = kind
        t0 = time.perf_counter()
        records: list[neo4j.Record] = []
        res = self.result
        for lo in range(0, len(rows), self.batch_size):
            result = self.tx.run(query, rows=rows[lo : lo + self.batch_size])
            records.extend(result)
            counters = result.consume().counters
            res.batches += 1
            res.nodes_created += counters.nodes_created
            res.relationships_created += counters.relationships_created
            if kind == "prune relations":
                res.relations_pruned += counters.relationships_deleted
            elif kind == "prune entities":
                res.entities_pruned += counters.nodes_deleted
            elif kind == "remove refused relations":
                res.relations_removed += counters.relationships_deleted
            elif kind == "remove refused entities":
                res.entities_removed += counters.nodes_deleted
            elif kind == "prune co-occurrences":
                res.cooccurrences_pruned += counters.relationships_deleted
        res.phase_seconds[kind] += time.perf_counter() - t0
        return records

    def read(self, query: str, **params: Any) -> list[neo4j.Record]:
        self.phase[0] = "reads"
        t0 = time.perf_counter()
        records = list(self.tx.run(query, **params))
        self.result.phase_seconds["reads"] += time.perf_counter() - t0
        return records


def _entity_allowed(onto: Ontology, labels: list[str]) -> bool:
    return any(label in onto.classes for label in labels)


def _relation_allowed(onto: Ontology, rtype: str, start_labels: list[str], end_labels: list[str]) -> bool:
    """The same rule as the ``stats`` check (:func:`cypher.ontology_violations`)."""
    rel = onto.relation(rtype)
    if rel is None:
        return False

    def fits(a: list[str], b: list[str]) -> bool:
        return any(x in rel.domain for x in a) and any(x in rel.range for x in b)

    return fits(start_labels, end_labels) or (rel.symmetric and fits(end_labels, start_labels))


@dataclass
class _Stripped:
    """What removing the stored version of documents touched: pruned once the new one is written."""

    entities: list[dict[str, str]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)
    cooccurrences: list[dict[str, str]] = field(default_factory=list)
    notes: notes_graph.Touched = field(default_factory=notes_graph.Touched)


def _strip(t: _Tx, g: _Group, onto: Ontology) -> _Stripped:
    """Remove the stored version of ``g.strip``: its chunks, its ids on entities, relations and
    co-occurrences, its note structure, what of it the current ontology refuses, and the documents
    missing from the extraction. Returns what it touched, to prune once the new version is written."""
    stripped = set(g.strip)
    gone = {rec["id"] for rec in t.read(cypher.chunks_of_documents(), doc_ids=g.strip)}

    def keep(cid: str) -> bool:
        # chunk ids are "<document id>:<hash prefix>"; the prefix test also catches chunk ids whose
        # Chunk node is missing (a load older than the one-transaction rule)
        return cid not in gone and cid.rpartition(":")[0] not in stripped

    entity_ids, relation_ids = g.touched_ids()
    ents = t.read(cypher.entities_by_ids(), ids=entity_ids, doc_ids=g.strip) if entity_ids else []
    rels = t.read(cypher.relations_by_ids(), ids=relation_ids, doc_ids=g.strip) if relation_ids else []
    co_ids = [r["id"] for r in rels if r["type"] == cypher.CO_OCCURS]  # not an ontology relation
    rels = [r for r in rels if r["type"] != cypher.CO_OCCURS]
    cos = t.read(cypher.cooccurrences_by_ids(), ids=co_ids, doc_ids=g.strip) if co_ids else []

    def unlinked(rec: neo4j.Record) -> dict[str, Any]:
        row = {"id": rec["id"], "chunk_ids": [c for c in rec["chunk_ids"] or [] if keep(c)],
               "doc_ids": [d for d in rec["doc_ids"] or [] if d not in stripped]}  # fmt: skip
        if "evidence" in rec.keys():  # a relation: drop the evidence sentences of the removed chunks
            pairs = [(t, c) for t, c in zip(rec["evidence"] or [], rec["evidence_chunk_ids"] or []) if keep(c)]
            row["evidence"], row["evidence_chunk_ids"] = [t for t, _ in pairs], [c for _, c in pairs]
        return row

    refused_rels = [{"id": r["id"], "type": r["type"]} for r in rels
                    if not _relation_allowed(onto, r["type"], r["start_labels"], r["end_labels"])]  # fmt: skip
    refused_ents = [{"id": e["id"], "uid": e["uid"]} for e in ents if not _entity_allowed(onto, e["labels"])]
    skip = {r["id"] for r in refused_rels} | {e["id"] for e in refused_ents}
    kept_ents = [unlinked(e) for e in ents if e["id"] not in skip]
    kept_rels = [unlinked(r) for r in rels if r["id"] not in skip]
    t.write(cypher.set_entity_provenance(), kept_ents, "unlink entities")
    t.write(cypher.set_relation_provenance(), kept_rels, "unlink relations")
    kept_cos = []
    for rec in cos:
        pairs = [(c, w) for c, w in zip(rec["chunk_ids"] or [], rec["chunk_weights"] or []) if keep(c)]
        kept_cos.append({"id": rec["id"], "chunk_ids": [c for c, _ in pairs], "chunk_weights": [w for _, w in pairs],
                         "doc_ids": [d for d in rec["doc_ids"] or [] if d not in stripped]})  # fmt: skip
    t.write(cypher.set_cooccurrence_provenance(), kept_cos, "unlink co-occurrences")
    notes = notes_graph.strip_notes(t.write, t.read, g.strip, g.delete)
    t.write(cypher.delete_relations(), refused_rels, "remove refused relations")
    for rec in t.write(cypher.delete_entities(), refused_ents, "remove refused entities"):
        t.result.deleted_uids.add(rec["uid"])
    t.write(cypher.delete_chunks(), [{"id": c} for c in sorted(gone)], "delete chunks")
    t.write(cypher.delete_documents(), [{"id": d} for d in g.delete], "delete documents")
    return _Stripped([{"id": e["id"]} for e in kept_ents], [{"id": r["id"]} for r in kept_rels],
                     [{"id": c["id"]} for c in kept_cos], notes)  # fmt: skip


def _write_group(tx: neo4j.ManagedTransaction, g: _Group, rows: _Rows, onto: Ontology,
                 identity: tuple[str, ...], batch_size: int, phase: list[str]) -> _TxResult:
    """Everything of the documents of ``g``, in the transaction ``tx`` (a managed one: the driver
    may call this again after a transient error, so it changes nothing outside ``tx``)."""
    t = _Tx(tx, batch_size, phase)
    stripped = _strip(t, g, onto) if g.strip else _Stripped()
    if g.write:
        t.write(cypher.merge_documents(), rows.documents, "documents")
        t.write(cypher.merge_chunks(), rows.chunks, "chunks")
        for label, ents in rows.entities.items():
            t.write(cypher.merge_entities(label), ents, "entities")
        t.write(cypher.add_entity_provenance(), rows.provenance, "entity provenance")
        t.write(cypher.merge_mentions(), rows.mentions, "mentions")
        for rtype, rels in rows.relations.items():
            recs = t.write(cypher.merge_relations(rtype, identity), rels, "relations")
            t.result.relations_written += sum(int(r["written"]) for r in recs)
        recs = t.write(cypher.merge_cooccurrences(), rows.cooccurrences, "co-occurrences")
        t.result.cooccurrences_written += sum(int(r["written"]) for r in recs)
        stripped.notes.update(notes_graph.write_notes(t.write, rows.notes))
    notes_graph.prune_notes(t.write, stripped.notes)
    t.write(cypher.prune_relations(), stripped.cooccurrences, "prune co-occurrences")
    t.write(cypher.prune_relations(), stripped.relations, "prune relations")
    for rec in t.write(cypher.prune_entities(), stripped.entities, "prune entities"):
        t.result.deleted_uids.add(rec["uid"])
    t.write(cypher.finalize_documents(), rows.finalize, "finalize documents")
    return t.result


def _one_line(text: object, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _shown(doc_id: str) -> str:
    """A document id for a message (a hostile one can be kilobytes long)."""
    return repr(doc_id) if len(doc_id) <= 80 else f"{doc_id[:60]!r}... ({len(doc_id)} characters)"


def _write_error(source: str, g: _Group, exc: BaseException, phase: str) -> GraphragGotError:
    """One clear line for a group of one document whose transaction failed."""
    doc = _shown(g.documents[0]) if g.documents else "?"
    doing = "removing it" if g.delete else f"writing its {phase}" if phase else "writing it"
    resume = ("Documents before it are loaded and nothing of this one was written (its transaction was "
              "rolled back)")  # fmt: skip
    if isinstance(exc, neo4j.exceptions.Neo4jError):
        return Neo4jError(
            f"{source}: document {doc}: Neo4j refused {doing} ({exc.code}: {_one_line(exc.message or exc)}). "
            f"{resume}. Fix that document (a shorter id, name or value) and run the load again to resume."
        )
    if isinstance(exc, neo4j.exceptions.DriverError):
        return Neo4jError(f"{source}: document {doc}: {doing} failed ({type(exc).__name__}: {_one_line(exc)}). "
                          f"{resume}. Run the load again to resume.")  # fmt: skip
    return ExtractionFileError(
        f"{source}: document {doc}: a value of its {phase or 'rows'} cannot be sent to Neo4j "
        f"({type(exc).__name__}: {_one_line(exc)}). {resume}. Fix that value in the file (or produce the file "
        "again with `graphrag-got extract`) and load again."
    )


def _merge(summary: LoadSummary, res: _TxResult) -> None:
    summary.batches += res.batches
    summary.nodes_created += res.nodes_created
    summary.relationships_created += res.relationships_created
    summary.relations_pruned += res.relations_pruned
    summary.entities_pruned += res.entities_pruned
    summary.cooccurrences_written += res.cooccurrences_written
    summary.cooccurrences_pruned += res.cooccurrences_pruned
    summary.relations_removed_by_ontology += res.relations_removed
    summary.entities_removed_by_ontology += res.entities_removed
    for kind, secs in res.phase_seconds.items():
        summary.phase_seconds[kind] = round(summary.phase_seconds.get(kind, 0.0) + secs, 3)


# ---------------------------------------------------------------------------------------------
# Loading
# ---------------------------------------------------------------------------------------------


def _read(session: neo4j.Session, query: str, **params: Any) -> list[neo4j.Record]:
    try:
        return session.execute_read(lambda tx: list(tx.run(query, **params)))
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"reading the graph failed: {_one_line(exc)}") from exc


def ensure_schema(session: neo4j.Session, class_labels: Iterable[str]) -> None:
    """Create the constraints and indexes (idempotent) and wait for them to be online."""
    try:
        for stmt in [*cypher.create_constraints(list(class_labels)), *notes_graph.schema_statements()]:
            session.run(stmt).consume()
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
        rows = _read(session, cypher.relation_attribute_index_definition(), name=cypher.RELATION_ATTRIBUTE_INDEX)
        if rows and (sorted(rows[0]["types"]) != types or sorted(rows[0]["properties"]) != attributes
                     or not attributes):
            session.run(cypher.drop_relation_attribute_index()).consume()
            logger.info("relation attribute index dropped: the ontology's relations or attributes changed")
        if attributes:
            session.run(cypher.relation_attribute_index(types, attributes)).consume()
            session.run(cypher.await_indexes()).consume()
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"creating the relation attribute index failed: {exc}") from exc


def _touched(session: neo4j.Session, doc_ids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """Per document of ``doc_ids``: element ids of the stored entities and relations it supports."""
    wanted = set(doc_ids)
    out: dict[str, tuple[list[str], list[str]]] = {d: ([], []) for d in doc_ids}
    for slot, query in ((0, cypher.entities_of_documents()), (1, cypher.relations_of_documents())):
        for rec in _read(session, query, doc_ids=doc_ids):
            for d in set(rec["doc_ids"] or []) & wanted:
                out[d][slot].append(rec["id"])
    return out


def _check_ontology_of(ext: Extraction, onto: Ontology, source: str, summary: LoadSummary) -> None:
    summary.ontology_path, summary.ontology_hash = onto.source, onto.hash
    summary.extraction_ontology_path, summary.extraction_ontology_hash = ext.ontology.path, ext.ontology.hash
    if summary.ontology_mismatch:
        logger.warning(
            "%s was extracted with the ontology %s (hash %s), not with the configured %s (hash %s): every "
            "record is checked again against the configured one; what it refuses is not loaded",
            source, ext.ontology.path or "?", ext.ontology.hash[:12], onto.source, onto.hash[:12],
        )  # fmt: skip


def load_extraction(
    driver: neo4j.Driver,
    settings: Settings,
    extraction: Extraction | dict[str, Any] | str | Path,
    ontology: Any,
    *,
    progress: ProgressCallback | None = None,
    embed: bool | None = None,
    embedder: Any = None,
) -> LoadSummary:
    """Load ``extraction`` (an ``Extraction``, a dict or an ``extraction.json`` path) into the graph.

    ``ontology`` is the current ``Ontology`` (or a path to it); rows it does not allow are refused
    and counted in the summary. See the module docstring for the incremental and transaction rules.
    Raises ``ExtractionFileError`` for a bad file or a value the graph cannot hold, ``Neo4jError``
    when the server refuses a write (naming the document; documents before it are loaded whole).

    Then, with ``embed`` (default ``settings.embeddings``), the chunks and entities whose text changed
    are embedded and the vector indexes created (:func:`graphrag_got.graph.vectors.embed_graph`; its
    summary is ``LoadSummary.embeddings``).
    """
    summary = _load(driver, settings, extraction, ontology, progress=progress)
    if settings.embeddings if embed is None else embed:
        from graphrag_got.graph.vectors import embed_graph

        summary.embeddings = embed_graph(driver, settings, embedder, progress=progress).as_dict()
    return summary


def _load(driver: neo4j.Driver, settings: Settings, extraction: Extraction | dict[str, Any] | str | Path,
          ontology: Any, *, progress: ProgressCallback | None = None) -> LoadSummary:
    t0 = time.perf_counter()
    with _gc_paused():
        ext, source = read_extraction(extraction)
        onto = _ontology(ontology)
        plan = _plan(ext, onto, cooccurrence_max=settings.cooccurrence_max_entities if settings.cooccurrence else None)
    summary = LoadSummary(source=source, properties_dropped=plan.properties_dropped)
    summary.refused_by_reason = dict(plan.refused)
    summary.refused_examples = list(plan.refused_examples)
    summary.entities_refused = plan.entities_refused
    summary.relations_refused = plan.relations_refused
    _check_ontology_of(ext, onto, source, summary)
    identity = identity_attributes(onto)

    try:
        # The loader's queries are fixed and tested; server notifications such as "property `hash`
        # does not exist yet" on a fresh database would only be noise in the command's output.
        session = driver.session(
            database=settings.neo4j_database, notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF
        )
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"cannot open a Neo4j session: {exc}") from exc
    with session:
        ensure_schema(session, sorted(onto.classes))
        ensure_attribute_index(session, onto)
        stored = {rec["id"]: (rec["hash"], rec["ontology_hash"]) for rec in _read(session, cypher.existing_documents())}
        new_docs = [d for d in ext.documents if d.id not in stored]
        changed = [d for d in ext.documents if d.id in stored and stored[d.id] != (d.hash, onto.hash)]
        in_file = {d.id for d in ext.documents}
        missing = sorted(set(stored) - in_file)
        summary.documents_added, summary.documents_updated = len(new_docs), len(changed)
        summary.documents_reloaded_for_ontology = sum(stored[d.id][0] == d.hash for d in changed)
        summary.documents_unchanged = len(ext.documents) - len(new_docs) - len(changed)
        summary.documents_pruned = len(missing)
        logger.info("%s: %d new, %d changed (%d for the ontology), %d unchanged, %d removed document(s)", source,
                    len(new_docs), len(changed), summary.documents_reloaded_for_ontology,
                    summary.documents_unchanged, len(missing))  # fmt: skip

        to_write_ids = {d.id for d in new_docs} | {d.id for d in changed}
        problems = _unstorable_values(ext, to_write_ids)
        if problems:
            raise _unstorable_error(source, problems)
        to_write = [d for d in ext.documents if d.id in to_write_ids]
        if not to_write and not missing:
            summary.seconds = round(time.perf_counter() - t0, 3)
            return summary
        changed_ids = {d.id for d in changed}
        with _gc_paused():
            support = _Support(ext, plan)
        touched = _touched(session, sorted(changed_ids) + missing) if changed_ids or missing else {}
        groups = _groups(to_write, changed_ids, missing, support, touched, GROUP_BATCHES * settings.batch_size)
        _run_groups(session, groups, plan, support, onto, identity, settings.batch_size, summary, source, progress)

    summary.seconds = round(time.perf_counter() - t0, 3)
    return summary


def _run_groups(session: neo4j.Session, groups: list[_Group], plan: _Plan, support: _Support, onto: Ontology,
                identity: tuple[str, ...], batch_size: int, summary: LoadSummary, source: str,
                progress: ProgressCallback | None) -> None:  # fmt: skip
    """Commit the groups one transaction each; split a failing group into its documents."""
    total = sum(len(g.documents) for g in groups)
    done = 0
    written: set[str] = set()  # uids written in full by this load
    counted: set[tuple[Any, ...]] = set()  # relation rows counted in relations_written
    queue = deque(groups)
    while queue:
        g = queue.popleft()
        rows = _group_rows(g, plan, support, written, onto.hash)
        phase = [""]
        try:
            res = session.execute_write(_write_group, g, rows, onto, identity, batch_size, phase)
        except _CONNECTION_ERRORS as exc:
            raise Neo4jError(
                f"{source}: lost the connection to Neo4j while writing document(s) {', '.join(map(_shown, g.documents[:3]))}"
                f"{' ...' if len(g.documents) > 3 else ''} ({_one_line(exc)}). Documents before them are loaded; "
                "start the server again and run the load again to resume."
            ) from exc
        except _WRITE_ERRORS as exc:
            if len(g.documents) > 1:
                logger.info("a transaction of %d documents failed (%s); writing them one by one",
                            len(g.documents), _one_line(exc, 200))  # fmt: skip
                queue.extendleft(reversed(g.split()))
                continue
            raise _write_error(source, g, exc, phase[0]) from exc
        summary.transactions += 1
        _merge(summary, res)
        written |= rows.new_uids
        written -= res.deleted_uids
        summary.chunks_written += len(rows.chunks)
        summary.entities_written += len(rows.new_uids)
        summary.mentions_written += len(rows.mentions)
        summary.notes_written += len(rows.notes.properties)
        n_rows = len(rows.relation_keys)
        repeats = sum(k in counted for k in rows.relation_keys)
        counted.update(rows.relation_keys)
        summary.relations_written += max(res.relations_written - repeats, 0)
        summary.relations_unmatched += n_rows - res.relations_written
        done += len(g.documents)
        if progress:
            progress(ProgressEvent(step="load", done=done, total=total, message=_one_line(", ".join(g.documents), 60),
                                   stats={"transactions": summary.transactions, "batches": summary.batches}))  # fmt: skip
    if progress and groups:
        progress(ProgressEvent(step="load", done=done, total=total, finished=True,
                               stats={"transactions": summary.transactions, "batches": summary.batches}))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def graph_stats(driver: neo4j.Driver, settings: Settings, ontology: Any) -> dict[str, Any]:
    """Counts of the loaded graph and its consistency checks against ``ontology``.

    ``missing_symmetric``, ``violations`` (relationships the ontology refuses) and
    ``entity_violations`` (entities of no class of the ontology) should all be 0 after a load
    under that ontology. Rows a load under an earlier ontology left are counted there, never an
    error: the next load rewrites their documents (the ontology changed) and removes them.
    """
    onto = _ontology(ontology)
    rules = [
        {"type": r.name, "domain": sorted(r.domain), "range": sorted(r.range), "symmetric": r.symmetric}
        for r in onto.relations
    ]
    symmetric = [r.name for r in onto.relations if r.symmetric]
    identity = list(identity_attributes(onto))

    def read(query: str, **params: Any) -> list[neo4j.Record]:
        try:
            with driver.session(
                database=settings.neo4j_database, notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF
            ) as s:
                return s.execute_read(lambda tx: list(tx.run(query, **params)))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"reading graph statistics failed: {_one_line(exc)}") from exc

    nodes = {r["label"]: r["count"] for r in read(cypher.count_nodes_by_label())}
    rels = {r["type"]: r["count"] for r in read(cypher.count_relations_by_type())}
    missing = {r["type"]: r["count"] for r in read(cypher.missing_symmetric_directions(), types=symmetric, identity=identity)}
    violations = {f"{r['type']}:{r['reason']}": r["count"] for r in read(cypher.ontology_violations(), rules=rules)}
    entity_violations = {f"{r['type'] or '?'}:unknown_class": r["count"]
                         for r in read(cypher.entity_violations(), classes=sorted(onto.classes))}  # fmt: skip
    orphans = read(cypher.orphan_entities())[0]["count"]
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
    }
