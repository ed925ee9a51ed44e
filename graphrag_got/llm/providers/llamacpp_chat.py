"""The embedded provider: a small LangChain chat model of ours over ``llama_cpp.Llama``.

Why not ``langchain_community.chat_models.ChatLlamaCpp``: that class is in a community package
whose LlamaCpp integrations are deprecated, its defaults are wrong for modern models (it overrides
Qwen's rope base and adds a repeat penalty, see ../shared/notes/offline-llm.md), and it drops what
we need to measure: the token counts llama.cpp reports and how much of the prompt was served from
the KV cache. This adapter does only what the toolkit uses:

- chat messages in, one completion out, at temperature 0;
- ``response_format={"type": "json_object", "schema": ...}`` passed through (the only form that
  constrains llama-cpp-python's output), ``max_tokens`` and ``repeat_penalty`` per call;
- real ``usage_metadata`` (prompt and completion tokens) and, in ``response_metadata``,
  ``prefix_reused``: the prompt tokens llama.cpp did not evaluate again because the previous call
  began with the same tokens. The extraction prompt puts the ontology (the same for every chunk)
  before the chunk, so every call after the first reuses the whole system part.

JSON answers are generated under :class:`~graphrag_got.llm.providers.loop_guard.JsonLoopGuard`
(``loop_guard``, on by default): a list the model has started to repeat is closed instead of being
filled with copies up to its ``maxItems``; ``response_metadata["loop_closed"]`` counts the lists
closed in a call.

Threads: ``n_threads`` is the most the model uses. With ``adaptive_threads`` (the default) every
call first samples the cores free at that moment (:mod:`graphrag_got.llm.cpu_threads`, ~150 ms) and runs
with no more threads than free cores, at least one; the busy-cores warning is read from the same
sample and logged when the choice changes, not at every call. ``response_metadata["threads"]`` and
``["cores_busy"]`` say what a call used and saw.

One ``Llama`` is not thread-safe: callers serialize calls (``graphrag_got.llm.calls`` holds a lock).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

from graphrag_got.llm.cpu_threads import CpuSample, Sampler, busy_cores_warning, choose_threads, sample_cpu

logger = logging.getLogger(__name__)

_PASSED = ("response_format", "max_tokens", "repeat_penalty", "stop")


def _role(message: BaseMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, HumanMessage):
        return "user"
    if isinstance(message, AIMessage):
        return "assistant"
    return "user"


class PrefixStats:
    """Prompt tokens evaluated vs reused from the KV cache, over the life of one model."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompt_tokens = 0
        self.reused_tokens = 0
        self._lock = threading.Lock()

    def add(self, prompt: int, reused: int) -> None:
        with self._lock:
            self.calls += 1
            self.prompt_tokens += prompt
            self.reused_tokens += reused

    @property
    def hit_ratio(self) -> float:
        return self.reused_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class LlamaCppChatModel(BaseChatModel):
    """In-process llama.cpp behind LangChain's chat-model interface (see the module docstring)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_path: str
    n_ctx: int = 4096
    n_threads: int = 2  # the most threads; fewer when cores are busy (adaptive_threads)
    adaptive_threads: bool = True
    n_batch: int = 512
    max_tokens: int = 1024
    seed: int = 0
    loop_guard: bool = True
    loop_repeats: int = 2
    _llama: Any = PrivateAttr(default=None)
    _tokens: Any = PrivateAttr(default=None)
    _stats: PrefixStats = PrivateAttr(default_factory=PrefixStats)
    _sampler: Sampler | None = PrivateAttr(default=None)  # None: sample_cpu; tests put a fake here
    _threads_now: int | None = PrivateAttr(default=None)  # what the llama.cpp context is set to
    _warned: str | None = PrivateAttr(default=None)  # the busy-cores state last logged

    def model_post_init(self, context: Any) -> None:
        import llama_cpp

        # rope_freq_base/scale 0 = the model's own values; no repeat penalty for JSON (keys repeat).
        self._llama = llama_cpp.Llama(model_path=self.model_path, n_ctx=self.n_ctx, n_batch=self.n_batch,
                                      n_threads=self.n_threads, n_threads_batch=self.n_threads,
                                      seed=self.seed, verbose=False,
                                      rope_freq_base=0.0, rope_freq_scale=0.0)
        self._threads_now = self.n_threads

    def close(self) -> None:
        """Free the model and its context now (the adapter is unusable afterwards)."""
        if self._llama is not None:
            self._llama.close()
            self._llama = None

    @property
    def context_window(self) -> int:
        """Tokens one call holds, prompt and answer together (what ``search.budget`` fits contexts to)."""
        return self.n_ctx

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer."""
        return len(self._llama.tokenize(text.encode("utf-8"), add_bos=False, special=False))

    def set_cpu_sampler(self, sampler: Sampler) -> None:
        """Where each call's CPU sample comes from (default: :func:`graphrag_got.llm.cpu_threads.sample_cpu`)."""
        self._sampler = sampler

    def _threads_for_call(self) -> tuple[int, CpuSample | None]:
        """Sample the cores, pick this call's threads, set them on the context, log a change of state."""
        import llama_cpp

        sample = (self._sampler or sample_cpu)()
        threads = choose_threads(sample, self.n_threads) if self.adaptive_threads else self.n_threads
        if threads != self._threads_now:
            llama_cpp.llama_set_n_threads(self._llama.ctx, threads, threads)  # generation and prompt batches
            self._threads_now = threads
        warning = busy_cores_warning(threads, sample, wanted=self.n_threads)
        state = None if warning is None else f"{threads}/{self.n_threads}"
        if warning is not None and state != self._warned:
            logger.warning(warning)
        elif warning is None and self._warned is not None:
            logger.info("the cores are free again (%s): the embedded model runs with %d thread(s)",
                           sample.describe() if sample else "not measured", threads)
        else:
            logger.debug("embedded model call: %d thread(s); %s", threads,
                         sample.describe() if sample else "cores not measured")
        self._warned = state
        return threads, sample

    @property
    def _llm_type(self) -> str:
        return "llamacpp-embedded"

    def _grammar(self, text: str) -> Any:
        import llama_cpp

        cache = self.__dict__.setdefault("_grammars", {})
        if text not in cache:
            cache.clear()  # one ontology's grammar at a time is what a run uses
            cache[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return cache[text]

    @property
    def prefix_stats(self) -> PrefixStats:
        return self._stats

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        params: dict[str, Any] = {"temperature": 0.0, "max_tokens": self.max_tokens, "repeat_penalty": 1.0,
                                  "seed": self.seed}
        params.update({k: v for k, v in kwargs.items() if k in _PASSED and v is not None})
        if stop:
            params["stop"] = stop
        if kwargs.get("grammar"):  # a GBNF grammar (an answer form without JSON): compiled once per text
            params["grammar"] = self._grammar(str(kwargs["grammar"]))
        llama = self._llama
        guard = None
        if self.loop_guard and params.get("response_format"):
            import llama_cpp

            from graphrag_got.llm.providers.loop_guard import JsonLoopGuard, TokenTable

            if self._tokens is None:
                self._tokens = TokenTable.of(llama)
            guard = JsonLoopGuard(self._tokens, self.loop_repeats)
            params["logits_processor"] = llama_cpp.LogitsProcessorList([guard])
        threads, sample = self._threads_for_call()
        before = [int(t) for t in llama._input_ids]  # what the KV cache holds from the previous call
        out = llama.create_chat_completion(
            messages=[{"role": _role(m), "content": str(m.content)} for m in messages], **params)
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        after = [int(t) for t in llama._input_ids[:prompt_tokens]]
        reused = 0
        for a, b in zip(before, after):
            if a != b:
                break
            reused += 1
        self._stats.add(prompt_tokens, reused)
        text = out["choices"][0]["message"].get("content") or ""
        closed = guard.closed if guard is not None else 0
        if closed:
            logger.info("loop guard: closed %d list(s) the model had started to repeat", closed)
        message = AIMessage(
            content=text,
            usage_metadata={"input_tokens": prompt_tokens, "output_tokens": int(usage.get("completion_tokens") or 0),
                            "total_tokens": int(usage.get("total_tokens") or 0)},
            response_metadata={"prefix_reused": reused, "finish_reason": out["choices"][0].get("finish_reason"),
                               "loop_closed": closed, "threads": threads,
                               "cores_busy": round(sample.busy, 2) if sample else None},
        )
        return ChatResult(generations=[ChatGeneration(message=message)])
