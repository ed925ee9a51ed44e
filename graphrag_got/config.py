"""Every setting in one typed object (pydantic-settings), read from the environment and `.env`.

Defaults, environment variable names and descriptions live on the fields of :class:`Settings`
and nowhere else: ``ENV`` (field -> variable) and the README's configuration table
(:func:`settings_table_markdown`, ``python -m graphrag_got.config``) are derived from them.

``Settings(**kw)`` is the defaults plus ``kw`` only, so code and tests that build one get the same
object on every machine. ``Settings.load()`` reads defaults <- ``.env`` <- process environment <-
explicit overrides; ``settings.with_overrides(**kw)`` applies CLI flags on top of a loaded object.
An empty variable (``NEO4J_PASSWORD=``) counts as unset.
"""

from __future__ import annotations

import os
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from dotenv import find_dotenv
from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic.fields import FieldInfo
from pydantic_settings import (
    BaseSettings,
    DotEnvSettingsSource,
    EnvSettingsSource,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
)

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


def _env(var: str, default: Any, description: str, **constraints: Any) -> Any:
    """A field read from environment variable ``var`` (also settable by field name in code)."""
    return Field(default, validation_alias=var, description=description, **constraints)


class Settings(BaseSettings):
    """All settings. Field name (Python, CLI overrides) -> ``validation_alias`` (environment variable)."""

    model_config = SettingsConfigDict(
        extra="forbid",
        validate_assignment=True,
        populate_by_name=True,  # code passes field names; the environment uses the aliases
        case_sensitive=True,
        env_ignore_empty=True,
    )

    # --- files -----------------------------------------------------------------------------
    home: Path = Field(default_factory=_default_home, validation_alias="GRAPHRAG_HOME",
                       description="state folder: caches, embedded models, embedded Neo4j data",
                       json_schema_extra={"shown_default": DEFAULT_HOME.as_posix()})
    ontology_path: Path = _env("GRAPHRAG_ONTOLOGY", Path("ontology/got.json"), "ontology file")
    corpus_path: Path = _env("GRAPHRAG_CORPUS", Path("corpus/got.txt"),
                             "corpus file or folder (`.txt` by paragraphs, `.md` by headings)")
    out_dir: Path = _env("GRAPHRAG_OUT", Path("out"),
                         "outputs: extraction.json, reports, communities.json, graph.html")

    # --- chunking --------------------------------------------------------------------------
    chunker: Literal["auto", "paragraph", "markdown"] = _env(
        "GRAPHRAG_CHUNKER", "auto",
        "how the corpus is cut: `auto` (`markdown` for `.md` files, else `paragraph`), `paragraph`, `markdown`")
    chunk_min_chars: int = _env("GRAPHRAG_CHUNK_MIN_CHARS", 40, "chunks shorter than this are dropped", ge=0)
    chunk_max_chars: int = _env("GRAPHRAG_CHUNK_MAX_CHARS", 1500,
                                "longer sections and paragraphs are split (at paragraphs, then sentences)", ge=100)

    # --- LLM -------------------------------------------------------------------------------
    llm_provider: Provider = _env(
        "GRAPHRAG_LLM_PROVIDER", "auto",
        "`auto` (the LangChain model or OpenAI base URLs when set, else Ollama if it answers and has the model, "
        "else llama.cpp), `ollama`, `llamacpp`, `openai` (any OpenAI-compatible server), `langchain` (any "
        "`init_chat_model` string), `replay`")
    ollama_base_url: str = _env("OLLAMA_BASE_URL", "http://localhost:11434", "Ollama server")
    ollama_model: str = _env("GRAPHRAG_OLLAMA_MODEL", "qwen2.5:7b-instruct", "Ollama model")
    llamacpp_model: str = _env("GRAPHRAG_LLAMACPP_MODEL", "qwen2.5-coder-1.5b",
                               "embedded model name (`graphrag-got model list`) or any `.gguf` path")
    models_path: Path | None = _env("GRAPHRAG_MODELS_DIR", None,
                                    "where embedded models live (unset: `<home>/models`)")
    llamacpp_n_ctx: int = _env("GRAPHRAG_LLAMACPP_N_CTX", 4096, "llama.cpp context window, in tokens", ge=512)
    llamacpp_threads: int | None = _env("GRAPHRAG_LLAMACPP_THREADS", None,
                                        "most llama.cpp CPU threads (unset: every core)")
    llamacpp_adaptive_threads: bool = _env(
        "GRAPHRAG_LLAMACPP_ADAPTIVE_THREADS", True,
        "each embedded-model call uses at most the cores free at its start (sampled over 150 ms), never more "
        "than GRAPHRAG_LLAMACPP_THREADS; false: always that many")
    llamacpp_loop_guard: bool = _env("GRAPHRAG_LOOP_GUARD", True,
                                     "embedded model: close a JSON list once the model repeats its items")
    llm_max_tokens: int = _env("GRAPHRAG_LLM_MAX_TOKENS", 1536, "most tokens in one LLM answer", ge=64)
    llm_timeout_s: float = _env("GRAPHRAG_LLM_TIMEOUT", 600.0, "seconds one LLM call may take", gt=0)
    replay_file: Path | None = _env("GRAPHRAG_REPLAY_FILE", None, "recorded answers for the `replay` provider")
    openai_base_urls: Annotated[list[str], NoDecode] = _env(
        "GRAPHRAG_OPENAI_BASE_URLS", [],
        "OpenAI-compatible servers of `openai` (vLLM, LM Studio, llama.cpp, Ollama's `/v1`), comma-separated; "
        "several form a pool that calls are spread over (unset: the OpenAI API)")
    openai_model: str | None = _env("GRAPHRAG_OPENAI_MODEL", None,
                                    "model name for `openai` (unset: the first model the server lists)")
    openai_api_key: SecretStr | None = _env("OPENAI_API_KEY", None,
                                            "API key for `openai` (leave unset for local servers)")
    openai_balance: Literal["least_busy", "round_robin"] = _env(
        "GRAPHRAG_OPENAI_BALANCE", "least_busy",
        "how `openai` spreads calls over the pool: `least_busy` (fewest calls in flight, ties in turn) or "
        "`round_robin`")
    openai_response_format: Literal["auto", "json_schema", "json_object", "none"] = _env(
        "GRAPHRAG_OPENAI_RESPONSE_FORMAT", "auto",
        "how `openai` constrains answers to the JSON schema: `auto` (`json_schema`, stepping down per server to "
        "`json_object` + schema, then `none`, when a server refuses it), `json_schema`, `json_object`, `none`")
    langchain_model: str | None = _env(
        "GRAPHRAG_LANGCHAIN_MODEL", None,
        "`init_chat_model` string for `langchain`, e.g. `deepseek:deepseek-chat` (install its package yourself)")
    structured_output: Literal["auto", "json_schema", "function_calling", "none"] = _env(
        "GRAPHRAG_STRUCTURED_OUTPUT", "auto",
        "structured output of `langchain` models: `auto` (`json_schema` where supported, else "
        "`function_calling`, else text with repair), `json_schema`, `function_calling`, `none`")
    llm_retries: int = _env("GRAPHRAG_LLM_RETRIES", 3,
                            "more tries of a remote LLM call after HTTP 429/5xx, a connection error or a timeout",
                            ge=0)
    llm_backoff_s: float = _env("GRAPHRAG_LLM_BACKOFF", 1.0,
                                "seconds before the first retry of a remote LLM call, doubled at each retry", ge=0)
    max_entities: int = _env("GRAPHRAG_MAX_ENTITIES", 12, "maxItems of the entity array in the extraction schema",
                             ge=1)
    max_relations: int = _env("GRAPHRAG_MAX_RELATIONS", 12,
                              "maxItems of the relation array in the extraction schema", ge=1)
    concurrency: int = _env("GRAPHRAG_CONCURRENCY", 1,
                            "parallel LLM calls (Ollama, `openai`, `langchain`; llama.cpp runs one at a time): "
                            "with a pool, at least one per server", ge=1)

    # --- trust: evidence, repair, entity resolution, verification ----------------------------
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
    llm_price: str = _env("GRAPHRAG_LLM_PRICE", "",
                          "price of the remote model, 'IN,OUT' US dollars per million input/output tokens "
                          "(empty: cost unknown; local models cost nothing)")
    answer_form: Literal["full", "compact"] = _env(
        "GRAPHRAG_ANSWER_FORM", "full",
        "extraction answer form: full (names and classes on every relation) or compact (short keys, "
        "relation ends by position; fewer output tokens)")
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

    # --- Neo4j -----------------------------------------------------------------------------
    neo4j_uri: str = _env("NEO4J_URI", "bolt://127.0.0.1:7687", "Neo4j Bolt address (the embedded server listens here)")
    neo4j_username: str = _env("NEO4J_USERNAME", "neo4j", "Neo4j user")
    neo4j_password: str = _env("NEO4J_PASSWORD", "graphrag-got", "Neo4j password (at least 8 characters)")
    neo4j_database: str = _env("NEO4J_DATABASE", "neo4j", "Neo4j database")
    neo4j_version: str = _env("GRAPHRAG_NEO4J_VERSION", "5.26.30", "version of the embedded Neo4j jars (a 5.26.x)")
    batch_size: int = _env("GRAPHRAG_BATCH_SIZE", 5000, "rows per `UNWIND` batch when loading", ge=1)

    # --- communities and search -------------------------------------------------------------
    community_resolution: float = _env("GRAPHRAG_COMMUNITY_RESOLUTION", 1.0,
                                       "community resolution (Leiden or Louvain): higher gives more, smaller communities", gt=0)
    community_seed: int = _env("GRAPHRAG_COMMUNITY_SEED", 42, "community detection random seed")
    local_hops: int = _env("GRAPHRAG_LOCAL_HOPS", 2, "local search: neighbourhood depth (1 to 4)", ge=1, le=4)
    local_max_facts: int = _env("GRAPHRAG_LOCAL_MAX_FACTS", 60, "local search: most facts in the context", ge=1)
    global_threshold: int = _env("GRAPHRAG_GLOBAL_THRESHOLD", 5,
                                 "global search: keep communities rated at least this relevant (0 to 10)",
                                 ge=0, le=10)

    # --- embeddings and hybrid retrieval ------------------------------------------------------
    embeddings: bool = _env("GRAPHRAG_EMBEDDINGS", True,
                            "embed chunks and entities into Neo4j vector indexes (needed by vector/hybrid retrieval)")
    embeddings_provider: Literal["embedded", "ollama", "langchain"] = _env(
        "GRAPHRAG_EMBEDDINGS_PROVIDER", "embedded",
        "embedding model: `embedded` (multilingual-e5-small in-process, numpy only), `ollama`, "
        "`langchain` (any `init_embeddings` string)")
    embeddings_model: str | None = _env(
        "GRAPHRAG_EMBEDDINGS_MODEL", None,
        "embedding model name: for `ollama` e.g. `nomic-embed-text` (unset: that one), for `langchain` "
        "an `init_embeddings` string such as `ollama:nomic-embed-text` (required); ignored by `embedded`")
    embeddings_batch_size: int = _env("GRAPHRAG_EMBEDDINGS_BATCH_SIZE", 64,
                                      "texts per embedding call (and per vector write batch)", ge=1)
    local_retrieval: Literal["graph", "vector", "hybrid"] = _env(
        "GRAPHRAG_LOCAL_RETRIEVAL", "hybrid",
        "local search retrieval: `graph` (name-matched anchors and their neighbourhood), `vector` "
        "(vector top-k chunks and entities), `hybrid` (both, fused by reciprocal rank)")
    local_top_k: int = _env("GRAPHRAG_LOCAL_TOP_K", 8,
                            "local search: vector hits per index (chunks, entities) in vector/hybrid retrieval",
                            ge=1, le=200)
    local_max_chunks: int = _env("GRAPHRAG_LOCAL_MAX_CHUNKS", 8,
                                 "local search: most text chunks in the context", ge=0)
    local_catalog_cache_s: float = _env(
        "GRAPHRAG_LOCAL_CATALOG_CACHE", 0.0,
        "local search: seconds a process may reuse the entity catalog it read, while the graph's entity "
        "count and document hashes are unchanged (0: read it for every question; set it for a service)", ge=0)

    # --- service (graphrag-got serve) -----------------------------------------------------------
    service_max_question_chars: int = _env("GRAPHRAG_SERVICE_MAX_QUESTION_CHARS", 1000,
                                           "service: longest question accepted (longer ones get HTTP 413)", ge=1)
    service_timeout_s: float = _env("GRAPHRAG_SERVICE_TIMEOUT", 300.0,
                                    "service: seconds one request may take before it gets HTTP 504", gt=0)
    service_max_llm_requests: int = _env("GRAPHRAG_SERVICE_MAX_LLM_REQUESTS", 2,
                                         "service: questions answered by the LLM at once; more get HTTP 503", ge=1)

    # --- routing and DRIFT search -------------------------------------------------------------
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

    # --- co-occurrence (load) -------------------------------------------------------------------
    cooccurrence: bool = _env("GRAPHRAG_COOCCURRENCE", True,
                              "`load` joins the entities of each chunk by `CO_OCCURS` edges (weight: the sum of "
                              "the lower confidence of the two per chunk; count: chunks)")
    cooccurrence_max_entities: int = _env("GRAPHRAG_COOCCURRENCE_MAX_ENTITIES", 40,
                                          "most entities of one chunk paired by `CO_OCCURS` (the most confident)",
                                          ge=2)

    # --- community levels and selective global search -------------------------------------------
    community_algorithm: Literal["leiden", "louvain"] = _env(
        "GRAPHRAG_COMMUNITY_ALGORITHM", "leiden",
        "community detection: `leiden` (hierarchical: levels, with a size cap) or `louvain` (networkx, one level)")
    community_max_size: int = _env("GRAPHRAG_COMMUNITY_MAX_SIZE", 10,
                                   "leiden: a community larger than this is split into sub-communities one level "
                                   "down", ge=2)
    community_max_levels: int = _env("GRAPHRAG_COMMUNITY_MAX_LEVELS", 3,
                                     "leiden: most levels of the hierarchy (level 0 covers the whole graph)",
                                     ge=1, le=8)
    community_cooccurrence: bool = _env("GRAPHRAG_COMMUNITY_COOCCURRENCE", False,
                                        "communities are also computed on the `CO_OCCURS` edges (for ontologies "
                                        "with few relations)")
    global_target_communities: int = _env("GRAPHRAG_GLOBAL_TARGET_COMMUNITIES", 8,
                                          "global search without `--level`: the level whose community count is "
                                          "closest to this", ge=1)
    global_max_communities: int = _env("GRAPHRAG_GLOBAL_MAX_COMMUNITIES", 6,
                                       "global search: most community reports mapped (the most similar to the "
                                       "question)", ge=1)
    global_min_similarity: float = _env("GRAPHRAG_GLOBAL_MIN_SIMILARITY", 0.75,
                                        "global search: reports less similar (cosine) to the question are skipped "
                                        "before the map step", ge=-1, le=1)

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

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Only the keyword arguments: the environment is read by :meth:`load`, never implicitly."""
        return (init_settings,)

    @classmethod
    def load(cls, env_file: str | Path | None = None, **overrides: Any) -> "Settings":
        """Read defaults <- `.env` <- process environment <- explicit overrides (None = not given).

        ``env_file`` defaults to the first `.env` found from the current folder upwards; one given
        explicitly must exist.
        """
        if env_file is not None and not Path(env_file).is_file():
            raise ConfigError(f"env file {str(env_file)!r} does not exist; pass an existing file to --env-file "
                              "or leave it out to read ./.env")
        dotenv_path = str(env_file) if env_file is not None else find_dotenv(usecwd=True)
        values: dict[str, Any] = {}
        if dotenv_path:
            values.update(cls._from_aliases(DotEnvSettingsSource(cls, env_file=dotenv_path)()))
        values.update(cls._from_aliases(EnvSettingsSource(cls)()))
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    @classmethod
    def _from_aliases(cls, data: dict[str, Any]) -> dict[str, Any]:
        """Variables of a source -> field names; variables that are not settings (in `.env`) are ignored."""
        by_var = {var: field for field, var in env_map(cls).items()}
        return {by_var[k]: v for k, v in data.items() if k in by_var}

    def with_overrides(self, **overrides: Any) -> "Settings":
        """A copy with these fields replaced (None = keep), validated like everything else."""
        data = self.model_dump()
        data.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return Settings(**data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    @property
    def cache_dir(self) -> Path:
        return self.home / "cache"

    @property
    def models_dir(self) -> Path:
        return self.models_path or self.home / "models"


def env_map(model: type[BaseSettings] = Settings) -> dict[str, str]:
    """Field name -> environment variable, read from the fields' ``validation_alias``."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        if not isinstance(alias, str):
            raise TypeError(f"{model.__name__}.{name} needs a validation_alias naming its environment variable")
        out[name] = alias
    return out


