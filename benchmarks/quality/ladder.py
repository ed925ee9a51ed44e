"""The ladder: pipeline configurations side by side, scored against the gold extraction.

Every rung runs the real ``run_extraction`` on the corpus with the **replay** provider, i.e. the
recorded answers of the embedded model (``tests/data/got_replay_qwen2.5-coder-1.5b.json``): zero
model calls, a few seconds per rung, same numbers on every machine. Each rung gets its own
temporary home and output folder, so no cache is shared between rungs.

A rung is a name and a function that receives the base Settings (replay provider, temporary
folders) and returns one of:

* new ``Settings`` (e.g. ``settings.with_overrides(...)``),
* a mapping of extra keyword arguments for ``run_extraction``,
* a ``(Settings, mapping)`` pair.

Later rungs (+evidence, +repair, +resolution, +verification) are added by appending to ``RUNGS``.

    python -m benchmarks.quality.ladder [--out benchmarks/quality/results] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError
from graphrag_got.extract import run_extraction
from graphrag_got.files import write_text_atomic
from graphrag_got.ontology import Ontology
from graphrag_got.progress import ProgressCallback, ProgressEvent, no_progress

from .score import MODES, QualityScore, read_extraction_file, relation_table, score
from .tables import fmt_ratio, markdown_table

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ONTOLOGY = ROOT / "ontology" / "got.json"
CORPUS = ROOT / "corpus"
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"
RESULTS = HERE / "results"
RESULTS_NAME = "got-recorded"

Configured = Settings | Mapping[str, Any] | tuple[Settings, Mapping[str, Any]]


@dataclass(frozen=True)
class Rung:
    """One pipeline configuration: ``configure(base_settings)`` says how it differs from the base."""

    name: str
    configure: Callable[[Settings], Configured]
    description: str = ""


def raw_validation(settings: Settings) -> Settings:
    """Today's pipeline as it is: the recorded answers through today's validation."""
    return settings


RUNGS: list[Rung] = [
    Rung("raw (today's validation)", raw_validation,
         "recorded answers validated against the ontology as `graphrag-got extract` does today"),
]


@dataclass(frozen=True)
class RungResult:
    rung: str
    description: str
    score: QualityScore
    entities: int  # entities kept in the extraction
    kept: int  # relations kept
    refused: int  # relations refused by validation
    refused_entities: int
    llm_calls: int  # replayed answers (the replay provider makes no model call)
    extraction_counts: dict[str, Any]  # the extraction file's own "counts"

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "description": self.description, "entities": self.entities,
                "kept": self.kept, "refused": self.refused, "refused_entities": self.refused_entities,
                "replayed_calls": self.llm_calls, "scores": self.score.to_dict()}


def _split(configured: Configured, base: Settings, rung: str) -> tuple[Settings, dict[str, Any]]:
    if isinstance(configured, Settings):
        return configured, {}
    if isinstance(configured, tuple) and len(configured) == 2 and isinstance(configured[0], Settings):
        return configured[0], dict(configured[1])
    if isinstance(configured, Mapping):
        return base, dict(configured)
    raise TypeError(f"rung {rung!r}: configure() must return Settings, a mapping of run_extraction "
                    f"keyword arguments, or a (Settings, mapping) pair; got {type(configured).__name__}")


def run_rung(rung: Rung, workdir: Path, *, ontology: Ontology, gold: Mapping[str, Any],
             replay: Path = REPLAY, corpus: Path = CORPUS) -> RungResult:
    """Extract the corpus from the recorded answers under ``rung``'s configuration and score it."""
    base = Settings(home=workdir / "home", out_dir=workdir / "out", llm_provider="replay", replay_file=replay,
                    ontology_path=Path(ontology.source), corpus_path=corpus)
    settings, kwargs = _split(rung.configure(base), base, rung.name)
    summary = run_extraction(settings, ontology, corpus, settings.out_dir / "extraction.json", **kwargs)
    pred = read_extraction_file(summary.out_path)
    result = score(pred, gold, ontology, pred_source=f"{summary.out_path} (rung {rung.name!r})",
                   gold_source="gold extraction")
    return RungResult(rung=rung.name, description=rung.description, score=result, entities=summary.entities,
                      kept=summary.relations, refused=summary.rejected_relations,
                      refused_entities=summary.rejected_entities, llm_calls=summary.llm_calls,
                      extraction_counts=dict(pred.get("counts", {})))


