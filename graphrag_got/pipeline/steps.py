"""The pipeline's steps, each a function of one shared :class:`StepContext`, and the lists they run in.

``BUILD_STEPS`` is what ``graphrag-got build`` runs, ``DEMO_STEPS`` what ``graphrag-got demo`` runs;
the CLI commands of one stage (``communities detect``) call the same step helpers
(:func:`detect_and_write`). A step is written once, so a setting one of them honours (for example
``GRAPHRAG_COMMUNITY_ALGORITHM``) is honoured by all of them.

Every step returns a :class:`StepOutcome`: the lines that tell the user what it did, the model and
embedding calls it made (by a name such as ``extract`` or ``community reports``) and the files it
wrote. :func:`run_steps` times each step and says its lines; it never prints (``say`` decides).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from graphrag_got.common.progress import ProgressCallback
from graphrag_got.config import Settings

if TYPE_CHECKING:
    import neo4j

    from graphrag_got.communities.detect import Community
    from graphrag_got.communities.graph import EntityGraph
    from graphrag_got.extract.summary import ExtractionSummary
    from graphrag_got.extract.strategy import StrategyChoice
    from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)


@dataclass
class StepContext:
    """What the steps share: settings, the corpus, replaceable models, and what earlier steps made."""

    settings: Settings
    corpus: Path
    progress: ProgressCallback | None = None
    chat: Any = None  # a LangChain chat model replacing the configured one (tests, notebooks)
    embedder: Any = None  # a LangChain Embeddings replacing the configured one
    ontology: "Ontology | None" = None  # set by the ontology step
    extraction: "ExtractionSummary | None" = None  # set by the extract step
    strategy: "StrategyChoice | None" = None  # the extraction strategy the caller chose (None: the extract step's)
    relations_for: list[str] = field(default_factory=list)  # mentions strategy: notes whose typed relations are asked
    _driver: "neo4j.Driver | None" = None

    @property
    def driver(self) -> "neo4j.Driver":
        """One driver for every step that needs the graph, opened on first use (closed by run_steps)."""
        if self._driver is None:
            from graphrag_got.graph.db import connect

            self._driver = connect(self.settings.neo4j)
        return self._driver

    def close(self) -> None:
        if self._driver is not None:
            self._driver.close()
            self._driver = None

    def require_ontology(self) -> "Ontology":
        if self.ontology is None:
            from graphrag_got.ontology.model import Ontology

            self.ontology = Ontology.from_file(self.settings.files.ontology_path)
        return self.ontology


@dataclass
class StepOutcome:
    """What one step did, for the user (``lines``) and for the run's totals."""

    lines: list[str] = field(default_factory=list)
    llm_calls: dict[str, int] = field(default_factory=dict)
    embedding_calls: dict[str, int] = field(default_factory=dict)
    paths: dict[str, Path] = field(default_factory=dict)


Step = Callable[[StepContext], StepOutcome]


@dataclass
class RunRecord:
    """Per-step seconds and outcomes of a run of steps, in the order they ran."""

    timings: dict[str, float] = field(default_factory=dict)
    outcomes: dict[str, StepOutcome] = field(default_factory=dict)

    def llm_calls(self) -> dict[str, int]:
        return {k: v for o in self.outcomes.values() for k, v in o.llm_calls.items()}

    def embedding_calls(self) -> dict[str, int]:
        return {k: v for o in self.outcomes.values() for k, v in o.embedding_calls.items()}

    def paths(self) -> dict[str, Path]:
        return {k: v for o in self.outcomes.values() for k, v in o.paths.items()}


@contextmanager
def timed_step(name: str, record: RunRecord, say: Callable[[str], None]) -> Iterator[None]:
    """Say ``== name``, time the block into ``record.timings`` and log a step that failed."""
    say(f"== {name}")
    t0 = time.monotonic()
    try:
        yield
    except KeyboardInterrupt:
        record.timings[name] = time.monotonic() - t0
        raise
    except BaseException:
        record.timings[name] = time.monotonic() - t0
        logger.error("step '%s' failed after %.1fs", name, record.timings[name])
        raise
    record.timings[name] = time.monotonic() - t0


