"""The hand-curated gold extraction of corpus/got.txt: up to date, well formed, ontology-valid."""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.extract.extraction import FORMAT, Extraction
from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.ontology.model import Ontology

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


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(ONTOLOGY_PATH)


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def test_checked_in_file_equals_regenerated(tmp_path: Path) -> None:
    script = _load_script()
    ext = script.build(REPO)
    assert isinstance(ext, Extraction)
    assert ext.to_data() == json.loads(GOLD_PATH.read_text(encoding="utf-8"))
    # byte for byte what the library's writer produces
    written = ext.write(tmp_path / "got_extraction.json").read_text(encoding="utf-8")
    assert written == GOLD_PATH.read_text(encoding="utf-8") == script.render(ext)
    assert script.main(["--check"]) == 0


def test_check_reports_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    script = _load_script()
    data = json.loads(GOLD_PATH.read_text(encoding="utf-8"))
    data["relations"] = data["relations"][1:]  # a fact lost
    stale = tmp_path / "got_extraction.json"
    stale.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    assert script.main(["--check", "--out", str(stale)]) == 1
    assert "is stale" in capsys.readouterr().err
    assert script.main(["--out", str(stale)]) == 0  # rewrites it
    assert stale.read_text(encoding="utf-8") == GOLD_PATH.read_text(encoding="utf-8")
    assert script.main(["--check", "--out", str(stale)]) == 0


def test_the_contract_reads_the_file_unchanged(gold: dict[str, Any]) -> None:
    ext = Extraction.read(GOLD_PATH)
    assert ext.to_data() == gold  # nothing in the file is unknown to (or dropped by) the contract
    assert ext.consistency_problems() == []


