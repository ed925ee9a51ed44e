"""The real embedded llama.cpp model, end to end through the code path users run.

Asserts on form and on what the validator does, never on what the model wrote. Runs the small
model (GRAPHRAG_TEST_MODEL, default qwen2.5-coder-0.5b) with tight array bounds to stay quick.
Skipped when the model or llama-cpp-python is missing, unless GRAPHRAG_REQUIRE_LLM=1 (as in CI),
where a missing model is a failure.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from graphrag_got.config import Settings
from graphrag_got.extract.run import run_extraction
from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import extraction_schema
from graphrag_got.extract.validate import Validator
from support import TEST_MODEL, require_embedded_model

ROOT = Path(__file__).resolve().parents[1]
MODEL = TEST_MODEL

pytestmark = pytest.mark.llm


@pytest.fixture(scope="module")
def llm_settings(tmp_path_factory) -> Settings:
    base = Settings.load()
    require_embedded_model(base, MODEL)
    tmp = tmp_path_factory.mktemp("llm")
    # the in-process path (the fallback when llama-server is not built); tests/test_llm_server.py runs the server
    return base.with_overrides(llm_provider="llamacpp", llamacpp_backend="in_process", llamacpp_model=MODEL,
                               out_dir=tmp / "out",
                               models_path=base.models_dir.resolve(),
                               home=tmp / "home", max_entities=5, max_relations=4, llm_max_tokens=600,
                               llamacpp_n_ctx=3072)


def test_real_model_extraction_validates_and_audit_is_consistent(llm_settings, tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paragraph = (ROOT / "corpus" / "got.txt").read_text(encoding="utf-8").split("\n\n")[0]
    (corpus / "one.txt").write_text(paragraph + "\n", encoding="utf-8")
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")

    summary = run_extraction(llm_settings.extract, onto, corpus, files=llm_settings.files, chunking=llm_settings.chunking, llm=llm_settings.llm)
    assert summary.chunks == 1 and summary.cache_hits == 0 and summary.llm_calls in (1, 2)
    data = json.loads(summary.out_path.read_text(encoding="utf-8"))

    # form: the answer was usable, or the failure is recorded with the raw text
    assert data["counts"]["chunks_extracted"] + data["counts"]["chunks_failed"] == 1
    if data["failed_chunks"]:
        assert data["failed_chunks"][0]["raw_responses"]
    else:
        # every kept relation passes the validator again, and its ends are kept entities
        validator = Validator(onto)
        uids = {e["uid"] for e in data["entities"]}
        for e in data["entities"]:
            assert e["type"] in onto.classes and e["name"].strip()
        for r in data["relations"]:
            rel = onto.relation(r["relation"])
            assert rel is not None and rel.accepts(r["subject_type"], r["object_type"])
            assert f"{r['subject_type']}|{r['subject_key']}" in uids and f"{r['object_type']}|{r['object_key']}" in uids
            again = validator.validate({"entities": [{"type": r["subject_type"], "name": r["subject"]},
                                                     {"type": r["object_type"], "name": r["object"]}],
                                        "relations": [{k: r[k] for k in ("relation", "subject", "subject_type",
                                                                          "object", "object_type", "momento")}]})
            assert not again.rejections
        # the stored raw answer was produced under the schema: it parses and obeys the bounds
        cache_files = list((llm_settings.cache_dir / "extract").rglob("*.json"))
        (record,) = [json.loads(p.read_text(encoding="utf-8")) for p in cache_files]
        if not record.get("repaired"):
            jsonschema.validate(record["parsed"], extraction_schema(onto, 5, 4))
    # the audit is consistent with the counts
    c = data["counts"]
    assert c["relations"] == len(data["relations"])
    refused = [r for r in data["rejections"] if r["kind"] == "relation"]
    assert c["rejected_relations"] == len(refused)
    assert sum(c["by_reason"].values()) == len(data["rejections"])
    for rej in refused:
        assert rej["chunk_id"] == data["chunks"][0]["id"] and rej["message"]

    # a rerun pays no LLM call
    again = run_extraction(llm_settings.extract, onto, corpus, files=llm_settings.files, chunking=llm_settings.chunking, llm=llm_settings.llm)
    assert again.llm_calls == 0 and again.cache_hits == 1