def run_steps(steps: Sequence[tuple[str, Step]], ctx: StepContext, say: Callable[[str], None],
              record: RunRecord | None = None) -> RunRecord:
    """Run ``steps`` in order on ``ctx``; each step's lines are said (indented) as it ends.

    The driver a step opened is closed at the end, also when a step fails.
    """
    record = record if record is not None else RunRecord()
    try:
        for name, step in steps:
            with timed_step(name, record, say):
                outcome = step(ctx)
                record.outcomes[name] = outcome
                for line in outcome.lines:
                    say("  " + line)
    finally:
        ctx.close()
    return record


# --- the steps ------------------------------------------------------------------------------------


def ontology_step(ctx: StepContext) -> StepOutcome:
    """Read and check the ontology (every later step uses this one object)."""
    from graphrag_got.ontology.model import Ontology

    onto = ctx.ontology = Ontology.from_file(ctx.settings.files.ontology_path)
    return StepOutcome(lines=[f"{onto.source}: {len(onto.classes)} classes, {len(onto.relations)} relations"])


def model_step(ctx: StepContext) -> StepOutcome:
    """Install the embedded model when it is the provider and missing (no-op for other providers)."""
    from graphrag_got.llm.factory import resolve_provider

    provider = resolve_provider(ctx.settings.llm)
    if ctx.chat is not None:
        return StepOutcome(lines=["LLM: the chat model given by the caller"])
    if provider != "llamacpp":
        return StepOutcome(lines=[f"LLM: {provider}"])
    from graphrag_got.llm.model_store import REGISTRY, install_model, is_installed

    name = ctx.settings.llm.llamacpp_model
    if name in REGISTRY and not is_installed(name, ctx.settings.llm, files=ctx.settings.files):
        # the download is long: its lines go to the progress callback (or the log) as they come
        install_model(name, ctx.settings.llm, progress=ctx.progress or (lambda line: logger.info("%s", line)),
                      files=ctx.settings.files)
    from graphrag_got.llm.server import choose_backend

    backend = choose_backend(ctx.settings.llm)
    runs = (f"served by llama-server with {ctx.settings.llm.llama_server_slots} parallel slot(s), started when first "
            "called" if backend.server else f"in this process ({backend.why})")
    return StepOutcome(lines=[f"LLM: embedded llama.cpp, {name}, {runs}"])


def neo4j_step(ctx: StepContext) -> StepOutcome:
    """Make sure a Neo4j server answers (starting the embedded one when none does)."""
    from graphrag_got.graph.server import ensure_running

    info = ensure_running(ctx.settings.neo4j, files=ctx.settings.files, progress=ctx.progress)
    pid = getattr(info, "pid", None)
    return StepOutcome(lines=[f"Neo4j at {ctx.settings.neo4j.uri}" + (f" (embedded, pid {pid})" if pid else "")])


def extract_step(ctx: StepContext) -> StepOutcome:
    """Extract the corpus (cached per chunk: unchanged chunks cost no LLM call)."""
    from graphrag_got.extract.run import run_extraction

    ex = ctx.extraction = run_extraction(ctx.settings.extract, ctx.require_ontology(), ctx.corpus, chat=ctx.chat,
                                         progress=ctx.progress, strategy=ctx.strategy,
                                         relations_for=ctx.relations_for, files=ctx.settings.files,
                                         chunking=ctx.settings.chunking, llm=ctx.settings.llm,
                                         embedding=ctx.settings.embedding)  # fmt: skip
    return StepOutcome(lines=ex.lines(), llm_calls={"extract": ex.llm_calls}, paths={"extraction": ex.out_path})


def _extraction_path(ctx: StepContext) -> Path:
    if ctx.extraction is not None:
        return Path(ctx.extraction.out_path)
    return ctx.settings.files.out_dir / "extraction.json"


