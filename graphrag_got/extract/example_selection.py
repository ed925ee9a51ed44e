"""Which corrected passages each chunk's prompt carries (``GRAPHRAG_EXAMPLES_PER_PROMPT``,
``GRAPHRAG_EXAMPLE_SELECTOR``), within the context window.

A prompt carries at most ``examples_per_prompt`` stored passages, and only as many as leave room in
the context of one call (``GRAPHRAG_LLAMACPP_N_CTX``) for the rest of the prompt, the chunk and an
answer as long as ``GRAPHRAG_LLM_MAX_TOKENS``: a prompt that fills the context gets an answer cut
short, which a llama.cpp server returns as if it were whole. An :class:`ExampleSelector` ranks the
stored passages for each chunk: :class:`SimilarExamples` (default) by how near each passage's text is
to the chunk's, by the embedding model (the embedded multilingual e5 unless configured otherwise;
vectors cached like every other), :class:`FirstExamples` in the order they were stored. Passages are
taken in that order while they fit; the chosen ones keep their stored order in the prompt. Chunks
that get the same ones share one prompt ontology, whose hash keys their stored answers (a choice that
changes re-asks only the chunks it changes); when every chunk gets all of them, the run has one
system prompt, which the server evaluates once for all its slots.

Token counts are estimated at :data:`CHARS_PER_TOKEN` characters a token, on the side of caution
(a 1.5B model's tokenizer writes Spanish prose at about 3.5 characters a token, JSON at about 3).
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
from graphrag_got.prompts import PromptSet, extraction_system_prompt
from graphrag_got.prompts.answer_forms import writer

logger = logging.getLogger(__name__)

CHARS_PER_TOKEN = 3.0
#: the lines around an example in the prompt ("Example N TEXT:", "Example N ANSWER:"), in tokens
EXAMPLE_OVERHEAD = 16
#: providers whose context of one call is GRAPHRAG_LLAMACPP_N_CTX (Ollama is asked for it too); another
#: server's context is its own (a cut answer is still caught: LLMContextError from the call)
SIZED_PROVIDERS = frozenset({"auto", "llamacpp", "ollama"})


def estimate_tokens(text: str) -> int:
    return int(len(text) / CHARS_PER_TOKEN) + 1


class ExampleSelector(ABC):
    """Ranks the stored passages for each text."""

    name: ClassVar[str]

    @abstractmethod
    def rank(self, examples: Sequence[StoredExample], texts: Sequence[str]) -> list[list[int]]:
        """For each text, the indexes of ``examples`` from the one it should get first to the last."""


class FirstExamples(ExampleSelector):
    name = "first"

    def rank(self, examples: Sequence[StoredExample], texts: Sequence[str]) -> list[list[int]]:
        return [list(range(len(examples))) for _ in texts]


class SimilarExamples(ExampleSelector):
    """Nearest first (cosine of the embedding model's vectors; ties: the earlier stored)."""

    name = "similar"

    def __init__(self, embedding: EmbeddingSettings, *, llm: LLMSettings, files: FilesSettings):
        self.embedding, self.llm, self.files = embedding, llm, files

    def rank(self, examples: Sequence[StoredExample], texts: Sequence[str]) -> list[list[int]]:
        from graphrag_got.llm.embeddings import shared_embedder

        embedder = shared_embedder(self.embedding, llm=self.llm, files=self.files)
        vectors = np.asarray(embedder.embed_documents([e.text for e in examples] + list(texts)), dtype=np.float32)
        sims = vectors[len(examples):] @ vectors[:len(examples)].T  # the embedder's vectors are L2-normalized
        return [sorted(range(len(examples)), key=lambda i: (-float(row[i]), i)) for row in sims]


def selector_for(extract: ExtractSettings, *, embedding: EmbeddingSettings, llm: LLMSettings,
                 files: FilesSettings) -> ExampleSelector:
    if extract.example_selector == "first":
        return FirstExamples()
    return SimilarExamples(embedding, llm=llm, files=files)


def example_tokens(onto: Ontology, example: StoredExample, form: str) -> int:
    """About how many tokens ``example`` adds to a prompt written in answer form ``form``."""
    answer = writer(form).example_answer(onto, example.as_example())
    return estimate_tokens(example.text) + estimate_tokens(answer) + EXAMPLE_OVERHEAD


def room_for_examples(base: Ontology, chunk: Chunk, extract: ExtractSettings, llm: LLMSettings, *,
                      prompts: PromptSet | None = None) -> int | None:
    """Tokens left for corrected passages in ``chunk``'s prompt (None: no bound for this provider)."""
    if llm.provider not in SIZED_PROVIDERS:
        return None
    system = extraction_system_prompt(base, extract.answer_form, prompts=prompts)
    used = estimate_tokens(system) + estimate_tokens(chunk.text)
    return llm.llamacpp_n_ctx - used - llm.max_tokens


def prompt_ontologies(onto: Ontology, chunks: Sequence[Chunk], extract: ExtractSettings, *,
                      embedding: EmbeddingSettings, llm: LLMSettings, files: FilesSettings,
                      prompts: PromptSet | None = None) -> dict[str, Ontology]:
    """Chunk id -> the ontology its prompt is built from (see the module docstring)."""
    stored = stored_of(onto)
    if not stored or not chunks:
        return {c.id: onto for c in chunks}
    base = without_stored(onto)
    k = extract.examples_per_prompt
    cost = [example_tokens(base, ex, extract.answer_form) for ex in stored]
    rooms = [room_for_examples(base, c, extract, llm, prompts=prompts) for c in chunks]
    if len(stored) <= k and all(room is None or room >= sum(cost) for room in rooms):
        return {c.id: onto for c in chunks}  # all of them in every prompt: one prompt for the run
    selector = selector_for(extract, embedding=embedding, llm=llm, files=files)
    ranks = selector.rank(stored, [c.text for c in chunks]) if len(stored) > 1 else [[0] for _ in chunks]
    built: dict[tuple[int, ...], Ontology] = {tuple(range(len(stored))): onto}
    out: dict[str, Ontology] = {}
    short = 0
    for chunk, order, room in zip(chunks, ranks, rooms):
        picked: list[int] = []
        left = room
        for i in order:
            if len(picked) >= k:
                break
            if left is not None and cost[i] > left:
                continue
            picked.append(i)
            left = None if left is None else left - cost[i]
        short += int(len(picked) < min(k, len(stored)))
        key = tuple(sorted(picked))
        if key not in built:
            built[key] = with_examples(base, [stored[i] for i in key])
        out[chunk.id] = built[key]
    logger.info("examples: %d corrected passages stored, at most %d per prompt (%s): %d different sets over %d "
                "chunks", len(stored), k, selector.name, len({id(o) for o in out.values()}), len(chunks))
    if short:
        logger.warning("examples: %d chunk(s) got fewer corrected passages than GRAPHRAG_EXAMPLES_PER_PROMPT (%d): "
                       "more would not leave room for the answer in the context window (GRAPHRAG_LLAMACPP_N_CTX=%d, "
                       "GRAPHRAG_LLM_MAX_TOKENS=%d)", short, k, llm.llamacpp_n_ctx, llm.max_tokens)
    return out


__all__ = ["CHARS_PER_TOKEN", "ExampleSelector", "FirstExamples", "SimilarExamples", "estimate_tokens",
           "example_tokens", "prompt_ontologies", "room_for_examples", "selector_for"]
