"""The vault benchmark's data stays consistent with the vault: curated answers fresh, questions answerable."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.notes_retrieval.make_answers import ENTITIES, OUT, RELATIONS, answers
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]


def test_curated_answers_file_is_the_generated_one() -> None:
    assert json.loads(OUT.read_text(encoding="utf-8")) == answers(), "run benchmarks/notes_retrieval/make_answers.py"


def test_curated_entities_and_relations_fit_the_notes_ontology() -> None:
    onto = Ontology.from_file(ROOT / "ontology" / "notes.json")
    classes = {name: cls for name, cls, _ in ENTITIES}
    assert set(classes.values()) <= set(onto.classes)
    for s, r, o in RELATIONS:
        rel = onto.relation(r)
        assert rel is not None and rel.accepts(classes[s], classes[o]), (s, r, o)


def test_every_question_needs_notes_of_the_vault() -> None:
    questions = json.loads((ROOT / "benchmarks" / "notes_retrieval" / "questions.json").read_text(encoding="utf-8"))
    assert len(questions["questions"]) >= 20
    for q in questions["questions"]:
        assert q["needs"] and all((ROOT / "corpus" / "notes" / n).is_file() for n in q["needs"]), q["id"]
        assert q["class"] in {"named", "paraphrase", "relational"} and q["lang"] in {"es", "en"}
