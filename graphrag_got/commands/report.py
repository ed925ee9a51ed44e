"""`graphrag-got report [EXTRACTION_JSON]`: the discarded-relations report (Markdown, HTML, CSV, JSON)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "report",
        help="write the report of what the validator refused, grouped with suggestions",
        description="Group the refused relations, entities and properties of an extraction and say, per "
        "repeated pattern, whether the ontology or the model is likely at fault.",
    )
    p.add_argument("extraction", nargs="?", default=None, metavar="EXTRACTION_JSON",
                   help="extraction file (default: <out dir>/extraction.json)")
    p.add_argument("--out-dir", default=None, metavar="DIR", help="where the report files go (default: the out dir)")
    p.add_argument("--format", default=None, metavar="FMTS",
                   help="comma-separated formats among md,html,csv,json (default: all)")
    p.add_argument("--examples", type=int, default=3, metavar="N", help="examples shown per group (default: 3)")
    p.add_argument("--min-repeat", type=int, default=2, metavar="N",
                   help="a group gets a suggestion from this many rejections on (default: 2)")
    p.add_argument("--top", type=int, default=5, metavar="N", help="groups printed on the terminal (default: 5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.report import discarded as report_mod
    from graphrag_got.report.discarded_build import build_report

    extraction = Path(args.extraction) if getattr(args, "extraction", None) else settings.files.out_dir / "extraction.json"
    out_dir = Path(args.out_dir) if getattr(args, "out_dir", None) else settings.files.out_dir
    formats = report_mod.parse_formats(getattr(args, "format", None) or ",".join(report_mod.FORMATS))
    # The configured ontology (what the user edits now) when it exists; otherwise the one the
    # extraction names, loaded leniently by build_report.
    ontology = settings.files.ontology_path if Path(settings.files.ontology_path).is_file() else None
    rep = build_report(
        extraction, ontology,
        max_examples=max(0, getattr(args, "examples", 3)),
        min_repeat=max(1, getattr(args, "min_repeat", 2)),
    )
    written = report_mod.write_report(extraction, out_dir, formats, report=rep)

    t = rep.totals
    print(f"relations: {t.kept_relations} kept, {t.refused_relations} refused ({t.refusal_rate * 100:.1f}%); "
          f"entity/property rejections: {t.refused_entities}; failed chunks: {t.failed_chunks}")
    for note in rep.notes:
        print(f"note: {note}")
    top = max(0, getattr(args, "top", 5))
    groups = [(g.count, f"{g.relation or '(no relation)'} {g.reason}" + (f" {g.offending_type}" if g.offending_type else ""),
               g.suggestion) for g in rep.relation_groups]
    groups += [(g.count, f"{g.entity_type or g.relation or '(no class)'} {g.reason}" + (f" {g.property}" if g.property else ""),
                g.suggestion) for g in rep.entity_groups]
    groups.sort(key=lambda x: -x[0])
    if groups and top:
        print("top groups:")
        for count, label, suggestion in groups[:top]:
            # Terminal output: strip control characters from model-written names.
            print(f"  {count:>4}x  {_plain(label)}")
            if suggestion:
                print(f"         -> {_plain(suggestion)}")
    for fmt, path in written.items():
        print(f"wrote {fmt}: {path}")
    return 0


def _plain(text: str) -> str:
    return "".join(ch if ch.isprintable() else " " for ch in text)
