"""``graphrag-got load FILE --repair``: make the graph what a clean load of FILE writes.

A normal load trusts what the graph says it holds (each document's digests): a graph changed behind the
loader's back (a hand edit, a stray entity or relation, two loads that once ran at the same time) keeps
its damage, because every document still looks "unchanged". The repair does not trust the digests: it
compares the graph with the file (:mod:`graphrag_got.graph.compare`, the check of ``stats --strict``) and

1. deletes what the file does not back: every entity, chunk, folder, mention, relation, co-occurrence
   and note link the graph holds and a clean load would not write, and every extra copy of one it would
   write once (documents missing from the file are removed by the load, as always);
2. names the documents of the file whose graph differs (an edited name or property, a missing or changed
   relation, mention, chunk...), which the load then writes again whatever their digests say.

The load runs with that set (:func:`graphrag_got.graph.load.load_extraction` with ``repair=True``, under the
graph lock), and the graph is compared again. When something still differs (a difference no document
owns, e.g. a folder), a second pass writes every document of the file again; if even that leaves a
difference, :class:`~graphrag_got.errors.GraphRepairError` lists it.
"""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field

import neo4j

from graphrag_got.config import ExtractSettings, GraphSettings, Neo4jSettings
from graphrag_got.errors import GraphRepairError, Neo4jError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph import repair_cypher
from graphrag_got.graph.compare import (Comparison, DifferenceKind, ElementIds, GraphView, Section, compare,
                                        expected_view, mention_key, stored_view)
from graphrag_got.graph.db import session
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)

#: Sections whose keys are nodes (the rest are relationships); documents are left to the load.
_NODE_SECTIONS = {Section.ENTITY, Section.CHUNK, Section.FOLDER}


@dataclass
class RepairPass:
    """What one comparison found and what was done about it before the load."""

    differences: int = 0
    by_section: dict[str, int] = field(default_factory=dict)
    first: list[str] = field(default_factory=list)  # the first differences, one line each
    rewrite: set[str] = field(default_factory=set)  # documents of the file to write again
    nodes_removed: int = 0
    relationships_removed: int = 0

    @property
    def equal(self) -> bool:
        return self.differences == 0


def _documents_of(section: Section, key: str, expected: GraphView, stored: GraphView, file_docs: set[str],
                  mention_docs: dict[str, set[str]]) -> set[str] | None:  # fmt: skip
    """The documents of the file that write the row ``key`` (None: no document can be named for it)."""
    values = [v for v in (expected[section].get(key), stored[section].get(key)) if v is not None]
    if section is Section.DOCUMENT:
        found = {key}
    elif section is Section.CHUNK:
        found = {d for v in values for d in v.get("documents", [])}
    elif section in (Section.ENTITY, Section.RELATION, Section.COOCCURRENCE):
        found = {d for v in values for d in v.get("doc_ids", [])}
    elif section is Section.MENTION:
        found = set(mention_docs.get(key, ()))
    elif section is Section.NOTE_STRUCTURE:
        found = {d for d in file_docs if key.startswith(f"({d})-[")}
    else:
        return None
    found &= file_docs
    return found or None


def _mention_documents(expected: GraphView) -> dict[str, set[str]]:
    """Mention key -> the document of its chunk, for every mention a clean load writes."""
    chunk_docs = {cid: set(v["documents"]) for cid, v in expected[Section.CHUNK].items()}
    out: dict[str, set[str]] = {}
    for uid, e in expected[Section.ENTITY].items():
        for cid in e["chunk_ids"]:
            out[mention_key(cid, uid)] = chunk_docs.get(cid, set())
    return out


