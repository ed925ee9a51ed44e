"""Code graph benchmark: extraction size and speed, and `ask impact` against a hand-built ground truth.

    python -m benchmarks.code.run                       # attrs 24.2.0 from PyPI + this project
    python -m benchmarks.code.run --source DIR          # an unzipped package instead of the download
    python -m benchmarks.code.run --no-neo4j            # extraction numbers only

1. Extraction (no database): files, symbols, edges, call resolution and time (median of
   ``--runs``) on a real pure-Python package nobody here wrote (``pip download --no-deps`` of a
   wheel, unzipped into a temp folder) and on this repository.
2. Impact (needs Neo4j; the graph is *replaced* by the package's code graph, so point NEO4J_URI at
   a scratch server; the run refuses a database holding anything but a code graph): for each of the
   10 functions of ``ground_truth.json`` (callers found with grep and checked by hand),
   ``impact(target, hops=1)``'s distance-1 functions against the true callers: precision, recall.
3. Context size: tokens of the ``ask impact`` report against the chunks a retriever would have to
   return to show the same call sites (the chunk of each true call site plus the target's own: the
   best case of top-k retrieval, k = that number). Tokens are whitespace-separated words
   (``str.split``), no model tokenizer.

Writes ``benchmarks/code/results/code.json`` and ``code.md``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

from graphrag_got.code import vocabulary as v
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.ontology.model import Ontology

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ONTOLOGY = REPO / "ontology" / "code.json"
GROUND_TRUTH = HERE / "ground_truth.json"
RESULTS = HERE / "results"


def tokens(text: str) -> int:
    """Whitespace tokens: the simple, model-free count this benchmark reports."""
    return len(text.split())


def fetch_package(spec: str, dest: Path) -> Path:
    """``pip download --no-deps`` one wheel and unzip it; returns the folder."""
    wheels = dest / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--dest",
                    str(wheels), spec], check=True, capture_output=True, text=True)
    wheel = next(wheels.glob("*.whl"))
    out = dest / wheel.stem
    with zipfile.ZipFile(wheel) as z:
        z.extractall(out)
    return out


def measure_extraction(root: Path, out: Path, runs: int) -> tuple[dict[str, Any], Extraction]:
    onto = Ontology.from_file(ONTOLOGY)
    seconds = []
    summary = None
    for _ in range(runs):
        t0 = time.perf_counter()
        summary = run_code_extraction(onto, root, out)
        seconds.append(time.perf_counter() - t0)
    assert summary is not None
    ext = Extraction.read(out)
    symbols = sum(n for k, n in summary.entities_by_class.items() if k in (v.CLASS, v.FUNCTION, v.TEST))
    lines = sum(int(e.properties.get("lines", "0")) for e in ext.entities if e.type == v.FILE)
    return {
        "root": str(root), "files": summary.files, "lines": lines, "chunks": summary.chunks,
        "entities_by_class": summary.entities_by_class, "symbols": symbols,
        "relations_by_type": summary.relations_by_type, "edges": sum(summary.relations_by_type.values()),
        "call_sites": summary.call_sites, "calls_resolved": summary.calls_resolved,
        "calls_external": summary.calls_external, "calls_unresolved": summary.calls_unresolved,
        "refused": summary.rejected_entities + summary.rejected_relations,
        "syntax_error_files": len(summary.files_with_syntax_errors),
        "seconds_median": round(statistics.median(seconds), 3), "seconds_all": [round(s, 3) for s in seconds],
        "runs": runs,
    }, ext


def chunk_baseline(ext: Extraction, root: Path, target: str, call_sites: list[str]) -> tuple[int, int]:
    """(chunks, tokens) of the chunks holding the call sites plus the target's definition."""
    by_doc: dict[str, list[tuple[int, int, str, str]]] = {}
    for c in ext.chunks:
        by_doc.setdefault(c.document_id, []).append((c.start, c.end, c.id, c.text))
    newlines: dict[str, list[int]] = {}

    def chunk_at(doc: str, line: int) -> tuple[str, str] | None:
        if doc not in newlines:
            text = (root / doc).read_text(encoding="utf-8")
            newlines[doc] = [0] + [i + 1 for i, ch in enumerate(text) if ch == "\n"]
        offset = newlines[doc][line - 1]
        for start, end, cid, text in by_doc.get(doc, []):
            if start <= offset < end:
                return cid, text
        return None

    chosen: dict[str, str] = {}
    for site in call_sites:
        doc, _, line = site.rpartition(":")
        hit = chunk_at(doc, int(line))
        if hit:
            chosen[hit[0]] = hit[1]
    entity = next((e for e in ext.entities if e.name == target), None)
    if entity is not None and "path" in entity.properties:
        hit = chunk_at(entity.properties["path"], int(entity.properties["start_line"]))
        if hit:
            chosen[hit[0]] = hit[1]
    return len(chosen), sum(tokens(t) for t in chosen.values())


