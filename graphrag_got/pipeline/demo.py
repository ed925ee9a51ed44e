"""The whole job in one call: ontology check -> extract -> report -> load -> communities -> questions.

Used by ``graphrag-got demo`` (README's first command) and usable from Python. Every step is the
same function the individual commands call, so the demo proves the pipeline rather than a special
path. Each step is idempotent and cached: a rerun on an unchanged corpus makes no LLM call.
"""

from __future__ import annotations

import json

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback

logger = logging.getLogger(__name__)

#: File next to the corpus (its folder, or the folder of a corpus file) with the demo's questions:
#: ``{"local": "...", "global": "..."}``. The questions belong to the corpus, not to the library.
QUESTIONS_FILE = "demo_questions.json"


def demo_questions(corpus: Path) -> dict[str, str]:
    """The questions a corpus ships for the demo; ``{}`` when it ships none (or the file is unusable)."""
    folder = corpus if corpus.is_dir() else corpus.parent
    path = folder / QUESTIONS_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path}: cannot read the demo questions ({exc}); fix the file or pass "
                          "--local-question and --global-question") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected an object {{\"local\": \"...\", \"global\": \"...\"}}")
    return {k: str(v) for k, v in data.items() if k in ("local", "global") and isinstance(v, str) and v.strip()}


@dataclass
class DemoResult:
    timings: dict[str, float] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)
    llm_calls: dict[str, int] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, str] = field(default_factory=dict)


def _answer_cache(settings: Settings) -> Callable[[], int]:
    """Cache every chat-model answer of the demo in SQLite (LangChain's own LLM cache).

    Extraction and summaries have their own caches; this one makes the two questions free on a
    rerun over an unchanged graph (same prompt and model -> same answer at temperature 0).
    Returns a function counting the stored answers, so the demo can report calls really made.
    """
    import sqlite3

    from langchain_community.cache import SQLiteCache
    from langchain_core.globals import set_llm_cache

    path = settings.cache_dir / "demo_llm_answers.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    set_llm_cache(SQLiteCache(database_path=str(path)))

    def stored() -> int:
        with sqlite3.connect(path) as db:
            return int(db.execute("SELECT count(*) FROM full_llm_cache").fetchone()[0])

    return stored


