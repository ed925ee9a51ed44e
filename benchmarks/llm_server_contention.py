"""The embedded llama-server extracting on a machine that is not quiet (issue 48): seconds a chunk, calls cut,
tokens thrown away, per slot count, quiet and beside other work.

    python -m benchmarks.llm_server_contention [--model qwen2.5-coder-1.5b] [--limit 4]
        [--conditions quiet:4,busy:4,nice:4,busy:1] [--threads 2] [--poll 50] [--out FILE]

Every condition extracts the first ``--limit`` paragraphs of the GoT corpus from an empty cache (every
call is real) through a llama-server of its own (N slots, as many calls in flight), the path
``graphrag-got extract`` takes, while one of these runs beside it:

* ``quiet``: nothing started by the benchmark;
* ``busy``: one CPU-bound process at normal priority (``while True``), the benchmark's child;
* ``nice``: the same process at the lowest priority (``nice 19``), like a background job on a laptop.

A condition is ``KIND:SLOTS`` with optional ``:tTHREADS``, ``:pPOLL`` and ``:bBATCH`` (``busy:4:t1:p0``: 4 slots,
1 thread, ``--poll 0``; ``:b2048``: llama.cpp's default step). Printed per condition: chunks, wall seconds, seconds a chunk, output tokens a second, calls,
calls cut by a stall (``GRAPHRAG_LLM_STALL_TIMEOUT``), resumed, pieces (~tokens) thrown away, the longest gap
between two pieces of a stream, the longest call, and how many calls took longer than ``--whole-call-limit``
seconds (the whole-call limit the calls had before they streamed, 600 s: each such call would have been
cut and asked again from the start), failed chunks, relation F1 against the hand gold (as
``benchmarks/llm_server.py``). The ratio is to the first ``quiet`` condition with the same slots.

``--window SECONDS`` measures the rate instead of a whole run (minutes instead of an hour when a
configuration is slow): each condition starts the same extraction, waits until every slot is writing,
and counts the tokens the slots write (llama-server's ``/slots``) over that many seconds; printed: the
seconds until every slot was writing (server start, shared prefix and prompts), tokens a second, and the
ratio to the first ``quiet`` condition with the same slots.

The competitor processes are this benchmark's children and are killed when a condition ends; they stop
by themselves when the benchmark is gone. Everything else running on the machine is the reader's to
report: the load average and a CPU sample are printed before each condition.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.extract_speed import GOLD, ONTOLOGY, _corpus, _gold_for  # noqa: E402
from benchmarks.llm_contention import cpu_bound_process  # noqa: E402
from benchmarks.llm_server import _free_port, _row, _settings  # noqa: E402
from benchmarks.quality.tables import markdown_table  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.extract.run import run_extraction  # noqa: E402
from graphrag_got.llm import server as llm_server  # noqa: E402
from graphrag_got.llm.cpu_threads import sample_cpu  # noqa: E402
from graphrag_got.llm.factory import get_chat_model  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402

KINDS = ("quiet", "busy", "nice")


def competitor(kind: str) -> Any:
    """One CPU-bound child process (normal priority for ``busy``, nice 19 for ``nice``) while the block runs."""
    return cpu_bound_process(kind != "quiet", niceness=19 if kind == "nice" else 0)


@dataclass
class Condition:
    kind: str
    slots: int
    threads: int
    poll: int
    batch: int = 512

    @classmethod
    def parse(cls, text: str, threads: int, poll: int) -> "Condition":
        kind, slots, *rest = text.strip().split(":")
        if kind not in KINDS:
            raise SystemExit(f"error: condition {text!r}: the kind must be one of {', '.join(KINDS)}")
        batch = 512
        for part in rest:
            if part.startswith("t"):
                threads = int(part[1:])
            elif part.startswith("p"):
                poll = int(part[1:])
            elif part.startswith("b"):
                batch = int(part[1:])
            else:
                raise SystemExit(f"error: condition {text!r}: {part!r} is none of tN, pN, bN")
        return cls(kind, int(slots), threads, poll, batch)

    @property
    def name(self) -> str:
        return (f"{self.kind}, x{self.slots}, {self.threads} thr, poll {self.poll}"
                + (f", batch {self.batch}" if self.batch != 512 else ""))


HEADER = ["condition", "chunks", "seconds", "s/chunk", "vs quiet", "output tok/s", "calls", "cut", "resumed",
          "thrown away", "longest gap s", "longest call s", "calls over limit", "failed", "relation F1",
          "relation F1 tolerant"]


def run_condition(args: argparse.Namespace, cond: Condition, corpus: Path, gold: dict[str, Any], onto: Ontology,
                  workdir: Path) -> dict[str, Any]:
    home = workdir / f"{cond.kind}-{cond.slots}-{cond.threads}-{cond.poll}-{len(list(workdir.iterdir()))}"
    settings = _settings(args, home, llamacpp_backend="server", llama_server_slots=cond.slots,
                         llama_server_port=_free_port(), llamacpp_threads=cond.threads, llama_server_poll=cond.poll,
                         llama_server_batch=cond.batch)
    before = sample_cpu(1.0)
    busy = f"{before.busy:.1f} of {before.cores} cores busy" if before is not None else "no CPU sample"
    print(f"{cond.name}: before it, load average {os.getloadavg()[0]:.2f}; {busy}", flush=True)
    started = llm_server.start(settings.llm, files=settings.files)
    try:
        chat = get_chat_model(settings.llm, files=settings.files)
        with competitor(cond.kind):
            t0 = time.monotonic()
            summary = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files,
                                     chunking=settings.chunking, llm=settings.llm)
            seconds = time.monotonic() - t0
    finally:
        llm_server.stop(settings.files)
    row = _row(cond.name, settings, summary, seconds, gold, onto, evaluated=None, peak=None, reference=None)
    stats = chat.stream_stats
    result = {"condition": cond.name, "kind": cond.kind, "slots": cond.slots, "threads": cond.threads,
              "poll": cond.poll, "chunks": row.chunks, "seconds": round(seconds, 1),
              "output_tokens": row.output_tokens, "failed": row.failed, "relation_f1": row.relation_f1,
              "relation_f1_tolerant": row.relation_f1_tolerant, "server_pid": started.pid, **stats.as_dict(),
              "calls_over_limit": sum(1 for s in stats.call_seconds if s > args.whole_call_limit),
              "call_seconds": [round(s, 1) for s in stats.call_seconds]}
    print(json.dumps(result), flush=True)
    return result


def _decoded(port: int) -> tuple[int, int]:
    """(tokens written so far by the slots busy now, slots writing) from llama-server's ``/slots``."""
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{port}/slots", timeout=60) as resp:  # noqa: S310 (loopback)
        slots = json.loads(resp.read().decode("utf-8"))
    total, writing = 0, 0
    for slot in slots:
        token = slot.get("next_token")
        token = (token[0] if token else {}) if isinstance(token, list) else (token or {})
        n = int(token.get("n_decoded") or 0)
        total += n
        writing += bool(slot.get("is_processing") and n > 0)
    return total, writing


