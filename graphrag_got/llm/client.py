"""Chat models (Ollama, in-process llama.cpp, OpenAI-compatible pools, any LangChain model, replay)
and getting JSON out of them reliably.

Every provider is a LangChain chat model. For Ollama, llama.cpp and OpenAI-compatible servers we
ask for raw text constrained by a JSON schema (Ollama's ``format``, ``response_format``) rather
than ``with_structured_output``: the raw answer must be kept for the cache, the audit and
``--revalidate``, and per-item validation happens in :mod:`graphrag_got.extract.validate`, not in the
parser. A LangChain model of any other provider uses its structured output
(:mod:`graphrag_got.llm.providers.langchain_provider`), and the JSON text of the result is what we
keep. Remote calls are retried with backoff (:mod:`graphrag_got.llm.providers.retry`).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import json_repair
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from graphrag_got.config import Settings
from graphrag_got.errors import LLMError

if TYPE_CHECKING:
    from graphrag_got.llm.providers.retry import RetryPolicy
from graphrag_got.common.sanitize import MAX_JSON_DEPTH, clean_json, clean_text, replace_surrogates

logger = logging.getLogger(__name__)

T = TypeVar("T", bound=BaseModel)


class LLMOutputError(LLMError):
    """The model's answer could not be turned into the expected JSON, even after repair and a retry."""

    def __init__(self, message: str, raw_responses: list[str]):
        super().__init__(message)
        self.raw_responses = raw_responses


class LLMContextError(LLMOutputError):
    """The prompt does not fit in the model's context window.

    A property of this one input (a long chunk, a big community), not of the provider: callers
    that skip bad answers skip this input too, and the run goes on. ``raw_responses`` holds the
    answers received before the prompt grew too long (none when the first call overflowed).
    """


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


