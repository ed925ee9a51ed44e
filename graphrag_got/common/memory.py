"""Building many small objects fast: the cyclic garbage collector paused around bulk work."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["gc_paused"]


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while building hundreds of thousands of small objects
    (parsed records, rows read from Neo4j; none of them cyclic). Its collections are triggered by
    allocations and rescan every live object, so they grow with the heap: parsing a 6,000-note
    vault's validation memo took 2.2 s with the collector and 0.7 s without; the extract step of a
    daily update 21 s and 14 s (``benchmarks/vault_scale.py``). Reference counting still frees
    everything that is not a cycle; the collector runs again after the block. Nested use is fine."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            if gc.get_freeze_count() == 0:
                # Hand what the block built to the oldest generation without scanning it: re-enabled
                # as is, the collector's next young collection walks every object the block made
                # (1.2 s after an extract step). Unfrozen objects join the oldest generation, which
                # full collections still scan, so a cycle made in the block is still freed later.
                gc.freeze()
                gc.unfreeze()
            gc.enable()
