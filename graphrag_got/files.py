"""Writing files so that a crash or a full disk never leaves a half-written one behind."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_text_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to a temp file beside ``path``, then rename it over ``path`` (atomic on POSIX)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def write_json_atomic(path: str | Path, data: Any, indent: int | None = 1) -> Path:
    return write_text_atomic(path, json.dumps(data, ensure_ascii=False, indent=indent) + "\n")
