"""Write an ``extraction.json`` into Neo4j.

The load is idempotent (everything is ``MERGE``d; provenance lists are unioned), batched
(``UNWIND $rows`` of ``settings.graph.batch_size`` rows) and all-or-nothing per document:

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
* every ``(:Document)`` stores its content hash, the hash of the ontology it was loaded under and
  the digest of the records written for it (its chunks, the entities, relations, evidence and
  co-occurrences it supports, as the file has them: :mod:`graphrag_got.graph.load_digest`); a
  document with all three unchanged is skipped (no writes at all when nothing changed); a changed
  one (its text, the ontology, or its records: other answers, entity resolution folding its entity
  into another name) is rewritten: its chunks and its ids on entities and relations are removed
  first, in the same transaction, and the entities and relations it supports are set from their
  records in the file (a property, alias or attribute the record lost is removed);
* every ``(:Entity)`` stores the digest of its own fields (``record_hash``: properties, name,
  aliases...); an entity whose fields changed in the file (an alias edit, a property) while none of
  its documents is rewritten gets its smallest document rewritten, which writes it whole;
* a document missing from the extraction is removed the same way;
* relations left with no supporting chunk are deleted, and so are entities with no supporting
  chunk and no relation left; the relations and entities of the rewritten documents that the
  current ontology refuses (a type or class it no longer has, ends outside domain/range: left by
  loads under an earlier ontology) are deleted.

Each chunk's mentions carry the model's confidence as ``MENTIONS.weight``. The entities of one
chunk are joined by ``CO_OCCURS`` (stored once, start = the smaller uid; ``settings.graph.cooccurrence``
turns it off; at most ``settings.graph.cooccurrence_max_entities`` entities per chunk, the most confident):
``weight`` = the sum over chunks of the lower confidence of the two, ``count`` = the chunks. Its
provenance (``chunk_ids`` with aligned ``chunk_weights``, ``doc_ids``) is unlinked and pruned on
a rewrite exactly like a relation's. Documents with a note record (:mod:`graphrag_got.ingest.notes`) get
their folders, tags and links in the same transaction (:mod:`graphrag_got.graph.notes`).

The whole load holds the graph lock (:mod:`graphrag_got.graph.lock`): one writer of the database at a
time, across processes and machines; a second one waits (``settings.graph.lock_wait_s``) or is refused.
``repair=True`` (``load --repair``) first compares the graph with the file and writes again whatever differs,
whatever the digests say (:mod:`graphrag_got.graph.repair`).

The records are taken under the current ontology before anything is written
(:mod:`graphrag_got.extract.recheck`): trusted when ``extract`` sealed them under it, else checked again
with the validator ``extract`` uses (same reason codes) and merged by its aggregation; what a check
refuses is counted in the summary, never written.
Values the graph cannot hold (an integer beyond 64 bits, text that is not valid Unicode) are
reported with their document and JSON path before anything is written.

Modules: :mod:`~graphrag_got.graph.load_plan` (checking the records and building the typed load
rows, cutting documents into groups), :mod:`~graphrag_got.graph.load_write` (one group's
transaction), :mod:`~graphrag_got.graph.schema` (constraints and indexes),
:mod:`~graphrag_got.graph.load_errors` (values the graph cannot hold, write errors), this module (the load: what changed, the transaction loop, the summary and its
errors) and :mod:`~graphrag_got.graph.stats` (the statistics of the loaded graph).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.config import (CodeSettings, EmbeddingSettings, ExtractSettings, FilesSettings, GraphSettings,
                                  LLMSettings, Neo4jSettings)
from graphrag_got.errors import Neo4jError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.aggregate import identity_attributes
from graphrag_got.extract.stored_answers import make_validator
from graphrag_got.graph import load_cypher, repair
from graphrag_got.graph.db import CONNECTION_ERRORS, hang_hint
from graphrag_got.common.memory import gc_paused
from graphrag_got.graph.load_digest import Digests, record_digests
from graphrag_got.graph.load_plan import (Group, Plan, Support, build_plan, graph_ontology, group_rows,
                                          plan_groups)
from graphrag_got.graph.load_errors import one_line, shown_id as _shown, unstorable_error as _unstorable_error
from graphrag_got.graph.load_errors import unstorable_values as _unstorable_values, write_error as _write_error
from graphrag_got.graph.load_write import TxResult, write_group
from graphrag_got.graph.lock import graph_lock
from graphrag_got.graph.schema import ensure_attribute_index, ensure_schema
from graphrag_got.ontology.model import TERM_CLASS, Ontology

logger = logging.getLogger(__name__)

#: ``llm.provider`` of an extraction written by ``extract --extractor code`` (no model: a code graph).
CODE_PROVIDER = "code"

#: A write transaction holds the rows of whole documents, about this many batches of them.
GROUP_BATCHES = 4
#: Driver errors meaning the server is gone: stop at once, no per-document retry.
_CONNECTION_ERRORS = CONNECTION_ERRORS
#: Errors one group's writes can raise: the server refusing a write, or the driver refusing to
#: send a value (packing), which surfaces as one of the built-in errors.
_WRITE_ERRORS = (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, ValueError, TypeError,
                 OverflowError)  # fmt: skip


def read_extraction(extraction: Extraction | dict[str, Any] | str | Path,
                    source: str | None = None) -> tuple[Extraction, str]:
    """Parse and check an extraction (see :meth:`Extraction.read`); returns it with a source label
    (``source``, else the path, else ``<extraction dict>``)."""
    if source is None:
        source = "<extraction dict>" if isinstance(extraction, (dict, Extraction)) else str(extraction)
    return Extraction.read(extraction), source


# ---------------------------------------------------------------------------------------------
# Summary
# ---------------------------------------------------------------------------------------------


@dataclass
class LoadSummary:
    source: str = ""
    documents_added: int = 0
    documents_updated: int = 0
    documents_reloaded_for_ontology: int = 0  # of documents_updated: same text, loaded under another ontology
    documents_reloaded_for_records: int = 0  # of documents_updated: same text and ontology, other records
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
    records_checked: str = ""  # why the file's records were validated again ("": sealed by extract, trusted)
    evidence_refused: int = 0  # evidence sentences not stored: their text is not the chunk's at their offsets
    evidence_refusals: list[dict[str, Any]] = field(default_factory=list)  # one audit record per refused one
    relations_pruned: int = 0
    entities_pruned: int = 0
    relations_removed_by_ontology: int = 0  # stored relationships of rewritten documents the ontology refuses
    entities_removed_by_ontology: int = 0  # stored entities of rewritten documents of a class it no longer has
    nodes_created: int = 0
    relationships_created: int = 0
    batches: int = 0
    transactions: int = 0  # committed write transactions (one per group of whole documents)
    embeddings: dict[str, Any] | None = None  # what embedding the loaded graph did (vectors.EmbedSummary)
    repair: dict[str, Any] | None = None  # load --repair: what differed and what was done (graph.repair)
    lock_taken_over: str = ""  # the writer whose expired graph lock this load took over ("": it was free)
    code_graph: bool = False  # the extraction is a code graph (extract --extractor code)
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

    def line(self) -> str:
        """The one line a build prints for its load step."""
        return (f"documents +{self.documents_added} ~{self.documents_updated} ={self.documents_unchanged} "
                f"-{self.documents_pruned}; entities written {self.entities_written}, relationships "
                f"written {self.relations_written}; refused {self.relations_refused}")

    def report_lines(self) -> list[str]:
        """What ``graphrag-got load`` prints: documents, rows written and pruned, refusals, embeddings."""
        out: list[str] = []
        if self.lock_taken_over:
            out.append(f"warning: took over the graph lock of {self.lock_taken_over}: its lease had expired (that "
                       "writer crashed or hung; this load rewrote what it found changed)")
        if (r := self.repair) is not None:
            out.append("repair: the graph already equalled the file" if not r["differences"] else
                       f"repair: {r['differences']} difference(s) with the file ("
                       + ", ".join(f"{k} {n}" for k, n in sorted(r["by_section"].items()))
                       + f"); removed {r['nodes_removed']} node(s) and {r['relationships_removed']} relationship(s) "
                       f"it does not back, wrote {r['documents_rewritten']} document(s) again; the graph now "
                       "equals the file")
        if self.ontology_mismatch:
            out.append(f"warning: {self.source} was extracted with the ontology {self.extraction_ontology_path or '?'} "
                       f"(hash {self.extraction_ontology_hash[:12]}), not the configured {self.ontology_path} "
                       f"(hash {self.ontology_hash[:12]}); every record was checked again against the configured one")
        why = [f"{n} {reason}" for n, reason in ((self.documents_reloaded_for_ontology, "for the ontology"),
                                                 (self.documents_reloaded_for_records, "for their records")) if n]
        out.append(f"documents: {self.documents_added} added, {self.documents_updated} updated"
                   f"{' (' + ', '.join(why) + ')' if why else ''}, {self.documents_unchanged} unchanged, "
                   f"{self.documents_pruned} pruned")
        out.append(f"written: {self.chunks_written} chunks, {self.entities_written} entities, {self.relations_written} "
                   f"relations (directed), {self.mentions_written} mentions, {self.cooccurrences_written} co-occurrences"
                   + (f", {self.notes_written} notes with folders/tags/links" if self.notes_written else ""))
        out.append(f"pruned: {self.relations_pruned} relations, {self.entities_pruned} entities")
        if self.relations_removed_by_ontology or self.entities_removed_by_ontology:
            out.append(f"removed (refused by the current ontology, left by earlier loads): "
                       f"{self.relations_removed_by_ontology} relations, {self.entities_removed_by_ontology} entities")
        if self.records_checked:
            out.append(f"records checked against the ontology again: {self.records_checked}")
        if self.entities_refused or self.relations_refused:
            reasons = ", ".join(f"{k}={v}" for k, v in sorted(self.refused_by_reason.items()))
            out.append(f"refused (not in the current ontology): {self.entities_refused} entities, "
                       f"{self.relations_refused} relations ({reasons})")
            out += [f"  {line}" for line in self.refused_examples[:5]]
        if self.evidence_refused:
            out.append(f"evidence refused (its text is not the chunk's text at its offsets; not stored): "
                       f"{self.evidence_refused}")
            out += [f"  {r['where']} ({r['relation']}), chunk {r['chunk_id']}: {r['problem']}"
                    for r in self.evidence_refusals[:5]]
        if self.properties_dropped:
            out.append(f"properties not declared in the ontology, dropped: {self.properties_dropped}")
        if self.relations_unmatched:
            out.append(f"warning: {self.relations_unmatched} relation rows found no end entity")
        out.append(f"{self.batches} batch(es) in {self.transactions} transaction(s), {self.seconds:.2f} s")
        e = self.embeddings
        if e and e.get("reason") == "code_graph":
            out.append("embeddings: none for a code graph (ask impact needs none; `load --embed` or "
                       "GRAPHRAG_CODE_EMBEDDINGS=1 embeds it for vector retrieval)")
        if e and not e.get("skipped"):
            made = ", ".join(e.get("indexes_created") or [])
            out.append(f"embeddings ({e.get('model')}): {e.get('chunks_embedded')} chunks, {e.get('entities_embedded')} "
                       f"entities embedded, {e.get('unchanged')} unchanged; {e.get('model_calls')} model call(s), "
                       f"{e.get('seconds')} s" + (f"; vector indexes created: {made}" if made else ""))
        return out


def _merge(summary: LoadSummary, res: TxResult) -> None:
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
        raise Neo4jError(f"reading the graph failed: {one_line(exc)}{hang_hint(exc)}") from exc


def _touched(session: neo4j.Session, doc_ids: list[str]) -> dict[str, tuple[list[str], list[str]]]:
    """Per document of ``doc_ids``: element ids of the stored entities and relations it supports."""
    wanted = set(doc_ids)
    out: dict[str, tuple[list[str], list[str]]] = {d: ([], []) for d in doc_ids}
    for slot, query in ((0, load_cypher.entities_of_documents()), (1, load_cypher.relations_of_documents())):
        for rec in _read(session, query, doc_ids=doc_ids):
            for d in set(rec["doc_ids"]) & wanted:
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
    db: Neo4jSettings,
    extraction: Extraction | dict[str, Any] | str | Path,
    ontology: Ontology | str | Path,
    *,
    graph: GraphSettings, extract: ExtractSettings, embedding: EmbeddingSettings, code: CodeSettings,
    llm: LLMSettings, files: FilesSettings,
    progress: ProgressCallback | None = None,
    embed: bool | None = None,
    embedder: Any = None,
    source: str | None = None,
    repair: bool = False,
    lock_wait: float | None = None,
) -> LoadSummary:
    """Load ``extraction`` (an ``Extraction``, a dict or an ``extraction.json`` path) into the graph.

    ``ontology`` is the current ``Ontology`` (or a path to it); rows it does not allow are refused
    and counted in the summary (``extract``'s validator checks again what the file does not vouch for);
    ``graph``: batch size and co-occurrence. See the module docstring for the incremental and transaction rules.
    Raises ``ExtractionFileError`` for a bad file or a value the graph cannot hold, ``Neo4jError``
    when the server refuses a write (naming the document; documents before it are loaded whole).

    Then, with ``embed`` (default ``embedding.enabled``, and for a code graph ``code.embeddings``, off),
    the chunks and entities whose text changed are embedded and the vector indexes created
    (:func:`graphrag_got.graph.vectors.embed_graph`, with ``llm`` and ``files``; its summary is
    ``LoadSummary.embeddings``). ``source`` names the extraction in messages (default: its path).

    The whole load runs under the graph lock (:mod:`graphrag_got.graph.lock`): another writer of the same
    database is waited for, at most ``lock_wait`` seconds (default ``graph.lock_wait_s``; 0 refuses at once),
    then ``GraphLockBusy`` is raised. ``repair``: compare the graph with the file first and write again
    whatever differs, whatever the documents' digests say (:mod:`graphrag_got.graph.repair`).
    """
    with gc_paused():
        ext, source = read_extraction(extraction, source)
    onto = graph_ontology(ontology)
    with graph_lock(driver, db, graph, command=f"load{' --repair' if repair else ''} of {source}",
                    wait_s=lock_wait, progress=progress) as lock:
        summary = (_repair(driver, db, ext, onto, graph=graph, extract=extract, progress=progress, source=source)
                   if repair else
                   _load(driver, db, ext, onto, graph=graph, extract=extract, progress=progress, source=source))
        if lock.took_over is not None:
            summary.lock_taken_over = lock.took_over.describe()
        _embed(driver, db, summary, embed, embedder, progress, embedding=embedding, code=code, llm=llm, files=files)
        lock.check()
    return summary


def _repair(driver: neo4j.Driver, db: Neo4jSettings, ext: Extraction, onto: Ontology, *, graph: GraphSettings,
            extract: ExtractSettings, progress: ProgressCallback | None, source: str) -> LoadSummary:
    """The load of ``load --repair``: compare, remove what the file does not back, write again what differs;
    a second pass writes every document; see :mod:`graphrag_got.graph.repair`."""
    passes: list[repair.RepairPass] = []
    summary: LoadSummary | None = None
    for everything in (False, True):
        passes.append(repair.prepare(driver, db, ext, onto, graph=graph, extract=extract, everything=everything))
        if passes[-1].equal:
            break
        summary = _load(driver, db, ext, onto, graph=graph, extract=extract, progress=progress, source=source,
                        rewrite=passes[-1].rewrite)
    else:
        last = repair.prepare(driver, db, ext, onto, graph=graph, extract=extract)
        if not last.equal:
            raise repair.still_differs(source, last)
    if summary is None:  # the graph already equals the file: a normal load, which writes nothing
        summary = _load(driver, db, ext, onto, graph=graph, extract=extract, progress=progress, source=source)
    summary.repair = repair.report(passes)
    return summary


def _embed(driver: neo4j.Driver, db: Neo4jSettings, summary: LoadSummary, embed: bool | None, embedder: Any,
           progress: ProgressCallback | None, *, embedding: EmbeddingSettings, code: CodeSettings, llm: LLMSettings,
           files: FilesSettings) -> None:  # fmt: skip
    if embed is None and summary.code_graph and embedding.enabled and not code.embeddings:
        # A code graph is thousands of small nodes that `ask impact` reads by name: embedding them all
        # with the in-process model takes far longer than the load itself, for no use of the graph's own.
        logger.info("%s: a code graph: not embedded (GRAPHRAG_CODE_EMBEDDINGS=1 or load --embed to embed it)",
                    summary.source)
        summary.embeddings = {"skipped": True, "reason": "code_graph"}
        return
    if embedding.enabled if embed is None else embed:
        from graphrag_got.graph.vectors import embed_graph

        summary.embeddings = embed_graph(driver, db, embedding, embedder, progress=progress,
                                         llm=llm, files=files).as_dict()


def _load(driver: neo4j.Driver, db: Neo4jSettings, ext: Extraction, onto: Ontology, *, graph: GraphSettings,
          extract: ExtractSettings, progress: ProgressCallback | None, source: str,
          rewrite: set[str] = frozenset()) -> LoadSummary:  # type: ignore[assignment]
    """The load itself (the caller holds the graph lock); ``rewrite``: stored documents to write again
    whatever their digests say (``load --repair``)."""
    t0 = time.perf_counter()
    with gc_paused():
        cap = graph.cooccurrence_max_entities if graph.cooccurrence else None
        plan = build_plan(ext, onto, validator=make_validator(extract, onto), cooccurrence_max=cap)
    summary = LoadSummary(source=source, properties_dropped=plan.properties_dropped,
                          code_graph=ext.llm.provider == CODE_PROVIDER)
    summary.records_checked = plan.why_checked
    summary.refused_by_reason = dict(plan.refused)
    summary.refused_examples = list(plan.refused_examples)
    summary.entities_refused = plan.entities_refused
    summary.relations_refused = plan.relations_refused
    summary.evidence_refused = len(plan.evidence_refusals)
    summary.evidence_refusals = list(plan.evidence_refusals)
    if plan.evidence_refusals:
        first = plan.evidence_refusals[0]
        logger.warning("%s: %d evidence sentence(s) refused, their text is not the chunk's text at their offsets "
                       "(first: %s, chunk %s: %s; the load summary lists each)", source, len(plan.evidence_refusals),
                       first["where"], first["chunk_id"], first["problem"])
    _check_ontology_of(ext, onto, source, summary)
    identity = identity_attributes(onto)

    try:
        # The loader's queries are fixed and tested; server notifications such as "property `hash`
        # does not exist yet" on a fresh database would only be noise in the command's output.
        session = driver.session(
            database=db.database, notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF
        )
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"cannot open a Neo4j session: {exc}") from exc
    with session:
        ensure_schema(session, sorted({*onto.classes, TERM_CLASS}))
        ensure_attribute_index(session, onto)
        stored_docs = _read(session, load_cypher.existing_documents())
        stored = {rec["id"]: (rec["hash"], rec["ontology_hash"], rec["records_hash"]) for rec in stored_docs}
        with gc_paused():
            records = record_digests(ext, plan)
        if any(rec["rootless_hash"] != records.rootless for rec in stored_docs):
            _remove_stale_rootless(session, ext, plan, identity, summary)
        new_docs = [d for d in ext.documents if d.id not in stored]
        changed_ids = {d.id for d in ext.documents if d.id in stored and (
            d.id in rewrite or stored[d.id] != (d.hash, onto.hash, records.documents[d.id]))}
        with gc_paused():
            support = Support(ext, plan)
        if stored:
            changed_ids |= _carriers(session, plan, records, support, changed_ids | {d.id for d in new_docs})
        changed = [d for d in ext.documents if d.id in changed_ids]
        in_file = {d.id for d in ext.documents}
        missing = sorted(set(stored) - in_file)
        summary.documents_added, summary.documents_updated = len(new_docs), len(changed)
        summary.documents_reloaded_for_ontology = sum(stored[d.id][0] == d.hash and stored[d.id][1] != onto.hash
                                                      for d in changed)  # fmt: skip
        summary.documents_reloaded_for_records = sum(stored[d.id][:2] == (d.hash, onto.hash) for d in changed)
        summary.documents_unchanged = len(ext.documents) - len(new_docs) - len(changed)
        summary.documents_pruned = len(missing)
        logger.info("%s: %d new, %d changed (%d for the ontology, %d for their records), %d unchanged, %d removed "
                    "document(s)", source, len(new_docs), len(changed), summary.documents_reloaded_for_ontology,
                    summary.documents_reloaded_for_records, summary.documents_unchanged, len(missing))  # fmt: skip

        to_write_ids = {d.id for d in new_docs} | {d.id for d in changed}
        problems = _unstorable_values(ext, to_write_ids)
        if problems:
            raise _unstorable_error(source, problems)
        to_write = [d for d in ext.documents if d.id in to_write_ids]
        if not to_write and not missing:
            summary.seconds = round(time.perf_counter() - t0, 3)
            return summary
        touched = _touched(session, sorted(changed_ids) + missing) if changed_ids or missing else {}
        groups = plan_groups(to_write, changed_ids, missing, support, touched, GROUP_BATCHES * graph.batch_size)
        _run_groups(session, groups, plan, support, records, onto, identity, graph.batch_size, summary,
                    source, progress)

    summary.seconds = round(time.perf_counter() - t0, 3)
    return summary


def _carriers(session: neo4j.Session, plan: Plan, records: Digests, support: Support, writing: set[str]) -> set[str]:
    """Documents to rewrite for the entities whose own fields changed (their ``record_hash`` in the graph is
    not the file's; an entity missing from the graph counts too) when none of their documents is written
    anyway: the smallest document of each, which writes it whole (:mod:`graphrag_got.graph.load_digest`)."""
    stored = {rec["uid"]: rec["record_hash"] for rec in _read(session, load_cypher.entity_record_hashes())}
    carriers: set[str] = set()
    stale = 0
    for uid, row in plan.entities.items():
        docs = row["doc_ids"]
        if not docs or stored.get(uid) == records.entities[uid]:
            continue
        stale += 1
        if writing.isdisjoint(docs) and carriers.isdisjoint(docs):
            carriers.add(min(docs, key=lambda d: (support.weight(d), d)))
    if carriers:
        logger.info("%d entity(ies) changed their own fields (properties, name, aliases); %d document(s) whose "
                    "records are otherwise unchanged are written again to write them", stale, len(carriers))
    return carriers


def _remove_stale_rootless(session: neo4j.Session, ext: Extraction, plan: Plan, identity: tuple[str, ...],
                           summary: LoadSummary) -> None:
    """Delete the entities and relations no document supports that the extraction does not hold (rows a
    hand-edited file gave without chunks, in an earlier load). Runs only when their digest changed: the
    scans read every entity and relationship."""

    def work(tx: neo4j.ManagedTransaction) -> tuple[int, int]:
        keep = set(plan.entities) if ext.documents else set()
        keys = set(plan.relations) if ext.documents else set()
        ents = [{"id": r["id"], "uid": r["uid"]} for r in tx.run(load_cypher.rootless_entities())
                if r["uid"] not in keep]  # fmt: skip
        rels = []
        for r in tx.run(load_cypher.rootless_relations(), identity=list(identity)):
            ident = tuple(r["identity"])
            if (r["start"], r["type"], r["end"], ident) not in keys and (r["end"], r["type"], r["start"], ident) not in keys:
                rels.append({"id": r["id"], "type": r["type"]})
        removed = tx.run(load_cypher.delete_relations(), rows=rels).consume().counters.relationships_deleted
        gone = tx.run(load_cypher.delete_entities(), rows=ents).consume().counters.nodes_deleted
        return removed, gone

    try:
        removed, gone = session.execute_write(work)
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"removing the stale rows no document supports failed: {one_line(exc)}. Run the load "
                         "again to resume.") from exc  # fmt: skip
    summary.relations_pruned += removed
    summary.entities_pruned += gone
    if removed or gone:
        logger.info("removed %d relation(s) and %d entity(ies) no document supports and the extraction no longer "
                    "holds", removed, gone)  # fmt: skip


def _run_groups(session: neo4j.Session, groups: list[Group], plan: Plan, support: Support, records: Digests,
                onto: Ontology, identity: tuple[str, ...], batch_size: int, summary: LoadSummary, source: str,
                progress: ProgressCallback | None) -> None:  # fmt: skip
    """Commit the groups one transaction each; split a failing group into its documents."""
    total = sum(len(g.documents) for g in groups)
    done = 0
    written: set[str] = set()  # uids written in full by this load
    counted: set[tuple[Any, ...]] = set()  # relation rows counted in relations_written
    queue = deque(groups)
    while queue:
        g = queue.popleft()
        rows = group_rows(g, plan, support, written, onto.hash, records)
        phase = [""]
        try:
            res = session.execute_write(write_group, g, rows, onto, identity, batch_size, phase)
        except _CONNECTION_ERRORS as exc:
            raise Neo4jError(
                f"{source}: lost the connection to Neo4j while writing document(s) {', '.join(map(_shown, g.documents[:3]))}"
                f"{' ...' if len(g.documents) > 3 else ''} ({one_line(exc)}){hang_hint(exc)}. Documents before them "
                "are loaded; start the server again and run the load again to resume."
            ) from exc
        except _WRITE_ERRORS as exc:
            if len(g.documents) > 1:
                logger.info("a transaction of %d documents failed (%s); writing them one by one",
                            len(g.documents), one_line(exc, 200))  # fmt: skip
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
            progress(ProgressEvent(step="load", done=done, total=total, message=one_line(", ".join(g.documents), 60),
                                   stats={"transactions": summary.transactions, "batches": summary.batches}))  # fmt: skip
    if progress and groups:
        progress(ProgressEvent(step="load", done=done, total=total, finished=True,
                               stats={"transactions": summary.transactions, "batches": summary.batches}))  # fmt: skip
