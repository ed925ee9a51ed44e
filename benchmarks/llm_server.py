"""The embedded model through llama.cpp's llama-server with parallel slots, against the in-process path.

    python -m benchmarks.llm_server [--model qwen2.5-coder-1.5b] [--slots 1,2,4,8] [--threads 2]
                                    [--chunk-max-chars 300] [--servers 2] [--limit N] [--no-in-process]
                                    [--no-live-answer] [--out benchmarks/results/llm_server.txt]

Every configuration extracts the GoT corpus (``corpus/got.txt``, ontology ``ontology/got.json``) from an
empty cache (every call is real), one after another in this process, so their ratios are comparable:

- ``in-process``: llama-cpp-python in this process, one call at a time (``GRAPHRAG_LLAMACPP_BACKEND=in_process``);
- ``server xN``: our llama-server with N slots (``GRAPHRAG_LLAMACPP_BACKEND=server``, ``GRAPHRAG_LLAMA_SERVER_SLOTS=N``),
  as many calls in flight as slots, through the same path ``graphrag-got extract`` takes;
- with ``--servers 2``: every slot count again with two servers on loopback in the OpenAI-compatible pool
  (each N slots and threads / 2), what a user who adds servers gets.

Printed per configuration: chunks, wall seconds, seconds per chunk amortized, aggregate output tokens per
second, prompt and output tokens per chunk, the share of prompt tokens the server did not evaluate again
(its per-slot prompt cache, read from its log), peak memory (VmHWM: of the llama-server process; of this
process for ``in-process``, whose RSS before loading the model is printed too), failed chunks, entity and
relation F1 against the hand gold (``tests/data/got_extraction.json``, exact and alias-tolerant, the
scorer of the quality ladder) and the share of chunks whose answer is the same as in-process.

``--chunk-max-chars 300`` runs the short-passage setting (more, shorter calls); ``--limit N`` only the first N
paragraphs (the gold is cut to them). ``--live-answer`` (on by default) loads the in-process extraction
into the Neo4j at NEO4J_URI (the embedded one is started when none answers: use a scratch GRAPHRAG_HOME
and NEO4J_URI) and answers the corpus's local demo question through in-process and through the server.

llama.cpp slows several-fold when anything else uses the cores: run it on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.extract_speed import CORPUS, GOLD, ONTOLOGY, _corpus, _gold_for, _records  # noqa: E402
from benchmarks.quality.reading import read_extraction_file  # noqa: E402
from benchmarks.quality.score import score  # noqa: E402
from benchmarks.quality.tables import fmt_ratio, markdown_table  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.extract.run import run_extraction  # noqa: E402
from graphrag_got.llm import server as llm_server  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402

_PROMPT_EVAL = re.compile(r"prompt eval time =\s*[\d.]+ ms /\s*(\d+) tokens")


@dataclass
class Row:
    config: str
    chunks: int
    seconds: float
    prompt_tokens: int
    output_tokens: int
    evaluated_tokens: int | None  # prompt tokens the server evaluated (the rest came from its slot caches)
    peak_rss_mb: float | None
    failed: int
    entity_f1: float
    relation_p: float
    relation_r: float
    relation_f1: float
    relation_f1_tolerant: float
    same_as_in_process: float | None = None
    answers: dict[str, Any] | None = None  # chunk id -> parsed answer

    def cells(self) -> list[str]:
        n = max(1, self.chunks)
        reused = ("n/a" if self.evaluated_tokens is None
                  else fmt_ratio(1 - self.evaluated_tokens / max(1, self.prompt_tokens)))
        return [self.config, str(self.chunks), f"{self.seconds:.0f}", f"{self.seconds / n:.1f}",
                f"{self.output_tokens / max(self.seconds, 1e-9):.1f}", str(self.prompt_tokens // n),
                str(self.output_tokens // n), reused, "n/a" if self.peak_rss_mb is None else f"{self.peak_rss_mb:.0f}",
                str(self.failed), fmt_ratio(self.entity_f1), fmt_ratio(self.relation_p), fmt_ratio(self.relation_r),
                fmt_ratio(self.relation_f1), fmt_ratio(self.relation_f1_tolerant),
                "n/a" if self.same_as_in_process is None else fmt_ratio(self.same_as_in_process)]


HEADER = ["config", "chunks", "seconds", "s/chunk", "output tok/s", "prompt tok/chunk", "output tok/chunk",
          "prompt cached", "peak RSS MB", "failed", "entity F1", "relation P", "relation R", "relation F1",
          "relation F1 tolerant", "same as in-process"]


def _status_mb(pid: int | str, field: str) -> float | None:
    """VmHWM (peak) or VmRSS of a process, in MB, from /proc."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _evaluated_tokens(log: Path) -> int | None:
    try:
        found = [int(n) for n in _PROMPT_EVAL.findall(log.read_text(errors="replace"))]
    except OSError:
        return None
    return sum(found) if found else None


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _settings(args: argparse.Namespace, home: Path, **extra: Any) -> Settings:
    base = Settings.load()
    values = dict(home=home, out_dir=home / "out", models_path=base.models_dir.resolve(), llm_provider="llamacpp",
                  llamacpp_model=args.model, llamacpp_threads=args.threads, llamacpp_adaptive_threads=False,
                  chunk_max_chars=args.chunk_max_chars)
    return base.with_overrides(**{**values, **extra})


