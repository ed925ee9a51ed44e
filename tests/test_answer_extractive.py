"""Answers that answer (issue 52): a claim pasting a context line is stated from its fact's sentence or
left out (``pasted_context``); the extractive-first local answer takes the corpus sentences naming the
question's entities together as its core and the model states the answer from them. Unit tests on a
small catalog of another domain; no Neo4j (the replayed demo answers run in test_answer_support.py)."""

from __future__ import annotations

import json

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.config import Settings
from graphrag_got.llm.calls import Attempt
from graphrag_got.search.anchors import Anchor, MatchIndex
from graphrag_got.search.citations import Citation
from graphrag_got.search.claims import Claim
from graphrag_got.search.local_answer import (AnswerInputs, ExtractiveFirst, WrittenAnswer, core_sentences,
                                              local_answer_form)
from graphrag_got.search.support import SupportReason, check_claims, check_lines, pasted_source
from support import LOVELACE_CATALOG

CATALOG = LOVELACE_CATALOG  # the alias of Ada Lovelace plays no part here
INDEX = MatchIndex(CATALOG)
MET = "After a dinner in London, Ada Lovelace met Charles Babbage, who showed her his engine."
SOURCES = [
    Citation(id="F1", kind="fact", text="Charles Babbage DESIGNS Analytical Engine",
             evidence="Charles Babbage designed the Analytical Engine in London.",
             entities=["Charles Babbage", "Analytical Engine"]),
    Citation(id="F2", kind="fact", text="Ada Lovelace MEETS Charles Babbage", evidence=MET,
             entities=["Ada Lovelace", "Charles Babbage"]),
    Citation(id="F3", kind="fact", text="Mary Somerville LIVES_IN London", entities=["Mary Somerville", "London"]),
    Citation(id="C1", kind="chunk", text="Mary Somerville introduced Ada Lovelace to Charles Babbage."),
    Citation(id="C2", kind="chunk", text="Ada Lovelace wrote notes on the engine."),
]  # fmt: skip
ANCHORS = [Anchor("Person|ada lovelace", "Ada Lovelace", "Person", "exact", "ada lovelace"),
           Anchor("Person|charles babbage", "Charles Babbage", "Person", "exact", "charles babbage")]  # fmt: skip


def _claims(*pairs: tuple[str, list[str]]) -> list[Claim]:
    return [Claim(statement=s, sources=ids) for s, ids in pairs]


# --- pasted context lines ---------------------------------------------------------------------


def test_a_pasted_fact_line_is_stated_from_its_facts_sentence() -> None:
    pasted = f'Ada Lovelace MEETS Charles Babbage -- evidence: "{MET}"'
    report = check_claims(_claims((pasted, ["F1"]), ("Babbage designed the Analytical Engine.", ["F1"])),
                          SOURCES, INDEX)  # fmt: skip
    assert [c.statement for c in report.kept] == [MET, "Babbage designed the Analytical Engine."]
    first = report.kept[0]
    assert first.pasted == pasted and first.sources == ["F2"]
    assert report.rewritten == 1 and report.pasted == 1 and report.left_out == []
    assert "1 rewritten from a pasted context line" in report.summary()
    lines = check_lines("claims", len(report.kept), report.left_out, rewritten=[first])
    assert any(line.startswith("Rewritten") for line in lines) and any(pasted in line for line in lines)


def test_a_pasted_line_without_a_sentence_is_left_out_with_its_reason() -> None:
    report = check_claims(_claims(("Mary Somerville LIVES_IN London.", ["F3"]),
                                  ("Something -- evidence: unknown", ["C2"])), SOURCES, INDEX)  # fmt: skip
    assert report.kept == []
    assert [c.reason for c in report.left_out] == [SupportReason.PASTED_CONTEXT] * 2
    assert "F3" in report.left_out[0].detail and report.pasted == 2
    assert report.counts() == {"pasted_context": 2}


def test_capitals_that_are_no_relation_of_the_context_are_not_a_paste() -> None:
    assert pasted_source("Ada Lovelace worked for NASA in London.", ["F2"], {c.id: c for c in SOURCES}) is False
    assert pasted_source("Ada Lovelace met Charles Babbage.", ["F2"], {c.id: c for c in SOURCES}) is False
    report = check_claims(_claims(("Ada Lovelace met Charles Babbage.", ["F2"])), SOURCES, INDEX)
    assert report.kept[0].pasted is None and report.rewritten == 0


# --- the extractive core ----------------------------------------------------------------------


