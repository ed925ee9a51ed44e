"""Request and response bodies of the service (HTTP API and MCP tools share them)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from graphrag_got.common.sanitize import replace_surrogates

AskMode = Literal["auto", "local", "global", "drift"]
Retrieval = Literal["graph", "vector", "hybrid"]


class AskRequest(BaseModel):
    """``POST /ask``. The question's length is checked against the setting, not here, so the limit
    can change without a new model and the error can say which setting to raise."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(description="the question, in any language")
    mode: AskMode = Field("auto", description="auto routes by the question; or force local, global, drift")
    retrieval: Retrieval | None = Field(None, description="local retrieval (default: GRAPHRAG_LOCAL_RETRIEVAL)")
    answer: bool = Field(True, description="false: retrieval only, no LLM call")

    @field_validator("question")
    @classmethod
    def _valid_unicode(cls, value: str) -> str:
        """A lone UTF-16 surrogate (a valid JSON escape such as ``\\ud800``, but no character) becomes
        U+FFFD: what the search matches, sends to Neo4j and echoes is always encodable."""
        return replace_surrogates(value)


class DiffRequest(BaseModel):
    """``POST /impact/diff``: a change of the repository the service was started for (``serve --code-root``)."""

    model_config = ConfigDict(extra="forbid")

    diff: str | None = Field(None, max_length=200, description="REV, A..B or A...B; none: the working tree vs HEAD")
    staged: bool = Field(False, description="the index vs HEAD (a pre-commit hook)")
    hops: int | None = Field(None, ge=1, description="depth of the static closure (default: the code settings')")


class ErrorBody(BaseModel):
    """Every error the service returns: a code a program can test and a message a person can act on."""

    code: str
    message: str
    detail: dict[str, Any] = Field(default_factory=dict)


class ErrorResponse(BaseModel):
    error: ErrorBody


class EntityOut(BaseModel):
    uid: str
    name: str
    type: str
    aliases: list[str] = Field(default_factory=list)
    properties: dict[str, Any] = Field(default_factory=dict)  # the ontology's properties of its class


class EvidenceOut(BaseModel):
    text: str
    chunk_id: str | None = None
    document_id: str | None = None


class RelationOut(BaseModel):
    start: str
    start_name: str
    start_type: str
    type: str
    end: str
    end_name: str
    end_type: str
    attributes: dict[str, Any] = Field(default_factory=dict)  # the ontology's relation attributes
    symmetric: bool = False
    support: int = 0  # chunks stating the fact
    evidence: list[EvidenceOut] = Field(default_factory=list)


class Neighbourhood(BaseModel):
    """``GET /entities/{name}``: the entities a name (or alias) denotes and their relations."""

    query: str
    entities: list[EntityOut]
    relations: list[RelationOut]
    limit: int
    truncated: bool = False  # more relations exist than ``limit``


class CommunityOut(BaseModel):
    id: int | str
    level: int | None = None
    size: int | None = None
    title: str | None = None
    summary: str | None = None
    members: list[str] = Field(default_factory=list)


class CommunityPage(BaseModel):
    """``GET /communities``: one page of communities (by level, then id)."""

    total: int
    levels: list[int]
    offset: int
    limit: int
    items: list[CommunityOut]


class Health(BaseModel):
    status: Literal["ok", "degraded"]
    neo4j: bool
    neo4j_error: str | None = None
    entities: int | None = None
    communities: int | None = None
    llm_provider: str
    model: str | None = None
    model_error: str | None = None
    llm_slots: int
    llm_busy: int