def run_window(args: argparse.Namespace, cond: Condition, corpus: Path, onto: Ontology, workdir: Path) -> dict[str, Any]:
    """The tokens a second the slots write over ``args.window`` seconds, once every slot is writing."""
    import threading

    home = workdir / f"w-{cond.kind}-{cond.slots}-{cond.threads}-{cond.poll}-{len(list(workdir.iterdir()))}"
    settings = _settings(args, home, llamacpp_backend="server", llama_server_slots=cond.slots,
                         llama_server_port=_free_port(), llamacpp_threads=cond.threads, llama_server_poll=cond.poll,
                         llama_server_batch=cond.batch)
    print(f"{cond.name}: before it, load average {os.getloadavg()[0]:.2f}", flush=True)
    t0 = time.monotonic()
    llm_server.start(settings.llm, files=settings.files)
    try:
        chat = get_chat_model(settings.llm, files=settings.files)
        with competitor(cond.kind):
            worker = threading.Thread(target=lambda: run_extraction(
                settings.extract, onto, corpus, chat=chat, files=settings.files, chunking=settings.chunking,
                llm=settings.llm), daemon=True)  # left behind when the server stops: its calls fail
            worker.start()
            port = settings.llm.llama_server_port
            wanted = min(cond.slots, args.limit) if args.limit else cond.slots  # a paragraph is a chunk or more
            while _decoded(port)[1] < wanted and time.monotonic() - t0 < args.max_wait:
                time.sleep(5)
            t1, (d1, _) = time.monotonic(), _decoded(port)
            time.sleep(args.window)
            t2, (d2, _) = time.monotonic(), _decoded(port)
    finally:
        llm_server.stop(settings.files)
    result = {"condition": cond.name, "kind": cond.kind, "slots": cond.slots, "threads": cond.threads,
              "poll": cond.poll, "to_every_slot_writing_s": round(t1 - t0), "window_s": round(t2 - t1),
              "tokens": d2 - d1, "tokens_per_s": round((d2 - d1) / (t2 - t1), 2)}
    print(json.dumps(result), flush=True)
    return result


