"""The precision-recall curve of the classify strategy's probability threshold
(``GRAPHRAG_MIN_FACT_PROBABILITY``), from recorded answers (no model call).

    python -m benchmarks.quality.threshold [--corpus got-classify-stripped ...] [--out FILE]
    python -m benchmarks.quality.threshold --corpus got-classify-stripped --replay REC.json --limit 3

``--replay`` and ``--limit N`` score a recording of the first N paragraphs of the GoT corpus (what
``benchmarks.extract_speed --limit N --record-dir DIR`` writes) against the gold cut to them.

Each threshold runs the default pipeline (the ladder's ``+related orphans`` rung) on a classify
corpus's recording and scores it against the gold; the table lists relation P/R/F1 (exact and
alias-tolerant) per threshold, and the threshold with the best exact relation F1 among those with
exact precision of at least ``--min-precision`` (0.70, the issue's target) is marked, else the best
F1 overall. Development data only: the GoT and observatory corpora, never a held-out benchmark.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from dataclasses import replace
from pathlib import Path

from graphrag_got.errors import GraphragGotError
from graphrag_got.ontology.model import Ontology

from .ladder import CORPORA, RUNGS, GoldCorpus, Rung, _rel, check_corpus, run_rung, select_corpora
from .score import read_extraction_file
from .stripped import write_stripped
from .tables import fmt_ratio, markdown_table

THRESHOLDS = (0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
CLASSIFY_CORPORA = tuple(c.name for c in CORPORA if c.settings.get("extraction") == "classify")


def curve(spec: GoldCorpus, thresholds: tuple[float, ...] = THRESHOLDS, limit: int = 0) -> list[tuple[float, object]]:
    """(threshold, RungResult) for every threshold, on one corpus's recording (``limit``: its first
    paragraphs only, the gold cut to them)."""
    check_corpus(spec)
    default = next(r for r in RUNGS if r.name == "+related orphans")
    out = []
    with tempfile.TemporaryDirectory(prefix="graphrag-threshold-") as tmp:
        onto_path = write_stripped(spec.ontology, Path(tmp)) if spec.stripped else spec.ontology
        onto, gold = Ontology.from_file(onto_path), read_extraction_file(spec.gold)
        if limit:
            from benchmarks.extract_speed import _corpus, _gold_for
            from graphrag_got.config import Settings
            from graphrag_got.ingest.chunking import read_corpus

            spec = replace(spec, corpus=_corpus(limit, Path(tmp)))
            ck = Settings().with_overrides(**spec.settings).chunking
            ids = {c.id for d in read_corpus(spec.corpus, kind=ck.chunker, min_chars=ck.min_chars,
                                             max_chars=ck.max_chars) for c in d.chunks}
            gold = _gold_for(gold, ids)
        for i, t in enumerate(thresholds):
            rung = Rung(f"threshold {t:g}", lambda s, t=t: default.configure(s).with_overrides(min_fact_probability=t))
            out.append((t, run_rung(rung, Path(tmp) / f"t{i}", ontology=onto, gold=gold, replay=spec.replay,
                                    corpus=spec.corpus, settings=spec.settings)))
    return out


def best(points: list[tuple[float, object]], min_precision: float) -> float:
    ok = [(t, r) for t, r in points if r.score.exact.relations.precision >= min_precision] or points
    return max(ok, key=lambda p: (p[1].score.exact.relations.f1, -p[0]))[0]


def curve_table(points: list[tuple[float, object]], chosen: float) -> str:
    header = ["threshold", "relation P exact", "relation R exact", "relation F1 exact", "relation P tolerant",
              "relation R tolerant", "relation F1 tolerant", "entity F1 exact", "kept", "low_probability"]
    rows = []
    for t, r in points:
        e, tol = r.score.exact, r.score.tolerant
        rows.append([f"{t:g}" + (" (chosen)" if t == chosen else ""),
                     *(fmt_ratio(v) for v in (e.relations.precision, e.relations.recall, e.relations.f1,
                                              tol.relations.precision, tol.relations.recall, tol.relations.f1,
                                              e.entities.f1)),
                     str(r.kept), str(r.extraction_counts.get("by_reason", {}).get("low_probability", 0))])
    return markdown_table(header, rows, align="l" + "r" * (len(header) - 1))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality.threshold", description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", default=[], help=f"one of {', '.join(CLASSIFY_CORPORA)} (repeatable)")
    ap.add_argument("--min-precision", type=float, default=0.70)
    ap.add_argument("--replay", type=Path, help="another recording of the one corpus named")
    ap.add_argument("--limit", type=int, default=0, help="the recording covers only the first N paragraphs")
    ap.add_argument("--out", type=Path, help="also write the tables to this file")
    args = ap.parse_args(argv)
    try:
        specs = select_corpora(args.corpus or list(CLASSIFY_CORPORA))
        if args.replay:
            specs = [replace(specs[0], replay=args.replay)]
        specs = [s for s in specs if s.replay.exists() or args.corpus]
        parts = []
        for spec in specs:
            points = curve(spec, limit=args.limit)
            chosen = best(points, args.min_precision)
            parts.append(f"## {spec.name}: {spec.title}\n\nrecording `{_rel(spec.replay)}`, load average "
                         f"{os.getloadavg()[0]:.2f}\n\n{curve_table(points, chosen)}\n")
    except GraphragGotError as exc:
        print(f"error: {exc}")
        return 1
    text = "\n".join(parts) or "no classify corpus has a recording yet\n"
    print(text)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
