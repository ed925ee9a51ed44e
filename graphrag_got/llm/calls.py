"""One call to a chat model, and plain-text answers.

:func:`invoke_model` sends messages with the keyword arguments each provider takes (JSON-schema
constraint, answer length), holds the lock the in-process llama.cpp needs, retries remote calls
with backoff (:mod:`graphrag_got.llm.providers.retry`), turns provider errors into
:class:`graphrag_got.errors.LLMError` (a prompt too long for the context window into
:class:`LLMContextError`) and counts tokens into an :class:`Attempt`. :func:`complete_text` asks for
free text; JSON answers are in :mod:`graphrag_got.llm.json_answers`.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphrag_got.common.sanitize import clean_text, replace_surrogates
from graphrag_got.errors import LLMError
from graphrag_got.llm.replay import ReplayChatModel

LLAMA_LOCK = threading.Lock()  # llama.cpp contexts are not thread-safe: one call at a time


class LLMOutputError(LLMError):
    """The model's answer could not be turned into the expected JSON, even after repair and a retry."""

    def __init__(self, message: str, raw_responses: list[str]):
        super().__init__(message)
        self.raw_responses = raw_responses


class LLMContextError(LLMOutputError):
    """The prompt does not fit in the model's context window.

    A property of this one input (a long chunk, a big community), not of the provider: callers
    that skip bad answers skip this input too, and the run goes on. ``raw_responses`` holds the
    answers received before the prompt grew too long (none when the first call overflowed); ``cut``: the
    last call answered, but the context filled before the answer ended (its cut text is the last raw response).
    """

    def __init__(self, message: str, raw_responses: list[str], *, cut: bool = False):
        super().__init__(message, raw_responses)
        self.cut = cut


@dataclass
class Attempt:
    """What it took to get one JSON answer: every raw response, and whether repair was needed."""

    raw_responses: list[str] = field(default_factory=list)
    repaired: bool = False
    retried: bool = False
    errors: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    transport_retries: int = 0  # calls tried again after HTTP 429/5xx or a connection error


def is_llamacpp(chat: BaseChatModel) -> bool:
    """In-process llama.cpp: our adapter, or LangChain's ChatLlamaCpp a user passes in."""
    return type(chat).__name__ in ("LlamaCppChatModel", "ChatLlamaCpp")


def is_embedded(chat: BaseChatModel) -> bool:
    """The embedded small model, in this process or served by our llama-server (prompts that suit small
    models, such as answers as claims, follow this)."""
    return is_llamacpp(chat) or getattr(chat, "embedded", False) is True


def constraint_kwargs(chat: BaseChatModel, schema: dict[str, Any] | None,
                      grammar: str | None = None, *, end_on_repeated_line: bool | str = False) -> dict[str, Any]:
    """The call arguments that constrain ``chat``'s decoding: a GBNF ``grammar`` where llama.cpp decodes
    (in process, or a server that turns out to be llama.cpp), else ``schema`` where the provider takes
    one; nothing where it takes neither (the prompt alone says the form). ``end_on_repeated_line``: the
    pool stops reading a streamed answer at its first repeated line (an answer of one item a line)."""
    name = type(chat).__name__
    if grammar is not None:
        if is_llamacpp(chat) and name == "LlamaCppChatModel":
            return {"grammar": grammar}
        if name == "OpenAIPoolChatModel":  # the grammar to the pool's llama.cpp servers, the schema to others
            return {"grammar": grammar, **({"json_schema": schema} if schema is not None else {}),
                    **({"end_on_repeated_line": end_on_repeated_line} if end_on_repeated_line else {})}
    if schema is None:
        return {}
    if name == "ChatOllama":
        return {"format": schema}
    if is_llamacpp(chat):
        # llama-cpp-python ignores {"type": "json_schema"}; only json_object + schema constrains.
        return {"response_format": {"type": "json_object", "schema": schema}}
    if name == "OpenAIPoolChatModel":
        return {"json_schema": schema}  # the pool picks the response_format form each server takes
    from graphrag_got.llm.providers.langchain_provider import profile_of

    profile = profile_of(chat)
    if profile is not None and profile.structured is not None:
        return {"structured_schema": schema}  # with_structured_output, see invoke_model
    return {}


def _length_kwargs(chat: BaseChatModel, max_tokens: int | None) -> dict[str, Any]:
    """Cap one call's answer length (small models can repeat a sentence until they run out of tokens)."""
    if max_tokens is None:
        return {}
    name = type(chat).__name__
    if is_llamacpp(chat):
        return {"max_tokens": max_tokens}
    if name == "ChatOllama":
        # `options` replaces the model's options wholesale, so repeat the ones we set
        return {"options": {"temperature": 0, "num_ctx": getattr(chat, "num_ctx", None) or 4096,
                            "num_predict": max_tokens}}
    if name == "OpenAIPoolChatModel":
        return {"max_tokens": max_tokens}
    return {}


# llama-cpp-python: ValueError("Requested tokens (N) exceed context window of M"); llama-server: "request (N
# tokens) exceeds the available context size"; other servers word it "context length exceeded" / "maximum
# context length".
_CONTEXT_OVERFLOW = re.compile(r"exceeds? (?:the )?context window|exceeds? the available context size|"
                               r"context length exceeded|maximum context length", re.IGNORECASE)


