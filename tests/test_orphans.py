"""Entities no kept fact uses are refused with a record (no_fact), or kept when asked."""

from __future__ import annotations

import json
from pathlib import Path

from graphrag_got.config import Settings
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import EntityRecord, Reason, RelationRecord
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.orphans import drop_orphans

ONTO = {
    "classes": {"Person": {}, "Place": {}},
    "relations": [{"name": "LIVES_IN", "domain": "Person", "range": "Place"}],
}


def _entity(cls: str, name: str) -> EntityRecord:
    key = name.lower()
    return EntityRecord(uid=f"{cls}|{key}", key=key, name=name, type=cls, chunk_ids=["d:1"])


def test_only_entities_in_a_relation_stay_and_each_other_is_a_record() -> None:
    ann, rome, oslo = _entity("Person", "Ann"), _entity("Place", "Rome"), _entity("Place", "Oslo")
    rel = RelationRecord(subject="Ann", subject_key="ann", subject_type="Person", relation="LIVES_IN",
                         object="Rome", object_key="rome", object_type="Place", chunk_ids=["d:1"])
    kept, refused = drop_orphans([ann, rome, oslo], [rel])
    assert [e.name for e in kept] == ["Ann", "Rome"]
    (rec,) = refused
    assert rec.kind == "entity" and rec.reason is Reason.NO_FACT
    assert (rec.entity_name, rec.entity_type, rec.chunk_id) == ("Oslo", "Place", "d:1")
    assert "GRAPHRAG_ORPHAN_ENTITIES=keep" in rec.message


def test_the_setting_decides_in_a_real_extraction(tmp_path: Path) -> None:
    corpus = tmp_path / "c.txt"
    corpus.write_text("Ann lives in Rome, a city she loves. Oslo, far in the north, is cold.\n", encoding="utf-8")
    onto = Ontology.from_dict(ONTO)
    answer = {"entities": [{"type": "Person", "name": "Ann"}, {"type": "Place", "name": "Rome"},
                           {"type": "Place", "name": "Oslo"}],
              "relations": [{"relation": "LIVES_IN", "subject": "Ann", "subject_type": "Person", "object": "Rome",
                             "object_type": "Place"}]}
    replay = tmp_path / "replay.json"
    out = {}
    for mode in ("drop", "keep"):
        settings = Settings(home=tmp_path / mode / "home", out_dir=tmp_path / mode / "out", llm_provider="replay",
                            replay_file=replay, orphan_entities=mode)
        if not replay.exists():
            from graphrag_got.ingest.chunking import read_corpus

            chunks = [c for d in read_corpus(corpus, min_chars=settings.chunking.min_chars,
                                             max_chars=settings.chunking.max_chars) for c in d.chunks]
            replay.write_text(json.dumps({"format": "graphrag_got.replay/1", "model": "test", "responses": [
                {"chunk_id": c.id, "chunk_hash": c.hash, "responses": [json.dumps(answer)]} for c in chunks]}),
                encoding="utf-8")
        summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
        out[mode] = json.loads(summary.out_path.read_text(encoding="utf-8"))
    assert sorted(e["name"] for e in out["drop"]["entities"]) == ["Ann", "Rome"]
    assert sorted(e["name"] for e in out["keep"]["entities"]) == ["Ann", "Oslo", "Rome"]
    no_fact = [r for r in out["drop"]["rejections"] if r["reason"] == "no_fact"]
    assert [r["entity_name"] for r in no_fact] == ["Oslo"]
    assert out["drop"]["counts"]["by_reason"].get("no_fact") == 1
    assert not [r for r in out["keep"]["rejections"] if r["reason"] == "no_fact"]


def test_duplicates_refuses_only_an_orphan_whose_name_facts_use_under_another_class() -> None:
    ann, rome = _entity("Person", "Ann"), _entity("Place", "Rome")
    rome_as_person, oslo = _entity("Person", "Rome"), _entity("Place", "Oslo")
    rel = RelationRecord(subject="Ann", subject_key="ann", subject_type="Person", relation="LIVES_IN",
                         object="Rome", object_key="rome", object_type="Place", chunk_ids=["d:1"])
    kept, refused = drop_orphans([ann, rome, rome_as_person, oslo], [rel], "duplicates")
    assert [(e.type, e.name) for e in kept] == [("Person", "Ann"), ("Place", "Rome"), ("Place", "Oslo")]
    (rec,) = refused
    assert (rec.entity_type, rec.entity_name, rec.allowed) == ("Person", "Rome", ["Place"])
    assert "the same name is a Place that does" in rec.message
    assert drop_orphans([ann, rome, rome_as_person, oslo], [rel], "keep") == ([ann, rome, rome_as_person, oslo], [])


def test_related_refuses_an_orphan_only_where_its_chunks_kept_facts() -> None:
    ann, rome, oslo = _entity("Person", "Ann"), _entity("Place", "Rome"), _entity("Place", "Oslo")
    paris = EntityRecord(uid="Place|paris", key="paris", name="Paris", type="Place", chunk_ids=["d:2"])
    both = EntityRecord(uid="Place|lima", key="lima", name="Lima", type="Place", chunk_ids=["d:1", "d:2"])
    rel = RelationRecord(subject="Ann", subject_key="ann", subject_type="Person", relation="LIVES_IN",
                         object="Rome", object_key="rome", object_type="Place", chunk_ids=["d:1"])
    kept, refused = drop_orphans([ann, rome, oslo, paris, both], [rel], mode="related")
    # Oslo: its only chunk kept a fact that leaves it out; Paris and Lima appear where nothing was kept
    assert [e.name for e in kept] == ["Ann", "Rome", "Paris", "Lima"]
    (rec,) = refused
    assert rec.entity_name == "Oslo" and rec.reason is Reason.NO_FACT
    assert "every chunk that mentions it" in rec.message
    # duplicates alone refuses none of them; drop refuses all three
    assert len(drop_orphans([ann, rome, oslo, paris, both], [rel], mode="duplicates")[1]) == 0
    assert len(drop_orphans([ann, rome, oslo, paris, both], [rel], mode="drop")[1]) == 3
    assert Settings().extract.orphan_entities == "related"
