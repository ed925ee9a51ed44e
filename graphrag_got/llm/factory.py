"""Chat models: which provider to use, and building its LangChain chat model.

Every provider is a LangChain chat model: Ollama, the in-process llama.cpp adapter
(:mod:`graphrag_got.llm.providers.llamacpp_chat`), pools of OpenAI-compatible servers
(:mod:`graphrag_got.llm.providers.openai_pool`), any LangChain model
(:mod:`graphrag_got.llm.providers.langchain_provider`), and the replay model
(:mod:`graphrag_got.llm.replay`). :func:`resolve_provider` picks one (``auto``),
:func:`get_chat_model` builds it, :func:`model_label` names it for the cache. Calling a model is in
:mod:`graphrag_got.llm.calls` and :mod:`graphrag_got.llm.json_answers`.
"""

from __future__ import annotations

import atexit
import json
import logging
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel

from graphrag_got.config import FilesSettings, LLMSettings
from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import LLAMA_LOCK
from graphrag_got.llm.replay import ReplayChatModel

if TYPE_CHECKING:
    from graphrag_got.llm.cpu_threads import CpuSample
    from graphrag_got.llm.providers.retry import RetryPolicy

logger = logging.getLogger(__name__)

_LLAMA_CACHE: dict[tuple[Any, ...], BaseChatModel] = {}


def _close_cached_models() -> None:
    """Free the embedded models while the interpreter still works (registered with atexit): left to
    the garbage collector at shutdown, llama-cpp-python may free them after its own bindings are gone
    and print a TypeError traceback."""
    with LLAMA_LOCK:
        for chat in _LLAMA_CACHE.values():
            close = getattr(chat, "close", None)
            if close is not None:
                close()
        _LLAMA_CACHE.clear()


def ollama_available(llm: LLMSettings, timeout: float = 1.5) -> tuple[bool, list[str]]:
    """Whether an Ollama server answers at ``llm.ollama_base_url``, and which models it has."""
    url = llm.ollama_base_url.rstrip("/") + "/api/tags"
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (configured URL)
            data = json.loads(resp.read().decode("utf-8"))
    except (urllib.error.URLError, OSError, ValueError):
        return False, []
    return True, [m.get("name", "") for m in data.get("models", [])]


def resolve_provider(llm: LLMSettings) -> str:
    """``auto``: replay when a replay file is set, then a configured LangChain model, then configured
    OpenAI-compatible base URLs, then Ollama when it answers and has the model, else embedded llama.cpp."""
    if llm.provider != "auto":
        return llm.provider
    if llm.replay_file:
        return "replay"
    if llm.langchain_model:
        return "langchain"
    if llm.openai_base_urls:
        return "openai"
    up, models = ollama_available(llm)
    if up and _has_model(models, llm.ollama_model):
        return "ollama"
    return "llamacpp"


def _has_model(models: list[str], wanted: str) -> bool:
    return wanted in models or (":" not in wanted and f"{wanted}:latest" in models)


def model_label(llm: LLMSettings, provider: str | None = None) -> str:
    """A stable name of the model in use (part of the cache key)."""
    provider = provider or resolve_provider(llm)
    if provider == "ollama":
        return f"ollama:{llm.ollama_model}"
    if provider == "llamacpp":
        return f"llamacpp:{Path(llm.llamacpp_model).name}"
    if provider == "openai":
        return f"openai:{openai_model_name(llm)}"
    if provider == "langchain":
        if not llm.langchain_model:
            raise LLMError("provider 'langchain' needs a model: --model PROVIDER:MODEL (an init_chat_model string "
                           "such as openai:gpt-4o-mini or deepseek:deepseek-chat) or GRAPHRAG_LANGCHAIN_MODEL")
        return f"langchain:{llm.langchain_model}"
    return f"replay:{Path(str(llm.replay_file)).name}"


def get_chat_model(llm: LLMSettings, provider: str | None = None, *, files: FilesSettings) -> BaseChatModel:
    """The chat model of ``provider`` (default: :func:`resolve_provider`). ``files``: where the embedded
    model is installed and where its llama-server keeps its pid and log."""
    provider = provider or resolve_provider(llm)
    if provider == "ollama":
        return _ollama(llm)
    if provider == "llamacpp":
        return _llamacpp(llm, files)
    if provider == "openai":
        return _openai_pool(llm)
    if provider == "langchain":
        return _langchain(llm)
    if provider == "replay":
        if not llm.replay_file:
            raise LLMError("provider 'replay' needs a file: set GRAPHRAG_REPLAY_FILE or pass --replay-file")
        return ReplayChatModel.from_file(llm.replay_file)
    raise LLMError(f"unknown LLM provider {provider!r}: use auto, ollama, llamacpp, openai, langchain or replay")


