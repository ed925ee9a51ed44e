"""Entities that no kept fact uses: refused (``no_fact``) by ``orphan_entities``.

A small model lists more entities than a text names as things: a motto as an organization, a title
as a person, a place it then never relates to anything. Measured on the GoT corpus with the embedded
1.5B model (``benchmarks/quality``), most listed entities that end up in no kept relation are such
mistakes, while 61 of the 65 gold entities take part in a gold relation. So once relations are
validated (and verified, when on) and entities resolved, an entity no kept relation uses is refused
with its own reason, one record per entity in ``extraction.json`` and in the report: nothing is
dropped silently. Refusing every orphan (``GRAPHRAG_ORPHAN_ENTITIES=drop``) is opt-in: on a corpus
where the model keeps few relations (the observatory corpus with the 0.5B model) most right entities
are orphans. ``duplicates`` refuses only an orphan whose name is, under another class, an entity
that facts use: the model listed one thing twice with two classes (a castle as a place it relates
things to, and as a house it never does), and the facts say which class is right. The default,
``related``, refuses those and also an orphan every chunk of which has kept facts: where the model
did relate the things a passage names, an entity it never related is most often a motto or a title
it listed as a thing; where a passage kept no fact at all (a small model that relates little), its
entities are not judged by facts the model failed to write.
"""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_got.extract.extraction import EntityRecord, Reason, Rejection, RelationRecord

__all__ = ["drop_orphans"]


def drop_orphans(entities: Sequence[EntityRecord], relations: Sequence[RelationRecord],
                 mode: str = "drop") -> tuple[list[EntityRecord], list[Rejection]]:
    """The entities to keep, and a ``no_fact`` rejection for each entity refused.

    ``mode="drop"``: every entity no relation uses is refused. ``mode="duplicates"``: only those whose
    name is also, under another class, an entity some relation uses (the model typed one thing two
    ways, and the facts say which class is right). ``mode="related"``: those, and those whose every
    chunk has a kept relation. ``mode="keep"``: nothing is refused.
    """
    used = {f"{r.subject_type}|{r.subject_key}" for r in relations} | {f"{r.object_type}|{r.object_key}"
                                                                      for r in relations}
    used_classes: dict[str, set[str]] = {}
    for e in entities:
        if e.uid in used:
            used_classes.setdefault(e.key, set()).add(e.type)
    related_chunks = {c for r in relations for c in r.chunk_ids}
    kept: list[EntityRecord] = []
    refused: list[Rejection] = []
    for e in entities:
        others = sorted(used_classes.get(e.key, set()) - {e.type})
        busy = bool(e.chunk_ids) and all(c in related_chunks for c in e.chunk_ids)
        if mode == "keep" or e.uid in used or (mode == "duplicates" and not others) or (
                mode == "related" and not others and not busy):
            kept.append(e)
            continue
        why = (f"; the same name is a {' | '.join(others)} that does" if others else
               "; facts were kept from every chunk that mentions it" if mode == "related" else "")
        refused.append(Rejection(
            kind="entity", reason=Reason.NO_FACT, entity_name=e.name, entity_type=e.type,
            chunk_id=e.chunk_ids[0] if e.chunk_ids else None, allowed=others,
            message=(f"{e.type} {e.name!r} takes part in no kept relation (mentioned in {len(e.chunk_ids)} "
                     f"chunk(s)){why}; GRAPHRAG_ORPHAN_ENTITIES=keep keeps such entities"),
            item={"name": e.name, "type": e.type, "chunk_ids": list(e.chunk_ids), **({"aliases": list(e.aliases)}
                                                                                   if e.aliases else {})},
        ))
    return kept, refused
