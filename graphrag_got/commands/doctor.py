"""`graphrag-got doctor`: which LLM, which Neo4j and which embedding model will be used, and whether each answers."""

from __future__ import annotations

import argparse
import importlib.util
import time

from ..config import Settings
from ..errors import GraphragGotError
from ..llm import complete_text, get_chat_model, model_label, ollama_available, resolve_provider


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("doctor", help="show which LLM, Neo4j and embedding model will be used, and whether each answers")
    p.add_argument("--no-llm-call", action="store_true", help="do not load the model to ask it a one-word question")
    p.set_defaults(func=run)


def _line(ok: bool | None, what: str, detail: str) -> None:
    mark = {True: "ok  ", False: "FAIL", None: "info"}[ok]
    print(f"[{mark}] {what}: {detail}")


def run(args: argparse.Namespace, settings: Settings) -> int:
    failures = 0
    # ---- LLM
    up, models = ollama_available(settings)
    _line(None, "ollama", f"{settings.ollama_base_url} {'answers' if up else 'does not answer'}"
          + (f"; models: {', '.join(models) or 'none'}" if up else ""))
    provider = resolve_provider(settings)
    _line(None, "llm provider", f"{settings.llm_provider} -> {provider} ({model_label(settings, provider)})")
    if provider == "llamacpp":
        from ..model_store import resolve_model_path

        if importlib.util.find_spec("llama_cpp") is None:
            _line(False, "llama-cpp-python", "not installed: pip install -e '.[llamacpp]'")
            failures += 1
        try:
            path = resolve_model_path(settings)
            _line(True, "embedded model file", str(path))
        except GraphragGotError as exc:
            _line(False, "embedded model file", str(exc))
            failures += 1
    if not failures and not args.no_llm_call:
        t0 = time.monotonic()
        try:
            answer = complete_text(get_chat_model(settings, provider), "Answer with one word.", "Say: ready")
            _line(True, "llm answers", f"{answer[:40]!r} in {time.monotonic() - t0:.1f}s")
        except GraphragGotError as exc:
            _line(False, "llm answers", str(exc))
            failures += 1
    # ---- Neo4j
    from ..neo4j_server import status

    st = status(settings)
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