WINDOW_HEADER = ["condition", "s until every slot writes", "tokens/s (all slots)", "quiet rate / this rate"]


def window_cells(r: dict[str, Any], quiet: dict[int, float]) -> list[str]:
    base = quiet.get(r["slots"])
    return [r["condition"], str(r["to_every_slot_writing_s"]), f"{r['tokens_per_s']:.2f}",
            f"{base / r['tokens_per_s']:.2f}x" if base and r["tokens_per_s"] else "n/a"]


def cells(r: dict[str, Any], quiet_s: dict[int, float]) -> list[str]:
    per = r["seconds"] / max(1, r["chunks"])
    base = quiet_s.get(r["slots"])
    return [r["condition"], str(r["chunks"]), f"{r['seconds']:.0f}", f"{per:.1f}",
            f"{per / base:.2f}x" if base else "n/a", f"{r['output_tokens'] / max(r['seconds'], 1e-9):.1f}",
            str(r["calls"]), str(r["cut"]), str(r["resumed"]), str(r["pieces_thrown_away"]),
            f"{r['longest_gap_s']:.1f}", f"{r['longest_call_s']:.0f}", str(r["calls_over_limit"]), str(r["failed"]),
            f"{r['relation_f1']:.2f}", f"{r['relation_f1_tolerant']:.2f}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--limit", type=int, default=4, help="the first N paragraphs of the corpus")
    ap.add_argument("--conditions", default="quiet:4,busy:4,nice:4,busy:1")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--poll", type=int, default=50)
    ap.add_argument("--chunk-max-chars", type=int, default=1500)
    ap.add_argument("--whole-call-limit", type=float, default=600.0,
                    help="count the calls longer than this (the whole-call limit before calls streamed)")
    ap.add_argument("--window", type=float, default=0.0,
                    help="measure tokens a second over this many seconds once every slot writes (0: whole runs)")
    ap.add_argument("--max-wait", type=float, default=900.0, help="with --window: longest wait for every slot")
    ap.add_argument("--workdir")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    if llm_server.find_binary(Settings.load().llm) is None:
        print(f"error: {llm_server.missing_reason(Settings.load().llm)}", file=sys.stderr)
        return 1
    conditions = [Condition.parse(c, args.threads, args.poll) for c in args.conditions.split(",") if c.strip()]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="llm-server-contention-"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = _corpus(args.limit, workdir)
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    if args.limit:
        gold = _gold_for(gold, {c["id"] for c in gold.get("chunks", [])[:args.limit]})
    onto = Ontology.from_file(ONTOLOGY)
    stall = Settings.load().llm.stall_timeout_s
    if args.window:
        rows = [run_window(args, c, corpus, onto, workdir) for c in conditions]
        quiet = {}
        for r in rows:
            if r["kind"] == "quiet" and r["slots"] not in quiet:
                quiet[r["slots"]] = r["tokens_per_s"]
        text = (f"llama-server beside other work, rates over {args.window:g} s: model {args.model}, first "
                f"{args.limit} paragraph(s), {os.cpu_count()} cores\n\n"
                + markdown_table(WINDOW_HEADER, [window_cells(r, quiet) for r in rows]) + "\n")
        print(text)
        if args.out:
            Path(args.out).write_text(text, encoding="utf-8")
        return 0
    results = [run_condition(args, c, corpus, gold, onto, workdir) for c in conditions]
    quiet_s: dict[int, float] = {}
    for r in results:
        if r["kind"] == "quiet" and r["slots"] not in quiet_s:
            quiet_s[r["slots"]] = r["seconds"] / max(1, r["chunks"])
    lines = [f"llama-server beside other work: model {args.model}, first {args.limit} paragraph(s), "
             f"{os.cpu_count()} cores, stall limit {stall:g} s, whole-call limit compared {args.whole_call_limit:g} s",
             "", markdown_table(HEADER, [cells(r, quiet_s) for r in results]), ""]
    for r in results:
        lines.append(f"{r['condition']}: call seconds {r['call_seconds']}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
