"""The discarded-relations report: what the validator refused, grouped so a user can tell whether the
text, the model or the ontology is at fault, and what the audited repair changed before validating
(every repair, grouped by reason, with the item before and after).

The report is built from the extraction data (``extraction.json`` or the same dict), never from log
lines. :func:`build_report` returns a :class:`Report` (plain dataclasses); the renderers
:func:`to_markdown`, :func:`to_html`, :func:`to_csv` and :func:`to_json` turn it into text, and
:func:`write_report` writes the chosen formats atomically.

Everything taken from a rejection (names, types, relation names, messages, model output) is
untrusted: it may be missing, not a string, very long, or contain markup. Renderers escape it for
their format (HTML entities; Markdown backslash escapes; CSV formula prefixes neutralised).
"""

from __future__ import annotations

import csv
import dataclasses
import difflib
import io
import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from graphrag_got.common.files import write_text_atomic
from graphrag_got.report.html import render
from graphrag_got.errors import ConfigError
from graphrag_got.extract.extraction import Extraction, Reason, Rejection, Repair
from graphrag_got.ontology.model import Ontology

FORMATS = ("md", "html", "csv", "json")
REPORT_BASENAME = "discarded_report"
CSV_COLUMNS = (
    "kind", "reason", "relation", "subject", "subject_type", "object", "object_type", "attributes",
    "chunk_id", "document_id", "message",
)
_DISPLAY_MAX = 200  # longest untrusted field shown in md/html (CSV and JSON keep full values)


# ============================================================================ model
@dataclass
class Excerpt:
    """Source text around the names of a rejected item; ``highlights`` are ``[start, end)`` offsets."""

    text: str
    highlights: list[tuple[int, int]] = field(default_factory=list)
    truncated: bool = False


@dataclass
class RelationExample:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    attributes: str  # the relation attributes the model gave, "name: value; ..."
    chunk_id: str
    document_id: str
    message: str
    excerpt: Excerpt | None = None


@dataclass
class RelationGroup:
    """All relation rejections sharing (relation, reason, offending type)."""

    relation: str
    reason: str
    offending_type: str | None
    offending_end: str | None  # "subject" | "object" | None
    count: int
    examples: list[RelationExample]
    type_pairs: list[tuple[str, str]]  # distinct (subject_type, object_type) seen in the group
    suggestion: str | None = None


@dataclass
class EntityExample:
    """An entity (``name``, ``entity_type``) or, for a relation attribute, a triple (``name`` is the
    subject, ``object`` and ``relation`` are set)."""

    name: str
    entity_type: str
    relation: str
    object: str
    property: str
    value: str
    chunk_id: str
    document_id: str
    message: str
    excerpt: Excerpt | None = None


@dataclass
class EntityGroup:
    """All entity/property rejections sharing (kind, class or relation, reason, property).

    ``relation`` is set (and ``entity_type`` is None) for relation attributes."""

    kind: str
    entity_type: str | None
    relation: str | None
    reason: str
    property: str | None
    count: int
    examples: list[EntityExample]
    values: list[str]  # distinct offending values (invalid_enum_value)
    allowed_values: list[str]
    suggestion: str | None = None


@dataclass
class FailedChunk:
    chunk_id: str
    document_id: str
    error: str
    raw_responses: int
    raw_excerpt: str  # start of the last raw model answer
    excerpt: Excerpt | None = None


@dataclass
class MergeRow:
    """One entity-resolution merge: the names of one class joined under the canonical (display) name."""

    entity_type: str
    canonical: str
    merged: list[str]
    rule: str
    score: float
    evidence: str


@dataclass
class RepairExample:
    """One audited repair: the item as the model wrote it and as it was validated."""

    before: str
    after: str
    chunk_id: str
    document_id: str
    message: str
    excerpt: Excerpt | None = None


@dataclass
class RepairGroup:
    """All repairs sharing a reason (a ``RepairReason`` value: ``inferred_class``, ``flipped_ends``, ...)."""

    reason: str
    count: int
    examples: list[RepairExample]
    relations: dict[str, int] = field(default_factory=dict)  # relation name -> repairs in this group


