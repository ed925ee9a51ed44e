"""The question's language, identified and named in answer prompts; the live benchmark's scoring proxies."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from benchmarks.qa.modes import NARRATION, citation_support, entity_recall, rescore, same_language
from graphrag_got.common.language import identify, question_language
from graphrag_got.search.citations import Citation


@pytest.mark.parametrize(("question", "expected"), [
    ("¿Quién traicionó a Robb Stark en la Boda Roja y por qué?", "Spanish"),
    ("Who is the father of Robb Stark?", "English"),
    ("Wer hat die Burg gebaut und wann wurde sie zerstört?", "German"),
    ("Quelle est la capitale du royaume et qui la gouverne?", "French"),
])  # fmt: skip
def test_the_question_language_is_named(question: str, expected: str) -> None:
    assert question_language(question) == expected


def test_no_letters_or_low_confidence_leave_the_language_to_the_model() -> None:
    assert identify("") is None and identify("1234 ?!") is None
    assert question_language("1234") is None
    assert question_language("Who married Tyrion Lannister?") is None  # two words left: too little to tell
    assert question_language("Who is the father of Robb Stark?", min_confidence=1.01) is None


def _fact(i: str, text: str, *names: str) -> Citation:
    return Citation(id=i, kind="fact", text=text, entities=list(names))


def test_a_citation_supports_a_sentence_that_names_its_entities() -> None:
    sources = [_fact("F1", "Roose Bolton TRAICIONA_A Robb Stark", "Roose Bolton", "Robb Stark"),
               _fact("F2", "Daenerys Targaryen GOBIERNA Meereen", "Daenerys Targaryen", "Meereen"),
               Citation(id="C1", kind="chunk", text="Walder Frey hosted the wedding.")]  # fmt: skip
    answer = "Roose Bolton betrayed Robb [F1]. Walder Frey hosted it. [C1] Nobody else did [F2]. Invented [F9]."
    assert citation_support(answer, sources) == (3, 2)  # F2 cites a sentence about nobody it names; F9 ignored


def test_stored_answers_are_scored_again_without_the_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    row = {"question_id": "L03", "mode": "local", "needed": 2, "answer": "Sansa Stark married Jon Snow when the long war was over [F1].",
           "sources": [{"id": "F1", "entities": ["Sansa Stark", "Casa Stark"], "text": "Sansa Stark PERTENECE_A Casa Stark"}]}
    path = tmp_path / "modes.json"
    path.write_text(json.dumps({"meta": {"model": "m", "extraction": "e", "questions": 1}, "rows": [row]}))
    assert rescore(path) == 0
    data = json.loads(path.read_text())
    assert data["rows"][0]["language_ok"] is False  # a Spanish question answered in English
    assert data["rows"][0]["cited"] == 1 and data["rows"][0]["cited_supported"] == 1
    assert "| local: local | 1 |" in path.with_suffix(".md").read_text()


def test_language_narration_and_entity_recall_proxies() -> None:
    assert same_language("¿Quién traicionó a Robb Stark?", "Roose Bolton traicionó a Robb Stark en la boda [F1].")
    assert same_language("¿Quién traicionó a Robb Stark?", "Roose Bolton is the one who betrayed Robb Stark [F1].") is False
    assert same_language("¿Quién traicionó a Robb Stark?", "Roose Bolton betrayed Robb Stark [F1].") is None  # too short
    assert NARRATION.search("Según las fuentes, Roose Bolton lo traicionó.")
    assert NARRATION.search("The answer is based on the information provided in the Community Reports [R1].")
    assert NARRATION.search("Las fuentes que restan son [F1], [F2].")
    assert not NARRATION.search("Roose Bolton traicionó a Robb Stark [F1].")
    assert entity_recall({"entities": ["Casa Stark", "Casa Frey"]}, "La Casa Stark lucha [R1].") == (1, ["Casa Frey"])


class _BenchChat:
    """A scripted chat model for the benchmark's own run: a report, no anchor names, a relevant map
    rating, a draft without follow-ups, and a claims answer whose first claim states the first source
    and whose second names someone that source does not hold."""

    @staticmethod
    def model() -> Any:
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        class Chat(BaseChatModel):
            @property
            def _llm_type(self) -> str:
                return "bench-scripted"

            def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
                system, user = str(messages[0].content), str(messages[-1].content)
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content=_BenchChat.reply(system, user)))])

        return Chat()

    @staticmethod
    def reply(system: str, user: str) -> str:
        if "report of one community" in system:
            return json.dumps({"title": "Grupo", "summary": "Resumen del grupo.", "findings": [], "rating": 5,
                               "rating_explanation": "x"})  # fmt: skip
        if "named things" in system:
            return '{"entities": []}'
        if "You rate how useful" in system:
            return json.dumps({"relevance": 8, "extract": "Extracto del grupo."})
        if "follow-up questions" in system:
            return json.dumps({"answer": "Borrador.", "follow_ups": []})
        first = re.search(r"^\[([FCR]\d+)\] (?:\(community [^)]*\)\n)?([^\n(]+)", user, re.MULTILINE)
        sid, line = (first.group(1), first.group(2).strip()) if first else ("F1", "nada")
        # stated, not pasted: the relation type of a fact line in words (a pasted line is rewritten or left out)
        line = re.sub(r"\b[A-ZÁÉÍÓÚÑ]{2,}(?:_[A-ZÁÉÍÓÚÑ]+)*\b", lambda m: m.group(0).lower().replace("_", " "), line)
        return json.dumps({"claims": [{"statement": f"{line}.", "sources": [sid]},
                                      {"statement": "Harry Strickland conoce a todos.", "sources": [sid]}]})


@pytest.mark.neo4j
def test_the_live_benchmark_runs_end_to_end_and_reports_claims_and_strict_precision(neo4j_settings, wipe_graph,
                                                                                   tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from benchmarks.qa import modes

    for var, value in {"GRAPHRAG_ANSWER_FORMAT": "claims", "GRAPHRAG_EMBEDDINGS": "0", "GRAPHRAG_LOCAL_RETRIEVAL": "graph",
                       "GRAPHRAG_HOME": str(tmp_path / "home")}.items():
        monkeypatch.setenv(var, value)
    wipe_graph()
    out = tmp_path / "modes.md"  # noqa
    try:
        code = modes.main(["--limit", "2", "--global-limit", "1", "--modes", "local,drift", "--force", "--out", str(out)],
                          chat=_BenchChat.model())
    finally:
        wipe_graph()
    assert code == 0
    data = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    rows = {(r["question_id"], r["mode"]): r for r in data["rows"]}
    assert len(rows) == 5 and all(r["error"] is None for r in rows.values())
    local = data["totals"]["local: local"]
    assert local["claims_kept"] == 2 and local["claims_left_out"] == 2  # Strickland is in no cited source
    assert local["left_out_reasons"] == {"entity_not_in_sources": 2}
    assert local["strict_citations"] == 2 and local["strict_precision"] == 1.0  # each kept claim states its source
    assert data["totals"]["global: global"]["claims_kept"] >= 1
    text = out.read_text(encoding="utf-8")
    assert "strict precision (cited) [unchecked]" in text and "left out: Harry Strickland conoce a todos." in text
