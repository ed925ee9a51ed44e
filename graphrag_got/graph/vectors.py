"""Embeddings in Neo4j: vectors on Chunk and Entity nodes and their vector indexes.

:func:`embed_graph` embeds every chunk (heading and text) and entity (``"name (Class): key: value,
...; aliases: ..."``) whose stored ``embedding_hash`` differs from the hash of its current text, so
a second run over an unchanged graph embeds nothing (and the embedder's disk cache means a text
seen before, even in another graph, costs no model call). The hash covers the model id too: after
a model change every node is embedded again. Vectors are written in ``UNWIND`` batches as float32
vector properties (``db.create.setNodeVectorProperty``) and indexed by the cosine vector indexes
``chunk_embedding`` and ``entity_embedding`` (created ``IF NOT EXISTS``; an index whose dimension
no longer matches the model is dropped and created again, with a warning).

:func:`embed_nodes` does the same for any labelled nodes given as ``(id, text)`` rows (community
reports, notes...), with an index of the caller's choosing. :func:`vector_index_dimensions` tells
search which indexes exist.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j
from langchain_core.embeddings import Embeddings

from graphrag_got.graph import cypher, vector_cypher
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings
from graphrag_got.llm.embeddings import embedding_dimensions, get_embedder, text_hash
from graphrag_got.graph.db import read_all, run_schema, write_query, write_session
from graphrag_got.ontology.model import RESERVED_PROPERTIES
from graphrag_got.common.progress import ProgressCallback, ProgressEvent, no_progress

log = logging.getLogger(__name__)

#: Node properties never put into an entity's text: the graph's own fields and the vector itself.
SKIP_PROPERTIES = sorted(RESERVED_PROPERTIES | {vector_cypher.EMBEDDING, vector_cypher.EMBEDDING_HASH})
MAX_VALUE_CHARS = 200  # one property value in an entity's text
PAGE_SIZE = 2000  # nodes read per page (keyset pagination on the unique id)


@dataclass
class EmbedSummary:
    """What one embedding run did. ``embedded`` nodes got a new vector, ``unchanged`` kept theirs;
    ``cache_hits`` / ``model_calls`` come from the embedder (texts found in its cache, batches the
    model computed)."""

    chunks_embedded: int = 0
    entities_embedded: int = 0
    nodes_embedded: int = 0  # embed_nodes: other labels
    unchanged: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    model_calls: int = 0
    dimensions: int | None = None
    model: str = ""
    indexes_created: list[str] = field(default_factory=list)
    indexes_recreated: list[str] = field(default_factory=list)
    skipped: bool = False  # embeddings are turned off (GRAPHRAG_EMBEDDINGS=0)
    seconds: float = 0.0

    @property
    def embedded(self) -> int:
        return self.chunks_embedded + self.entities_embedded + self.nodes_embedded

    def as_dict(self) -> dict[str, Any]:
        return {"embedded": self.embedded, "chunks_embedded": self.chunks_embedded,
                "entities_embedded": self.entities_embedded, "nodes_embedded": self.nodes_embedded,
                "unchanged": self.unchanged, "cache_hits": self.cache_hits, "cache_misses": self.cache_misses,
                "model_calls": self.model_calls, "dimensions": self.dimensions, "model": self.model,
                "indexes_created": self.indexes_created, "indexes_recreated": self.indexes_recreated,
                "skipped": self.skipped, "seconds": round(self.seconds, 3)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Texts
# ---------------------------------------------------------------------------------------------


def chunk_text(heading: str | None, text: str | None) -> str:
    """What a chunk's vector is computed from: its heading (when it has one) and its text."""
    body = (text or "").strip()
    head = (heading or "").strip()
    return f"{head}\n{body}" if head and not body.startswith(head) else body


def _value_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value if v is not None and not isinstance(v, (list, dict)))
    elif isinstance(value, (str, int, float, bool)):
        text = str(value)
    else:
        return ""
    text = " ".join(text.split())
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def entity_text(name: str | None, type_: str | None, properties: Iterable[Sequence[Any]] = (),
                aliases: Iterable[str] = ()) -> str:  # fmt: skip
    """``"name (Class): key: value, ...; aliases: a, b"``: what an entity's vector is computed from.

    Properties are sorted by key so the text (and its hash) does not depend on storage order.
    """
    head = f"{name or ''} ({type_})" if type_ else (name or "")
    props = []
    for pair in sorted((p for p in properties if len(p) == 2), key=lambda p: str(p[0])):
        value = _value_text(pair[1])
        if value:
            props.append(f"{pair[0]}: {value}")
    text = head + (": " + ", ".join(props) if props else "")
    names = [a for a in aliases if isinstance(a, str) and a.strip() and a != name]
    if names:
        text += "; aliases: " + ", ".join(names)
    return text


def _hash(model: str, text: str) -> str:
    return text_hash(f"{model}\0{text}")


