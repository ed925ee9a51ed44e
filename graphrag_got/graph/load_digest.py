"""What the graph holds for each document, as one digest (for :mod:`graphrag_got.graph.load`).

A document's text and the ontology do not decide alone what the graph holds for it: the same text
gets other entities and relations when the answers change (another model, other settings), when an
alias file is edited and ``extract --revalidate`` resolves names again, or when a new document makes
entity resolution fold an older document's entity into another name. :func:`record_digests` hashes,
per document, every row the load writes for it, as the plan has them after the current ontology's
checks:

* the document record (path, metadata, note structure) and its chunks;
* each entity it supports: its uid and this document's chunks of it with the confidence of each
  mention (the entity's own fields have a digest of their own, below);
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

An entity's own fields (key, name, type, properties, aliases) have their digest per entity
(:attr:`Digests.entities`), stored on the ``Entity`` node (``record_hash``) whenever it is written:
an entity is written whole by any document that supports it, so when its fields change the load
needs one of its documents rewritten, not all of them: none more when one is rewritten anyway, else
its smallest (``graph.load``). While the fields were part of every document's digest
(``records/1``), every document citing an entity whose fields changed was rewritten: in a code
graph a line added near the top of a file moves the ``start_line`` of each function below it, and
every test file and coverage document citing one of them was written again (click with a coverage
run: 52 of 112 documents, 130,000 rows, for a commit touching ``core.py`` alone).
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass

from graphrag_got.common.canonical import canonical_json
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load_plan import Plan

#: Changes when what the digest covers changes (every document is then rewritten once).
VERSION = "records/2"
#: Text that is not valid Unicode (a lone surrogate in metadata) is hashed as it is: the load refuses it
#: afterwards with its document and JSON path (graph.load._unstorable_values), the digest must not fail first.
_UTF8, _KEEP = "utf-8", "surrogatepass"


_dumps = canonical_json  # one row


def _by_document(chunk_ids: list[str], chunk_doc: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for cid in chunk_ids:
        out[chunk_doc[cid]].append(cid)
    return out


#: The rootless digest of an extraction without documents (the load writes nothing of it).
NO_DOCUMENTS = "no documents"


@dataclass(frozen=True)
class Digests:
    """Per document id, the sha256 of the rows the load writes for it; that of the rows no chunk supports
    (:data:`NO_DOCUMENTS` when the extraction has no document: nothing of it is written); per entity uid,
    the sha256 of its own fields."""

    documents: dict[str, str]
    rootless: str
    entities: dict[str, str]


def record_digests(ext: Extraction, plan: Plan) -> Digests:
    """The digests of the rows the load writes (see the module docstring). One JSON text per row and
    document (a code graph has ~10^5 of them: the encoding is most of the time)."""
    chunk_doc = ext.chunk_documents()
    parts: dict[str, list[bytes]] = defaultdict(list)
    unsupported: list[bytes] = []
    chunks: dict[str, list[bytes]] = defaultdict(list)
    for c in ext.chunks:
        chunks[c.document_id].append(c.model_dump_json().encode(_UTF8, _KEEP))

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

    entities: dict[str, str] = {}
    for uid, row in plan.entities.items():
        own = _dumps(["e", uid, row["key"], row["name"], row["type"], row["properties"], sorted(row["aliases"])])
        entities[uid] = hashlib.sha256(own).hexdigest()
        if not row["chunk_ids"]:
            unsupported.append(own)
            continue
        conf = plan.confidence.get(uid, {})
        for doc, cids in _by_document(row["chunk_ids"], chunk_doc).items():
            parts[doc].append(_dumps(["e", uid, sorted((c, conf.get(c, 1.0)) for c in cids)]))
    rootless = hashlib.sha256(b"\n".join(sorted(unsupported))).hexdigest()

    out: dict[str, str] = {}
    for d in ext.documents:
        h = hashlib.sha256(_dumps([VERSION, rootless, d.model_dump(mode="json", exclude={"hash"})]))
        for lines in (chunks.get(d.id), parts.get(d.id)):
            if lines:  # each line after a newline
                h.update(b"\n" + b"\n".join(sorted(lines)))
        out[d.id] = h.hexdigest()
    return Digests(documents=out, rootless=rootless if ext.documents else NO_DOCUMENTS, entities=entities)
