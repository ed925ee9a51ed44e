"""The classify strategy with the real embedded model (GRAPHRAG_TEST_MODEL): form and validator
behaviour only, never what the model wrote. Names are copied spans of the chunk (the grammar allows
nothing else), every fact carries a probability in [0, 1], and a rerun is served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import run_extraction
from support import TEST_MODEL, require_embedded_model
from test_classify import TEXT, _corpus, _onto

pytestmark = pytest.mark.llm


def test_real_model_copies_spans_and_scores_choices(tmp_path: Path) -> None:
    base = Settings.load()
    require_embedded_model(base, TEST_MODEL)
    settings = base.with_overrides(llm_provider="llamacpp", llamacpp_model=TEST_MODEL, models_path=base.models_dir.resolve(),
                                   home=tmp_path / "home", out_dir=tmp_path / "out", extraction="classify",
                                   llamacpp_n_ctx=2048, min_fact_probability=0.0)
    onto, corpus = _onto(), _corpus(tmp_path)
    first = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert first.chunks == 1 and first.failed_chunks == 0 and first.llm_calls >= 1
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in (settings.cache_dir / "extract").rglob("*.json")]
    (record,) = stored
    for item in record["parsed"]["entities"]:  # every name the model wrote is a span of the chunk
        assert item["name"] in TEXT and item["type"] in onto.classes
    for item in record["parsed"]["relations"]:
        assert 0.0 <= item["probability"] <= 1.0 and item["subject"] in TEXT and item["object"] in TEXT
    assert record["parsed"]["classify"]["pairs"] == first.llm_calls - 1
    ext = Extraction.read(first.out_path)
    assert not any(r.reason.value == "not_in_text" for r in ext.rejections)
    for rel in ext.relations:
        assert all(0.0 <= s.probability <= 1.0 for s in rel.scores.values()) and rel.scores
    again = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.llm_calls == 0 and again.cache_hits == 1