DESIGNED = SOURCES[0].evidence
CORE = [DESIGNED, MET, SOURCES[3].text, SOURCES[4].text]


def test_the_core_is_the_sentences_naming_the_question_entities_in_rank_order() -> None:
    core = core_sentences(SOURCES, ANCHORS, INDEX, limit=4, max_ids=3)
    assert [c.text for c in core] == CORE  # F3's fact has no sentence; every other names Ada or Charles
    assert [c.ids for c in core] == [["F1"], ["F2"], ["C1"], ["C2"]] and [c.anchors for c in core] == [1, 2, 2, 1]
    # the sentence naming the most of them is always among them, in its place
    assert [c.text for c in core_sentences(SOURCES, ANCHORS, INDEX, limit=1, max_ids=3)] == [MET]
    one = core_sentences(SOURCES, ANCHORS[:1], INDEX, limit=2, max_ids=3)
    assert [c.ids for c in one] == [["F2"], ["C1"]]  # Ada only: F1 does not name her
    # a sentence two sources hold is one sentence citing both; an evidence span is cut into its
    # sentences, and a last piece with no end mark (a cut span) is no sentence
    twice = [*SOURCES, Citation(id="C3", kind="chunk", text=MET),
             Citation(id="F9", kind="fact", text="Ada Lovelace KNOWS Mary Somerville",
                      evidence="Ada Lovelace wrote notes on the engine. Mary Somerville knew Ada Lovelace and",
                      entities=["Ada Lovelace", "Mary Somerville"])]  # fmt: skip
    core = core_sentences(twice, ANCHORS, INDEX, limit=6, max_ids=3)
    assert [c.ids for c in core] == [["F1"], ["F2", "C3"], ["C1"], ["C2", "F9"]]


def _inputs(chat: FakeListChatModel, **search: object) -> AnswerInputs:
    settings = Settings.load(**{"answer_format": "claims", **search})
    return AnswerInputs(question="How did Ada Lovelace meet Charles Babbage?", sources=list(SOURCES), anchors=ANCHORS,
                        index=INDEX, chat=chat, search=settings.search, llm=settings.llm)  # fmt: skip


def test_extractive_answer_states_first_then_cites_the_core() -> None:
    stated = {"claims": [{"statement": "Ada Lovelace met Charles Babbage after a dinner in London.",
                          "sources": ["C1", "F2"]}]}  # fmt: skip
    chat = FakeListChatModel(responses=[json.dumps(stated)])
    attempt = Attempt()
    out = ExtractiveFirst().answer(_inputs(chat), attempt)
    assert len(attempt.raw_responses) == 1 and out.form == "extractive"
    kept = [c.statement for c in out.support.kept]
    assert kept == ["Ada Lovelace met Charles Babbage after a dinner in London.", *CORE]
    assert out.text.startswith("Ada Lovelace met Charles Babbage after a dinner in London [C1, F2]")
    assert {c.id for c in out.citations} == {"C1", "C2", "F1", "F2"}


def test_extractive_answer_without_the_stating_call_makes_no_call() -> None:
    chat = FakeListChatModel(responses=[])
    attempt = Attempt()
    out = ExtractiveFirst().answer(_inputs(chat, extractive_connect=False), attempt)
    assert attempt.raw_responses == [] and [c.statement for c in out.support.kept] == CORE


def test_a_stated_sentence_its_core_does_not_back_is_left_out() -> None:
    stated = {"claims": [{"statement": "Ada Lovelace lived in London with Mary Somerville.", "sources": ["F2"]}]}
    out = ExtractiveFirst().answer(_inputs(FakeListChatModel(responses=[json.dumps(stated)])), Attempt())
    assert [c.statement for c in out.support.kept] == CORE
    assert [c.reason for c in out.support.left_out] == [SupportReason.ENTITY_NOT_IN_SOURCES]


def test_no_core_falls_back_to_the_written_answer_and_says_so() -> None:
    written = {"claims": [{"statement": "Mary Somerville lives in London.", "sources": ["F3"]}]}
    inp = _inputs(FakeListChatModel(responses=[json.dumps(written)]))
    inp.anchors = [Anchor("Machine|analytical engine", "Analytical Engine", "Machine", "exact", "analytical engine")]
    inp.sources = [SOURCES[2], SOURCES[4]]  # no sentence names the engine
    out = ExtractiveFirst().answer(inp, Attempt())
    assert out.form == "written" and any("written answer instead" in w for w in out.warnings)


