"""Extraction strategies: one object per way of asking the model about a chunk.

The run (:mod:`graphrag_got.extract.run`) is one loop over a strategy: it asks the strategy for the
prompts its answers depend on (their version is the extraction file's ``prompt_version``), the tag
that keys its stored answers, and the calls that answer a list of chunks; it never branches on a
strategy's name. A new strategy is a new class here.

- :class:`Generate`: the model writes each chunk's entities and facts in the answer form
  (:mod:`graphrag_got.extract.generate`); its prompt carries the ontology's examples and the corrected
  passages chosen for the chunk, and one shared prefix for a run.
- :class:`Classify`: mentions copied from the chunk, then one scored choice per pair of mentions
  (:mod:`graphrag_got.extract.classify`); it needs a model that returns token probabilities.
- :class:`Mentions`: entity mentions only, several chunks a call (:mod:`graphrag_got.extract.mentions_only`);
  the typed relations of chosen documents are the generate strategy's answers.
- :class:`Terms`: key terms found without a model, then the terms several notes share typed once per term in
  batched calls (:mod:`graphrag_got.extract.terms`); a strategy whose answers need no model per chunk
  (``model_free``) gives them from :meth:`~ExtractionStrategy.local_records`, and a strategy that decides
  over the whole corpus does so in :meth:`~ExtractionStrategy.corpus_pass`, which the run calls every time.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, ClassVar

from langchain_core.language_models import BaseChatModel

from graphrag_got.config import ExtractSettings, FilesSettings
from graphrag_got.extract import mentions_only
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.classify.backend import backend_for
from graphrag_got.extract.classify.cache import ClassifyCache
from graphrag_got.extract.classify.chunk import ClassifyParams, classify_chunk
from graphrag_got.extract.classify.mentions import MAX_MENTIONS
from graphrag_got.extract.forms import Constraint, answer_form
from graphrag_got.extract.generate import extract_chunk, one_call
from graphrag_got.extract.summary import classify_line
from graphrag_got.extract.terms import layer as terms_layer
from graphrag_got.extract.terms.layer import CorpusPass, PassResult
from graphrag_got.ingest.chunking import Chunk
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import CLASSIFY_PROMPTS, EXTRACT_PROMPTS, MENTIONS_PROMPTS, TERMS_PROMPTS, PromptSet

#: A call of the run: a function returning the stored answers of its chunks, and those chunks.
Job = tuple[Callable[[], list[CacheRecord]], list[Chunk]]


@dataclass(frozen=True)
class CallSetup:
    """What every call of one run shares."""

    chat: BaseChatModel
    extract: ExtractSettings
    files: FilesSettings
    label: str  # the model's label (its caches are per model)
    setup: str  # the settings a failure depends on (run.setup_key)
    schema: Constraint  # the answer form's constraint (generate)
    prompts: PromptSet


class ExtractionStrategy(ABC):
    """One way of asking the model about chunks."""

    name: ClassVar[str]
    #: what it does, in the run's strategy line
    what: ClassVar[str]
    #: more lines the run's strategy line is followed by
    note_lines: ClassVar[tuple[str, ...]] = ()
    #: the prompts its answers depend on (templates of graphrag_got.prompts)
    prompt_names: ClassVar[tuple[str, ...]]
    #: its prompt carries the ontology's examples (and the corrected passages picked per chunk)
    carries_examples: ClassVar[bool] = False
    #: every call starts with the same system prompt, which a server can evaluate once for its slots
    shares_prefix: ClassVar[bool] = False
    #: it needs a chat model that returns token probabilities
    needs_scores: ClassVar[bool] = False
    #: chosen documents also get the generate strategy's typed relations (``--relations-for``)
    asks_typed: ClassVar[bool] = False
    #: its answer of a chunk needs no model call (:meth:`local_records`, not :meth:`jobs`)
    model_free: ClassVar[bool] = False
    #: its answers hold untyped key terms (TERM_CLASS), which its validator accepts
    untyped_terms: ClassVar[bool] = False

    def prompt_version(self, prompts: PromptSet) -> str:
        """The version of its prompts (the extraction file's ``prompt_version``)."""
        return prompts.version(*self.prompt_names)

    def bounds(self, extract: ExtractSettings) -> tuple[int, int]:
        """The most entities and relations the validator takes from one answer."""
        return extract.max_entities, extract.max_relations

    @abstractmethod
    def answer_tag(self, extract: ExtractSettings, prompts: PromptSet, generate_tag: str) -> str:
        """What keys its stored answers besides the model, bounds, chunk and ontology (``generate_tag``:
        the generate strategy's, built from the answer form)."""

    @abstractmethod
    def jobs(self, calls: CallSetup, onto: Ontology, todo: Sequence[Chunk], system: str) -> list[Job]:
        """The calls that answer ``todo`` (``system``: the generate prompt for these chunks)."""

    def summary_fields(self, records: list[CacheRecord]) -> dict[str, Any]:
        """Its own line of the run's summary (fields of ExtractionSummary)."""
        return {}

    def local_records(self, onto: Ontology, chunks: Sequence[Chunk], extract: ExtractSettings,
                      metadata: Mapping[str, Mapping[str, Any]], answer_tag: str) -> list[CacheRecord]:
        """The answers of ``chunks`` without a model call (``model_free`` strategies only)."""
        raise NotImplementedError(f"the {self.name} strategy asks the model about every chunk")

    def corpus_pass(self, corpus: CorpusPass) -> PassResult:
        """The answers as the validator reads them, once every chunk has one (default: as stored)."""
        return PassResult(records=dict(corpus.records))


class Generate(ExtractionStrategy):
    name = "generate"
    what = "the model writes each chunk's entities and typed relations"
    prompt_names = EXTRACT_PROMPTS
    carries_examples = True
    shares_prefix = True

    def answer_tag(self, extract: ExtractSettings, prompts: PromptSet, generate_tag: str) -> str:
        return generate_tag

    def jobs(self, calls: CallSetup, onto: Ontology, todo: Sequence[Chunk], system: str) -> list[Job]:
        form = answer_form(calls.extract.answer_form)
        return [(partial(one_call, extract_chunk, calls.chat, onto, ch, calls.schema, system, calls.setup,
                         prompts=calls.prompts, form=form, gleanings=calls.extract.gleanings), [ch]) for ch in todo]


class Classify(ExtractionStrategy):
    name = "classify"
    what = "mentions copied from each chunk, then one scored choice per pair of mentions"
    prompt_names = CLASSIFY_PROMPTS
    needs_scores = True

    def bounds(self, extract: ExtractSettings) -> tuple[int, int]:
        # its answers are bounded by its own limits, not the JSON schema's
        return max(extract.max_entities, MAX_MENTIONS), max(extract.max_relations, extract.classify_max_pairs)

    def answer_tag(self, extract: ExtractSettings, prompts: PromptSet, generate_tag: str) -> str:
        # the stored answer also depends on what picks the pairs (the calls have their own cache)
        return f"classify|{prompts.version(*CLASSIFY_PROMPTS)}|{extract.evidence_window}|{extract.classify_max_pairs}"

    def jobs(self, calls: CallSetup, onto: Ontology, todo: Sequence[Chunk], system: str) -> list[Job]:
        extract = calls.extract
        backend, ccache = backend_for(calls.chat), ClassifyCache(calls.files.cache_dir, calls.label)
        params = ClassifyParams(extract.evidence_window, extract.mention_threshold, extract.classify_max_pairs,
                                calls.prompts)
        return [(partial(one_call, classify_chunk, backend, onto, ch, ccache, params, calls.setup), [ch])
                for ch in todo]

    def summary_fields(self, records: list[CacheRecord]) -> dict[str, Any]:
        return {"classify": classify_line(records)}


class Mentions(ExtractionStrategy):
    name = "mentions"
    what = ("entity mentions only, copied from each chunk; the edges are the vault's links, tags and folders and "
            "co-occurrence in a chunk")
    note_lines = ("  typed relations: GRAPHRAG_EXTRACTION=generate asks them for every note; "
                  "`build --relations-for PATH...` for chosen notes or folders only",)
    prompt_names = MENTIONS_PROMPTS
    asks_typed = True

    def prompt_version(self, prompts: PromptSet) -> str:
        return mentions_only.prompt_version(prompts)

    def bounds(self, extract: ExtractSettings) -> tuple[int, int]:
        # its mentions are bounded by its own limit (its typed answers by the schema's)
        return max(extract.max_entities, MAX_MENTIONS), extract.max_relations

    def answer_tag(self, extract: ExtractSettings, prompts: PromptSet, generate_tag: str) -> str:
        return mentions_only.answer_form(prompts)

    def jobs(self, calls: CallSetup, onto: Ontology, todo: Sequence[Chunk], system: str) -> list[Job]:
        backend = backend_for(calls.chat)
        return [(partial(mentions_only.ask_mentions, backend, onto, batch, calls.setup, prompts=calls.prompts), batch)
                for batch in mentions_only.plan_batches(list(todo), calls.extract.mentions_batch_chars)]

    def summary_fields(self, records: list[CacheRecord]) -> dict[str, Any]:
        return {"mentions": mentions_only.mentions_line(records)}


class Terms(ExtractionStrategy):
    name = "terms"
    what = ("key terms of each chunk found without a model (links, short headings, aliases, code, capitalized names); "
            "the terms several notes share typed by the ontology's classes once per term, many a call")
    note_lines = Mentions.note_lines
    prompt_names = TERMS_PROMPTS
    asks_typed = True
    model_free = True
    untyped_terms = True

    def bounds(self, extract: ExtractSettings) -> tuple[int, int]:
        return max(extract.max_entities, extract.terms_per_chunk), extract.max_relations

    def answer_tag(self, extract: ExtractSettings, prompts: PromptSet, generate_tag: str) -> str:
        # the stored answer is the chunk's terms, found by rules: their version and bound key it (the types are
        # stored per term, under the prompts' version)
        return f"terms|{terms_layer.FIND_VERSION}|{extract.terms_per_chunk}"

    def jobs(self, calls: CallSetup, onto: Ontology, todo: Sequence[Chunk], system: str) -> list[Job]:
        return []  # model_free: local_records answers every chunk

    def local_records(self, onto: Ontology, chunks: Sequence[Chunk], extract: ExtractSettings,
                      metadata: Mapping[str, Mapping[str, Any]], answer_tag: str) -> list[CacheRecord]:
        return terms_layer.local_records(onto, chunks, extract, metadata, answer_tag)

    def corpus_pass(self, corpus: CorpusPass) -> PassResult:
        return terms_layer.corpus_pass(corpus)

    def summary_fields(self, records: list[CacheRecord]) -> dict[str, Any]:
        return {"terms": terms_layer.terms_line(records)}


STRATEGIES: dict[str, ExtractionStrategy] = {s.name: s for s in (Generate(), Classify(), Mentions(), Terms())}
GENERATE = STRATEGIES["generate"]


def strategy_for(name: str) -> ExtractionStrategy:
    """The strategy called ``name`` (``GRAPHRAG_EXTRACTION`` once ``auto`` is resolved)."""
    try:
        return STRATEGIES[name]
    except KeyError:
        raise ValueError(f"unknown extraction strategy {name!r} (known: {', '.join(STRATEGIES)})") from None


__all__ = ["CallSetup", "Classify", "CorpusPass", "ExtractionStrategy", "GENERATE", "Generate", "Job", "Mentions",
           "PassResult", "STRATEGIES", "Terms", "strategy_for"]
