"""The classify cache: one small JSON file per call (a chunk's mentions, a pair's choice), so no call
is paid twice and an interrupted run resumes where it stopped, even inside a chunk.

A call's key is a digest of the prompt version and the exact prompt (system part, chunk, question):
any change of wording, ontology or chunk makes a new key. The model is the cache folder, not part of
the key, so a replay of a recording finds its answers by key (the same key is the replay key).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from graphrag_got.common.files import write_json_atomic
from graphrag_got.prompts import CLASSIFY_VERSION


def call_key(kind: str, system: str, user: str) -> str:
    """``classify-<kind>:<sha256>`` of the prompt version and the prompt."""
    digest = hashlib.sha256(f"{CLASSIFY_VERSION}\n{kind}\n{system}\n\n{user}".encode("utf-8")).hexdigest()
    return f"classify-{kind}:{digest}"


class ClassifyCache:
    """``<cache>/classify/<model>/<aa>/<digest>.json``: ``{"key", "raw", tokens...}`` per call."""

    def __init__(self, root: Path, model: str):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model)[:60]
        self.dir = root / "classify" / f"{slug}-{hashlib.sha256(model.encode()).hexdigest()[:10]}"

    def _path(self, key: str) -> Path:
        digest = key.split(":", 1)[-1]
        return self.dir / digest[:2] / f"{digest}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored call, or None (missing, torn or not ours: asked again)."""
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        ok = isinstance(data, dict) and data.get("key") == key and isinstance(data.get("raw"), str)
        return data if ok else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        write_json_atomic(self._path(key), {"key": key, **record})