def _delete(driver: neo4j.Driver, db: Neo4jSettings, nodes: list[str], relationships: list[str],
            batch: int) -> tuple[int, int]:  # fmt: skip
    """Delete these relationships, then these nodes (with their relationships), in one transaction."""

    def work(tx: neo4j.ManagedTransaction) -> tuple[int, int]:
        rels = gone = 0
        for i in range(0, len(relationships), batch):
            rels += tx.run(repair_cypher.delete_relationships_by_element_id(),
                           ids=relationships[i:i + batch]).consume().counters.relationships_deleted
        for i in range(0, len(nodes), batch):
            gone += tx.run(repair_cypher.delete_nodes_by_element_id(),
                           ids=nodes[i:i + batch]).consume().counters.nodes_deleted
        return gone, rels

    try:
        with session(driver, db, write=True) as ses:
            return ses.execute_write(work)
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"removing what the extraction file does not back failed: {exc}. Nothing of it was "
                         "removed (one transaction); run the repair again.") from exc


def prepare(driver: neo4j.Driver, db: Neo4jSettings, ext: Extraction, onto: Ontology, *, graph: GraphSettings,
            extract: ExtractSettings, everything: bool = False) -> RepairPass:  # fmt: skip
    """Compare the graph with ``ext``, delete what it does not back, and name the documents to write again
    (all of them with ``everything``, or when a difference names no document)."""
    expected = expected_view(ext, onto, graph, extract)
    ids: ElementIds = {}
    stored = stored_view(driver, db, onto, ids)
    result: Comparison = compare(expected, stored, limit=sys.maxsize, element_ids=ids)
    found = RepairPass(differences=result.total, by_section=dict(result.by_section),
                       first=[d.line() for d in result.differences[:20]])
    if result.equal:
        return found
    file_docs = {d.id for d in ext.documents}
    mention_docs = _mention_documents(expected)
    nodes: list[str] = []
    relationships: list[str] = []
    for diff in result.differences:
        eids = ids.get((diff.section, diff.key), [])
        if diff.kind is DifferenceKind.UNEXPECTED and diff.section is not Section.DOCUMENT:
            doomed = eids
        elif diff.kind is DifferenceKind.DUPLICATE:
            doomed = eids[1:]
        else:
            doomed = []
        (nodes if diff.section in _NODE_SECTIONS else relationships).extend(doomed)
        if diff.kind is DifferenceKind.UNEXPECTED:
            continue
        docs = _documents_of(diff.section, diff.key, expected, stored, file_docs, mention_docs)
        if docs is None:
            everything = True
        else:
            found.rewrite |= docs
    if everything:
        found.rewrite = set(file_docs)
    if nodes or relationships:
        found.nodes_removed, found.relationships_removed = _delete(driver, db, nodes, relationships, graph.batch_size)
        logger.info("repair: removed %d node(s) and %d relationship(s) the extraction file does not back",
                    found.nodes_removed, found.relationships_removed)
    logger.info("repair: the graph differs from the file in %d place(s) (%s); %d document(s) to write again",
                found.differences, ", ".join(f"{k} {n}" for k, n in sorted(found.by_section.items())),
                len(found.rewrite))
    return found


def still_differs(source: str, found: RepairPass) -> GraphRepairError:
    """The error of a repair that could not make the graph equal to its file."""
    lines = "\n".join(f"  {line}" for line in found.first)
    return GraphRepairError(
        f"{source}: after the repair the graph still differs from the file in {found.differences} place(s):\n"
        f"{lines}\nSee `graphrag-got stats --strict --extraction {source}`; if it persists, clear the database "
        "(`graphrag-got neo4j stop`, remove its data folder) and load the file again.")


def report(passes: list[RepairPass]) -> dict[str, object]:
    """``LoadSummary.repair``: what the first comparison found, what every pass removed and wrote again."""
    first = passes[0]
    return {"differences": first.differences, "by_section": first.by_section, "first": first.first,
            "documents_rewritten": len(set().union(*(p.rewrite for p in passes))), "passes": len(passes),
            "nodes_removed": sum(p.nodes_removed for p in passes),
            "relationships_removed": sum(p.relationships_removed for p in passes)}  # fmt: skip
