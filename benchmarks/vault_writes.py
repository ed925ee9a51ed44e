"""Neo4j's write counters summed over every query a block of code runs (benchmarks only).

The driver has no public hook that sees every query's summary (most results are never consumed
by hand), so :class:`WriteCounter` wraps the private ``Result._handle_warnings``, which the driver
calls once per finished query with the server's metadata; its ``stats`` map holds the counters
(``nodes-created``, ``properties-set``, ...). A driver release that renames it makes
:meth:`WriteCounter.counting` raise, not count zero.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from neo4j._sync.work import result as _result

SHOWN = ("nodes-created", "nodes-deleted", "relationships-created", "relationships-deleted", "properties-set",
         "labels-added", "labels-removed")  # fmt: skip


class WriteCounter:
    def __init__(self) -> None:
        self.stats: Counter[str] = Counter()
        self.queries = 0

    def reset(self) -> None:
        self.stats.clear()
        self.queries = 0

    @contextmanager
    def counting(self) -> Iterator["WriteCounter"]:
        original = getattr(_result.Result, "_handle_warnings", None)
        if original is None:
            raise RuntimeError("this neo4j driver has no Result._handle_warnings: update benchmarks/vault_writes.py")
        counter = self

        def handle(res: Any, *args: Any, **kwargs: Any) -> Any:
            counter.queries += 1
            for key, value in (res._metadata.get("stats") or {}).items():
                if isinstance(value, int) and not isinstance(value, bool):
                    counter.stats[key] += value
            return original(res, *args, **kwargs)

        _result.Result._handle_warnings = handle
        try:
            yield self
        finally:
            _result.Result._handle_warnings = original

    def describe(self) -> str:
        parts = [f"{key.replace('-', ' ')} {self.stats[key]:,}" for key in SHOWN if self.stats.get(key)]
        return f"{self.queries:,} queries; " + (", ".join(parts) or "nothing written")
