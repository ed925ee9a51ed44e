"""Routing of questions to local / global / drift: rules, their order, the optional classifier (no Neo4j)."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.errors import SearchError
from graphrag_got.search.route import Route, load_cues, matching_cues, route_question
from support import CallCounter

ROOT = Path(__file__).resolve().parent.parent
GOLD = json.loads((ROOT / "tests" / "data" / "got_extraction.json").read_text(encoding="utf-8"))
CATALOG = [{"uid": e["uid"], "key": e["key"], "name": e["name"], "type": e["type"], "aliases": e.get("aliases", [])}
           for e in GOLD["entities"]]  # fmt: skip


def route(question: str, **kw) -> Route:  # type: ignore[no-untyped-def]
    return route_question(question, CATALOG, **kw)


@pytest.mark.parametrize("question", [
    "¿Qué relación hay entre Jon Snow y Daenerys Targaryen?",
    "How does Jon Snow relate to Daenerys Targaryen?",
    "Compare the rule of two houses",
    "¿Cómo influye el invierno en las alianzas?",
])  # fmt: skip
def test_connective_questions_go_to_drift_even_when_they_name_entities(question: str) -> None:
    r = route(question)
    assert r.mode == "drift" and r.decided_by == "rule" and r.rule.startswith("connective.")
    assert "connective question" in r.reason and r.scores["drift"] >= 1


def test_named_entities_go_to_local_with_their_names_in_the_reason() -> None:
    r = route("¿Cómo se conocieron Jon Snow y Daenerys?")
    assert (r.mode, r.rule) == ("local", "entities")
    assert r.reason == "names 2 entities of the graph: Jon Snow, Daenerys Targaryen"
    assert r.describe() == "local (names 2 entities of the graph: Jon Snow, Daenerys Targaryen)"
    assert r.entities == ["Jon Snow", "Daenerys Targaryen"] and r.scores["local"] == 2
    assert route("Who betrayed Robb Stark?").reason == "names 1 entity of the graph: Robb Stark"


@pytest.mark.parametrize(("question", "rule"), [
    ("¿Cuáles son las principales alianzas en conflicto?", "global.es.principales"),
    ("What are the main themes of the corpus?", "global.en.main"),
    ("En general, ¿de qué trata la historia?", "global.es.en_general"),
    ("Summarize the corpus", "global.en.summary"),
])  # fmt: skip
def test_corpus_wide_questions_go_to_global(question: str, rule: str) -> None:
    r = route(question)
    assert r.mode == "global" and r.rule == rule and r.entities == []


def test_a_named_entity_beats_a_corpus_wide_cue_but_a_fuzzy_one_does_not() -> None:
    r = route("¿Cuáles son los principales aliados de Robb Stark?")
    assert r.mode == "local" and "global.es.principales" in r.cues
    # "Sansaa" is only a close spelling of a name: with a corpus-wide cue, the cue decides
    fuzzy = route("¿Cuáles son los principales temas de Sansaa?")
    assert fuzzy.mode == "global" and fuzzy.entities  # the fuzzy match is still reported
    assert route("¿Qué hizo Sansaa?").mode == "local"  # no cue: the fuzzy name decides


def test_nothing_decides_default_is_global_and_no_llm_is_asked() -> None:
    counter = CallCounter()
    chat = FakeListChatModel(responses=['{"mode": "local", "reason": "x"}'], callbacks=[counter])
    r = route("¿Qué tiempo hace hoy?", chat=chat)  # classifier off: chat unused
    assert (r.mode, r.decided_by, r.rule) == ("global", "default", "default") and counter.calls == 0


def test_classifier_decides_only_what_no_rule_does() -> None:
    counter = CallCounter()
    chat = FakeListChatModel(responses=['{"mode": "drift", "reason": "It links two ideas."}'], callbacks=[counter])
    r = route("¿Qué tiempo hace hoy?", chat=chat, classifier=True)
    assert (r.mode, r.decided_by, r.rule) == ("drift", "classifier", "classifier")
    assert r.reason == "LLM classifier: It links two ideas." and r.llm_calls == counter.calls == 1
    assert "local" in counter.prompts[0] and "drift" in counter.prompts[0]
    counter2 = CallCounter()
    chat2 = FakeListChatModel(responses=['{"mode": "drift", "reason": ""}'], callbacks=[counter2])
    assert route("Who betrayed Robb Stark?", chat=chat2, classifier=True).mode == "local"
    assert counter2.calls == 0  # a rule decided


def test_classifier_with_an_invalid_answer_falls_back_and_counts_its_calls() -> None:
    counter = CallCounter()
    chat = FakeListChatModel(responses=['{"mode": "everything"}', "not json"], callbacks=[counter])
    r = route("¿Qué tiempo hace hoy?", chat=chat, classifier=True)
    assert (r.mode, r.decided_by) == ("global", "default")
    assert r.llm_calls == counter.calls == 2 and r.warnings and "classifier" in r.warnings[0]


def test_empty_question_and_unknown_language_are_clear_errors() -> None:
    with pytest.raises(SearchError, match="empty"):
        route("   ")
    with pytest.raises(SearchError, match="no routing cues for language 'xx'; shipped: en, es"):
        load_cues(("xx",))


def test_cue_files_compile_are_generic_and_name_their_rules() -> None:
    cues = load_cues()
    assert {c.kind for c in cues} == {"connective", "global"} and {c.language for c in cues} == {"en", "es"}
    assert len({c.rule for c in cues}) == len(cues)
    folder = resources.files("graphrag_got").joinpath("data")
    for code in ("en", "es"):
        text = folder.joinpath(f"routing_{code}.json").read_text(encoding="utf-8").lower()
        assert not re.search(r"stark|lannister|targaryen|invernalia|trono|dragon", text)
    hits = matching_cues("¿Qué RELACIÓN hay entre ellos?")  # accents and case do not matter
    assert [c.rule for c, _ in hits][:1] == ["connective.es.que_relacion"] and hits[0][1] == "que relacion"


def test_routing_benchmark_accuracy() -> None:
    """The labelled set of benchmarks/routing: the rules must route at least 90% of it right."""
    from benchmarks.routing import load_questions, run

    questions = load_questions()
    assert len(questions) >= 30 and {q["language"] for q in questions} == {"es", "en"}
    report = run(questions)
    assert report["accuracy"] >= 0.9 and report["by_split"]["held_out"] >= 0.6, report["misroutes"]
    assert set(report["by_language"]) == {"es", "en"}
