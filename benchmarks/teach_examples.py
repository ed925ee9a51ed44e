"""Corrected passages as examples (issue 50): how much do a user's own corrected passages help?

For each corpus, with its ontology **stripped** of its examples and cues (what a user writes first):

1. ``zero``: the whole corpus extracted with no example (the default pipeline, the embedded model);
2. for each choice of passages (``suggest``: ``graphrag-got examples suggest`` on the zero-example
   extraction; ``random-S``: a seeded random pick), the gold answer of those chunks, as a user would
   have corrected them (``teach.draft.draft_example`` on the gold file: names as the passage writes
   them), is stored beside a copy of the stripped ontology, and the *other* chunks are extracted with
   those examples in the prompt;
3. both are scored on the other chunks only, against the gold (``benchmarks.quality.score``:
   exact and tolerant), so the examples' own passages never count.

    python -m benchmarks.teach_examples --corpora got,observatory --k 3 --random 2 \
        --workdir /tmp/teach --out benchmarks/results/teach_examples.txt

Model calls: the zero run is one call a chunk; each choice, one call per other chunk (answers are
cached per ontology in the workdir, so a rerun with the same workdir pays nothing twice).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.extract_speed import _gold_for  # noqa: E402
from benchmarks.llm_server import _free_port  # noqa: E402
from benchmarks.quality.ladder import GOT, OBSERVATORY, GoldCorpus  # noqa: E402
from benchmarks.quality.reading import read_extraction_file  # noqa: E402
from benchmarks.quality.score import QualityScore, score  # noqa: E402
from benchmarks.quality.stripped import write_stripped  # noqa: E402
from benchmarks.quality.tables import fmt_ratio, markdown_table, print_report  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.extract.extraction import Extraction  # noqa: E402
from graphrag_got.extract.run import run_extraction  # noqa: E402
from graphrag_got.llm import server as llm_server  # noqa: E402
from graphrag_got.ontology.example_store import ExampleFile, store_path, write_store  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402
from graphrag_got.teach.draft import draft_example  # noqa: E402
from graphrag_got.teach.suggest import suggest_passages  # noqa: E402

CORPORA = {c.name: c for c in (GOT, OBSERVATORY)}
HEADER = ["corpus", "examples", "passages", "example facts", "scored chunks", "calls", "seconds", "entity F1",
          "rel P", "rel R", "rel F1", "rel P tol", "rel R tol", "rel F1 tol", "F1 tol / zero"]


@dataclass
class Row:
    corpus: str
    choice: str
    passages: list[str]
    example_facts: int
    scored: int
    calls: int
    seconds: float
    q: QualityScore
    zero_f1_tol: float | None = None

    def cells(self) -> list[str]:
        e, t = self.q.exact, self.q.tolerant
        ratio = (f"{t.relations.f1 / self.zero_f1_tol:.2f}x" if self.zero_f1_tol else "-")
        return [self.corpus, self.choice, " ".join(p.rsplit(":", 1)[-1] for p in self.passages) or "-",
                str(self.example_facts), str(self.scored), str(self.calls), f"{self.seconds:.0f}",
                fmt_ratio(e.entities.f1), fmt_ratio(e.relations.precision), fmt_ratio(e.relations.recall),
                fmt_ratio(e.relations.f1), fmt_ratio(t.relations.precision), fmt_ratio(t.relations.recall),
                fmt_ratio(t.relations.f1), ratio]


def _settings(args: argparse.Namespace, corpus: GoldCorpus, home: Path) -> Settings:
    base = Settings.load()
    return base.with_overrides(**{
        "home": home, "out_dir": home / "out", "models_path": base.models_dir.resolve(), "llm_provider": "llamacpp",
        "llamacpp_model": args.model, "llamacpp_threads": args.threads, "llamacpp_adaptive_threads": False,
        "llamacpp_backend": "server", "llama_server_slots": args.slots, "llama_server_port": args.port,
        **({"llamacpp_n_ctx": args.n_ctx} if args.n_ctx else {}), "example_selector": args.selector,
        **dict(corpus.settings)})


def _extract(settings: Settings, onto: Ontology, corpus: Path, out: Path) -> tuple[Extraction, int, float]:
    t0 = time.monotonic()
    summary = run_extraction(settings.extract, onto, corpus, out, files=settings.files, chunking=settings.chunking,
                             llm=settings.llm)
    return Extraction.read(summary.out_path), summary.llm_calls, time.monotonic() - t0


def _others_corpus(zero: Extraction, picked: set[str], folder: Path) -> Path:
    """The corpus without the picked chunks: each document's other chunks, in order, a paragraph each."""
    folder.mkdir(parents=True, exist_ok=True)
    by_doc: dict[str, list[str]] = {}
    for chunk in sorted(zero.chunks, key=lambda c: (c.document_id, c.index)):
        if chunk.id not in picked:
            by_doc.setdefault(chunk.document_id, []).append(chunk.text.strip())
    for doc, texts in by_doc.items():
        target = folder / Path(doc).name
        target.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    return folder


def _score(pred: Extraction | dict[str, Any], gold: dict[str, Any], ids: set[str] | None, onto: Ontology,
           gold_ids: set[str]) -> QualityScore:
    data = pred.model_dump(mode="json") if isinstance(pred, Extraction) else pred
    if ids is not None:
        data = _gold_for(data, ids)
    return score(data, _gold_for(gold, gold_ids), onto, pred_source="prediction")