def _row(config: str, settings: Settings, summary: Any, seconds: float, gold: dict[str, Any], onto: Ontology,
         *, evaluated: int | None, peak: float | None, reference: Row | None) -> Row:
    records = _records(settings)
    q = score(read_extraction_file(summary.out_path), gold, onto, pred_source=f"{config} extraction")
    answers = {r["chunk_id"]: r.get("parsed") for r in records}
    same = None
    if reference is not None and reference.answers:
        shared = [cid for cid in reference.answers if cid in answers]
        same = sum(answers[c] == reference.answers[c] for c in shared) / max(1, len(shared))
    return Row(config=config, chunks=summary.chunks, seconds=seconds,
               prompt_tokens=sum(int(r.get("input_tokens") or 0) for r in records),
               output_tokens=sum(int(r.get("output_tokens") or 0) for r in records), evaluated_tokens=evaluated,
               peak_rss_mb=peak, failed=summary.failed_chunks, entity_f1=q.exact.entities.f1,
               relation_p=q.exact.relations.precision, relation_r=q.exact.relations.recall,
               relation_f1=q.exact.relations.f1, relation_f1_tolerant=q.tolerant.relations.f1,
               same_as_in_process=same, answers=answers)


def run_in_process(args: argparse.Namespace, corpus: Path, gold: dict[str, Any], onto: Ontology,
                   workdir: Path) -> tuple[Row, float | None]:
    settings = _settings(args, workdir / "in-process", llamacpp_backend="in_process")
    before = _status_mb("self", "VmRSS")
    t0 = time.monotonic()
    summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    seconds = time.monotonic() - t0
    return _row("in-process", settings, summary, seconds, gold, onto, evaluated=None,
                peak=_status_mb("self", "VmHWM"), reference=None), before


