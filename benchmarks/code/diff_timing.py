"""`ask impact --diff` end to end on the click graph: wall time of the CLI and where it goes.

Runs ``graphrag-got ask impact --diff A..B --json`` in a fresh interpreter ``--runs`` times (after
one warm-up run, so the operating system's file cache is warm as in a pre-commit hook), alternating
with the same command of a ``--base`` checkout of this repository when one is given (A/B in the same
run: a busy machine slows both alike), then times the phases in one process: imports, reading the
change (git, parsing both sides of each changed file), the graph queries.

With ``--server``, the same change is also asked of a ``graphrag-got serve --code-root`` this script
starts (one warm-up request first): ``ask impact --diff --server URL --json`` end to end (the CLI as
its client), and the request alone.

Needs the click graph of ``benchmarks/code/history.py`` loaded in the Neo4j of ``NEO4J_URI`` and
its clone (``--root``); the change defaults to the 5-file commit that benchmark times.

    NEO4J_URI=bolt://127.0.0.1:7710 NEO4J_PASSWORD=... python -m benchmarks.code.diff_timing \\
        --base /path/to/an/older/checkout --out benchmarks/results/code_diff_timing.txt
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_ROOT = Path.home() / ".cache" / "graphrag_got" / "history-bench" / "click"
DEFAULT_SPEC = "679a7a0eccbdded7a6e85680bdaaf08003765e01..240603f240a9ff179d834fede836060d897c6980"
PHASES = r"""
import json, sys, time
t0 = time.perf_counter()
from graphrag_got.code.changes import read_change
from graphrag_got.code.diff import diff_impact
from graphrag_got.config import Settings
from graphrag_got.graph.db import connect
t1 = time.perf_counter()
root, spec = sys.argv[1], sys.argv[2]
settings = Settings.load()
read_change(__import__("pathlib").Path(root), spec)
t2 = time.perf_counter()
with connect(settings.neo4j) as driver:
    t3 = time.perf_counter()
    result = diff_impact(driver, settings.neo4j, root, spec, code=settings.code)
    t4 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "read_change": t2 - t1, "diff_impact": t4 - t3,
                  "graph": (t4 - t3) - (t2 - t1), "queries": result.queries}))
"""


def _cli(checkout: Path, root: Path, spec: str) -> float:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(checkout)
    cmd = [sys.executable, "-m", "graphrag_got.cli", "ask", "impact", "--diff", spec, "--root", str(root), "--json",
           "--ontology", str(checkout / "ontology" / "code.json")]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=checkout, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - t0
    if proc.returncode:
        raise SystemExit(f"{checkout}: ask impact --diff failed: {proc.stderr[-1000:]}")
    return seconds


def _served(root: Path, spec: str, runs: int) -> dict[str, list[float]]:
    """The CLI as a client of a service started here for ``root``, and the HTTP request alone."""
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO)}
    url = f"http://127.0.0.1:{port}"
    server = subprocess.Popen([sys.executable, "-m", "graphrag_got.cli", "serve", "--port", str(port), "--code-root",
                               str(root), "--ontology", str(REPO / "ontology" / "code.json")], cwd=REPO, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    body = json.dumps({"diff": spec}).encode()
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url + "/health", timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the service did not start")
                time.sleep(0.2)

        def request() -> float:
            t0 = time.perf_counter()
            req = urllib.request.Request(url + "/impact/diff", data=body, headers={"content-type": "application/json"})
            urllib.request.urlopen(req, timeout=300).read()
            return time.perf_counter() - t0

        request()  # warm-up: the driver's connection, the first parse of the modules
        cmd = [sys.executable, "-m", "graphrag_got.cli", "ask", "impact", "--diff", spec, "--server", url, "--json"]
        out: dict[str, list[float]] = {"CLI --server (client + service)": [], "POST /impact/diff alone": []}
        for _ in range(runs):
            t0 = time.perf_counter()
            subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, check=True, timeout=300)
            out["CLI --server (client + service)"].append(time.perf_counter() - t0)
            out["POST /impact/diff alone"].append(request())
        return out
    finally:
        server.terminate()
        server.wait(timeout=30)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="the git clone the graph was extracted from")
    ap.add_argument("--diff", default=DEFAULT_SPEC, help="the change (A..B)")
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--base", type=Path, default=None, help="another checkout of this repository to time alongside")
    ap.add_argument("--out", type=Path, default=None, help="write the report here too")
    ap.add_argument("--server", action="store_true", help="also time the change asked of a running service")
    args = ap.parse_args(argv)
    sides = {"this checkout": REPO} | ({f"base ({args.base})": args.base} if args.base else {})
    for checkout in sides.values():
        _cli(checkout, args.root, args.diff)  # warm-up
    times: dict[str, list[float]] = {name: [] for name in sides}
    for _ in range(args.runs):
        for name, checkout in sides.items():
            times[name].append(_cli(checkout, args.root, args.diff))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | {"PYTHONPATH": str(REPO)}
    phases = [json.loads(subprocess.run([sys.executable, "-c", PHASES, str(args.root), args.diff], cwd=REPO, env=env,
                                        capture_output=True, text=True, check=True, timeout=300).stdout)
              for _ in range(3)]
    lines = [f"ask impact --diff {args.diff[:10]}..{args.diff.split('..')[-1][:10]} on the click graph, CLI end to end "
             f"(fresh interpreter, --json), {args.runs} runs after a warm-up, alternating; {time.strftime('%Y-%m-%d %H:%M')}, "
             f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} cores, load average "
             f"{os.getloadavg()[0]:.2f} at the end", ""]
    for name, ts in times.items():
        lines.append(f"{name:>40}: p50 {statistics.median(ts):.3f} s, min {min(ts):.3f} s, max {max(ts):.3f} s")
    if args.base:
        mine, base = (statistics.median(ts) for ts in list(times.values())[:2])
        lines.append(f"{'ratio (this / base, p50)':>40}: {mine / base:.2f}")
    if args.server:
        for name, ts in _served(args.root, args.diff, args.runs).items():
            lines.append(f"{name:>40}: p50 {statistics.median(ts):.3f} s, min {min(ts):.3f} s, max {max(ts):.3f} s")
    best = {k: min(p[k] for p in phases) for k in ("imports", "read_change", "graph")}
    lines += ["", "phases in one process (best of 3): " + ", ".join(f"{k} {v:.3f} s" for k, v in best.items())
              + f", {phases[0]['queries']} graph queries (the interpreter's own start, ~0.03 s, is not in them)"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
