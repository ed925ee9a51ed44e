"""The garbage collector paused around bulk work (``graphrag_got.common.memory``)."""

from __future__ import annotations

import gc
import weakref

from graphrag_got.common.memory import gc_paused


class _Node:
    def __init__(self) -> None:
        self.other: "_Node | None" = None


def test_the_collector_is_off_inside_and_back_after_and_cycles_made_inside_are_still_freed() -> None:
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        a, b = _Node(), _Node()
        a.other, b.other = b, a  # a cycle: reference counting alone never frees it
        ref = weakref.ref(a)
        del a, b
        with gc_paused():  # nested: the outer block decides when the collector comes back
            pass
        assert not gc.isenabled()
        assert ref() is not None
    assert gc.isenabled() and gc.get_freeze_count() == 0  # nothing left frozen
    gc.collect()
    assert ref() is None


def test_a_collector_the_caller_turned_off_stays_off() -> None:
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_objects_frozen_by_the_caller_stay_frozen() -> None:
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with gc_paused():
            _ = [_Node() for _ in range(10)]
        assert gc.get_freeze_count() == frozen
    finally:
        gc.unfreeze()
