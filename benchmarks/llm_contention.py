"""The embedded model with and without a second CPU-bound process: fixed threads against threads
chosen from the cores free at each call (issue 26, item 5).

    .venv/bin/python -m benchmarks.llm_contention                                  # the default 1.5B model
    .venv/bin/python -m benchmarks.llm_contention --model qwen2.5-coder-0.5b --calls 3 --max-tokens 256

One workload: the extraction call of the first chunk of ``corpus/got.txt`` (the GoT ontology's
system prompt with its examples, the chunk, the JSON schema constraint), answered ``--calls`` times
per condition with the KV cache emptied before each call so that the whole prompt is evaluated every
time. Four conditions, each on the same loaded model:

* ``quiet, fixed``: nothing else started by the benchmark; every core (the behaviour before);
* ``quiet, adaptive``: the same with threads from the free cores (the default now);
* ``busy, fixed``: one ``while True: pass`` process running, every core anyway;
* ``busy, adaptive``: the same process running, threads from the free cores.

The table shows the median seconds per call, output tokens, tokens per second, the threads the
calls used and the ratio to ``quiet, fixed``. The target of the issue is ``busy, adaptive`` no worse
than 2.2x the quiet time on 2 cores. The CPU-bound process is this benchmark's child: it is killed
when a condition ends (also on an error or Ctrl-C), and it stops by itself when its parent is gone.
The machine must otherwise be quiet for the ratios to mean anything: the load average and a CPU
sample are printed before the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "corpus" / "got.txt"
ONTOLOGY = ROOT / "ontology" / "got.json"

#: The second process: spins, and checks every few million steps whether its parent still exists.
BURNER = """
import os
parent = os.getppid()
while os.getppid() == parent:
    for _ in range(2_000_000):
        pass
"""


@contextmanager
def cpu_bound_process(on: bool, niceness: int = 0) -> Iterator[None]:
    """One CPU-bound child process while the block runs (nothing when ``on`` is false), at ``niceness``
    (19: the lowest priority, like a background job)."""
    if not on:
        yield
        return
    proc = subprocess.Popen([sys.executable, "-c", BURNER],
                            preexec_fn=(lambda: os.nice(niceness)) if niceness else None)
    try:
        time.sleep(0.5)  # let the scheduler see it before the first call samples the cores
        yield
    finally:
        proc.kill()
        proc.wait()


@dataclass
class Condition:
    name: str
    busy: bool
    adaptive: bool
    seconds: list[float]
    output_tokens: list[int]
    threads: list[int]

    def cells(self, quiet_s: float) -> list[str]:
        s = statistics.median(self.seconds)
        tokens = statistics.median(self.output_tokens)
        return [self.name, f"{s:.1f}", f"{tokens:.0f}", f"{tokens / s:.1f}",
                ",".join(str(t) for t in self.threads), f"{s / quiet_s:.2f}x"]


def workload(settings: Any) -> tuple[str, str, dict[str, Any]]:
    """(system prompt, user prompt, JSON schema) of the first chunk's extraction call."""
    from graphrag_got.ingest.chunking import chunk_text
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.extract.forms import answer_form
    from graphrag_got.prompts import extraction_system_prompt, extraction_user_prompt

    onto = Ontology.from_file(ONTOLOGY)
    chunk = chunk_text("got.txt", CORPUS.read_text(encoding="utf-8"), min_chars=settings.chunking.min_chars,
                       max_chars=settings.chunking.max_chars).chunks[0]
    form = settings.extract.answer_form
    schema = answer_form(form).constraint(onto, settings.extract.max_entities, settings.extract.max_relations).schema
    return extraction_system_prompt(onto, form), extraction_user_prompt(chunk.text, form=form), schema


