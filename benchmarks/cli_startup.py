"""How long the CLI takes to answer when it does nothing but parse: `--help`, `--version`, a
subcommand's help, a usage error (no Neo4j, no model, no test framework).

    .venv/bin/python -m benchmarks.cli_startup                       # this checkout
    .venv/bin/python -m benchmarks.cli_startup --compare HEAD~1       # and another commit, side by side
    .venv/bin/python -m benchmarks.cli_startup --runs 9 --json out.json

Each entry point runs as its own process (``python -m graphrag_got.cli ARGS``, this checkout first on
``PYTHONPATH``), once to warm the file cache and then ``--runs`` times; the table shows the median
and the slowest of those runs in milliseconds. ``python -c pass`` is the floor: the interpreter's own
start-up, which no change to this package can remove. ``--compare REF`` extracts ``graphrag_got/``
of that commit (``git archive``) into a temporary folder and times it the same way, interleaved run
by run with this checkout so a load change on the machine hits both alike.

The target (issue 26) is < 500 ms for ``--help`` and ``--version``. The load average and the share
of CPU time the whole machine spent busy while the benchmark ran are printed with the table: the
numbers mean little on a machine busy with other work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_MS = 500.0

#: (label, arguments after ``python``). The first is the interpreter alone.
ENTRY_POINTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("python -c pass (floor)", ("-c", "pass")),
    ("--version", ("-m", "graphrag_got.cli", "--version")),
    ("--help", ("-m", "graphrag_got.cli", "--help")),
    ("ask impact --help", ("-m", "graphrag_got.cli", "ask", "impact", "--help")),
    ("ask --help", ("-m", "graphrag_got.cli", "ask", "--help")),
    ("extract --help", ("-m", "graphrag_got.cli", "extract", "--help")),
    ("unknown command (usage error)", ("-m", "graphrag_got.cli", "no-such-command")),
)
#: Entry points the < 500 ms target applies to.
TARGETED = ("--version", "--help")


def cpu_times() -> tuple[int, int]:
    """(busy, total) jiffies of the whole machine from /proc/stat (0, 0 where there is none)."""
    try:
        fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return 0, 0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return sum(fields) - idle, sum(fields)


def time_once(python_args: tuple[str, ...], pythonpath: Path) -> float:
    """Wall time in ms of one process, from spawn to exit; its output is discarded."""
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "COLUMNS": "100"}
    t0 = time.perf_counter()
    subprocess.run([sys.executable, *python_args], cwd=pythonpath, env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=False)
    return (time.perf_counter() - t0) * 1000


def extract_ref(ref: str, into: Path) -> Path:
    """``graphrag_got/`` of commit ``ref`` unpacked under ``into`` (which is returned)."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", ref, "graphrag_got"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(trees: dict[str, Path], runs: int) -> dict[str, dict[str, list[float]]]:
    """``{tree: {entry label: [ms, ...]}}``: one warm-up each, then ``runs`` rounds over every tree."""
    out: dict[str, dict[str, list[float]]] = {name: {label: [] for label, _ in ENTRY_POINTS} for name in trees}
    for name, path in trees.items():
        for _, args in ENTRY_POINTS:
            time_once(args, path)  # warm-up: file cache, .pyc files
    for _ in range(runs):
        for label, args in ENTRY_POINTS:
            for name, path in trees.items():
                out[name][label].append(time_once(args, path))
    return out


def table(results: dict[str, dict[str, list[float]]]) -> list[str]:
    names = list(results)
    head = ["entry point"] + [f"{n} median ms" for n in names] + [f"{n} max ms" for n in names]
    rows = []
    for label, _ in ENTRY_POINTS:
        rows.append([label] + [f"{statistics.median(results[n][label]):.0f}" for n in names]
                    + [f"{max(results[n][label]):.0f}" for n in names])
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    fmt = lambda r: "| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |"  # noqa: E731
    return [fmt(head), fmt(["-" * w for w in widths]), *[fmt(r) for r in rows]]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5, help="timed runs per entry point after the warm-up (default 5)")
    ap.add_argument("--compare", metavar="REF", help="also time graphrag_got/ of this git commit")
    ap.add_argument("--json", type=Path, help="also write the raw timings here")
    args = ap.parse_args(argv)
    if args.runs < 1:
        ap.error("--runs must be at least 1")

    with tempfile.TemporaryDirectory(prefix="cli_startup_") as tmp:
        trees = {"this checkout": ROOT}
        if args.compare:
            trees = {args.compare: extract_ref(args.compare, Path(tmp)), **trees}
        load_before = os.getloadavg()
        busy0, total0 = cpu_times()
        t0 = time.monotonic()
        results = measure(trees, args.runs)
        seconds = time.monotonic() - t0
        busy1, total1 = cpu_times()
        load_after = os.getloadavg()

    busy = (busy1 - busy0) / (total1 - total0) if total1 > total0 else float("nan")
    print(f"CLI start-up, python -m graphrag_got.cli, median of {args.runs} runs after a warm-up "
          f"({os.cpu_count()} cores, Python {sys.version.split()[0]})")
    print(f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after; the machine was {busy:.0%} busy "
          f"during the {seconds:.0f} s of the benchmark (this benchmark's own processes included)")
    print()
    for line in table(results):
        print(line)
    print()
    mine = results["this checkout"]
    worst = max(statistics.median(mine[label]) for label in TARGETED)
    verdict = "met" if worst < TARGET_MS else "NOT met"
    print(f"target < {TARGET_MS:.0f} ms for {' and '.join(TARGETED)}: {verdict} (slowest median {worst:.0f} ms)")
    if args.json:
        args.json.write_text(json.dumps({"runs": args.runs, "load_before": load_before, "load_after": load_after,
                                         "busy": busy, "timings_ms": results}, indent=2))
    return 0 if worst < TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
