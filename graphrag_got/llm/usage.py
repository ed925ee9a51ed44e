"""Tokens and cost: what a step's model calls used, and what they cost where a price is known.

:class:`LLMUsage` adds up the calls and tokens of one operation (results that call the model
inherit it), from the :class:`graphrag_got.llm.calls.Attempt` of each answer.

Prices change and differ per account, so none is built in: ``GRAPHRAG_LLM_PRICE="IN,OUT"`` gives
US dollars per million input and output tokens of the configured remote model. Local providers
(the embedded llama.cpp, Ollama, replayed answers) cost nothing; a remote provider without a price
has an unknown cost (None), printed as such rather than guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from graphrag_got.config import LLMSettings
from graphrag_got.errors import ConfigError

if TYPE_CHECKING:
    from graphrag_got.llm.calls import Attempt

LOCAL_PROVIDERS = frozenset({"llamacpp", "ollama", "replay"})


@dataclass(kw_only=True)
class LLMUsage:
    """Calls and tokens spent by one operation; results that call the model inherit it."""

    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    transport_retries: int = 0

    def count(self, attempt: Attempt | None, calls: int) -> None:
        self.llm_calls += calls
        if attempt is not None:
            self.input_tokens += attempt.input_tokens
            self.output_tokens += attempt.output_tokens
            self.tokens_estimated = self.tokens_estimated or attempt.tokens_estimated
            self.transport_retries += attempt.transport_retries


def prices(llm: LLMSettings) -> tuple[float, float] | None:
    """(input, output) dollars per million tokens from GRAPHRAG_LLM_PRICE, or None when unset."""
    text = (llm.price or "").strip()
    if not text:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) != 2 or any(v < 0 or v != v for v in values):
        raise ConfigError(f"GRAPHRAG_LLM_PRICE={text!r}: expected two numbers 'IN,OUT' (dollars per million "
                          "input and output tokens), e.g. '0.27,1.10'")
    return values[0], values[1]


def cost_usd(llm: LLMSettings, provider: str, input_tokens: int, output_tokens: int) -> float | None:
    """The cost of these tokens: 0 for local providers, None when the price is not known."""
    price = prices(llm)
    if price is None:
        return 0.0 if provider in LOCAL_PROVIDERS else None
    return round(input_tokens / 1e6 * price[0] + output_tokens / 1e6 * price[1], 6)


def usage_line(calls: int, input_tokens: int, output_tokens: int, cost: float | None, *,
               estimated: bool = False) -> str:
    est = " (estimated)" if estimated else ""
    money = "cost unknown (set GRAPHRAG_LLM_PRICE)" if cost is None else (
        "no cost (local model)" if cost == 0 else f"cost ${cost:.4f}")
    return f"LLM calls {calls}; tokens in/out {input_tokens}/{output_tokens}{est}; {money}"