def run_demo(settings: Settings, *, local_question: str | None = None, global_question: str | None = None,
             say: Callable[[str], None] | None = None, progress: ProgressCallback | None = None) -> DemoResult:
    """Run every step; ``say`` receives the lines that tell the user what each step did (default: the
    log, at INFO) and ``progress`` the progress events of the long steps (default: none).

    Questions not given come from the corpus's ``demo_questions.json``; with neither, a
    ``ConfigError`` says to pass them.

    The CLI passes ``print`` and a progress bar. Until every library step emits ProgressEvents,
    ``progress`` may also receive plain strings from the older ones (the CLI renderer takes both).
    """
    say = say or logger.info
    shipped = demo_questions(Path(settings.corpus_path))
    local_question = local_question or shipped.get("local")
    global_question = global_question or shipped.get("global")
    if not local_question or not global_question:
        raise ConfigError(f"no demo questions: {Path(settings.corpus_path)} has no {QUESTIONS_FILE}; pass "
                          "--local-question and --global-question")
    res = DemoResult()
    stored_answers = _answer_cache(settings)

    def step(name: str) -> "_Step":
        return _Step(name, res, say)

    with step("ontology"):
        onto = Ontology.from_file(settings.ontology_path)
        say(f"  {onto.source}: {len(onto.classes)} classes, {len(onto.relations)} relations")

    from graphrag_got.llm.client import resolve_provider

    provider = resolve_provider(settings)
    if provider == "llamacpp":
        with step("model"):
            from graphrag_got.llm.model_store import REGISTRY, install_model, is_installed

            name = settings.llamacpp_model
            if name in REGISTRY and not is_installed(name, settings):
                install_model(name, settings, progress=lambda s: say(f"  {s}"))
            say(f"  LLM: embedded llama.cpp, {name}")
    else:
        say(f"LLM: {provider}")

    with step("neo4j"):
        from graphrag_got.graph.server import ensure_running

        info = ensure_running(settings, progress=progress)
        say(f"  Neo4j at {settings.neo4j_uri}" + (f" (embedded, pid {info.pid})" if getattr(info, "pid", None) else ""))

    with step("extract"):
        from graphrag_got.extract.run import run_extraction

        ex = run_extraction(settings, onto, progress=progress)
        for line in ex.lines():
            say("  " + line)
        res.paths["extraction"] = ex.out_path
        res.llm_calls["extract"] = ex.llm_calls

    with step("report"):
        from graphrag_got.report.discarded import write_report

        written = write_report(ex.out_path, settings.out_dir, ontology=onto)
        for fmt, p in written.items():
            res.paths[f"report.{fmt}"] = Path(p)
        say(f"  discarded-relations report: {written.get('html') or next(iter(written.values()))}")

    from graphrag_got.graph.db import connect

    driver = connect(settings)
    try:
        with step("load"):
            from graphrag_got.graph.load import load_extraction

            ls = load_extraction(driver, settings, ex.out_path, onto, progress=progress)
            say(f"  documents +{ls.documents_added} ~{ls.documents_updated} ={ls.documents_unchanged} "
                f"-{ls.documents_pruned}; entities written {ls.entities_written}, relationships written "
                f"{ls.relations_written}; refused {ls.relations_refused}")

        with step("communities"):
            from graphrag_got.communities.core import detect_communities, read_entity_graph, summarize_communities, write_communities

            eg = read_entity_graph(driver, settings, onto)
            comms = detect_communities(eg, settings.community_resolution, settings.community_seed)
            write_communities(driver, settings, comms)
            sizes = sorted((len(c.members) for c in comms), reverse=True)
            say(f"  {len(comms)} communities (largest {sizes[0] if sizes else 0}, "
                f"singletons {sum(1 for s in sizes if s == 1)})")
            sm = summarize_communities(driver, settings, ontology=onto, progress=progress)
            res.llm_calls["communities"] = sm.llm_calls
            est = " (estimated)" if sm.tokens_estimated else ""
            say(f"  summaries: {sm.generated} new, {sm.cached + sm.unchanged} reused, {len(sm.failed)} failed; "
                f"{sm.llm_calls} LLM calls, tokens in/out {sm.input_tokens}/{sm.output_tokens}{est}")
            if sm.export_path:
                res.paths["communities"] = Path(sm.export_path)

        answers_mid = stored_answers()
        with step("ask local"):
            from graphrag_got.search.local import local_search

            lr = local_search(driver, settings, local_question, ontology=onto)
            res.llm_calls["ask local"] = lr.llm_calls
            res.facts["local"] = lr.context_lines
            res.answers["local"] = lr.answer or ""
            say(f"  Q: {local_question}")
            say(f"  anchors: {', '.join(a.name for a in lr.anchors) or 'none'}; facts in context: {len(lr.facts)}")
            for line in lr.context_lines[:8]:
                say(f"    - {line}")
            say(f"  A: {lr.answer}")

        with step("ask global"):
            from graphrag_got.search.global_ import global_search

            gr = global_search(driver, settings, global_question)
            res.llm_calls["ask global"] = gr.llm_calls
            res.answers["global"] = gr.answer or ""
            say(f"  Q: {global_question}")
            say(f"  communities rated {len(gr.ratings)}, kept {len(gr.kept)} (threshold {gr.threshold})")
            say(f"  A: {gr.answer}")

        with step("viz"):
            from graphrag_got.report.viz import graph_from_neo4j, render_html

            nodes, edges, titles = graph_from_neo4j(driver, settings)
            out = settings.out_dir / "graph.html"
            render_html(nodes, edges, out, f"graphrag_got: {onto.name or 'knowledge graph'}", legend_labels=titles or None)
            res.paths["graph"] = out
            say(f"  {len(nodes)} nodes, {len(edges)} edges -> {out}")
    finally:
        driver.close()

    say("")
    say("done. Written:")
    for name, p in res.paths.items():
        say(f"  {name:<14} {p}")
    say("timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in res.timings.items()))
    # questions answered from the answer cache cost no model call
    new_answers = stored_answers() - answers_mid
    asked = res.llm_calls.get("ask local", 0) + res.llm_calls.get("ask global", 0)
    if asked and new_answers == 0:
        res.llm_calls["ask local"] = res.llm_calls["ask global"] = 0
    total_calls = sum(res.llm_calls.values())
    say(f"LLM calls: {total_calls}" + (" (everything was cached)" if total_calls == 0 else
                                      " (" + ", ".join(f"{k} {v}" for k, v in res.llm_calls.items()) + ")"))
    return res


class _Step:
    def __init__(self, name: str, res: DemoResult, say: Callable[[str], None]):
        self.name, self.res, self.say = name, res, say

    def __enter__(self) -> "_Step":
        self.t0 = time.monotonic()
        self.say(f"== {self.name}")
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.res.timings[self.name] = time.monotonic() - self.t0
        if exc_type is not None and exc_type is not KeyboardInterrupt:
            logger.error("step '%s' failed after %.1fs", self.name, self.res.timings[self.name])
