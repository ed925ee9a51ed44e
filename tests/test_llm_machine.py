"""Threads and the busy-cores warning of the embedded provider (no model needed): both come from one
fresh sample of the cores (a fake sampler or a fake /proc/stat here), never from the load average
when /proc/stat can be read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphrag_got.config import Settings
from graphrag_got.llm import cpu_threads
from graphrag_got.llm.cpu_threads import CpuSample, busy_cores_warning, choose_threads, free_cores, sample_proc_stat
from graphrag_got.llm.factory import llamacpp_thread_limit, llamacpp_threads


def _sample(busy: float, cores_: int = 2) -> CpuSample:
    return CpuSample(cores=cores_, busy=busy, source="fake sampler")


# --- the choice ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("busy", "threads"), [
    (0.0, 2), (0.3, 2),  # quiet, or a mostly idle server: every core
    (0.6, 1), (1.0, 1), (1.2, 1),  # one CPU-bound process (or more than half a core): the free core only
    (2.0, 1),  # every core busy: still one thread, never none
])
def test_two_cores_threads_follow_the_free_cores(busy: float, threads: int) -> None:
    assert choose_threads(_sample(busy), limit=2) == threads


def test_the_configured_threads_are_a_ceiling_and_no_sample_means_the_ceiling() -> None:
    assert choose_threads(_sample(0.0, cores_=8), limit=3) == 3
    assert choose_threads(_sample(6.0, cores_=8), limit=3) == 2
    assert choose_threads(None, limit=3) == 3  # nothing measured: the setting as it is
    assert choose_threads(_sample(0.0), limit=0) == 1


@given(cores_=st.integers(1, 64), busy_share=st.floats(0, 1), limit=st.integers(1, 128))
def test_never_more_threads_than_free_cores_nor_the_limit_and_at_least_one(cores_: int, busy_share: float,
                                                                           limit: int) -> None:
    sample = _sample(busy_share * cores_, cores_)
    threads = choose_threads(sample, limit)
    assert 1 <= threads <= limit
    assert threads <= max(1, free_cores(sample))
    assert threads <= max(1, round(sample.free + 0.5))  # within half a core of the free capacity
    if sample.busy < 0.5:
        assert threads == min(limit, cores_)  # a quiet machine loses nothing


def test_settings_give_the_ceiling_and_can_turn_adaptation_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: list(range(6)))
    assert llamacpp_thread_limit(Settings().llm) == 6
    assert llamacpp_thread_limit(Settings().with_overrides(llamacpp_threads=3).llm) == 3
    busy = _sample(4.0, cores_=6)
    assert llamacpp_threads(Settings().llm, busy) == 2
    assert llamacpp_threads(Settings().with_overrides(llamacpp_adaptive_threads=False).llm, busy) == 6
    assert llamacpp_threads(Settings().llm, None) == 6


# --- the warning, from the same sample -------------------------------------------------------------


def test_the_warning_reads_the_same_sample_and_says_what_it_costs() -> None:
    sample = _sample(1.0)
    threads = choose_threads(sample, 2)
    warning = busy_cores_warning(threads, sample, wanted=2)
    assert warning is not None
    assert "1.0 of 2 cores busy, fake sampler" in warning and "1 thread(s) instead of 2" in warning
    assert "share" not in warning  # the one thread has the free core to itself
    quiet = _sample(0.1)
    assert busy_cores_warning(choose_threads(quiet, 2), quiet, wanted=2) is None
    assert busy_cores_warning(2, None, wanted=2) is None  # nothing measured, nothing claimed


def test_fixed_threads_on_busy_cores_are_told_to_lower_the_setting() -> None:
    warning = busy_cores_warning(2, _sample(1.0), wanted=2)  # adaptation off: 2 threads, 1 free core
    assert warning is not None and "GRAPHRAG_LLAMACPP_THREADS" in warning and "share cores" in warning
    assert busy_cores_warning(1, _sample(1.0), wanted=1) is None  # one thread on the free core is fine


def test_every_core_busy_says_even_the_one_thread_shares_a_core() -> None:
    warning = busy_cores_warning(1, _sample(2.0), wanted=2)
    assert warning is not None and "1 thread(s) instead of 2" in warning and "even that thread shares its core" in warning
    assert "GRAPHRAG_LLAMACPP_THREADS" not in warning  # one thread is the floor: nothing to lower


# --- sampling /proc/stat ---------------------------------------------------------------------------

# user nice system idle iowait irq softirq steal guest guest_nice, in jiffies
STAT_BEFORE = """cpu  300 0 100 900 0 0 0 0 0 0
cpu0 100 0 50 450 0 0 0 0 0 0
cpu1 100 0 50 450 0 0 0 0 0 0
cpu2 100 0 0 0 0 0 0 0 0 0
intr 1 2 3
"""
# +15 jiffies each: cpu0 busy the whole time, cpu1 idle, cpu2 busy but not ours
STAT_AFTER = """cpu  330 0 100 915 0 0 0 0 0 0
cpu0 112 0 53 450 0 0 0 0 0 0
cpu1 100 0 50 465 0 0 0 0 0 0
cpu2 115 0 0 0 0 0 0 0 0 0
intr 1 2 3
"""


def _fake_proc(tmp_path: Path, after: str) -> tuple[Path, list[float], object]:
    """A /proc/stat file showing ``STAT_BEFORE``, and a sleep after which it shows ``after``."""
    stat = tmp_path / "stat"
    stat.write_text(STAT_BEFORE)
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # time passes: the kernel's counters move on
        slept.append(seconds)
        stat.write_text(after)

    return stat, slept, sleep


def test_proc_stat_counts_the_busy_share_of_the_cores_this_process_may_use(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: [0, 1])  # cpu2 is outside our affinity
    stat, slept, sleep = _fake_proc(tmp_path, STAT_AFTER)
    sample = sample_proc_stat(0.15, stat=stat, sleep=sleep, own_cpu=lambda: 0.0)  # type: ignore[arg-type]
    assert sample is not None and slept == [0.15]
    assert sample.cores == 2 and sample.busy == pytest.approx(1.0)
    assert sample.source == "/proc/stat over 150 ms"
    assert choose_threads(sample, 2) == 1


def test_a_stale_load_average_no_longer_warns_when_the_cores_are_idle(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The bug of issue 26: the warning fired from the one-minute average right after a job ended."""
    monkeypatch.setattr(os, "getloadavg", lambda: (3.5, 2.0, 1.0))  # the job that just ended
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: [0, 1])
    idle_after = STAT_BEFORE.replace("cpu0 100 0 50 450", "cpu0 100 0 50 465").replace(
        "cpu1 100 0 50 450", "cpu1 100 0 50 465")
    stat, _, sleep = _fake_proc(tmp_path, idle_after)
    sample = sample_proc_stat(0.15, stat=stat, sleep=sleep, own_cpu=lambda: 0.0)  # type: ignore[arg-type]
    assert sample is not None and sample.busy == 0.0
    assert choose_threads(sample, 2) == 2
    assert busy_cores_warning(2, sample, wanted=2) is None


