"""The records of an extraction file under the current ontology: trusted as ``extract`` sealed them, or
checked again through the extraction's own validator and aggregation.

One validation path runs from a model's answer to the graph. ``extract`` validates every answer with
:class:`~graphrag_got.extract.validate.Validator`, merges the records with
:func:`~graphrag_got.extract.aggregate.aggregate` and seals the file (:func:`seal`: a digest of its entity
and relation records, the ontology hash they were validated under and the package's code). ``load``
reads the records through :func:`file_records`, which

* trusts the records of a file sealed under the current ontology by this code: they are what the
  validator kept, and nothing is validated twice;
* checks every record of any other file again with the same validator (the same rules and reason codes,
  from the extraction's validator factory) and merges what is left with the same aggregation: a file
  made under another ontology (what a change refuses is dropped, two facts a relation turned symmetric
  makes one are merged), a hand-edited file, a file of another tool or of an older version.

The file records only its ontology's hash, so any change to the ontology has every record checked again
(a few seconds per 10^5 records). Evidence is not judged again: it depends on the chunk text and the
evidence settings, not on the ontology. Each span is checked, in both cases, to be its chunk's text at its
offsets (the seal does not cover the chunks): one that is not is dropped with an audit record.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from graphrag_got.common.memory import gc_paused
from graphrag_got.extract.aggregate import aggregate, fact_key, identity_attributes
from graphrag_got.extract.extraction import EntityRecord, Evidence, Extraction, Rejection, RelationRecord
from graphrag_got.extract.fingerprint import code_version
from graphrag_got.extract.validate import ChunkValidation, Validator
from graphrag_got.ontology.model import Ontology

__all__ = ["EVIDENCE_AUDIT_CHARS", "FileRecords", "file_records", "records_digest", "seal"]

#: Characters of the given and the found text kept in an evidence audit record.
EVIDENCE_AUDIT_CHARS = 300

_RECORDS = TypeAdapter(tuple[list[EntityRecord], list[RelationRecord]])


def records_digest(ext: Extraction) -> str:
    """sha256 of what a sealed file vouches for: the package's code (the validator's rules), the hash of
    the ontology the records were validated under, and every entity and relation record."""
    h = hashlib.sha256(f"{code_version()}\n{ext.ontology.hash}\n".encode("utf-8"))
    h.update(_RECORDS.dump_json((ext.entities, ext.relations)))
    return h.hexdigest()


def seal(ext: Extraction) -> Extraction:
    """Mark ``ext``'s records as validated under ``ext.ontology`` (what ``extract`` does once it has built
    them): :func:`file_records` trusts them while they, the ontology and the code are unchanged."""
    ext.records_digest = records_digest(ext)
    return ext


@dataclass
class FileRecords:
    """The records to load: one per entity uid and one per fact, each with its chunks and evidence."""

    entities: list[EntityRecord]
    relations: list[RelationRecord]
    #: each relation's fact key (:func:`~graphrag_got.extract.aggregate.fact_key`), aligned with ``relations``
    relation_keys: list[tuple[Any, ...]] = field(default_factory=list)
    #: (where in the file, why) for each refused entity, relation or property, in file order
    refusals: list[tuple[str, Rejection]] = field(default_factory=list)
    #: evidence whose text is not the chunk's text at its offsets: not kept, one audit record each
    evidence_refusals: list[dict[str, Any]] = field(default_factory=list)
    trusted: bool = False  # sealed by extract under the current ontology: not validated again
    why_checked: str = ""  # why the records were checked again (empty when trusted)


def file_records(ext: Extraction, onto: Ontology, validator: Validator | None = None) -> FileRecords:
    """The records of ``ext`` under ``onto`` (module docstring). ``validator``: the extraction's validator
    for ``onto`` (:func:`~graphrag_got.extract.stored_answers.make_validator`; without one, a validator
    with no evidence rules, which this check never applies)."""
    with gc_paused():  # tens of thousands of records built at once: see common.memory
        trusted = bool(ext.records_digest) and ext.ontology.hash == onto.hash \
            and ext.records_digest == records_digest(ext)
        if trusted:
            out = FileRecords(entities=list(ext.entities), relations=list(ext.relations), trusted=True)
            out.relations = _audit_evidence(ext, list(enumerate(out.relations)), out.evidence_refusals)
        else:
            out = _checked(ext, onto, validator or Validator(onto))
            out.why_checked = ("not sealed by extract" if not ext.records_digest else
                               "made under another ontology" if ext.ontology.hash != onto.hash else
                               "edited since extract sealed it, or sealed by another version")
        identity = identity_attributes(onto)
        out.relation_keys = [fact_key(r, identity) for r in out.relations]
        if not trusted and (len(set(out.relation_keys)) < len(out.relations)
                            or len({e.uid for e in out.entities}) < len(out.entities)):
            # records the file repeats, or that the new ontology makes one fact: merged as extract merges them
            out.entities, out.relations = aggregate([ChunkValidation(None, None, out.entities, out.relations)],
                                                    identity)
            out.relation_keys = [fact_key(r, identity) for r in out.relations]
    return out


def _checked(ext: Extraction, onto: Ontology, validator: Validator) -> FileRecords:
    """Every record through ``validator`` (without text: the ontology's rules), the kept ones merged."""
    out = FileRecords(entities=[], relations=[])
    for i, e in enumerate(ext.entities):
        record, rejections = validator.check_entity({"name": e.name, "type": e.type, "properties": e.properties})
        out.refusals += [(f"$.entities[{i}]", r) for r in rejections]
        if record is not None:  # the validator's record, with the file's provenance
            record.chunk_ids, record.aliases, record.mentions = _unique(e.chunk_ids), _unique(e.aliases), dict(e.mentions)
            out.entities.append(record)
    known: dict[str, set[str]] = {}
    for ent in out.entities:
        known.setdefault(ent.key, set()).add(ent.type)
    kept: list[tuple[int, RelationRecord]] = []
    for i, r in enumerate(ext.relations):
        raw = {"relation": r.relation, "subject": r.subject, "subject_type": r.subject_type, "object": r.object,
               "object_type": r.object_type, "attributes": r.attributes}
        record, rejections = validator.check_relation(raw, known)
        out.refusals += [(f"$.relations[{i}] ({r.subject} {r.relation} {r.object}):", rej) for rej in rejections]
        if record is not None:
            record.chunk_ids, record.evidence, record.scores = _unique(r.chunk_ids), list(r.evidence), dict(r.scores)
            kept.append((i, record))
    out.relations = _audit_evidence(ext, kept, out.evidence_refusals)
    return out


def _audit_evidence(ext: Extraction, relations: list[tuple[int, RelationRecord]],
                    refusals: list[dict[str, Any]]) -> list[RelationRecord]:
    """The relations (with their index in the file) without the evidence spans whose text is not their
    chunk's text at their offsets; one audit record per span dropped, appended to ``refusals``."""
    chunk_text = {c.id: c.text for c in ext.chunks}
    out: list[RelationRecord] = []
    for i, r in relations:
        bad: list[int] = []
        for j, ev in enumerate(r.evidence):
            cid = ev.chunk_id or (r.chunk_ids[0] if r.chunk_ids else "")
            problem = _evidence_problem(ev, chunk_text[cid]) if cid in chunk_text else None
            if problem is None:
                continue
            bad.append(j)  # stored as given it would cite words the text does not have there
            found = chunk_text[cid][ev.start:ev.end] if ev.start <= ev.end else ""
            refusals.append({
                "where": f"$.relations[{i}].evidence[{j}]", "relation": f"{r.subject} {r.relation} {r.object}",
                "chunk_id": cid, "start": ev.start, "end": ev.end, "problem": problem,
                "given": ev.text[:EVIDENCE_AUDIT_CHARS], "chunk_text_there": found[:EVIDENCE_AUDIT_CHARS]})
        if bad:
            r = r.model_copy(update={"evidence": [ev for j, ev in enumerate(r.evidence) if j not in bad]})
        out.append(r)
    return out


def _evidence_problem(ev: Evidence, chunk_text: str) -> str | None:
    """Why evidence ``ev`` is not its chunk's text at its offsets, or None when it is."""
    if ev.end < ev.start:
        return f"its end {ev.end} is before its start {ev.start}"
    if ev.end > len(chunk_text):
        return f"its end {ev.end} is past the chunk's {len(chunk_text)} characters"
    if chunk_text[ev.start:ev.end] != ev.text:
        return f"the chunk's text at {ev.start}:{ev.end} differs from the evidence text"
    return None


def _unique(items: list[str]) -> list[str]:
    """Items without repeats, first-seen order (the common single-item case without copying work)."""
    return list(items) if len(items) < 2 else list(dict.fromkeys(items))
