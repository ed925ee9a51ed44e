"""Any LangChain chat model from an ``init_chat_model`` string (``deepseek:deepseek-chat``, ``openai:gpt-4o-mini``...).

The integration package (``langchain-deepseek``, ``langchain-anthropic``...) is the user's to
install; a missing one is one :class:`~graphrag_got.errors.LLMError` naming it.

JSON answers use the model's structured output with our generated schema: ``json_schema`` where
the integration supports it, tool calling otherwise, and plain text (parsed, repaired and retried
by :func:`graphrag_got.llm.json_answers.complete_json`) when neither works. The method that works is remembered
per model. The text kept for the cache and the audit is the JSON of the structured result, or the
raw text/tool arguments when the structured result could not be parsed.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage

from graphrag_got.errors import LLMError
from graphrag_got.llm.providers.retry import RetryPolicy, status_of

logger = logging.getLogger(__name__)

StructuredMethod = Literal["auto", "json_schema", "function_calling", "none"]
_METHOD_ORDER: tuple[str, ...] = ("json_schema", "function_calling", "none")
_PIP = re.compile(r"pip install (?:-U )?[`'\"]?([A-Za-z0-9_.\-\[\]]+)")


@dataclass
class ChatProfile:
    """How :mod:`graphrag_got.llm.calls` calls one chat model we built: its retry policy and structured output."""

    label: str
    policy: RetryPolicy
    structured: StructuredMethod | None = None  # None: the provider has its own constraint (Ollama format)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def methods(self) -> list[str]:
        """The structured-output methods still worth trying, best first."""
        if self.structured in (None, "none"):
            return []
        if self.structured == "auto":
            return list(_METHOD_ORDER[:-1])
        return [self.structured]

    def step_down(self, method: str, why: str) -> None:
        """Stop using ``method`` for this model (it is refused or unsupported)."""
        with self._lock:
            if self.structured in (None, "none"):
                return
            current = self.methods()
            if method not in current:
                return
            following = _METHOD_ORDER[_METHOD_ORDER.index(method) + 1]
            logger.info("%s: structured output %r is not available (%s); using %r", self.label, method, why,
                        following)
            self.structured = following  # type: ignore[assignment]


# Profiles of the chat models we built, by identity; dropped when the model is collected.
_PROFILES: dict[int, ChatProfile] = {}


def register(chat: BaseChatModel, profile: ChatProfile) -> BaseChatModel:
    key = id(chat)
    _PROFILES[key] = profile
    try:
        weakref.finalize(chat, _PROFILES.pop, key, None)
    except TypeError:  # a class without weak references: the entry stays (one small object)
        pass
    return chat


def profile_of(chat: BaseChatModel) -> ChatProfile | None:
    return _PROFILES.get(id(chat))


# ---------------------------------------------------------------------------- building
_MAX_TOKENS_NAMES = ("max_tokens", "max_output_tokens", "num_predict")


def _field_names(cls: type) -> set[str]:
    """Field names and aliases of a pydantic chat model class."""
    names: set[str] = set()
    for name, info in getattr(cls, "model_fields", {}).items():
        names.add(name)
        if isinstance(info.alias, str):
            names.add(info.alias)
    return names


def package_to_install(exc: ImportError) -> str:
    """The pip package an integration import error asks for (LangChain's message, else the module's name)."""
    m = _PIP.search(str(exc))
    if m:
        return m.group(1).rstrip("`.")
    module = (getattr(exc, "name", None) or "").split(".")[0]
    return module.replace("_", "-") if module else "the provider's langchain-* package"


def init_langchain_model(spec: str | None, *, max_tokens: int, timeout_s: float,
                         base_url: str | None = None) -> BaseChatModel:
    """``init_chat_model(spec)`` at temperature 0, with our answer length and timeout where the class takes them.

    The SDK's own retries are turned off (``max_retries=0``) where the class has that field: the
    calls are retried by :func:`graphrag_got.llm.providers.retry.call_with_retries`, which counts them.
    """
    if not spec or not spec.strip():
        raise LLMError("provider 'langchain' needs a model: --model PROVIDER:MODEL (an init_chat_model string such "
                       "as openai:gpt-4o-mini or deepseek:deepseek-chat) or GRAPHRAG_LANGCHAIN_MODEL")
    spec = spec.strip()
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:  # pragma: no cover - langchain is a dependency
        raise LLMError(f"cannot import langchain.chat_models ({exc}): pip install langchain") from None
    base: dict[str, Any] = {"temperature": 0}
    if base_url:
        base["base_url"] = base_url
    chat = _build(init_chat_model, spec, base)
    fields = _field_names(type(chat))
    extra: dict[str, Any] = {}
    for name in _MAX_TOKENS_NAMES:
        if name in fields:
            extra[name] = max_tokens
            break
    if fields & {"timeout", "request_timeout", "default_request_timeout"}:
        extra["timeout"] = timeout_s
    if "max_retries" in fields:
        extra["max_retries"] = 0
    return _build(init_chat_model, spec, {**base, **extra}) if extra else chat


def _build(init: Any, spec: str, kwargs: dict[str, Any]) -> BaseChatModel:
    try:
        chat = init(spec, **kwargs)
    except ImportError as exc:
        pkg = package_to_install(exc)
        raise LLMError(f"the LangChain model {spec!r} needs the package {pkg}, which is not installed: run "
                       f"`pip install {pkg}` in this environment, then rerun.") from None
    except ValueError as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise LLMError(f"cannot build the LangChain model {spec!r}: {first} Write it as PROVIDER:MODEL, "
                       "e.g. openai:gpt-4o-mini or deepseek:deepseek-chat.") from None
    except Exception as exc:  # an integration refusing its settings, e.g. no API key in the environment
        text = " ".join(str(exc).split())[:300]
        raise LLMError(f"cannot build the LangChain model {spec!r}: {type(exc).__name__}: {text} "
                       "(check the provider's API key variable and settings)") from None
    if not isinstance(chat, BaseChatModel):
        raise LLMError(f"init_chat_model({spec!r}) did not return a chat model: pick a chat model")
    return chat


# ---------------------------------------------------------------------------- calling
def _titled(schema: dict[str, Any]) -> dict[str, Any]:
    """Structured output needs a name for the schema (function name / json_schema name)."""
    out = dict(schema)
    out.setdefault("title", "answer")
    out.setdefault("description", "The answer, as one JSON object.")
    return out


def _refuses(exc: BaseException) -> bool:
    """An API saying it does not support the structured-output request (as opposed to being down)."""
    text = str(exc).lower()
    return status_of(exc) in (400, 404, 422) and any(
        w in text for w in ("response_format", "json_schema", "tool", "function"))


def raw_text(message: AIMessage) -> str:
    """What the model sent: the first tool call's arguments as JSON, else the text content."""
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return json.dumps(calls[0].get("args", {}), ensure_ascii=False)
    content = message.content
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def structured_invoke(chat: BaseChatModel, messages: list[BaseMessage], schema: dict[str, Any],
                      profile: ChatProfile, **kwargs: Any) -> tuple[AIMessage, str]:
    """One call with structured output (stepping down methods that are refused); returns (raw message, text)."""
    for method in profile.methods():
        try:
            runnable = chat.with_structured_output(_titled(schema), method=method, include_raw=True)
        except (NotImplementedError, ValueError, TypeError) as exc:
            profile.step_down(method, f"{type(exc).__name__}: {exc}")
            continue
        try:
            out = runnable.invoke(messages)
        except Exception as exc:
            if _refuses(exc):
                profile.step_down(method, " ".join(str(exc).split())[:200])
                continue
            raise
        raw = out.get("raw") if isinstance(out, dict) else None
        if not isinstance(raw, AIMessage):
            raise LLMError(f"{profile.label}: structured output returned no raw message; "
                           "set GRAPHRAG_STRUCTURED_OUTPUT=none")
        parsed = out.get("parsed")
        if isinstance(parsed, (dict, list)):
            return raw, json.dumps(parsed, ensure_ascii=False)
        return raw, raw_text(raw)  # unparsable: complete_json repairs or retries it
    msg = chat.invoke(messages, **kwargs)
    return msg, raw_text(msg)  # type: ignore[arg-type]