def test_the_setting_picks_the_form() -> None:
    chat = FakeListChatModel(responses=[])
    assert isinstance(local_answer_form(Settings.load(local_answer="extractive").search, chat), ExtractiveFirst)
    assert isinstance(local_answer_form(Settings.load(local_answer="written").search, chat), WrittenAnswer)
    assert isinstance(local_answer_form(Settings.load(local_answer="auto").search, chat), WrittenAnswer)  # not embedded


# --- global: scored points, reduced across reports ----------------------------------------------

from graphrag_got.search.citations import Finding  # noqa: E402
from graphrag_got.search.global_map import (COVER_REPORTS, MapPoint, MapPoints, ScoredPoints, cover_reports,  # noqa: E402
                                            points_in_turns)


class _Rating:
    def __init__(self, cid: int, points: list[tuple[str, int]]) -> None:
        self.id, self.title, self.relevance, self.extract = cid, f"group {cid}", None, ""
        self.points = [MapPoint(description=d, score=n) for d, n in points]


REPORTS = [
    Citation(id="R1", kind="report", text="Engine builders: Charles Babbage designed the Analytical Engine.",
             entities=["Charles Babbage", "Analytical Engine"],
             findings=[Finding(statement="Charles Babbage designed the Analytical Engine.",
                               members=["Charles Babbage", "Analytical Engine"])]),
    Citation(id="R2", kind="report", text="Writers: Ada Lovelace wrote notes.", entities=["Ada Lovelace"]),
    Citation(id="R3", kind="report", text="London circle: Mary Somerville lived in London.",
             entities=["Mary Somerville", "London"]),
]  # fmt: skip


def test_points_are_read_and_reduced_in_turns_across_reports() -> None:
    form = ScoredPoints()
    reading = form.read(MapPoints(points=[MapPoint(description="  Ada Lovelace  wrote notes. ", score=6),
                                          MapPoint(description=" ", score=9)]))  # fmt: skip
    assert reading.relevance == 6 and [p.description for p in reading.points] == ["Ada Lovelace wrote notes."]
    kept = [(REPORTS[0], _Rating(1, [("a1", 9), ("a2", 8), ("a3", 7)])), (REPORTS[1], _Rating(2, [("b1", 5)])),
            (REPORTS[2], _Rating(3, [("c1", 6), ("c2", 6)]))]  # fmt: skip
    order = [(rid, p.description) for rid, p in points_in_turns(kept)]
    assert order == [("R1", "a1"), ("R3", "c1"), ("R2", "b1"), ("R1", "a2"), ("R3", "c2"), ("R1", "a3")]
    assert points_in_turns(kept, limit=2) == points_in_turns(kept)[:2]
    text = form.reduce_text(kept)
    assert "[R1] (score 9/10) a1" in text and text.index("b1") < text.index("a2")


def test_an_answer_citing_one_report_gets_the_best_points_of_others() -> None:
    model = check_claims(_claims(("Charles Babbage designed the Analytical Engine.", ["R1"])), REPORTS, INDEX,
                         required_kind="report")  # fmt: skip
    kept = [(REPORTS[0], _Rating(1, [("Charles Babbage designed the Analytical Engine.", 9)])),
            (REPORTS[1], _Rating(2, [("Ada Lovelace wrote notes.", 7)])),
            (REPORTS[2], _Rating(3, [("Mary Somerville lived with Charles Babbage.", 8)]))]  # fmt: skip
    out, added = cover_reports(model, kept, REPORTS, INDEX, max_ids=3)
    assert COVER_REPORTS == 3 and added == 1  # R3's point names someone R3 does not hold: left out, counted
    assert [c.sources for c in out.kept] == [["R1"], ["R2"]]
    assert [c.reason for c in out.left_out] == [SupportReason.ENTITY_NOT_IN_SOURCES]
    assert model.kept == out.kept[:1] and len(model.kept) == 1  # the answer's own check is not changed
    same, none = cover_reports(out, kept[:2], REPORTS, INDEX, max_ids=3)
    assert none == 0 and same is out  # two reports with points, both cited


