"""benchmarks/vault_live.py's ETA log reads the extraction's own progress events (no model, no database)."""

from __future__ import annotations

import pytest

from benchmarks import vault_live
from graphrag_got.common.progress import ProgressEvent


def test_the_eta_log_compares_the_shown_eta_with_the_end(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter(float(t) for t in range(0, 100, 10))
    monkeypatch.setattr(vault_live.time, "monotonic", lambda: next(clock))
    log = vault_live.EtaLog()
    log(ProgressEvent("extract", done=0, total=10, own_eta=True, eta_s=None))  # nothing known yet
    for done in range(1, 10):  # one chunk every 10 s; the ETA shown says 10 s per chunk left
        log(ProgressEvent("extract", done=done, total=10, own_eta=True, eta_s=10.0 * (10 - done)))
    log(ProgressEvent("load", done=1, total=1))  # another step: not the extraction's ETA
    lines = log.check()
    assert lines[0].startswith("at 1/10 chunks: ETA 90s, the extraction ended 80s later")
    assert len(lines) == 4 and all("%" in line for line in lines)
    assert vault_live.EtaLog().check() == ["no ETA shown (nothing asked, or too little to estimate)"]