def retry_policy(llm: LLMSettings) -> "RetryPolicy":
    from graphrag_got.llm.providers.retry import RetryPolicy

    return RetryPolicy(retries=llm.retries, backoff_s=llm.backoff_s)


def openai_base_urls(llm: LLMSettings) -> list[str]:
    """The pool of the ``openai`` provider: the configured base URLs, else the OpenAI API."""
    from graphrag_got.llm.providers.openai_pool import OPENAI_API_URL

    return list(llm.openai_base_urls) or [OPENAI_API_URL]


def _api_key(llm: LLMSettings) -> str | None:
    return llm.openai_api_key.get_secret_value() if llm.openai_api_key else None


def openai_model_name(llm: LLMSettings) -> str:
    """The configured model of the ``openai`` provider, else the first one its servers list."""
    if llm.openai_model:
        return llm.openai_model
    if not llm.openai_base_urls:
        raise LLMError("provider 'openai' without --base-url talks to the OpenAI API: name the model with --model "
                       "or GRAPHRAG_OPENAI_MODEL (and set OPENAI_API_KEY), or pass --base-url URL of your server")
    from graphrag_got.llm.providers.openai_pool import discover_model

    return discover_model(openai_base_urls(llm), _api_key(llm), timeout=min(10.0, llm.timeout_s))


def _openai_pool(llm: LLMSettings) -> BaseChatModel:
    from graphrag_got.llm.providers.openai_pool import OpenAIPoolChatModel

    try:
        import openai  # noqa: F401
    except ImportError:  # pragma: no cover - a dependency
        raise LLMError("the openai provider needs the openai package: pip install langchain-openai") from None
    if not llm.openai_base_urls and not llm.openai_api_key:
        raise LLMError("provider 'openai' without --base-url talks to the OpenAI API, which needs a key: set "
                       "OPENAI_API_KEY, or pass --base-url URL of an OpenAI-compatible server")
    return OpenAIPoolChatModel(
        model_name=openai_model_name(llm), base_urls=openai_base_urls(llm),
        api_key=llm.openai_api_key, timeout_s=llm.timeout_s, stall_s=llm.stall_timeout_s,
        resume=llm.resume_cut_calls, max_tokens=llm.max_tokens,
        response_format=llm.openai_response_format, balance=llm.openai_balance,
        retries=llm.retries, backoff_s=llm.backoff_s,
    )


def _langchain(llm: LLMSettings) -> BaseChatModel:
    from graphrag_got.llm.providers.langchain_provider import ChatProfile, init_langchain_model, register

    urls = list(llm.openai_base_urls)
    if len(urls) > 1:
        raise LLMError(f"provider 'langchain' takes at most one --base-url (got {len(urls)}: {', '.join(urls)}); "
                       "a pool of servers needs --provider openai")
    chat = init_langchain_model(llm.langchain_model, max_tokens=llm.max_tokens,
                                timeout_s=llm.timeout_s, base_url=urls[0] if urls else None)
    label = f"langchain model {llm.langchain_model}"
    return register(chat, ChatProfile(label=label, policy=retry_policy(llm), structured=llm.structured_output))


def _ollama(llm: LLMSettings) -> BaseChatModel:
    from langchain_ollama import ChatOllama

    up, models = ollama_available(llm)
    if not up:
        raise LLMError(f"Ollama does not answer at {llm.ollama_base_url}. Start it (`ollama serve` or "
                       "`docker compose up -d ollama`), or use the embedded model: GRAPHRAG_LLM_PROVIDER=llamacpp")
    if not _has_model(models, llm.ollama_model):
        raise LLMError(f"Ollama has no model {llm.ollama_model!r} (it has: {', '.join(models) or 'none'}). "
                       f"Run `ollama pull {llm.ollama_model}` or set GRAPHRAG_OLLAMA_MODEL.")
    from graphrag_got.llm.providers.langchain_provider import ChatProfile, register

    chat = ChatOllama(model=llm.ollama_model, base_url=llm.ollama_base_url, temperature=0,
                      num_predict=llm.max_tokens, num_ctx=max(llm.llamacpp_n_ctx, 4096),
                      client_kwargs={"timeout": llm.timeout_s})
    # Ollama keeps its own constraint (`format`); the profile only adds retries on 5xx/connection errors.
    return register(chat, ChatProfile(label=f"ollama at {llm.ollama_base_url}", policy=retry_policy(llm)))