def impact_check(ext_path: Path, ext: Extraction, root: Path) -> dict[str, Any]:
    from graphrag_got.code.impact import impact
    from graphrag_got.graph.db import connect
    from graphrag_got.graph.load import load_extraction

    settings = Settings.load()
    truth = json.loads(GROUND_TRUTH.read_text(encoding="utf-8"))
    driver = connect(settings.neo4j)
    with driver:
        with driver.session(database=settings.neo4j.database) as s:
            ids = [r["id"] for r in s.run("MATCH (d:Document) RETURN d.id AS id LIMIT 10000")]
        if any(not i.endswith(".py") for i in ids):
            raise SystemExit(f"{settings.neo4j.uri} holds documents that are not Python files ({len(ids)} documents): "
                             "this benchmark replaces the graph; point NEO4J_URI at a scratch server.")
        t0 = time.perf_counter()
        load = load_extraction(driver, settings.neo4j, ext_path, Ontology.from_file(ONTOLOGY), graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
        load_seconds = time.perf_counter() - t0
        rows = []
        tp = fp = fn = 0
        for item in truth["targets"]:
            t1 = time.perf_counter()
            res = impact(driver, settings.neo4j, item["target"], hops=1, code=settings.code)
            seconds = time.perf_counter() - t1
            predicted = {n.name for n in res.affected if n.distance == 1 and n.type == v.FUNCTION}
            true = set(item["callers"])
            hit = predicted & true
            tp, fp, fn = tp + len(hit), fp + len(predicted - true), fn + len(true - predicted)
            k, chunk_tokens = chunk_baseline(ext, root, item["target"], item["call_sites"])
            report = "\n".join(res.lines())
            rows.append({
                "target": item["target"], "true_callers": len(true), "predicted": len(predicted), "correct": len(hit),
                "precision": round(len(hit) / len(predicted), 3) if predicted else None,
                "recall": round(len(hit) / len(true), 3) if true else None,
                "missed": sorted(true - predicted), "extra": sorted(predicted - true),
                "impact_tokens": tokens(report), "chunks_needed": k, "chunk_tokens": chunk_tokens,
                "impact_seconds": round(seconds, 3),
            })
    return {
        "load_seconds": round(load_seconds, 2), "documents_loaded": load.documents_added + load.documents_updated,
        "precision": round(tp / (tp + fp), 3) if tp + fp else None,
        "recall": round(tp / (tp + fn), 3) if tp + fn else None,
        "true_positives": tp, "false_positives": fp, "false_negatives": fn,
        "impact_tokens_total": sum(r["impact_tokens"] for r in rows),
        "chunk_tokens_total": sum(r["chunk_tokens"] for r in rows),
        "targets": rows, "tokenizer": "whitespace (str.split)", "ground_truth": truth["package"],
    }


def markdown(result: dict[str, Any]) -> str:
    lines = ["# Code graph benchmark", "", f"Run {result['created']} · {result['machine']}", "",
             "## Extraction (tree-sitter, no LLM)", "",
             "| tree | files | lines | symbols | edges | call sites | resolved | external | unresolved | time (median) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, e in result["extraction"].items():
        lines.append(f"| {name} | {e['files']} | {e['lines']} | {e['symbols']} | {e['edges']} | {e['call_sites']} | "
                     f"{e['calls_resolved']} | {e['calls_external']} | {e['calls_unresolved']} | "
                     f"{e['seconds_median']:.2f} s |")
    lines.append("")
    for name, e in result["extraction"].items():
        lines.append(f"- {name}: " + ", ".join(f"{k} {n}" for k, n in e["entities_by_class"].items()) + "; "
                     + ", ".join(f"{k} {n}" for k, n in e["relations_by_type"].items()))
    imp = result.get("impact")
    if imp:
        lines += ["", f"## `ask impact --hops 1` against the ground truth ({imp['ground_truth']}, 10 functions)", "",
                  f"Callers (distance 1): precision **{imp['precision']}**, recall **{imp['recall']}** "
                  f"({imp['true_positives']} correct, {imp['false_positives']} extra, {imp['false_negatives']} missed).",
                  "", "| target | true callers | found | correct | missed | impact tokens | chunks needed | chunk tokens |",
                  "|---|---:|---:|---:|---|---:|---:|---:|"]
        for r in imp["targets"]:
            lines.append(f"| `{r['target']}` | {r['true_callers']} | {r['predicted']} | {r['correct']} | "
                         f"{', '.join(r['missed']) or '-'} | {r['impact_tokens']} | {r['chunks_needed']} | "
                         f"{r['chunk_tokens']} |")
        lines += ["", f"Context: `ask impact` reports total {imp['impact_tokens_total']} tokens against "
                      f"{imp['chunk_tokens_total']} for the chunks holding the same call sites (tokenizer: "
                      f"{imp['tokenizer']}; chunks = top-level definitions, the best case of top-k retrieval)."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--package", default="attrs==24.2.0", help="wheel to download (pip spec)")
    ap.add_argument("--source", type=Path, help="an unzipped package folder instead of the download")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-neo4j", action="store_true", help="skip the impact check")
    args = ap.parse_args(argv)
    import platform

    with tempfile.TemporaryDirectory(prefix="graphrag-code-bench-") as tmp:
        tmpdir = Path(tmp)
        source = args.source or fetch_package(args.package, tmpdir)
        pkg_ext = tmpdir / "package.json"
        extraction: dict[str, Any] = {}
        extraction[args.package if not args.source else str(args.source)], ext = measure_extraction(
            source, pkg_ext, args.runs)
        extraction["this project"], _ = measure_extraction(REPO, tmpdir / "self.json", args.runs)
        result: dict[str, Any] = {"created": time.strftime("%Y-%m-%d %H:%M"),
                                  "machine": f"{platform.machine()}, {platform.python_version()}, "
                                             f"{__import__('os').cpu_count()} cores",
                                  "extraction": extraction}
        if not args.no_neo4j:
            result["impact"] = impact_check(pkg_ext, ext, source)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "code.json").write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    (RESULTS / "code.md").write_text(markdown(result), encoding="utf-8")
    print(markdown(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
