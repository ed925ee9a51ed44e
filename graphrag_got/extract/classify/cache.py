"""The classify cache: one small JSON file per call (a chunk's mentions, a pair's choice), so no call
is paid twice and an interrupted run resumes where it stopped, even inside a chunk.

A call's key is a digest of the prompt version and the exact prompt (system part, chunk, question):
any change of wording, ontology or chunk makes a new key. The model is the cache folder, not part of
the key, so a replay of a recording finds its answers by key (the same key is the replay key).
"""

from __future__ import annotations

import hashlib
from typing import Any

from graphrag_got.common.keyed_cache import KeyedJsonCache
from graphrag_got.prompts import CLASSIFY_VERSION


def call_key(kind: str, system: str, user: str, version: str = CLASSIFY_VERSION) -> str:
    """``classify-<kind>:<sha256>`` of the prompt version (of the prompts in use) and the prompt."""
    digest = hashlib.sha256(f"{version}\n{kind}\n{system}\n\n{user}".encode("utf-8")).hexdigest()
    return f"classify-{kind}:{digest}"


class ClassifyCache(KeyedJsonCache):
    """``<cache>/classify/<model>/<aa>/<digest>.json``: ``{"key", "raw", tokens...}`` per call."""

    kind = "classify"

    def accepts(self, key: str, data: Any) -> bool:
        return isinstance(data, dict) and data.get("key") == key and isinstance(data.get("raw"), str)

    def stored(self, key: str, record: dict[str, Any]) -> dict[str, Any]:
        return {"key": key, **record}
