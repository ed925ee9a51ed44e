"""Re-score the published Vicuna-13B responses of Text2KGBench and compare with the published averages.

Usage::

    python -m benchmarks.text2kgbench.reproduce [--data DIR] [--tolerance 0.02] [--out FILE]

(from the repository root).

The data folder (``TEXT2KGBENCH_DIR``, default ``<repo>/../shared/data/text2kgbench``) holds the
benchmark's DBpedia-WebNLG files: ontologies, ground truth, the Vicuna-13B responses and
``vicuna13b_avg_eval_results.jsonl`` (the published per-ontology averages). Every published number is
read from that file; none is written here. Prints a Markdown table and writes it to
``results/reproduce.md``; exits 1 if any metric differs from the published value by more than the
tolerance.

Text2KGBench: Mihindukulasooriya, Tiwari, Enguix, Lata (ISWC 2023), data CC BY-SA 4.0.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

if not __package__:  # run as a file: the sibling modules are importable only through the package
    sys.exit("run this from the repository root as a module: python -m benchmarks.text2kgbench.reproduce")

from graphrag_got.common.files import write_text_atomic  # noqa: E402

from . import scorer  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
LABELS = {"precision": "P", "recall": "R", "f1": "F1", "onto_conf": "conformance",
          "sub_halluc": "subj. halluc.", "rel_halluc": "rel. halluc.", "obj_halluc": "obj. halluc."}


def default_data_dir() -> Path:
    env = os.environ.get("TEXT2KGBENCH_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data" / "text2kgbench"


def published_averages(path: Path) -> dict[str, dict[str, float]]:
    """Per-ontology published averages (first ``all_test_cases`` line per ontology)."""
    out: dict[str, dict[str, float]] = {}
    for rec in scorer.read_jsonl(path):
        if rec.get("type") == "all_test_cases" and rec.get("onto") not in out:
            out[rec["onto"]] = {m: float(rec[f"avg_{m}"]) for m in scorer.METRICS}
    return out


def local_ontologies(root: Path) -> list[tuple[str, Path, Path, Path]]:
    """``(name, ontology, ground truth, responses)`` for every ontology with all three files, in number order."""
    found = []
    for onto in (root / "ontologies").glob("*_ontology.json"):
        name = onto.name.removesuffix("_ontology.json")
        gt = root / "ground_truth" / f"ont_{name}_ground_truth.jsonl"
        resp = root / "vicuna13b_responses" / f"{name}_Vicuna13B_responses.jsonl"
        if gt.is_file() and resp.is_file():
            found.append((name, onto, gt, resp))
    return sorted(found, key=lambda t: int(re.match(r"\d+", t[0]).group()) if re.match(r"\d+", t[0]) else 0)


def reproduce(data_dir: Path) -> list[dict]:
    """One row per ontology: name, sentence count, published and our averages, our domain/range numbers."""
    root = data_dir / "dbpedia_webnlg"
    published = published_averages(root / "vicuna13b_avg_eval_results.jsonl")
    rows = []
    for name, onto, gt, resp in local_ontologies(root):
        if name not in published:
            continue
        result = scorer.score_files(resp, gt, onto)
        rows.append({"ontology": name, "n": result.n_sentences, "published": published[name],
                     "ours": result.averages, "domain_range": result.domain_range})
    return rows


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.2f}"


def markdown(rows: list[dict], tolerance: float) -> str:
    metrics = scorer.METRICS
    lines = [
        "# Text2KGBench reproduction: Vicuna-13B on DBpedia-WebNLG",
        "",
        "Data: Text2KGBench (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023), CC BY-SA 4.0.",
        "Published = the benchmark's `vicuna13b_avg_eval_results.jsonl`; ours = `scorer.py` over the",
        "published Vicuna-13B responses (NLTK `word_tokenize(preserve_line=True)` + `PorterStemmer`, no",
        "data downloads). Cells are `published / ours (delta)`, ours unrounded to 3 decimals.",
        "",
        "| ontology | sentences | " + " | ".join(LABELS[m] for m in metrics) + " | max abs delta |",
        "|---|---:|" + "---|" * len(metrics) + "---:|",
    ]
    worst = 0.0
    same = total = 0
    for r in rows:
        cells, row_worst = [], 0.0
        for m in metrics:
            pub, ours = r["published"][m], r["ours"][m]
            d = ours - pub
            row_worst = max(row_worst, abs(d))
            same += f"{ours:.2f}" == f"{pub:.2f}"
            total += 1
            cells.append(f"{pub:.2f} / {ours:.3f} ({d:+.3f})")
        worst = max(worst, row_worst)
        lines.append(f"| {r['ontology']} | {r['n']} | " + " | ".join(cells) + f" | {row_worst:.3f} |")
    lines += [
        "",
        f"{same}/{total} values equal the published ones after rounding to 2 decimals; "
        f"largest absolute delta {worst:.4f} (tolerance {tolerance}).",
        "",
        "## Stricter measure (ours): domain/range conformance",
        "",
        "Predicted triples with an ontology relation whose subject/object types are known from the same",
        "sentence's gold triples (the benchmark gives no entity types otherwise); micro-averaged.",
        "",
        "| ontology | conformant triples | typed (both ends) | domain ok | range ok | domain+range ok |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        dr = r["domain_range"]
        lines.append(f"| {r['ontology']} | {dr['conformant_triples']} | {dr['both_checked']} | "
                     f"{_fmt(dr['domain_conformance'])} | {_fmt(dr['range_conformance'])} | "
                     f"{_fmt(dr['domain_range_conformance'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=default_data_dir(), help="Text2KGBench data folder")
    ap.add_argument("--tolerance", type=float, default=0.02)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "reproduce.md")
    args = ap.parse_args(argv)
    if not (args.data / "dbpedia_webnlg").is_dir():
        print(f"error: no dbpedia_webnlg folder under {args.data}; pass --data or set TEXT2KGBENCH_DIR",
              file=sys.stderr)
        return 1
    rows = reproduce(args.data)
    if not rows:
        print(f"error: no ontology under {args.data} has ground truth, responses and published averages",
              file=sys.stderr)
        return 1
    text = markdown(rows, args.tolerance)
    print(text)
    write_text_atomic(args.out, text)
    print(f"wrote {args.out}")
    worst = max(abs(r["ours"][m] - r["published"][m]) for r in rows for m in scorer.METRICS)
    if worst > args.tolerance:
        print(f"error: largest delta {worst:.4f} exceeds tolerance {args.tolerance}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
