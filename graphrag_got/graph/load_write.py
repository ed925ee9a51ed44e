"""One group of whole documents written in one transaction (for :mod:`graphrag_got.graph.load`).

:func:`write_group` removes the stored version of the group's documents (their chunks, their ids on
entities, relations and co-occurrences, their note structure, what of them the current ontology
refuses), writes the group's :class:`~graphrag_got.graph.load_plan.Rows` in ``UNWIND $rows``
batches, prunes what lost its last support and marks the documents loaded. It changes nothing
outside its transaction, so the driver may run it again after a transient error.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j

from graphrag_got.graph import cypher, load_cypher
from graphrag_got.graph import notes as notes_graph
from graphrag_got.graph.load_plan import Group, Rows
from graphrag_got.ontology.model import RESERVED_PROPERTIES, RESERVED_RELATION_ATTRIBUTES, TERM_CLASS, Ontology

#: The fields the toolkit writes on entities and relations (never removed as stale record values).
_RESERVED_PROPERTIES = sorted(RESERVED_PROPERTIES)
_RESERVED_ATTRIBUTES = sorted(RESERVED_RELATION_ATTRIBUTES)

# ---------------------------------------------------------------------------------------------
# Batched writes in one transaction
# ---------------------------------------------------------------------------------------------


@dataclass
class TxResult:
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
        self.result = TxResult()

    def write(self, query: str, rows: Sequence[Mapping[str, Any]], kind: str, **params: Any) -> list[neo4j.Record]:
        """Run ``query`` over ``rows`` in batches (``$rows``), with the same other ``params`` each time."""
        if not rows:
            return []
        self.phase[0] = kind
        t0 = time.perf_counter()
        records: list[neo4j.Record] = []
        res = self.result
        for lo in range(0, len(rows), self.batch_size):
            result = self.tx.run(query, params, rows=rows[lo : lo + self.batch_size])
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


# ---------------------------------------------------------------------------------------------
# Removing the stored version of documents
# ---------------------------------------------------------------------------------------------


def _entity_allowed(onto: Ontology, labels: list[str]) -> bool:
    return any(label in onto.classes or label == TERM_CLASS for label in labels)


def _relation_allowed(onto: Ontology, rtype: str, start_labels: list[str], end_labels: list[str]) -> bool:
    """The ontology's domain/range rule (:meth:`Relation.accepts_any`) on a stored relationship's end labels."""
    rel = onto.relation(rtype)
    return rel is not None and rel.accepts_any(start_labels, end_labels)


@dataclass
class _Stripped:
    """What removing the stored version of documents touched: pruned once the new one is written."""

    entities: list[dict[str, str]] = field(default_factory=list)
    relations: list[dict[str, str]] = field(default_factory=list)
    cooccurrences: list[dict[str, str]] = field(default_factory=list)
    notes: notes_graph.Touched = field(default_factory=notes_graph.Touched)


def _strip(t: _Tx, g: Group, onto: Ontology) -> _Stripped:
    """Remove the stored version of ``g.strip``: its chunks, its ids on entities, relations and
    co-occurrences, its note structure, what of it the current ontology refuses, and the documents
    missing from the extraction. Returns what it touched, to prune once the new version is written."""
    stripped = set(g.strip)
    gone = {rec["id"] for rec in t.read(load_cypher.chunks_of_documents(), doc_ids=g.strip)}

    def keep(cid: str) -> bool:
        # chunk ids are "<document id>:<hash prefix>"; the prefix test also catches chunk ids whose
        # Chunk node is missing (a load older than the one-transaction rule)
        return cid not in gone and cid.rpartition(":")[0] not in stripped

    entity_ids, relation_ids = g.touched_ids()
    ents = t.read(load_cypher.entities_by_ids(), ids=entity_ids, doc_ids=g.strip) if entity_ids else []
    rels = t.read(load_cypher.relations_by_ids(), ids=relation_ids, doc_ids=g.strip) if relation_ids else []
    co_ids = [r["id"] for r in rels if r["type"] == cypher.CO_OCCURS]  # not an ontology relation
    rels = [r for r in rels if r["type"] != cypher.CO_OCCURS]
    cos = t.read(load_cypher.cooccurrences_by_ids(), ids=co_ids, doc_ids=g.strip) if co_ids else []

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
    t.write(load_cypher.set_entity_provenance(), kept_ents, "unlink entities")
    t.write(load_cypher.set_relation_provenance(), kept_rels, "unlink relations")
    kept_cos = []
    for rec in cos:
        pairs = [(c, w) for c, w in zip(rec["chunk_ids"] or [], rec["chunk_weights"] or []) if keep(c)]
        kept_cos.append({"id": rec["id"], "chunk_ids": [c for c, _ in pairs], "chunk_weights": [w for _, w in pairs],
                         "doc_ids": [d for d in rec["doc_ids"] or [] if d not in stripped]})  # fmt: skip
    t.write(load_cypher.set_cooccurrence_provenance(), kept_cos, "unlink co-occurrences")
    notes = notes_graph.strip_notes(t.write, t.read, g.strip, g.delete)
    t.write(load_cypher.delete_relations(), refused_rels, "remove refused relations")
    for rec in t.write(load_cypher.delete_entities(), refused_ents, "remove refused entities"):
        t.result.deleted_uids.add(rec["uid"])
    t.write(load_cypher.delete_chunks(), [{"id": c} for c in sorted(gone)], "delete chunks")
    t.write(load_cypher.delete_documents(), [{"id": d} for d in g.delete], "delete documents")
    return _Stripped([{"id": e["id"]} for e in kept_ents], [{"id": r["id"]} for r in kept_rels],
                     [{"id": c["id"]} for c in kept_cos], notes)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Writing one group
# ---------------------------------------------------------------------------------------------


def write_group(tx: neo4j.ManagedTransaction, g: Group, rows: Rows, onto: Ontology,
                identity: tuple[str, ...], batch_size: int, phase: list[str]) -> TxResult:
    """Everything of the documents of ``g``, in the transaction ``tx`` (a managed one: the driver
    may call this again after a transient error, so it changes nothing outside ``tx``)."""
    t = _Tx(tx, batch_size, phase)
    stripped = _strip(t, g, onto) if g.strip else _Stripped()
    if g.write:
        t.write(load_cypher.merge_documents(), rows.documents, "documents")
        t.write(load_cypher.merge_chunks(), rows.chunks, "chunks")
        for label, ents in rows.entities.items():
            t.write(load_cypher.merge_entities(label), ents, "entities", reserved=_RESERVED_PROPERTIES)
        t.write(load_cypher.add_entity_provenance(), rows.provenance, "entity provenance")
        t.write(load_cypher.merge_mentions(), rows.mentions, "mentions")
        for rtype, rels in rows.relations.items():
            recs = t.write(load_cypher.merge_relations(rtype, identity), rels, "relations",
                           reserved=_RESERVED_ATTRIBUTES)
            t.result.relations_written += sum(int(r["written"]) for r in recs)
        recs = t.write(load_cypher.merge_cooccurrences(), rows.cooccurrences, "co-occurrences")
        t.result.cooccurrences_written += sum(int(r["written"]) for r in recs)
        stripped.notes.update(notes_graph.write_notes(t.write, rows.notes))
    notes_graph.prune_notes(t.write, stripped.notes)
    # an entity another document kept because of a relation pruned here is checked again too: it may have
    # no chunk and no relation left (its own document was stripped by an earlier group of this load)
    ends: set[str] = set()
    for rec in t.write(load_cypher.prune_relations(), stripped.cooccurrences, "prune co-occurrences"):
        ends.update((rec["start"], rec["end"]))
    for rec in t.write(load_cypher.prune_relations(), stripped.relations, "prune relations"):
        ends.update((rec["start"], rec["end"]))
    candidates = [*stripped.entities, *({"id": i} for i in sorted(ends - {e["id"] for e in stripped.entities}))]
    for rec in t.write(load_cypher.prune_entities(), candidates, "prune entities"):
        t.result.deleted_uids.add(rec["uid"])
    t.write(load_cypher.finalize_documents(), rows.finalize, "finalize documents")
    return t.result