def run_served(args: argparse.Namespace, slots: int, servers: int, corpus: Path, gold: dict[str, Any],
               onto: Ontology, workdir: Path, reference: Row | None) -> Row:
    name = f"server x{slots}" + (f", {servers} servers" if servers > 1 else "")
    threads = max(1, args.threads // servers)
    run = len(list(workdir.glob(f"server-{slots}-{servers}-0*")))  # a slot count given twice runs twice
    homes = [workdir / (f"server-{slots}-{servers}-{i}" + (f"-{run}" if run else "")) for i in range(servers)]
    each = [_settings(args, home, llamacpp_backend="server", llama_server_slots=slots, llama_server_port=_free_port(),
                      llamacpp_threads=threads) for home in homes]
    # started before the run: the run leaves them running
    started = [llm_server.start(s.llm, files=s.files) for s in each]
    try:
        chat = None
        settings = each[0]
        if servers > 1:  # the OpenAI-compatible pool over both (what a user who adds servers configures)
            from graphrag_got.llm.providers.openai_pool import OpenAIPoolChatModel

            chat = OpenAIPoolChatModel(model_name=started[0].plan.alias, base_urls=[i.url for i in started],
                                       timeout_s=settings.llm.timeout_s, max_tokens=settings.llm.max_tokens,
                                       response_format="json_schema", extra_body={"cache_prompt": True}, embedded=True,
                                       context_window=settings.llm.llamacpp_n_ctx)
        t0 = time.monotonic()
        summary = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
        seconds = time.monotonic() - t0
        peaks = [_status_mb(i.pid, "VmHWM") for i in started]
        evaluated = [_evaluated_tokens(i.log) for i in started]
    finally:
        for s in each:
            llm_server.stop(s.files)
    return _row(name, settings, summary, seconds, gold, onto,
                evaluated=None if None in evaluated else sum(e or 0 for e in evaluated),
                peak=None if None in peaks else sum(p or 0 for p in peaks), reference=reference)


def live_answer(args: argparse.Namespace, extraction: Path, workdir: Path, slots: int) -> list[str]:
    """The corpus's local demo question answered through in-process and through the server (slots given)."""
    from graphrag_got.graph.db import connect
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.graph.server import ensure_running, stop
    from graphrag_got.llm.factory import get_chat_model
    from graphrag_got.search.local import local_search

    question = json.loads((CORPUS.parent / "demo_questions.json").read_text(encoding="utf-8"))["local"]
    base = _settings(args, workdir / "live")
    neo4j = ensure_running(base.neo4j, files=base.files)  # started here: stopped at the end
    driver = connect(base.neo4j)
    lines = [f"Live local answer: {question!r} over the in-process extraction, loaded into {base.neo4j.uri}", ""]
    try:
        load_extraction(driver, base.neo4j, extraction, ONTOLOGY, graph=base.graph, extract=base.extract, embedding=base.embedding, code=base.code, llm=base.llm, files=base.files)
        for name, settings in (("in-process", base.with_overrides(llamacpp_backend="in_process")),
                               (f"server x{slots}", base.with_overrides(llamacpp_backend="server",
                                                                        llama_server_slots=slots,
                                                                        llama_server_port=_free_port()))):
            with llm_server.scope():  # the server started for the answer stops after it
                chat = get_chat_model(settings.llm, files=settings.files)
                t0 = time.monotonic()
                res = local_search(driver, settings.neo4j, question, chat=chat, ontology=ONTOLOGY,
                                   search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
                seconds = time.monotonic() - t0
            lines.append(f"- {name}: {seconds:.1f} s, {res.llm_calls} LLM call(s), {res.input_tokens} tokens in, "
                         f"{res.output_tokens} out; answer {len(res.answer or '')} characters: "
                         f"{(res.answer or '')[:160]!r}")
    finally:
        driver.close()
        if neo4j.started:
            stop(base.files)
    return lines


def report(args: argparse.Namespace, rows: list[Row], rss_before: float | None, load: float) -> str:
    setting = f", chunks of at most {args.chunk_max_chars} characters" if args.chunk_max_chars != 1500 else ""
    lines = [f"llama-server vs in-process, model {args.model}, {args.threads} thread(s), {os.cpu_count()} cores, "
             f"load average at start {load:.2f}{setting}", "",
             markdown_table(HEADER, [r.cells() for r in rows]), ""]
    if rss_before is not None:
        lines.append(f"in-process peak RSS is this Python process's; it held {rss_before:.0f} MB before the model "
                     "was loaded.")
    lines.append("prompt cached: prompt tokens the server did not evaluate again (its slot caches), from its log. "
                 "same as in-process: chunks whose parsed answer equals the in-process one exactly; at temperature 0 "
                 "the two paths agree token by token until a near tie, where their arithmetic (batch sizes, kernels) "
                 "differs, so judge quality by the F1 columns.")
    ref = next((r for r in rows if r.config == "in-process"), None)
    if ref is not None:
        for r in rows:
            if r is not ref and r.seconds:
                lines.append(f"{r.config}: {ref.seconds / r.seconds:.2f}x the corpus throughput of in-process "
                             f"(output tokens/s {r.output_tokens / r.seconds / max(1e-9, ref.output_tokens / ref.seconds):.2f}x)")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--slots", default="1,2,4,8", help="comma-separated slot counts")
    ap.add_argument("--threads", type=int, default=2, help="threads of every configuration (cores used)")
    ap.add_argument("--servers", type=int, default=1, help="also run every slot count with this many servers")
    ap.add_argument("--chunk-max-chars", type=int, default=1500, help="GRAPHRAG_CHUNK_MAX_CHARS (300: short passages)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N paragraphs of the corpus")
    ap.add_argument("--no-in-process", action="store_true", help="skip the in-process baseline")
    ap.add_argument("--no-live-answer", action="store_true", help="skip the live local answer (needs Neo4j)")
    ap.add_argument("--workdir", help="keep homes, caches and server logs here (default: a temporary folder)")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args(argv)
    if llm_server.find_binary(Settings.load().llm) is None:
        print(f"error: {llm_server.missing_reason(Settings.load().llm)}", file=sys.stderr)
        return 1
    load = os.getloadavg()[0]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="llm-server-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = _corpus(args.limit, workdir)
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    if args.limit:
        gold = _gold_for(gold, {c["id"] for c in gold.get("chunks", [])[:args.limit]})
    onto = Ontology.from_file(ONTOLOGY)
    rows: list[Row] = []
    reference, rss_before = None, None
    if not args.no_in_process:
        reference, rss_before = run_in_process(args, corpus, gold, onto, workdir)
        rows.append(reference)
        print(markdown_table(HEADER, [reference.cells()]), flush=True)
    slot_counts = [int(n) for n in args.slots.split(",") if n.strip()]
    for servers in sorted({1, args.servers}):
        for slots in slot_counts:
            rows.append(run_served(args, slots, servers, corpus, gold, onto, workdir, reference))
            print(markdown_table(HEADER, [rows[-1].cells()]), flush=True)
    text = report(args, rows, rss_before, load)
    if not args.no_live_answer and reference is not None:
        best = max((r for r in rows if r.config.startswith("server x") and "servers" not in r.config),
                   key=lambda r: r.chunks / max(r.seconds, 1e-9), default=None)
        slots = int(best.config.split("x")[1]) if best else 4
        text += "\n" + "\n".join(live_answer(args, workdir / "in-process" / "out" / "extraction.json", workdir, slots))
        text += "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