# ---------------------------------------------------------------------------- replay provider
class ReplayChatModel(BaseChatModel):
    """Answers from recorded responses, so saved output of any model can be validated without it.

    ``responses`` maps a key (a chunk hash or chunk id, passed as the ``replay_key`` call argument)
    to the successive raw answers recorded for it; ``fallback`` answers calls without a key, in order.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    responses: dict[str, list[str]] = {}
    fallback: list[str] = []
    source: str = "<memory>"
    _used: dict[str, int] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "replay"

    @classmethod
    def from_file(cls, path: str | Path) -> "ReplayChatModel":
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise LLMError(f"{p}: replay file not found (set GRAPHRAG_REPLAY_FILE or --replay-file)") from None
        except json.JSONDecodeError as exc:
            raise LLMError(f"{p}:{exc.lineno}:{exc.colno}: replay file is not valid JSON: {exc.msg}") from None
        except IsADirectoryError:
            raise LLMError(f"{p}: is a folder; pass the replay file itself (--replay-file FILE)") from None
        except UnicodeDecodeError as exc:
            raise LLMError(f"{p}: replay file is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
        except RecursionError:
            raise LLMError(f"{p}: replay file is nested too deeply to be a replay file") from None
        except OSError as exc:
            raise LLMError(f"{p}: cannot read the replay file ({exc.strerror})") from None
        if not isinstance(data, dict) or not isinstance(data.get("responses"), list):
            raise LLMError(f"{p}: a replay file is an object with a 'responses' list "
                           "(write one with `graphrag-got extract --export-replay FILE`)")
        responses: dict[str, list[str]] = {}
        for i, rec in enumerate(data["responses"]):
            if not isinstance(rec, dict) or not isinstance(rec.get("responses"), list):
                raise LLMError(f"{p}: $.responses[{i}] must be an object with a 'responses' list of strings")
            for key in (rec.get("chunk_hash"), rec.get("chunk_id")):
                if key:
                    responses[str(key)] = [str(r) for r in rec["responses"]]
        return cls(responses=responses, fallback=[str(x) for x in data.get("fallback", [])], source=str(p))

    def _next(self, key: str | None) -> str:
        with self._lock:
            slot = key if key is not None else "\0fallback"
            n = self._used.get(slot, 0)
            self._used[slot] = n + 1
        seq = self.responses.get(key, []) if key is not None else self.fallback
        if n < len(seq):
            return seq[n]
        if key is not None and key not in self.responses:
            raise LLMError(f"replay file {self.source} has no recorded response for chunk {key}")
        if key is not None:  # recorded, but fewer answers than calls: repeat the last one
            return seq[-1]
        raise LLMError(f"replay file {self.source} has no more fallback responses")

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        text = self._next(kwargs.get("replay_key"))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


# ---------------------------------------------------------------------------- building models
_LLAMA_CACHE: dict[tuple[Any, ...], BaseChatModel] = {}
_LLAMA_LOCK = threading.Lock()  # llama.cpp contexts are not thread-safe: one call at a time


def ollama_available(settings: Settings, timeout: float = 1.5) -> tuple[bool, list[str]]:
    """Whether an Ollama server answers at ``settings.ollama_base_url``, and which models it has."""
    url = settings.ollama_base_url.rstrip("/") + "/api/tags"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (configured URL)
            data = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return False, []
    return True, [m.get("name", "") for m in data.get("models", [])]


def resolve_provider(settings: Settings) -> str:
    """``auto``: replay when a replay file is set, then a configured LangChain model, then configured
    OpenAI-compatible base URLs, then Ollama when it answers and has the model, else embedded llama.cpp."""
    if settings.llm_provider != "auto":
        return settings.llm_provider
    if settings.replay_file:
        return "replay"
    if settings.langchain_model:
        return "langchain"
    if settings.openai_base_urls:
        return "openai"
    up, models = ollama_available(settings)
    if up and _has_model(models, settings.ollama_model):
        return "ollama"
    return "llamacpp"


def _has_model(models: list[str], wanted: str) -> bool:
    return wanted in models or (":" not in wanted and f"{wanted}:latest" in models)


def model_label(settings: Settings, provider: str | None = None) -> str:
    """A stable name of the model in use (part of the cache key)."""
    provider = provider or resolve_provider(settings)
    if provider == "ollama":
        return f"ollama:{settings.ollama_model}"
    if provider == "llamacpp":
        return f"llamacpp:{Path(settings.llamacpp_model).name}"
    if provider == "openai":
        return f"openai:{openai_model_name(settings)}"
    if provider == "langchain":
        if not settings.langchain_model:
            raise LLMError("provider 'langchain' needs a model: --model PROVIDER:MODEL (an init_chat_model string "
                           "such as openai:gpt-4o-mini or deepseek:deepseek-chat) or GRAPHRAG_LANGCHAIN_MODEL")
        return f"langchain:{settings.langchain_model}"
    return f"replay:{Path(str(settings.replay_file)).name}"


def get_chat_model(settings: Settings, provider: str | None = None) -> BaseChatModel:
    provider = provider or resolve_provider(settings)
    if provider == "ollama":
        return _ollama(settings)
    if provider == "llamacpp":
        return _llamacpp(settings)
    if provider == "openai":
        return _openai_pool(settings)
    if provider == "langchain":
        return _langchain(settings)
    if provider == "replay":
        if not settings.replay_file:
            raise LLMError("provider 'replay' needs a file: set GRAPHRAG_REPLAY_FILE or pass --replay-file")
        return ReplayChatModel.from_file(settings.replay_file)
    raise LLMError(f"unknown LLM provider {provider!r}: use auto, ollama, llamacpp, openai, langchain or replay")


def retry_policy(settings: Settings) -> "RetryPolicy":
    from graphrag_got.llm.providers.retry import RetryPolicy

    return RetryPolicy(retries=settings.llm_retries, backoff_s=settings.llm_backoff_s)


def openai_base_urls(settings: Settings) -> list[str]:
    """The pool of the ``openai`` provider: the configured base URLs, else the OpenAI API."""
    from graphrag_got.llm.providers.openai_pool import OPENAI_API_URL

    return list(settings.openai_base_urls) or [OPENAI_API_URL]


def _api_key(settings: Settings) -> str | None:
    return settings.openai_api_key.get_secret_value() if settings.openai_api_key else None


def openai_model_name(settings: Settings) -> str:
    """The configured model of the ``openai`` provider, else the first one its servers list."""
    if settings.openai_model:
        return settings.openai_model
    if not settings.openai_base_urls:
        raise LLMError("provider 'openai' without --base-url talks to the OpenAI API: name the model with --model "
                       "or GRAPHRAG_OPENAI_MODEL (and set OPENAI_API_KEY), or pass --base-url URL of your server")
    from graphrag_got.llm.providers.openai_pool import discover_model

    return discover_model(openai_base_urls(settings), _api_key(settings), timeout=min(10.0, settings.llm_timeout_s))


def _openai_pool(settings: Settings) -> BaseChatModel:
    from graphrag_got.llm.providers.openai_pool import OpenAIPoolChatModel

    try:
        import openai  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency
        raise LLMError("the openai provider needs the openai package: pip install langchain-openai") from None
    if not settings.openai_base_urls and not settings.openai_api_key:
        raise LLMError("provider 'openai' without --base-url talks to the OpenAI API, which needs a key: set "
                       "OPENAI_API_KEY, or pass --base-url URL of an OpenAI-compatible server")
    return OpenAIPoolChatModel(
        model_name=openai_model_name(settings), base_urls=openai_base_urls(settings),
        api_key=settings.openai_api_key, timeout_s=settings.llm_timeout_s, max_tokens=settings.llm_max_tokens,
        response_format=settings.openai_response_format, balance=settings.openai_balance,
        retries=settings.llm_retries, backoff_s=settings.llm_backoff_s,
    )


def _langchain(settings: Settings) -> BaseChatModel:
    from graphrag_got.llm.providers.langchain_provider import ChatProfile, init_langchain_model, register

    urls = list(settings.openai_base_urls)
    if len(urls) > 1:
        raise LLMError(f"provider 'langchain' takes at most one --base-url (got {len(urls)}: {', '.join(urls)}); "
                       "a pool of servers needs --provider openai")
    chat = init_langchain_model(settings.langchain_model, max_tokens=settings.llm_max_tokens,
                                timeout_s=settings.llm_timeout_s, base_url=urls[0] if urls else None)
    label = f"langchain model {settings.langchain_model}"
    return register(chat, ChatProfile(label=label, policy=retry_policy(settings), structured=settings.structured_output))


def _ollama(settings: Settings) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    up, models = ollama_available(settings)
    if not up:
        raise LLMError(f"Ollama does not answer at {settings.ollama_base_url}. Start it (`ollama serve` or "
                       "`docker compose up -d ollama`), or use the embedded model: GRAPHRAG_LLM_PROVIDER=llamacpp")
    if not _has_model(models, settings.ollama_model):
        raise LLMError(f"Ollama has no model {settings.ollama_model!r} (it has: {', '.join(models) or 'none'}). "
                       f"Run `ollama pull {settings.ollama_model}` or set GRAPHRAG_OLLAMA_MODEL.")
    from graphrag_got.llm.providers.langchain_provider import ChatProfile, register

    chat = ChatOllama(model=settings.ollama_model, base_url=settings.ollama_base_url, temperature=0,
                      num_predict=settings.llm_max_tokens, num_ctx=max(settings.llamacpp_n_ctx, 4096),
                      client_kwargs={"timeout": settings.llm_timeout_s})
    # Ollama keeps its own constraint (`format`); the profile only adds retries on 5xx/connection errors.
    return register(chat, ChatProfile(label=f"ollama at {settings.ollama_base_url}", policy=retry_policy(settings)))


def busy_cores_warning(threads: int | None = None) -> str | None:
    """A warning when other processes already keep the cores busy (llama.cpp then slows several-fold).

    Reads the 1-minute load average; None where the platform has none or the machine is quiet enough.
    """
    import os

    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    cores = os.cpu_count() or 1
    # Busy means the load leaves fewer free cores than the model's threads need (every core when the
    # thread count is not known), with half a core of slack for the odd short-lived process.
    free = cores - load
    if free + 0.5 >= (threads or cores) or load < 0.5:
        return None
    used = f" with {threads} threads" if threads else ""
    return (f"the cores are busy (load average {load:.1f} on {cores} cores): the embedded model{used} will run "
            "several times slower; stop other heavy work or lower GRAPHRAG_LLAMACPP_THREADS")


def llamacpp_threads(settings: Settings) -> int:
    """Threads for llama.cpp: GRAPHRAG_LLAMACPP_THREADS, else one per core (measured best on 2 cores)."""
    import os

    return settings.llamacpp_threads or max(1, os.cpu_count() or 1)


def _llamacpp(settings: Settings) -> BaseChatModel:
    from graphrag_got.llm.model_store import resolve_model_path

    path = resolve_model_path(settings)
    key = (str(path), settings.llamacpp_n_ctx, settings.llamacpp_threads, settings.llm_max_tokens,
           settings.llamacpp_loop_guard)
    with _LLAMA_LOCK:
        if key in _LLAMA_CACHE:
            return _LLAMA_CACHE[key]
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise LLMError("llama-cpp-python is not installed: run `pip install -e '.[llamacpp]'` "
                           "(builds from source, a few minutes) or use Ollama") from None
        from graphrag_got.llm.providers.llamacpp_chat import LlamaCppChatModel

        # Our own adapter (providers/llamacpp_chat.py): real token counts and KV-cache prefix reuse.
        threads = llamacpp_threads(settings)
        warning = busy_cores_warning(threads)
        if warning:
            logger.warning(warning)
        chat = LlamaCppChatModel(model_path=str(path), n_ctx=settings.llamacpp_n_ctx, n_batch=512,
                                 n_threads=threads, max_tokens=settings.llm_max_tokens, seed=0,
                                 loop_guard=settings.llamacpp_loop_guard)
        _LLAMA_CACHE[key] = chat
        return chat


# ---------------------------------------------------------------------------- calling models
def _is_llamacpp(chat: BaseChatModel) -> bool:
    """In-process llama.cpp: our adapter, or LangChain's ChatLlamaCpp a user passes in."""
    return type(chat).__name__ in ("LlamaCppChatModel", "ChatLlamaCpp")


