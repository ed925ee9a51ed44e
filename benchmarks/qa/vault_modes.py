"""Live answers over the notes vault: the needed notes cited, citation precision, language, cost.

The companion of ``modes.py`` for the example vault (``corpus/notes``, ``ontology/notes.json``). The
graph is built with the replayed, hand-curated extraction answers of
``benchmarks/notes_retrieval/answers.json`` (what ``benchmarks/notes_vault.py`` measures retrieval on)
and the embedded embedder, without communities: only the answers are written by the live model.
Every question runs in **local** mode (hybrid retrieval, the default): the first ``--limit`` questions
of ``benchmarks/notes_retrieval/questions.json`` and, with ``--held-out``, the notes questions of the
routing benchmark marked ``held_out`` (local forced: without community reports global and DRIFT have
nothing to read here). Per question:

* **context**: needed notes that own one of the sources the answer was given;
* **cited**: needed notes that own one of the sources the answer cites;
* citation precision (and the strict one), claims kept / left out, language (and retries), narration,
  calls, tokens and time as in ``modes.py``.

The database is emptied first: point NEO4J_URI at a scratch server.

    NEO4J_URI=bolt://127.0.0.1:7712 .venv/bin/python -m benchmarks.qa.vault_modes --provider llamacpp --limit 6
    # -> benchmarks/qa/results/vault-modes.md and .json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError

from .modes import ROUTING_QUESTIONS, ModeRow, _pct, _print_row, _score_form, totals, write_report
from .run import HERE, ROOT

QUESTIONS = ROOT / "benchmarks" / "notes_retrieval" / "questions.json"
RESULTS_MD = HERE / "results" / "vault-modes.md"


def _documents(sources: list[Any]) -> set[str]:
    return {s.document_id for s in sources if getattr(s, "document_id", None)}


def run(driver: Any, settings: Settings, questions: list[dict[str, Any]], chat: Any, onto: Any) -> list[ModeRow]:
    from graphrag_got.search.anchors import entity_catalog
    from graphrag_got.search.answer import ask

    index = entity_catalog(driver, settings.neo4j, search=settings.search)[1]
    rows = []
    for q in questions:
        needs = list(q.get("needs") or [])
        row = ModeRow(q["id"], "local", len(needs), kind=q.get("kind", "notes"))
        t = time.perf_counter()
        try:
            res = ask(driver, settings.neo4j, q["question"], "local", chat=chat, ontology=onto,
                      search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
        except GraphragGotError as exc:
            row.error = str(exc)
        else:
            given, cited = _documents(res.sources), _documents(res.citations)
            row.in_context = sum(n in given for n in needs)
            row.in_answer = sum(n in cited for n in needs)
            row.missing = [n for n in needs if n not in cited]
            _score_form(row, q["question"], res, index)
        row.seconds = round(time.perf_counter() - t, 2)
        rows.append(row)
        _print_row(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.qa.vault_modes", description=__doc__.split("\n")[0])
    ap.add_argument("--provider", default=None, help="LLM provider of the answers (default: GRAPHRAG_LLM_PROVIDER)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N vault questions")
    ap.add_argument("--held-out", action="store_true", help="also the notes held-out questions of the routing benchmark")
    ap.add_argument("--machine", default="", help="a note on the machine for the report")
    ap.add_argument("--out", type=Path, default=RESULTS_MD)
    args = ap.parse_args(argv)
    from benchmarks.notes_vault import ONTOLOGY, REPLAY, VAULT, stand_in_chat, vault_settings
    from graphrag_got.graph import load_cypher
    from graphrag_got.graph.db import connect
    from graphrag_got.llm.factory import get_chat_model
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.pipeline.build import run_build

    questions = json.loads(QUESTIONS.read_text(encoding="utf-8"))["questions"][: args.limit]
    if args.held_out:
        routing = json.loads(ROUTING_QUESTIONS.read_text(encoding="utf-8"))["questions"]
        questions += [{**q, "kind": "held-out", "needs": []} for q in routing
                      if q.get("held_out") and q.get("corpus") == "notes"]  # fmt: skip
    try:
        chosen = Settings.load(llm_provider=args.provider)
        chat = get_chat_model(chosen.llm, files=chosen.files)
        with tempfile.TemporaryDirectory(prefix="vault-modes-") as tmp:
            settings = vault_settings(Path(tmp))
            with connect(settings.neo4j) as driver:
                with driver.session(database=settings.neo4j.database) as s:
                    s.run(load_cypher.delete_all_in_batches(5000)).consume()
                run_build(settings, VAULT, chat=stand_in_chat(REPLAY), communities=False, say=lambda line: None)
                rows = run(driver, settings, questions, chat, Ontology.from_file(ONTOLOGY))
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    tot = totals(rows)
    model = getattr(chat, "model", None) or getattr(chat, "model_name", None)
    if model is None and Path(getattr(chat, "model_path", "") or "").name:
        model = f"llamacpp:{Path(chat.model_path).stem}"
    model = model or type(chat).__name__
    meta = {"model": model, "extraction": "benchmarks/notes_retrieval/answers.json (hand-curated, replayed)",
            "questions": len(questions), "machine": args.machine}  # fmt: skip
    meta["preface"] = ("Vault questions: context recall = needed notes among the sources given, answer recall = "
                       "needed notes among the sources cited.")  # fmt: skip
    write_report(args.out, rows, tot, meta)
    for group, t in tot.items():
        print(f"{group:<16} notes in context {_pct(t['context_recall'])}  notes cited {_pct(t['answer_recall'])}  "
              f"citation precision {_pct(t['citation_precision'])} of {t['citations']}  strict "
              f"{_pct(t['strict_precision'])} of {t['strict_citations']}  claims kept / left out "
              f"{t['claims_kept']} / {t['claims_left_out'] if t['claims_left_out'] is not None else '-'}  language "
              f"{t['in_question_language']} ({t['language_retries']} retried)  narrating {t['narrating']}  "
              f"calls {t['llm_calls']}  {t['seconds']} s")
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
