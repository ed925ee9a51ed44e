"""The discarded-relations report: what the validator refused, grouped so a user can tell whether the
text, the model or the ontology is at fault, and what the audited repair changed before validating
(every repair, grouped by reason, with the item before and after).

The report is built from the extraction data (``extraction.json`` or the same dict), never from log
lines. :func:`~graphrag_got.report.discarded_build.build_report` returns a
:class:`~graphrag_got.report.discarded_model.Report` (plain dataclasses); the renderers of
:mod:`graphrag_got.report.discarded_render` (``to_markdown``, ``to_html``, ``to_csv``, ``to_json``)
turn it into text, and :func:`write_report` (here) writes the chosen formats atomically.

Everything taken from a rejection (names, types, relation names, messages, model output) is
untrusted: it may be missing, not a string, very long, or contain markup. Renderers escape it for
their format (HTML entities; Markdown backslash escapes; CSV formula prefixes neutralised).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from graphrag_got.common.files import write_text_atomic
from graphrag_got.errors import ConfigError
from graphrag_got.ontology.model import Ontology
from graphrag_got.report.discarded_build import build_report
from graphrag_got.report.discarded_model import Report
from graphrag_got.report.discarded_render import RENDERERS

FORMATS = ("md", "html", "csv", "json")
REPORT_BASENAME = "discarded_report"


def parse_formats(formats: str | Iterable[str]) -> tuple[str, ...]:
    """``"md,html"`` or an iterable -> validated, de-duplicated formats."""
    items = formats.split(",") if isinstance(formats, str) else list(formats)
    out = tuple(dict.fromkeys(f.strip().lower().lstrip(".") for f in items if f and f.strip()))
    bad = [f for f in out if f not in RENDERERS]
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
            write_text_atomic(path, RENDERERS[fmt](report))
        except OSError as exc:
            raise ConfigError(f"{path}: cannot write the report ({exc}); pass another --out-dir.") from None
        written[fmt] = path
    return written
