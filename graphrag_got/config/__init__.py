"""Every setting in one typed object (pydantic-settings), read from the environment and `.env`,
nested per stage: ``settings.chunking``, ``settings.llm``, ``settings.extract``, ``settings.neo4j``,
``settings.graph`` (load), ``settings.embedding``, ``settings.communities``, ``settings.search``,
``settings.service`` and ``settings.files`` (where things are). A stage reads its own section (and
``files``/``neo4j`` for where to read and write); which sections each package reads is checked by
``tests/test_config.py``.

Defaults, environment variable names and descriptions live on the fields of the section models
and nowhere else: ``ENV`` (flat name -> variable), ``FLAT`` (flat name -> section and field) and the
README's configuration table (:func:`settings_table_markdown`, ``python -m graphrag_got.config``) are
derived from them. Each setting keeps one flat name (``community_algorithm`` for
``settings.communities.algorithm``): the keyword arguments of ``Settings(...)``, ``Settings.load``
and ``with_overrides`` take flat names (the CLI's overrides use them), and :meth:`Settings.flat`
gives every value by flat name.

``Settings(**kw)`` is the defaults plus ``kw`` only, so code and tests that build one get the same
object on every machine. ``Settings.load()`` reads defaults <- ``.env`` <- process environment <-
explicit overrides; ``settings.with_overrides(**kw)`` applies CLI flags on top of a loaded object.
An empty variable (``NEO4J_PASSWORD=``) counts as unset.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any, Literal

from dotenv import find_dotenv
from pydantic import BaseModel, Field, create_model, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (BaseSettings, DotEnvSettingsSource, EnvSettingsSource, NoDecode,
                               PydanticBaseSettingsSource, SettingsConfigDict)

from graphrag_got.errors import ConfigError

Provider = Literal["auto", "ollama", "llamacpp", "openai", "langchain", "replay"]

#: The state folder when GRAPHRAG_HOME is not set.
DEFAULT_HOME = Path(".graphrag_got")


def _default_home() -> Path:
    """Where caches, downloaded jars/models and server data go (git-ignored).

    Read from the process environment even for ``Settings()`` built directly (as before), so a
    test run with its own GRAPHRAG_HOME never writes into the developer's state folder.
    """
    return Path(os.environ.get("GRAPHRAG_HOME") or DEFAULT_HOME)


from graphrag_got.config.base import Section, _env  # noqa: E402 (the sections' base, in its own module)


class FilesSettings(Section):
    """Settings of where things are: the ontology, the corpus, the outputs and the state folder (``settings.files``)."""

    home: Path = Field(default_factory=_default_home, validation_alias="GRAPHRAG_HOME",
                       description="state folder: caches, embedded models, embedded Neo4j data",
                       json_schema_extra={"shown_default": DEFAULT_HOME.as_posix()})
    ontology_path: Path = _env("GRAPHRAG_ONTOLOGY", Path("ontology/got.json"), "ontology file")
    corpus_path: Path = _env("GRAPHRAG_CORPUS", Path("corpus/got.txt"),
                             "corpus file or folder (`.txt` by paragraphs, `.md` by headings)")
    out_dir: Path = _env("GRAPHRAG_OUT", Path("out"),
                         "outputs: extraction.json, reports, communities.json, graph.html")

    @property
    def cache_dir(self) -> Path:
        """Where answers, vectors and validations are cached: ``<home>/cache``."""
        return self.home / "cache"


class ChunkingSettings(Section):
    """Settings of how the corpus is cut into chunks (ingest) (``settings.chunking``)."""

    chunker: Literal["auto", "paragraph", "markdown"] = _env(
        "GRAPHRAG_CHUNKER", "auto",
        "how the corpus's text files are cut: `auto` (`markdown` for `.md` files, else `paragraph`), `paragraph`, "
        "`markdown`; PDF files are always cut within pages, DOCX and HTML at their headings")
    min_chars: int = _env("GRAPHRAG_CHUNK_MIN_CHARS", 40, "chunks shorter than this are dropped", ge=0, flat="chunk_min_chars")
    max_chars: int = _env("GRAPHRAG_CHUNK_MAX_CHARS", 1500,
                                "longer sections and paragraphs are split (at paragraphs, then sentences)", ge=100, flat="chunk_max_chars")
    follow_outside_links: bool = _env(
        "GRAPHRAG_FOLLOW_OUTSIDE_LINKS", False,
        "follow links (symlinks) in a corpus, vault or code folder that lead outside it (off: such links are "
        "refused, listed and warned about, so nothing outside the folder given is read)")
    max_document_bytes: int = _env("GRAPHRAG_MAX_DOCUMENT_BYTES", 5_000_000, "a corpus file or vault note larger than "
                                   "this is skipped with a `too_large` record, not cut into thousands of LLM calls; "
                                   "a `.docx` whose parts unpack to more is skipped the same way (0: no limit)", ge=0)
    strict_inputs: bool = _env(
        "GRAPHRAG_STRICT_INPUTS", False,
        "stop at the first corpus file that cannot be read (not UTF-8, binary, malformed front matter, an "
        "encrypted, scanned or damaged PDF...) instead of "
        "skipping it with a record (`--strict` on `extract` and `build`)")


class LLMSettings(Section):
    """Settings of which chat model answers and how it is called (``settings.llm``)."""

    provider: Provider = _env(
        "GRAPHRAG_LLM_PROVIDER", "auto",
        "`auto` (the LangChain model or OpenAI base URLs when set, else Ollama if it answers and has the model, "
        "else llama.cpp), `ollama`, `llamacpp`, `openai` (any OpenAI-compatible server), `langchain` (any "
        "`init_chat_model` string), `replay`", flat="llm_provider")
    ollama_base_url: str = _env("OLLAMA_BASE_URL", "http://localhost:11434", "Ollama server")
    ollama_model: str = _env("GRAPHRAG_OLLAMA_MODEL", "qwen2.5:7b-instruct", "Ollama model")
    llamacpp_model: str = _env("GRAPHRAG_LLAMACPP_MODEL", "qwen2.5-coder-1.5b",
                               "embedded model name (`graphrag-got model list`) or any `.gguf` path")
    models_path: Path | None = _env("GRAPHRAG_MODELS_DIR", None, "where embedded models live (unset: `<home>/models`)")
    llamacpp_n_ctx: int = _env("GRAPHRAG_LLAMACPP_N_CTX", 4096, "llama.cpp context of one call, in tokens (llama-server: "
                               "per slot)", ge=512)
    llamacpp_backend: Literal["auto", "server", "in_process"] = _env("GRAPHRAG_LLAMACPP_BACKEND", "auto", "how the "
        "embedded model runs: `auto` (llama.cpp's `llama-server` with parallel slots when it is built, else in-process), "
        "`server` (an error when it is missing), `in_process` (llama-cpp-python, one call at a time)")
    llama_server: Path | None = _env("GRAPHRAG_LLAMA_SERVER", None, "the `llama-server` program (unset: the venv's "
                                     "`bin/llama-server` that `scripts/setup.sh` builds, else one on PATH)")
    llama_server_port: int = _env("GRAPHRAG_LLAMA_SERVER_PORT", 8089, "loopback port of the embedded llama-server", ge=1, le=65535)
    llama_server_slots: int = _env("GRAPHRAG_LLAMA_SERVER_SLOTS", 4, "parallel slots of the embedded `llama-server` "
                                   "(calls decoded in one batch); its context is slots x GRAPHRAG_LLAMACPP_N_CTX", ge=1, le=64)
    llama_server_poll: int = _env("GRAPHRAG_LLAMA_SERVER_POLL", 50, "how hard the embedded `llama-server`'s threads "
                                  "spin while they wait for work (its `--poll`, 0-100; 0: they sleep)", ge=0, le=100)
    llama_server_batch: int = _env("GRAPHRAG_LLAMA_SERVER_BATCH", 512, "tokens the embedded `llama-server` evaluates "
                                   "in one step (its `--batch-size`): prompt progress, and the next token of every "
                                   "other slot, come once a step", ge=32, le=8192)
    llamacpp_threads: int | None = _env("GRAPHRAG_LLAMACPP_THREADS", None, "most llama.cpp CPU threads (unset: every core)")
    llamacpp_adaptive_threads: bool = _env(
        "GRAPHRAG_LLAMACPP_ADAPTIVE_THREADS", True, "each embedded-model call uses at most the cores free at its start "
        "(sampled over 150 ms), never more than GRAPHRAG_LLAMACPP_THREADS; false: always that many")
    llamacpp_loop_guard: bool = _env("GRAPHRAG_LOOP_GUARD", True,
                                     "embedded model: close a JSON list once the model repeats its items")
    max_tokens: int = _env("GRAPHRAG_LLM_MAX_TOKENS", 1536, "most tokens in one LLM answer", ge=64, flat="llm_max_tokens")
    timeout_s: float = _env("GRAPHRAG_LLM_TIMEOUT", 600.0, "seconds one LLM call may take where the answer does not "
                            "stream (in-process calls, LangChain models); streamed calls (OpenAI-compatible servers, "
                            "the embedded llama-server, Ollama) are cut only by `GRAPHRAG_LLM_STALL_TIMEOUT`",
                            gt=0, flat="llm_timeout_s")
    stall_timeout_s: float = _env("GRAPHRAG_LLM_STALL_TIMEOUT", 120.0, "seconds a streamed LLM call may go without a "
                                  "token (or, from llama.cpp's server, a word of prompt progress) before it is cut; a "
                                  "call that keeps writing is never cut for being long, and a cut call resumes from "
                                  "what it wrote where the server allows it (llama.cpp)", gt=0, flat="llm_stall_timeout_s")
    resume_cut_calls: bool = _env("GRAPHRAG_LLM_RESUME_CUT_CALLS", True, "a streamed call cut by a stall goes on from "
                                  "the part it wrote (sent back as the start of the answer) on llama.cpp servers, "
                                  "instead of starting again", flat="llm_resume_cut_calls")
    replay_file: Path | None = _env("GRAPHRAG_REPLAY_FILE", None, "recorded answers for the `replay` provider")
    prompts_dir: Path | None = _env("GRAPHRAG_PROMPTS_DIR", None, "folder of prompt files replacing the built-in "
                                    "ones, `<prompt name>.txt` each (`graphrag-got prompts export DIR`)")
    openai_base_urls: Annotated[list[str], NoDecode] = _env(
        "GRAPHRAG_OPENAI_BASE_URLS", [],
        "OpenAI-compatible servers of `openai` (vLLM, LM Studio, llama.cpp, Ollama's `/v1`), comma-separated; "
        "several form a pool that calls are spread over (unset: the OpenAI API)")
    openai_model: str | None = _env("GRAPHRAG_OPENAI_MODEL", None,
                                    "model name for `openai` (unset: the first model the server lists)")
    openai_api_key: SecretStr | None = _env("OPENAI_API_KEY", None, "API key for `openai` (leave unset for local servers)")
    openai_balance: Literal["least_busy", "round_robin"] = _env(
        "GRAPHRAG_OPENAI_BALANCE", "least_busy",
        "how `openai` spreads calls over the pool: `least_busy` (fewest calls in flight, ties in turn) or `round_robin`")
    openai_response_format: Literal["auto", "json_schema", "json_object", "none"] = _env(
        "GRAPHRAG_OPENAI_RESPONSE_FORMAT", "auto",
        "how `openai` constrains answers to the JSON schema: `auto` (`json_schema`, stepping down per server to "
        "`json_object` + schema, then `none`, when a server refuses it), `json_schema`, `json_object`, `none`")
    langchain_model: str | None = _env("GRAPHRAG_LANGCHAIN_MODEL", None, "`init_chat_model` string for `langchain`, "
                                       "e.g. `deepseek:deepseek-chat` (install its package yourself)")
    structured_output: Literal["auto", "json_schema", "function_calling", "none"] = _env(
        "GRAPHRAG_STRUCTURED_OUTPUT", "auto",
        "structured output of `langchain` models: `auto` (`json_schema` where supported, else "
        "`function_calling`, else text with repair), `json_schema`, `function_calling`, `none`")
    retries: int = _env("GRAPHRAG_LLM_RETRIES", 3, "more tries of a remote LLM call after HTTP 429/5xx, a connection "
                        "error or a timeout", ge=0, flat="llm_retries")
    backoff_s: float = _env("GRAPHRAG_LLM_BACKOFF", 1.0, "seconds before the first retry of a remote LLM call, doubled "
                            "at each retry", ge=0, flat="llm_backoff_s")
    concurrency: int | None = _env("GRAPHRAG_CONCURRENCY", None, "LLM calls in flight at once (unset: what the server "
        "takes: a llama.cpp server's slots, summed over a pool; Ollama's `OLLAMA_NUM_PARALLEL` when set here; else 4 "
        "per server; in-process and `replay`: 1)", ge=1)
    price: str = _env("GRAPHRAG_LLM_PRICE", "",
                          "price of the remote model, 'IN,OUT' US dollars per million input/output tokens "
                          "(empty: cost unknown; local models cost nothing)", flat="llm_price")

    def models_dir(self, home: Path) -> Path:
        """Where embedded models live: ``models_path``, else ``<home>/models`` (``home``: ``files.home``)."""
        return self.models_path or home / "models"

    @field_validator("openai_base_urls", mode="before")
    @classmethod
    def _split_base_urls(cls, value: Any) -> Any:
        """Comma-separated text or a list (``--base-url`` repeated, each may hold commas) -> clean URLs."""
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            return value  # pydantic reports the wrong type
        urls = [part.strip().rstrip("/") for item in items for part in str(item).split(",") if part.strip()]
        bad = [u for u in urls if not u.startswith(("http://", "https://"))]
        if bad:
            raise ValueError(f"{bad[0]!r} is not an http:// or https:// URL (e.g. http://127.0.0.1:8000/v1)")
        return list(dict.fromkeys(urls))


class ExtractSettings(Section):
    """Settings of the extraction: answer bounds and form, evidence, cues, repair, resolution, orphans, verification (``settings.extract``)."""

    max_entities: int = _env("GRAPHRAG_MAX_ENTITIES", 12, "maxItems of the entity array in the extraction schema",
                             ge=1)
    max_relations: int = _env("GRAPHRAG_MAX_RELATIONS", 12,
                              "maxItems of the relation array in the extraction schema", ge=1)
    announce_chunks: int = _env("GRAPHRAG_ANNOUNCE_CHUNKS", 200, "a run that will ask the model about more chunks than "
                                "this says first how many and about how long it will take (0: always)", ge=0)
    strategy: Literal["auto", "generate", "classify", "mentions", "terms"] = _env("GRAPHRAG_EXTRACTION", "auto", "extraction strategy: generate (the "
        "model writes the JSON answer), classify (mentions copied from the chunk, then one scored choice per pair of mentions), mentions (entity "
        "mentions only; a vault's edges are its links, tags, folders and co-occurrence), terms (key terms found without a model, the shared ones "
        "typed once per term in batched calls) or auto (terms for a vault and a small model, else generate)", flat="extraction")
    terms_per_chunk: int = _env("GRAPHRAG_TERMS_PER_CHUNK", 12, "terms: most key terms kept from one chunk (links, headings, aliases and code first)", ge=1)
    term_typing: bool = _env("GRAPHRAG_TERM_TYPING", False, "terms: type the terms several notes share by the ontology's classes, once per term in batched model calls (off by default: with the 1.5B embedded model 0.24 of the types were right on a labelled sample; every term stays an untyped Term)")
    term_typing_notes: int = _env("GRAPHRAG_TERM_TYPING_NOTES", 2, "terms: a term is typed when at least this many notes write it (1: every term)", ge=1)
    term_typing_batch: int = _env("GRAPHRAG_TERM_TYPING_BATCH", 40, "terms: terms typed in one model call", ge=1)
    small_model_params: float = _env("GRAPHRAG_SMALL_MODEL_PARAMS", 3.0, "auto: a model whose name states at most this many billion parameters is small (an embedded one that states none too; 0: none is)", ge=0)
    mentions_batch_chars: int = _env("GRAPHRAG_MENTIONS_BATCH_CHARS", 1500, "mentions: consecutive short chunks share a call up to this many characters (0: a call per chunk)", ge=0)
    min_fact_probability: float = _env("GRAPHRAG_MIN_FACT_PROBABILITY", 0.5, "classify: a fact the model chose with "
                                       "a lower probability (0-1) is refused (low_probability)", ge=0, le=1)
    classify_max_pairs: int = _env("GRAPHRAG_CLASSIFY_MAX_PAIRS", 60, "classify: most pair questions per chunk", ge=0)
    answer_form: Literal["full", "compact", "lines", "arrays"] = _env("GRAPHRAG_ANSWER_FORM", "full", "extraction answer form: full (JSON objects, names and classes on every relation), lines (a fact a line, under a grammar on llama.cpp: about a third of the output tokens, fewer facts right), arrays (JSON arrays without keys) or compact (short keys, relation ends by position)")
    examples_per_prompt: int = _env("GRAPHRAG_EXAMPLES_PER_PROMPT", 3, "corrected passages (`graphrag-got examples`) "
        "one extraction prompt carries; with more stored, each chunk gets those GRAPHRAG_EXAMPLE_SELECTOR picks", ge=0)
    example_selector: Literal["similar", "first"] = _env("GRAPHRAG_EXAMPLE_SELECTOR", "similar", "with more corrected "
        "passages than a prompt carries: `similar` (those nearest the chunk, by the embedding model) or `first`")
    gleanings: int = _env("GRAPHRAG_GLEANINGS", 0, "recall passes: after a chunk's answer, ask this many times in the same conversation for what the answers so far missed (each pass one more call)", ge=0, le=3)
    evidence: bool = _env("GRAPHRAG_EVIDENCE", True,
                          "refuse entities not found in their chunk and relations whose ends never meet; keep evidence")
    evidence_window: int = _env("GRAPHRAG_EVIDENCE_WINDOW", 1,
                                "sentences apart the two ends of a relation may be (0 = same sentence)", ge=0)
    relation_cues: bool = _env("GRAPHRAG_RELATION_CUES", True,
                               "with evidence on, a relation that declares cues (`indicios`) is kept only when "
                               "one occurs in a sentence where its ends meet (refusal no_cue)")
    cue_direction: bool = _env("GRAPHRAG_CUE_DIRECTION", True,
                               "with cues and repair on, a fact whose sentence words it the other way round "
                               "(\"B <cue> A\" for A REL B, or a reverse cue) gets its ends swapped "
                               "(repair reversed_by_wording), when the reverse fits domain and range")
    mention_threshold: float = _env("GRAPHRAG_MENTION_THRESHOLD", 0.85,
                                    "fuzzy score (0-1) an entity name needs to count as found in its chunk",
                                    ge=0, le=1)
    min_confidence: float = _env("GRAPHRAG_MIN_CONFIDENCE", 0.5,
                                 "mentions the model gives a lower confidence (0-1) are refused (low_confidence)",
                                 ge=0, le=1)
    repair: bool = _env("GRAPHRAG_REPAIR", True,
                        "audited repair before refusing: infer an end's class, majority class, narrow to a "
                        "subclass, flip ends")
    resolution: bool = _env("GRAPHRAG_RESOLUTION", True,
                            "merge aliases of one entity within a class (logged; aliases file to pin/split)")
    orphan_entities: Literal["keep", "duplicates", "related", "drop"] = _env(
        "GRAPHRAG_ORPHAN_ENTITIES", "related",
        "entities no kept fact uses (refused as no_fact, in the report): related = those whose every chunk "
        "has kept facts, and those whose name facts use under another class; duplicates = only the latter; "
        "drop = all; keep = none")
    verify: bool = _env("GRAPHRAG_VERIFY", False,
                        "ask the model a yes/no question per candidate triple against its evidence sentence")


class Neo4jSettings(Section):
    """Settings of the Neo4j server and the embedded one's version (``settings.neo4j``)."""

    uri: str = _env("NEO4J_URI", "bolt://127.0.0.1:7687", "Neo4j Bolt address (the embedded server listens here)", flat="neo4j_uri")
    username: str = _env("NEO4J_USERNAME", "neo4j", "Neo4j user", flat="neo4j_username")
    password: str = _env("NEO4J_PASSWORD", "graphrag-got", "Neo4j password (at least 8 characters)", flat="neo4j_password")
    database: str = _env("NEO4J_DATABASE", "neo4j", "Neo4j database", flat="neo4j_database")
    version: str = _env("GRAPHRAG_NEO4J_VERSION", "5.26.30", "version of the embedded Neo4j jars (a 5.26.x)", flat="neo4j_version")
    timeout_s: float = _env("GRAPHRAG_NEO4J_TIMEOUT", 5.0, "commands: seconds Neo4j has to open or hand out a checked "
                            "connection, and to retry a failed transaction: a stopped or hung server fails a command "
                            "in about this (the service: `GRAPHRAG_SERVICE_NEO4J_TIMEOUT`)", gt=0, flat="neo4j_timeout_s")


