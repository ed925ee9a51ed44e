"""The incremental pipeline for a corpus that changes every day (a notes vault): one call, one command.

``run_build`` chains the same functions the individual commands call:

1. **extract** - every chunk whose text (and ontology, prompt, model) is unchanged is answered from
   the extraction cache; only new or edited notes cost LLM calls. ``extraction.json`` is rewritten
   for the whole corpus, so a deleted note is simply absent from it.
2. **load** - documents whose hash is unchanged are skipped; changed ones are rewritten; documents
   no longer in the corpus are pruned with the entities and relations only they supported.
3. **embeddings** - chunks and entities whose text changed are embedded (content-hash cache: an
   unchanged text never reaches the embedder twice).
4. **communities** - detected again on the whole graph (seconds), reports generated only for
   communities whose content changed (cached by content hash).

A second build over an unchanged corpus therefore makes zero LLM and zero embedding calls; the
result counts both so a daily job can log it. Each step is idempotent: an interrupted build is
resumed by running it again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphrag_got.config import Settings
from graphrag_got.common.progress import ProgressCallback
from graphrag_got.extract.strategy import StrategyChoice, choose_strategy, configured_model
from graphrag_got.llm import server as llm_server
from graphrag_got.pipeline.steps import BUILD_STEPS, RunRecord, StepContext, run_steps

logger = logging.getLogger(__name__)


@dataclass
class BuildResult:
    """What a build did: per-step seconds, LLM and embedding calls, and the step summaries' lines."""

    corpus: Path
    timings: dict[str, float] = field(default_factory=dict)
    llm_calls: dict[str, int] = field(default_factory=dict)
    embedding_calls: dict[str, int] = field(default_factory=dict)
    lines: dict[str, list[str]] = field(default_factory=dict)
    extraction_path: Path | None = None
    strategy: str = ""  # the extraction strategy that ran
    tokens: tuple[int, int] = (0, 0)  # the extraction's model calls: prompt and answer tokens

    @property
    def total_llm_calls(self) -> int:
        return sum(self.llm_calls.values())

    @property
    def total_embedding_calls(self) -> int:
        return sum(self.embedding_calls.values())

    @property
    def seconds(self) -> float:
        return sum(self.timings.values())

    def as_dict(self) -> dict[str, Any]:
        return {"corpus": str(self.corpus), "timings": self.timings, "llm_calls": self.llm_calls,
                "embedding_calls": self.embedding_calls, "total_llm_calls": self.total_llm_calls,
                "total_embedding_calls": self.total_embedding_calls, "seconds": round(self.seconds, 3),
                "strategy": self.strategy, "tokens_in": self.tokens[0], "tokens_out": self.tokens[1],
                "extraction": str(self.extraction_path) if self.extraction_path else None}


def build_strategy(settings: Settings, corpus: str | Path, chat: Any = None) -> StrategyChoice:
    """The extraction strategy of a build of ``corpus`` (``GRAPHRAG_EXTRACTION``; ``auto``: terms for a
    notes vault with a small model), without loading the model."""
    if chat is not None or settings.extract.strategy != "auto":
        provider = "custom"
    else:
        from graphrag_got.llm.factory import resolve_provider

        provider = resolve_provider(settings.llm)
    model = configured_model(settings.llm, provider) if chat is None else None
    return choose_strategy(settings.extract, corpus, provider, model, chunking=settings.chunking)


def run_build(settings: Settings, corpus: str | Path | None = None, *, chat: Any = None, embedder: Any = None,
              communities: bool = True, say: Callable[[str], None] | None = None,
              progress: ProgressCallback | None = None, relations_for: Sequence[str] = ()) -> BuildResult:
    """Bring the graph in line with ``corpus`` (default ``settings.files.corpus_path``); see the module doc.

    ``chat``/``embedder`` replace the configured LLM and embedder (tests, notebooks); ``say`` gets one
    line per thing done (default: the log at INFO), the first ones saying which extraction strategy
    runs and why; ``progress`` the long steps' events. ``relations_for``: notes or folders whose typed
    relations the mentions strategy asks as well (cached: a rerun asks nothing). The steps are
    :data:`graphrag_got.pipeline.steps.BUILD_STEPS` (``communities=False`` stops before communities).
    """
    say = say or logger.info
    corpus = Path(corpus or settings.files.corpus_path)
    res = BuildResult(corpus=corpus)
    choice = build_strategy(settings, corpus, chat)
    for line in choice.lines():
        say(line)
    res.strategy = choice.strategy
    steps = [(name, step) for name, step in BUILD_STEPS
             if (communities or name != "communities") and (settings.embedding.enabled or name != "embeddings")]
    ctx = StepContext(settings=settings, corpus=corpus, progress=progress, chat=chat, embedder=embedder,
                      strategy=choice, relations_for=list(relations_for))
    record = RunRecord(timings=res.timings)
    try:
        with llm_server.scope():  # a llama-server the build starts is stopped at its end
            run_steps(steps, ctx, say, record)
    finally:
        res.llm_calls.update(record.llm_calls())
        res.embedding_calls.update(record.embedding_calls())
        res.lines.update({name: o.lines for name, o in record.outcomes.items()})
        if ctx.extraction is not None:
            res.extraction_path = ctx.extraction.out_path
            res.tokens = (ctx.extraction.input_tokens, ctx.extraction.output_tokens)
    return res