def report_step(ctx: StepContext) -> StepOutcome:
    """Write the discarded-relations report of the extraction."""
    from graphrag_got.report.discarded import write_report

    written = write_report(_extraction_path(ctx), ctx.settings.files.out_dir, ontology=ctx.require_ontology())
    paths = {f"report.{fmt}": Path(p) for fmt, p in written.items()}
    shown = written.get("html") or next(iter(written.values()))
    return StepOutcome(lines=[f"discarded-relations report: {shown}"], paths=paths)


def load_step(ctx: StepContext) -> StepOutcome:
    """MERGE the extraction into Neo4j (incremental per document); embeddings are their own step."""
    from graphrag_got.extract.fingerprint import file_digest
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.pipeline import load_inputs

    path, onto = _extraction_path(ctx), ctx.require_ontology()
    file = file_digest(path)  # "absent": load_extraction says what is wrong
    kept = load_inputs.unchanged(ctx.settings, load_inputs.digest(ctx.driver, ctx.settings, file, onto.hash)) \
        if file != "absent" else None
    if kept is not None:
        return StepOutcome(lines=["load unchanged (same extraction file, ontology, settings and graph as the last "
                                  f"build): nothing written; last load: {kept}"])
    load_inputs.forget(ctx.settings)  # whatever this load writes, the last build's digest no longer vouches for it
    built = ctx.extraction.extraction if ctx.extraction is not None else None  # what this run just wrote to path
    s = ctx.settings
    ls = load_extraction(ctx.driver, s.neo4j, built if built is not None else path, onto, progress=ctx.progress,
                         embed=False, source=str(path), graph=s.graph, extract=s.extract, embedding=s.embedding,
                         code=s.code, llm=s.llm, files=s.files)
    line = ls.line()
    load_inputs.remember(ctx.settings, load_inputs.digest(ctx.driver, ctx.settings, file, onto.hash), line)
    return StepOutcome(lines=[line])


def embeddings_step(ctx: StepContext) -> StepOutcome:
    """Embed the chunks and entities whose text changed (nothing when GRAPHRAG_EMBEDDINGS is off)."""
    if not ctx.settings.embedding.enabled:
        return StepOutcome(lines=["embeddings are off (GRAPHRAG_EMBEDDINGS)"])
    from graphrag_got.graph.vectors import embed_graph

    es = embed_graph(ctx.driver, ctx.settings.neo4j, ctx.settings.embedding, ctx.embedder, progress=ctx.progress,
                     llm=ctx.settings.llm, files=ctx.settings.files)
    line = (f"{es.chunks_embedded} chunks and {es.entities_embedded} entities embedded, {es.unchanged} unchanged; "
            f"{es.model_calls} model call(s), {es.cache_hits} cache hit(s)"
            + (f"; vector indexes created: {', '.join(es.indexes_created)}" if es.indexes_created else ""))
    return StepOutcome(lines=[line], embedding_calls={"chunks+entities": es.model_calls})


def detect_and_write(driver: "neo4j.Driver", settings: Settings, ontology: "Ontology", *,
                     fresh: bool = False) -> tuple["EntityGraph", list["Community"], dict[str, int]]:
    """Read the entity graph, detect communities with the configured algorithm, resolution, seed,
    size cap and levels, and write them (replacing earlier ones). With no entity nothing is written
    and the list is empty. Returns the graph, the communities and the write counts.

    Leiden keeps the unchanged communities of the last detection (``settings.communities.incremental``)
    unless ``fresh``."""
    from graphrag_got.communities.detect import detect_communities
    from graphrag_got.communities.graph import read_entity_graph
    from graphrag_got.communities.store import previous_communities, write_communities
    from graphrag_got.pipeline.community_inputs import forget

    forget(settings)  # whatever this detection writes, the last build's digest no longer vouches for it
    eg = read_entity_graph(driver, settings.neo4j, ontology, communities=settings.communities, files=settings.files)
    if not eg.entities:
        return eg, [], {}
    incremental = settings.communities.incremental and not fresh
    previous = previous_communities(driver, settings.neo4j, communities=settings.communities) if incremental else None
    comms = detect_communities(eg, settings.communities.resolution, settings.communities.seed,
                               algorithm=settings.communities.algorithm, max_size=settings.communities.max_size,
                               max_levels=settings.communities.max_levels, previous=previous)  # fmt: skip
    counts = write_communities(driver, settings.neo4j, comms, communities=settings.communities,
                               graph_settings=settings.graph)
    return eg, comms, counts


