"""The mentions strategy with the real embedded model (GRAPHRAG_TEST_MODEL): form and validator behaviour
only, never what the model wrote. Three short notes share calls; every name is a span of its own chunk
(the per-text grammar allows nothing else), each name once per chunk, every class the ontology's, no
relation asked; a rerun is served from the cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import run_extraction
from support import TEST_MODEL, require_embedded_model
from test_mentions import _onto, _vault

pytestmark = pytest.mark.llm


def test_real_model_copies_spans_of_each_text_in_a_shared_call(tmp_path: Path) -> None:
    base = Settings.load()
    require_embedded_model(base, TEST_MODEL)
    settings = base.with_overrides(llm_provider="llamacpp", llamacpp_model=TEST_MODEL,
                                   models_path=base.models_dir.resolve(), home=tmp_path / "home",
                                   out_dir=tmp_path / "out", extraction="mentions", mentions_batch_chars=1500,
                                   llamacpp_n_ctx=2048)
    onto, vault = _onto(), _vault(tmp_path / "vault")
    first = run_extraction(settings.extract, onto, vault, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert first.failed_chunks == 0 and 0 < first.llm_calls < first.chunks
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in (settings.cache_dir / "extract").rglob("*.json")]
    ext = Extraction.read(first.out_path)
    texts = {c.hash: c.text for c in ext.chunks}
    assert max(r["parsed"]["mentions"]["texts_in_call"] for r in stored) > 1
    for record in stored:
        names = [item["name"] for item in record["parsed"]["entities"]]
        assert len(names) == len(set(names))
        for item in record["parsed"]["entities"]:  # a span of this chunk, not of another text of the call
            assert item["name"] in texts[record["chunk_hash"]] and item["type"] in onto.classes
        assert record["parsed"]["relations"] == []
    assert ext.relations == [] and not any(r.reason.value == "not_in_text" for r in ext.rejections)
    again = run_extraction(settings.extract, onto, vault, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.llm_calls == 0 and again.cache_hits == again.chunks