# ---------------------------------------------------------------------------------------------
# Indexes
# ---------------------------------------------------------------------------------------------


def vector_index_dimensions(driver: neo4j.Driver, db: Neo4jSettings) -> dict[str, int]:
    """Every vector index of the database and its dimension (name -> dimensions)."""
    rows = read_all(driver, db, vector_cypher.vector_indexes())
    return {r["name"]: int(r["dimensions"]) for r in rows if r.get("dimensions") is not None}


def ensure_vector_index(driver: neo4j.Driver, db: Neo4jSettings, name: str, label: str, dimensions: int,
                        summary: EmbedSummary | None = None) -> str:  # fmt: skip
    """Create the cosine vector index ``name`` on ``(:label).embedding`` if missing; recreate it when
    its dimension is not ``dimensions`` (the model changed). Returns "created", "recreated" or "kept"."""
    existing = vector_index_dimensions(driver, db).get(name)
    if existing == dimensions:
        return "kept"
    outcome = "created"
    if existing is not None:
        log.warning("vector index %s has %d dimensions but the embedding model gives %d: dropping and "
                    "recreating it (the model changed; every %s is embedded again)", name, existing, dimensions, label)
        outcome = "recreated"
    with write_session(driver, db) as ses:  # several writers may set it up at once: run_schema takes that
        run_schema(ses, ([vector_cypher.drop_index(name)] if outcome == "recreated" else [])
                   + [vector_cypher.create_vector_index(name, label, dimensions)])
    write_query(driver, db, cypher.await_indexes())
    if summary is not None:
        (summary.indexes_recreated if outcome == "recreated" else summary.indexes_created).append(name)
    return outcome


# ---------------------------------------------------------------------------------------------
# Embedding
# ---------------------------------------------------------------------------------------------


def _model_name(embedder: Embeddings) -> str:
    return str(getattr(embedder, "model_id", None) or getattr(embedder, "model_name", None) or type(embedder).__name__)


def _write_vectors(driver: neo4j.Driver, db: Neo4jSettings, batch_size: int, label: str, key: str, rows: list[dict[str, Any]],
                   embedder: Embeddings) -> None:  # fmt: skip
    """Embed ``rows`` ({id, text, hash}) and write their vectors, one UNWIND batch per model batch."""
    step = max(1, batch_size)
    for start in range(0, len(rows), step):
        part = rows[start:start + step]
        vectors = embedder.embed_documents([r["text"] for r in part])
        payload = [{"id": r["id"], "embedding": v, "hash": r["hash"]} for r, v in zip(part, vectors)]
        write_query(driver, db, vector_cypher.set_embeddings(label, key), {"rows": payload})


def _pages(driver: neo4j.Driver, db: Neo4jSettings, query: str, **params: Any) -> Iterable[list[dict[str, Any]]]:
    after = ""
    while True:
        rows = read_all(driver, db, query, after=after, limit=PAGE_SIZE, **params)
        if not rows:
            return
        yield rows
        after = rows[-1]["id"]
        if len(rows) < PAGE_SIZE:
            return


def _begin(embedding: EmbeddingSettings, embedder: Embeddings | None, *, llm: LLMSettings, files: FilesSettings
           ) -> tuple[EmbedSummary, Embeddings | None, tuple[int, int, int]]:
    """A run's summary (model and dimensions filled in), its embedder and the embedder's counters
    before the run; the embedder is None (and the summary ``skipped``) when embeddings are off."""
    summary = EmbedSummary()
    if not embedding.enabled:
        summary.skipped = True
        return summary, None, (0, 0, 0)
    embedder = embedder or get_embedder(embedding, llm=llm, files=files)
    summary.model = _model_name(embedder)
    summary.dimensions = embedding_dimensions(embedder)
    return summary, embedder, _count(embedder)


def _count(embedder: Embeddings) -> tuple[int, int, int]:
    stats = getattr(embedder, "stats", None)
    if stats is None:
        return 0, 0, 0
    return int(stats.hits), int(stats.misses), int(stats.model_calls)


