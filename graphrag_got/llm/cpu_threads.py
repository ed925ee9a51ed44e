"""How many CPU cores are free right now, and how many llama.cpp threads that allows.

llama.cpp splits every matrix product over its threads and waits for the slowest one: a thread that
shares its core with another busy process stalls all the others, so two threads on two cores with a
second CPU-bound process running are several times slower than one thread on the free core. The
one-minute load average is no guide for the next call: it still counts a job that ended seconds ago
and lags behind one that just started.

So each call of the embedded model starts with a fresh sample: the CPU time the cores this process
may run on (``sched_getaffinity``) spent busy over ``interval_s`` (150 ms by default), read from
``/proc/stat``, minus the CPU time this process itself spent meanwhile (its own threads are not
competition: llama.cpp's workers still spinning after the previous call, or the embedder, made a
live benchmark halve its own threads). The busy share of those cores is a number of busy cores; the
rest are free, and the model gets at most that many threads (at least one). Where ``/proc/stat`` cannot be read (not Linux)
the sample falls back to the one-minute load average and says so in its ``source``.

    sample = sample_cpu()                       # CpuSample(cores=2, busy=1.02, source=...)
    threads = choose_threads(sample, limit=2)   # 1
    busy_cores_warning(threads, sample, wanted=2)

Not seen: a CPU quota of a container (cgroup ``cpu.max``) that is smaller than its cpuset.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

#: How long a sample watches the cores. Long enough to see a busy process (a scheduler tick is
#: 4-10 ms), short next to an extraction call (tens of seconds).
SAMPLE_SECONDS = 0.15
#: A core counts as free when at most this share of it is busy (and one busy beyond it as taken):
#: the odd short-lived process or a mostly idle server must not halve the threads.
FREE_CORE_SLACK = 0.5

PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuSample:
    """What a sample saw: the cores this process may use and how many of them were busy."""

    cores: int
    busy: float  # cores kept busy by other processes (0.0 .. cores); this process's own use left out
    source: str  # how it was measured, for messages: "/proc/stat over 150 ms" or "load average (1 min)"

    @property
    def free(self) -> float:
        return max(0.0, self.cores - self.busy)

    def describe(self) -> str:
        return f"{self.busy:.1f} of {self.cores} cores busy, {self.source}"


#: A sampler returns a fresh sample, or None when the platform gives nothing to measure.
Sampler = Callable[[], "CpuSample | None"]


def usable_cpus() -> list[int]:
    """The CPU numbers this process may run on (every CPU where affinity is unknown)."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def _cpu_jiffies(text: str, cpus: set[int]) -> tuple[int, int]:
    """(busy, total) jiffies summed over the ``cpuN`` lines of /proc/stat whose N is in ``cpus``."""
    busy = total = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or int(name[3:]) not in cpus:
            continue
        fields = [int(v) for v in rest.split()]
        # user nice system idle iowait irq softirq steal [guest guest_nice: already in user and nice]
        ticks = sum(fields[:8])
        busy += ticks - fields[3] - fields[4]
        total += ticks
    return busy, total


def sample_proc_stat(interval_s: float = SAMPLE_SECONDS, *, stat: Path | None = None,
                     sleep: Callable[[float], None] = time.sleep,
                     own_cpu: Callable[[], float] = time.process_time) -> CpuSample | None:
    """Cores other processes kept busy over the next ``interval_s`` seconds, from /proc/stat; None
    where it cannot be read. ``own_cpu``: this process's CPU seconds (all threads), left out."""
    stat = stat or PROC_STAT
    cpus = set(usable_cpus())
    try:
        own0 = own_cpu()
        busy0, total0 = _cpu_jiffies(stat.read_text(), cpus)
        sleep(interval_s)
        busy1, total1 = _cpu_jiffies(stat.read_text(), cpus)
        own1 = own_cpu()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None  # no tick counted (a clock too coarse for the interval): nothing measured
    share = min(1.0, max(0.0, (busy1 - busy0) / (total1 - total0)))
    # total jiffies / cores = the interval as the kernel counted it; own CPU seconds over it = own cores
    own = (own1 - own0) / (interval_s or 1.0) if interval_s > 0 else 0.0
    busy = min(float(len(cpus)), max(0.0, share * len(cpus) - max(0.0, own)))
    return CpuSample(cores=len(cpus), busy=busy, source=f"/proc/stat over {interval_s * 1000:.0f} ms")


def sample_load_average() -> CpuSample | None:
    """The one-minute load average as a sample (the fallback: it lags by about a minute)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    cores = len(usable_cpus())
    return CpuSample(cores=cores, busy=min(float(cores), load), source="load average (1 min)")


#: Extra samples taken when the first one sees busy cores: a blip (the Neo4j server finishing the
#: queries that built the prompt, seen in a live benchmark) must not cost a whole call half its
#: threads, while a second CPU-bound process is still busy in every sample.
RESAMPLES = 2


def sample_cpu(interval_s: float = SAMPLE_SECONDS, resamples: int = RESAMPLES) -> CpuSample | None:
    """A fresh sample from /proc/stat (the least busy of up to ``1 + resamples`` while cores look
    taken), else the load average, else None."""
    best = sample_proc_stat(interval_s)
    if best is None:
        return sample_load_average()
    for _ in range(max(0, resamples)):
        if free_cores(best) >= best.cores:
            break
        again = sample_proc_stat(interval_s)
        if again is None:
            break
        if again.busy < best.busy:
            best = again
    return best


def free_cores(sample: CpuSample) -> int:
    """Whole free cores: a core counts when at most ``FREE_CORE_SLACK`` of it is busy."""
    return max(0, min(sample.cores, math.floor(sample.free + FREE_CORE_SLACK)))


def choose_threads(sample: CpuSample | None, limit: int) -> int:
    """Threads for the next call: at most ``limit``, at most the free cores, at least 1.

    ``limit`` is GRAPHRAG_LLAMACPP_THREADS, or every core. Without a sample: ``limit``.
    """
    limit = max(1, limit)
    if sample is None:
        return limit
    return max(1, min(limit, free_cores(sample)))


def busy_cores_warning(threads: int, sample: CpuSample | None, wanted: int | None = None) -> str | None:
    """A warning when other work takes cores the model would use, from the same sample the threads came from.

    ``wanted``: the threads the model would get on a quiet machine (default ``threads``). None when
    nothing is measured, or when the ``threads`` have their cores free and are as many as ``wanted``.
    """
    if sample is None:
        return None
    wanted = wanted or threads
    reduced, crowded = threads < wanted, threads > free_cores(sample)
    if not reduced and not crowded:
        return None
    effects = []
    if reduced:
        effects.append(f"the embedded model runs with {threads} thread(s) instead of {wanted}, so slower "
                       "(it takes the cores back at a later call once they are free)")
    if crowded and threads == 1:
        effects.append(f"{'even that' if reduced else 'its one'} thread shares its core with that work, slower "
                       "still; stop other heavy work")
    elif crowded:  # only with adaptation off: llama.cpp's threads wait for the one that shares a core
        effects.append(f"its {threads} threads share cores with that work and run several times slower; "
                       "lower GRAPHRAG_LLAMACPP_THREADS or stop other heavy work")
    return f"the cores are busy ({sample.describe()}): " + "; ".join(effects)
