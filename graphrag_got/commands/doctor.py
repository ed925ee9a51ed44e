"""`graphrag-got doctor`: which LLM, which Neo4j and which embedding model will be used, and whether each answers."""

from __future__ import annotations

import argparse
import importlib.util
import time
from typing import TYPE_CHECKING

from graphrag_got.errors import GraphragGotError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("doctor", help="show which LLM, Neo4j and embedding model will be used, and whether each answers")
    p.add_argument("--no-llm-call", action="store_true",
                   help="do not load (or call) the model to ask it a one-word question")
    p.set_defaults(func=run)


def _line(ok: bool | None, what: str, detail: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "info"}[ok]
    print(f"[{mark}] {what}: {detail}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.llm.calls import Attempt, complete_text
    from graphrag_got.llm.factory import get_chat_model, model_label, ollama_available, resolve_provider

    failures = 0
    # ---- LLM
    if settings.llm.provider in ("auto", "ollama"):
        up, models = ollama_available(settings.llm)
        _line(None, "ollama", f"{settings.llm.ollama_base_url} {'answers' if up else 'does not answer'}"
              + (f"; models: {', '.join(models) or 'none'}" if up else ""))
    provider = resolve_provider(settings.llm)
    if provider == "openai":
        failures += _openai_servers(settings)
    try:
        label = model_label(settings.llm, provider)
    except GraphragGotError as exc:
        _line(False, "llm provider", f"{settings.llm.provider} -> {provider}: {exc}")
        label, failures = "", failures + 1
    if label:
        _line(None, "llm provider", f"{settings.llm.provider} -> {provider} ({label})")
    if provider == "langchain" and not failures:
        failures += _langchain_model(settings)
    if provider == "llamacpp":
        from graphrag_got.llm.model_store import resolve_model_path

        if importlib.util.find_spec("llama_cpp") is None:
            _line(False, "llama-cpp-python", "not installed: pip install -e '.[llamacpp]'")
            failures += 1
        from graphrag_got.llm.cpu_threads import sample_cpu
        from graphrag_got.llm.factory import busy_cores_warning, llamacpp_thread_limit, llamacpp_threads

        try:
            path = resolve_model_path(settings.llm, files=settings.files)
            _line(True, "embedded model file", str(path))
            sample = sample_cpu()  # the same fresh sample for the threads and the warning
            threads, limit = llamacpp_threads(settings.llm, sample), llamacpp_thread_limit(settings.llm)
            chosen = (f"{threads} threads now (at most {limit}, fewer while cores are busy)"
                      if settings.llm.llamacpp_adaptive_threads else f"{threads} threads")
            _line(None, "embedded model", f"context {settings.llm.llamacpp_n_ctx} tokens, {chosen}, batch 512")
            from graphrag_got.llm.server import choose_backend

            backend = choose_backend(settings.llm)
            slots = f", {settings.llm.llama_server_slots} parallel slots" if backend.server else ""
            _line(None, "embedded model runs", backend.describe() + slots)
            busy = busy_cores_warning(threads, sample, wanted=limit)
            if busy:
                _line(None, "cores", busy)
        except GraphragGotError as exc:
            _line(False, "embedded model file", str(exc))
            failures += 1
    if not failures and not args.no_llm_call:
        try:
            chat = get_chat_model(settings.llm, provider, files=settings.files)
            t0 = time.monotonic()  # one call's latency, without loading or building the model
            attempt = Attempt()
            answer = complete_text(chat, "Answer with one word.", "Say: ready", attempt, max_tokens=16)
            tokens = f"{attempt.input_tokens} tokens in, {attempt.output_tokens} out" + (
                " (estimated)" if attempt.tokens_estimated else "")
            retried = f", {attempt.transport_retries} retries" if attempt.transport_retries else ""
            _line(True, "llm answers", f"{answer[:40]!r} in {time.monotonic() - t0:.2f}s ({tokens}{retried})")
        except GraphragGotError as exc:
            _line(False, "llm answers", str(exc))
            failures += 1
    # ---- Neo4j
    from graphrag_got.graph.server import status

    st = status(settings.neo4j, files=settings.files)
    if st.answering and st.auth_ok:
        _line(True, "neo4j", f"{st.uri} answers ({st.server_agent}); "
              f"{'embedded server pid ' + str(st.pid) if st.ours else 'external server'}")
    elif st.answering:
        _line(False, "neo4j", f"{st.uri} answers but refuses the credentials: {st.detail}")
        failures += 1
    else:
        _line(False, "neo4j", f"nothing answers at {st.uri}; start it with `graphrag-got neo4j start` "
              "or `docker compose up -d neo4j`")
        failures += 1
    # ---- embeddings
    _line(None, "embedding model", "none: anchors are matched by normalized and fuzzy entity names, "
          "so no embedding model is needed")
    print("all good" if not failures else f"{failures} problem(s)")
    return 0 if not failures else 1


def _openai_servers(settings: Settings) -> int:
    """One line per server of the pool: answers, models, context size. Returns the number that fail."""
    from graphrag_got.llm.factory import openai_base_urls
    from graphrag_got.llm.providers.openai_pool import server_info

    key = settings.llm.openai_api_key.get_secret_value() if settings.llm.openai_api_key else None
    failures = 0
    for url in openai_base_urls(settings.llm):
        info = server_info(url, key, timeout=min(10.0, settings.llm.timeout_s))
        if not info.answers:
            _line(False, "openai server", f"{url} does not answer ({info.error}); start it or fix --base-url")
            failures += 1
            continue
        models = ", ".join(info.models[:5]) + (" ..." if len(info.models) > 5 else "") if info.models else "none listed"
        wanted = settings.llm.openai_model
        if wanted and info.models and wanted not in info.models:
            models += f" (the configured model {wanted!r} is not among them)"
        context = f"; context {info.context} tokens" if info.context else "; context size not reported"
        _line(True, "openai server", f"{url} answers; models: {models}{context}"
              + (f" ({info.error})" if info.error else ""))
    return failures


def _langchain_model(settings: Settings) -> int:
    """The LangChain model's class and, when its profile knows it, its context size."""
    from graphrag_got.llm.factory import get_chat_model

    try:
        chat = get_chat_model(settings.llm, "langchain", files=settings.files)
    except GraphragGotError as exc:
        _line(False, "langchain model", str(exc))
        return 1
    profile = getattr(chat, "profile", None)
    context = profile.get("max_input_tokens") if isinstance(profile, dict) else None
    _line(True, "langchain model", f"{settings.llm.langchain_model} -> {type(chat).__name__}"
          + (f"; context {context} tokens" if context else "; context size not known"))
    return 0
