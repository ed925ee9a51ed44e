"""What the graph holds for each document, as one digest (for :mod:`graphrag_got.graph.load`).

A document's text and the ontology do not decide alone what the graph holds for it: the same text
gets other entities and relations when the answers change (another model, other settings), when an
alias file is edited and ``extract --revalidate`` resolves names again, or when a new document makes
entity resolution fold an older document's entity into another name. :func:`record_digests` hashes,
per document, every row the load writes for it, as the plan has them after the current ontology's
checks:

* the document record (path, metadata, note structure) and its chunks;
* each entity it supports: the entity's own fields (uid, key, name, type, properties, aliases: the
  same for every document, since an entity is written whole) and this document's chunks of it with
  the confidence of each mention;
* each relation it supports: ends, type, attributes, symmetric flag, and this document's chunks and
  evidence sentences of it;
* each co-occurrence pair of its chunks, with this document's chunks and weights;
* the rows no chunk supports (written with the first group of every load that writes; their own
  digest, :attr:`Digests.rootless`, is stored on every document too, so a load that finds another one
  removes the stale ones first).

The digest is stored on the ``Document`` (``records_hash``) when it is written; a load rewrites a
document whose digest differs, so the graph holds what the extraction file holds, whatever made the
records change. One pass over the plan, grouping each row's chunks by document (an entity of a large
vault has thousands of chunks: restricting it per document would be quadratic).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load_plan import Plan

#: Changes when what the digest covers changes (every document is then rewritten once).
VERSION = "records/1"
#: Text that is not valid Unicode (a lone surrogate in metadata) is hashed as it is: the load refuses it
#: afterwards with its document and JSON path (graph.load._unstorable_values), the digest must not fail first.
_UTF8, _KEEP = "utf-8", "surrogatepass"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


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
    """The digests of the rows the load writes (see the module docstring)."""
    chunk_doc = ext.chunk_documents()
    parts: dict[str, list[str]] = defaultdict(list)
    unsupported: list[str] = []

    for uid, row in plan.entities.items():
        own = _dumps(["e", uid, row["key"], row["name"], row["type"], row["properties"], sorted(row["aliases"])])
        if not row["chunk_ids"]:
            unsupported.append(own)
        conf = plan.confidence.get(uid, {})
        for doc, cids in _by_document(row["chunk_ids"], chunk_doc).items():
            parts[doc].append(own + _dumps(sorted((c, conf.get(c, 1.0)) for c in cids)))

    for key, rel in plan.relations.items():
        own = _dumps(["r", list(key[:3]), rel["identity"], rel["attributes"], rel["symmetric"]])
        if not rel["chunk_ids"]:
            unsupported.append(own)
        sentences: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for text, cid in zip(rel["evidence"], rel["evidence_chunk_ids"]):
            sentences[chunk_doc[cid]].append((cid, text))
        cids_of = _by_document(rel["chunk_ids"], chunk_doc)
        for doc in cids_of.keys() | sentences.keys():
            parts[doc].append(own + _dumps([sorted(cids_of.get(doc, [])), sorted(sentences.get(doc, []))]))

    for (a, b), co in plan.cooccurrences.items():
        per_doc: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for cid, weight in zip(co["chunk_ids"], co["chunk_weights"]):
            per_doc[chunk_doc[cid]].append((cid, weight))
        for doc, pairs in per_doc.items():
            parts[doc].append(_dumps(["c", a, b, sorted(pairs)]))

    chunks: dict[str, list[str]] = defaultdict(list)
    for c in ext.chunks:
        chunks[c.document_id].append(c.model_dump_json())
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