def _constraint_kwargs(chat: BaseChatModel, schema: dict[str, Any] | None) -> dict[str, Any]:
    if schema is None:
        return {}
    name = type(chat).__name__
    if name == "ChatOllama":
        return {"format": schema}
    if _is_llamacpp(chat):
        # llama-cpp-python ignores {"type": "json_schema"}; only json_object + schema constrains.
        return {"response_format": {"type": "json_object", "schema": schema}}
    if name == "OpenAIPoolChatModel":
        return {"json_schema": schema}  # the pool picks the response_format form each server takes
    from graphrag_got.llm.providers.langchain_provider import profile_of

    profile = profile_of(chat)
    if profile is not None and profile.structured is not None:
        return {"structured_schema": schema}  # with_structured_output, see _invoke
    return {}


def _length_kwargs(chat: BaseChatModel, max_tokens: int | None) -> dict[str, Any]:
    """Cap one call's answer length (small models can repeat a sentence until they run out of tokens)."""
    if max_tokens is None:
        return {}
    name = type(chat).__name__
    if _is_llamacpp(chat):
        return {"max_tokens": max_tokens}
    if name == "ChatOllama":
        # `options` replaces the model's options wholesale, so repeat the ones we set
        return {"options": {"temperature": 0, "num_ctx": getattr(chat, "num_ctx", None) or 4096,
                            "num_predict": max_tokens}}
    if name == "OpenAIPoolChatModel":
        return {"max_tokens": max_tokens}
    return {}


