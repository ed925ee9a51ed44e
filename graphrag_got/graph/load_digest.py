"""What the graph holds for each document, as one digest (for :mod:`graphrag_got.graph.load`).

A document's text and the ontology do not decide alone what the graph holds for it: the same text
gets other entities and relations when the answers change (another model, other settings), when an
alias file is edited and ``extract --revalidate`` resolves names again, or when a new document makes
entity resolution fold an older document's entity into another name. :func:`record_digests` hashes,
per document, every row the load writes for it, as the plan has them after the current ontology's
checks:

* the document record (path, metadata, note structure) and its chunks;
* each entity it supports: its uid and this document's chunks of it with the confidence of each
  mention; and, in the digest of one of its documents only (its *owner*: the one with the fewest
  rows, then the smallest id), the entity's own fields (key, name, type, properties, aliases);
* each relation it supports: ends, type, attributes, symmetric flag, and this document's chunks and
  evidence sentences of it;
* each co-occurrence pair of its chunks, with this document's chunks and weights;
* the rows no chunk supports (written with the first group of every load that writes; their own
  digest, :attr:`Digests.rootless`, is stored on every document too, so a load that finds another one
  removes the stale ones first).

The digest is stored on the ``Document`` (``records_hash``) when it is written; a load rewrites a
document whose digest differs, so the graph holds what the extraction file holds, whatever made the
records change. An entity is written whole by any document that supports it, so one document
covering its own fields is enough: when they change, that document is rewritten and writes them
(when the owner changes, the new owner's digest changes with it). Putting them in every supporting
document's digest rewrote every document that merely cites an entity whose fields changed: in a code
graph, a line added at the top of a file moves the ``start_line`` of each function below it, and
every test file and coverage document citing one of them was written again. One pass over the plan, grouping each row's chunks by document (an entity of a large
vault has thousands of chunks: restricting it per document would be quadratic).
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from dataclasses import dataclass

from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load_plan import Plan

#: Changes when what the digest covers changes (every document is then rewritten once).
VERSION = "records/2"
#: Text that is not valid Unicode (a lone surrogate in metadata) is hashed as it is: the load refuses it
#: afterwards with its document and JSON path (graph.load._unstorable_values), the digest must not fail first.
_UTF8, _KEEP = "utf-8", "surrogatepass"


#: ``json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))``, with one encoder made
#: once: ``json.dumps`` builds a new encoder on every call given options, a third of the time of the
#: ~10^5 small rows of a code graph.
_dumps = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode


def _by_document(chunk_ids: list[str], chunk_doc: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for cid in chunk_ids:
        out[chunk_doc[cid]].append(cid)
    return out


#: The rootless digest of an extraction without documents (the load writes nothing of it).
NO_DOCUMENTS = "no documents"


@dataclass(frozen=True)
class Digests:
    """Per document id, the sha256 of the rows the load writes for it; and that of the rows no chunk
    supports (:data:`NO_DOCUMENTS` when the extraction has no document: nothing of it is written)."""

    documents: dict[str, str]
    rootless: str


def record_digests(ext: Extraction, plan: Plan) -> Digests:
    """The digests of the rows the load writes (see the module docstring). One JSON text per row and
    document (a code graph has ~10^5 of them: the encoding is most of the time)."""
    chunk_doc = ext.chunk_documents()
    parts: dict[str, list[str]] = defaultdict(list)
    unsupported: list[str] = []
    chunks: dict[str, list[str]] = defaultdict(list)
    for c in ext.chunks:
        chunks[c.document_id].append(c.model_dump_json())

    for key, rel in plan.relations.items():
        head = ["r", list(key[:3]), rel["identity"], rel["attributes"], rel["symmetric"]]
        if not rel["chunk_ids"]:
            unsupported.append(_dumps(head))
        cids_of = _by_document(rel["chunk_ids"], chunk_doc)
        if not rel["evidence"]:
            for doc, cids in cids_of.items():
                parts[doc].append(_dumps([*head, sorted(cids), []]))
            continue
        sentences: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for text, cid in zip(rel["evidence"], rel["evidence_chunk_ids"]):
            sentences[chunk_doc[cid]].append((cid, text))
        for doc in cids_of.keys() | sentences.keys():
            parts[doc].append(_dumps([*head, sorted(cids_of.get(doc, [])), sorted(sentences.get(doc, []))]))

    for (a, b), co in plan.cooccurrences.items():
        per_doc: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for cid, weight in zip(co["chunk_ids"], co["chunk_weights"]):
            per_doc[chunk_doc[cid]].append((cid, weight))
        for doc, pairs in per_doc.items():
            parts[doc].append(_dumps(["c", a, b, sorted(pairs)]))

    # an entity's own fields count in the digest of its owner only: the document with the fewest rows
    entity_docs = {uid: _by_document(row["chunk_ids"], chunk_doc) for uid, row in plan.entities.items()}
    rows = Counter({doc: len(lines) + len(parts[doc]) for doc, lines in chunks.items()})
    for by_doc in entity_docs.values():
        rows.update(by_doc.keys())
    for uid, row in plan.entities.items():
        own = ["e", uid, row["key"], row["name"], row["type"], row["properties"], sorted(row["aliases"])]
        by_doc = entity_docs[uid]
        if not by_doc:
            unsupported.append(_dumps(own))
            continue
        owner = min(by_doc, key=lambda d: (rows[d], d))
        conf = plan.confidence.get(uid, {})
        for doc, cids in by_doc.items():
            mentions = sorted((c, conf.get(c, 1.0)) for c in cids)
            parts[doc].append(_dumps([*own, mentions] if doc == owner else ["e", uid, mentions]))
    rootless = hashlib.sha256("\n".join(sorted(unsupported)).encode(_UTF8, _KEEP)).hexdigest()

    out: dict[str, str] = {}
    for d in ext.documents:
        h = hashlib.sha256(_dumps([VERSION, rootless, d.model_dump(mode="json", exclude={"hash"})]).encode(_UTF8, _KEEP))
        for line in sorted(chunks.get(d.id, ())):
            h.update(b"\n" + line.encode(_UTF8, _KEEP))
        for line in sorted(parts.get(d.id, ())):
            h.update(b"\n" + line.encode(_UTF8, _KEEP))
        out[d.id] = h.hexdigest()
    return Digests(documents=out, rootless=rootless if ext.documents else NO_DOCUMENTS)