#: Field name -> environment variable. Neo4j's names follow the neo4j / langchain-neo4j convention.
ENV: dict[str, str] = env_map()


def _explain(exc: ValidationError) -> str:
    lines = ["invalid setting(s):"]
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        var = ENV.get(field, field)
        lines.append(f"  {var} = {err.get('input')!r}: {err['msg']}")
    lines.append("Fix the value in the environment or in .env (see README, 'Configuration').")
    return "\n".join(lines)


# ------------------------------------------------------------------------------ documentation


def _shown_default(info: FieldInfo) -> str:
    extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
    value = extra["shown_default"] if "shown_default" in extra else info.get_default(call_default_factory=False)
    if value is None:
        return "(unset)"
    if isinstance(value, Path):
        value = value.as_posix()
    return f"`{value}`"


def _choices(info: FieldInfo) -> list[str]:
    """The allowed values of a ``Literal`` field, in order (empty for other types)."""
    if typing.get_origin(info.annotation) is Literal:
        return [str(v) for v in typing.get_args(info.annotation)]
    return []


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def settings_table_markdown(model: type[BaseSettings] = Settings) -> str:
    """The Markdown table of every setting (variable, default, meaning), as README.md shows it."""
    rows = ["| variable | default | meaning |", "|---|---|---|"]
    for name, info in model.model_fields.items():
        if not info.description:
            raise TypeError(f"{model.__name__}.{name} needs a description (it is the README's 'meaning' column)")
        meaning = info.description
        choices = _choices(info)
        if choices and not all(f"`{c}`" in meaning for c in choices):
            meaning += " (one of: " + ", ".join(f"`{c}`" for c in choices) + ")"
        rows.append(f"| `{env_map(model)[name]}` | {_cell(_shown_default(info))} | {_cell(meaning)} |")
    return "\n".join(rows) + "\n"


if __name__ == "__main__":  # pragma: no cover - `python -m graphrag_got.config` prints the table
    import sys

    sys.stdout.write(settings_table_markdown())
