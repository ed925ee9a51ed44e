"""Score a predicted extraction.json against a gold one: the CLI and tables around the scorer.

The scorer itself (exact and tolerant matching, how items are counted) is
:mod:`graphrag_got.teach.scoring`, which ``graphrag-got eval`` uses too; this module re-exports it.

    python -m benchmarks.quality.score PRED.json GOLD.json [--ontology ontology/got.json] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from graphrag_got.errors import GraphragGotError
from graphrag_got.ontology.model import Ontology
from graphrag_got.teach.scoring import (LEADING_ARTICLES, MODES, ModeScore, NameKeys, PRF, QualityScore,  # noqa: F401
                                        class_words, read_extraction_file, score)

from .tables import fmt_ratio, markdown_table


# ---------------------------------------------------------------------------- rendering
def summary_table(result: QualityScore) -> str:
    """Entities and relations, exact and tolerant side by side (Markdown)."""
    header = ["", "predicted", "gold"]
    for m in MODES:
        header += [f"{m} right", f"{m} P", f"{m} R", f"{m} F1"]
    rows = []
    for label, attr in (("entities", "entities"), ("relations", "relations")):
        ex: PRF = getattr(result.exact, attr)
        row: list[str] = [label, str(ex.predicted), str(ex.gold)]
        for m in result.modes:
            prf: PRF = getattr(m, attr)
            row += [_right(prf), fmt_ratio(prf.precision), fmt_ratio(prf.recall), fmt_ratio(prf.f1)]
        rows.append(row)
    return markdown_table(header, rows, align="l" + "r" * (len(header) - 1))


def relation_table(result: QualityScore) -> str:
    """One row per relation type, exact and tolerant side by side (Markdown)."""
    header = ["relation", "predicted", "gold"]
    for m in MODES:
        header += [f"{m} right", f"{m} P", f"{m} R", f"{m} F1"]
    rows = []
    for name, ex in result.exact.by_relation.items():
        row = [name, str(ex.predicted), str(ex.gold)]
        for m in result.modes:
            prf = m.by_relation[name]
            row += [_right(prf), fmt_ratio(prf.precision), fmt_ratio(prf.recall), fmt_ratio(prf.f1)]
        rows.append(row)
    return markdown_table(header, rows, align="l" + "r" * (len(header) - 1))


def _right(prf: PRF) -> str:
    """Right predictions; when several predictions hit one gold item, also the gold items found."""
    return str(prf.correct) if prf.correct == prf.found else f"{prf.correct} ({prf.found} found)"


# ---------------------------------------------------------------------------- CLI
def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.quality.score",
        description="Score an extraction.json against a gold extraction: entity and relation "
                    "precision/recall/F1, exact and alias-tolerant, per relation type.")
    p.add_argument("pred", type=Path, help="predicted extraction.json")
    p.add_argument("gold", type=Path, help="gold extraction.json (e.g. tests/data/got_extraction.json)")
    p.add_argument("--ontology", type=Path, default=Path("ontology/got.json"),
                   help="ontology the relations are read against (symmetry, class names); default %(default)s")
    p.add_argument("--json", action="store_true", help="print the scores as JSON instead of tables")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        onto = Ontology.from_file(args.ontology)
        result = score(read_extraction_file(args.pred), read_extraction_file(args.gold), onto,
                       pred_source=str(args.pred), gold_source=str(args.gold))
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({"pred": str(args.pred), "gold": str(args.gold), "ontology": str(args.ontology),
                          **result.to_dict()}, ensure_ascii=False, indent=2))
        return 0
    print(f"predicted: {args.pred}\ngold:      {args.gold}\nontology:  {args.ontology}\n")
    print(summary_table(result))
    print()
    print(relation_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
