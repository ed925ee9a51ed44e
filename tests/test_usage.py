"""Tokens and cost per step: local models cost nothing, remote ones their configured price."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import Extraction
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.ontology.model import Ontology
from graphrag_got.llm.usage import cost_usd, usage_line

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


def test_cost_is_zero_locally_unknown_remotely_and_priced_when_given() -> None:
    s = Settings()
    assert cost_usd(s.llm, "llamacpp", 1000, 1000) == 0.0
    assert cost_usd(s.llm, "openai", 1000, 1000) is None
    priced = s.with_overrides(llm_price="0.5, 2")
    assert cost_usd(priced.llm, "openai", 2_000_000, 500_000) == pytest.approx(2.0)
    assert "cost unknown (set GRAPHRAG_LLM_PRICE)" in usage_line(3, 10, 5, None)
    assert usage_line(3, 10, 5, 0.0).endswith("no cost (local model)")
    assert usage_line(3, 10, 5, 1.23456, estimated=True) == \
        "LLM calls 3; tokens in/out 10/5 (estimated); cost $1.2346"


@pytest.mark.parametrize("bad", ["1", "a,b", "1,2,3", "-1,2"])
def test_a_bad_price_says_what_is_expected(bad: str) -> None:
    with pytest.raises(ConfigError, match="GRAPHRAG_LLM_PRICE"):
        cost_usd(Settings().with_overrides(llm_price=bad).llm, "openai", 1, 1)


class _Empty(ReplayChatModel):
    """Answers every call with an empty extraction (and no token counts, like many servers)."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        return ChatResult(generations=[ChatGeneration(message=AIMessage(
            content=json.dumps({"entities": [], "relations": []})))])


def test_the_extraction_file_stores_usage_and_the_summary_prints_it(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "a.txt").write_text("Un texto bastante largo para ser un fragmento.\n", encoding="utf-8")
    chat = _Empty()
    settings = Settings(home=tmp_path / "h", out_dir=tmp_path / "o", chunk_min_chars=5, ontology_path=GOT)
    summary = run_extraction(settings.extract, Ontology.from_file(GOT), corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    ext = Extraction.read(summary.out_path)
    assert ext.usage.calls == 1 and ext.usage.input_tokens > 0 and ext.usage.tokens_estimated
    assert ext.usage.cost_usd is None  # a custom chat model: no known price
    assert summary.usage.startswith("LLM calls 1; tokens in/out ")
    again = run_extraction(settings.extract, Ontology.from_file(GOT), corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.usage.startswith("LLM calls 0; tokens in/out 0/0")
    assert Extraction.read(again.out_path).usage.calls == 1  # the stored answers' calls, not this run's
