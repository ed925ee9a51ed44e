"""Every setting in one typed object, read from the environment and `.env` (python-dotenv).

Defaults live here and nowhere else. Each field maps to one environment variable (see ``ENV``);
``Settings.load()`` reads them, ``Settings.with_overrides`` applies CLI flags on top.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values, find_dotenv
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import ConfigError

Provider = Literal["auto", "ollama", "llamacpp", "replay"]


def _default_home() -> Path:
    """Where caches, downloaded jars/models and server data go (git-ignored)."""
    return Path(os.environ.get("GRAPHRAG_HOME", ".graphrag_got"))


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    # --- files -----------------------------------------------------------------------------
    home: Path = Field(default_factory=_default_home, description="state folder: cache, server, models")
    ontology_path: Path = Path("ontology/got.json")
    corpus_path: Path = Path("corpus")
    out_dir: Path = Path("out")

    # --- chunking --------------------------------------------------------------------------
    chunker: Literal["auto", "paragraph", "markdown"] = "auto"
    chunk_min_chars: int = Field(40, ge=0)
    chunk_max_chars: int = Field(1500, ge=100)

    # --- LLM -------------------------------------------------------------------------------
    llm_provider: Provider = "auto"
    ollama_base_url: str = "http://localhost:11434"
    ollama_model: str = "qwen2.5:7b-instruct"
    llamacpp_model: str = "qwen2.5-coder-1.5b"  # a name from graphrag_got.model_store, or a .gguf path
    models_path: Path | None = Field(None, description="where embedded models live (default <home>/models)")
    llamacpp_n_ctx: int = Field(4096, ge=512)
    llamacpp_threads: int | None = None
    llm_max_tokens: int = Field(1536, ge=64)
    llm_timeout_s: float = Field(600.0, gt=0)
    replay_file: Path | None = None
    max_entities: int = Field(12, ge=1, description="maxItems of the entity array in the schema")
    max_relations: int = Field(12, ge=1, description="maxItems of the relation array in the schema")
    concurrency: int = Field(1, ge=1)

    # --- Neo4j -----------------------------------------------------------------------------
    neo4j_uri: str = "bolt://127.0.0.1:7687"
    neo4j_username: str = "neo4j"
    neo4j_password: str = "graphrag-got"
    neo4j_database: str = "neo4j"
    neo4j_version: str = "5.26.30"
    batch_size: int = Field(5000, ge=1)

    # --- communities and search -------------------------------------------------------------
    community_resolution: float = Field(1.0, gt=0)
    community_seed: int = 42
    local_hops: int = Field(2, ge=1, le=4)
    local_max_facts: int = Field(60, ge=1)
    global_threshold: int = Field(5, ge=0, le=10)

    @classmethod
    def load(cls, env_file: str | Path | None = None, **overrides: Any) -> "Settings":
        """Read defaults <- `.env` <- process environment <- explicit overrides."""
        values: dict[str, Any] = {}
        dotenv_path = str(env_file) if env_file else find_dotenv(usecwd=True)
        file_env = {k: v for k, v in (dotenv_values(dotenv_path) if dotenv_path else {}).items() if v is not None}
        merged = {**file_env, **os.environ}
        for field, var in ENV.items():
            if var in merged and merged[var] != "":
                values[field] = merged[var]
        values.update({k: v for k, v in overrides.items() if v is not None})
        try:
            return cls(**values)
        except ValidationError as exc:
            raise ConfigError(_explain(exc)) from None

    def with_overrides(self, **overrides: Any) -> "Settings":
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


# Field name -> environment variable. Neo4j's names follow the neo4j / langchain-neo4j convention.
ENV: dict[str, str] = {
    "home": "GRAPHRAG_HOME",
    "ontology_path": "GRAPHRAG_ONTOLOGY",
    "corpus_path": "GRAPHRAG_CORPUS",
    "out_dir": "GRAPHRAG_OUT",
    "chunker": "GRAPHRAG_CHUNKER",
    "chunk_min_chars": "GRAPHRAG_CHUNK_MIN_CHARS",
    "chunk_max_chars": "GRAPHRAG_CHUNK_MAX_CHARS",
    "llm_provider": "GRAPHRAG_LLM_PROVIDER",
    "ollama_base_url": "OLLAMA_BASE_URL",
    "ollama_model": "GRAPHRAG_OLLAMA_MODEL",
    "llamacpp_model": "GRAPHRAG_LLAMACPP_MODEL",
    "models_path": "GRAPHRAG_MODELS_DIR",
    "llamacpp_n_ctx": "GRAPHRAG_LLAMACPP_N_CTX",
    "llamacpp_threads": "GRAPHRAG_LLAMACPP_THREADS",
    "llm_max_tokens": "GRAPHRAG_LLM_MAX_TOKENS",
    "llm_timeout_s": "GRAPHRAG_LLM_TIMEOUT",
    "replay_file": "GRAPHRAG_REPLAY_FILE",
    "max_entities": "GRAPHRAG_MAX_ENTITIES",
    "max_relations": "GRAPHRAG_MAX_RELATIONS",
    "concurrency": "GRAPHRAG_CONCURRENCY",
    "neo4j_uri": "NEO4J_URI",
    "neo4j_username": "NEO4J_USERNAME",
    "neo4j_password": "NEO4J_PASSWORD",
    "neo4j_database": "NEO4J_DATABASE",
    "neo4j_version": "GRAPHRAG_NEO4J_VERSION",
    "batch_size": "GRAPHRAG_BATCH_SIZE",
    "community_resolution": "GRAPHRAG_COMMUNITY_RESOLUTION",
    "community_seed": "GRAPHRAG_COMMUNITY_SEED",
    "local_hops": "GRAPHRAG_LOCAL_HOPS",
    "local_max_facts": "GRAPHRAG_LOCAL_MAX_FACTS",
    "global_threshold": "GRAPHRAG_GLOBAL_THRESHOLD",
}


def _explain(exc: ValidationError) -> str:
    lines = ["invalid setting(s):"]
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"])
        var = ENV.get(field, field)
        lines.append(f"  {var} = {err.get('input')!r}: {err['msg']}")
    lines.append("Fix the value in the environment or in .env (see README, 'Configuration').")
    return "\n".join(lines)
