"""Aggregation: the validated records of every chunk merged into the entity and relation lists of
``extraction.json`` (one record per entity uid, one per fact), with their chunks and evidence.

The one aggregation: ``extract`` merges the records of its chunks with it, entity resolution the
records it re-pointed, and ``load`` (:mod:`graphrag_got.extract.recheck`) the records of a file that
repeat an entity or a fact, or that a changed ontology makes one fact."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from graphrag_got.common.normalize import swap_ends
from graphrag_got.extract.extraction import EntityRecord, Evidence, Rejection, RelationRecord
from graphrag_got.extract.validate import ChunkValidation
from graphrag_got.ontology.model import Ontology

MAX_EVIDENCE = 10  # evidence spans kept per aggregated relation (first chunks first)


def identity_attributes(onto: Ontology) -> tuple[str, ...]:
    """Relation attributes that are part of a fact's identity (declaration order)."""
    declared = getattr(onto, "identity_attributes", None)
    if declared is not None:
        return tuple(declared)
    return tuple(onto.relation_attributes)


def fact_key(rel: RelationRecord, identity: tuple[str, ...]) -> tuple[Any, ...]:
    """What makes two relation records one fact: (start uid, relation, end uid, identity attribute
    values), the ends in their one order (:func:`~graphrag_got.common.normalize.swap_ends`). The key of
    the aggregation here and of a relation row in the load plan."""
    start, end = rel.subject_uid, rel.object_uid
    if swap_ends(start, end, rel.symmetric):
        start, end = end, start
    return (start, rel.relation, end, rel.identity(identity))


def aggregate(validations: Iterable[ChunkValidation],
              identity: tuple[str, ...] = ()) -> tuple[list[EntityRecord], list[RelationRecord]]:
    """Merge per-chunk records into the entity and relation lists of extraction.json.

    Entities merge per uid (the first display name and first value of each property win; chunk ids
    and aliases accumulate; a chunk's mention keeps its highest confidence). Relations merge per (subject uid, relation, object uid, identity attribute values);
    a symmetric relation is stored once with its ends in sorted-uid order; other attributes: the
    first value wins.
    """
    agg = Aggregator(identity)
    for val in validations:
        agg.add(val)
    return agg.result()


class Aggregator:
    """:func:`aggregate`, one chunk at a time: ``add`` each chunk's validation in order, then ``result``.

    Its state is plain records, dicts and sets: a caller may pickle it part way (``code refresh`` keeps
    the state after the coverage evidence it never changes, :mod:`graphrag_got.code.evidence_memo`)
    and go on from an unpickled copy; the result is the same as adding every chunk again."""

    def __init__(self, identity: tuple[str, ...] = ()):
        self.identity = identity
        self.entities: dict[str, EntityRecord] = {}
        self.relations: dict[tuple[Any, ...], RelationRecord] = {}
        # the chunk ids already in each record's list (a list scan per added id was quadratic in the mentions)
        self.entity_chunks: dict[str, set[str]] = {}
        self.relation_chunks: dict[tuple[Any, ...], set[str]] = {}

    def add(self, val: ChunkValidation) -> None:
        entities, relations = self.entities, self.relations
        for ent in val.entities:
            rec = entities.get(ent.uid)
            if rec is None:
                entities[ent.uid] = rec = ent.model_copy(deep=True)
                self.entity_chunks[ent.uid] = set(rec.chunk_ids)
            else:
                for k, v in ent.properties.items():
                    rec.properties.setdefault(k, v)
                _add_new(rec.chunk_ids, ent.chunk_ids, self.entity_chunks[ent.uid])
                if ent.aliases:
                    _add_new(rec.aliases, ent.aliases, set(rec.aliases))
                for cid, conf in ent.mentions.items():  # the most confident mention of a chunk
                    rec.mentions[cid] = max(conf, rec.mentions.get(cid, conf))
        for rel in val.relations:
            s = (rel.subject_uid, rel.subject, rel.subject_key, rel.subject_type)
            o = (rel.object_uid, rel.object, rel.object_key, rel.object_type)
            key = fact_key(rel, self.identity)
            if key[0] != s[0]:  # swapped into the fact's one order
                s, o = o, s
            rec = relations.get(key)
            if rec is None:
                relations[key] = RelationRecord(
                    subject=entities[s[0]].name if s[0] in entities else s[1], subject_key=s[2], subject_type=s[3],
                    relation=rel.relation,
                    object=entities[o[0]].name if o[0] in entities else o[1], object_key=o[2], object_type=o[3],
                    attributes=dict(rel.attributes), symmetric=rel.symmetric, chunk_ids=list(rel.chunk_ids),
                    evidence=list(rel.evidence[:MAX_EVIDENCE]),  # spans are never changed: shared
                    scores={c: sc.model_copy() for c, sc in rel.scores.items()})
                self.relation_chunks[key] = set(rel.chunk_ids)
            else:
                for k, v in rel.attributes.items():
                    rec.attributes.setdefault(k, v)
                _add_new(rec.chunk_ids, rel.chunk_ids, self.relation_chunks[key])
                _add_evidence(rec.evidence, rel.evidence)
                for cid, sc in rel.scores.items():  # the surest choice of a chunk
                    if cid not in rec.scores or sc.probability > rec.scores[cid].probability:
                        rec.scores[cid] = sc.model_copy()

    def result(self) -> tuple[list[EntityRecord], list[RelationRecord]]:
        return list(self.entities.values()), list(self.relations.values())


def _add_evidence(target: list[Evidence], more: Iterable[Evidence]) -> None:
    seen = {(e.chunk_id, e.start, e.end) for e in target}
    for ev in more:
        if len(target) >= MAX_EVIDENCE:
            return
        if (ev.chunk_id, ev.start, ev.end) not in seen:
            seen.add((ev.chunk_id, ev.start, ev.end))
            target.append(ev)


def _add_new(target: list[str], more: Iterable[str], seen: set[str]) -> None:
    """Append the items of ``more`` not in ``target`` yet (``seen``: the items of ``target``, kept up to date)."""
    for item in more:
        if item not in seen:
            seen.add(item)
            target.append(item)


def reason_counts(rejections: Iterable[Rejection]) -> dict[str, int]:
    return dict(sorted(Counter(r.reason.value for r in rejections).items()))
