"""The discarded-relations report's model: plain dataclasses (groups, examples, totals, CSV rows, the
:class:`Report` itself) and the text helpers every part of the report shares (untrusted values as
text, case- and accent-folding, source excerpts with highlighted names).

Built by :mod:`graphrag_got.report.discarded_build`, rendered by
:mod:`graphrag_got.report.discarded_render`, written by :mod:`graphrag_got.report.discarded`.
"""

from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Iterable


@dataclass
class Excerpt:
    """Source text around the names of a rejected item; ``highlights`` are ``[start, end)`` offsets."""

    text: str
    highlights: list[tuple[int, int]] = field(default_factory=list)
    truncated: bool = False
    location: str = ""  # where in its document: "p. 12" (PDF), "Installation > Network" (headings), or ""


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
    reason: str = "unusable_answer"  # context_overflow | provider | unusable_answer


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
    skipped_files: list[dict[str, str]] = field(default_factory=list)  # inputs not read: path, reason, message

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


# ============================================================================ text helpers
def as_text(value: Any) -> str:
    """Untrusted value -> display string (None -> "", non-strings as compact JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def _fold_char(ch: str) -> str:
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)).casefold()
    return base if len(base) == 1 else ch.casefold() if len(ch.casefold()) == 1 else ch


def fold(text: str) -> str:
    """Lower case and accents stripped, one output char per input char (offsets stay valid)."""
    return "".join(_fold_char(ch) for ch in text)


WS = re.compile(r"\s+")


def make_excerpt(text: str, names: Iterable[str], *, max_chars: int = 320, context: int = 90) -> Excerpt:
    """Whitespace-collapsed ``text`` with every occurrence of ``names`` highlighted (case and accent
    insensitive). Long texts are cut to windows of ``context`` chars around the first occurrence of
    each name, joined by ``…``; without any occurrence, the start of the text."""
    flat = WS.sub(" ", text).strip()
    folded = fold(flat)
    spans: list[tuple[int, int]] = []
    firsts: list[tuple[int, int]] = []
    for name in names:
        needle = fold(WS.sub(" ", name).strip())
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
