"""DRIFT vs local vs global on the GoT questions, side by side: facts recalled, LLM calls, tokens.

For every question of ``questions.json`` (local ones list the facts a correct answer needs) the
three modes run through the one entry point, :func:`graphrag_got.search.answer.ask`, on the same
graph (the gold extraction by default, loaded with the safety rules of ``benchmarks.qa.run``:
the database is emptied first). Per question and mode:

* **context recall**: needed facts found among the sources the answer was given (fact citations
  ``[F..]``; global's sources are community extracts, so it recalls facts only through its answer);
* **answer recall**: needed facts whose two end names both appear in the answer text (normalized),
  a cheap proxy of "the answer states it" - not a judgement of correctness;
* **cited**: how many citations the answer kept, and how many invented ones were removed;
* LLM calls, tokens in/out (``tokens_estimated`` when the provider gives no counts), seconds.

It needs a loaded graph with community reports **and a chat model**: communities are detected and
summarized with the same model first (cached per community). Any provider works
(``--provider ollama|openai|langchain|llamacpp``); ``--provider replay --replay-file FILE`` replays
recorded answers when you have a recording of this benchmark's calls (none ships: a recording is
tied to the model and the prompt versions). On 2 CPU cores with the embedded 1.5B model expect
~10 minutes per question (global maps every community), so start with ``--limit 3``.

    NEO4J_URI=bolt://127.0.0.1:7695 GRAPHRAG_HOME=/tmp/graphrag-qa .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7695 .venv/bin/python -m benchmarks.qa.modes --provider ollama --limit 5
    # -> benchmarks/qa/results/modes.md and modes.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology

from .run import DEFAULT_EXTRACTION, HERE, ROOT, load_fixed, load_questions, prepare_database

MODES = ("local", "global", "drift")
RESULTS_MD = HERE / "results" / "modes.md"
RESULTS_JSON = HERE / "results" / "modes.json"


@dataclass
class ModeRow:
    question_id: str
    mode: str
    needed: int
    in_context: int = 0
    in_answer: int = 0
    cited: int = 0
    invented: int = 0
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    seconds: float = 0.0
    error: str | None = None
    answer: str | None = None
    missing: list[str] = field(default_factory=list)


def _in_line(fact: dict[str, str], line: str, symmetric: bool) -> bool:
    text = normalize_name(line)
    s, r, o = normalize_name(fact["subject"]), normalize_name(fact["relation"]), normalize_name(fact["object"])
    return f"{s} {r} {o}" in text or (symmetric and f"{o} {r} {s}" in text)


def score(question: dict[str, Any], result: Any, onto: Ontology) -> tuple[int, int, list[str]]:
    """(needed facts in the context, needed facts stated in the answer, the facts missing from both)."""
    facts = question.get("facts") or []
    lines = [c.text for c in result.sources if c.kind == "fact"]
    answer = normalize_name(result.answer or "")
    in_ctx = in_ans = 0
    missing = []
    for f in facts:
        rel = onto.relation(f["relation"])
        sym = bool(rel is not None and rel.symmetric)
        c = any(_in_line(f, line, sym) for line in lines)
        a = normalize_name(f["subject"]) in answer and normalize_name(f["object"]) in answer
        in_ctx += c
        in_ans += a
        if not (c or a):
            missing.append(f"{f['subject']} {f['relation']} {f['object']}")
    return in_ctx, in_ans, missing


def run(driver: Any, settings: Settings, questions: list[dict[str, Any]], onto: Ontology, chat: Any,
        modes: tuple[str, ...] = MODES) -> list[ModeRow]:  # fmt: skip
    from graphrag_got.search.answer import ask

    rows = []
    for q in questions:
        for mode in modes:
            row = ModeRow(q["id"], mode, len(q.get("facts") or []))
            t = time.perf_counter()
            try:
                res = ask(driver, settings, q["question"], mode, chat=chat, ontology=onto)  # type: ignore[arg-type]
            except GraphragGotError as exc:
                row.error = str(exc)
            else:
                row.in_context, row.in_answer, row.missing = score(q, res, onto)
                row.cited, row.invented = len(res.citations), res.invented_citations
                row.llm_calls, row.input_tokens, row.output_tokens = res.llm_calls, res.input_tokens, res.output_tokens
                row.tokens_estimated, row.answer = res.tokens_estimated, res.answer
            row.seconds = round(time.perf_counter() - t, 2)
            rows.append(row)
    return rows


def totals(rows: list[ModeRow]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        mine = [r for r in rows if r.mode == mode]
        if not mine:
            continue
        needed = sum(r.needed for r in mine) or 1
        out[mode] = {
            "questions": len(mine), "errors": sum(r.error is not None for r in mine),
            "context_recall": round(sum(r.in_context for r in mine) / needed, 3),
            "answer_recall": round(sum(r.in_answer for r in mine) / needed, 3),
            "llm_calls": sum(r.llm_calls for r in mine), "input_tokens": sum(r.input_tokens for r in mine),
            "output_tokens": sum(r.output_tokens for r in mine), "seconds": round(sum(r.seconds for r in mine), 1),
            "invented_citations": sum(r.invented for r in mine),
        }  # fmt: skip
    return out


def markdown(rows: list[ModeRow], tot: dict[str, dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = ["# DRIFT vs local vs global (benchmarks/qa/modes.py)", "",
             f"Model: `{meta['model']}`; extraction `{meta['extraction']}`; {meta['questions']} questions.", "",
             "| mode | context recall | answer recall | LLM calls | tokens in | tokens out | seconds | invented citations | errors |",
             "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for mode, t in tot.items():
        lines.append(f"| {mode} | {t['context_recall']:.0%} | {t['answer_recall']:.0%} | {t['llm_calls']} | "
                     f"{t['input_tokens']} | {t['output_tokens']} | {t['seconds']} | {t['invented_citations']} | "
                     f"{t['errors']} |")  # fmt: skip
    lines += ["", "| question | mode | needed | in context | in answer | cited | calls | tokens in/out | error |",
              "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        lines.append(f"| {r.question_id} | {r.mode} | {r.needed} | {r.in_context} | {r.in_answer} | {r.cited} | "
                     f"{r.llm_calls} | {r.input_tokens}/{r.output_tokens} | {(r.error or '').replace('|', '/')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None, chat: Any = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.qa.modes", description=__doc__.split("\n")[0])
    ap.add_argument("--extraction", type=Path, default=DEFAULT_EXTRACTION)
    ap.add_argument("--provider", default=None, help="LLM provider (default: GRAPHRAG_LLM_PROVIDER)")
    ap.add_argument("--replay-file", type=Path, default=None, help="recorded answers for --provider replay")
    ap.add_argument("--limit", type=int, default=None, help="only the first N local questions")
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated subset of local,global,drift")
    ap.add_argument("--force", action="store_true", help="wipe a database this benchmark did not load")
    ap.add_argument("--out", type=Path, default=RESULTS_MD, help="Markdown report (the JSON goes beside it)")
    args = ap.parse_args(argv)
    from graphrag_got.graph.db import connect
    from graphrag_got.llm.factory import get_chat_model

    try:
        settings = Settings.load(llm_provider=args.provider, replay_file=args.replay_file)
        modes = tuple(m for m in args.modes.split(",") if m)
        if not set(modes) <= set(MODES):
            raise GraphragGotError(f"--modes takes {', '.join(MODES)}, got {args.modes!r}")
        onto = Ontology.from_file(ROOT / "ontology" / "got.json")
        questions = [q for q in load_questions() if q["type"] == "local"][: args.limit]
        chat = chat or get_chat_model(settings)
        with connect(settings) as driver:
            prepare_database(driver, settings, force=args.force)
            load_fixed(driver, settings, args.extraction, onto)
            comms = detect_communities(read_entity_graph(driver, settings, onto),
                                          settings.communities.resolution, settings.communities.seed)  # fmt: skip
            write_communities(driver, settings, comms)
            summarize_communities(driver, settings, chat, ontology=onto, export=False)
            rows = run(driver, settings, questions, onto, chat, modes)
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    tot = totals(rows)
    meta = {"model": getattr(chat, "model", None) or type(chat).__name__, "extraction": str(args.extraction),
            "questions": len(questions)}  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(markdown(rows, tot, meta), encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps({"meta": meta, "totals": tot, "rows": [asdict(r) for r in rows]},
                                                        ensure_ascii=False, indent=2) + "\n", encoding="utf-8")  # fmt: skip
    for mode, t in tot.items():
        print(f"{mode:<6} context recall {t['context_recall']:.0%}  answer recall {t['answer_recall']:.0%}  "
              f"calls {t['llm_calls']}  tokens {t['input_tokens']}/{t['output_tokens']}  {t['seconds']} s")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
