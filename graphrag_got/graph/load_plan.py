"""Planning a load, in Python, before touching the database.

:func:`build_plan` takes the records of an :class:`~graphrag_got.extract.extraction.Extraction` under
the current ontology (:mod:`graphrag_got.extract.recheck`: trusted when ``extract`` sealed them under it,
else checked again by the extraction's validator and merged by its aggregation) and turns each into
typed load rows (:class:`EntityRow`, :class:`RelationRow`, :class:`CooccurrenceRow`) held by a
:class:`Plan`. :class:`Support` indexes which rows each document supports, :func:`plan_groups` cuts
the documents into groups (:class:`Group`) of whole documents (one write transaction each) and
:func:`group_rows` computes the :class:`Rows` one group writes. The writing itself is
:mod:`graphrag_got.graph.load_write`; the load as a whole, :mod:`graphrag_got.graph.load`.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict, TypeVar

from graphrag_got.errors import OntologyError
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, Extraction, Rejection
from graphrag_got.extract.recheck import file_records
from graphrag_got.extract.validate import Validator
from graphrag_got.extract.aggregate import identity_attributes
from graphrag_got.graph import cypher
from graphrag_got.graph import notes as notes_graph
from graphrag_got.ontology.loading import load_ontology
from graphrag_got.ontology.model import Ontology

if TYPE_CHECKING:  # load_digest reads the Plan defined here
    from graphrag_got.graph.load_digest import Digests

# ---------------------------------------------------------------------------------------------
# The ontology the graph is written under
# ---------------------------------------------------------------------------------------------


def graph_ontology(ontology: Ontology | str | Path) -> Ontology:
    """The current ontology (an instance or a path); its names are checked again for the graph."""
    onto = load_ontology(ontology)
    for name in [*onto.classes, *(r.name for r in onto.relations), *onto.relation_attributes]:
        try:
            cypher.escape_name(name)
        except ValueError as exc:  # the ontology module checks this too; never trust it blindly
            raise OntologyError(f"ontology name refused for the graph: {exc}") from None
    return onto


# ---------------------------------------------------------------------------------------------
# Typed load rows (plain dicts at run time: they are the query parameters)
# ---------------------------------------------------------------------------------------------


class EntityRow(TypedDict):
    """One entity to write (:func:`~graphrag_got.graph.load_cypher.merge_entities`); ``properties``
    holds no nulls; ``chunk_ids``/``doc_ids`` are its provenance (restricted to a group's documents
    when written); ``record_hash``, the digest of its own fields, is added when it is written."""

    uid: str
    key: str
    name: str
    type: str
    properties: dict[str, Any]
    chunk_ids: list[str]
    aliases: list[str]
    doc_ids: list[str]
    record_hash: NotRequired[str]


class RelationRow(TypedDict):
    """One relation to write (:func:`~graphrag_got.graph.load_cypher.merge_relations`): canonical ends
    (a symmetric one in sorted-uid order; the reverse row is added when written), identity attribute
    values, the other attributes, provenance and the evidence sentences with their chunks (aligned)."""

    start: str
    end: str
    type: str
    identity: dict[str, Any]
    attributes: dict[str, Any]
    symmetric: bool
    chunk_ids: list[str]
    evidence: list[str]
    evidence_chunk_ids: list[str]
    doc_ids: list[str]


class CooccurrenceRow(TypedDict):
    """One ``CO_OCCURS`` pair (``start`` < ``end``) with its chunks, the weight in each (aligned) and
    its documents (:func:`~graphrag_got.graph.load_cypher.merge_cooccurrences`)."""

    start: str
    end: str
    chunk_ids: list[str]
    chunk_weights: list[float]
    doc_ids: list[str]


class MentionRow(TypedDict):
    """``(:Chunk)-[:MENTIONS {weight}]->(:Entity)`` (:func:`~graphrag_got.graph.load_cypher.merge_mentions`)."""

    chunk_id: str
    uid: str
    weight: float


class DocumentRow(TypedDict):
    """A document node (:func:`~graphrag_got.graph.load_cypher.merge_documents`); ``metadata`` as JSON text."""

    id: str
    path: str
    metadata: str


class FinalizeRow(TypedDict):
    """A document's hashes, set last (:func:`~graphrag_got.graph.load_cypher.finalize_documents`):
    its text, the ontology and its records (:func:`~graphrag_got.graph.load_digest.record_digests`)."""

    id: str
    hash: str
    ontology_hash: str
    records_hash: str
    rootless_hash: str


class ProvenanceRow(TypedDict):
    """More provenance for an entity an earlier group wrote
    (:func:`~graphrag_got.graph.load_cypher.add_entity_provenance`)."""

    uid: str
    chunk_ids: list[str]
    doc_ids: list[str]


#: A relation key in the plan: (start uid, type, end uid, identity attribute values).
RelationKey = tuple[Any, ...]
_Row = TypeVar("_Row", EntityRow, RelationRow)


# ---------------------------------------------------------------------------------------------
# Planning: what to write
# ---------------------------------------------------------------------------------------------


@dataclass
class Plan:
    """The rows an extraction writes (before they are cut into groups) and what was refused."""

    entities: dict[str, EntityRow]  # uid -> row (accepted only)
    relations: dict[RelationKey, RelationRow]  # (start, type, end, identity values) canonical
    refused: Counter[str] = field(default_factory=Counter)
    refused_examples: list[str] = field(default_factory=list)
    entities_refused: int = 0
    relations_refused: int = 0
    properties_dropped: int = 0
    #: uid -> {chunk id: the model's confidence in that mention} (accepted entities only)
    confidence: dict[str, dict[str, float]] = field(default_factory=dict)
    #: (start uid, end uid), start < end -> its row
    cooccurrences: dict[tuple[str, str], CooccurrenceRow] = field(default_factory=dict)
    #: evidence whose text is not the chunk's text at its offsets: not stored, one audit record each
    evidence_refusals: list[dict[str, Any]] = field(default_factory=list)
    trusted: bool = False  # the records were sealed by extract under this ontology: not validated again
    why_checked: str = ""  # else why they were checked again


def _refuse(plan: Plan, rejection: Rejection, where: str) -> None:
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


def build_plan(ext: Extraction, onto: Ontology, *, validator: Validator | None = None,
               cooccurrence_max: int | None = None) -> Plan:
    """The rows to write: the file's records under the current ontology
    (:func:`~graphrag_got.extract.recheck.file_records`: trusted as ``extract`` sealed them, else checked
    again with ``validator``, the extraction's validator for ``onto``, and merged), one row per record.
    ``cooccurrence_max``: most entities per chunk joined by CO_OCCURS (None: no co-occurrence)."""
    records = file_records(ext, onto, validator)
    identity = identity_attributes(onto)
    chunk_doc = ext.chunk_documents()
    plan = Plan(entities={}, relations={}, trusted=records.trusted, why_checked=records.why_checked,
                evidence_refusals=records.evidence_refusals)
    for where, rejection in records.refusals:
        _refuse(plan, rejection, where)
    # rows are plain dicts (the query parameters); no pydantic record is built per row: that cost
    # ~0.6 ms per entity in pydantic 2.14, 60 s per 10^5 entities
    for e in records.entities:
        chunk_ids = _unique(e.chunk_ids)
        plan.confidence[e.uid] = {cid: e.confidence(cid) for cid in chunk_ids}
        plan.entities[e.uid] = {"uid": e.uid, "key": e.key, "name": e.name, "type": e.type,
                                "properties": dict(e.properties), "chunk_ids": chunk_ids, "aliases": _unique(e.aliases),
                                "doc_ids": _docs_of(chunk_ids, chunk_doc)}  # fmt: skip
    for r, key in zip(records.relations, records.relation_keys):
        start, _, end, values = key
        ident = dict(zip(identity, values))
        chunk_ids = _unique(r.chunk_ids)
        row: RelationRow = {"start": start, "end": end, "type": r.relation, "identity": ident,
                            "attributes": dict(r.attributes), "symmetric": r.symmetric, "chunk_ids": chunk_ids,
                            "evidence": [], "evidence_chunk_ids": [], "doc_ids": _docs_of(chunk_ids, chunk_doc)}
        # evidence sentences, each with the chunk it comes from (aligned lists: a document rewrite
        # drops the sentences of its old chunks, see load_write._strip)
        for ev in r.evidence:
            cid = ev.chunk_id or (r.chunk_ids[0] if r.chunk_ids else "")
            if cid in chunk_doc and ev.text not in row["evidence"]:
                row["evidence"].append(ev.text)
                row["evidence_chunk_ids"].append(cid)
        plan.relations[key] = row
    if cooccurrence_max is not None:
        plan.cooccurrences = _cooccurrences(plan, chunk_doc, cooccurrence_max)
    return plan


def _cooccurrences(plan: Plan, chunk_doc: dict[str, str], cap: int) -> dict[tuple[str, str], CooccurrenceRow]:
    """One row per pair of entities sharing a chunk. Per chunk only the ``cap`` most confident
    entities (ties by uid) are paired, so a chunk naming hundreds of entities does not write n^2
    edges; a pair's chunk weight is the lower of its two confidences."""
    by_chunk: dict[str, list[tuple[float, str]]] = defaultdict(list)
    for uid, row in plan.entities.items():
        conf = plan.confidence.get(uid, {})
        for cid in row["chunk_ids"]:
            by_chunk[cid].append((conf.get(cid, 1.0), uid))
    out: dict[tuple[str, str], CooccurrenceRow] = {}
    # a chunk of a coverage run lists up to `cap` functions: ~10^6 pairs on click; the loop body is kept lean
    for cid in sorted(by_chunk):
        ranked = sorted(by_chunk[cid], key=lambda cu: (-cu[0], cu[1]))[:cap]
        ranked.sort(key=lambda cu: cu[1])
        for (conf_a, a), (conf_b, b) in combinations(ranked, 2):
            row = out.get((a, b))
            if row is None:
                row = out[(a, b)] = {"start": a, "end": b, "chunk_ids": [], "chunk_weights": [], "doc_ids": []}
            row["chunk_ids"].append(cid)
            row["chunk_weights"].append(conf_b if conf_b < conf_a else conf_a)  # min(conf_a, conf_b)
    for row in out.values():
        row["doc_ids"] = _docs_of(row["chunk_ids"], chunk_doc)
    return out


# ---------------------------------------------------------------------------------------------
# Groups: whole documents per write transaction
# ---------------------------------------------------------------------------------------------


class Support:
    """Which planned entity and relation rows each document supports (through its chunks)."""

    def __init__(self, ext: Extraction, plan: Plan):
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
        self.relations: dict[str, list[RelationKey]] = defaultdict(list)
        self.unsupported_relations: list[RelationKey] = []
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
class Group:
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

    def split(self) -> list["Group"]:
        """One group per document (to find the one whose writes fail)."""
        stripped = set(self.strip)
        parts = [Group(write=[d], strip=[d.id] if d.id in stripped else [],
                       touched={d.id: self.touched[d.id]} if d.id in self.touched else {})
                 for d in self.write]  # fmt: skip
        parts += [Group(strip=[d], delete=[d], touched={d: self.touched[d]} if d in self.touched else {})
                  for d in self.delete]  # fmt: skip
        firsts = [p for p in parts if p.write]
        if self.first and firsts:
            firsts[0].first = True
        return parts

    def touched_ids(self) -> tuple[list[str], list[str]]:
        entities = list(dict.fromkeys(i for ents, _ in self.touched.values() for i in ents))
        relations = list(dict.fromkeys(i for _, rels in self.touched.values() for i in rels))
        return entities, relations


def plan_groups(write: list[DocumentRecord], changed: set[str], missing: list[str], support: Support,
                touched: dict[str, tuple[list[str], list[str]]], max_rows: int) -> list[Group]:
    """Cut the work into groups of whole documents of about ``max_rows`` rows: removed documents
    first, then the documents to write in file order."""
    groups: list[Group] = []
    current = Group()

    def add(doc: DocumentRecord | None, doc_id: str, weight: int) -> None:
        nonlocal current
        if current.weight and current.weight + weight > max_rows:
            groups.append(current)
            current = Group()
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
        current = Group()
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
class Rows:
    """The rows one group writes, computed before its transaction (a retry reuses them)."""

    documents: list[DocumentRow] = field(default_factory=list)
    chunks: list[dict[str, Any]] = field(default_factory=list)  # ChunkRecord.model_dump() of each chunk
    entities: dict[str, list[EntityRow]] = field(default_factory=dict)  # label -> full rows
    provenance: list[ProvenanceRow] = field(default_factory=list)  # entities written by an earlier group
    mentions: list[MentionRow] = field(default_factory=list)
    relations: dict[str, list[RelationRow]] = field(default_factory=dict)  # type -> rows
    relation_keys: list[tuple[RelationKey, bool]] = field(default_factory=list)  # (key, reversed) per row
    finalize: list[FinalizeRow] = field(default_factory=list)
    new_uids: set[str] = field(default_factory=set)
    cooccurrences: list[CooccurrenceRow] = field(default_factory=list)
    notes: notes_graph.NoteRows = field(default_factory=notes_graph.NoteRows)


def _restricted(row: _Row, docs: set[str], chunk_doc: dict[str, str]) -> _Row:
    """``row`` with only the provenance (and evidence) of ``docs``."""
    out: Any = {**row, "chunk_ids": [c for c in row["chunk_ids"] if chunk_doc[c] in docs],
                "doc_ids": [d for d in row["doc_ids"] if d in docs]}  # fmt: skip
    if "evidence_chunk_ids" in row:
        pairs = [(t, c) for t, c in zip(row["evidence"], row["evidence_chunk_ids"]) if chunk_doc[c] in docs]
        out["evidence"], out["evidence_chunk_ids"] = [t for t, _ in pairs], [c for _, c in pairs]
    return out


def group_rows(g: Group, plan: Plan, support: Support, written: set[str], ontology_hash: str,
               records: Digests) -> Rows:
    """What ``g`` writes. ``written`` holds the uids already written by earlier groups: those get
    only their new provenance. ``records``: the extraction's records digests."""
    rows = Rows()
    if not g.write:
        return rows
    docs = {d.id for d in g.write}
    chunk_doc = support.chunk_doc
    rows.documents = [{"id": d.id, "path": d.path, "metadata": json.dumps(d.metadata, ensure_ascii=False,
                                                                           sort_keys=True)} for d in g.write]  # fmt: skip
    rows.chunks = [{**c.model_dump(), "page": c.page, "section": c.section or None, "location": c.location or None}
                   for d in g.write for c in support.chunks[d.id]]
    rows.finalize = [{"id": d.id, "hash": d.hash, "ontology_hash": ontology_hash,
                      "records_hash": records.documents[d.id], "rootless_hash": records.rootless} for d in g.write]

    rel_keys = list(dict.fromkeys(k for d in g.write for k in support.relations[d.id]))
    if g.first:
        rel_keys += support.unsupported_relations
    by_type: dict[str, list[RelationRow]] = defaultdict(list)
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
    by_label: dict[str, list[EntityRow]] = defaultdict(list)
    for uid in sorted(supported | (ends - written)):  # relation ends must exist first
        row = _restricted(plan.entities[uid], docs, chunk_doc)
        if uid in written:
            rows.provenance.append({"uid": uid, "chunk_ids": row["chunk_ids"], "doc_ids": row["doc_ids"]})
        else:
            row["record_hash"] = records.entities[uid]
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
