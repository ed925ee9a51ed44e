"""Answer forms side by side: output tokens, seconds and quality of each form on the same chunks.

    python -m benchmarks.answer_forms [--model qwen2.5-coder-1.5b] [--forms full,lines,arrays]
                                      [--corpora got,observatory] [--slots 4] [--threads 2] [--limit N]
                                      [--workdir DIR] [--out benchmarks/results/answer_forms.txt]

For every corpus (the quality ladder's GoT and observatory corpora, their ontologies as given, with their
annotated examples) and every answer form (``GRAPHRAG_ANSWER_FORM``), the embedded model extracts the
corpus from an empty cache (every call is real) through our llama-server with ``--slots`` slots, the path
``graphrag-got extract`` takes; the server is started for each run and stopped after it. The runs go one
after another in this process, so their ratios are comparable even when absolute times are not.

Printed per run: chunks, wall seconds and seconds a chunk amortized, prompt and output tokens a chunk
(the server's counts), lines or items that could not be read (refusals with reason ``unparsed``),
failed chunks, entity F1 and relation precision / recall / F1, exact and alias-tolerant, against the
corpus's hand gold (the quality ladder's scorer); then each form's ratios against the first form.

llama.cpp slows several-fold when anything else uses the cores: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.extract_speed import _gold_for, _records, gold_answer_tokens  # noqa: E402
from benchmarks.llm_server import _free_port  # noqa: E402
from benchmarks.quality.ladder import GOT, OBSERVATORY, GoldCorpus  # noqa: E402
from benchmarks.quality.reading import read_extraction_file  # noqa: E402
from benchmarks.quality.score import score  # noqa: E402
from benchmarks.quality.tables import fmt_ratio, markdown_table, print_report  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.extract.forms import ANSWER_FORMS  # noqa: E402
from graphrag_got.extract.run import run_extraction  # noqa: E402
from graphrag_got.llm import server as llm_server  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402

CORPORA = {c.name: c for c in (GOT, OBSERVATORY)}


@dataclass
class Row:
    corpus: str
    form: str
    chunks: int
    seconds: float
    prompt_tokens: int
    output_tokens: int
    unparsed: int
    failed: int
    entity_f1: float
    rel_p: float
    rel_r: float
    rel_f1: float
    rel_p_tol: float
    rel_r_tol: float
    rel_f1_tol: float
    calls: int

    def cells(self) -> list[str]:
        n = max(1, self.chunks)
        return [self.corpus, self.form, str(self.chunks), f"{self.seconds:.0f}", f"{self.seconds / n:.1f}",
                str(self.calls), str(self.prompt_tokens // n), str(self.output_tokens // n), str(self.unparsed),
                str(self.failed), fmt_ratio(self.entity_f1), fmt_ratio(self.rel_p), fmt_ratio(self.rel_r),
                fmt_ratio(self.rel_f1), fmt_ratio(self.rel_p_tol), fmt_ratio(self.rel_r_tol), fmt_ratio(self.rel_f1_tol)]


HEADER = ["corpus", "form", "chunks", "seconds", "s/chunk", "calls", "prompt tok/chunk", "output tok/chunk",
          "unparsed", "failed", "entity F1", "rel P", "rel R", "rel F1", "rel P tol", "rel R tol", "rel F1 tol"]


def _corpus(gold: GoldCorpus, limit: int, workdir: Path) -> tuple[Path, dict[str, Any]]:
    """The corpus (its first ``limit`` chunks' paragraphs when given) and its gold, cut to the chunks run."""
    data = read_extraction_file(gold.gold)
    if not limit or not gold.corpus.is_file():
        return gold.corpus, data
    paragraphs = [p for p in gold.corpus.read_text(encoding="utf-8").split("\n\n") if p.strip()][:limit]
    out = workdir / f"{gold.name}.txt"
    out.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return out, data


def run_one(args: argparse.Namespace, gold_corpus: GoldCorpus, form: str, workdir: Path) -> Row:
    corpus, gold = _corpus(gold_corpus, args.limit, workdir)
    onto = Ontology.from_file(gold_corpus.ontology)
    name, _, passes = form.partition(":g")  # "lines:g1": the lines form with one recall pass
    home = workdir / f"{gold_corpus.name}-{name}-g{passes or 0}"
    base = Settings.load()
    settings = base.with_overrides(**{
        "home": home, "out_dir": home / "out", "models_path": base.models_dir.resolve(), "llm_provider": "llamacpp",
        "llamacpp_model": args.model, "llamacpp_threads": args.threads, "llamacpp_adaptive_threads": False,
        "llamacpp_backend": "server", "llama_server_slots": args.slots, "llama_server_port": _free_port(),
        "answer_form": name, "gleanings": int(passes or 0), "extraction": "generate", **dict(gold_corpus.settings)})
    llm_server.start(settings.llm, files=settings.files)  # started before the run: the run leaves it running
    try:
        t0 = time.monotonic()
        summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking,
                                 llm=settings.llm)
        seconds = time.monotonic() - t0
    finally:
        llm_server.stop(settings.files)
    records = _records(settings)
    pred = read_extraction_file(summary.out_path)
    ids = {c["id"] for c in pred.get("chunks", [])}
    q = score(pred, _gold_for(gold, ids), onto, pred_source=f"{form} extraction")
    return Row(corpus=gold_corpus.name, form=form, chunks=summary.chunks, seconds=seconds,
               prompt_tokens=sum(int(r.get("input_tokens") or 0) for r in records),
               output_tokens=sum(int(r.get("output_tokens") or 0) for r in records),
               unparsed=int(summary.by_reason.get("unparsed", 0)), failed=summary.failed_chunks,
               entity_f1=q.exact.entities.f1, rel_p=q.exact.relations.precision, rel_r=q.exact.relations.recall,
               rel_f1=q.exact.relations.f1, rel_p_tol=q.tolerant.relations.precision,
               rel_r_tol=q.tolerant.relations.recall, rel_f1_tol=q.tolerant.relations.f1, calls=summary.llm_calls)


