"""Load test of `graphrag-got serve`: concurrent clients sending `POST /ask` with ``answer: false``
(retrieval only: routing, anchors, neighbourhood, sources; no LLM), for a fixed time.

Starts the service in this process (uvicorn thread, free loopback port) on the configured Neo4j,
or targets a running one with ``--url``. Every client sends the next question as soon as the last
one is answered; the questions cycle through ``benchmarks/qa/questions.json`` (by default its
local ones). Prints requests, throughput, latency percentiles and errors by status.

    graphrag-got load tests/data/got_extraction.json        # a small graph on the configured Neo4j
    .venv/bin/python -m benchmarks.service_load             # 20 clients, 30 s
    .venv/bin/python -m benchmarks.service_load --clients 5 --duration 10 --types local global

The graph is only read. Latency is measured in the client (request sent to body read).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import httpx

QUESTIONS = Path(__file__).resolve().parent / "qa" / "questions.json"


def load_questions(path: Path, types: Sequence[str]) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    out = [q["question"] for q in data["questions"] if q.get("type") in types]
    if not out:
        raise SystemExit(f"error: {path} has no question of type {', '.join(types)}")
    return out


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, min(len(sorted_values), round(q / 100 * len(sorted_values) + 0.5)))
    return sorted_values[rank - 1]


async def run_load(url: str, questions: list[str], clients: int, duration_s: float, mode: str,
                   timeout_s: float) -> dict[str, Any]:  # fmt: skip
    latencies: list[float] = []
    statuses: collections.Counter[str] = collections.Counter()
    examples: dict[str, str] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=timeout_s, limits=limits) as http:
        for q in questions:  # warm-up (first use of the catalog, caches): not measured
            await http.post("/ask", json={"question": q, "mode": mode, "answer": False})
        stop = time.monotonic() + duration_s

        async def client(n: int) -> None:
            i = n
            while time.monotonic() < stop:
                body = {"question": questions[i % len(questions)], "mode": mode, "answer": False}
                i += clients
                t0 = time.perf_counter()
                try:
                    res = await http.post("/ask", json=body)
                    await res.aread()
                    key = str(res.status_code)
                    if res.status_code != 200:
                        examples.setdefault(key, res.text[:300])
                except httpx.HTTPError as exc:
                    key = type(exc).__name__
                    examples.setdefault(key, str(exc)[:300])
                latencies.append(time.perf_counter() - t0)
                statuses[key] += 1

        t_start = time.monotonic()
        await asyncio.gather(*(client(n) for n in range(clients)))
        elapsed = time.monotonic() - t_start
    return {"requests": len(latencies), "elapsed_s": elapsed, "statuses": dict(statuses), "examples": examples,
            "latencies": sorted(latencies)}


def report(res: dict[str, Any], clients: int, questions: int, mode: str) -> str:
    lat = res["latencies"]
    errors = sum(n for k, n in res["statuses"].items() if k != "200")
    lines = [
        f"POST /ask answer=false mode={mode}: {clients} clients, {res['elapsed_s']:.1f} s, {questions} questions cycled",
        f"requests   {res['requests']}  ({res['requests'] / res['elapsed_s']:.1f}/s)",
        f"latency    p50 {percentile(lat, 50) * 1000:.0f} ms  p95 {percentile(lat, 95) * 1000:.0f} ms  "
        f"p99 {percentile(lat, 99) * 1000:.0f} ms  max {max(lat) * 1000:.0f} ms  "
        f"mean {statistics.fmean(lat) * 1000:.0f} ms" if lat else "latency    (no request finished)",
        f"errors     {errors}" + (f"  {res['statuses']}" if errors else ""),
    ]
    for key, text in res["examples"].items():
        lines.append(f"  e.g. {key}: {text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=20, help="concurrent clients (default: %(default)s)")
    parser.add_argument("--duration", type=float, default=30.0, help="seconds of load (default: %(default)s)")
    parser.add_argument("--mode", default="auto", choices=["auto", "local", "global", "drift"])
    parser.add_argument("--types", nargs="+", default=["local"], help="question types of the file to use")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="questions file (benchmarks/qa format)")
    parser.add_argument("--url", default=None, help="a running service (default: start one in this process)")
    parser.add_argument("--timeout", type=float, default=60.0, help="client timeout per request, seconds")
    args = parser.parse_args(argv)
    if args.clients < 1 or args.duration <= 0:
        parser.error("--clients must be at least 1 and --duration positive")
    questions = load_questions(args.questions, args.types)

    if args.url:
        res = asyncio.run(run_load(args.url, questions, args.clients, args.duration, args.mode, args.timeout))
    else:
        from graphrag_got.config import Settings
        from graphrag_got.service import create_app
        from graphrag_got.service.background import serve_in_thread

        settings = Settings.load()
        print(f"Neo4j {settings.neo4j.uri}, local retrieval {settings.search.local_retrieval}, "
              f"{os.cpu_count()} CPU(s), Python {sys.version.split()[0]}")
        with serve_in_thread(create_app(settings)) as url:
            res = asyncio.run(run_load(url, questions, args.clients, args.duration, args.mode, args.timeout))
    print(report(res, args.clients, len(questions), args.mode))
    return 0 if all(k == "200" for k in res["statuses"]) else 1


if __name__ == "__main__":
    sys.exit(main())