@dataclass
class Totals:
    kept_relations: int  # aggregated relations in the extraction (one per distinct fact)
    refused_relations: int  # raw refused triples
    refusal_rate: float  # refused / (kept + refused), 0.0 when both are 0
    kept_entities: int
    refused_entities: int
    chunks: int
    failed_chunks: int
    repairs: int = 0


@dataclass
class Row:
    """One rejection, flat: a row of the CSV."""

    kind: str
    reason: str
    relation: str
    subject: str
    subject_type: str
    object: str
    object_type: str
    attributes: str
    chunk_id: str
    document_id: str
    message: str


@dataclass
class Report:
    source: str
    ontology_path: str | None
    totals: Totals
    relation_reasons: dict[str, int]
    entity_reasons: dict[str, int]
    relation_groups: list[RelationGroup]
    entity_groups: list[EntityGroup]
    failed_chunks: list[FailedChunk]
    rows: list[Row]
    min_repeat: int
    notes: list[str] = field(default_factory=list)
    repair_reasons: dict[str, int] = field(default_factory=dict)
    repair_groups: list[RepairGroup] = field(default_factory=list)
    merges: list[MergeRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


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
def _s(value: Any) -> str:
    """Untrusted value -> display string (None -> "", non-strings as compact JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _fold_char(ch: str) -> str:
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)).casefold()
    return base if len(base) == 1 else ch.casefold() if len(ch.casefold()) == 1 else ch


def _fold(text: str) -> str:
    """Lower case and accents stripped, one output char per input char (offsets stay valid)."""
    return "".join(_fold_char(ch) for ch in text)


_WS = re.compile(r"\s+")


def make_excerpt(text: str, names: Iterable[str], *, max_chars: int = 320, context: int = 90) -> Excerpt:
    """Whitespace-collapsed ``text`` with every occurrence of ``names`` highlighted (case and accent
    insensitive). Long texts are cut to windows of ``context`` chars around the first occurrence of
    each name, joined by ``…``; without any occurrence, the start of the text."""
    flat = _WS.sub(" ", text).strip()
    folded = _fold(flat)
    spans: list[tuple[int, int]] = []
    firsts: list[tuple[int, int]] = []
    for name in names:
        needle = _fold(_WS.sub(" ", name).strip())
        if not needle:
            continue
        start = folded.find(needle)
        if start >= 0:
            firsts.append((start, start + len(needle)))
        while start >= 0:
            spans.append((start, start + len(needle)))
            start = folded.find(needle, start + len(needle))
    spans = _merge(spans)
    if len(flat) <= max_chars:
        return Excerpt(flat, spans, False)
    if not firsts:
        return Excerpt(flat[:max_chars].rstrip() + " …", [], True)
    windows = _merge([(max(0, a - context), min(len(flat), b + context)) for a, b in sorted(firsts)])
    parts: list[str] = []
    out_spans: list[tuple[int, int]] = []
    pos = 0
    for i, (ws, we) in enumerate(windows):
        sep = "… " if (i == 0 and ws > 0) else (" … " if i > 0 else "")
        parts.append(sep)
        pos += len(sep)
        for a, b in spans:
            if a >= ws and b <= we:
                out_spans.append((pos + a - ws, pos + b - ws))
        parts.append(flat[ws:we])
        pos += we - ws
    if windows[-1][1] < len(flat):
        parts.append(" …")
    return Excerpt("".join(parts), out_spans, True)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _attributes_text(rec: Rejection) -> str:
    """The relation attributes the model gave a refused triple, as ``name: value; ...``."""
    item = rec.item
    if "relation" not in item:  # not a triple (a non-object answer is kept as {"value": ...})
        return ""
    given = {k: v for k, v in item.items() if k not in _TRIPLE_KEYS}
    given.update(_as_dict(item.get("attributes")))
    return "; ".join(f"{k}: {_s(v)}" for k, v in given.items() if v not in (None, ""))


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
    entity_types: dict[str, set[str]] = {}
    for ent in ext.entities:
        entity_types.setdefault(_fold(_WS.sub(" ", ent.name).strip()), set()).add(ent.type)

    def excerpt_for(chunk_id: str, names: Sequence[str]) -> Excerpt | None:
        if chunk_id not in chunk_text:
            return None
        return make_excerpt(chunk_text[chunk_id], names, max_chars=excerpt_chars)

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
            group.suggestion = _relation_suggestion(group, recs, onto, onto_path, entity_types)
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
            group.suggestion = _entity_suggestion(group, onto, onto_path)
        entity_groups.append(group)
    entity_groups.sort(key=lambda g: (-g.count, g.entity_type or g.relation or "", g.reason, g.property or ""))

    # ---- failed chunks
    failed: list[FailedChunk] = []
    for fc in ext.failed_chunks:
        last = fc.raw_responses[-1] if fc.raw_responses else ""
        failed.append(FailedChunk(
            chunk_id=fc.chunk_id, document_id=fc.document_id or "", error=fc.error,
            raw_responses=len(fc.raw_responses), raw_excerpt=(last[:400] + " …") if len(last) > 400 else last,
            excerpt=excerpt_for(fc.chunk_id, []),
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
            relations=dict(Counter(_s(r.before["relation"]) for r in recs if r.before.get("relation")).most_common()),
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
    )


def _item_text(item: Mapping[str, Any]) -> str:
    """A repair's before/after item as one line: a triple ``(s : T) -[R]-> (o : T)`` or an entity ``name : T``."""
    if "relation" in item:
        return (f"({_s(item.get('subject'))} : {_s(item.get('subject_type'))}) -[{_s(item.get('relation'))}]-> "
                f"({_s(item.get('object'))} : {_s(item.get('object_type'))})")
    if "name" in item or "type" in item:
        return f"{_s(item.get('name'))} : {_s(item.get('type'))}"
    return _s(dict(item))


def _item_names(*items: Mapping[str, Any]) -> list[str]:
    names = [_s(it.get(k)) for it in items for k in ("subject", "object", "name")]
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


# ============================================================================ suggestions
def _names(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _accepting(onto: Ontology, pairs: Iterable[tuple[str, str]], exclude: str, end: str | None,
               offending: str | None) -> list[str]:
    """Relations (ontology order) that accept one of the type pairs; with a missing end, those that
    accept the offending type at its end."""
    wanted: set[str] = set()
    for s, o in pairs:
        if s and o:
            wanted.update(onto.relations_accepting(s, o))
        elif offending and end == "object":
            wanted.update(r.name for r in onto.relations if offending in r.range)
        elif offending and end == "subject":
            wanted.update(r.name for r in onto.relations if offending in r.domain)
    return [r.name for r in onto.relations if r.name in wanted and r.name != exclude]


def _relation_suggestion(g: RelationGroup, recs: Sequence[Rejection], onto: Ontology | None,
                         onto_path: str | None, entity_types: Mapping[str, set[str]]) -> str | None:
    where = f"in {onto_path}" if onto_path else "in the ontology"
    n = f"{g.count}x"
    rel = g.relation or "(no relation name)"
    t = g.offending_type or "(no type)"
    pairs_txt = ", ".join(f"{s or '?'} → {o or '?'}" for s, o in g.type_pairs[:4])
    if g.reason in ("range_violation", "domain_violation"):
        which = "range" if g.reason == "range_violation" else "domain"
        end = "object" if which == "range" else "subject"
        text = f"{rel} refused {n} with {end} type {t}: widen its {which} to include {t} {where}"
        if onto is not None:
            others = _accepting(onto, g.type_pairs, rel, g.offending_end, g.offending_type)
            if others:
                text += f", or the text means another relation (e.g. {_names(others[:4])}, which accept {pairs_txt})"
            else:
                text += f"; no existing relation accepts {pairs_txt}, so if the text says this, the ontology lacks it"
        return text + "."
    if g.reason == "unknown_relation":
        text = f"The model used relation {rel} {n}, which the ontology does not define: add it {where} if the text needs it"
        if onto is not None:
            names = [r.name for r in onto.relations]
            close = difflib.get_close_matches(rel.upper(), names, n=2, cutoff=0.7)
            fitting = _accepting(onto, g.type_pairs, rel, None, None)
            hints = []
            if close:
                hints.append(f"the closest existing name is {_names(close)}")
            if fitting:
                hints.append(f"relations that accept {pairs_txt}: {', '.join(fitting[:5])}")
            if hints:
                text += ", or the model meant an existing one (" + "; ".join(hints) + ")"
        return text + "."
    if g.reason == "not_in_text":
        return (f"{rel} refused {n} because an end is not mentioned in its chunk: the model invented or "
                "misremembered the name. If these are spelling variants the text does use, lower "
                "GRAPHRAG_MENTION_THRESHOLD; otherwise nothing to fix in the ontology.")
    if g.reason == "ends_not_near":
        return (f"{rel} refused {n} because the text never mentions both ends within the evidence window: "
                "the model linked names that merely share a chunk. If your text states facts across "
                "several sentences, widen GRAPHRAG_EVIDENCE_WINDOW.")
    if g.reason == "no_cue":
        return (f"{rel} refused {n} because none of its cues (`indicios` {where}) occurs where the text mentions "
                "both ends: the model linked names the sentence relates in another way. If the text does state "
                "these facts in words the cues miss, add those words to the relation's `indicios` and "
                "revalidate (no LLM call); GRAPHRAG_RELATION_CUES=false turns the check off.")
    if g.reason in ("subject_not_extracted", "object_not_extracted"):
        end = "subject" if g.reason.startswith("subject") else "object"
        return (f"{rel} refused {n} because the model named {'a subject' if end == 'subject' else 'an object'} it did not extract as an entity: the text "
                "and the ontology are probably fine; a bigger model or a prompt that insists on extracting "
                "every entity a relation uses should fix it.")
    if g.reason in ("subject_type_mismatch", "object_type_mismatch"):
        end = "subject" if g.reason.startswith("subject") else "object"
        seen: set[str] = set()
        for rec in recs:
            seen |= entity_types.get(_fold(_WS.sub(" ", rec.end_name or "").strip()), set())
        seen.discard(t)
        extracted = f" while the entity was extracted as {_names(sorted(x for x in seen if x))}" if seen else ""
        return (f"{rel} refused {n}: the triple types its {end} as {t}{extracted}. The model is inconsistent "
                f"about the class; make the class comments {where} tell these classes apart, or use a bigger model.")
    if g.reason == "unknown_class":
        text = f"The model used class {t} {n} in {rel} triples, which the ontology does not have: add it {where} if the text needs it"
        if onto is not None:
            close = difflib.get_close_matches(t, list(onto.classes), n=2, cutoff=0.5)
            if close:
                text += f", or it means {_names(close)}"
        return text + "."
    if g.reason == "self_relation":
        return f"{rel} refused {n} because subject and object are the same entity: a model mistake, not an ontology gap."
    if g.reason in ("malformed", "empty_name"):
        return (f"{n} triples came out incomplete ({g.reason}): the model's output, not the text or the ontology; "
                "try a bigger model or a shorter chunk size.")
    return None


def _entity_suggestion(g: EntityGroup, onto: Ontology | None, onto_path: str | None) -> str | None:
    where = f"in {onto_path}" if onto_path else "in the ontology"
    n = f"{g.count}x"
    cls = g.entity_type or g.relation or "(no class)"
    prop = g.property or "(unnamed property)"
    if g.reason == "invalid_enum_value":
        vals = ", ".join(repr(v) for v in g.values) or "(values not recorded)"
        text = f"{cls}.{prop} got {vals} ({n})"
        if g.allowed_values:
            text += f"; allowed: {', '.join(g.allowed_values)}"
            close = {v: difflib.get_close_matches(v, g.allowed_values, n=1, cutoff=0.4) for v in g.values}
            close_txt = ", ".join(f"{v!r} ~ {c[0]}" for v, c in close.items() if c)
            text += f". Add the value(s) to the enum {where} if they are legitimate"
            if close_txt:
                text += f", or they are the model's wording for an allowed one ({close_txt})"
        return text + "."
    if g.reason == "unknown_property":
        return f"The model wrote property {prop} on {cls} {n}: add it to {cls} {where} if you want it kept."
    if g.reason == "missing_required_property":
        return (f"{cls} lacked required property {prop} {n}: if the text often does not say it, make it optional "
                f"{where}; otherwise a bigger model may fill it.")
    if g.reason == "unknown_attribute":
        return f"The model wrote relation attribute {prop} {n}: add it to atributos_de_relacion {where} if you want it kept."
    if g.reason == "unknown_class":
        text = f"The model used class {cls} {n}, which the ontology does not have: add it {where} if the text needs it"
        if onto is not None and g.entity_type:
            close = difflib.get_close_matches(g.entity_type, list(onto.classes), n=2, cutoff=0.5)
            if close:
                text += f", or it means {_names(close)}"
        return text + "."
    if g.reason == "not_in_text":
        return (f"{cls} refused {n} because the name is not mentioned in its chunk (an invented or "
                "remembered name, not read in the text); if the text spells it differently, lower "
                "GRAPHRAG_MENTION_THRESHOLD.")
    if g.reason == "no_fact":
        return (f"{cls} refused {n} because no kept relation uses it: usually a name the model listed as a "
                "thing that is none (a motto, a title); if your corpus names entities that stand alone, "
                "set GRAPHRAG_ORPHAN_ENTITIES=keep.")
    if g.reason in ("malformed", "empty_name"):
        return (f"{n} entities came out incomplete ({g.reason}): the model's output, not the text or the ontology; "
                "try a bigger model.")
    return None


# ============================================================================ renderers
def _clip(s: str, n: int = _DISPLAY_MAX) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# Characters that start Markdown markup mid-line. "_" is escaped only at a word edge (GFM ignores
# intra-word underscores), so identifiers like range_violation stay readable in the raw file.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


def _md(value: Any, clip: int = _DISPLAY_MAX, *, strip: bool = True) -> str:
    """Untrusted text for Markdown: one line, markup backslash-escaped, HTML made inert."""
    s = _WS.sub(" ", _s(value))
    s = _clip(s.strip() if strip else s, clip)
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    s = _MD_SPECIAL.sub(r"\\\1", s)
    return "\\" + s if s[:1] in ("#", "+", "-", "=") else s


def _md_excerpt(ex: Excerpt) -> str:
    out, pos = [], 0
    for a, b in ex.highlights:
        out.append(_md(ex.text[pos:a], 10**6, strip=False))
        out.append("**" + _md(ex.text[a:b], 10**6, strip=False) + "**")
        pos = b
    out.append(_md(ex.text[pos:], 10**6, strip=False))
    return "".join(out)


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def _group_title(g: RelationGroup) -> str:
    t = f" · {g.offending_end} type {g.offending_type}" if g.offending_type else ""
    return f"{g.relation or '(no relation)'} · {g.reason}{t}"


def _entity_title(g: EntityGroup) -> str:
    parts = [g.entity_type or (f"relation {g.relation}" if g.relation else "(no class)"), g.reason]
    if g.property:
        parts.append(f"property {g.property}")
    return f"{g.kind}: " + " · ".join(parts)


def to_markdown(report: Report) -> str:
    t = report.totals
    L: list[str] = ["# Discarded relations report", ""]
    L.append(f"Extraction: {_md(report.source, 500)}" + (f" · ontology: {_md(report.ontology_path, 500)}" if report.ontology_path else ""))
    L.append("")
    for note in report.notes:
        L.append(f"> {_md(note, 10**6)}")
        L.append("")
    L += ["## Summary", "", "| | count |", "|---|---:|",
          f"| relations kept | {t.kept_relations} |", f"| relations refused | {t.refused_relations} |",
          f"| refusal rate | {_pct(t.refusal_rate)} |", f"| entities kept | {t.kept_entities} |",
          f"| entity/property rejections | {t.refused_entities} |", f"| chunks | {t.chunks} |",
          f"| failed chunks | {t.failed_chunks} |", f"| audited repairs | {t.repairs} |", ""]
    for title, reasons in (("Relation rejections by reason", report.relation_reasons),
                           ("Entity/property rejections by reason", report.entity_reasons)):
        if reasons:
            L += [f"### {title}", "", "| reason | count |", "|---|---:|"]
            L += [f"| {_md(r)} | {c} |" for r, c in reasons.items()]
            L.append("")
    L += _md_repairs(report)
    L += _md_merges(report)
    L += ["## Refused relations", ""]
    if not report.relation_groups:
        L += ["No relation was refused.", ""]
    for g in report.relation_groups:
        L += [f"### {_md(_group_title(g))} — {g.count}x", ""]
        if g.suggestion:
            L += [f"**Suggestion:** {_md(g.suggestion, 10**6)}", ""]
        for ex in g.examples:
            triple = (f"({_md(ex.subject)} : {_md(ex.subject_type)}) -\\[{_md(ex.relation)}\\]→ "
                      f"({_md(ex.object)} : {_md(ex.object_type)})")
            if not any((ex.subject, ex.subject_type, ex.relation, ex.object, ex.object_type)):
                triple = "(no usable triple)"
            if ex.attributes:
                triple += f" · {_md(ex.attributes)}"
            L.append(f"- {triple}  ")
            L.append(f"  chunk {_md(ex.chunk_id)} · {_md(ex.message)}  ")
            if ex.excerpt is not None:
                L.append(f"  > {_md_excerpt(ex.excerpt)}")
        if g.count > len(g.examples):
            L.append(f"- … and {g.count - len(g.examples)} more (see the CSV)")
        L.append("")
    L += ["## Refused entities and properties", ""]
    if not report.entity_groups:
        L += ["No entity or property was refused.", ""]
    for eg in report.entity_groups:
        L += [f"### {_md(_entity_title(eg))} — {eg.count}x", ""]
        if eg.suggestion:
            L += [f"**Suggestion:** {_md(eg.suggestion, 10**6)}", ""]
        for ee in eg.examples:
            val = f" = {_md(ee.value)}" if ee.value else ""
            prop = f" · {_md(ee.property)}{val}" if ee.property else ""
            who = (f"({_md(ee.name)}) -\\[{_md(ee.relation)}\\]→ ({_md(ee.object)})" if ee.relation
                   else f"{_md(ee.name)} : {_md(ee.entity_type)}")
            L.append(f"- {who}{prop} · chunk {_md(ee.chunk_id)} · {_md(ee.message)}  ")
            if ee.excerpt is not None:
                L.append(f"  > {_md_excerpt(ee.excerpt)}")
        if eg.count > len(eg.examples):
            L.append(f"- … and {eg.count - len(eg.examples)} more (see the CSV)")
        L.append("")
    L += ["## Failed chunks", ""]
    if not report.failed_chunks:
        L += ["Every chunk gave a usable answer.", ""]
    for fc in report.failed_chunks:
        L.append(f"- chunk {_md(fc.chunk_id)} ({_md(fc.document_id)}): {_md(fc.error)} · {fc.raw_responses} raw answer(s)  ")
        if fc.raw_excerpt:
            L.append(f"  last answer: {_md(fc.raw_excerpt, 400)}  ")
        if fc.excerpt is not None:
            L.append(f"  > {_md_excerpt(fc.excerpt)}")
    L.append("")
    return "\n".join(L)


def _md_merges(report: Report) -> list[str]:
    """Entity-resolution merges, one row each (reversible: pin non-aliases in the alias file)."""
    L = ["## Entity merges", ""]
    if not report.merges:
        return L + ["No entity was merged.", ""]
    L += ["Names of one class joined into one entity; each is recorded in extraction.json (`merges`). To undo "
          "one, list the names under `distinct` in the alias file next to the ontology and run "
          "`graphrag-got extract --revalidate`.", "", "| class | entity | merged names | rule | score |",
          "|---|---|---|---|---:|"]
    L += [f"| {_md(m.entity_type)} | {_md(m.canonical)} | {_md(', '.join(m.merged))} | {_md(m.rule)} | "
          f"{m.score:.2f} |" for m in report.merges]
    return L + [""]


def _md_repairs(report: Report) -> list[str]:
    """The audited repairs: counts by reason, then examples (before -> after) per reason."""
    L = ["## Audited repairs", ""]
    if not report.repair_groups:
        return L + ["No answer was repaired.", ""]
    L += ["Changes made to the model's answers before validation; each is recorded in extraction.json "
          "(`repairs`). `graphrag-got extract --no-repair` turns them off.", "",
          "| reason | count |", "|---|---:|"]
    L += [f"| {_md(g.reason)} | {g.count} |" for g in report.repair_groups]
    L.append("")
    for g in report.repair_groups:
        by_rel = ", ".join(f"{_md(r)} {c}" for r, c in g.relations.items())
        L += [f"### {_md(g.reason)} — {g.count}x", ""] + ([f"Relations: {by_rel}", ""] if by_rel else [])
        for ex in g.examples:
            L.append(f"- {_md(ex.before)} ⇒ {_md(ex.after)}  ")
            L.append(f"  chunk {_md(ex.chunk_id)} · {_md(ex.message, 500)}  ")
            if ex.excerpt is not None:
                L.append(f"  > {_md_excerpt(ex.excerpt)}")
        if g.count > len(g.examples):
            L.append(f"- … and {g.count - len(g.examples)} more (see extraction.json, `repairs`)")
        L.append("")
    return L


def _excerpt_segments(ex: Excerpt) -> list[tuple[str, bool]]:
    """The excerpt cut at its highlights: ``(text, highlighted)`` pieces, in order."""
    out: list[tuple[str, bool]] = []
    pos = 0
    for a, b in ex.highlights:
        out += [(ex.text[pos:a], False), (ex.text[a:b], True)]
        pos = b
    out.append((ex.text[pos:], False))
    return [seg for seg in out if seg[0]]


def to_html(report: Report) -> str:
    """One self-contained page (``templates/report.html.j2``): no script, no external resource."""
    return render(
        "report.html.j2", report=report, display_max=_DISPLAY_MAX, group_title=_group_title,
        entity_title=_entity_title, pct=_pct, excerpt_segments=_excerpt_segments,
    )


def _csv_cell(value: str) -> str:
    # A cell starting with = + - @ (or tab/CR) is run as a formula by spreadsheets; model output is
    # untrusted, so such cells get a leading apostrophe (the usual neutralisation).
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def to_csv(report: Report) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in report.rows:
        writer.writerow([_csv_cell(getattr(row, c)) for c in CSV_COLUMNS])
    return buf.getvalue()


def to_json(report: Report) -> str:
    return json.dumps(report.to_dict(), ensure_ascii=False, indent=2) + "\n"


_RENDERERS = {"md": to_markdown, "html": to_html, "csv": to_csv, "json": to_json}


# ============================================================================ writing
def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """``"md,html"`` or an iterable -> validated, de-duplicated formats."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in items if f and f.strip()))
    bad = [f for f in out if f not in _RENDERERS]
    if bad or not out:
        raise ConfigError(
            f"unknown report format(s): {', '.join(bad) or '(none given)'}; choose from {', '.join(FORMATS)}"
        )
    return out


def write_report(
    extraction: str | Path | Mapping[str, Any],
    out_dir: str | Path,
    formats: str | Iterable[str] = FORMATS,
    ontology: Ontology | str | Path | Mapping[str, Any] | None = None,
    *,
    max_examples: int = 3,
    min_repeat: int = 2,
    report: Report | None = None,
) -> dict[str, Path]:
    """Build the report (unless ``report`` is given) and write ``discarded_report.<fmt>`` files
    into ``out_dir``; returns ``{format: path}``."""
    fmts = parse_formats(formats)
    if report is None:
        report = build_report(extraction, ontology, max_examples=max_examples, min_repeat=min_repeat)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot create the report folder ({exc}); pass another --out-dir.") from None
    written: dict[str, Path] = {}
    for fmt in fmts:
        path = out / f"{REPORT_BASENAME}.{fmt}"
        try:
            write_text_atomic(path, _RENDERERS[fmt](report))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot write the report ({exc}); pass another --out-dir.") from None
        written[fmt] = path
    return written