def ratios(rows: list[Row]) -> list[str]:
    lines = []
    for corpus in dict.fromkeys(r.corpus for r in rows):
        mine = [r for r in rows if r.corpus == corpus]
        base = mine[0]
        for r in mine[1:]:
            lines.append(f"{corpus}, {r.form} against {base.form}: output tokens "
                         f"{r.output_tokens / max(1, base.output_tokens):.2f}x, seconds {r.seconds / max(1e-9, base.seconds):.2f}x, "
                         f"relation F1 tolerant {r.rel_f1_tol - base.rel_f1_tol:+.2f}, precision tolerant "
                         f"{r.rel_p_tol - base.rel_p_tol:+.2f}, recall tolerant {r.rel_r_tol - base.rel_r_tol:+.2f}")
    return lines


def floor_lines(model: str, corpora: list[str], forms: list[str]) -> list[str]:
    """The gold itself written in each form, tokens a chunk (the model's own tokenizer): what an answer
    exactly as complete as the gold costs in each form."""
    from graphrag_got.llm.model_store import resolve_model_path

    settings = Settings.load().with_overrides(llamacpp_model=model)
    path = str(resolve_model_path(settings.llm, files=settings.files))
    lines = []
    for name in corpora:
        corpus = CORPORA[name]
        tokens = gold_answer_tokens(path, read_extraction_file(corpus.gold), Ontology.from_file(corpus.ontology),
                                    forms=tuple(dict.fromkeys(f.partition(":g")[0] for f in forms)))
        base = next(iter(tokens.values()), 0.0) or 1.0
        lines.append(f"{name}, the gold written in each form: " + ", ".join(
            f"{f} {t:.0f} tokens a chunk ({t / base:.2f}x)" for f, t in tokens.items()))
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--forms", default="full,lines,arrays",
                    help=f"comma-separated, of {', '.join(ANSWER_FORMS)}; FORM:gN adds N recall passes (GRAPHRAG_GLEANINGS)")
    ap.add_argument("--corpora", default="got,observatory", help=f"comma-separated, of {', '.join(CORPORA)}")
    ap.add_argument("--slots", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, default=0, help="only the first N paragraphs of a one-file corpus")
    ap.add_argument("--workdir", help="keep homes, caches and server logs here (default: a temporary folder)")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    corpora = [c.strip() for c in args.corpora.split(",") if c.strip()]
    bad = [f for f in forms if f.partition(":g")[0] not in ANSWER_FORMS] + [c for c in corpora if c not in CORPORA]
    if bad:
        ap.error(f"unknown form(s) or corpus(es): {', '.join(bad)}")
    load = os.getloadavg()[0]
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="answer-forms-") as tmp:
        workdir = Path(args.workdir) if args.workdir else Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        for corpus in corpora:
            for form in forms:
                print(f"== {corpus} / {form} ...", flush=True)
                rows.append(run_one(args, CORPORA[corpus], form, workdir))
                print("   " + " | ".join(rows[-1].cells()), flush=True)
    text = (f"Answer forms, model {args.model}, llama-server with {args.slots} slot(s), {args.threads} thread(s), "
            f"{os.cpu_count()} cores, load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}\n"
            f"command: python -m benchmarks.answer_forms {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
            + markdown_table(HEADER, [r.cells() for r in rows]) + "\n\n" + "\n".join(ratios(rows)) + "\n\n"
            + "\n".join(floor_lines(args.model, corpora, forms)) + "\n")
    print_report(text, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