def test_without_proc_stat_the_load_average_is_the_fallback_and_says_so(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    assert sample_proc_stat(0.0, stat=tmp_path / "missing") is None
    monkeypatch.setattr(cpu_threads, "PROC_STAT", tmp_path / "missing")
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: [0, 1])
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    sample = cpu_threads.sample_cpu(0.0)
    assert sample == CpuSample(cores=2, busy=1.0, source="load average (1 min)")

    def unsupported() -> tuple[float, float, float]:
        raise OSError("no load average here")

    monkeypatch.setattr(os, "getloadavg", unsupported)
    assert cpu_threads.sample_cpu(0.0) is None


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="needs Linux /proc/stat")
def test_a_real_sample_of_this_machine_is_within_its_cores() -> None:
    sample = cpu_threads.sample_cpu()
    assert sample is not None and sample.source.startswith("/proc/stat")
    assert sample.cores == len(os.sched_getaffinity(0))
    assert 0.0 <= sample.busy <= sample.cores


def test_the_process_own_threads_are_not_counted_as_busy_cores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Seen in a live benchmark: the model halved its threads because its own process was busy."""
    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: [0, 1])
    stat, _, sleep = _fake_proc(tmp_path, STAT_AFTER)  # one of the two cores busy over the interval
    clock = iter([10.0, 10.15])  # ... and this process spent 0.15 CPU seconds of it: that core was ours
    sample = sample_proc_stat(0.15, stat=stat, sleep=sleep, own_cpu=lambda: next(clock))  # type: ignore[arg-type]
    assert sample is not None and sample.busy == pytest.approx(0.0)
    assert choose_threads(sample, 2) == 2
    other = iter([10.0, 10.0])  # this process idle: the busy core is someone else's
    stat, _, sleep = _fake_proc(tmp_path, STAT_AFTER)
    sample = sample_proc_stat(0.15, stat=stat, sleep=sleep, own_cpu=lambda: next(other))  # type: ignore[arg-type]
    assert sample is not None and sample.busy == pytest.approx(1.0) and choose_threads(sample, 2) == 1


def test_a_busy_blip_is_sampled_again_but_steady_load_stays_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server finishing its queries for 150 ms must not halve the threads of a minutes-long call."""
    seen = iter([CpuSample(2, 1.0, "s"), CpuSample(2, 0.1, "s"), CpuSample(2, 1.0, "s")])
    monkeypatch.setattr(cpu_threads, "sample_proc_stat", lambda interval_s: next(seen))
    assert cpu_threads.sample_cpu() == CpuSample(2, 0.1, "s")  # the blip is gone at the second look
    steady = iter([CpuSample(2, 1.0, "s"), CpuSample(2, 0.9, "s"), CpuSample(2, 1.1, "s"), CpuSample(2, 0.0, "s")])
    monkeypatch.setattr(cpu_threads, "sample_proc_stat", lambda interval_s: next(steady))
    sample = cpu_threads.sample_cpu()
    assert sample == CpuSample(2, 0.9, "s") and choose_threads(sample, 2) == 1  # three looks, still busy
    quiet = iter([CpuSample(2, 0.0, "s")])
    monkeypatch.setattr(cpu_threads, "sample_proc_stat", lambda interval_s: next(quiet))
    assert cpu_threads.sample_cpu() == CpuSample(2, 0.0, "s")  # free at once: one look only


