"""One small JSON file per model call, found by its key: the store behind every per-call cache.

``<cache>/<kind>/<model slug>-<model digest>/<aa>/<digest>.json``, where the key is
``<prefix>:<sha256 hex>`` (the part after the colon names the file). Files are written atomically,
so an interrupted run leaves either the whole record or none, and a later run resumes where it
stopped. A record that cannot be read, or that its cache does not accept (:meth:`KeyedJsonCache.accepts`),
reads as missing: the call is made again rather than trusting a torn or foreign file.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, ClassVar

from graphrag_got.common.files import write_json_atomic


class KeyedJsonCache:
    """Records by key under ``<root>/<kind>/<model>/``; subclasses say what a valid record is."""

    kind: ClassVar[str] = "calls"

    def __init__(self, root: Path, model: str):
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model)[:60]
        self.dir = Path(root) / self.kind / f"{slug}-{hashlib.sha256(model.encode()).hexdigest()[:10]}"

    def path(self, key: str) -> Path:
        """The file of ``key`` (whether or not it exists)."""
        digest = key.split(":", 1)[-1]
        return self.dir / digest[:2] / f"{digest}.json"

    def accepts(self, key: str, data: Any) -> bool:
        """Whether ``data`` read from the file of ``key`` is a usable record."""
        return isinstance(data, dict)

    def stored(self, key: str, record: dict[str, Any]) -> dict[str, Any]:
        """What is written for ``record`` (subclasses may add the key)."""
        return record

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored record, or None (missing, torn or not accepted: asked again)."""
        try:
            data = json.loads(self.path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError, RecursionError):
            return None
        return data if self.accepts(key, data) else None

    def put(self, key: str, record: dict[str, Any]) -> None:
        write_json_atomic(self.path(key), self.stored(key, record))


__all__ = ["KeyedJsonCache"]