def run_corpus(args: argparse.Namespace, corpus: GoldCorpus, workdir: Path) -> list[Row]:
    folder = workdir / corpus.name
    stripped = write_stripped(corpus.ontology, folder / "ontology")
    onto = Ontology.from_file(stripped, stored_examples=False)
    gold = read_extraction_file(corpus.gold)
    gold_x = Extraction.read(corpus.gold)
    settings = _settings(args, corpus, folder / "home")
    llm_server.start(settings.llm, files=settings.files)  # started before the runs: they leave it running
    try:
        return _run_choices(args, corpus, folder, stripped, onto, gold, gold_x, settings)
    finally:
        llm_server.stop(settings.files)


def _run_choices(args: argparse.Namespace, corpus: GoldCorpus, folder: Path, stripped: Path, onto: Ontology,
                 gold: dict[str, Any], gold_x: Extraction, settings: Settings) -> list[Row]:
    print(f"== {corpus.name}: zero examples", flush=True)
    zero, zero_calls, zero_s = _extract(settings, onto, corpus.corpus, folder / "zero.json")
    all_ids = {c.id for c in zero.chunks}
    choices: list[tuple[str, list[str]]] = [
        ("suggest", [s.chunk_id for s in suggest_passages(zero, args.k)])] if args.suggest else []
    for seed in range(args.random):
        choices.append((f"random-{seed}", random.Random(seed).sample(sorted(all_ids), args.k)))
    rows: list[Row] = []
    for name, picked in choices:
        # the context decides how many passages a prompt takes, the selector which when not all fit
        name = f"{name}-ctx{settings.llm.llamacpp_n_ctx}" + ("" if args.selector == "similar" else f"-{args.selector}")
        others = all_ids - set(picked)
        examples = [draft_example(gold_x, cid).example for cid in picked]
        sel_onto_path = folder / name / stripped.name
        sel_onto_path.parent.mkdir(parents=True, exist_ok=True)
        sel_onto_path.write_text(stripped.read_text(encoding="utf-8"), encoding="utf-8")
        write_store(store_path(sel_onto_path), ExampleFile(examples=tuple(examples)))
        sel_onto = Ontology.from_file(sel_onto_path)
        zero_q = _score(zero, gold, others, onto, others)
        rows.append(Row(corpus.name, f"zero ({name}'s others)", [], 0, len(others), zero_calls, zero_s, zero_q))
        print("   " + " | ".join(rows[-1].cells()), flush=True)
        print(f"== {corpus.name}: {name} {picked}", flush=True)
        pred, calls, seconds = _extract(settings, sel_onto, _others_corpus(zero, set(picked), folder / name / "corpus"),
                                        folder / name / "extraction.json")
        q = _score(pred, gold, None, onto, others)
        rows.append(Row(corpus.name, name, picked, sum(len(e.relations) for e in examples), len(others), calls,
                        seconds, q, zero_f1_tol=zero_q.tolerant.relations.f1))
        print("   " + " | ".join(rows[-1].cells()), flush=True)
    return rows


def summary_lines(rows: list[Row]) -> list[str]:
    out = []
    for corpus in dict.fromkeys(r.corpus for r in rows):
        mine = [r for r in rows if r.corpus == corpus and r.zero_f1_tol is not None]
        groups: dict[str, list[Row]] = {}
        for r in mine:  # "random-0-ctx4096" and "random-1-ctx4096" together
            name, _, ctx = r.choice.rpartition("-ctx")
            groups.setdefault(f"{name.split('-')[0]}, context {ctx.replace('-', ', selector ')}", []).append(r)
        for label, group in groups.items():
            if group:
                f1 = sum(r.q.tolerant.relations.f1 for r in group) / len(group)
                z = sum(r.zero_f1_tol or 0 for r in group) / len(group)
                p = sum(r.q.tolerant.relations.precision for r in group) / len(group)
                out.append(f"{corpus}, {label}: relation F1 tolerant {f1:.2f} against zero-example {z:.2f} "
                           f"({f1 / z if z else float('inf'):.2f}x), precision tolerant {p:.2f}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--corpora", default="got,observatory", help=f"comma-separated, of {', '.join(CORPORA)}")
    ap.add_argument("--k", type=int, default=3, help="corrected passages per choice")
    ap.add_argument("--random", type=int, default=2, help="seeded random choices besides the suggested one")
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--selector", choices=["similar", "first"], default="similar",
                    help="GRAPHRAG_EXAMPLE_SELECTOR: which passages a prompt gets when not all fit")
    ap.add_argument("--no-suggest", dest="suggest", action="store_false", help="only the random choices")
    ap.add_argument("--n-ctx", type=int, default=0, help="context of one call (GRAPHRAG_LLAMACPP_N_CTX; default: "
                                                          "the setting's): how many corrected passages fit a prompt")
    ap.add_argument("--workdir", required=True, help="homes, caches and copies of the ontologies (kept: reruns reuse "
                                                      "the answers)")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    if bad := [c for c in corpora if c not in CORPORA]:
        ap.error(f"unknown corpus(es): {', '.join(bad)}")
    args.port = _free_port()
    load = os.getloadavg()[0]
    workdir = Path(args.workdir)
    rows: list[Row] = []
    for name in corpora:
        rows += run_corpus(args, CORPORA[name], workdir)
    text = (f"Corrected passages as examples, model {args.model}, llama-server {args.slots} slot(s), {args.threads} "
            f"thread(s), {os.cpu_count()} cores, load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}\n"
            f"command: python -m benchmarks.teach_examples {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
            + markdown_table(HEADER, [r.cells() for r in rows]) + "\n\n" + "\n".join(summary_lines(rows)) + "\n")
    print_report(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
