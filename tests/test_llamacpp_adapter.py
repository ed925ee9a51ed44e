"""The embedded provider's own adapter over llama-cpp-python, with the real small model.

Asserts on form only (never on model-written text): constrained JSON parses and fits the schema,
token counts are llama.cpp's own, and the second call with the same system prompt reuses it from the
KV cache.
"""

from __future__ import annotations

import json
import os
import re

import jsonschema
import pytest

from graphrag_got.config import Settings
from graphrag_got.llm.factory import _llamacpp
from graphrag_got.llm.json_answers import complete_json

pytestmark = pytest.mark.llm


@pytest.fixture(scope="module")
def chat():  # type: ignore[no-untyped-def]
    from graphrag_got.errors import GraphragGotError

    model = os.environ.get("GRAPHRAG_TEST_MODEL", "qwen2.5-coder-0.5b")
    settings = Settings.load().with_overrides(llamacpp_model=model, llamacpp_n_ctx=2048, llm_max_tokens=128,
                                              llamacpp_backend="in_process")  # this adapter, not the server
    try:
        return _llamacpp(settings.llm, settings.files)
    except GraphragGotError as exc:
        if os.environ.get("GRAPHRAG_REQUIRE_LLM") == "1":
            raise
        pytest.skip(f"embedded model not available: {exc}")


SCHEMA = {"type": "object", "properties": {"items": {"type": "array", "maxItems": 3,
                                                     "items": {"type": "string", "maxLength": 20}}},
          "required": ["items"]}
SYSTEM = ("You list things. " * 40) + "Answer with a JSON object {\"items\": [...]} and nothing else."


def test_adapter_is_ours_and_constrained_json_fits_the_schema(chat) -> None:  # type: ignore[no-untyped-def]
    from pydantic import BaseModel

    class Items(BaseModel):
        items: list[str]

    assert type(chat).__name__ == "LlamaCppChatModel"
    obj, attempt = complete_json(chat, SYSTEM, "Three colours.", Items, schema=SCHEMA, max_tokens=64)
    jsonschema.validate(obj.model_dump(), SCHEMA)
    assert attempt.input_tokens > 100 and attempt.output_tokens > 0
    assert not attempt.tokens_estimated  # llama.cpp's own counts, not the 4-characters guess


def test_the_shared_system_prompt_is_reused_from_the_kv_cache(chat) -> None:  # type: ignore[no-untyped-def]
    from langchain_core.messages import HumanMessage, SystemMessage

    first = chat.invoke([SystemMessage(content=SYSTEM), HumanMessage(content="Two fruits.")], max_tokens=16,
                        response_format={"type": "json_object", "schema": SCHEMA})
    second = chat.invoke([SystemMessage(content=SYSTEM), HumanMessage(content="Two animals, please.")],
                         max_tokens=16, response_format={"type": "json_object", "schema": SCHEMA})
    json.loads(second.content)
    prompt = second.usage_metadata["input_tokens"]
    reused = second.response_metadata["prefix_reused"]
    assert prompt > 100
    assert reused >= 0.8 * (prompt - 20)  # everything up to the user's words came from the cache
    assert reused < prompt  # the new question itself was evaluated
    stats = chat.prefix_stats
    assert stats.calls >= 2 and 0 < stats.hit_ratio < 1
    assert first.usage_metadata["output_tokens"] > 0


def test_each_call_takes_the_threads_the_free_cores_allow(chat, caplog) -> None:  # type: ignore[no-untyped-def]
    """A fake sampler says both cores are free, then one is busy for two calls, then both are free
    again: the llama.cpp context follows call by call, the answer says what it used, and the warning
    is logged once for the busy stretch."""
    import llama_cpp
    from langchain_core.messages import HumanMessage

    from graphrag_got.llm.cpu_threads import CpuSample, sample_cpu

    busy_per_call = iter([0.0, 1.0, 1.0, 0.0])
    chat.set_cpu_sampler(lambda: CpuSample(cores=2, busy=next(busy_per_call), source="fake sampler"))
    used, in_context = [], []
    try:
        with caplog.at_level("INFO", logger="graphrag_got.llm.providers.llamacpp_chat"):
            for _ in range(4):
                out = chat.invoke([HumanMessage(content="Say: ok")], max_tokens=2)
                used.append(out.response_metadata["threads"])
                in_context.append(llama_cpp.llama_n_threads(chat._llama.ctx))
    finally:
        chat.set_cpu_sampler(sample_cpu)
    limit = chat.n_threads
    full = min(2, limit)
    assert used == in_context == [full, 1, 1, full]
    warnings = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    if limit >= 2:
        assert len(warnings) == 1 and "1.0 of 2 cores busy, fake sampler" in warnings[0]
        assert any("free again" in r.getMessage() for r in caplog.records if r.levelname == "INFO")


def test_the_window_and_token_counts_come_from_the_model_itself(chat) -> None:  # type: ignore[no-untyped-def]
    from graphrag_got.search.budget import context_window, count_tokens

    assert context_window(chat) == chat.n_ctx > 0
    short, long = count_tokens(chat, "Hola"), count_tokens(chat, "Hola, ¿cómo se conocieron? " * 20)
    assert 0 < short < long < len("Hola, ¿cómo se conocieron? " * 20)  # real tokens, fewer than characters


def test_a_claims_answer_cites_only_the_context_ids(chat) -> None:  # type: ignore[no-untyped-def]
    """The claims format on the real model: valid JSON under the grammar, ids only from the context."""
    from graphrag_got.llm.calls import Attempt
    from graphrag_got.prompts import claims_answer_prompt
    from graphrag_got.search.claims import complete_claims, use_claims

    assert use_claims(Settings.load().with_overrides(answer_format="auto").search, chat)
    user = ("QUESTION: Who repairs the clock tower?\n\nFACTS:\n[F1] Mara REPAIRS Clock Tower\n"
            "[F2] Clock Tower LOCATED_IN Old Harbor\n\nAnswer the question from this context only.")
    attempt = Attempt()
    text = complete_claims(chat, claims_answer_prompt("English"), user, ["F1", "F2"], attempt, max_tokens=128)
    assert text and attempt.raw_responses and attempt.output_tokens > 0
    cited = re.findall(r"\[([^\]]*)\]", text)
    assert cited and all(i.strip() in {"F1", "F2"} for group in cited for i in group.split(","))
