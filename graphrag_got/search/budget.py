"""Fit an answer's numbered sources into the model's context window.

Retrieval bounds the number of facts and excerpts, not their length: with the embedded model's
4,096-token window a question about a well-connected entity produced a 4,406-token prompt, and
llama.cpp refused the call (the answer was lost). Before an answer call, :func:`fit_sources` keeps
the longest prefix of the sources whose prompt leaves room for the answer. Sources are numbered by
rank (facts first, then excerpts; reports first in DRIFT), so the least useful go first, and the ids
stay those the model will see (a prefix keeps F1..Fk unchanged).

The window is known for the embedded model (``context_window``, tokens counted with its own
tokenizer) and for Ollama (``num_ctx``, counted as characters / 3, which over-counts Latin text);
other providers leave the context as it is (their windows are far larger than a local context).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

log = logging.getLogger(__name__)

#: Tokens kept free beyond the answer's own budget: the chat template's role markers.
TEMPLATE_MARGIN = 64

S = TypeVar("S")


def context_window(chat: Any) -> int | None:
    """Tokens one call of ``chat`` can hold (prompt and answer), or None when unknown."""
    for attr in ("context_window", "num_ctx"):
        value = getattr(chat, attr, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def count_tokens(chat: Any, text: str) -> int:
    """Tokens of ``text`` for ``chat``: its own tokenizer where it has one, else characters / 3."""
    counter = getattr(chat, "count_tokens", None)
    if callable(counter):
        n = counter(text)  # None: this model cannot count (a pool of remote servers)
        if n is not None:
            return int(n)
    return len(text) // 3 + 1


def fit_sources(chat: Any, system: str, render: Callable[[Sequence[S]], str], sources: Sequence[S],
                answer_tokens: int) -> tuple[list[S], int]:  # fmt: skip
    """The longest prefix of ``sources`` whose prompt (``system`` + ``render(prefix)``) leaves
    ``answer_tokens`` free in the window, and how many sources were left out."""
    window = context_window(chat) if chat is not None else None
    if window is None:
        return list(sources), 0
    budget = window - answer_tokens - TEMPLATE_MARGIN

    def fits(n: int) -> bool:
        return count_tokens(chat, system) + count_tokens(chat, render(sources[:n])) <= budget

    if fits(len(sources)):
        return list(sources), 0
    lo, hi = 0, len(sources)  # fits(lo) is assumed (an empty context); find the largest n that fits
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    dropped = len(sources) - lo
    log.info("context trimmed to fit the model's %d-token window: %d of %d sources left out", window, dropped,
             len(sources))
    return list(sources[:lo]), dropped


__all__ = ["TEMPLATE_MARGIN", "context_window", "count_tokens", "fit_sources"]
