"""How many calls to keep in flight at once: what the model's server says it can take.

Serving engines decode several sequences in one batch, so a server kept busy with as many calls as it
has slots answers more per second than one called one call at a time. ``GRAPHRAG_CONCURRENCY`` unset:

* llama.cpp's ``llama-server`` (the embedded one, or any in a pool): the slots it reports (``/props``
  ``total_slots``), summed over the servers of a pool;
* other OpenAI-compatible servers and APIs: :data:`DEFAULT_SLOTS` (4, LightRAG's default) per server;
* Ollama: ``OLLAMA_NUM_PARALLEL`` when it is set in our environment (the server's own setting cannot be
  read over its API), else :data:`DEFAULT_SLOTS` (calls beyond its parallel setting wait in its queue);
* a LangChain model: :data:`DEFAULT_SLOTS`;
* the in-process model: 1 (one llama.cpp context answers one call at a time); the replay provider and
  chat models we do not know: 1.

``GRAPHRAG_CONCURRENCY`` set: that many (with a pool at least one per server), except for the in-process
model, which stays at 1.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from graphrag_got.config import LLMSettings
from graphrag_got.llm.calls import is_llamacpp
from graphrag_got.llm.providers.openai_pool import DEFAULT_SLOTS, OpenAIPoolChatModel


@dataclass(frozen=True)
class InFlight:
    """Calls to keep in flight, and where the number comes from (for messages)."""

    calls: int
    why: str


def _ollama_parallel() -> int | None:
    try:
        value = int(os.environ.get("OLLAMA_NUM_PARALLEL", ""))
    except ValueError:
        return None
    return value if value > 0 else None


def calls_in_flight(llm: LLMSettings, chat: Any) -> InFlight:
    """Calls to send ``chat`` at once (see the module docstring)."""
    from graphrag_got.llm.providers.langchain_provider import profile_of

    wanted = llm.concurrency
    if is_llamacpp(chat):
        return InFlight(1, "the in-process model answers one call at a time")
    if isinstance(chat, OpenAIPoolChatModel):
        servers = len(chat.pool.servers)
        if wanted:
            return InFlight(max(wanted, servers), f"GRAPHRAG_CONCURRENCY={wanted}, at least one per server")
        what = "llama-server's slots" if chat.embedded else f"the slots of {servers} server(s) (or {DEFAULT_SLOTS} each)"
        return InFlight(max(1, chat.capacity()), what)
    if wanted:
        return InFlight(wanted, f"GRAPHRAG_CONCURRENCY={wanted}")
    if type(chat).__name__ == "ChatOllama":
        parallel = _ollama_parallel()
        if parallel:
            return InFlight(parallel, "OLLAMA_NUM_PARALLEL")
        return InFlight(DEFAULT_SLOTS, f"Ollama's parallel setting is not readable: {DEFAULT_SLOTS}")
    if profile_of(chat) is not None:
        return InFlight(DEFAULT_SLOTS, f"default for a remote model: {DEFAULT_SLOTS}")
    return InFlight(1, "one call at a time (GRAPHRAG_CONCURRENCY raises it)")
