"""`ask impact` against the tests a real package's own suite runs (issue 25).

    python -m benchmarks.code.impact [--work DIR] [--package click==8.1.7 --package jinja2==3.1.4]

For each package (source distributions that ship their tests, downloaded once with `pip download
--no-binary :all:` and cached under ``--work``, default ``~/.cache/graphrag_got/impact-bench``, never
in the repository):

1. unpack it and run its own test suite under pytest-cov with per-test contexts (``pytest
   --cov=PKG --cov-context=test``; ``-o filterwarnings=ignore`` because these releases turn the
   deprecation warnings of today's pytest into errors) -> a coverage data file;
2. ``extract --extractor code`` the unpacked tree with ``--coverage`` that data file, and ``load``
   it into the Neo4j at NEO4J_URI (a scratch server: the run refuses a database holding documents
   other than Python files and coverage evidence, since loading replaces the graph);
3. ground truth per function: the tests whose context executed at least one line of the function's
   body, read here straight from the data file with coverage.py's API and the stdlib ``ast`` (not
   through the extractor's mapping); test ids are pytest node ids without phase and parameters;
4. targets, fixed before any result was seen: the public functions and methods of the package's
   source (no name part after the module starting with ``_``) that at least one test executes, in
   file and line order, every n-th with n = max(1, count // TARGETS) (so at least TARGETS of them);
5. per target, precision and recall of the tests `ask impact` lists: from the static closure only,
   from coverage only, their union, and the text-search baseline (every test of a test file that
   mentions the function's name as a word); tokens of the answer against reading the files it names
   (whitespace tokens); in-process latency (p50/p95 over all targets, 3 calls each) and the CLI end
   to end for the first 5 targets;
6. the 'static bound' and each target's precision ceiling (:mod:`benchmarks.code.bound`): the same
   closure over the calls the suite really made (traced by :mod:`benchmarks.code.calltrace` in a run
   of its own, cached beside the coverage file), and the best precision any sound call-graph closure
   can reach on that run.

"Coverage only" is read from the same recorded run as the ground truth: it measures how faithfully
the import carries that run into the graph (issue target: recall >= 0.98, precision >= 0.95), not an
independent prediction. The static closure is measured against that run. Results:
``benchmarks/results/code_impact.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

from benchmarks.code.bound import TakenGraph, ceiling, functions, summarize

REPO = Path(__file__).resolve().parents[2]
ONTOLOGY = REPO / "ontology" / "code.json"
RESULTS = REPO / "benchmarks" / "results"
DEFAULT_WORK = Path.home() / ".cache" / "graphrag_got" / "impact-bench"
DEFAULT_PACKAGES = ("click==8.1.7", "jinja2==3.1.4")
TARGETS = 30
REPEATS = 3
CLI_TARGETS = 5
PHASES = ("setup", "run", "teardown")


# ----------------------------------------------------------------------------------- setup
def fetch(spec: str, work: Path) -> Path:
    """The unpacked sdist of ``spec`` under ``work`` (downloaded and unpacked once)."""
    name, _, version = spec.partition("==")
    found = [p for p in work.glob("*.tar.gz") if p.name.lower().startswith(f"{name.lower()}-{version}")]
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", spec, "--no-deps", "--no-binary", ":all:", "-d",
                        str(work), "-q"], check=True)
        found = [p for p in work.glob("*.tar.gz") if p.name.lower().startswith(f"{name.lower()}-{version}")]
    archive = found[0]
    root = work / archive.name.removesuffix(".tar.gz")
    if not root.is_dir():
        with tarfile.open(archive) as tar:
            tar.extractall(work, filter="data")
    return root


def run_tests(root: Path, module: str, data: Path) -> dict[str, Any]:
    """The package's test suite under pytest-cov with per-test contexts (skipped when ``data`` exists)."""
    if data.is_file():
        return {"cached": True}
    env = {**os.environ, "PYTHONPATH": str(root / "src"), "COVERAGE_FILE": str(data)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "filterwarnings=ignore",
                           f"--cov={module}", "--cov-context=test", "--cov-report=", "tests"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    if not data.is_file():
        raise SystemExit(f"{root.name}: the test run wrote no coverage data ({tail}):\n{proc.stderr[-2000:]}")
    return {"cached": False, "seconds": round(time.perf_counter() - t0, 1), "summary": tail,
            "exit_code": proc.returncode}


def trace_calls(root: Path, out: Path) -> Path:
    """The calls the suite makes between functions of the tree (:mod:`benchmarks.code.calltrace`; a
    run apart from the coverage run, skipped when ``out`` exists)."""
    if not out.is_file():
        env = {**os.environ, "PYTHONPATH": str(root / "src")}
        proc = subprocess.run([sys.executable, str(Path(__file__).with_name("calltrace.py")), str(root), str(out), "-q",
                               "-p", "no:cacheprovider", "-o", "filterwarnings=ignore", "tests"], cwd=root, env=env,
                              capture_output=True, text=True, timeout=3600)
        if not out.is_file():
            raise SystemExit(f"{root.name}: the call trace wrote nothing:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return out


# ----------------------------------------------------------------------------- ground truth
def _test_id(context: str) -> str:
    base, sep, phase = context.rpartition("|")
    if sep and phase in PHASES:
        context = base
    head, sep, tail = context.partition("::")
    return f"{head}::{tail.split('[', 1)[0]}" if sep else context


def body_lines(path: Path) -> dict[int, tuple[int, int]]:
    """First line of each def (decorators included) -> (first body line, last line), by ``ast``."""
    return {first: (node.body[0].lineno, node.end_lineno or node.lineno) for first, node in functions(path)}


def measured_lines(data_file: Path, root: Path) -> dict[str, dict[int, list[str]]]:
    """Relative path -> line -> contexts of the coverage data file (coverage.py's API)."""
    import coverage

    data = coverage.CoverageData(basename=str(data_file))
    data.read()
    out: dict[str, dict[int, list[str]]] = {}
    for measured in data.measured_files():
        try:
            rel = Path(measured).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            continue
        out[rel] = data.contexts_by_lineno(measured)
    return out


def ground_truth(by_file: dict[str, dict[int, list[str]]], root: Path, functions: list[dict[str, Any]]
                 ) -> dict[str, set[str]]:
    """Function name -> test ids whose context ran a line of its body (``by_file``: :func:`measured_lines`)."""
    bodies: dict[str, dict[int, tuple[int, int]]] = {}
    out: dict[str, set[str]] = {}
    for f in functions:
        lines = by_file.get(f["path"])
        if lines is None:
            continue
        if f["path"] not in bodies:
            bodies[f["path"]] = body_lines(root / f["path"])
        start, end = bodies[f["path"]].get(f["start"], (f["start"], f["end"]))
        tests = {_test_id(c) for line in range(start, end + 1) for c in lines.get(line, ()) if c}
        if tests:
            out[f["name"]] = tests
    return out


def pick_targets(functions: list[dict[str, Any]], truth: dict[str, set[str]], module: str
                 ) -> tuple[list[dict[str, Any]], int, int]:
    """The rule of step 4 (module docstring), applied before any result is seen."""
    def public(name: str) -> bool:
        local = name[len(module) + 1:] if name.startswith(module + ".") else name
        return not any(part.startswith("_") for part in local.split("."))

    candidates = sorted((f for f in functions if f["path"].startswith("src/") and public(f["name"]) and f["name"] in truth),
                        key=lambda f: (f["path"], f["start"]))
    step = max(1, len(candidates) // TARGETS)
    return candidates[::step], len(candidates), step


# ------------------------------------------------------------------------------- measuring
def tokens(text: str) -> int:
    return len(text.split())


def scores(predicted: set[str], true: set[str]) -> tuple[float | None, float | None]:
    hit = len(predicted & true)
    return (round(hit / len(predicted), 3) if predicted else None, round(hit / len(true), 3) if true else None)


def text_baseline(root: Path, tests: list[dict[str, Any]], name: str) -> set[str]:
    word = re.compile(rf"\b{re.escape(name.rsplit('.', 1)[-1])}\b")
    hits: set[str] = set()
    cache: dict[str, bool] = {}
    for t in tests:
        if t["path"] not in cache:
            cache[t["path"]] = bool(word.search((root / t["path"]).read_text(encoding="utf-8", errors="replace")))
        if cache[t["path"]]:
            hits.add(t["nodeid"])
    return hits


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def mean(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(statistics.fmean(got), 3) if got else None


def measure_package(spec: str, work: Path) -> dict[str, Any]:
    import neo4j

    from graphrag_got.code.extractor import run_code_extraction
    from graphrag_got.code.impact import BOTH, COVERAGE, DISPATCH, NOT_RUN, STATIC, impact
    from graphrag_got.config import Settings
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.graph.db import connect
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.ontology.model import Ontology

    module = spec.partition("==")[0].lower()
    root = fetch(spec, work)
    data_file = work / f"{root.name}.coverage"
    test_run = run_tests(root, module, data_file)
    onto = Ontology.from_file(ONTOLOGY)
    t0 = time.perf_counter()
    summary = run_code_extraction(onto, root, work / f"{root.name}.json", coverage=[data_file])
    extract_seconds = time.perf_counter() - t0
    ext = Extraction.read(summary.out_path)
    functions = [{"name": e.name, "path": e.properties["path"], "start": int(e.properties["start_line"]),
                  "end": int(e.properties["end_line"])} for e in ext.entities
                 if e.type == "Function" and "path" in e.properties]
    tests = [{"name": e.name, "path": e.properties["path"], "nodeid": e.properties.get("nodeid", e.name)}
             for e in ext.entities if e.type == "Test" and "path" in e.properties]
    by_file = measured_lines(data_file, root)
    truth = ground_truth(by_file, root, functions)
    targets, candidates, step = pick_targets(functions, truth, module)
    taken = TakenGraph(ext, trace_calls(root, work / f"{root.name}.calls.json"), root)
    settings = Settings.load()
    rows: list[dict[str, Any]] = []
    latencies: list[float] = []
    with connect(settings.neo4j) as driver:
        with driver.session(database=settings.neo4j.database,
                            notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF) as s:
            ids = [r["id"] for r in s.run("MATCH (d:Document) RETURN d.id AS id LIMIT 100000")]
        if any(not (i.endswith(".py") or i.startswith("coverage:")) for i in ids):
            raise SystemExit(f"{settings.neo4j.uri} holds documents that are not Python files ({len(ids)}): this "
                             "benchmark replaces the graph; point NEO4J_URI at a scratch server.")
        t0 = time.perf_counter()
        load_extraction(driver, settings.neo4j, summary.out_path, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
        load_seconds = time.perf_counter() - t0
        for f in targets:
            for _ in range(REPEATS):
                t1 = time.perf_counter()
                res = impact(driver, settings.neo4j, f["name"], code=settings.code)
                latencies.append((time.perf_counter() - t1) * 1000)
            true = truth[f["name"]]
            sets = {
                "static": {t.nodeid or t.name for t in [*res.tests, *res.not_run] if t.evidence in (STATIC, BOTH, NOT_RUN)},
                "static resolved": {t.nodeid or t.name for t in [*res.tests, *res.not_run]
                                    if t.evidence in (STATIC, BOTH, NOT_RUN) and t.path_kind != DISPATCH},
                "coverage": {t.nodeid or t.name for t in res.tests if t.evidence in (COVERAGE, BOTH)},
                "union": {t.nodeid or t.name for t in res.tests},
                "text": text_baseline(root, tests, f["name"]),
                "static bound": taken.closure(f["name"]),
            }
            answer = "\n".join(res.lines())
            named = {n.name for n in res.files} | {t.path for t in res.tests if t.path}
            row: dict[str, Any] = {"target": f["name"], "true_tests": len(true), "steps": res.steps, "cut": res.cut,
                                   "affected": len(res.affected), "answer_tokens": tokens(answer),
                                   "file_tokens": sum(tokens((root / p).read_text(encoding="utf-8", errors="replace"))
                                                      for p in named if (root / p).is_file())}
            for method, predicted in sets.items():
                p, r = scores(predicted, true)
                row[method] = {"predicted": len(predicted), "correct": len(predicted & true), "precision": p,
                               "recall": r}
            bound = row["static bound"]
            row["precision_ceiling"] = ceiling(len(true), bound["predicted"], bound["correct"])
            rows.append(row)
    cli = cli_latency([r["target"] for r in rows[:CLI_TARGETS]])
    methods = ("static", "static resolved", "coverage", "union", "text", "static bound")
    totals = {}
    for m in methods:
        correct = sum(r[m]["correct"] for r in rows)
        predicted = sum(r[m]["predicted"] for r in rows)
        true = sum(r["true_tests"] for r in rows)
        totals[m] = {"precision_mean": mean([r[m]["precision"] for r in rows]),
                     "recall_mean": mean([r[m]["recall"] for r in rows]),
                     "precision_micro": round(correct / predicted, 3) if predicted else None,
                     "recall_micro": round(correct / true, 3) if true else None}
    rep = summary.extra["coverage"]
    return {
        "package": spec, "root": str(root), "test_run": test_run,
        "extraction_seconds": round(extract_seconds, 2), "load_seconds": round(load_seconds, 2),
        "entities": sum(summary.entities_by_class.values()), "relations": sum(summary.relations_by_type.values()),
        "relations_by_type": summary.relations_by_type,
        "coverage_import": {"contexts": rep.contexts, "matched": rep.contexts_matched,
                            "matched_by_lines": rep.contexts_matched_by_lines,
                            "unmatched": len(rep.contexts_unmatched), "unmatched_examples": rep.contexts_unmatched[:5],
                            "files_unmatched": len(rep.files_unmatched) + len(rep.files_ambiguous),
                            "executes": rep.relations},
        "functions_executed": len(truth), "candidates": candidates, "every_nth": step,
        "targets": rows, "totals": totals,
        "taken_graph": {"calls": taken.calls, "fixture_links": taken.fixture_links,
                        "pytest_exit_code": taken.pytest_exit_code},
        "precision_ceiling": summarize(r["precision_ceiling"] for r in rows),
        "latency_ms": {"p50": round(pct(latencies, 0.5), 1), "p95": round(pct(latencies, 0.95), 1),
                       "samples": len(latencies)},
        "cli_seconds": cli,
        "tokens": {"answer_median": statistics.median(r["answer_tokens"] for r in rows),
                   "files_median": statistics.median(r["file_tokens"] for r in rows)},
    }


def cli_latency(targets: list[str]) -> dict[str, float]:
    """`graphrag-got ask impact TARGET --json` end to end, fresh interpreter each time."""
    # As an installed CLI runs: with compiled bytecode (one warm-up run writes it if the environment
    # says not to), so the import of the package's own modules is not compiled again on every call.
    env = {k: val for k, val in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "graphrag_got.cli", "ask", "impact", targets[0], "--json"], cwd=REPO, env=env,
                   capture_output=True, text=True, timeout=120)
    times = []
    for t in targets:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "graphrag_got.cli", "ask", "impact", t, "--json"], cwd=REPO,
                              env=env, capture_output=True, text=True, timeout=120)
        times.append(time.perf_counter() - t0)
        if proc.returncode:
            raise SystemExit(f"ask impact {t} failed: {proc.stderr.strip()}")
    return {"p50": round(statistics.median(times), 3), "max": round(max(times), 3), "runs": len(times)}


# ------------------------------------------------------------------------------- reporting
def table(result: dict[str, Any]) -> str:
    out = [f"ask impact vs the tests each package's own suite runs ({result['created']}, {result['machine']})",
           "ground truth: tests whose coverage context ran >= 1 line of the function's body (pytest --cov-context=test)",
           "NOTE: 'coverage' reads the SAME recorded run as the ground truth: it measures how faithfully the import",
           "carries the run into the graph (issue target recall >= 0.98, precision >= 0.95), not an independent",
           "prediction; 'static' (closure to a fixed point) and 'text' (tests of test files naming the function) are",
           "measured against that run. 'static resolved' is the static closure without the paths through a",
           "may-dispatch edge (MAY_CALL, or a call of resolution 'dispatch'). 'union' is what ask impact lists:",
           "coverage, plus the static tests the recorded run did not measure (a static test the run measured",
           "without it executing the target is overruled and listed apart as 'not run').",
           "'static bound' is not ask impact: the same closure over the calls the suite really made (traced in a",
           "run of its own, benchmarks/code/bound.py): a perfect call graph, no spurious edge and none missing. The",
           "precision ceiling of a target, T / (n + T - h), is the best precision of any sound call-graph closure",
           "(T true tests, n listed by the bound, h of them right): a closure cannot tell which branch a test's",
           "inputs take.", ""]
    for p in result["packages"]:
        ci = p["coverage_import"]
        out += [f"== {p['package']}: {len(p['targets'])} targets of {p['functions_executed']} executed functions; "
                f"tests: {p['test_run'].get('summary', 'cached run')}",
                f"   extract {p['extraction_seconds']} s, load {p['load_seconds']} s (no embeddings); "
                f"{p['entities']} entities, {p['relations']} relations ({ci['executes']} EXECUTES)",
                f"   coverage import: {ci['contexts']} contexts, {ci['matched']} matched ({ci['matched_by_lines']} by "
                f"lines), {ci['unmatched']} unmatched {ci['unmatched_examples'][:2]}, {ci['files_unmatched']} files "
                "unmatched",
                f"   {'method':<16} {'P mean':>7} {'R mean':>7} {'P micro':>8} {'R micro':>8}"]
        for m, t in p["totals"].items():
            out.append(f"   {m:<16} {t['precision_mean']!s:>7} {t['recall_mean']!s:>7} {t['precision_micro']!s:>8} "
                       f"{t['recall_micro']!s:>8}")
        tg, ceil = p["taken_graph"], p["precision_ceiling"]
        out.append(f"   taken call graph: {tg['calls']} calls + {tg['fixture_links']} fixture links (traced run's pytest "
                   f"exit code {tg.get('pytest_exit_code')}); precision ceiling of "
                   f"any call-graph closure: mean {ceil['mean']}, {ceil['targets_below']} of {ceil['targets']} targets "
                   f"below {ceil['at']}")
        lat = p["latency_ms"]
        out += [f"   ask impact in process: p50 {lat['p50']} ms, p95 {lat['p95']} ms ({lat['samples']} calls); "
                f"CLI end to end p50 {p['cli_seconds']['p50']} s (max {p['cli_seconds']['max']} s)",
                f"   tokens (median per target): answer {p['tokens']['answer_median']}, reading the files it names "
                f"{p['tokens']['files_median']}",
                f"   {'target':<52} {'true':>4} {'static P/R':>12} {'cov P/R':>12} {'union P/R':>12} {'text P/R':>12} "
                f"{'bound P/R':>12} {'ceiling':>7}"]
        for r in p["targets"]:
            cells = [f"{r[m]['precision']}/{r[m]['recall']}" for m in ("static", "coverage", "union", "text",
                                                                       "static bound")]
            out.append(f"   {r['target'][:52]:<52} {r['true_tests']:>4} " + " ".join(f"{c:>12}" for c in cells)
                       + f" {r['precision_ceiling']:>7}")
        out.append("")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help="download, test-run and extraction cache")
    ap.add_argument("--package", action="append", help="pip spec of an sdist shipping tests (repeatable)")
    args = ap.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"created": time.strftime("%Y-%m-%d %H:%M"),
                              "machine": f"{platform.machine()}, Python {platform.python_version()}, "
                                         f"{os.cpu_count()} cores",
                              "packages": [measure_package(spec, args.work) for spec in args.package or DEFAULT_PACKAGES]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "code_impact.json").write_text(json.dumps(result, indent=2, default=sorted) + "\n", encoding="utf-8")
    text = table(result)
    (RESULTS / "code_impact.txt").write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
