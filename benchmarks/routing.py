"""Routing accuracy: does `ask "QUESTION"` pick the mode a person would? (no Neo4j, no LLM)

    .venv/bin/python -m benchmarks.routing                      # rules only
    .venv/bin/python -m benchmarks.routing --json out.json      # also write the numbers

The labelled questions are ``benchmarks/routing/questions.json`` (Spanish and English, about the
GoT example corpus and a sysadmin notes vault). The router runs exactly as the CLI runs it,
against an entity catalog: for ``got`` the entities of the gold extraction
(``tests/data/got_extraction.json``), for ``notes`` the gold extraction of the notes vault when
``--notes-extraction`` is given, else the stand-in list ``catalogs.notes`` of the questions file.
Prints accuracy overall, per language, per expected mode, per corpus and per split (``tuned``: the
questions the cue lists were adjusted on; ``held_out``: written afterwards, never tuned on), and
every misroute with its reason.
``--classifier`` adds the optional LLM classifier (it needs a model: ``--provider`` as usual).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.search.route import route_question

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "benchmarks" / "routing" / "questions.json"
GOLD = ROOT / "tests" / "data" / "got_extraction.json"


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return json.loads(path.read_text(encoding="utf-8"))["questions"]


def catalog_from_extraction(path: Path) -> list[dict[str, Any]]:
    """The matcher's catalog ``{uid, key, name, type, aliases}`` from an extraction.json."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [{"uid": e["uid"], "key": e["key"], "name": e["name"], "type": e["type"], "aliases": e.get("aliases") or []}
            for e in data["entities"]]  # fmt: skip


def catalog_from_names(rows: list[dict[str, str]]) -> list[dict[str, Any]]:
    return [{"uid": entity_uid(r["type"], r["name"]), "key": normalize_name(r["name"]), "name": r["name"],
             "type": r["type"], "aliases": []} for r in rows]  # fmt: skip


def gold_catalog() -> list[dict[str, Any]]:
    return catalog_from_extraction(GOLD)


def catalogs(path: Path = QUESTIONS, notes_extraction: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    data = json.loads(path.read_text(encoding="utf-8"))
    notes = catalog_from_extraction(notes_extraction) if notes_extraction else catalog_from_names(
        data.get("catalogs", {}).get("notes", []))
    return {"got": gold_catalog(), "notes": notes}


def run(questions: list[dict[str, Any]], catalog: list[dict[str, Any]] | dict[str, list[dict[str, Any]]] | None = None,
        chat: Any = None, classifier: bool = False) -> dict[str, Any]:  # fmt: skip
    """Route every question; accuracy overall / per language / per expected mode, and the misroutes.

    ``catalog``: one list for every question, or one per corpus (``{"got": [...], "notes": [...]}``);
    None uses :func:`catalogs`.
    """
    by_corpus = catalogs() if catalog is None else catalog
    rows = []
    for q in questions:
        cat = by_corpus.get(q.get("corpus", "got"), []) if isinstance(by_corpus, dict) else by_corpus
        r = route_question(q["question"], cat, chat=chat, classifier=classifier)
        rows.append({**q, "routed": r.mode, "rule": r.rule, "reason": r.reason, "ok": r.mode == q["mode"],
                     "split": "held_out" if q.get("held_out") else "tuned"})

    def acc(items: list[dict[str, Any]]) -> float:
        return round(sum(i["ok"] for i in items) / len(items), 4) if items else 0.0

    groups: dict[str, dict[str, list[dict[str, Any]]]] = {"language": defaultdict(list), "mode": defaultdict(list),
                                                         "corpus": defaultdict(list), "split": defaultdict(list)}  # fmt: skip
    for row in rows:
        for key in groups:
            groups[key][row.get(key, "got")].append(row)
    return {
        "questions": len(rows), "correct": sum(r["ok"] for r in rows), "accuracy": acc(rows),
        "by_language": {k: acc(v) for k, v in sorted(groups["language"].items())},
        "by_mode": {k: acc(v) for k, v in sorted(groups["mode"].items())},
        "by_corpus": {k: acc(v) for k, v in sorted(groups["corpus"].items())},
        "by_split": {k: acc(v) for k, v in sorted(groups["split"].items())},
        "misroutes": [{k: r[k] for k in ("id", "question", "mode", "routed", "rule", "reason")}
                      for r in rows if not r["ok"]],
        "rows": rows,
    }  # fmt: skip


def render(report: dict[str, Any]) -> str:
    lines = [f"routing accuracy: {report['correct']}/{report['questions']} = {report['accuracy']:.1%}"]
    for key in ("by_language", "by_mode", "by_corpus", "by_split"):
        lines.append(f"  {key[3:]}: " + ", ".join(f"{k} {v:.1%}" for k, v in report[key].items()))
    lines.append(f"misroutes ({len(report['misroutes'])}):")
    for m in report["misroutes"]:
        lines.append(f"  {m['id']} expected {m['mode']}, got {m['routed']} [{m['rule']}]: {m['question']}")
        lines.append(f"      {m['reason']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.routing", description=__doc__.split("\n")[0])
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--notes-extraction", type=Path, default=None, help="extraction.json of the notes vault")
    ap.add_argument("--classifier", action="store_true", help="also ask the LLM when no rule decides")
    ap.add_argument("--json", type=Path, default=None, help="write the report as JSON here")
    args = ap.parse_args(argv)
    chat = None
    if args.classifier:
        from graphrag_got.config import Settings
        from graphrag_got.llm.factory import get_chat_model

        settings = Settings.load()
        chat = get_chat_model(settings.llm, files=settings.files)
    report = run(load_questions(args.questions), catalogs(args.questions, args.notes_extraction), chat=chat,
                 classifier=args.classifier)  # fmt: skip
    sys.stdout.write(render(report) + "\n")
    if args.json:
        args.json.write_text(json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
