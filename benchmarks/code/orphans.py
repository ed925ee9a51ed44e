"""`ask orphans` against vulture on a real package (issue 40).

    python -m benchmarks.code.orphans [--work DIR] [--package click==8.1.7]

The package's sdist (tests included) is fetched and its suite run under per-test coverage exactly as
:mod:`benchmarks.code.impact` does (same cache), extracted with that coverage and loaded into the
Neo4j at NEO4J_URI (a scratch server: it is emptied). Then, on the package's own source (``src/``):

* ``ask orphans`` with the recorded run (a function the suite executed is used) and without it
  (the static graph only), reason ``unreferenced``;
* vulture (``python -m vulture src tests --min-confidence 0``: usage in the tests counts, as for the
  graph), its unused functions, methods, classes and properties, matched to the graph's entities by
  file, name and line;
* agreement (both list it), and what each lists alone, grouped by a reason read from the graph:
  vulture is name-based (a name written anywhere counts as use), the graph follows resolved calls
  and the recorded run.

Results: ``benchmarks/results/code_orphans.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.code.impact import DEFAULT_WORK, ONTOLOGY, RESULTS, fetch, run_tests

LINE = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): unused (?P<kind>function|method|class|property) "
                  r"'(?P<name>[^']+)' \((?P<conf>\d+)% confidence")


def vulture(root: Path, *folders: str) -> list[dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", "vulture", *folders, "--min-confidence", "0"], cwd=root,
                          capture_output=True, text=True, timeout=600)
    out = []
    for line in proc.stdout.splitlines():
        m = LINE.match(line)
        if m and m["path"].startswith("src/"):
            out.append({"path": m["path"], "line": int(m["line"]), "kind": m["kind"], "name": m["name"],
                        "confidence": int(m["conf"])})
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK)
    ap.add_argument("--package", default="click==8.1.7")
    args = ap.parse_args(argv)
    import vulture as vulture_pkg

    from graphrag_got.code.extractor import run_code_extraction
    from graphrag_got.code.orphans import Reason, orphans
    from graphrag_got.config import Settings
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.graph.db import connect
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.ontology.model import Ontology

    args.work.mkdir(parents=True, exist_ok=True)
    module = args.package.partition("==")[0].lower()
    root = fetch(args.package, args.work)
    data = args.work / f"{root.name}.coverage"
    run_tests(root, module, data)
    onto = Ontology.from_file(ONTOLOGY)
    out = args.work / f"{root.name}.orphans.json"
    run_code_extraction(onto, root, out, coverage=[data])
    ext = Extraction.read(out)
    entities = [e for e in ext.entities if e.type in ("Function", "Class") and "path" in e.properties]
    settings = Settings.load()
    with connect(settings.neo4j) as driver:
        with driver.session(database=settings.neo4j.database) as s:
            s.run("MATCH (n) CALL { WITH n DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()
        load_extraction(driver, settings.neo4j, out, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
        t0 = time.perf_counter()
        with_cov = orphans(driver, settings.neo4j)
        seconds = time.perf_counter() - t0
        static = orphans(driver, settings.neo4j, use_coverage=False)
    src = lambda o: o.path.startswith("src/") and o.reason == Reason.UNREFERENCED  # noqa: E731
    ours = {o.name for o in with_cov.orphans if src(o)}
    ours_static = {o.name for o in static.orphans if src(o)}
    found = vulture(root, "src", "tests")
    found_src = vulture(root, "src")

    def match(item: dict[str, Any]) -> str | None:
        best = None
        for e in entities:
            p = e.properties
            if p["path"] == item["path"] and e.name.rsplit(".", 1)[-1] == item["name"] \
                    and int(p["start_line"]) <= item["line"] <= int(p.get("end_line", p["start_line"])):
                if best is None or int(p["start_line"]) > int(best.properties["start_line"]):
                    best = e
        return best.name if best is not None else None

    vul, vul_src = {}, {}
    for items, into in ((found, vul), (found_src, vul_src)):
        for item in items:
            name = match(item)
            if name is not None:
                into[name] = item
    import io

    init = (root / "src" / module / "__init__.py").read_text(encoding="utf-8")
    judged = {o.name for o in with_cov.orphans}
    excluded_kinds = {e.name: e.properties.get("kind") for e in entities}

    def why_vulture_only(name: str) -> str:
        if excluded_kinds.get(name) == "property":
            return "a property (read as an attribute; not judged by ask orphans)"
        last = name.rsplit(".", 1)[-1]
        if last.startswith("__") and last.endswith("__"):
            return "a dunder method (Python calls it; not judged)"
        if name in ours_static:
            return "executed by the recorded test run (called dynamically: a callback, getattr, a decorator)"
        return "the graph has a resolved call or test edge to it (vulture sees no use of its name)"

    def why_ours_only(name: str) -> str:
        last = name.rsplit(".", 1)[-1]
        if re.search(rf"\b{re.escape(last)}\b", init):
            return "exported by the package's __init__ (public API: used by the package's users, not its suite)"
        if any(hasattr(cls, last) for cls in (io.IOBase, io.TextIOWrapper, io.BufferedReader, io.RawIOBase)):
            return "a method of the io protocol (the standard library calls it through a stream)"
        return "its name is used somewhere in src or tests (vulture's use), yet no resolved call reaches it and " \
               "the suite never ran it"

    both = sorted(ours & set(vul))
    result = {
        "created": time.strftime("%Y-%m-%d %H:%M"), "package": args.package,
        "vulture": vulture_pkg.__version__, "symbols_src": sum(e.properties["path"].startswith("src/") for e in entities),
        "ask_orphans": {"with_coverage": len(ours), "static_only": len(ours_static), "seconds": round(seconds, 3),
                        "not_judged": with_cov.excluded},
        "vulture_items": len(found), "vulture_matched": len(vul),
        "agreement": {"both": len(both), "ours_only": len(ours - set(vul)), "vulture_only": len(set(vul) - ours),
                      "jaccard": round(len(both) / len(ours | set(vul)), 3) if ours | set(vul) else None,
                      "static_both": len(ours_static & set(vul))},
        "both": both,
        "ours_only": {n: why_ours_only(n) for n in sorted(ours - set(vul))},
        "vulture_only": {n: {"why": why_vulture_only(n), "confidence": vul[n]["confidence"], "kind": vul[n]["kind"]}
                         for n in sorted(set(vul) - ours)},
        "vulture_src_only": {"items": len(found_src), "matched": len(vul_src), "both": len(ours & set(vul_src)),
                             "ours_only": len(ours - set(vul_src)), "vulture_only": len(set(vul_src) - ours),
                             "vulture_only_names": {n: why_vulture_only(n) for n in sorted(set(vul_src) - ours)}},
        "vulture_by_confidence": {str(c): sum(1 for x in vul.values() if x["confidence"] == c)
                                  for c in sorted({x["confidence"] for x in vul.values()})},
        "judged_names": len(judged),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "code_orphans.json").write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    text = table(result)
    (RESULTS / "code_orphans.txt").write_text(text, encoding="utf-8")
    print(text)
    return 0


def table(r: dict[str, Any]) -> str:
    a, ag = r["ask_orphans"], r["agreement"]
    groups: dict[str, list[str]] = {}
    for n, d in r["vulture_only"].items():
        groups.setdefault(d["why"], []).append(n)
    out = [f"ask orphans vs vulture {r['vulture']} on {r['package']} (src/, {r['symbols_src']} functions and classes); "
           f"{r['created']}",
           f"ask orphans (unreferenced, src/): {a['with_coverage']} with the recorded test run, {a['static_only']} "
           f"static only ({a['seconds']} s); not judged: {a['not_judged']}",
           f"vulture (src and tests given, --min-confidence 0): {r['vulture_items']} unused functions/methods/classes/"
           f"properties in src/, {r['vulture_matched']} matched to graph entities; by confidence "
           f"{r['vulture_by_confidence']}",
           f"agreement: both {ag['both']}, ask orphans only {ag['ours_only']}, vulture only {ag['vulture_only']}, "
           f"Jaccard {ag['jaccard']} (static graph: both {ag['static_both']})",
           "", "both:"] + [f"  {n}" for n in r["both"]]
    vs = r["vulture_src_only"]
    out.insert(5, f"vulture on src alone (uses in tests not seen): {vs['items']} items, {vs['matched']} matched; both "
                  f"{vs['both']}, ask orphans only {vs['ours_only']}, vulture only {vs['vulture_only']}")
    src_groups: dict[str, list[str]] = {}
    for n, why in vs["vulture_only_names"].items():
        src_groups.setdefault(why, []).append(n)
    for why, names in src_groups.items():
        out.insert(6, f"   vulture (src alone) only: {why} ({len(names)}): " + ", ".join(names[:8])
                   + (" ..." if len(names) > 8 else ""))
    ours_groups: dict[str, list[str]] = {}
    for n, why in r["ours_only"].items():
        ours_groups.setdefault(why, []).append(n)
    out += ["", "ask orphans only, by what likely uses them:"]
    for why, names in ours_groups.items():
        out.append(f"  {why} ({len(names)}):")
        out += [f"    {n}" for n in names]
    out += ["", "vulture only, by why the graph does not list it:"]
    for why, names in groups.items():
        out.append(f"  {why} ({len(names)}): " + ", ".join(names[:15]) + (" ..." if len(names) > 15 else ""))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
