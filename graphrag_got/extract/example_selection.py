"""Which corrected passages each chunk's prompt carries (``GRAPHRAG_EXAMPLES_PER_PROMPT``,
``GRAPHRAG_EXAMPLE_SELECTOR``).

With no more stored passages than a prompt carries, every chunk gets all of them: one system prompt
for the whole run, whose evaluated tokens the server reuses. With more, an
:class:`ExampleSelector` picks each chunk's: :class:`SimilarExamples` (default) those whose text is
nearest the chunk's, by the embedding model (the embedded multilingual e5 unless configured
otherwise; vectors cached like every other), :class:`FirstExamples` the first stored. The chosen ones
keep their stored order, and chunks that get the same ones share one prompt ontology, whose hash keys
their stored answers (so a choice that changes re-asks just the chunks it changes).
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from graphrag_got.config import EmbeddingSettings, ExtractSettings, FilesSettings, LLMSettings
from graphrag_got.ingest.chunking import Chunk
from graphrag_got.ontology.example_store import StoredExample, stored_of, with_examples, without_stored
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)


class ExampleSelector(ABC):
    """Picks ``k`` of the stored passages for each text."""

    name: ClassVar[str]

    @abstractmethod
    def choose(self, examples: Sequence[StoredExample], texts: Sequence[str], k: int) -> list[tuple[int, ...]]:
        """For each text, the indexes (into ``examples``, ascending) of the ``k`` it gets."""


class FirstExamples(ExampleSelector):
    name = "first"

    def choose(self, examples: Sequence[StoredExample], texts: Sequence[str], k: int) -> list[tuple[int, ...]]:
        return [tuple(range(min(k, len(examples))))] * len(texts)


class SimilarExamples(ExampleSelector):
    """The ``k`` passages whose vectors are nearest each text's (cosine; ties: the earlier stored)."""

    name = "similar"

    def __init__(self, embedding: EmbeddingSettings, *, llm: LLMSettings, files: FilesSettings):
        self.embedding, self.llm, self.files = embedding, llm, files

    def choose(self, examples: Sequence[StoredExample], texts: Sequence[str], k: int) -> list[tuple[int, ...]]:
        from graphrag_got.llm.embeddings import shared_embedder

        embedder = shared_embedder(self.embedding, llm=self.llm, files=self.files)
        vectors = np.asarray(embedder.embed_documents([e.text for e in examples] + list(texts)), dtype=np.float32)
        ex, tx = vectors[:len(examples)], vectors[len(examples):]
        sims = tx @ ex.T  # the embedder's vectors are L2-normalized
        out = []
        for row in sims:
            order = sorted(range(len(examples)), key=lambda i: (-float(row[i]), i))[:k]
            out.append(tuple(sorted(order)))
        return out


def selector_for(extract: ExtractSettings, *, embedding: EmbeddingSettings, llm: LLMSettings,
                 files: FilesSettings) -> ExampleSelector:
    if extract.example_selector == "first":
        return FirstExamples()
    return SimilarExamples(embedding, llm=llm, files=files)


def prompt_ontologies(onto: Ontology, chunks: Sequence[Chunk], extract: ExtractSettings, *,
                      embedding: EmbeddingSettings, llm: LLMSettings, files: FilesSettings) -> dict[str, Ontology]:
    """Chunk id -> the ontology its prompt is built from (``onto`` itself for every chunk when all the stored
    passages fit one prompt)."""
    stored = stored_of(onto)
    k = extract.examples_per_prompt
    if len(stored) <= k or not chunks:
        return {c.id: onto for c in chunks}
    selector = selector_for(extract, embedding=embedding, llm=llm, files=files)
    choices = selector.choose(stored, [c.text for c in chunks], k)
    base = without_stored(onto)
    built: dict[tuple[int, ...], Ontology] = {}
    out: dict[str, Ontology] = {}
    for chunk, picked in zip(chunks, choices):
        if picked not in built:
            built[picked] = with_examples(base, [stored[i] for i in picked])
        out[chunk.id] = built[picked]
    logger.info("examples: %d corrected passages stored, %d per prompt (%s): %d different sets over %d chunks",
                len(stored), k, selector.name, len(built), len(chunks))
    return out


__all__ = ["ExampleSelector", "FirstExamples", "SimilarExamples", "prompt_ontologies", "selector_for"]