# --- the embedded llama-server: threads chosen from the free cores when it starts --------------------


def test_the_server_starts_with_the_free_cores_unless_adaptation_is_off(monkeypatch: pytest.MonkeyPatch) -> None:
    from graphrag_got.llm import server as srv

    monkeypatch.setattr(cpu_threads, "usable_cpus", lambda: [0, 1])
    llm = Settings(llamacpp_threads=None).llm
    assert srv.server_threads(llm, _sample(0.0)) == 2
    assert srv.server_threads(llm, _sample(1.0)) == 1  # one CPU-bound process: the free core only
    assert srv.server_threads(Settings(llamacpp_threads=1).llm, _sample(0.0)) == 1  # the setting is a ceiling
    fixed = Settings(llamacpp_threads=None, llamacpp_adaptive_threads=False).llm
    assert srv.server_threads(fixed, _sample(1.0)) == 2


def test_a_running_server_is_reused_whatever_threads_a_later_sample_would_pick(tmp_path: Path) -> None:
    from dataclasses import replace

    from graphrag_got.llm import server as srv

    running = srv.ServerPlan(binary="/bin/llama-server", model=str(tmp_path / "m.gguf"), port=8089, slots=4,
                             ctx_per_slot=4096, threads=2)
    adaptive = Settings().llm
    assert srv._same_plan(running, replace(running, threads=1), adaptive)  # its own work made the cores busy
    assert not srv._same_plan(running, replace(running, slots=2), adaptive)  # another plan: not reused
    fixed = Settings(llamacpp_adaptive_threads=False).llm
    assert not srv._same_plan(running, replace(running, threads=1), fixed)  # threads asked for: compared
