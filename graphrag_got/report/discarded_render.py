"""Renderers of the discarded-relations report: Markdown, HTML (``templates/report.html.j2``), CSV
and JSON, each a function of the :class:`~graphrag_got.report.discarded_model.Report`.

Everything taken from a rejection is untrusted: each renderer escapes it for its format (HTML
entities; Markdown backslash escapes; CSV formula prefixes neutralised).
"""

from __future__ import annotations

import csv
import io
import json
import re
from typing import Any

from graphrag_got.report.discarded_model import WS, EntityGroup, Excerpt, RelationGroup, Report, as_text
from graphrag_got.report.html import render

CSV_COLUMNS = (
    "kind", "reason", "relation", "subject", "subject_type", "object", "object_type", "attributes",
    "chunk_id", "document_id", "message",
)
_DISPLAY_MAX = 200  # longest untrusted field shown in md/html (CSV and JSON keep full values)


def _clip(s: str, n: int = _DISPLAY_MAX) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# Characters that start Markdown markup mid-line. "_" is escaped only at a word edge (GFM ignores
# intra-word underscores), so identifiers like range_violation stay readable in the raw file.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z]))")


def _md(value: Any, clip: int = _DISPLAY_MAX, *, strip: bool = True) -> str:
    """Untrusted text for Markdown: one line, markup backslash-escaped, HTML made inert."""
    s = WS.sub(" ", as_text(value))
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
    return "".join(out) + (f" ({_md(ex.location, 200)})" if ex.location else "")


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
        L.append(f"- chunk {_md(fc.chunk_id)} ({_md(fc.document_id)}) · {fc.reason.replace('_', ' ')}: "
                 f"{_md(fc.error)} · {fc.raw_responses} raw answer(s)  ")
        if fc.raw_excerpt:
            L.append(f"  last answer: {_md(fc.raw_excerpt, 400)}  ")
        if fc.excerpt is not None:
            L.append(f"  > {_md_excerpt(fc.excerpt)}")
    L.append("")
    if report.skipped_files:  # inputs the walk or the reader refused: never silent
        L += ["## Files not read", ""]
        L += [f"- {_md(s['path'])} · {_md(s['reason'])}: {_md(s['message'])}" for s in report.skipped_files]
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


RENDERERS = {"md": to_markdown, "html": to_html, "csv": to_csv, "json": to_json}