def test_an_extractive_global_answer_is_the_best_points_in_turns_each_citing_its_report() -> None:
    from graphrag_got.search.global_map import ExtractiveReduce, ReduceInputs, ScoredPoints, reduce_form

    settings = Settings.load(answer_format="claims", global_answer="extractive", extractive_connect=False)
    kept = [(REPORTS[0], _Rating(1, [("Charles Babbage designed the Analytical Engine.", 9)])),
            (REPORTS[1], _Rating(2, [("Ada Lovelace wrote notes.", 7)])),
            (REPORTS[2], _Rating(3, [("Mary Somerville lived in London.", 8), ("Mary Somerville met Ada Lovelace.", 6)]))]  # fmt: skip
    chat = FakeListChatModel(responses=[])
    assert isinstance(reduce_form(settings.search, chat), ExtractiveReduce)
    inp = ReduceInputs(question="Who are the groups?", pairs=kept, sources=REPORTS, index=INDEX, chat=chat,
                       search=settings.search, llm=settings.llm, language=None, map_form=ScoredPoints(),
                       reduce_system="")  # fmt: skip
    attempt = Attempt()
    out = ExtractiveReduce().answer(inp, attempt)  # no community facts: each report's best point
    assert attempt.raw_responses == [] and out.form == "extractive"
    assert [(c.statement, c.sources) for c in out.support.kept] == [
        ("Charles Babbage designed the Analytical Engine.", ["R1"]), ("Ada Lovelace wrote notes.", ["R2"]),
        ("Mary Somerville lived in London.", ["R3"])]  # fmt: skip
    # with its community's facts, a report gives their sentences sharing the most with the question and its
    # points, in turns across reports; each cites its report and its fact, which joins the sources
    rows = {"1": [{"start_name": "Charles Babbage", "end_name": "Analytical Engine", "type": "DESIGNS",
                   "evidence": ["Charles Babbage designed the Analytical Engine. It was never built and"]},
                  {"start_name": "Charles Babbage", "end_name": "London", "type": "LIVES_IN",
                   "evidence": ["Charles Babbage lived in London."]}],
            "3": [{"start_name": "Mary Somerville", "end_name": "London", "type": "LIVES_IN",
                   "evidence": ["Mary Somerville lived in London for forty years."]}]}  # fmt: skip
    sources = [r.model_copy(update={"community_id": str(n)}) for n, r in enumerate(REPORTS, start=1)]
    inp.pairs = [(src, rating) for src, (_, rating) in zip(sources, kept)]
    inp.sources, inp.facts_of = list(sources), lambda cid: rows.get(cid, [])
    out = ExtractiveReduce().answer(inp, Attempt())
    assert [(c.statement, c.sources) for c in out.support.kept] == [
        ("Charles Babbage designed the Analytical Engine.", ["R1"]), ("Ada Lovelace wrote notes.", ["R2"]),
        ("Mary Somerville lived in London.", ["R3"]), ("Mary Somerville lived in London for forty years.", ["R3", "F1"]),
        ("Charles Babbage lived in London.", ["R1", "F2"])]  # fmt: skip
    # R1's fact sentence is its point again: said once
    assert [c.id for c in inp.sources] == ["R1", "R2", "R3", "F1", "F2"]
    assert {c.id for c in out.citations} == {"R1", "R2", "R3", "F1", "F2"}


def test_an_extractive_claim_naming_no_entity_is_left_out() -> None:
    report = check_claims(_claims(("The answer is in the text given.", ["F2"]), ("Ada Lovelace met Charles Babbage.", ["F2"])),
                          SOURCES, INDEX, require_entity=True)  # fmt: skip
    assert [c.statement for c in report.kept] == ["Ada Lovelace met Charles Babbage."]
    assert [c.reason for c in report.left_out] == [SupportReason.NO_ENTITY]
    assert check_claims(_claims(("The answer is in the text given.", ["F2"])), SOURCES, INDEX).kept  # kept unchecked otherwise


def test_the_cli_says_when_an_answer_is_extractive() -> None:
    from types import SimpleNamespace

    from graphrag_got.commands.ask import check_lines as cli_lines

    report = check_claims(_claims((f'Ada Lovelace MEETS Charles Babbage -- evidence: "{MET}"', ["F2"])), SOURCES, INDEX)
    res = SimpleNamespace(answer_format="claims", claims=report.kept, left_out=report.left_out, language_retry=False,
                          language=None, answer_form="extractive", mode="local")  # fmt: skip
    lines = cli_lines(res)
    assert lines[1].startswith("answer form: extractive (the corpus's sentences")
    assert lines[2] == "claims: 1 claim kept (1 rewritten from a pasted context line), none left out"
    assert lines[3].startswith("Rewritten") and lines[4].endswith(f"-> {MET} [F2]")
    res.answer_form, res.mode = "written", "global"
    assert not any(line.startswith("answer form") for line in cli_lines(res))