class GraphSettings(Section):
    """Settings of writing an extraction into the graph (``settings.graph``)."""

    batch_size: int = _env("GRAPHRAG_BATCH_SIZE", 5000, "rows per `UNWIND` batch when loading", ge=1)
    cooccurrence: bool = _env("GRAPHRAG_COOCCURRENCE", True,
                              "`load` joins the entities of each chunk by `CO_OCCURS` edges (weight: the sum of "
                              "the lower confidence of the two per chunk; count: chunks)")
    cooccurrence_max_entities: int = _env("GRAPHRAG_COOCCURRENCE_MAX_ENTITIES", 40,
                                          "most entities of one chunk paired by `CO_OCCURS` (the most confident)",
                                          ge=2)
    lock_wait_s: float = _env("GRAPHRAG_LOCK_WAIT", 600.0,
                              "seconds a graph writer (`load`, the load of `build`/`demo`, community writes) waits "
                              "for the graph lock another writer holds before giving up; 0 refuses at once "
                              "(`load --lock-wait`)", ge=0, flat="lock_wait_s")
    lock_lease_s: float = _env("GRAPHRAG_LOCK_LEASE", 60.0,
                               "seconds the graph lock stays valid without its holder's heartbeat (renewed every "
                               "third of it); a crashed writer's lock is taken over after it", ge=3, flat="lock_lease_s")