def embed_graph(driver: neo4j.Driver, db: Neo4jSettings, embedding: EmbeddingSettings,
                embedder: Embeddings | None = None, progress: ProgressCallback | None = None, *,
                llm: LLMSettings, files: FilesSettings) -> EmbedSummary:  # fmt: skip
    """Embed the chunks and entities whose text changed since their vector was computed, and make
    sure both vector indexes exist with the model's dimension (see the module docstring).

    ``embedder`` defaults to :func:`graphrag_got.llm.embeddings.get_embedder` of ``embedding`` (disk-cached;
    ``llm`` and ``files`` say where its model runs and caches). With ``embedding.enabled`` off nothing is
    done and the summary says ``skipped``.
    """
    t0 = time.perf_counter()
    summary, embedder, before = _begin(embedding, embedder, llm=llm, files=files)
    if embedder is None:
        return summary
    emit = progress or no_progress
    model = summary.model
    for name, label in ((vector_cypher.CHUNK_VECTOR_INDEX, cypher.CHUNK),
                        (vector_cypher.ENTITY_VECTOR_INDEX, cypher.ENTITY)):
        ensure_vector_index(driver, db, name, label, summary.dimensions, summary)

    done = 0
    emit(ProgressEvent("embed", 0, None, "chunks"))
    kinds = (
        (vector_cypher.chunks_for_embedding(), {}, lambda r: chunk_text(r.get("heading"), r.get("text")),
         cypher.CHUNK, "id"),
        (vector_cypher.entities_for_embedding(), {"skip": SKIP_PROPERTIES},
         lambda r: entity_text(r.get("name"), r.get("type"), r.get("properties") or (), r.get("aliases") or ()),
         cypher.ENTITY, "uid"),
    )
    for query, page_args, text_of, label, key in kinds:
        for page in _pages(driver, db, query, **page_args):
            todo = []
            for r in page:
                text = text_of(r)
                h = _hash(model, text)
                if r.get("embedding_hash") == h or not text.strip():
                    summary.unchanged += 1
                else:
                    todo.append({"id": r["id"], "text": text, "hash": h})
            _write_vectors(driver, db, embedding.batch_size, label, key, todo, embedder)
            if label == cypher.CHUNK:
                summary.chunks_embedded += len(todo)
            else:
                summary.entities_embedded += len(todo)
            done += len(page)
            emit(ProgressEvent("embed", done, None, f"{done} chunks and entities",
                               stats=_stats(summary, embedder, before)))
    _finish(summary, embedder, before, t0)
    emit(ProgressEvent("embed", done, done, f"{summary.embedded} embedded, {summary.unchanged} unchanged",
                       stats=_stats(summary, embedder, before), finished=True))
    log.info("embeddings: %d chunks and %d entities embedded, %d unchanged, %d cache hits, %d model calls (%s)",
             summary.chunks_embedded, summary.entities_embedded, summary.unchanged, summary.cache_hits,
             summary.model_calls, model)
    return summary


def embed_nodes(driver: neo4j.Driver, db: Neo4jSettings, embedding: EmbeddingSettings, label: str,
                rows: Iterable[tuple[str, str]], index_name: str, embedder: Embeddings | None = None, *,
                llm: LLMSettings, files: FilesSettings, key: str = "id",
                progress: ProgressCallback | None = None) -> EmbedSummary:  # fmt: skip
    """Embed arbitrary ``label`` nodes: ``rows`` are ``(id, text)`` pairs, ``id`` the value of the
    node property ``key``. Nodes whose stored ``embedding_hash`` matches the text are left alone;
    the vector index ``index_name`` on ``(:label).embedding`` is created (or recreated on a
    dimension change). Rows whose node does not exist are ignored by the write.
    """
    t0 = time.perf_counter()
    summary, embedder, before = _begin(embedding, embedder, llm=llm, files=files)
    if embedder is None:
        return summary
    emit = progress or no_progress
    model = summary.model
    ensure_vector_index(driver, db, index_name, label, summary.dimensions, summary)
    items = [(str(i), t) for i, t in rows if t and str(t).strip()]
    stored: dict[str, Any] = {}
    for start in range(0, len(items), PAGE_SIZE):
        ids = [i for i, _ in items[start:start + PAGE_SIZE]]
        query = vector_cypher.stored_embedding_hashes(label, key)
        stored.update({r["id"]: r["hash"] for r in read_all(driver, db, query, ids=ids)})
    todo = []
    for node_id, text in items:
        h = _hash(model, text)
        if stored.get(node_id) == h:
            summary.unchanged += 1
        else:
            todo.append({"id": node_id, "text": text, "hash": h})
    emit(ProgressEvent("embed", 0, len(todo), label))
    _write_vectors(driver, db, embedding.batch_size, label, key, todo, embedder)
    summary.nodes_embedded = len(todo)
    _finish(summary, embedder, before, t0)
    emit(ProgressEvent("embed", len(todo), len(todo), f"{len(todo)} {label} embedded",
                       stats=_stats(summary, embedder, before), finished=True))
    return summary


def _stats(summary: EmbedSummary, embedder: Embeddings, before: tuple[int, int, int]) -> dict[str, Any]:
    hits, misses, calls = (a - b for a, b in zip(_count(embedder), before))
    return {"embedded": summary.embedded, "unchanged": summary.unchanged, "cache hits": hits, "model calls": calls}


def _finish(summary: EmbedSummary, embedder: Embeddings, before: tuple[int, int, int], t0: float) -> None:
    hits, misses, calls = (a - b for a, b in zip(_count(embedder), before))
    summary.cache_hits, summary.cache_misses, summary.model_calls = hits, misses, calls
    summary.seconds = time.perf_counter() - t0


__all__ = ["EmbedSummary", "chunk_text", "embed_graph", "embed_nodes", "ensure_vector_index", "entity_text",
           "vector_index_dimensions"]
