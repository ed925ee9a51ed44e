"""The settings sections of the code graph and of the HTTP service (``settings.code``, ``settings.service``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import field_validator
from pydantic_settings import NoDecode

from graphrag_got.config.base import Section, _env


class CodeSettings(Section):
    """Settings of the code graph (``settings.code``): extractor limits, its load and `ask impact`."""

    max_file_bytes: int = _env("GRAPHRAG_CODE_MAX_FILE_BYTES", 2_000_000, "code extractor: larger source files (generated "
                               "code, vendored bundles) are skipped with a record", ge=1, flat="code_max_file_bytes")
    max_file_seconds: float = _env("GRAPHRAG_CODE_MAX_FILE_SECONDS", 20.0, "code extractor: a file whose parse takes "
                                   "longer is skipped with a record", gt=0, flat="code_max_file_seconds")
    embeddings: bool = _env("GRAPHRAG_CODE_EMBEDDINGS", False, "load: embed a code graph's chunks and entities too (off: "
                            "it loads without the embedding model, `ask impact` needs no vectors; `load --embed` embeds "
                            "one load)", flat="code_embeddings")
    impact_max_nodes: int = _env("GRAPHRAG_IMPACT_MAX_NODES", 5000, "ask impact: most nodes the closure over callers "
                                 "collects; it stops there, keeps the nearest and says so", ge=1, flat="impact_max_nodes")


class ServiceSettings(Section):
    """Settings of `graphrag-got serve`: limits of the HTTP service (``settings.service``)."""

    max_question_chars: int = _env("GRAPHRAG_SERVICE_MAX_QUESTION_CHARS", 1000,
                                           "service: longest question accepted (longer ones get HTTP 413)", ge=1, flat="service_max_question_chars")
    timeout_s: float = _env("GRAPHRAG_SERVICE_TIMEOUT", 300.0,
                                    "service: seconds one request may take before it gets HTTP 504", gt=0, flat="service_timeout_s")
    max_llm_requests: int = _env("GRAPHRAG_SERVICE_MAX_LLM_REQUESTS", 2,
                                         "service: questions answered by the LLM at once; more get HTTP 503", ge=1, flat="service_max_llm_requests")
    allowed_hosts: Annotated[list[str], NoDecode] = _env(
        "GRAPHRAG_SERVICE_ALLOWED_HOSTS", [],
        "service: host names accepted in the Host header besides localhost, 127.0.0.1, ::1 and the `--host` "
        "value, comma-separated (others get HTTP 400: a guard against DNS rebinding)", flat="service_allowed_hosts")
    neo4j_timeout_s: float = _env("GRAPHRAG_SERVICE_NEO4J_TIMEOUT", 2.0,
                                  "service: seconds a request waits for Neo4j (a connection attempt and the driver's one "
                                  "retry) before answering HTTP 503",
                                  gt=0, flat="service_neo4j_timeout_s")

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        """Comma-separated text or a list -> lower-case host names without ports."""
        if value is None:
            return []
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, (list, tuple)):
            return value
        hosts = [part.strip().lower() for item in items for part in str(item).split(",") if part.strip()]
        bad = [h for h in hosts if "/" in h or " " in h]
        if bad:
            raise ValueError(f"{bad[0]!r} is not a host name (give names like example.lan, without scheme or path)")
        return list(dict.fromkeys(hosts))
