"""Real model output, replayed: the 1.5B model's recorded answers on our corpus go through the
same extraction path (replay provider), so validation of genuine model mistakes is tested
without the model. Re-record with:

    graphrag-got --provider llamacpp extract corpus/ --export-replay tests/data/got_replay_qwen2.5-coder-1.5b.json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.extract import run_extraction
from graphrag_got.ontology import Ontology
from graphrag_got.validate import Validator

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("recorded")
    settings = Settings(home=tmp / "home", out_dir=tmp / "out", llm_provider="replay", replay_file=REPLAY)
    summary = run_extraction(settings, Ontology.from_file(ROOT / "ontology" / "got.json"), ROOT / "corpus")
    recorded = json.loads(REPLAY.read_text(encoding="utf-8"))
    assert summary.llm_calls == sum(len(r["responses"]) for r in recorded["responses"])
    return json.loads(summary.out_path.read_text(encoding="utf-8"))


def test_every_chunk_of_the_corpus_has_a_recorded_answer(replayed):
    assert replayed["counts"]["chunks"] == 16
    assert replayed["counts"]["chunks_extracted"] + replayed["counts"]["chunks_failed"] == 16


def test_kept_relations_obey_the_ontology_and_link_kept_entities(replayed):
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    uids = {e["uid"] for e in replayed["entities"]}
    assert replayed["relations"], "the recorded model kept no relation at all"
    for r in replayed["relations"]:
        assert onto.relation(r["relation"]).accepts(r["subject_type"], r["object_type"])
        assert f"{r['subject_type']}|{r['subject_key']}" in uids
        assert f"{r['object_type']}|{r['object_key']}" in uids


def test_refusals_are_real_and_reproducible(replayed):
    """Each refused triple is refused again when validated alone against its chunk's answer."""
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    validator = Validator(onto)
    recorded = {r["chunk_id"]: r["responses"] for r in json.loads(REPLAY.read_text(encoding="utf-8"))["responses"]}
    from graphrag_got.llm import parse_json_text

    for rej in (r for r in replayed["rejections"] if r["kind"] == "relation"):
        answer, _ = parse_json_text(recorded[rej["chunk_id"]][-1])
        again = validator.validate(answer, rej["chunk_id"])
        assert any(r.reason.value == rej["reason"] and r.item == rej["item"] for r in again.rejections)
    assert sum(replayed["counts"]["by_reason"].values()) == len(replayed["rejections"])