def llamacpp_thread_limit(llm: LLMSettings) -> int:
    """The most threads llama.cpp gets: GRAPHRAG_LLAMACPP_THREADS, else one per usable core (measured
    best on 2 cores)."""
    from graphrag_got.llm.cpu_threads import usable_cpus

    return llm.llamacpp_threads or max(1, len(usable_cpus()))


def llamacpp_threads(llm: LLMSettings, sample: CpuSample | None = None) -> int:
    """Threads for the next llama.cpp call: the limit, and with adaptive threads (the default) no more
    than the cores free in ``sample`` (see :mod:`graphrag_got.llm.cpu_threads`)."""
    from graphrag_got.llm.cpu_threads import choose_threads

    limit = llamacpp_thread_limit(llm)
    return choose_threads(sample, limit) if llm.llamacpp_adaptive_threads else limit


def busy_cores_warning(threads: int, sample: CpuSample | None, wanted: int | None = None) -> str | None:
    """A warning when other work takes cores the model would use, read from ``sample`` (the same fresh
    sample the threads were chosen from); None when nothing is measured or the cores are free."""
    from graphrag_got.llm.cpu_threads import busy_cores_warning as warning

    return warning(threads, sample, wanted)


def _llamacpp(llm: LLMSettings, files: FilesSettings) -> BaseChatModel:
    """The embedded model: served by llama-server when that is the backend, else in this process."""
    from graphrag_got.llm.server import choose_backend

    backend = choose_backend(llm)
    if backend.server:
        return _served(llm, files)
    logger.info("embedded model: in-process llama-cpp-python, one call at a time (%s)", backend.why)
    return _in_process(llm, files)


def _served(llm: LLMSettings, files: FilesSettings) -> BaseChatModel:
    """The embedded model through our llama-server (started now when it does not run yet; the command
    that started it stops it, see :func:`graphrag_got.llm.server.scope`), over the OpenAI-compatible pool."""
    from graphrag_got.llm.providers.openai_pool import OpenAIPoolChatModel
    from graphrag_got.llm.server import ensure_running

    info = ensure_running(llm, files=files)
    logger.info("embedded model: llama-server at %s (%s, pid %s)", info.url, info.plan.describe(), info.pid)
    # cache_prompt: a slot keeps its last prompt, so the instructions and ontology every extraction prompt
    # starts with are evaluated once per slot. json_schema is the form llama-server constrains with.
    return OpenAIPoolChatModel(
        model_name=info.plan.alias, base_urls=[info.url], timeout_s=llm.timeout_s,
        stall_s=llm.stall_timeout_s, resume=llm.resume_cut_calls,
        max_tokens=llm.max_tokens, response_format="json_schema", retries=llm.retries,
        backoff_s=llm.backoff_s, extra_body={"cache_prompt": True}, embedded=True,
        context_window=info.plan.ctx_per_slot)


def _in_process(llm: LLMSettings, files: FilesSettings) -> BaseChatModel:
    from graphrag_got.llm.model_store import resolve_model_path

    path = resolve_model_path(llm, files=files)
    key = (str(path), llm.llamacpp_n_ctx, llm.llamacpp_threads, llm.llamacpp_adaptive_threads,
           llm.max_tokens, llm.llamacpp_loop_guard)
    with LLAMA_LOCK:
        if key in _LLAMA_CACHE:
            return _LLAMA_CACHE[key]
        try:
            import llama_cpp  # noqa: F401
        except ImportError:
            raise LLMError("llama-cpp-python is not installed: run `pip install -e '.[llamacpp]'` "
                           "(builds from source, a few minutes) or use Ollama") from None
        from graphrag_got.llm.providers.llamacpp_chat import LlamaCppChatModel

        # Our own adapter (providers/llamacpp_chat.py): real token counts and KV-cache prefix reuse.
        # Threads are chosen again at the start of every call from the cores free then (and the
        # busy-cores warning comes from that same sample), not once here.
        limit = llamacpp_thread_limit(llm)
        chat = LlamaCppChatModel(model_path=str(path), n_ctx=llm.llamacpp_n_ctx, n_batch=512,
                                 n_threads=limit, adaptive_threads=llm.llamacpp_adaptive_threads,
                                 max_tokens=llm.max_tokens, seed=0, loop_guard=llm.llamacpp_loop_guard)
        if not _LLAMA_CACHE:
            atexit.register(_close_cached_models)
        _LLAMA_CACHE[key] = chat
        return chat
