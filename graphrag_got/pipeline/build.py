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
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from graphrag_got.config import Settings
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback

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
                "extraction": str(self.extraction_path) if self.extraction_path else None}


def run_build(settings: Settings, corpus: str | Path | None = None, *, chat: Any = None, embedder: Any = None,
              communities: bool = True, say: Callable[[str], None] | None = None,
              progress: ProgressCallback | None = None) -> BuildResult:
    """Bring the graph in line with ``corpus`` (default ``settings.corpus_path``); see the module doc.

    ``chat``/``embedder`` replace the configured LLM and embedder (tests, notebooks); ``say`` gets one
    line per thing done (default: the log at INFO); ``progress`` the long steps' events.
    """
    say = say or logger.info
    corpus = Path(corpus or settings.corpus_path)
    res = BuildResult(corpus=corpus)

    def step(name: str) -> _Step:
        return _Step(name, res, say)

    with step("ontology"):
        onto = Ontology.from_file(settings.ontology_path)
        res.lines["ontology"] = [f"{onto.source}: {len(onto.classes)} classes, {len(onto.relations)} relations"]

    with step("neo4j"):
        from graphrag_got.graph.server import ensure_running

        ensure_running(settings, progress=progress)
        res.lines["neo4j"] = [f"Neo4j at {settings.neo4j_uri}"]

    with step("extract"):
        from graphrag_got.extract.run import run_extraction

        ex = run_extraction(settings, onto, corpus, chat=chat, progress=progress)
        res.extraction_path = ex.out_path
        res.llm_calls["extract"] = ex.llm_calls
        res.lines["extract"] = ex.lines()

    from graphrag_got.graph.db import connect

    driver = connect(settings)
    try:
        with step("load"):
            from graphrag_got.graph.load import load_extraction

            ls = load_extraction(driver, settings, ex.out_path, onto, progress=progress, embed=False)
            res.lines["load"] = [f"documents +{ls.documents_added} ~{ls.documents_updated} ={ls.documents_unchanged} "
                                 f"-{ls.documents_pruned}; entities written {ls.entities_written}, relationships "
                                 f"written {ls.relations_written}; refused {ls.relations_refused}"]

        if settings.embeddings:
            with step("embeddings"):
                from graphrag_got.graph.vectors import embed_graph

                es = embed_graph(driver, settings, embedder, progress=progress)
                res.embedding_calls["chunks+entities"] = es.model_calls
                res.lines["embeddings"] = [f"{es.chunks_embedded} chunks and {es.entities_embedded} entities embedded, "
                                           f"{es.unchanged} unchanged; {es.model_calls} model call(s), "
                                           f"{es.cache_hits} cache hit(s)"
                                           + (f"; vector indexes created: {', '.join(es.indexes_created)}"
                                              if es.indexes_created else "")]

        if communities:
            with step("communities"):
                calls, embedded, lines = _communities(driver, settings, onto, chat, embedder, progress)
                res.llm_calls["communities"] = calls
                res.embedding_calls["community reports"] = embedded
                res.lines["communities"] = lines
    finally:
        driver.close()
    return res


def _communities(driver: Any, settings: Settings, onto: Ontology, chat: Any, embedder: Any,
                 progress: ProgressCallback | None) -> tuple[int, int, list[str]]:
    """Detect (every level) and write the communities, then report the changed ones and embed them."""
    from graphrag_got.communities import core as cm
    eg = cm.read_entity_graph(driver, settings, onto)
    if not eg.entities:
        return 0, 0, ["the graph has no entities: no communities"]
    comms = cm.detect_communities(eg, settings.community_resolution, settings.community_seed,
                                  algorithm=settings.community_algorithm, max_size=settings.community_max_size,
                                  max_levels=settings.community_max_levels)
    cm.write_communities(driver, settings, comms)
    levels = sorted({c.level for c in comms})
    lines = [f"{len(comms)} communities over {len(levels)} level(s) ({settings.community_algorithm}): "
             + ", ".join(f"level {lv} {sum(1 for c in comms if c.level == lv)}" for lv in levels)]
    sm = cm.summarize_communities(driver, settings, chat, ontology=onto, progress=progress, embedder=embedder)
    lines.append(f"reports: {sm.generated} new, {sm.cached + sm.unchanged} reused, {len(sm.failed)} failed; "
                 f"{sm.llm_calls} LLM calls")
    if sm.embedding_error:
        lines.append(f"warning: reports not embedded: {sm.embedding_error}")
    elif settings.embeddings:
        lines.append(f"report embeddings: {sm.embedded} written, {sm.embeddings_unchanged} unchanged, "
                     f"{sm.embedding_calls} model call(s)")
    return sm.llm_calls, sm.embedding_calls, lines


class _Step:
    def __init__(self, name: str, res: BuildResult, say: Callable[[str], None]):
        self.name, self.res, self.say = name, res, say

    def __enter__(self) -> "_Step":
        self.t0 = time.monotonic()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        self.res.timings[self.name] = time.monotonic() - self.t0
        if exc_type is None:
            self.say(f"== {self.name} ({self.res.timings[self.name]:.1f}s)")
            for line in self.res.lines.get(self.name, []):
                self.say("  " + line)
        elif exc_type is not KeyboardInterrupt:
            logger.error("build step '%s' failed after %.1fs", self.name, self.res.timings[self.name])
