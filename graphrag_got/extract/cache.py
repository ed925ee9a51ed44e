"""The extraction cache: one typed record per (chunk, ontology) answer, so no LLM call is paid twice.

Records live under a folder per (model, prompt version, schema bounds, answer form); a record is a
:class:`CacheRecord` written as JSON by :meth:`ExtractionCache.put`. An entry that is torn, missing or
not a record this module wrote reads as a miss (the chunk is asked again), never as an error.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from graphrag_got.common.files import write_json_atomic
from graphrag_got.extract.extraction import FailureReason
from graphrag_got.prompts import EXTRACTION_VERSION


_CONTEXT_TEXT = re.compile(r"does not fit in the model's context window|context length|context window", re.IGNORECASE)


class CacheRecord(BaseModel):
    """One chunk's answer as stored: ``ok`` with the parsed JSON and the raw text it came from, or
    ``failed`` with the error (and whatever raw text the model wrote)."""

    model_config = ConfigDict(extra="allow")  # keys of newer versions survive a read and write

    status: Literal["ok", "failed"]
    chunk_id: str = ""
    chunk_hash: str = ""
    ontology_hash: str = ""
    prompt_version: str = ""
    created: str = ""
    model: str | None = None
    parsed: JsonValue = None  # the answer's JSON value (either answer form); None when failed
    raw_responses: list[Any] = []
    error: str | None = None
    repaired: bool = False  # the JSON text needed json_repair
    retried: bool = False
    errors: list[Any] = []
    calls: int = 1
    input_tokens: int | None = None
    output_tokens: int | None = None
    tokens_estimated: bool = False
    seconds: float | None = None  # wall time of the call (benchmarks record it)
    reason: str | None = None  # failed: a FailureReason value (older records: read from the error text)
    setup: str | None = None  # failed: the settings the failure depended on (see extract.run.setup_key)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def failure_reason(self) -> FailureReason | None:
        """Why a failed record failed; records written before reasons were stored are classified
        by their error text (the context-window message says so)."""
        if self.ok:
            return None
        try:
            return FailureReason(self.reason)
        except ValueError:
            pass
        if _CONTEXT_TEXT.search(self.error or ""):
            return FailureReason.CONTEXT_OVERFLOW
        return FailureReason.UNUSABLE_ANSWER

    def raw_texts(self) -> list[str]:
        return [str(r) for r in self.raw_responses]

    def to_json(self) -> dict[str, Any]:
        """The JSON written to the cache: the fields that were set (as earlier versions wrote them)."""
        return self.model_dump(mode="json", exclude_unset=True)


def read_record(data: Any) -> CacheRecord | None:
    """A cache record from parsed JSON, or None when it is not one :func:`extract_chunk` wrote: an
    ok record holds the parsed answer and its raw text, a failed one its error (hand-made or
    truncated entries are misses)."""
    if not isinstance(data, dict):
        return None
    if data.get("status") == "ok":
        if "parsed" not in data or not isinstance(data.get("raw_responses"), list):
            return None
    elif data.get("status") != "failed" or not isinstance(data.get("error"), str):
        return None
    try:
        return CacheRecord.model_validate(data)
    except ValidationError:
        return None


def _read_file(path: Path) -> CacheRecord | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None  # a torn, missing or unreadable entry is a cache miss, never an error
    return read_record(data)


class ExtractionCache:
    """One JSON file per (chunk, ontology) under a folder per (model, prompt, schema bounds)."""

    def __init__(self, root: Path, model: str, max_entities: int, max_relations: int, form: str = "full",
                 prompt_version: str = EXTRACTION_VERSION):
        # the full form keeps the tag it always had, so existing caches stay valid; ``prompt_version`` is the
        # version of the prompts in use (prompts.PromptSet.version: the built-in one, or with a custom text's digest)
        tag = f"{model}|{prompt_version}|{max_entities}|{max_relations}" + ("" if form == "full" else f"|{form}")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model)[:60]
        self.dir = root / "extract" / f"{slug}-{hashlib.sha256(tag.encode()).hexdigest()[:10]}"

    def path(self, chunk_hash: str, onto_hash: str) -> Path:
        return self.dir / chunk_hash[:2] / chunk_hash / f"{onto_hash[:16]}.json"

    def get(self, chunk_hash: str, onto_hash: str) -> CacheRecord | None:
        return _read_file(self.path(chunk_hash, onto_hash))

    def latest(self, chunk_hash: str) -> CacheRecord | None:
        """The newest stored answer for a chunk under any ontology (for revalidation)."""
        folder = self.dir / chunk_hash[:2] / chunk_hash
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
        for f in files:
            rec = _read_file(f)
            if rec is not None:
                return rec
        return None

    def put(self, chunk_hash: str, onto_hash: str, record: CacheRecord | Mapping[str, Any]) -> None:
        if not isinstance(record, CacheRecord):
            record = CacheRecord.model_validate(dict(record))
        write_json_atomic(self.path(chunk_hash, onto_hash), record.to_json())