def kept_line(comms: Sequence["Community"]) -> str:
    """``; 480 of 495 communities kept from the last detection`` when the detection was incremental."""
    kept = sum(1 for c in comms if c.kept)
    return f"; {kept} of {len(comms)} communities kept from the last detection" if kept else ""


def communities_step(ctx: StepContext) -> StepOutcome:
    """Detect (every level) and write the communities, then report the changed ones and embed them."""
    from graphrag_got.communities.reports import summarize_communities

    from graphrag_got.pipeline import community_inputs
    from graphrag_got.pipeline.report_check import FactsCheck, check_line

    settings = ctx.settings
    onto = ctx.require_ontology()
    kept = community_inputs.unchanged(ctx.driver, settings, community_inputs.graph_digest(ctx.driver, settings, onto.hash))
    if kept:
        return StepOutcome(lines=[f"communities unchanged (same documents, graph size and settings as the last build): "
                                  f"kept {kept} communities and their reports"],
                           llm_calls={"communities": 0}, embedding_calls={"community reports": 0})  # fmt: skip
    eg, comms, _ = detect_and_write(ctx.driver, settings, onto)
    if not eg.entities:
        return StepOutcome(lines=["the graph has no entities: no communities"],
                           llm_calls={"communities": 0}, embedding_calls={"community reports": 0})  # fmt: skip
    levels = sorted({c.level for c in comms})
    lines = [f"{len(comms)} communities over {len(levels)} level(s) ({settings.communities.algorithm}): "
             + ", ".join(f"level {lv} {sum(1 for c in comms if c.level == lv)}" for lv in levels)
             + kept_line(comms)]
    sm = summarize_communities(ctx.driver, settings.neo4j, ctx.chat, ontology=onto, progress=ctx.progress,
                               embedder=ctx.embedder, graph=eg, check=FactsCheck(), llm=settings.llm,
                               files=settings.files, embedding=settings.embedding,
                               graph_settings=settings.graph)  # fmt: skip
    est = " (estimated)" if sm.tokens_estimated else ""
    reused = sm.cached + sm.unchanged + sm.rechecked
    lines.append(f"reports: {sm.generated} new, {reused} reused, {len(sm.failed)} failed; "
                 f"{sm.llm_calls} LLM calls, tokens in/out {sm.input_tokens}/{sm.output_tokens}{est}")
    lines.append(check_line(sm))
    if sm.embedding_error:
        lines.append(f"warning: reports not embedded: {sm.embedding_error}")
    elif settings.embedding.enabled:
        lines.append(f"report embeddings: {sm.embedded} written, {sm.embeddings_unchanged} unchanged, "
                     f"{sm.embedding_calls} model call(s)")
    paths = {"communities": Path(sm.export_path)} if sm.export_path else {}
    if not sm.failed and not sm.embedding_error:  # a later build retries what failed
        community_inputs.remember(settings, community_inputs.graph_digest(ctx.driver, settings, onto.hash))
    return StepOutcome(lines=lines, llm_calls={"communities": sm.llm_calls},
                       embedding_calls={"community reports": sm.embedding_calls}, paths=paths)  # fmt: skip


#: ``graphrag-got build``: bring the graph in line with a corpus that changes every day.
BUILD_STEPS: tuple[tuple[str, Step], ...] = (
    ("ontology", ontology_step),
    ("neo4j", neo4j_step),
    ("extract", extract_step),
    ("load", load_step),
    ("embeddings", embeddings_step),
    ("communities", communities_step),
)

#: The indexing part of ``graphrag-got demo`` (its questions and the graph view follow).
DEMO_STEPS: tuple[tuple[str, Step], ...] = (
    ("ontology", ontology_step),
    ("model", model_step),
    ("neo4j", neo4j_step),
    ("extract", extract_step),
    ("report", report_step),
    ("load", load_step),
    ("embeddings", embeddings_step),
    ("communities", communities_step),
)
