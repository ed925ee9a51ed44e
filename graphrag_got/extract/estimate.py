"""How long the model calls of an extraction run will take, said before a long run starts.

Each finished run records the median wall time of its chunk calls per model in
``<cache>/extract_timing.json``; the next run of the same model on more than
``settings.extract.announce_chunks`` new chunks logs how many and the time expected (chunks x
median seconds / calls in flight). A model never measured on this machine gets the typical figure
of its provider when we have measured one (the embedded llama.cpp model), else only the count.

    line = announcement(settings.extract, label, provider, chunks=3120, workers=1, files=settings.files)  # None: nothing to say
    remember_timing(settings.files, label, [12.1, 11.8, ...])
"""

from __future__ import annotations

import json
import logging
import statistics
from pathlib import Path

from graphrag_got.common.files import write_json_atomic
from graphrag_got.config import ExtractSettings, FilesSettings

logger = logging.getLogger(__name__)

TIMING_FILE = "extract_timing.json"
#: Seconds per chunk of a provider on a machine that never measured its model: the embedded
#: qwen2.5-coder-1.5b on 2 CPU cores took 135-185 s per chunk (benchmarks/results/extract_speed.txt).
TYPICAL_SECONDS = {"llamacpp": 150.0}


def _path(files: FilesSettings) -> Path:
    return files.cache_dir / TIMING_FILE


def _read(files: FilesSettings) -> dict[str, dict[str, float]]:
    try:
        data = json.loads(_path(files).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def measured_seconds(files: FilesSettings, label: str) -> tuple[float, int] | None:
    """(median seconds per chunk call, calls measured) of model ``label`` on this machine, if known."""
    entry = _read(files).get(label)
    try:
        return float(entry["seconds_per_chunk"]), int(entry["chunks"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None


def remember_timing(files: FilesSettings, label: str, seconds: list[float]) -> None:
    """Record the median of this run's chunk call times for ``label`` (nothing when none was timed)."""
    if not seconds:
        return
    data = _read(files)
    data[label] = {"seconds_per_chunk": round(statistics.median(seconds), 3), "chunks": len(seconds)}
    try:
        write_json_atomic(_path(files), data)
    except OSError as exc:  # a read-only cache folder costs the next estimate, not this run
        logger.debug("cannot record extraction timing: %s", exc)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def announcement(extract: ExtractSettings, label: str, provider: str, *, chunks: int, workers: int,
                 files: FilesSettings) -> str | None:
    """The line to say before asking the model about ``chunks`` chunks, or None when they are not
    more than ``extract.announce_chunks`` (``files``: where the last runs' timings are kept)."""
    limit = extract.announce_chunks
    if chunks <= limit and limit > 0:
        return None
    head = f"{chunks:,} chunks to ask the model {label} (one call each, {workers} at a time)"
    measured = measured_seconds(files, label)
    if measured is not None:
        per, n = measured
        source = f"measured: {per:.1f} s per chunk, the median of {n} call(s) of the last run"
    elif provider in TYPICAL_SECONDS:
        per = TYPICAL_SECONDS[provider]
        source = (f"no measured time for this model yet; {per:.0f} s per chunk is typical of the embedded model "
                  "on 2 CPU cores")
    else:
        return (f"{head}; no measured time for {label} yet (the next run will have one). Stop with Ctrl-C and "
                "narrow the corpus if that is more than you meant; answers so far stay cached")
    return (f"{head}: about {_duration(chunks * per / max(workers, 1))} ({source}). Stop with Ctrl-C and narrow "
            "the corpus if that is more than you meant; answers so far stay cached")
