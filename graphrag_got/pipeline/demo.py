"""The whole job in one call: ontology check -> extract -> report -> load -> communities -> questions.

Used by ``graphrag-got demo`` (README's first command) and usable from Python. Every step is the
same function the individual commands call, so the demo proves the pipeline rather than a special
path. Each step is idempotent and cached: a rerun on an unchanged corpus makes no LLM call.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError
from graphrag_got.common.progress import ProgressCallback
from graphrag_got.llm import server as llm_server
from graphrag_got.pipeline.steps import DEMO_STEPS, RunRecord, StepContext, StepOutcome, run_steps

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


def answer_check_lines(res: Any) -> list[str]:
    """The lines the demo prints after an answer: claims kept, left out and why (each left-out claim
    with its reason), a language retry, and the answer's warnings (a language that still differs)."""
    from graphrag_got.search.support import check_lines

    support = getattr(res, "support", None)
    kept, left = (len(support.kept), support.left_out) if support is not None else (0, [])
    recited = [c for c in support.kept if c.recited] if support is not None else []
    rewritten = [c for c in support.kept if c.pasted is not None] if support is not None else []
    lines = check_lines(getattr(res, "answer_format", None), kept, left, recited=recited, rewritten=rewritten,
                        language_retry=bool(getattr(res, "language_retry", False)))  # fmt: skip
    form = getattr(res, "answer_form", None) or getattr(res, "reduce_form", None)
    if form == "extractive" and lines:  # how the answer was made (search/local_answer.py, search/global_map.py)
        lines.insert(0, "answer form: extractive (built on the sources' own sentences; every claim checked)")
    return lines + [f"warning: {w}" for w in getattr(res, "warnings", None) or []]


def run_demo(settings: Settings, *, local_question: str | None = None, global_question: str | None = None,
             say: Callable[[str], None] | None = None, progress: ProgressCallback | None = None,
             chat: Any = None, embedder: Any = None) -> DemoResult:
    """Run every step; ``say`` receives the lines that tell the user what each step did (default: the
    log, at INFO) and ``progress`` the progress events of the long steps (default: none).

    The indexing steps are :data:`graphrag_got.pipeline.steps.DEMO_STEPS` (the same functions as
    ``graphrag-got build``), then a local and a global question and the HTML view of the graph.
    Questions not given come from the corpus's ``demo_questions.json``; with neither, a
    ``ConfigError`` says to pass them. ``chat``/``embedder`` replace the configured models (tests).

    The CLI passes ``print`` and a progress bar. Until every library step emits ProgressEvents,
    ``progress`` may also receive plain strings from the older ones (the CLI renderer takes both).
    """
    say = say or logger.info
    corpus = Path(settings.files.corpus_path)
    shipped = demo_questions(corpus)
    local_question = local_question or shipped.get("local")
    global_question = global_question or shipped.get("global")
    if not local_question or not global_question:
        raise ConfigError(f"no demo questions: {corpus} has no {QUESTIONS_FILE}; pass "
                          "--local-question and --global-question")
    res = DemoResult()
    stored_answers = _answer_cache(settings)
    answers_mid = 0

    def ask_local(ctx: StepContext) -> StepOutcome:
        nonlocal answers_mid
        from graphrag_got.search.local import local_search

        answers_mid = stored_answers()
        lr = local_search(ctx.driver, settings.neo4j, local_question, ontology=ctx.require_ontology(), chat=ctx.chat,
                          search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
        res.facts["local"] = lr.context_lines
        res.answers["local"] = lr.answer or ""
        lines = [f"Q: {local_question}",
                 f"anchors: {', '.join(a.name for a in lr.anchors) or 'none'}; facts in context: {len(lr.facts)}"]
        lines += [f"  - {line}" for line in lr.context_lines[:8]]
        lines.append(f"A: {lr.answer}")
        lines += answer_check_lines(lr)
        return StepOutcome(lines=lines, llm_calls={"ask local": lr.llm_calls})

    def ask_global(ctx: StepContext) -> StepOutcome:
        from graphrag_got.search.global_ import global_search

        gr = global_search(ctx.driver, settings.neo4j, global_question, chat=ctx.chat,
                           search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
        res.answers["global"] = gr.answer or ""
        return StepOutcome(lines=[f"Q: {global_question}",
                                  f"communities rated {len(gr.ratings)}, kept {len(gr.kept)} (threshold {gr.threshold})",
                                  f"A: {gr.answer}", *answer_check_lines(gr)],
                           llm_calls={"ask global": gr.llm_calls})  # fmt: skip

    def viz(ctx: StepContext) -> StepOutcome:
        from graphrag_got.report.viz import graph_from_neo4j, render_html

        nodes, edges, titles = graph_from_neo4j(ctx.driver, settings.neo4j)
        out = settings.files.out_dir / "graph.html"
        onto = ctx.require_ontology()
        render_html(nodes, edges, out, f"graphrag_got: {onto.name or 'knowledge graph'}", legend_labels=titles or None)
        return StepOutcome(lines=[f"{len(nodes)} nodes, {len(edges)} edges -> {out}"], paths={"graph": out})

    steps = [*DEMO_STEPS, ("ask local", ask_local), ("ask global", ask_global), ("viz", viz)]
    ctx = StepContext(settings=settings, corpus=corpus, progress=progress, chat=chat, embedder=embedder)
    record = RunRecord(timings=res.timings)
    with llm_server.scope():  # a llama-server the demo starts is stopped at its end
        run_steps(steps, ctx, say, record)
    res.paths.update(record.paths())
    res.llm_calls.update(record.llm_calls())

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