class EmbeddingSettings(Section):
    """Settings of the embedding model and the vector indexes (``settings.embedding``)."""

    enabled: bool = _env("GRAPHRAG_EMBEDDINGS", True,
                            "embed chunks and entities into Neo4j vector indexes (needed by vector/hybrid retrieval)", flat="embeddings")
    provider: Literal["embedded", "ollama", "langchain"] = _env(
        "GRAPHRAG_EMBEDDINGS_PROVIDER", "embedded",
        "embedding model: `embedded` (multilingual-e5-small in-process, numpy only), `ollama`, "
        "`langchain` (any `init_embeddings` string)", flat="embeddings_provider")
    model: str | None = _env(
        "GRAPHRAG_EMBEDDINGS_MODEL", None,
        "embedding model name: for `ollama` e.g. `nomic-embed-text` (unset: that one), for `langchain` "
        "an `init_embeddings` string such as `ollama:nomic-embed-text` (required); ignored by `embedded`", flat="embeddings_model")
    batch_size: int = _env("GRAPHRAG_EMBEDDINGS_BATCH_SIZE", 64,
                                      "texts per embedding call (and per vector write batch)", ge=1, flat="embeddings_batch_size")


class CommunitySettings(Section):
    """Settings of community detection (``settings.communities``)."""

    algorithm: Literal["leiden", "louvain"] = _env(
        "GRAPHRAG_COMMUNITY_ALGORITHM", "leiden",
        "community detection: `leiden` (hierarchical: levels, with a size cap) or `louvain` (networkx, one level)", flat="community_algorithm")
    resolution: float = _env("GRAPHRAG_COMMUNITY_RESOLUTION", 1.0,
                                       "community resolution (Leiden or Louvain): higher gives more, smaller communities", gt=0, flat="community_resolution")
    seed: int = _env("GRAPHRAG_COMMUNITY_SEED", 42, "community detection random seed", flat="community_seed")
    max_size: int = _env("GRAPHRAG_COMMUNITY_MAX_SIZE", 10,
                                   "leiden: a community larger than this is split into sub-communities one level "
                                   "down", ge=2, flat="community_max_size")
    max_levels: int = _env("GRAPHRAG_COMMUNITY_MAX_LEVELS", 3,
                                     "leiden: most levels of the hierarchy (level 0 covers the whole graph)",
                                     ge=1, le=8, flat="community_max_levels")
    incremental: bool = _env("GRAPHRAG_COMMUNITY_INCREMENTAL", True, "leiden: keep the communities of the last detection whose members and the relations among them did not change (and their reports); cluster only the rest again. 0: detect from scratch", flat="community_incremental")
    cooccurrence: bool = _env("GRAPHRAG_COMMUNITY_COOCCURRENCE", False, "communities are also computed on the `CO_OCCURS` edges (for ontologies with few relations)", flat="community_cooccurrence")


