"""Building the discarded-relations report from an extraction: the rejection records grouped (by
relation, reason and offending type; by class, reason and property), the failed chunks, the audited
repairs and the entity-resolution merges, each with a few examples and their source excerpts.

:func:`build_report` returns a :class:`~graphrag_got.report.discarded_model.Report`; the
suggestions of repeated groups come from :mod:`graphrag_got.report.discarded_hints`.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from graphrag_got.extract.extraction import Extraction, Reason, Rejection, Repair
from graphrag_got.ontology.model import Ontology
from graphrag_got.report.discarded_hints import entity_suggestion, relation_suggestion
from graphrag_got.report.discarded_model import (
    WS,
    EntityExample,
    EntityGroup,
    Excerpt,
    FailedChunk,
    MergeRow,
    RelationExample,
    RelationGroup,
    RepairExample,
    RepairGroup,
    Report,
    Row,
    Totals,
    as_text,
    fold,
    make_excerpt,
)


# ============================================================================ loading
def load_extraction(source: "str | Path | Mapping[str, Any] | Extraction") -> tuple[Extraction, str]:
    """Read an extraction through the one contract; returns ``(extraction, source label)``.

    Raises :class:`ExtractionFileError` naming the file and the problem.
    """
    if isinstance(source, Extraction):
        return source, "<extraction>"
    if isinstance(source, Mapping):
        return Extraction.read(dict(source)), "<dict>"
    return Extraction.read(source), str(source)


def _resolve_ontology(ontology: Ontology | str | Path | Mapping[str, Any] | None,
                      ext: Extraction, notes: list[str]) -> Ontology | None:
    """An explicit ontology must load (its errors propagate); the one named in the extraction is
    optional: the report still works without it, only the ontology-based hints are missing."""
    if isinstance(ontology, Ontology):
        return ontology
    if isinstance(ontology, Mapping):
        return Ontology.from_dict(dict(ontology))
    if ontology is not None:
        return Ontology.from_file(ontology)
    path = ext.ontology.path
    if not path:
        notes.append("No ontology given and none named in the extraction: suggestions do not name other relations.")
        return None
    try:
        return Ontology.from_file(path)
    except Exception as exc:  # noqa: BLE001 - any failure only costs the hints; say so in the report
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        notes.append(f"Ontology {path} could not be loaded ({first}); suggestions do not name other relations.")
        return None


# ============================================================================ building
def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _attributes_text(rec: Rejection) -> str:
    """The relation attributes the model gave a refused triple, as ``name: value; ...``."""
    item = rec.item
    if "relation" not in item:  # not a triple (a non-object answer is kept as {"value": ...})
        return ""
    given = {k: v for k, v in item.items() if k not in _TRIPLE_KEYS}
    given.update(_as_dict(item.get("attributes")))
    return "; ".join(f"{k}: {as_text(v)}" for k, v in given.items() if v not in (None, ""))


def build_report(
    extraction: "str | Path | Mapping[str, Any] | Extraction",
    ontology: Ontology | str | Path | Mapping[str, Any] | None = None,
    *,
    max_examples: int = 3,
    min_repeat: int = 2,
    excerpt_chars: int = 320,
) -> Report:
    """Build the report model from the extraction's rejection records (grouped, never re-derived).

    ``ontology``: an :class:`Ontology`, a path or a dict; ``None`` uses the path recorded in the
    extraction when it loads (hints that name other relations need it). ``min_repeat``: a group gets
    a suggestion when it has at least this many rejections.
    """
    ext, label = load_extraction(extraction)
    notes: list[str] = []
    onto = _resolve_ontology(ontology, ext, notes)
    onto_path = onto.source if onto is not None else None
    chunk_text = {c.id: c.text for c in ext.chunks}
    chunk_place = {c.id: c.location for c in ext.chunks}
    entity_types: dict[str, set[str]] = {}
    for ent in ext.entities:
        entity_types.setdefault(fold(WS.sub(" ", ent.name).strip()), set()).add(ent.type)

    def excerpt_for(chunk_id: str, names: Sequence[str]) -> Excerpt | None:
        if chunk_id not in chunk_text:
            return None
        found = make_excerpt(chunk_text[chunk_id], names, max_chars=excerpt_chars)
        if found is not None and chunk_place.get(chunk_id):
            found.location = chunk_place[chunk_id]
        return found

    rows: list[Row] = []
    # ---- relations
    rel_records = ext.relation_rejections
    rel_reasons: Counter[str] = Counter()
    rel_buckets: dict[tuple[str, str, str | None], list[Rejection]] = {}
    for rec in rel_records:
        reason = rec.reason.value
        rel_reasons[reason] += 1
        rel_buckets.setdefault((rec.relation or "", reason, rec.end_type if rec.end else None), []).append(rec)
        rows.append(Row(
            kind="relation", reason=reason, relation=rec.relation or "", subject=rec.subject or "",
            subject_type=rec.subject_type or "", object=rec.object or "", object_type=rec.object_type or "",
            attributes=_attributes_text(rec), chunk_id=rec.chunk_id or "", document_id=rec.document_id or "",
            message=rec.message,
        ))
    relation_groups: list[RelationGroup] = []
    for (rel, reason, off_type), recs in rel_buckets.items():
        examples = [
            RelationExample(
                subject=rec.subject or "", subject_type=rec.subject_type or "", relation=rec.relation or "",
                object=rec.object or "", object_type=rec.object_type or "", attributes=_attributes_text(rec),
                chunk_id=rec.chunk_id or "", document_id=rec.document_id or "", message=rec.message,
                excerpt=excerpt_for(rec.chunk_id or "", [rec.subject or "", rec.object or ""]),
            )
            for rec in recs[:max_examples]
        ]
        pairs = list(dict.fromkeys((r.subject_type or "", r.object_type or "") for r in recs))
        group = RelationGroup(relation=rel, reason=reason, offending_type=off_type, offending_end=recs[0].end,
                              count=len(recs), examples=examples, type_pairs=pairs)
        if group.count >= min_repeat:
            group.suggestion = relation_suggestion(group, recs, onto, onto_path, entity_types)
        relation_groups.append(group)
    relation_groups.sort(key=lambda g: (-g.count, g.relation, g.reason, g.offending_type or ""))

    # ---- entities, properties and relation attributes
    ent_records = ext.entity_rejections
    ent_reasons: Counter[str] = Counter()
    EntKey = tuple[str, str | None, str | None, str, str | None]
    ent_buckets: dict[EntKey, list[tuple[Rejection, str, str]]] = {}
    for rec in ent_records:
        reason = rec.reason.value
        ent_reasons[reason] += 1
        on_relation = rec.on_relation()
        etype = None if on_relation else rec.entity_type
        rel = rec.relation if on_relation else None
        if reason == Reason.MISSING_REQUIRED_PROPERTY.value and rec.allowed:
            props: list[tuple[str | None, str]] = [(p, "") for p in rec.allowed]
        else:
            props = [(rec.property, rec.value or "")]
        for prop, value in props:
            ent_buckets.setdefault((rec.kind, etype, rel, reason, prop), []).append((rec, prop or "", value))
        rows.append(Row(
            kind=rec.kind, reason=reason, relation=rec.relation or "",
            subject=(rec.subject if on_relation else rec.entity_name) or "",
            subject_type=(rec.subject_type if on_relation else rec.entity_type) or "",
            object=rec.object or "", object_type=rec.object_type or "",
            attributes=_attributes_text(rec) if on_relation else "",
            chunk_id=rec.chunk_id or "", document_id=rec.document_id or "", message=rec.message,
        ))
    entity_groups: list[EntityGroup] = []
    for (kind, etype, rel, reason, prop), entries in ent_buckets.items():
        examples = []
        for rec, p, value in entries[:max_examples]:
            name = (rec.subject if rel else rec.entity_name) or ""
            obj = (rec.object or "") if rel else ""
            examples.append(EntityExample(
                name=name, entity_type=(rec.subject_type if rel else rec.entity_type) or "",
                relation=rel or "", object=obj, property=p, value=value, chunk_id=rec.chunk_id or "",
                document_id=rec.document_id or "", message=rec.message,
                excerpt=excerpt_for(rec.chunk_id or "", [n for n in (name, obj, value if len(value) >= 3 else "") if n]),
            ))
        values = list(dict.fromkeys(v for _, _, v in entries if v))
        allowed = (list(entries[0][0].allowed) or _enum_values(onto, etype, rel, prop)
                   if reason == Reason.INVALID_ENUM_VALUE.value else [])
        group = EntityGroup(kind=kind, entity_type=etype, relation=rel, reason=reason, property=prop,
                            count=len(entries), examples=examples, values=values, allowed_values=allowed)
        if group.count >= min_repeat:
            group.suggestion = entity_suggestion(group, onto, onto_path)
        entity_groups.append(group)
    entity_groups.sort(key=lambda g: (-g.count, g.entity_type or g.relation or "", g.reason, g.property or ""))

    # ---- failed chunks
    failed: list[FailedChunk] = []
    for fc in ext.failed_chunks:
        last = fc.raw_responses[-1] if fc.raw_responses else ""
        failed.append(FailedChunk(
            chunk_id=fc.chunk_id, document_id=fc.document_id or "", error=fc.error,
            raw_responses=len(fc.raw_responses), raw_excerpt=(last[:400] + " …") if len(last) > 400 else last,
            excerpt=excerpt_for(fc.chunk_id, []), reason=fc.reason.value,
        ))

    # ---- audited repairs
    repair_buckets: dict[str, list[Repair]] = {}
    for rep in ext.repairs:
        repair_buckets.setdefault(rep.reason, []).append(rep)
    repair_groups = [
        RepairGroup(
            reason=reason, count=len(recs),
            examples=[RepairExample(before=_item_text(r.before), after=_item_text(r.after), chunk_id=r.chunk_id or "",
                                    document_id=r.document_id or "", message=r.message,
                                    excerpt=excerpt_for(r.chunk_id or "", _item_names(r.before, r.after)))
                      for r in recs[:max_examples]],
            relations=dict(Counter(as_text(r.before["relation"]) for r in recs if r.before.get("relation")).most_common()),
        )
        for reason, recs in repair_buckets.items()
    ]
    repair_groups.sort(key=lambda g: (-g.count, g.reason))

    kept_rel, kept_ent, refused = len(ext.relations), len(ext.entities), len(rel_records)
    totals = Totals(
        kept_relations=kept_rel, refused_relations=refused,
        refusal_rate=round(refused / (kept_rel + refused), 4) if (kept_rel + refused) else 0.0,
        kept_entities=kept_ent, refused_entities=len(ent_records),
        chunks=len(ext.chunks), failed_chunks=len(failed), repairs=len(ext.repairs),
    )
    return Report(
        source=label, ontology_path=onto_path, totals=totals,
        relation_reasons=dict(rel_reasons.most_common()), entity_reasons=dict(ent_reasons.most_common()),
        relation_groups=relation_groups, entity_groups=entity_groups, failed_chunks=failed, rows=rows,
        min_repeat=min_repeat, notes=notes,
        repair_reasons={g.reason: g.count for g in repair_groups}, repair_groups=repair_groups,
        merges=[MergeRow(entity_type=m.type, canonical=m.canonical_name, merged=list(m.merged_names),
                         rule=m.rule.value if hasattr(m.rule, "value") else str(m.rule), score=m.score,
                         evidence=m.evidence) for m in ext.merges],
        skipped_files=[s.model_dump() for s in ext.skipped_files],
    )


def _item_text(item: Mapping[str, Any]) -> str:
    """A repair's before/after item as one line: a triple ``(s : T) -[R]-> (o : T)`` or an entity ``name : T``."""
    if "relation" in item:
        return (f"({as_text(item.get('subject'))} : {as_text(item.get('subject_type'))}) -[{as_text(item.get('relation'))}]-> "
                f"({as_text(item.get('object'))} : {as_text(item.get('object_type'))})")
    if "name" in item or "type" in item:
        return f"{as_text(item.get('name'))} : {as_text(item.get('type'))}"
    return as_text(dict(item))


def _item_names(*items: Mapping[str, Any]) -> list[str]:
    names = [as_text(it.get(k)) for it in items for k in ("subject", "object", "name")]
    return list(dict.fromkeys(n for n in names if n))


def _enum_values(onto: Ontology | None, etype: str | None, relation: str | None, prop: str | None) -> list[str]:
    """Declared values of an enum, for records of files that did not store them (format /1)."""
    if onto is None or not prop:
        return []
    specs = onto.relation_attributes if relation else (onto.classes[etype].properties if etype in onto.classes else {})
    spec = specs.get(prop)
    return list(spec.values) if spec is not None and spec.kind == "enum" else []


# Keys of a raw triple that are not relation attributes (as the validator reads them).
_TRIPLE_KEYS = frozenset({"relation", "subject", "subject_type", "object", "object_type", "attributes"})
