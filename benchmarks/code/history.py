"""Stale coverage on a real history: `ask impact --diff` with coverage recorded k commits earlier (issue 40).

    python -m benchmarks.code.history --source GIT_DIR [--end REV] [--commits 30] [--anchors 0,5,10,15,20]
                                      [--max-k 10] [--work DIR] [--name NAME]

The package's repository (click: a bare copy such as the one the search tool's ``fetch github:pallets/click``
makes; nothing is downloaded here and nothing of it is committed) is cloned once under ``--work``.
The window is the ``--commits`` + 1 first-parent commits ending at ``--end`` (c0 ... cN, oldest first).

1. every commit's own suite runs once under ``pytest --cov=click --cov=tests --cov-context=test``
   (cached per commit): the coverage at c_i;
2. truth of the change c_{i-1}..c_i: the tests whose context at c_i ran a statement holding an added
   or changed line (new side; a line is mapped to the statement holding it with the standard
   library's ``ast``, as coverage records a statement on its first line), plus the tests the change
   itself adds or edits (their definition holds a changed line). The strict truth (coverage only) is
   reported too;
3. for each anchor a: the tree at c_a is extracted with the coverage at c_a and loaded into the Neo4j
   at NEO4J_URI (a scratch server: it is emptied); then for k = 1..max-k: ``diff_impact`` of
   c_{a+k-1}..c_{a+k} over the graph (its coverage recorded at c_a, k commits before the change's
   new side), compared with the truth; then the checkout moves to c_{a+k} and ``code refresh --since
   c_{a+k-1}`` brings the graph there (timed; the machine is named as it was);
4. variants read from the same answers: ``answer`` (pytest_args), ``+function`` (also the tests that ran
   a recorded changed function but not its changed lines);
5. import-time changes, read from the answer: the truth cannot see lines that run when a module is
   imported (pytest-cov records them under no test), so a pair whose answer selects tests for
   module-level code (``module code``), for a module-level assignment through the functions reading it
   (``module constant``) or for a class body (``class body``) is flagged *module-level*, and P/R are
   reported with and without those pairs. A changed function header (``def header``) and a renamed or
   moved definition (``renamed``) run at import too; they are listed, not left out (their callers'
   and bodies' lines usually show in the truth);
6. at the end of the first anchor's walk, the refreshed extraction is compared with a full
   re-extraction of the same tree with the same kept evidence, and the loaded graph with that full
   extraction loaded into the emptied database.

Results: ``benchmarks/results/code_history[_NAME].txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.code.impact import _test_id

REPO = Path(__file__).resolve().parents[2]
ONTOLOGY = REPO / "ontology" / "code.json"
RESULTS = REPO / "benchmarks" / "results"
DEFAULT_WORK = Path.home() / ".cache" / "graphrag_got" / "history-bench"
DEFAULT_SOURCE = Path("/work/.mirror/pallets+click/repo")
DEFAULT_END = "2c8cd3ac"
VARIANTS = ("answer", "+function")
#: Import-time kinds of change that flag a pair "module-level" (see the module docstring).
MODULE_LEVEL = ("module code", "module constant", "class body")


def sh(cwd: Path, *args: str, env: dict[str, str] | None = None, check: bool = True) -> str:
    proc = subprocess.run(list(args), cwd=cwd, env=env, capture_output=True, text=True)
    if check and proc.returncode:
        raise SystemExit(f"{' '.join(args[:4])} failed in {cwd}: {proc.stderr.strip()[-800:]}")
    return proc.stdout


def window(clone: Path, end: str, commits: int) -> list[str]:
    revs = sh(clone, "git", "rev-list", "--first-parent", f"--max-count={commits + 1}", end).split()
    return list(reversed(revs))


def checkout(clone: Path, rev: str) -> None:
    sh(clone, "git", "checkout", "-q", "--detach", "-f", rev)
    sh(clone, "git", "clean", "-q", "-fdx")


def run_coverage(clone: Path, rev: str, data: Path) -> dict[str, Any]:
    """The suite at ``rev`` under pytest-cov with per-test contexts (cached in ``data``)."""
    meta = data.with_suffix(".json")
    if data.is_file() and meta.is_file():
        return json.loads(meta.read_text())
    checkout(clone, rev)
    env = {**os.environ, "PYTHONPATH": str(clone / "src"), "COVERAGE_FILE": str(data)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                           "-o", "filterwarnings=ignore", "--cov=click", "--cov=tests", "--cov-context=test",
                           "--cov-report=", "tests"], cwd=clone, env=env, capture_output=True, text=True, timeout=3600)
    tail = (proc.stdout.strip().splitlines() or [""])[-1]
    if not data.is_file():
        raise SystemExit(f"{rev}: the test run wrote no coverage data ({tail}):\n{proc.stderr[-2000:]}")
    out = {"rev": rev, "exit_code": proc.returncode, "summary": tail, "seconds": round(time.perf_counter() - t0, 1)}
    meta.write_text(json.dumps(out))
    return out


# ------------------------------------------------------------------------------------- truth
def statement_lines(text: str, lines: set[int]) -> set[int]:
    """First lines of the statements holding ``lines`` (a compound statement holds its header only)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return set(lines)
    owner: dict[int, int] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        body = getattr(node, "body", None)
        end = (body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt)
               else node.end_lineno or node.lineno)
        for n in range(node.lineno, max(end, node.lineno) + 1):
            if n not in owner or owner[n] < node.lineno:
                owner[n] = node.lineno
    return {owner[n] for n in lines if n in owner}


