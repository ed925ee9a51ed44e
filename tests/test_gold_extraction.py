"""The hand-curated gold extraction of corpus/got.txt: up to date, well formed, ontology-valid."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.chunking import read_corpus
from graphrag_got.normalize import entity_uid, normalize_name

REPO = Path(__file__).resolve().parents[1]
GOLD_PATH = REPO / "tests" / "data" / "got_extraction.json"
ONTOLOGY_PATH = REPO / "ontology" / "got.json"


def _load_script() -> Any:
    spec = importlib.util.spec_from_file_location("make_gold_extraction", REPO / "scripts" / "make_gold_extraction.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gold() -> dict[str, Any]:
    return json.loads(GOLD_PATH.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def ontology() -> dict[str, Any]:
    return json.loads(ONTOLOGY_PATH.read_text(encoding="utf-8"))


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def test_checked_in_file_equals_regenerated() -> None:
    script = _load_script()
    data = script.build(REPO)
    assert data == json.loads(GOLD_PATH.read_text(encoding="utf-8"))
    assert script.render(data) == GOLD_PATH.read_text(encoding="utf-8")


def test_header_and_counts(gold: dict[str, Any], ontology: dict[str, Any]) -> None:
    canonical = json.dumps(ontology, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert gold["format"] == "graphrag_got.extraction/1"
    assert gold["ontology"] == {"path": "ontology/got.json", "hash": hashlib.sha256(canonical.encode("utf-8")).hexdigest()}
    assert gold["llm"] == {"provider": "gold", "model": "hand-curated"}
    assert gold["prompt_version"] == "gold"
    assert gold["relaciones_descartadas"] == gold["entidades_descartadas"] == gold["failed_chunks"] == []
    assert gold["counts"] == {
        "chunks": len(gold["chunks"]),
        "entities": len(gold["entities"]),
        "relations": len(gold["relations"]),
        "rejected_relations": 0,
        "by_reason": {},
    }
    assert 40 <= len(gold["entities"]) <= 80 and len(gold["relations"]) >= 50


def test_documents_and_chunks_match_the_chunker(gold: dict[str, Any]) -> None:
    [doc] = read_corpus(REPO / "corpus" / "got.txt", kind="paragraph", min_chars=40, max_chars=1500)
    assert gold["documents"] == [{"id": "got.txt", "path": "corpus/got.txt", "hash": doc.document.hash, "metadata": {}}]
    assert [c["id"] for c in gold["chunks"]] == [c.id for c in doc.chunks]
    for stored, chunk in zip(gold["chunks"], doc.chunks):
        assert (stored["start"], stored["end"], stored["hash"], stored["text"], stored["index"]) == (
            chunk.start, chunk.end, chunk.hash, chunk.text, chunk.index)
    known = {c.id for c in doc.chunks}
    for item in gold["entities"] + gold["relations"]:
        assert item["chunk_ids"], item
        assert set(item["chunk_ids"]) <= known, item


def test_entities_are_valid(gold: dict[str, Any], ontology: dict[str, Any]) -> None:
    uids = [e["uid"] for e in gold["entities"]]
    assert len(uids) == len(set(uids))
    for entity in gold["entities"]:
        assert entity["type"] in ontology["clases"]
        assert entity["uid"] == entity_uid(entity["type"], entity["name"])
        assert entity["key"] == normalize_name(entity["name"])
        specs = ontology["clases"][entity["type"]]["propiedades"]
        for prop, value in entity["properties"].items():
            assert prop in specs, (entity["uid"], prop)
            spec = specs[prop].split(",")[0].strip()
            if spec.startswith("enum:"):
                assert value in [v.strip() for v in spec[5:].split("|")], (entity["uid"], prop, value)


def test_relations_obey_the_ontology_and_aggregation(gold: dict[str, Any], ontology: dict[str, Any]) -> None:
    specs = {r["nombre"]: r for r in ontology["relaciones"]}
    entities = {e["uid"]: e for e in gold["entities"]}
    seen: set[tuple[str, str, str, str]] = set()
    for rel in gold["relations"]:
        spec = specs[rel["relation"]]
        assert rel["subject_type"] in _as_list(spec["dominio"]), rel
        assert rel["object_type"] in _as_list(spec["rango"]), rel
        assert rel["symmetric"] is bool(spec.get("simetrica", False))
        s_uid = f"{rel['subject_type']}|{rel['subject_key']}"
        o_uid = f"{rel['object_type']}|{rel['object_key']}"
        assert s_uid in entities and o_uid in entities, rel
        assert entities[s_uid]["name"] == rel["subject"] and entities[o_uid]["name"] == rel["object"]
        if rel["symmetric"]:
            assert s_uid < o_uid, rel  # stored once, ends in sorted-uid order
        key = (s_uid, rel["relation"], o_uid, rel["momento"] or "")
        assert key not in seen, key
        seen.add(key)
        assert rel["momento"] is None or rel["momento"].strip()
        # both ends are mentioned in every chunk the fact comes from
        for chunk_id in rel["chunk_ids"]:
            assert chunk_id in entities[s_uid]["chunk_ids"] and chunk_id in entities[o_uid]["chunk_ids"], rel


def test_every_ontology_relation_is_exercised(gold: dict[str, Any], ontology: dict[str, Any]) -> None:
    used = {r["relation"] for r in gold["relations"]}
    assert used == {r["nombre"] for r in ontology["relaciones"]}
    assert any(r["momento"] for r in gold["relations"])
    assert any(len(r["chunk_ids"]) > 1 for r in gold["relations"])  # aggregation across chunks


def test_build_rejects_a_fact_outside_its_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _load_script()
    broken = {k: {"entities": list(v["entities"]), "relations": list(v["relations"])} for k, v in script.GOLD.items()}
    broken[0]["entities"].append(("Personaje", "Daenerys Targaryen", {}))
    monkeypatch.setattr(script, "GOLD", broken)
    with pytest.raises(ValueError, match="paragraph 0: 'Daenerys Targaryen'"):
        script.build(REPO)