# llama-cpp-python: ValueError("Requested tokens (N) exceed context window of M"); other servers
# word it "context length exceeded" / "maximum context length".
_CONTEXT_OVERFLOW = re.compile(r"exceeds? (?:the )?context window|context length exceeded|maximum context length",
                               re.IGNORECASE)


def _invoke(chat: BaseChatModel, messages: list[BaseMessage], attempt: Attempt | None,
            max_tokens: int | None = None, **kwargs: Any) -> str:
    from graphrag_got.llm.providers.langchain_provider import profile_of, structured_invoke

    if not isinstance(chat, ReplayChatModel):
        kwargs.pop("replay_key", None)
    structured_schema = kwargs.pop("structured_schema", None)
    kwargs.update(_length_kwargs(chat, max_tokens))
    profile = profile_of(chat)
    retries = 0

    def call() -> tuple[BaseMessage, str | None]:
        if structured_schema is not None and profile is not None:
            return structured_invoke(chat, messages, structured_schema, profile, **kwargs)
        if _is_llamacpp(chat):
            with _LLAMA_LOCK:
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
    return text


def complete_text(chat: BaseChatModel, system: str, user: str, attempt: Attempt | None = None,
                  max_tokens: int | None = None) -> str:
    """A plain-text answer (at most ``max_tokens`` long when given), without repeated sentences,
    cleaned like every string of a model answer (:func:`graphrag_got.common.sanitize.clean_text`)."""
    # Free text may take a mild repetition penalty (JSON may not: it repeats keys by design).
    extra = {"repeat_penalty": 1.1} if _is_llamacpp(chat) else {}
    text = _invoke(chat, [SystemMessage(content=system), HumanMessage(content=user)], attempt, max_tokens, **extra)
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


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
#: Longest answer parse_json_text reads (an extraction answer is a few kB; more is a model looping).
MAX_ANSWER_CHARS = 1_000_000
#: Longest broken answer handed to json_repair, whose time grows faster than linearly with
#: hostile input (about 2 s for 300 kB of escaped quotes); valid JSON up to MAX_ANSWER_CHARS parses.
MAX_REPAIR_CHARS = 200_000
# A double-quoted string (an unterminated one runs to the end, so the scan stays linear) or a bracket.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.DOTALL)