def run_condition(chat: Any, cond: Condition, prompts: tuple[str, str, dict[str, Any]], calls: int,
                  max_tokens: int) -> None:
    from langchain_core.messages import HumanMessage, SystemMessage

    system, user, schema = prompts
    chat.adaptive_threads = cond.adaptive
    with cpu_bound_process(cond.busy):
        for _ in range(calls):
            chat._llama.reset()  # empty the KV cache: the whole prompt is evaluated again
            t0 = time.perf_counter()
            out = chat.invoke([SystemMessage(content=system), HumanMessage(content=user)], max_tokens=max_tokens,
                              response_format={"type": "json_object", "schema": schema})
            cond.seconds.append(time.perf_counter() - t0)
            cond.output_tokens.append(int(out.usage_metadata["output_tokens"]))
            cond.threads.append(int(out.response_metadata["threads"]))
            print(f"  {cond.name}: {cond.seconds[-1]:.1f} s, {cond.output_tokens[-1]} tokens, "
                  f"{cond.threads[-1]} thread(s)", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=None, help="embedded model name or .gguf (default: GRAPHRAG_LLAMACPP_MODEL)")
    ap.add_argument("--calls", type=int, default=2, help="calls per condition (default 2)")
    ap.add_argument("--max-tokens", type=int, default=None,
                    help="most output tokens per call (default: GRAPHRAG_LLM_MAX_TOKENS)")
    ap.add_argument("--conditions", default="quiet-fixed,quiet-adaptive,busy-fixed,busy-adaptive",
                    help="which conditions, in this order (default: all four); the first is the reference")
    args = ap.parse_args(argv)
    known = {"quiet-fixed": ("quiet, fixed", False, False), "quiet-adaptive": ("quiet, adaptive", False, True),
             "busy-fixed": ("busy, fixed", True, False), "busy-adaptive": ("busy, adaptive", True, True)}
    wanted = [c.strip() for c in args.conditions.split(",") if c.strip()]
    if not wanted or any(c not in known for c in wanted):
        ap.error(f"--conditions: choose among {', '.join(known)}")

    import os

    from graphrag_got.config import Settings
    from graphrag_got.llm.cpu_threads import sample_cpu
    from graphrag_got.llm.factory import llamacpp_thread_limit
    from graphrag_got.llm.model_store import resolve_model_path
    from graphrag_got.llm.providers.llamacpp_chat import LlamaCppChatModel

    settings = Settings.load()
    if args.model:
        settings = settings.with_overrides(llamacpp_model=args.model)
    max_tokens = args.max_tokens or settings.llm.max_tokens
    path = resolve_model_path(settings.llm, files=settings.files)
    before = sample_cpu(1.0)
    load = os.getloadavg()[0]
    chat = LlamaCppChatModel(model_path=str(path), n_ctx=settings.llm.llamacpp_n_ctx, n_batch=512,
                             n_threads=llamacpp_thread_limit(settings.llm), max_tokens=max_tokens, seed=0)
    prompts = workload(settings)
    conditions = [Condition(*known[c], [], [], []) for c in wanted]
    try:
        for cond in conditions:
            run_condition(chat, cond, prompts, args.calls, max_tokens)
    finally:
        chat.close()

    print(f"Embedded model under contention: {path.name}, {chat.n_threads} threads at most, {os.cpu_count()} cores; "
          f"median of {args.calls} call(s) per condition, max {max_tokens} output tokens, KV cache emptied per call")
    print(f"before the run: load average {load:.2f}; "
          f"{before.describe() if before else 'cores not measured'} (1 s sample)")
    print()
    head = ["condition", "s/call", "output tokens", "tokens/s", "threads per call", f"vs {conditions[0].name}"]
    first = statistics.median(conditions[0].seconds)
    rows = [head] + [c.cells(first) for c in conditions]
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    rows.insert(1, ["-" * w for w in widths])
    for r in rows:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |")
    by_name = {c.name: statistics.median(c.seconds) for c in conditions}
    quiet = by_name.get("quiet, fixed", by_name.get("quiet, adaptive"))
    if quiet and "busy, adaptive" in by_name:
        print()
        print(f"busy, adaptive: {by_name['busy, adaptive'] / quiet:.2f}x the quiet time (target <= 2.2x)"
              + (f"; {by_name['busy, fixed'] / by_name['busy, adaptive']:.2f}x faster than busy, fixed"
                 if "busy, fixed" in by_name else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
