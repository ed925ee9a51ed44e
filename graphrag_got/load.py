"""Write an ``extraction.json`` into Neo4j, and report on the loaded graph.

The load is batched (``UNWIND $rows`` of ``settings.batch_size`` rows, one managed transaction
per batch), idempotent (everything is ``MERGE``d; provenance lists are unioned) and incremental
per document:

* every ``(:Document)`` stores the content hash it was loaded from; the hash is set only after
  everything of the document is written, so an interrupted load is redone next time;
* unchanged documents are skipped (no writes at all when nothing changed);
* a changed document first loses its chunks and its chunk/doc ids on entities and relations,
  then is written again;
* a document missing from the extraction is deleted the same way;
* relations left with no supporting chunk are deleted, and so are entities with no supporting
  chunk and no relation left.

Rows are checked against the current ontology before anything is written: an entity of an
unknown class, a relation of an unknown type or with ends outside its domain/range is refused
and counted, never written.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from . import cypher
from .config import Settings
from .errors import Neo4jError, OntologyError
from .extraction import EntityRecord, Extraction, Rejection
from .ontology import Ontology
from .progress import ProgressCallback, ProgressEvent
from .validate import Validator, identity_attributes, known_entities

logger = logging.getLogger(__name__)


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


def _plan(ext: Extraction, onto: Ontology) -> _Plan:
    """Re-check every record against the current ontology with the extraction's own validator
    (same reason codes), then build the rows to write."""
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
        row = plan.entities.get(record.uid)
        if row is None:
            plan.entities[record.uid] = {
                "uid": record.uid, "key": record.key, "name": record.name, "type": record.type,
                "properties": record.properties, "chunk_ids": _unique(e.chunk_ids),
            }  # fmt: skip
        else:  # the file should hold one entry per uid; aggregate like `extract` does if not
            for k, v in record.properties.items():
                row["properties"].setdefault(k, v)
            row["chunk_ids"] = _unique([*row["chunk_ids"], *e.chunk_ids])
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
                                   "chunk_ids": _unique(r.chunk_ids)}  # fmt: skip
        else:
            for k, v in record.attributes.items():
                row["attributes"].setdefault(k, v)
            row["chunk_ids"] = _unique([*row["chunk_ids"], *r.chunk_ids])
    for row in plan.relations.values():
        row["doc_ids"] = _docs_of(row["chunk_ids"], chunk_doc)
    return plan


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
    documents_unchanged: int = 0
    documents_pruned: int = 0
    chunks_written: int = 0
    entities_written: int = 0
    relations_written: int = 0  # directed relationships (a symmetric relation counts twice)
    relations_unmatched: int = 0  # rows whose ends were not found (should stay 0)
    mentions_written: int = 0
    entities_refused: int = 0
    relations_refused: int = 0
    refused_by_reason: dict[str, int] = field(default_factory=dict)
    refused_examples: list[str] = field(default_factory=list)
    properties_dropped: int = 0
    relations_pruned: int = 0
    entities_pruned: int = 0
    nodes_created: int = 0
    relationships_created: int = 0
    batches: int = 0
    seconds: float = 0.0
    phase_seconds: dict[str, float] = field(default_factory=dict)  # write time per kind of rows

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


class _Writer:
    """Runs ``UNWIND $rows`` queries in batches, one managed transaction per batch."""

    def __init__(self, session: neo4j.Session, batch_size: int, summary: LoadSummary,
                 progress: ProgressCallback | None):
        self.session = session
        self.batch_size = batch_size
        self.summary = summary
        self.progress = progress

    def run(self, query: str, rows: list[dict[str, Any]], kind: str, name: str = "") -> int:
        """Write ``rows``; return the sum of the ``written`` column if the query returns one."""
        total = 0
        t0 = time.perf_counter()
        what = f"{kind} {name}".strip()
        n_batches = (len(rows) + self.batch_size - 1) // self.batch_size
        for n, lo in enumerate(range(0, len(rows), self.batch_size), start=1):
            batch = rows[lo : lo + self.batch_size]
            try:
                written, counters = self.session.execute_write(_write_batch, query, batch)
            except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
                raise Neo4jError(
                    f"writing {what}: batch {n}/{n_batches} (rows {lo}-{lo + len(batch) - 1}) failed and was "
                    f"rolled back: {exc}. Batches before it are committed; run the load again to resume."
                ) from exc
            total += written
            self.summary.batches += 1
            self.summary.nodes_created += counters.nodes_created
            self.summary.relationships_created += counters.relationships_created
            self.summary.relations_pruned += counters.relationships_deleted if kind == "prune relations" else 0
            self.summary.entities_pruned += counters.nodes_deleted if kind == "prune entities" else 0
        ps = self.summary.phase_seconds
        ps[kind] = round(ps.get(kind, 0.0) + time.perf_counter() - t0, 3)
        if rows:
            logger.info("%s: %d rows in %d batch(es)", what, len(rows), n_batches)
            if self.progress:
                self.progress(ProgressEvent(step="load", done=self.summary.batches, message=what,
                                            stats={"rows": len(rows), "batches": n_batches}))
        return total

    def read(self, query: str, **params: Any) -> list[neo4j.Record]:
        try:
            return self.session.execute_read(lambda tx: list(tx.run(query, **params)))
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"reading the graph failed: {exc}") from exc


def _write_batch(tx: neo4j.ManagedTransaction, query: str, rows: list[dict[str, Any]]) -> tuple[int, Any]:
    result = tx.run(query, rows=rows)
    written = sum(int(rec["written"]) for rec in result if "written" in rec.keys())
    return written, result.consume().counters


def ensure_schema(session: neo4j.Session, class_labels: Iterable[str]) -> None:
    """Create the constraints and indexes (idempotent) and wait for them to be online."""
    try:
        for stmt in cypher.create_constraints(list(class_labels)):
            session.run(stmt).consume()
        session.run(cypher.await_indexes()).consume()
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(
            f"creating the constraints and indexes failed: {exc}. If existing data breaks a uniqueness "
            "constraint (duplicate Entity.uid, Document.id or Chunk.id), clear the database and load again."
        ) from exc


def _strip_documents(
    w: _Writer, doc_ids: list[str]
) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """Remove the chunks of ``doc_ids`` and their ids from entities and relations.

    Returns the element ids of the entities and relations touched, to prune once the new
    version of the documents is written.
    """
    gone_docs = set(doc_ids)
    gone_chunks = {rec["id"] for rec in w.read(cypher.chunks_of_documents(), doc_ids=doc_ids)}

    def keep_chunk(cid: str) -> bool:
        # chunk ids are "<document id>:<hash prefix>"; the prefix test also catches chunk ids whose
        # Chunk node is missing (an interrupted earlier load)
        return cid not in gone_chunks and cid.rpartition(":")[0] not in gone_docs

    touched: dict[str, list[dict[str, str]]] = {}
    for kind, read_q, write_q in (
        ("entities", cypher.entities_of_documents(), cypher.set_entity_provenance()),
        ("relations", cypher.relations_of_documents(), cypher.set_relation_provenance()),
    ):
        rows = [
            {
                "id": rec["id"],
                "chunk_ids": [c for c in rec["chunk_ids"] or [] if keep_chunk(c)],
                "doc_ids": [d for d in rec["doc_ids"] or [] if d not in gone_docs],
            }
            for rec in w.read(read_q, doc_ids=doc_ids)
        ]
        w.run(write_q, rows, f"unlink {kind}")
        touched[kind] = [{"id": r["id"]} for r in rows]
    w.run(cypher.delete_chunks(), [{"id": c} for c in sorted(gone_chunks)], "delete chunks")
    return touched["entities"], touched["relations"]


def load_extraction(
    driver: neo4j.Driver,
    settings: Settings,
    extraction: dict[str, Any] | str | Path,
    ontology: Any,
    *,
    progress: ProgressCallback | None = None,
) -> LoadSummary:
    """Load ``extraction`` (a dict or an ``extraction.json`` path) into the graph.

    ``ontology`` is the current ``Ontology`` (or a path to it); rows it does not allow are refused
    and counted in the summary. See the module docstring for the incremental rules.
    """
    t0 = time.perf_counter()
    with _gc_paused():
        ext, source = read_extraction(extraction)
        onto = _ontology(ontology)
        plan = _plan(ext, onto)
    summary = LoadSummary(source=source, properties_dropped=plan.properties_dropped)
    summary.refused_by_reason = dict(plan.refused)
    summary.refused_examples = list(plan.refused_examples)
    summary.entities_refused = plan.entities_refused
    summary.relations_refused = plan.relations_refused

    try:
        # The loader's queries are fixed and tested; server notifications such as "property `hash`
        # does not exist yet" on a fresh database would only be noise in the command's output.
        session = driver.session(
            database=settings.neo4j_database, notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF
        )
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"cannot open a Neo4j session: {exc}") from exc
    with session:
        w = _Writer(session, settings.batch_size, summary, progress)
        ensure_schema(session, sorted(onto.classes))

        stored = {rec["id"]: rec["hash"] for rec in w.read(cypher.existing_documents())}
        new_docs = [d for d in ext.documents if d.id not in stored]
        changed = [d for d in ext.documents if d.id in stored and stored[d.id] != d.hash]
        in_file = {d.id for d in ext.documents}
        missing = sorted(set(stored) - in_file)
        summary.documents_added, summary.documents_updated = len(new_docs), len(changed)
        summary.documents_unchanged = len(ext.documents) - len(new_docs) - len(changed)
        summary.documents_pruned = len(missing)
        logger.info("%s: %d new, %d changed, %d unchanged, %d removed document(s)", source, len(new_docs),
                    len(changed), summary.documents_unchanged, len(missing))

        touched_entities: list[dict[str, str]] = []
        touched_relations: list[dict[str, str]] = []
        if changed or missing:
            touched_entities, touched_relations = _strip_documents(w, [d.id for d in changed] + missing)
            w.run(cypher.delete_documents(), [{"id": d} for d in missing], "delete documents")

        to_write = {d.id for d in new_docs} | {d.id for d in changed}
        if to_write:
            _write_documents(w, ext, plan, to_write, summary, identity_attributes(onto))

        if touched_relations:
            w.run(cypher.prune_relations(), touched_relations, "prune relations")
        if touched_entities:
            w.run(cypher.prune_entities(), touched_entities, "prune entities")

    summary.seconds = round(time.perf_counter() - t0, 3)
    return summary


def _write_documents(w: _Writer, ext: Extraction, plan: _Plan, to_write: set[str], summary: LoadSummary,
                     identity: tuple[str, ...]) -> None:
    docs = [d for d in ext.documents if d.id in to_write]
    w.run(
        cypher.merge_documents(),
        [{"id": d.id, "path": d.path, "metadata": json.dumps(d.metadata, ensure_ascii=False, sort_keys=True)}
         for d in docs],
        "documents",
    )  # fmt: skip
    chunks = [c.model_dump() for c in ext.chunks if c.document_id in to_write]
    w.run(cypher.merge_chunks(), chunks, "chunks")
    summary.chunks_written = len(chunks)

    def touches(row: dict[str, Any]) -> bool:
        return not row["doc_ids"] or any(d in to_write for d in row["doc_ids"])

    relations = [r for r in plan.relations.values() if touches(r)]
    uids = {uid for uid, row in plan.entities.items() if touches(row)}
    uids.update(end for r in relations for end in (r["start"], r["end"]))  # ends must exist first

    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for uid in sorted(uids):
        row = plan.entities[uid]
        by_label[row["type"]].append(row)
    for label in sorted(by_label):
        w.run(cypher.merge_entities(label), by_label[label], "entities", label)
        summary.entities_written += len(by_label[label])

    chunk_doc = {c.id: c.document_id for c in ext.chunks}
    mentions = [
        {"chunk_id": cid, "uid": uid}
        for uid in sorted(uids)
        for cid in plan.entities[uid]["chunk_ids"]
        if chunk_doc[cid] in to_write
    ]
    w.run(cypher.merge_mentions(), mentions, "mentions")
    summary.mentions_written = len(mentions)

    by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for (start, rtype, end, _identity), row in plan.relations.items():
        if not touches(row):
            continue
        by_type[rtype].append(row)
        if row["symmetric"] and start != end:
            by_type[rtype].append({**row, "start": end, "end": start})
    for rtype in sorted(by_type):
        rows = by_type[rtype]
        written = w.run(cypher.merge_relations(rtype, identity), rows, "relations", rtype)
        summary.relations_written += written
        summary.relations_unmatched += len(rows) - written

    w.run(cypher.finalize_documents(), [{"id": d.id, "hash": d.hash} for d in docs], "finalize documents")


# ---------------------------------------------------------------------------------------------
# Statistics
# ---------------------------------------------------------------------------------------------


def graph_stats(driver: neo4j.Driver, settings: Settings, ontology: Any) -> dict[str, Any]:
    """Counts of the loaded graph and its consistency checks against ``ontology``.

    ``missing_symmetric`` and ``violations`` should both be 0 after a load.
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
            raise Neo4jError(f"reading graph statistics failed: {exc}") from exc

    nodes = {r["label"]: r["count"] for r in read(cypher.count_nodes_by_label())}
    rels = {r["type"]: r["count"] for r in read(cypher.count_relations_by_type())}
    missing = {r["type"]: r["count"] for r in read(cypher.missing_symmetric_directions(), types=symmetric, identity=identity)}
    violations = {f"{r['type']}:{r['reason']}": r["count"] for r in read(cypher.ontology_violations(), rules=rules)}
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
        "orphan_entities": orphans,
    }