class SearchSettings(Section):
    """Settings of questions: local, global and DRIFT search and the router (``settings.search``)."""

    local_retrieval: Literal["graph", "vector", "hybrid"] = _env(
        "GRAPHRAG_LOCAL_RETRIEVAL", "hybrid",
        "local search retrieval: `graph` (name-matched anchors and their neighbourhood), `vector` "
        "(vector top-k chunks and entities), `hybrid` (both, fused by reciprocal rank)")
    local_hops: int = _env("GRAPHRAG_LOCAL_HOPS", 2, "local search: neighbourhood depth (1 to 4)", ge=1, le=4)
    local_max_facts: int = _env("GRAPHRAG_LOCAL_MAX_FACTS", 60, "local search: most facts in the context", ge=1)
    answer_format: Literal["auto", "text", "claims"] = _env("GRAPHRAG_ANSWER_FORMAT", "auto", "local, global and DRIFT answers: `text` (prose, not checked), `claims` (cited claims as JSON, context ids only; a claim its sources do not support is left out, with its reason), `auto` (claims on llama.cpp)")
    claim_max_sources: int = _env("GRAPHRAG_CLAIM_MAX_SOURCES", 3, "claims answers: most source ids one claim may cite and keeps (those holding its names first; the others are removed and listed)", ge=1, le=10)
    answer_language_retry: bool = _env("GRAPHRAG_ANSWER_LANGUAGE_RETRY", True, "answers: when an answer's language is not the question's, ask again once with the language named last in the prompt (a warning says when it still differs; 0: only the warning)")
    local_top_k: int = _env("GRAPHRAG_LOCAL_TOP_K", 8,
                            "local search: vector hits per index (chunks, entities) in vector/hybrid retrieval",
                            ge=1, le=200)
    local_context_order: Literal["retrieval", "question"] = _env(
        "GRAPHRAG_LOCAL_CONTEXT_ORDER", "question",
        "local search: the order of the answer's sources: `question` (facts and excerpts in one list, the ones "
        "sharing the most words with the question first, BM25), `retrieval` (facts by their place in the "
        "graph, then excerpts)")
    local_answer_sources: int = _env(
        "GRAPHRAG_LOCAL_ANSWER_SOURCES", 20,
        "local search with `local_context_order=question`: most sources the answer is given, the best "
        "ranked (0: all of them)", ge=0)
    local_answer: Literal["auto", "written", "extractive"] = _env(
        "GRAPHRAG_LOCAL_ANSWER", "auto",
        "local answers: `written` (the model writes every claim from the ranked sources), `extractive` (the "
        "evidence sentences naming the question's entities together are the answer's core, cited; the model "
        "writes at most the sentences stating the answer from them), `auto` (extractive on llama.cpp)")
    extractive_sentences: int = _env(
        "GRAPHRAG_EXTRACTIVE_SENTENCES", 4,
        "extractive local answers: most evidence sentences in the answer's core", ge=1, le=12)
    extractive_connect: bool = _env(
        "GRAPHRAG_EXTRACTIVE_CONNECT", True,
        "extractive local answers: ask the model for at most two sentences stating the answer from the core "
        "(0: the core alone, no answer call)")
    local_max_chunks: int = _env("GRAPHRAG_LOCAL_MAX_CHUNKS", 8,
                                 "local search: most text chunks in the context", ge=0)
    local_catalog_cache_s: float = _env(
        "GRAPHRAG_LOCAL_CATALOG_CACHE", 0.0,
        "local search: seconds a process may reuse the entity catalog it read, while the graph's entity "
        "count and document hashes are unchanged (0: read it for every question; set it for a service)", ge=0)
    global_threshold: int = _env("GRAPHRAG_GLOBAL_THRESHOLD", 5,
                                 "global search: keep communities rated at least this relevant (0 to 10)",
                                 ge=0, le=10)
    global_target_communities: int = _env("GRAPHRAG_GLOBAL_TARGET_COMMUNITIES", 8,
                                          "global search without `--level`: the level whose community count is "
                                          "closest to this", ge=1)
    global_max_communities: int = _env("GRAPHRAG_GLOBAL_MAX_COMMUNITIES", 6,
                                       "global search: most community reports mapped (the most similar to the "
                                       "question)", ge=1)
    global_min_similarity: float = _env("GRAPHRAG_GLOBAL_MIN_SIMILARITY", 0.75,
                                        "global search: reports less similar (cosine) to the question are skipped "
                                        "before the map step", ge=-1, le=1)
    global_map: Literal["auto", "extract", "points"] = _env(
        "GRAPHRAG_GLOBAL_MAP", "auto",
        "global search, what each mapped report gives: `extract` (a relevance 0-10 and a short extract), "
        "`points` (at most 3 points about the question, each scored 0-10; the answer is written from the best "
        "points across reports, taken in turns, and cites at least 3 reports when 3 have points), `auto` "
        "(points on llama.cpp)")
    global_answer: Literal["auto", "written", "extractive"] = _env(
        "GRAPHRAG_GLOBAL_ANSWER", "auto",
        "global answers: `written` (the model writes the answer from the mapped reports), `extractive` (the best "
        "points of the reports, taken in turns, are the answer's core, each citing its report; the model writes at "
        "most two sentences stating the answer from them, see GRAPHRAG_EXTRACTIVE_CONNECT), `auto` (extractive on "
        "llama.cpp)")
    route_classifier: bool = _env("GRAPHRAG_ROUTE_CLASSIFIER", False,
                                  "`ask` without a mode: ask the LLM (one call) when no routing rule decides")
    drift_depth: int = _env("GRAPHRAG_DRIFT_DEPTH", 1,
                            "drift search: rounds of follow-up questions (1 to 3)", ge=1, le=3)
    drift_followups: int = _env("GRAPHRAG_DRIFT_FOLLOWUPS", 3,
                                "drift search: most follow-up questions searched per round", ge=0, le=10)
    drift_max_calls: int = _env("GRAPHRAG_DRIFT_MAX_CALLS", 6,
                                "drift search: most LLM calls of one question (retries included)", ge=2)
    drift_reports: int = _env("GRAPHRAG_DRIFT_REPORTS", 5,
                              "drift search: community reports most similar to the question read by the primer",
                              ge=1, le=50)


