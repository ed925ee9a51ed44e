"""The notes vault: retrieval recall@k per mode and question class, and the cost of a second build.

    NEO4J_URI=bolt://127.0.0.1:7688 GRAPHRAG_HOME=/tmp/graphrag-bench .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python -m benchmarks.notes_vault [--k 5,10] [--out FILE]

1. **build**: ``graphrag_got.pipeline.build.run_build`` on ``corpus/notes`` with ``ontology/notes.json`` and
   the embedded embedder, twice; the second build must make zero LLM and zero embedding calls. The
   extraction answers are replayed from ``benchmarks/notes_retrieval/answers.json`` (hand-curated
   entities and relations per chunk, see ``make_answers.py``): this benchmark measures retrieval and
   the build's incrementality, not the extraction model. Community reports are answered by a fixed
   stand-in report (counted as LLM calls; the reports' text is not measured here).
2. **recall@k**: every question of ``benchmarks/notes_retrieval/questions.json`` through
   ``local_search(answer=False)`` in graph, vector and hybrid retrieval. A question's recall@k is the
   share of the notes it needs that own one of the first k retrieved chunks. Printed per question
   class and mode, with whether hybrid is at least the best of the other two in every class.

The database is emptied first: point NEO4J_URI at a scratch server, not at a graph you keep.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.quality.tables import markdown_table  # noqa: E402
from graphrag_got.graph import load_cypher  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.graph.db import connect  # noqa: E402

VAULT = ROOT / "corpus" / "notes"
ONTOLOGY = ROOT / "ontology" / "notes.json"
REPLAY = ROOT / "benchmarks" / "notes_retrieval" / "answers.json"
QUESTIONS = ROOT / "benchmarks" / "notes_retrieval" / "questions.json"
MODES = ("graph", "vector", "hybrid")


def vault_settings(workdir: Path, replay: Path = REPLAY) -> Settings:
    return Settings.load().with_overrides(home=workdir / "home", out_dir=workdir / "out", ontology_path=ONTOLOGY,
                                          corpus_path=VAULT, llm_provider="replay", replay_file=replay)


def stand_in_chat(replay: Path) -> Any:
    """The replayed extraction answers, and one fixed report for every community-report call."""
    from langchain_core.messages import AIMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    from graphrag_got.llm.replay import ReplayChatModel

    report = json.dumps({"title": "Notes", "summary": "A group of related tools and concepts of the notes.",
                         "findings": [], "rating": 5, "rating_explanation": "stand-in report"})

    class Chat(ReplayChatModel):
        def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
            if kwargs.get("replay_key"):
                return super()._generate(messages, stop, run_manager, **kwargs)
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=report))])

    base = ReplayChatModel.from_file(replay)
    return Chat(responses=base.responses, source=base.source)


def document_of(chunk_id: str) -> str:
    """Chunk ids are ``<document id>:<hash prefix>``."""
    return chunk_id.rsplit(":", 1)[0]


def recall_at(chunk_ids: list[str], needs: list[str], k: int) -> float:
    found = {document_of(c) for c in chunk_ids[:k]}
    return sum(1 for n in needs if n in found) / len(needs) if needs else 1.0


def run_questions(driver: Any, settings: Settings, questions: list[dict[str, Any]], ks: list[int]
                  ) -> tuple[dict[tuple[str, str, int], list[float]], list[dict[str, Any]]]:
    from graphrag_got.search.local import local_search

    scores: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    rows: list[dict[str, Any]] = []
    for q in questions:
        row: dict[str, Any] = {"id": q["id"], "class": q["class"]}
        for mode in MODES:
            res = local_search(driver, settings.neo4j, q["question"], answer=False, llm_anchors=False, retrieval=mode,
                               search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
            for k in ks:
                r = recall_at(res.chunk_ids, q["needs"], k)
                scores[(q["class"], mode, k)].append(r)
                scores[("all", mode, k)].append(r)
                row[f"{mode}@{k}"] = r
        rows.append(row)
    return scores, rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default="5,10", help="cut-offs, comma separated (default 5,10)")
    ap.add_argument("--replay", type=Path, default=REPLAY)
    ap.add_argument("--out", type=Path, help="also write the tables to this file")
    args = ap.parse_args(argv)
    ks = [int(k) for k in args.k.split(",") if k.strip()]
    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"]
    from graphrag_got.pipeline.build import run_build

    lines: list[str] = []
    with tempfile.TemporaryDirectory(prefix="notes-vault-") as tmp:
        settings = vault_settings(Path(tmp), args.replay)
        driver = connect(settings.neo4j)
        with driver.session(database=settings.neo4j.database) as s:
            s.run(load_cypher.delete_all_in_batches(5000)).consume()
        chat = stand_in_chat(args.replay)
        builds = []
        for attempt in (1, 2):
            t0 = time.monotonic()
            res = run_build(settings, VAULT, chat=chat, say=lambda line: None)
            builds.append((attempt, time.monotonic() - t0, res))
        lines.append("## Builds of corpus/notes (answers replayed, embedded embedder)\n")
        lines.append(markdown_table(["build", "wall s", "LLM calls", "embedding calls", "per step s"],
                                    [[str(a), f"{sec:.1f}", str(r.total_llm_calls), str(r.total_embedding_calls),
                                      ", ".join(f"{k} {v:.1f}" for k, v in r.timings.items())]
                                     for a, sec, r in builds]))
        second = builds[1][2]
        lines.append(f"\nsecond build: {second.total_llm_calls} LLM calls, {second.total_embedding_calls} embedding "
                     f"calls, {builds[1][1]:.1f}s wall"
                     + (" (nothing re-done)" if second.total_llm_calls == second.total_embedding_calls == 0
                        else " (EXPECTED ZERO CALLS)"))
        scores, rows = run_questions(driver, settings, questions, ks)
        driver.close()
    classes = sorted({q["class"] for q in questions}) + ["all"]
    header = ["class", "questions"] + [f"{m} @{k}" for k in ks for m in MODES] + ["hybrid >= best"]
    table = []
    verdict_ok = True
    for c in classes:
        n = len(scores[(c, MODES[0], ks[0])])
        cells = [c, str(n)]
        ok = True
        for k in ks:
            means = {m: sum(scores[(c, m, k)]) / n for m in MODES}
            cells += [f"{means[m]:.2f}" for m in MODES]
            ok = ok and means["hybrid"] + 1e-9 >= max(means["graph"], means["vector"])
        cells.append("yes" if ok else "NO")
        verdict_ok = verdict_ok and ok
        table.append(cells)
    lines.append(f"\n## Recall@k on {len(questions)} questions (share of needed notes among the top-k chunks)\n")
    lines.append(markdown_table(header, table))
    misses = [r for r in rows if r[f"hybrid@{ks[-1]}"] < 1.0]
    if misses:
        lines.append(f"\nquestions hybrid does not fully recall at {ks[-1]}: "
                     + ", ".join(f"{r['id']} ({r[f'hybrid@{ks[-1]}']:.2f})" for r in misses))
    lines.append(f"\nhybrid >= the best of graph and vector in every class: {'yes' if verdict_ok else 'NO'}")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