def test_header_and_counts(gold: dict[str, Any], ontology: dict[str, Any], onto: Ontology) -> None:
    # the ontology hash covers the whole file but the relations' cues (they never reach the model)
    cues = ("indicios", "indicios_inversos")
    hashed = {**ontology, "relaciones": [{k: v for k, v in r.items() if k not in cues} for r in ontology["relaciones"]]}
    canonical = json.dumps(hashed, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert gold["format"] == FORMAT == "graphrag_got.extraction/2"
    assert gold["ontology"] == {"path": "ontology/got.json", "hash": hashlib.sha256(canonical.encode("utf-8")).hexdigest()}
    assert gold["ontology"]["hash"] == onto.hash  # what extract records, so --revalidate sees the same ontology
    assert gold["llm"] == {"provider": "gold", "model": "hand-curated"}
    assert gold["prompt_version"] == "gold"
    assert gold["rejections"] == gold["repairs"] == gold["failed_chunks"] == []
    assert "relaciones_descartadas" not in gold and "entidades_descartadas" not in gold
    assert gold["counts"] == {
        "documents": 1,
        "chunks": len(gold["chunks"]),
        "chunks_extracted": len(gold["chunks"]),
        "chunks_failed": 0,
        "failed_by_reason": {},
        "files_skipped": 0,
        "chunks_repaired": 0,
        "entities": len(gold["entities"]),
        "relations": len(gold["relations"]),
        "rejected_relations": 0,
        "rejected_entities": 0,
        "rejected_properties": 0,
        "repairs": 0,
        "by_reason": {},
        "repairs_by_reason": {},
    }
    assert 40 <= len(gold["entities"]) <= 80 and len(gold["relations"]) >= 50


def test_documents_and_chunks_match_the_chunker(gold: dict[str, Any]) -> None:
    [doc] = read_corpus(REPO / "corpus" / "got.txt", kind="paragraph", min_chars=40, max_chars=1500)
    assert gold["documents"] == [{"id": "got.txt", "path": "corpus/got.txt", "hash": doc.document.hash, "metadata": {},
                                  "note": None}]
    assert [c["id"] for c in gold["chunks"]] == [c.id for c in doc.chunks]
    for stored, chunk in zip(gold["chunks"], doc.chunks):
        assert (stored["start"], stored["end"], stored["hash"], stored["text"], stored["index"]) == (
            chunk.start, chunk.end, chunk.hash, chunk.text, chunk.index)
    known = {c.id for c in doc.chunks}
    for item in gold["entities"] + gold["relations"]:
        assert item["chunk_ids"], item
        assert set(item["chunk_ids"]) <= known, item


def test_entities_are_valid(gold: dict[str, Any], onto: Ontology) -> None:
    uids = [e["uid"] for e in gold["entities"]]
    assert len(uids) == len(set(uids))
    for entity in gold["entities"]:
        assert entity["type"] in onto.classes
        assert entity["uid"] == entity_uid(entity["type"], entity["name"])
        assert entity["key"] == normalize_name(entity["name"])
        specs = onto.classes[entity["type"]].properties
        for prop, value in entity["properties"].items():
            assert prop in specs, (entity["uid"], prop)
            if specs[prop].kind == "enum":
                assert value in specs[prop].values, (entity["uid"], prop, value)
        missing = [p for p, s in specs.items() if s.required and p not in entity["properties"]]
        assert not missing, (entity["uid"], missing)


def test_relations_obey_the_ontology_and_aggregation(gold: dict[str, Any], ontology: dict[str, Any],
                                                     onto: Ontology) -> None:
    specs = {r["nombre"]: r for r in ontology["relaciones"]}
    entities = {e["uid"]: e for e in gold["entities"]}
    identity = onto.identity_attributes
    assert identity == ("momento",)
    seen: set[tuple[str, ...]] = set()
    for rel in gold["relations"]:
        assert "momento" not in rel, rel  # format /2: relation attributes live in "attributes"
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
        assert set(rel["attributes"]) <= set(onto.relation_attributes), rel
        assert all(isinstance(v, str) and v.strip() for v in rel["attributes"].values()), rel
        key = (s_uid, rel["relation"], o_uid, *(rel["attributes"].get(a, "") for a in identity))
        assert key not in seen, key
        seen.add(key)
        # both ends are mentioned in every chunk the fact comes from
        for chunk_id in rel["chunk_ids"]:
            assert chunk_id in entities[s_uid]["chunk_ids"] and chunk_id in entities[o_uid]["chunk_ids"], rel


def test_every_ontology_relation_is_exercised(gold: dict[str, Any], ontology: dict[str, Any]) -> None:
    used = {r["relation"] for r in gold["relations"]}
    assert used == {r["nombre"] for r in ontology["relaciones"]}
    assert any(r["attributes"].get("momento") for r in gold["relations"])
    assert any(len(r["chunk_ids"]) > 1 for r in gold["relations"])  # aggregation across chunks
    # the same pair and relation at two moments are two facts
    pairs = [(r["subject_key"], r["relation"], r["object_key"]) for r in gold["relations"]]
    assert len(set(pairs)) < len(pairs)


def test_build_rejects_a_fact_outside_its_paragraph(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _load_script()
    broken = {k: {"entities": list(v["entities"]), "relations": list(v["relations"])} for k, v in script.GOLD.items()}
    broken[0]["entities"].append(("Personaje", "Daenerys Targaryen", {}))
    monkeypatch.setattr(script, "GOLD", broken)
    with pytest.raises(ValueError, match="paragraph 0: 'Daenerys Targaryen'"):
        script.build(REPO)


@pytest.mark.parametrize("kind, fact, expected", [
    ("entities", ("Personaje", "Eddard Stark", {"genero": "hombre"}), r"paragraph 0: entity 'Eddard Stark' refused: .*genero"),
    ("relations", ("Casa Stark", "CASADO_CON", "Catelyn Tully"), r"paragraph 0: .*CASADO_CON.* refused: .*subject of type Personaje"),
    ("relations", ("Eddard Stark", "LEAL_A", "Nadie"), r"paragraph 0: 'Nadie' .* is not among the paragraph's entities"),
])  # fmt: skip
def test_build_rejects_a_fact_the_ontology_refuses(monkeypatch: pytest.MonkeyPatch, kind: str, fact: tuple,
                                                    expected: str) -> None:
    """The curated facts go through the library's validator: a fact it refuses stops the script."""
    script = _load_script()
    broken = {k: {"entities": list(v["entities"]), "relations": list(v["relations"])} for k, v in script.GOLD.items()}
    broken[0][kind].append(fact)
    monkeypatch.setattr(script, "GOLD", broken)
    with pytest.raises(ValueError, match=expected):
        script.build(REPO)