def test_defs(text: str, path: str) -> list[tuple[str, int, int]]:
    """(pytest node id, first line with decorators, last line) of the tests of a test file."""
    out: list[tuple[str, int, int]] = []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return out

    def walk(body: list[ast.stmt], prefix: list[str]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
                first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                out.append(("::".join([path, *prefix, node.name]), first, node.end_lineno or node.lineno))
            elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
                walk(node.body, [*prefix, node.name])

    walk(tree.body, [])
    return out


def measured_paths(measured: Any, tree: set[str]) -> dict[str, str]:
    """Path in the tree -> measured file, by the longest tail of the measured path that is a file of
    the tree (the cached coverage may have been recorded in a clone at another place: ``--work``)."""
    out: dict[str, str] = {}
    for m in measured:
        parts = Path(m).as_posix().split("/")
        tail = next(("/".join(parts[i:]) for i in range(len(parts)) if "/".join(parts[i:]) in tree), None)
        if tail is not None:
            out[tail] = m
    return out


def truth(clone: Path, old: str, new: str, data: Path) -> dict[str, Any]:
    """The tests of the change old..new (see the module docstring) and what it changed."""
    import coverage

    from graphrag_got.code import gitdiff

    files = gitdiff.changed_files(clone, old, new)
    cov = coverage.CoverageData(basename=str(data))
    cov.read()
    measured = measured_paths(cov.measured_files(), set(gitdiff.tree_files(clone, new)))
    by_cov: set[str] = set()
    changed_tests: set[str] = set()
    py = [f for f in files if f.is_python and f.new_path]
    blobs = gitdiff.blobs(clone, new, [f.new_path for f in py if f.new_path])
    for f in py:
        text = (blobs.get(f.new_path or "") or b"").decode("utf-8", "replace")
        added = set(f.added)
        stmts = statement_lines(text, added)
        if f.new_path in measured:
            for line, contexts in cov.contexts_by_lineno(measured[f.new_path]).items():
                if line in stmts:
                    by_cov |= {_test_id(c) for c in contexts if c}
        if f.new_path and f.new_path.rsplit("/", 1)[-1].startswith("test_"):
            changed_tests |= {t for t, a, b in test_defs(text, f.new_path) if any(a <= n <= b for n in added)}
    return {"strict": sorted(by_cov), "tests": sorted(by_cov | changed_tests), "python_files": len(py),
            "files": len(files)}


# --------------------------------------------------------------------------------- measuring
def import_time(res: Any) -> dict[str, list[str]]:
    """Kind of import-time change -> what the answer selected tests for (library files only: a test
    file's changes run themselves), read from the answer of ``diff_impact``."""
    from graphrag_got.code import vocabulary as v
    from graphrag_got.code.parse import is_test_file

    out: dict[str, list[str]] = {}
    for f in res.files:
        if f.python and not is_test_file(f.path) and (f.module_lines or f.module_removed):
            out.setdefault("module code", []).append(f.path)
    for s in res.symbols:
        if is_test_file(s.path) or s.answered_by.startswith("nothing") or s.answered_by == "run itself":
            continue
        if s.reads:
            out.setdefault("module constant", []).append(f"{s.name} reads {', '.join(s.reads)}")
        if s.change in ("renamed", "moved"):
            out.setdefault("renamed", []).append(s.name)
        elif s.type == v.CLASS and s.change == "modified":
            out.setdefault("class body", []).append(s.name)
        elif s.header and s.change == "modified":
            out.setdefault("def header", []).append(s.name)
    return out


def scores(predicted: set[str], true: set[str]) -> tuple[float | None, float | None]:
    hit = len(predicted & true)
    return (round(hit / len(predicted), 3) if predicted else None, round(hit / len(true), 3) if true else None)


def graph_dump(driver: Any, settings: Any) -> dict[str, Any]:
    def norm(p: dict[str, Any]) -> dict[str, Any]:
        return {k: sorted(v) if isinstance(v, list) else v for k, v in p.items()}

    with driver.session(database=settings.neo4j.database) as s:
        nodes = sorted(json.dumps([sorted(r["l"]), norm(r["p"])], sort_keys=True)
                       for r in s.run("MATCH (e:Entity) RETURN labels(e) AS l, properties(e) AS p"))
        rels = sorted(json.dumps([r["a"], r["t"], r["b"], norm(r["p"])], sort_keys=True)
                      for r in s.run("MATCH (a:Entity)-[r]->(b:Entity) RETURN a.uid AS a, type(r) AS t, b.uid AS b, "
                                     "properties(r) AS p"))
    return {"nodes": nodes, "relations": rels}


def wipe(driver: Any, settings: Any) -> None:
    with driver.session(database=settings.neo4j.database) as s:
        s.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


def walk_anchor(clone: Path, revs: list[str], a: int, max_k: int, work: Path, truths: dict[int, dict[str, Any]],
                driver: Any, settings: Any, onto: Any, compare: bool) -> dict[str, Any]:
    from graphrag_got.code.diff import diff_impact
    from graphrag_got.code.refresh import refresh
    from graphrag_got.graph.load import load_extraction

    out_path = work / "graphs" / f"anchor-{a}.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    for p in (out_path, out_path.with_name(out_path.name + ".facts")):
        p.unlink(missing_ok=True)
    checkout(clone, revs[a])
    wipe(driver, settings)
    t0 = time.perf_counter()
    ext, _ = refresh(onto, clone, out_path, coverage=[work / "coverage" / f"{revs[a]}.coverage"])
    load_extraction(driver, settings.neo4j, ext, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    first_load = time.perf_counter() - t0
    pairs, refreshes = [], []
    for k in range(1, max_k + 1):
        i = a + k
        if i >= len(revs):
            break
        t1 = time.perf_counter()
        res = diff_impact(driver, settings.neo4j, clone, f"{revs[i - 1]}..{revs[i]}", code=settings.code)
        ask_seconds = time.perf_counter() - t1
        true = set(truths[i]["tests"])
        answer = set(res.pytest_args)
        sets = {"answer": answer, "+function": answer | {t.nodeid for t in res.ran_function_only if t.nodeid}}
        row: dict[str, Any] = {"anchor": a, "k": k, "commit": revs[i][:10], "true": len(true),
                               "strict_true": len(truths[i]["strict"]), "ask_seconds": round(ask_seconds, 3),
                               "states": {}}
        for s in res.symbols:
            row["states"][s.coverage] = row["states"].get(s.coverage, 0) + 1
        row["evidence"] = {}
        for t in res.tests:  # which part of the answer is right: per evidence label
            e = row["evidence"].setdefault(t.evidence or "", {"predicted": 0, "correct": 0})
            e["predicted"] += 1
            e["correct"] += t.nodeid in true
        row["import_time"] = import_time(res)
        row["module_level"] = any(kind in MODULE_LEVEL for kind in row["import_time"])
        for name, predicted in sets.items():
            p, r = scores(predicted, true)
            row[name] = {"predicted": len(predicted), "correct": len(predicted & true), "precision": p, "recall": r}
        p, r = scores(answer, set(truths[i]["strict"]))
        row["answer_strict"] = {"predicted": len(answer), "correct": len(answer & set(truths[i]["strict"])),
                                "precision": p, "recall": r}
        pairs.append(row)
        checkout(clone, revs[i])
        t2 = time.perf_counter()
        ext, summary = refresh(onto, clone, out_path, since=revs[i - 1])
        load = load_extraction(driver, settings.neo4j, ext, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
        refreshes.append({"commit": revs[i][:10], "touched": len(summary.touched), "parsed": summary.parsed,
                          "documents_changed": len(summary.documents_changed),
                          "documents_removed": len(summary.documents_removed), "load_updated": load.documents_updated,
                          "seconds": round(time.perf_counter() - t2, 2)})
        print(f"  anchor {a} k {k} {revs[i][:10]}: true {len(true)} predicted {len(answer)} "
              f"P/R {row['answer']['precision']}/{row['answer']['recall']}; refresh {refreshes[-1]['seconds']} s",
              flush=True)
    result: dict[str, Any] = {"anchor": a, "commit": revs[a][:10], "first_extract_and_load_seconds": round(first_load, 1),
                              "pairs": pairs, "refreshes": refreshes}
    if compare:
        result["equality"] = equality(clone, out_path, driver, settings, onto)
    return result


def equality(clone: Path, out_path: Path, driver: Any, settings: Any, onto: Any) -> dict[str, Any]:
    """The refreshed extraction and graph against a full re-extraction (same tree, same kept evidence)."""
    from graphrag_got.code.extractor import build_code_extraction, parse_tree
    from graphrag_got.code.refresh import kept_evidence
    from graphrag_got.code.resolve import resolve
    from graphrag_got.extract.extraction import Extraction, SkippedFile
    from graphrag_got.graph.load import load_extraction

    refreshed = Extraction.read(out_path)
    before = graph_dump(driver, settings)
    files, skipped = parse_tree(clone)
    docs, records = kept_evidence(refreshed)
    full = build_code_extraction(onto, clone, resolve(files), docs)
    full.skipped_files = [SkippedFile(path=x.path, reason=x.reason, message=x.message) for x in skipped] + records
    full.recount()
    a, b = refreshed.model_dump(mode="json"), full.model_dump(mode="json")
    a.pop("created")
    b.pop("created")
    wipe(driver, settings)
    load_extraction(driver, settings.neo4j, full, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    after = graph_dump(driver, settings)
    return {"extraction_equal": a == b, "graph_equal": before == after, "entities": len(before["nodes"]),
            "relations": len(before["relations"])}


def aggregate(pairs: list[dict[str, Any]], variant: str) -> dict[str, Any]:
    with_truth = [p for p in pairs if p["true"]]
    correct = sum(p[variant]["correct"] for p in pairs)
    predicted = sum(p[variant]["predicted"] for p in pairs)
    true = sum(p["true"] for p in pairs) if variant != "answer_strict" else sum(p["strict_true"] for p in pairs)
    precisions = [p[variant]["precision"] for p in with_truth if p[variant]["precision"] is not None]
    recalls = [p[variant]["recall"] for p in with_truth if p[variant]["recall"] is not None]
    return {"pairs": len(pairs), "pairs_with_truth": len(with_truth),
            "precision_micro": round(correct / predicted, 3) if predicted else None,
            "recall_micro": round(correct / true, 3) if true else None,
            "precision_mean": round(statistics.fmean(precisions), 3) if precisions else None,
            "recall_mean": round(statistics.fmean(recalls), 3) if recalls else None}


#: The answer, P/R over the pairs that are not flagged module-level (see the module docstring).
NOT_MODULE_LEVEL = "answer w/o module-level"
COLUMNS = ("answer", NOT_MODULE_LEVEL, *VARIANTS[1:], "answer_strict")


def aggregates(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    out = {v: aggregate(pairs, v) for v in (*VARIANTS, "answer_strict")}
    out[NOT_MODULE_LEVEL] = aggregate([p for p in pairs if not p["module_level"]], "answer")
    return out


def diff_cli_timing(clone: Path, revs: list[str], truths: dict[int, dict[str, Any]]) -> dict[str, Any] | None:
    """`graphrag-got ask impact --diff A..B --json` end to end for the change of the window touching 5
    Python files (or the nearest count), 5 runs."""
    cands = sorted(truths, key=lambda i: (abs(truths[i]["python_files"] - 5), i))
    if not cands:
        return None
    i = cands[0]
    env = {k: val for k, val in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [sys.executable, "-m", "graphrag_got.cli", "ask", "impact", "--diff", f"{revs[i - 1]}..{revs[i]}", "--root",
           str(clone), "--json", "--ontology", str(ONTOLOGY)]
    subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        times.append(time.perf_counter() - t0)
        if proc.returncode:
            raise SystemExit(f"ask impact --diff failed: {proc.stderr[-1000:]}")
    return {"commit": revs[i][:10], "python_files": truths[i]["python_files"], "p50": round(statistics.median(times), 3),
            "min": round(min(times), 3), "runs": len(times), "command": " ".join(cmd[1:])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="git repository of click to clone from")
    ap.add_argument("--end", default=DEFAULT_END, help="last commit of the window (first-parent history)")
    ap.add_argument("--commits", type=int, default=30, help="changes in the window (commits + 1 checkouts)")
    ap.add_argument("--anchors", default="0,5,10,15,20", help="window positions whose coverage is recorded")
    ap.add_argument("--max-k", type=int, default=10)
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--name", default="", help="suffix of the result files (a second window)")
    args = ap.parse_args(argv)
    from graphrag_got.config import Settings
    from graphrag_got.graph.db import connect
    from graphrag_got.ontology.model import Ontology

    work = args.work
    clone = work / "click"
    (work / "coverage").mkdir(parents=True, exist_ok=True)
    if not (clone / ".git").is_dir():
        sh(work, "git", "clone", "-q", str(args.source), str(clone))
    revs = window(clone, args.end, args.commits)
    runs = {}
    for i, rev in enumerate(revs):
        runs[i] = run_coverage(clone, rev, work / "coverage" / f"{rev}.coverage")
        print(f"coverage {i}/{len(revs) - 1} {rev[:10]}: {runs[i]['summary']}", flush=True)
    truths = {i: truth(clone, revs[i - 1], revs[i], work / "coverage" / f"{revs[i]}.coverage")
              for i in range(1, len(revs))}
    anchors = [int(x) for x in args.anchors.split(",") if x.strip()]
    settings = Settings.load()
    onto = Ontology.from_file(ONTOLOGY)
    walks = []
    with connect(settings.neo4j) as driver:
        for n, a in enumerate(anchors):
            max_k = args.max_k if n else max(args.max_k, len(revs) - 1 - a)  # the first anchor walks the window
            walks.append(walk_anchor(clone, revs, a, max_k, work, truths, driver, settings, onto, compare=n == 0))
        timing = diff_cli_timing(clone, revs, truths)
    pairs = [p for w in walks for p in w["pairs"]]
    by_k = {k: aggregates([p for p in pairs if p["k"] == k]) for k in sorted({p["k"] for p in pairs})}
    result = {"created": time.strftime("%Y-%m-%d %H:%M"),
              "machine": f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, "
                         f"load average {os.getloadavg()[0]:.1f} at the end (busy: timings are not quiet-machine numbers)",
              "window": {"end": args.end, "commits": [r[:10] for r in revs]}, "test_runs": runs,
              "truths": {revs[i][:10]: {k: (len(v) if isinstance(v, list) else v) for k, v in t.items()}
                         for i, t in truths.items()},
              "walks": walks, "by_k": by_k,
              "overall": aggregates(pairs), "k_le_10": aggregates([p for p in pairs if p["k"] <= 10]),
              "module_level_pairs": sorted({p["commit"] for p in pairs if p["module_level"]}),
              "diff_cli": timing}
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = "code_history" + (f"_{args.name}" if args.name else "")
    (RESULTS / f"{stem}.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = table(result)
    (RESULTS / f"{stem}.txt").write_text(text, encoding="utf-8")
    print(text)
    return 0


def table(r: dict[str, Any]) -> str:
    w = r["window"]["commits"]
    fails = [f"{k}: exit {v['exit_code']}" for k, v in r["test_runs"].items() if v["exit_code"]]
    out = [f"ask impact --diff with stale coverage, click first-parent commits {w[0]}..{w[-1]} ({len(w) - 1} changes); "
           f"{r['created']}, {r['machine']}",
           "truth: tests whose coverage at the change's new side ran a statement holding an added/changed line, plus "
           "the tests the change adds or edits; 'strict': coverage only",
           "answer: pytest_args of `ask impact --diff c(i-1)..c(i)` over the graph refreshed to c(i-1) whose coverage "
           "was recorded at c(i-k)",
           f"test runs with failures (coverage still recorded): {', '.join(fails) or 'none'}", ""]
    out.append(f"module-level pairs ({len(r['module_level_pairs'])}: the answer selects tests for module code, a "
               "module-level assignment or a class body, lines the truth cannot see since they run at import): "
               + (", ".join(r["module_level_pairs"]) or "none") + f"; '{NOT_MODULE_LEVEL}' leaves them out (its "
               "pairs column: the pairs left)")
    head = f"{'k':>4} {'pairs':>5} {'w/truth':>7}"
    for v in COLUMNS:
        head += f" {v + ' P/R micro':>34} {'mean':>13}" if v == NOT_MODULE_LEVEL else \
            f" {v + ' P/R micro':>24} {'mean':>13}"
    out.append(head)
    rows = list(r["by_k"].items()) + [("<=10", r["k_le_10"]), ("all", r["overall"])]
    for k, aggs in rows:
        line = f"{k:>4} {aggs['answer']['pairs']:>5} {aggs['answer']['pairs_with_truth']:>7}"
        for v in COLUMNS:
            a = aggs[v]
            micro = str(a['precision_micro']) + '/' + str(a['recall_micro'])
            if v == NOT_MODULE_LEVEL:
                micro = f"({a['pairs']}) {micro}"
            line += f" {micro:>{34 if v == NOT_MODULE_LEVEL else 24}} " \
                    f"{str(a['precision_mean']) + '/' + str(a['recall_mean']):>13}"
        out.append(line)
    out.append("")
    for wk in r["walks"]:
        secs = [x["seconds"] for x in wk["refreshes"]]
        one = [x["seconds"] for x in wk["refreshes"] if x["touched"] == 1]
        out.append(f"anchor {wk['anchor']} ({wk['commit']}): extract with coverage + load "
                   f"{wk['first_extract_and_load_seconds']} s; code refresh --since + load per commit: median "
                   f"{statistics.median(secs) if secs else None} s, max {max(secs) if secs else None} s"
                   + (f", one-file commits median {statistics.median(one)} s ({len(one)})" if one else ""))
        if "equality" in wk:
            e = wk["equality"]
            out.append(f"   refreshed vs full re-extraction of {wk['pairs'][-1]['commit'] if wk['pairs'] else '?'}: "
                       f"extraction equal {e['extraction_equal']}, graph equal {e['graph_equal']} "
                       f"({e['entities']} entities, {e['relations']} relations)")
        for p in wk["pairs"]:
            a = p["answer"]
            out.append(f"   k={p['k']:>2} {p['commit']} true {p['true']:>4} (strict {p['strict_true']:>4}) predicted "
                       f"{a['predicted']:>4} P/R {a['precision']}/{a['recall']}  states {p['states']}  "
                       f"ask {p['ask_seconds']} s")
            if p["import_time"]:
                out.append("         " + ("MODULE-LEVEL (truth cannot see import-time lines): " if p["module_level"]
                                          else "import time: ")
                           + "; ".join(f"{kind}: {', '.join(what[:3])}" + (" ..." if len(what) > 3 else "")
                                       for kind, what in sorted(p["import_time"].items())))
    t = r.get("diff_cli")
    if t:
        out.append(f"\nask impact --diff end to end (CLI, fresh interpreter) on {t['commit']} ({t['python_files']} Python "
                   f"files): p50 {t['p50']} s, min {t['min']} s over {t['runs']} runs (busy machine)")
        out.append(f"   command: python {t['command']}")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