def run_ladder(rungs: Sequence[Rung] = RUNGS, *, ontology_path: Path = ONTOLOGY, gold_path: Path = GOLD,
               replay: Path = REPLAY, corpus: Path = CORPUS,
               progress: ProgressCallback = no_progress) -> list[RungResult]:
    onto = Ontology.from_file(ontology_path)
    gold = read_extraction_file(gold_path)
    results: list[RungResult] = []
    progress(ProgressEvent(step="ladder", done=0, total=len(rungs)))
    with tempfile.TemporaryDirectory(prefix="graphrag-quality-") as tmp:
        for i, rung in enumerate(rungs):
            results.append(run_rung(rung, Path(tmp) / f"rung{i}", ontology=onto, gold=gold, replay=replay,
                                    corpus=corpus))
            progress(ProgressEvent(step="ladder", done=i + 1, total=len(rungs), message=rung.name,
                                   finished=i + 1 == len(rungs)))
    return results


# ---------------------------------------------------------------------------- rendering
def ladder_table(results: Sequence[RungResult]) -> str:
    """rung x mode -> entity P/R/F1, relation P/R/F1, relations kept and refused (Markdown)."""
    header = ["rung", "names", "entity P", "entity R", "entity F1", "relation P", "relation R", "relation F1",
              "kept", "refused"]
    rows = []
    for res in results:
        for mode in res.score.modes:
            e, r = mode.entities, mode.relations
            rows.append([res.rung, mode.mode, *(fmt_ratio(v) for v in (e.precision, e.recall, e.f1)),
                         *(fmt_ratio(v) for v in (r.precision, r.recall, r.f1)), str(res.kept), str(res.refused)])
    return markdown_table(header, rows, align="ll" + "r" * (len(header) - 2))


def _rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def results_markdown(results: Sequence[RungResult], *, gold_path: Path, replay: Path, ontology_path: Path) -> str:
    gold_counts = results[0].score.exact if results else None
    lines = [
        "# Extraction quality on the GoT corpus, from recorded model answers",
        "",
        "Generated by `python -m benchmarks.quality.ladder`; every number is computed by it. "
        "See `benchmarks/quality/README.md` for what each number means.",
        "",
        f"- gold: `{_rel(gold_path)}`"
        + (f" ({gold_counts.entities.gold} entities, {gold_counts.relations.gold} relations)" if gold_counts else ""),
        f"- predictions: `{_rel(replay)}` replayed through `run_extraction` (replay provider, no model call)",
        f"- ontology: `{_rel(ontology_path)}`",
        "- names: `exact` = class + normalized name; `tolerant` = also without class-name words and "
        "leading articles, with aliases",
        "",
        "## Ladder",
        "",
        ladder_table(results),
    ]
    for res in results:
        lines += ["", f"## Per relation: {res.rung}", "", res.description, "", relation_table(res.score)]
    return "\n".join(lines) + "\n"


def results_json(results: Sequence[RungResult], *, gold_path: Path, replay: Path, ontology_path: Path) -> str:
    doc = {"gold": _rel(gold_path), "replay": _rel(replay), "ontology": _rel(ontology_path), "modes": list(MODES),
           "rungs": [r.to_dict() for r in results]}
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


# ---------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.quality.ladder",
        description="Run each pipeline configuration on the recorded model answers (no model call), "
                    "score it against the gold extraction and write one table.")
    p.add_argument("--out", type=Path, default=RESULTS, help="folder for got-recorded.md/.json (default %(default)s)")
    p.add_argument("--gold", type=Path, default=GOLD, help="gold extraction (default %(default)s)")
    p.add_argument("--replay", type=Path, default=REPLAY, help="recorded answers (default %(default)s)")
    p.add_argument("--ontology", type=Path, default=ONTOLOGY, help="ontology (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the table")
    args = p.parse_args(argv)
    if not args.replay.is_file():
        print(f"error: {args.replay}: recorded answers not found. Record them with "
              "`graphrag-got --provider llamacpp extract corpus/ --export-replay FILE`.", file=sys.stderr)
        return 1

    def show(event: ProgressEvent) -> None:
        if event.message:
            print(f"[{event.done}/{event.total}] {event.message}", file=sys.stderr)

    try:
        results = run_ladder(ontology_path=args.ontology, gold_path=args.gold, replay=args.replay, progress=show)
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    meta = {"gold_path": args.gold, "replay": args.replay, "ontology_path": args.ontology}
    md = write_text_atomic(args.out / f"{RESULTS_NAME}.md", results_markdown(results, **meta))
    js = write_text_atomic(args.out / f"{RESULTS_NAME}.json", results_json(results, **meta))
    if args.json:
        print(results_json(results, **meta), end="")
    else:
        print(ladder_table(results))
        print(f"\nwritten: {md}\n         {js}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