from graphrag_got.config.service import CodeSettings, ServiceSettings  # noqa: E402

#: Section name -> its model, in the order of the README table.
SECTIONS: dict[str, type[Section]] = {
    "files": FilesSettings,
    "chunking": ChunkingSettings,
    "llm": LLMSettings,
    "extract": ExtractSettings,
    "neo4j": Neo4jSettings,
    "graph": GraphSettings,
    "embedding": EmbeddingSettings,
    "communities": CommunitySettings,
    "search": SearchSettings,
    "code": CodeSettings,
    "service": ServiceSettings,
}


def _flat_name(field: str, info: FieldInfo) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    return str(extra.get("flat") or field)


#: Flat name -> (section, field name in the section).
FLAT: dict[str, tuple[str, str]] = {
    _flat_name(field, info): (section, field)
    for section, model in SECTIONS.items() for field, info in model.model_fields.items()
}


class Settings(BaseSettings):
    """All settings, one section per stage. Built from flat names (``Settings(max_entities=3)``),
    environment variable names, or sections (``Settings(extract={...})``)."""

    model_config = SettingsConfigDict(extra="forbid", validate_assignment=True, case_sensitive=True,
                                      env_ignore_empty=True)

    files: FilesSettings = Field(default_factory=FilesSettings)
    chunking: ChunkingSettings = Field(default_factory=ChunkingSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)
    extract: ExtractSettings = Field(default_factory=ExtractSettings)
    neo4j: Neo4jSettings = Field(default_factory=Neo4jSettings)
    graph: GraphSettings = Field(default_factory=GraphSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    communities: CommunitySettings = Field(default_factory=CommunitySettings)
    search: SearchSettings = Field(default_factory=SearchSettings)
    code: CodeSettings = Field(default_factory=CodeSettings)
    service: ServiceSettings = Field(default_factory=ServiceSettings)

    @model_validator(mode="before")
    @classmethod
    def _nest(cls, data: Any) -> Any:
        """Flat names and environment variable names -> their sections (sections given whole stay)."""
        if not isinstance(data, dict):
            return data
        out: dict[str, Any] = {}
        for key, value in data.items():
            if key in SECTIONS:
                given = value.model_dump(by_alias=False) if isinstance(value, Section) else value
                if isinstance(given, dict):
                    out.setdefault(key, {}).update(given)
                else:
                    out[key] = given  # pydantic reports the wrong type
                continue
            target = FLAT.get(key) or FLAT.get(_BY_VAR.get(key, ""))
            if target is None:
                out[key] = value  # extra="forbid" names it
                continue
            section, field = target
            out.setdefault(section, {})[field] = value
        return out

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings], init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource, dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:  # fmt: skip
        """Only the keyword arguments: the environment is read by :meth:`load`, never implicitly."""
        return (init_settings,)

    @classmethod
    def load(cls, env_file: str | Path | None = None, **overrides: Any) -> "Settings":
        """Read defaults <- `.env` <- process environment <- explicit overrides by flat name (None =
        not given).

        ``env_file`` defaults to the first `.env` found from the current folder upwards; one given
        explicitly must exist.
        """
        if env_file is not None and not Path(env_file).is_file():
            raise ConfigError(f"env file {str(env_file)!r} does not exist; pass an existing file to --env-file "
                              "or leave it out to read ./.env")
        dotenv_path = str(env_file) if env_file is not None else find_dotenv(usecwd=True)
        values: dict[str, Any] = {}
        if dotenv_path:
            values.update(_from_variables(DotEnvSettingsSource(_Variables, env_file=dotenv_path)()))
        values.update(_from_variables(EnvSettingsSource(_Variables)()))
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    def flat(self) -> dict[str, Any]:
        """Every value by its flat name (what ``Settings(**...)`` takes back)."""
        return {name: getattr(getattr(self, section), field) for name, (section, field) in FLAT.items()}

    def with_overrides(self, **overrides: Any) -> "Settings":
        """A copy with these settings (flat names) replaced (None = keep), validated like everything else."""
        data = self.flat()
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return Settings(**data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    @property
    def cache_dir(self) -> Path:
        return self.files.cache_dir

    @property
    def models_dir(self) -> Path:
        return self.llm.models_dir(self.files.home)


def _leaves(model: type[BaseModel]) -> list[tuple[str, str, FieldInfo]]:
    """(flat name, section path, field) of every setting of ``model``: a sectioned ``Settings`` or a
    flat settings model (one level of fields)."""
    if model is Settings:
        return [(_flat_name(f, info), f"{s}.{f}", info) for s, sm in SECTIONS.items() for f, info in sm.model_fields.items()]
    return [(name, "", info) for name, info in model.model_fields.items()]


def env_map(model: type[BaseModel] = Settings) -> dict[str, str]:
    """Flat name -> environment variable, read from the fields' ``validation_alias``."""
    out: dict[str, str] = {}
    for name, _path, info in _leaves(model):
        alias = info.validation_alias
        if not isinstance(alias, str):
            raise TypeError(f"{model.__name__}.{name} needs a validation_alias naming its environment variable")
        out[name] = alias
    return out


#: Flat name -> environment variable. Neo4j's names follow the neo4j / langchain-neo4j convention.
ENV: dict[str, str] = env_map()
_BY_VAR: dict[str, str] = {var: name for name, var in ENV.items()}


#: Every environment variable as an optional field of any type: what the `.env` and environment
#: sources read before the values are validated by their sections.
_Variables = create_model(  # type: ignore[call-overload]
    "_Variables", __base__=BaseSettings, __config__=None,
    **{var: (Any, None) for var in ENV.values()},
)
_Variables.model_config.update(case_sensitive=True, env_ignore_empty=True, extra="ignore")


def _from_variables(data: dict[str, Any]) -> dict[str, Any]:
    """Variables of a source -> flat names; variables that are not settings (in `.env`) are ignored."""
    return {_BY_VAR[k]: v for k, v in data.items() if k in _BY_VAR and v is not None}


def _explain(exc: ValidationError) -> str:
    lines = ["invalid setting(s):"]
    by_path = {f"{s}.{f}": name for name, (s, f) in FLAT.items()}
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        name = by_path.get(".".join(str(p) for p in err["loc"][:2]), loc)
        var = ENV.get(name, loc)
        lines.append(f"  {var} = {err.get('input')!r}: {err['msg']}")
    lines.append("Fix the value in the environment or in .env (see docs/reference/settings.md).")
    return "\n".join(lines)

