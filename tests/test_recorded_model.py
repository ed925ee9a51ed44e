"""Real model output, replayed: the 1.5B model's recorded answers on our corpus go through the
same extraction path (replay provider), so validation of genuine model mistakes is tested
without the model. Two recordings: the first prompt's (``extract-v1``, kept as the quality
baseline) and the current prompt's, verification verdicts included. Re-record the current one with:

    GRAPHRAG_VERIFY=1 graphrag-got --provider llamacpp extract corpus/got.txt \
        --export-replay tests/data/recorded/got-qwen2.5-coder-1.5b.json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.extract.run import run_extraction
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
FIRST = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"
CURRENT = ROOT / "tests" / "data" / "recorded" / "got-qwen2.5-coder-1.5b.json"


def _extraction_responses(recorded: dict) -> list[dict]:
    """The recorded extraction answers (verification verdicts are stored under "verify:" keys)."""
    return [r for r in recorded["responses"] if not str(r.get("chunk_hash", "")).startswith("verify:")]


@pytest.fixture(scope="module", params=[FIRST, CURRENT], ids=["extract-v1", "current"])
def recording(request) -> Path:
    return request.param


@pytest.fixture(scope="module")
def replayed(recording: Path, tmp_path_factory) -> dict:
    tmp = tmp_path_factory.mktemp("recorded")
    settings = Settings(home=tmp / "home", out_dir=tmp / "out", llm_provider="replay", replay_file=recording)
    summary = run_extraction(settings.extract, Ontology.from_file(ROOT / "ontology" / "got.json"), ROOT / "corpus" / "got.txt", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    recorded = json.loads(recording.read_text(encoding="utf-8"))
    assert summary.llm_calls == sum(len(r["responses"]) for r in _extraction_responses(recorded))
    return json.loads(summary.out_path.read_text(encoding="utf-8"))


def test_the_current_recording_is_of_the_current_prompt_and_covers_verification() -> None:
    from graphrag_got.prompts import EXTRACTION_VERSION

    recorded = json.loads(CURRENT.read_text(encoding="utf-8"))
    assert recorded["prompt_version"] == EXTRACTION_VERSION
    chunks = {r["chunk_id"] for r in _extraction_responses(recorded)}
    assert len(chunks) == 16
    assert any(str(r.get("chunk_hash", "")).startswith("verify:") for r in recorded["responses"])


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


def test_refusals_are_real_and_reproducible(replayed, recording):
    """Each refused triple is refused again when its chunk's answer is repaired and validated alone
    against the chunk text (the default evidence and repair settings), and so is every repair; the
    only other refusals are the self-relations entity resolution makes when it merges two ends."""
    from graphrag_got.common.text_match import ChunkText
    from graphrag_got.extract.run import make_validator
    from graphrag_got.llm.json_answers import parse_json_text
    from graphrag_got.extract.repair import ChunkAnswer, repair_answers

    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    settings = Settings()
    assert settings.extract.evidence and settings.extract.repair
    validator = make_validator(settings.extract, onto)
    recorded = {r["chunk_id"]: r["responses"]
                for r in _extraction_responses(json.loads(recording.read_text(encoding="utf-8")))}
    chunks = {c["id"]: c for c in replayed["chunks"]}
    answers = [ChunkAnswer(cid, chunks[cid]["document_id"], parse_json_text(responses[-1])[0],
                           ChunkText(chunks[cid]["text"], offset=chunks[cid]["start"]))
               for cid, responses in recorded.items()]
    fixed = repair_answers(validator, answers, threshold=settings.extract.mention_threshold)
    again = {a.chunk_id: validator.validate(f.answer, a.chunk_id, a.document_id, a.text,
                                            extra_entities=f.extra_entities)
             for a, f in zip(answers, fixed)}
    merged = {n for m in replayed.get("merges", []) for n in [m["canonical_name"], *m["merged_names"]]}
    for rej in (r for r in replayed["rejections"] if r["kind"] == "relation"):
        if any(r.reason.value == rej["reason"] and r.item == rej["item"] for r in again[rej["chunk_id"]].rejections):
            continue
        assert rej["reason"] == "self_relation" and {rej["subject"], rej["object"]} <= merged, rej
    assert [r.model_dump(mode="json") for f in fixed for r in f.repairs] == replayed["repairs"]
    assert sum(replayed["counts"]["by_reason"].values()) == len(replayed["rejections"])


def test_kept_relations_carry_their_evidence_sentences(replayed):
    """Every kept relation has evidence: chunk offsets that slice its text out of the chunk, document
    offsets = chunk start + offset, and the text mentions the fact within the sentence window."""
    chunks = {c["id"]: c for c in replayed["chunks"]}
    for r in replayed["relations"]:
        assert r["evidence"], r
        for ev in r["evidence"]:
            chunk = chunks[ev["chunk_id"]]
            assert chunk["text"][ev["start"]:ev["end"]] == ev["text"]
            assert ev["document_start"] == chunk["start"] + ev["start"]
            assert ev["document_end"] == chunk["start"] + ev["end"]
