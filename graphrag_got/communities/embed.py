"""Embeddings of the community reports: ``Community.embedding`` and the ``community_embedding`` index.

After the reports, each report text (:func:`report_text`: title, summary, one line per finding) is
embedded (``graphrag_got.llm.embeddings.get_embedder``, cached by content) into
``Community.embedding``, unit length, with its :func:`embedding_key` in ``embedding_hash``; global
search ranks communities by it. The cosine vector index ``community_embedding`` is made (or
re-made for a new dimension) by :func:`graphrag_got.graph.vectors.ensure_vector_index`, the one
index path of every embedded label.

The loop does not go through :func:`graphrag_got.graph.vectors.embed_nodes`: community ids are
integers (``embed_nodes`` matches string ids), the report vectors are normalized and provider
failures become one :class:`~graphrag_got.llm.embeddings.EmbeddingError` (summarize records it and
keeps the reports), the run embeds when asked even with ``GRAPHRAG_EMBEDDINGS`` off, a report whose
vector is missing is embedded again whatever its hash says, and the stored ``embedding_hash`` keys
an embedder by ``model_id``, ``model`` or ``model_name`` (changing that would re-embed every report).

:class:`SummarizeResult` (the counts of ``communities summarize``) lives here because the embedding
step fills its embedding counts; :mod:`graphrag_got.communities.reports` fills the rest (with what the
report check left out: :mod:`graphrag_got.communities.check`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import neo4j
from langchain_core.embeddings import Embeddings

from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.communities import cypher
from graphrag_got.communities.graph import sha
from graphrag_got.communities.store import batches, parse_findings, parse_records
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings
from graphrag_got.errors import GraphragGotError, Neo4jError
from graphrag_got.graph.db import read_all, session
from graphrag_got.graph.vectors import ensure_vector_index
from graphrag_got.llm.embeddings import EmbeddingError, get_embedder, normalize_vector
from graphrag_got.llm.usage import LLMUsage


@dataclass
class SummarizeResult(LLMUsage):
    communities: int = 0
    eligible: int = 0  # non-singletons
    generated: int = 0
    cached: int = 0
    unchanged: int = 0
    singletons_skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    export_path: str | None = None
    seconds: float = 0.0
    embedded: int = 0  # report embeddings computed or refreshed
    embeddings_unchanged: int = 0  # reports whose stored embedding matches their text
    embedding_calls: int = 0  # calls to the embedding model (0 when every vector came from its cache)
    embedding_error: str | None = None  # why the reports were not embedded (global search then ranks by rating)
    embedding_seconds: float = 0.0
    report_check: str | None = None  # the version of the check the reports went through (None: not checked)
    rechecked: int = 0  # reports stored before this check (or by another version of it), checked again: no LLM call
    left_out: int = 0  # report findings and summary sentences left out, over every report (checked now or stored)
    left_out_reasons: dict[str, int] = field(default_factory=dict)  # reason value -> left-out count
    unbacked_summaries: int = 0  # reports whose summary was kept though none of its sentences is backed

    def count_check(self, left_out: Any, unbacked_kept: Any) -> None:
        """Count one report's left-out records and summary sentences kept unbacked (a list or its JSON)."""
        records = parse_records(left_out)
        self.left_out += len(records)
        for r in records:
            reason = str(r.get("reason") or "")
            self.left_out_reasons[reason] = self.left_out_reasons.get(reason, 0) + 1
        self.unbacked_summaries += bool(parse_records(unbacked_kept))


def report_text(title: str | None, summary: str | None, findings: Any = None) -> str:
    """The text a report is embedded (and cited) as: title, summary, then one line per finding."""
    lines = [t for t in ((title or "").strip(), (summary or "").strip()) if t]
    lines += [f"- {f['statement']}" for f in parse_findings(findings)]
    return "\n".join(lines)


