"""Getting JSON out of a model: fences, repair, one retry with the error, and the give-up path."""

from __future__ import annotations

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from pydantic import BaseModel

from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import LLMOutputError
from graphrag_got.llm.json_answers import complete_json, parse_json_text
from graphrag_got.llm.replay import ReplayChatModel


class Answer(BaseModel):
    relevance: int
    extract: str


def test_plain_json_needs_no_repair():
    assert parse_json_text('{"a": [1, 2]}') == ({"a": [1, 2]}, False)


def test_markdown_fences_are_stripped():
    value, repaired = parse_json_text('```json\n{"a": 1}\n```')
    assert value == {"a": 1} and not repaired


def test_truncated_json_is_repaired_and_flagged():
    value, repaired = parse_json_text('{"entities": [{"type": "Region", "name": "Invernalia"}, {"type": "Reg')
    assert repaired
    assert value["entities"][0] == {"type": "Region", "name": "Invernalia"}


def test_prose_around_json_is_tolerated():
    value, repaired = parse_json_text('Here it is: {"a": 1,} thanks')
    assert value == {"a": 1} and repaired


@pytest.mark.parametrize("text", ["", "no json here", "```json\n```"])
def test_nothing_usable_raises(text):
    with pytest.raises(ValueError):
        parse_json_text(text)


def test_retry_sends_the_error_back_and_succeeds():
    chat = FakeListChatModel(responses=['{"relevance": "high"}', '{"relevance": 7, "extract": "x"}'])
    value, attempt = complete_json(chat, "sys", "user", Answer)
    assert value == Answer(relevance=7, extract="x")
    assert attempt.retried and len(attempt.raw_responses) == 2
    assert "relevance" in attempt.errors[0]


def test_gives_up_after_one_retry_with_raw_responses():
    chat = FakeListChatModel(responses=["nope", "still nope", "never asked"])
    with pytest.raises(LLMOutputError) as info:
        complete_json(chat, "sys", "user", Answer)
    assert info.value.raw_responses == ["nope", "still nope"]


def test_replay_model_answers_by_key_and_in_order(tmp_path):
    path = tmp_path / "replay.json"
    path.write_text('{"responses": [{"chunk_hash": "h1", "chunk_id": "d:1", "responses": ["bad", "{\\"a\\": 1}"]}],'
                    ' "fallback": ["{\\"relevance\\": 3, \\"extract\\": \\"e\\"}"]}')
    chat = ReplayChatModel.from_file(path)
    value, attempt = complete_json(chat, "s", "u", None, replay_key="h1")
    assert value == {"a": 1} and attempt.retried
    value, _ = complete_json(chat, "s", "u", Answer)
    assert value.relevance == 3
    with pytest.raises(LLMError, match="no recorded response for chunk zz"):
        complete_json(chat, "s", "u", None, replay_key="zz")


def test_replay_file_errors_are_clear(tmp_path):
    with pytest.raises(LLMError, match="not found"):
        ReplayChatModel.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(LLMError, match="bad.json:1:2"):
        ReplayChatModel.from_file(bad)
    bad.write_text('{"responses": {}}')
    with pytest.raises(LLMError, match="'responses' list"):
        ReplayChatModel.from_file(bad)