def _bracket_depth(body: str) -> int:
    """Deepest nesting of ``[``/``{`` outside double-quoted strings, counted without parsing.

    Checked before any parser runs: ``json`` and ``json_repair`` recurse once per level, so 1,000
    ``[`` (small models loop like this) would raise RecursionError inside them.
    """
    depth = deepest = 0
    for m in _STRUCTURE.finditer(body):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def parse_json_text(text: str) -> tuple[Any, bool]:
    """Parse a model's JSON answer: strip Markdown fences, then repair if plain parsing fails.

    Returns ``(value, repaired)``; every key and string of ``value`` is cleaned
    (:func:`graphrag_got.common.sanitize.clean_json`). Raises ``ValueError``, and nothing else, when
    nothing usable is there: no JSON, JSON that cannot be repaired, an answer longer than
    ``MAX_ANSWER_CHARS`` or nested more than ``MAX_JSON_DEPTH`` levels.
    """
    if len(text) > MAX_ANSWER_CHARS:
        raise ValueError(f"the answer is {len(text):,} characters long, more than the {MAX_ANSWER_CHARS:,} "
                         "accepted")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if body.count("[") + body.count("{") > MAX_JSON_DEPTH and _bracket_depth(body) > MAX_JSON_DEPTH:
        raise ValueError(f"the answer nests brackets more than {MAX_JSON_DEPTH} levels deep; no answer we ask for "
                         "is that deep (the model was probably looping)")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        first_error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        first_error = str(exc)
    else:
        return clean_json(value), False
    # json_repair closes truncated arrays/objects and fixes quotes/commas; what it cannot fix
    # comes back as "" or a non-container, which we refuse.
    start = min([i for i in (body.find("{"), body.find("[")) if i >= 0], default=-1)
    if start < 0:
        raise ValueError(f"no JSON object in the answer ({first_error})")
    if len(body) - start > MAX_REPAIR_CHARS:
        raise ValueError(f"invalid JSON ({first_error}), too long to repair ({len(body) - start:,} characters, "
                         f"at most {MAX_REPAIR_CHARS:,} are repaired)")
    try:
        repaired = json_repair.loads(body[start:])
    except Exception as exc:  # a third-party parser on hostile input: any failure means "unusable"
        raise ValueError(f"invalid JSON that could not be repaired ({first_error}; repair failed with "
                         f"{type(exc).__name__})") from None
    if not isinstance(repaired, (dict, list)) or repaired in ({}, []):
        raise ValueError(f"invalid JSON that could not be repaired ({first_error})")
    return clean_json(repaired), True


def complete_json(chat: BaseChatModel, system: str, user: str, model: type[T] | None = None,
                  schema: dict[str, Any] | None = None, replay_key: str | None = None,
                  retries: int = 1, max_tokens: int | None = None) -> tuple[T | Any, Attempt]:
    """A JSON answer validated by ``model`` (any JSON object when None), with repair and retries.

    Decoding is constrained by ``schema`` (or the model's schema) where the provider supports it.
    After a bad answer, the model is asked once more with the error spelled out.
    Raises :class:`LLMOutputError` carrying every raw response when all attempts fail, and its
    subclass :class:`LLMContextError` when the prompt does not fit in the context window; any
    other :class:`LLMError` means the provider itself cannot answer.

    Whatever the model sends, the result is safe: strings and keys are cleaned
    (:mod:`graphrag_got.common.sanitize`), nesting is bounded, and the raw responses kept in the
    :class:`Attempt` (or the error) can be written as UTF-8.
    """
    from graphrag_got.ontology.schema import llm_schema

    if schema is None and model is not None:
        schema = llm_schema(model)
    attempt = Attempt()
    messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=user)]
    kwargs = {**_constraint_kwargs(chat, schema), "replay_key": replay_key}
    for i in range(retries + 1):
        try:
            text = _invoke(chat, messages, attempt, max_tokens, **kwargs)
        except LLMContextError as exc:  # the retry prompt (with the bad answer) can be the one too long
            exc.raw_responses = list(attempt.raw_responses)
            raise
        attempt.raw_responses.append(text)
        try:
            value, repaired = parse_json_text(text)
            if model is not None:
                value = model.model_validate(value)
            elif not isinstance(value, dict):
                raise ValueError(f"expected a JSON object, got {type(value).__name__}")
            attempt.repaired = attempt.repaired or repaired
            return value, attempt
        except (ValueError, ValidationError, RecursionError) as exc:
            error = _short_error(exc)
            attempt.errors.append(error)
            if i < retries:
                attempt.retried = True
                messages = messages + [
                    AIMessage(content=text),
                    HumanMessage(content=f"That answer was not valid: {error}. Answer again with only the "
                                         "JSON object, complete and valid, nothing else."),
                ]
    raise LLMOutputError(f"no valid JSON after {retries + 1} attempt(s): {attempt.errors[-1]}", attempt.raw_responses)


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'root'}: {e['msg']}" for e in exc.errors()[:5]]
        return "; ".join(parts)
    return str(exc)