def _embedder_id(embedder: Embeddings) -> str:
    """The embedding model's name: ``model_id`` (CachedEmbeddings), else ``model`` / ``model_name``."""
    for attr in ("model_id", "model", "model_name"):
        value = getattr(embedder, attr, None)
        if isinstance(value, str) and value:
            return value
    return type(embedder).__name__


def embedding_key(embedder: Embeddings, text: str) -> str:
    """What ``Community.embedding_hash`` records: the model and the report text it embedded."""
    return sha(f"{_embedder_id(embedder)}\0{text}")


def embed_reports(driver: neo4j.Driver, db: Neo4jSettings, embedder: Embeddings | None = None,
                  result: SummarizeResult | None = None, *, embedding: EmbeddingSettings, llm: LLMSettings,
                  files: FilesSettings, progress: ProgressCallback | None = None) -> SummarizeResult:
    """Embed every report whose stored embedding is missing or was made from another text or model,
    and make sure the cosine vector index ``community_embedding`` exists with the model's dimension."""
    res = result or SummarizeResult()
    if embedder is None:
        embedder = get_embedder(embedding, llm=llm, files=files)
    reports = read_all(driver, db, cypher.community_reports_to_embed())
    todo: list[tuple[int, str, str]] = []
    for r in reports:
        text = report_text(r["title"], r["summary"], r["findings"])
        key = embedding_key(embedder, text)
        if r["embedded"] and r["embedding_hash"] == key:
            res.embeddings_unchanged += 1
        else:
            todo.append((r["id"], text, key))
    calls_before = _embedding_calls(embedder)
    vectors: list[list[float]] = []
    size = max(1, embedding.batch_size)
    for start in range(0, len(todo), size):
        part = todo[start : start + size]
        vectors += _embed_documents(embedder, [t for _, t, _ in part])
        if progress is not None:
            progress(ProgressEvent(step="report embeddings", done=min(start + size, len(todo)), total=len(todo),
                                   finished=start + size >= len(todo)))  # fmt: skip
    res.embedding_calls += max(0, _embedding_calls(embedder) - calls_before) if calls_before is not None \
        else (len(todo) + size - 1) // size
    dims = {len(v) for v in vectors}
    if len(dims) > 1:
        raise GraphragGotError(f"the embedding model returned vectors of sizes {sorted(dims)} for the reports")
    rows = [{"id": cid, "embedding": [float(x) for x in vec], "hash": key}
            for (cid, _, key), vec in zip(todo, vectors)]  # fmt: skip
    if dims:  # nothing embedded: the index, if any, already has the dimension of the stored vectors
        ensure_vector_index(driver, db, cypher.COMMUNITY_VECTOR_INDEX, cypher.COMMUNITY, dims.pop())
    try:
        with session(driver, db, write=True) as ses:
            for batch in batches(rows, size):
                ses.execute_write(lambda tx, b=batch: tx.run(cypher.set_community_embeddings(), rows=b).consume())
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"writing community report embeddings failed: {exc}") from exc
    res.embedded += len(rows)
    return res


def _embedding_calls(embedder: Embeddings) -> int | None:
    stats = getattr(embedder, "stats", None)
    calls = getattr(stats, "model_calls", None)
    return calls if isinstance(calls, int) else None


def _embed_documents(embedder: Embeddings, texts: list[str]) -> list[list[float]]:
    try:
        vectors = embedder.embed_documents(texts)
    except GraphragGotError:
        raise
    except Exception as exc:  # noqa: BLE001 - any provider failure becomes one clear error
        raise EmbeddingError(f"embedding the community reports failed: {type(exc).__name__}: {exc}") from exc
    if len(vectors) != len(texts):
        raise EmbeddingError(f"the embedding model returned {len(vectors)} vectors for {len(texts)} reports")
    return [normalize_vector(v) for v in vectors]


__all__ = ["SummarizeResult", "embed_reports", "embedding_key", "report_text"]
