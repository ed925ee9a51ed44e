"""The question's language, identified and named in answer prompts; the live benchmark's scoring proxies."""

from __future__ import annotations

import json

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
    row = {"question_id": "L03", "mode": "local", "needed": 2, "answer": "Sansa Stark married Jon Snow [F1].",
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
    assert NARRATION.search("Según las fuentes, Roose Bolton lo traicionó.")
    assert NARRATION.search("The answer is based on the information provided in the Community Reports [R1].")
    assert NARRATION.search("Las fuentes que restan son [F1], [F2].")
    assert not NARRATION.search("Roose Bolton traicionó a Robb Stark [F1].")
    assert entity_recall({"entities": ["Casa Stark", "Casa Frey"]}, "La Casa Stark lucha [R1].") == (1, ["Casa Frey"])
