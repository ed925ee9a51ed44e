"""Threads and the busy-cores warning of the embedded provider (no model needed)."""

from __future__ import annotations

import os

import pytest

from graphrag_got.config import Settings
from graphrag_got.llm.factory import busy_cores_warning, llamacpp_threads


def test_busy_cores_are_reported_with_the_load_and_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 1.0, 1.0))
    warning = busy_cores_warning(2)
    assert warning is not None and "load average 3.5 on 2 cores" in warning and "2 threads" in warning
    assert "GRAPHRAG_LLAMACPP_THREADS" in warning
    monkeypatch.setattr(os, "getloadavg", lambda: (0.4, 1.0, 1.0))
    assert busy_cores_warning(2) is None


def test_one_busy_core_leaves_room_for_a_one_thread_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    assert busy_cores_warning(1) is None  # one core is free for the one thread
    assert busy_cores_warning(2) is not None  # two threads would fight the other process
    monkeypatch.setattr(os, "getloadavg", lambda: (1.8, 1.0, 1.0))
    assert busy_cores_warning(1) is not None


def test_a_platform_without_load_average_gives_no_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    def unsupported() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unsupported)
    assert busy_cores_warning() is None


def test_threads_default_to_one_per_core_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 6)
    assert llamacpp_threads(Settings()) == 6
    assert llamacpp_threads(Settings().with_overrides(llamacpp_threads=3)) == 3
