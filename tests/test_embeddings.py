"""Embeddings: the embedded multilingual model, the content-hash cache, provider errors (no Neo4j)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings

from graphrag_got.config import Settings
from graphrag_got.llm.embeddings import (
    EMBEDDED_DIMENSIONS,
    CachedEmbeddings,
    E5Embeddings,
    EmbeddingError,
    embeddings_cache_dir,
    get_embedder,
    shared_embedder,
)
from graphrag_got.errors import GraphragGotError
from graphrag_got.graph.vectors import chunk_text, entity_text


class CountingEmbeddings(Embeddings):
    """A provider double: deterministic vectors (langchain's fake, not normalized), calls counted."""

    def __init__(self, size: int = 16) -> None:
        self.inner = DeterministicFakeEmbedding(size=size)
        self.document_calls: list[list[str]] = []
        self.query_calls: list[str] = []

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.document_calls.append(list(texts))
        return [[3.0 * x for x in v] for v in self.inner.embed_documents(texts)]

    def embed_query(self, text: str) -> list[float]:
        self.query_calls.append(text)
        return [3.0 * x for x in self.inner.embed_query(text)]


@pytest.fixture(scope="module")
def e5() -> E5Embeddings:
    return E5Embeddings()


def _cos(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


# ---------------------------------------------------------------------------- embedded model


def test_embedded_model_embeds_spanish_and_english_by_meaning(e5: E5Embeddings) -> None:
    docs = e5.embed_documents([
        "El perro corre por el parque persiguiendo una pelota.",       # 0 es: dog
        "The dog runs through the park chasing a ball.",               # 1 en: dog
        "La bolsa de valores cayó un tres por ciento esta mañana.",    # 2 es: stock market
        "Configure the RAID array before installing the database.",   # 3 en: storage
    ])
    assert all(len(v) == EMBEDDED_DIMENSIONS for v in docs)
    assert all(abs(np.linalg.norm(v) - 1.0) < 1e-3 for v in docs)
    # a translation is closer than an unrelated text in the same language, both ways
    assert _cos(docs[0], docs[1]) > _cos(docs[0], docs[2])
    assert _cos(docs[1], docs[0]) > _cos(docs[1], docs[3])
    # a question finds its passage across languages
    q = e5.embed_query("¿Dónde juega el perro con la pelota?")
    scores = [_cos(q, d) for d in docs]
    assert int(np.argmax(scores)) in {0, 1} and min(scores[0], scores[1]) > max(scores[2], scores[3])


def test_query_and_passage_prefixes_differ(e5: E5Embeddings) -> None:
    """e5 embeds a text differently as a question ("query: ") and as a document ("passage: ")."""
    text = "how to extend a logical volume"
    q, p = e5.embed_query(text), e5.embed_documents([text])[0]
    assert _cos(q, p) < 0.999
    assert _cos(q, e5.embed_query(text)) > 0.9999  # and each is deterministic


# ---------------------------------------------------------------------------- cache


def test_cache_on_disk_makes_the_second_run_free(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "home")
    texts = ["Zabbix polls the agents.", "LVM extends volumes.", "Zabbix polls the agents."]
    first = get_embedder(settings.embedding, llm=settings.llm, files=settings.files)
    v1 = first.embed_documents(texts)
    assert first.stats.misses == 2 and first.stats.hits == 1 and first.stats.model_calls == 1  # duplicate once
    assert v1[0] == v1[2]
    first.close()
    assert (embeddings_cache_dir(settings.embedding, files=settings.files) / "vectors.sqlite").is_file()
    assert embeddings_cache_dir(settings.embedding, files=settings.files).parent == settings.files.home / "cache" / "embeddings"

    second = get_embedder(settings.embedding, llm=settings.llm, files=settings.files)  # a new process would build a new one the same way
    v2 = second.embed_documents(texts)
    assert second.stats.model_calls == 0 and second.stats.misses == 0 and second.stats.hits == 3
    assert np.allclose(v1, v2, atol=1e-6)
    # a query is cached apart from the same text as a passage (e5 embeds them differently)
    second.embed_query("LVM extends volumes.")
    assert second.stats.model_calls == 1 and second.stats.misses == 1
    second.close()


def test_cache_wraps_any_provider_normalizes_and_batches() -> None:
    inner = CountingEmbeddings(size=16)
    cached = CachedEmbeddings(inner, "fake", cache_dir=None, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    vectors = cached.embed_documents(texts)
    assert [len(c) for c in inner.document_calls] == [2, 2, 1]  # at most batch_size per model call
    assert cached.stats.model_calls == 3 and cached.stats.misses == 5
    assert all(abs(np.linalg.norm(v) - 1.0) < 1e-6 for v in vectors)  # the fake's are 3x longer
    assert np.allclose(vectors[0], np.array(inner.inner.embed_documents(["text 0"])[0]) /
                       np.linalg.norm(inner.inner.embed_documents(["text 0"])[0]))
    cached.embed_documents(texts[::-1])
    assert cached.stats.model_calls == 3 and cached.stats.hits == 5
    assert cached.dimensions == 16
    cached.embed_query("a question")
    cached.embed_query("a question")
    assert inner.query_calls == ["a question"]


def test_provider_returning_bad_vectors_is_a_clear_error() -> None:
    class Broken(CountingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.1] * (3 + i) for i in range(len(texts))]

    with pytest.raises(EmbeddingError, match="vectors of sizes"):
        CachedEmbeddings(Broken(), "broken", None).embed_documents(["a", "b"])

    class Failing(CountingEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise ConnectionError("connection refused")

    with pytest.raises(EmbeddingError, match="'failing' failed: ConnectionError: connection refused"):
        CachedEmbeddings(Failing(), "failing", None).embed_documents(["a"])


def test_shared_embedder_is_one_per_model_and_home(tmp_path: Path) -> None:
    a = Settings(home=tmp_path / "a")
    assert shared_embedder(a.embedding, llm=a.llm, files=a.files) is shared_embedder(a.embedding, llm=a.llm, files=a.files)
    b = Settings(home=tmp_path / "b")
    assert shared_embedder(a.embedding, llm=a.llm, files=a.files) is not shared_embedder(b.embedding, llm=b.llm,
                                                                                         files=b.files)


# ---------------------------------------------------------------------------- providers


def _embedder(settings: Settings) -> CachedEmbeddings:
    return get_embedder(settings.embedding, llm=settings.llm, files=settings.files)


def test_default_provider_is_embedded_and_loads_lazily(tmp_path: Path) -> None:
    emb = _embedder(Settings(home=tmp_path))
    assert isinstance(emb.inner, E5Embeddings) and emb.inner._model is None  # nothing loaded yet
    assert emb.dimensions == EMBEDDED_DIMENSIONS and emb.stats.model_calls == 0
    assert emb.model_id == "embedded-multilingual-e5-small-q4"


def test_langchain_provider_errors_name_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="needs GRAPHRAG_EMBEDDINGS_MODEL"):
        _embedder(Settings(home=tmp_path, embeddings_provider="langchain"))
    # a provider whose package is not installed: the package is named
    with pytest.raises(EmbeddingError, match="'langchain-cohere'.*pip install langchain-cohere"):
        _embedder(Settings(home=tmp_path, embeddings_provider="langchain",
                           embeddings_model="cohere:embed-english-v3.0"))
    with pytest.raises(EmbeddingError, match="not a usable init_embeddings string"):
        _embedder(Settings(home=tmp_path, embeddings_provider="langchain", embeddings_model="nosuch:model"))
    assert issubclass(EmbeddingError, GraphragGotError)


def test_langchain_provider_builds_the_model_and_caches_per_model(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, embeddings_provider="langchain", embeddings_model="ollama:nomic-embed-text")
    emb = get_embedder(settings.embedding, llm=settings.llm, files=settings.files)
    assert type(emb.inner).__name__ == "OllamaEmbeddings"
    assert embeddings_cache_dir(settings.embedding, files=settings.files).name == "langchain-ollama_nomic-embed-text"


def test_ollama_provider_that_does_not_answer_is_a_clear_error(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path, embeddings_provider="ollama", ollama_base_url="http://127.0.0.1:9")
    emb = get_embedder(settings.embedding, cache=False, llm=settings.llm, files=settings.files)
    assert emb.model_id == "ollama-nomic-embed-text"
    with pytest.raises(EmbeddingError, match="ollama-nomic-embed-text.*failed"):
        emb.embed_documents(["hello"])


# ---------------------------------------------------------------------------- node texts


def test_entity_and_chunk_texts() -> None:
    text = entity_text("Zabbix", "Tool", [["version", "6.0"], ["kind", "monitoring"], ["tags", ["a", "b"]]],
                       ["zabbix server", "Zabbix"])
    assert text == "Zabbix (Tool): kind: monitoring, tags: a, b, version: 6.0; aliases: zabbix server"
    assert entity_text("X", None) == "X"
    assert chunk_text("Storage", "LVM extends volumes.") == "Storage\nLVM extends volumes."
    assert chunk_text("Storage", "Storage LVM") == "Storage LVM"  # heading already leads the text
    assert chunk_text(None, "  plain  ") == "plain"