def invoke_model(chat: BaseChatModel, messages: list[BaseMessage], attempt: Attempt | None,
            max_tokens: int | None = None, **kwargs: Any) -> str:
    from graphrag_got.llm.providers.langchain_provider import profile_of, structured_invoke

    if not isinstance(chat, ReplayChatModel):
        kwargs.pop("replay_key", None)
    structured_schema = kwargs.pop("structured_schema", None)
    refuse_cut = kwargs.pop("refuse_cut", False)  # an answer cut by a full context raises (_check_not_cut_by_context)
    kwargs.update(_length_kwargs(chat, max_tokens))
    profile = profile_of(chat)
    retries = 0

    def call() -> tuple[BaseMessage, str | None]:
        if structured_schema is not None and profile is not None:
            return structured_invoke(chat, messages, structured_schema, profile, **kwargs)
        if is_llamacpp(chat):
            with LLAMA_LOCK:
                return chat.invoke(messages, **kwargs), None
        return chat.invoke(messages, **kwargs), None

    def count_retry(exc: BaseException, wait: float) -> None:
        nonlocal retries
        retries += 1

    try:
        if profile is not None:
            from graphrag_got.llm.providers.retry import call_with_retries

            msg, structured_text = call_with_retries(call, profile.policy, what=profile.label, on_retry=count_retry)
        else:
            msg, structured_text = call()
    except LLMError:
        raise
    except Exception as exc:  # provider errors vary (httpx, ollama.ResponseError, llama_cpp ValueError)
        if _CONTEXT_OVERFLOW.search(str(exc)):
            raise LLMContextError(
                f"the prompt does not fit in the model's context window ({exc}); this input is skipped. "
                "Use smaller chunks (GRAPHRAG_CHUNK_MAX_CHARS) or a larger context (GRAPHRAG_LLAMACPP_N_CTX)",
                raw_responses=[],
            ) from exc
        detail = " ".join(str(exc).split())[:500]  # one line: the CLI prints it as one `error:` line
        raise LLMError(f"the model call failed: {type(exc).__name__}: {detail}") from exc
    # the raw text is cached and audited as UTF-8: a lone surrogate must not make that write fail
    if structured_text is None:
        structured_text = msg.content if isinstance(msg.content, str) else json.dumps(msg.content)
    text = replace_surrogates(structured_text)
    if attempt is not None:
        attempt.transport_retries += retries + int((getattr(msg, "response_metadata", None) or {}).get("retries", 0))
        usage = getattr(msg, "usage_metadata", None) or {}
        if usage.get("input_tokens") is not None:
            attempt.input_tokens += int(usage.get("input_tokens") or 0)
            attempt.output_tokens += int(usage.get("output_tokens") or 0)
        else:  # provider gives no counts: estimate ~4 characters a token, and say so
            attempt.input_tokens += sum(len(str(m.content)) for m in messages) // 4
            attempt.output_tokens += len(text) // 4
            attempt.tokens_estimated = True
    if refuse_cut:
        _check_not_cut_by_context(msg, text, max_tokens or getattr(chat, "max_tokens", None))
    return text


#: an answer ended for its length this far short of the length it was allowed ran out of context instead
CUT_SHORT = 0.9


def _check_not_cut_by_context(msg: BaseMessage, text: str, allowed: Any) -> None:
    """Raise LLMContextError when the answer stopped because the context window was full: the server
    says it stopped for length (``finish_reason`` "length") well before the answer length allowed. A
    server without a context shift (llama.cpp's) then returns the cut answer as if it were whole; read,
    repaired and validated it would pass for a short answer, silently. The cut text is kept."""
    meta = getattr(msg, "response_metadata", None) or {}
    usage = getattr(msg, "usage_metadata", None) or {}
    cap = meta.get("max_tokens") or allowed
    written, prompt = usage.get("output_tokens"), usage.get("input_tokens")
    if meta.get("finish_reason") != "length" or written is None or not isinstance(cap, int) or cap <= 0:
        return
    if written < cap * CUT_SHORT:
        raise LLMContextError(
            f"the answer was cut after {written} tokens (of the {cap} allowed): the prompt ({prompt} tokens) and the "
            "answer filled the model's context window. Use fewer corrected passages in a prompt "
            "(GRAPHRAG_EXAMPLES_PER_PROMPT), smaller chunks (GRAPHRAG_CHUNK_MAX_CHARS) or a larger context "
            "(GRAPHRAG_LLAMACPP_N_CTX)", raw_responses=[text], cut=True)


def complete_text(chat: BaseChatModel, system: str, user: str, attempt: Attempt | None = None,
                  max_tokens: int | None = None) -> str:
    """A plain-text answer (at most ``max_tokens`` long when given), without repeated sentences,
    cleaned like every string of a model answer (:func:`graphrag_got.common.sanitize.clean_text`)."""
    # Free text may take a mild repetition penalty (JSON may not: it repeats keys by design).
    extra = {"repeat_penalty": 1.1} if is_embedded(chat) else {}
    text = invoke_model(chat, [SystemMessage(content=system), HumanMessage(content=user)], attempt, max_tokens, **extra)
    return drop_repeated_sentences(clean_text(text).strip())


def drop_repeated_sentences(text: str) -> str:
    """Keep the first occurrence of each sentence: small models loop on the same sentence."""
    seen: set[str] = set()
    kept: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", text.strip()):
        key = " ".join(sentence.lower().split())
        if key and key not in seen:
            seen.add(key)
            kept.append(sentence)
    return " ".join(kept)
