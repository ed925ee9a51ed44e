"""Entities that no kept fact uses: refused (``no_fact``) when ``orphan_entities=drop``.

A small model lists more entities than a text names as things: a motto as an organization, a title
as a person, a place it then never relates to anything. Measured on the GoT corpus with the embedded
1.5B model (``benchmarks/quality``), most listed entities that end up in no kept relation are such
mistakes, while 61 of the 65 gold entities take part in a gold relation. So once relations are
validated (and verified, when on) and entities resolved, an entity no kept relation uses is refused
with its own reason, one record per entity in ``extraction.json`` and in the report: nothing is
dropped silently. It is opt-in (``GRAPHRAG_ORPHAN_ENTITIES=drop``): on a corpus where the model
keeps few relations (the observatory corpus with the 0.5B model) most right entities are orphans
and dropping them costs entity F1.
"""

from __future__ import annotations

from collections.abc import Sequence

from .extraction import EntityRecord, Reason, Rejection, RelationRecord

__all__ = ["drop_orphans"]


def drop_orphans(entities: Sequence[EntityRecord],
                 relations: Sequence[RelationRecord]) -> tuple[list[EntityRecord], list[Rejection]]:
    """The entities some relation uses, and a ``no_fact`` rejection for each of the others."""
    used = {f"{r.subject_type}|{r.subject_key}" for r in relations} | {f"{r.object_type}|{r.object_key}"
                                                                      for r in relations}
    kept: list[EntityRecord] = []
    refused: list[Rejection] = []
    for e in entities:
        if e.uid in used:
            kept.append(e)
            continue
        refused.append(Rejection(
            kind="entity", reason=Reason.NO_FACT, entity_name=e.name, entity_type=e.type,
            chunk_id=e.chunk_ids[0] if e.chunk_ids else None,
            message=(f"{e.type} {e.name!r} takes part in no kept relation (mentioned in {len(e.chunk_ids)} "
                     "chunk(s)); GRAPHRAG_ORPHAN_ENTITIES=keep keeps such entities"),
            item={"name": e.name, "type": e.type, "chunk_ids": list(e.chunk_ids), **({"aliases": list(e.aliases)}
                                                                                   if e.aliases else {})},
        ))
    return kept, refused
