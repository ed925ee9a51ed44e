"""One validation path from an answer to the graph (graphrag_got.extract.recheck): ``load`` trusts the records
``extract`` sealed under the current ontology, and checks any others again with the extraction's validator and
merges them with its aggregation; one order for a symmetric fact's ends."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from graphrag_got.common.normalize import swap_ends
from graphrag_got.config import Settings
from graphrag_got.extract.aggregate import aggregate, fact_key, identity_attributes
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.recheck import file_records, records_digest, seal
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.validate import ChunkValidation, Validator
from graphrag_got.graph.load_plan import build_plan
from graphrag_got.ontology.model import Ontology

from test_load import JON, ONTO, STARK, TEXT_A, TEXT_B, YGRITTE, base_extraction, chunk_id, ent, extraction, rel

ROOT = Path(__file__).resolve().parent.parent


class _Refusing(Validator):
    """A validator that fails the test when asked: a trusted file is never validated again."""

    def check_entity(self, *args: Any, **kwargs: Any):  # type: ignore[no-untyped-def]
        raise AssertionError("a sealed file was validated again")

    check_relation = check_entity


def _rows(plan: Any) -> tuple[Any, ...]:
    return plan.entities, plan.relations, plan.confidence, dict(plan.refused)


def _onto_variant(edit: Any) -> Ontology:
    data = json.loads((ROOT / "ontology" / "got.json").read_text(encoding="utf-8"))
    edit(data)
    return Ontology.from_dict(data)


def test_sealed_records_are_trusted_and_give_the_rows_of_a_full_check() -> None:
    plain = build_plan(Extraction.read(base_extraction()), ONTO)
    sealed = build_plan(seal(Extraction.read(base_extraction())), ONTO, validator=_Refusing(ONTO))
    assert not plain.trusted and sealed.trusted
    assert (plain.why_checked, sealed.why_checked) == ("not sealed by extract", "")
    assert _rows(sealed) == _rows(plain)


def test_extract_seals_its_file_and_load_trusts_it(tmp_path: Path) -> None:
    settings = Settings().with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay",
                                         replay_file=ROOT / "tests" / "data" / "recorded" / "got-qwen2.5-coder-1.5b.json")
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    summary = run_extraction(settings.extract, onto, ROOT / "corpus" / "got.txt", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    ext = Extraction.read(summary.out_path)  # as written: the seal travels in the file
    assert ext.records_digest == records_digest(ext)
    trusted = build_plan(ext, onto, validator=_Refusing(onto))
    ext.records_digest = ""  # the same records, unsealed: every one checked again
    assert trusted.trusted and _rows(trusted) == _rows(build_plan(ext, onto))


def test_an_edited_sealed_file_is_checked_again(tmp_path: Path) -> None:
    path = seal(Extraction.read(base_extraction())).write(tmp_path / "extraction.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    data["entities"][2].update(type="Dragon", uid="Dragon|casa stark")  # a hand edit the contract accepts
    path.write_text(json.dumps(data), encoding="utf-8")
    plan = build_plan(Extraction.read(path), ONTO)
    assert not plan.trusted and plan.why_checked.startswith("edited since extract sealed it")
    assert plan.refused == {"unknown_class": 1, "object_not_extracted": 1}  # the entity, and PERTENECE_A to it


def test_the_seal_covers_the_records_the_ontology_they_were_checked_under_and_nothing_else() -> None:
    ext = seal(Extraction.read(base_extraction()))
    digest = ext.records_digest
    ext.prompt_version, ext.counts.entities = "another", 99
    assert records_digest(ext) == digest
    ext.ontology.hash = "0" * 64
    assert records_digest(ext) != digest
    ext = seal(Extraction.read(base_extraction()))
    ext.relations[0].attributes["momento"] = "tras la boda"
    assert records_digest(ext) != digest


def test_under_another_ontology_every_record_is_checked_again_and_one_fact_is_merged() -> None:
    a, b = chunk_id("a.txt", TEXT_A), chunk_id("b.txt", TEXT_B)
    data = extraction({"a.txt": TEXT_A, "b.txt": TEXT_B},
                      [ent(*JON, [a, b]), ent(*YGRITTE, [a, b]), ent(*STARK, [a])],
                      [rel(JON, "LEAL_A", YGRITTE, [a]), rel(YGRITTE, "LEAL_A", JON, [b]),
                       rel(JON, "PERTENECE_A", STARK, [a])])  # fmt: skip
    ext = seal(Extraction.read(data))

    def symmetric_loyalty(d: dict[str, Any]) -> None:
        for r in d["relaciones"]:
            if r["nombre"] == "LEAL_A":
                r["simetrica"] = True
                r.pop("indicios_inversos", None)
        d["relaciones"] = [r for r in d["relaciones"] if r["nombre"] != "PERTENECE_A"]
        d.pop("ejemplos")  # they use PERTENECE_A

    onto = _onto_variant(symmetric_loyalty)
    assert len(build_plan(ext, ONTO).relations) == 3  # as extracted: two facts of LEAL_A
    plan = build_plan(ext, onto)
    assert not plan.trusted and plan.refused == {"unknown_relation": 1}
    assert plan.why_checked == "made under another ontology"
    (row,) = plan.relations.values()  # the two directions are one symmetric fact now, merged as extract merges
    assert row["type"] == "LEAL_A" and row["symmetric"] and row["chunk_ids"] == [a, b]
    assert (row["start"], row["end"]) == tuple(sorted((f"Personaje|{JON[1].lower()}", f"Personaje|{YGRITTE[1].lower()}")))


def test_repeated_records_of_a_file_merge_as_extract_merges_them() -> None:
    a, b = chunk_id("a.txt", TEXT_A), chunk_id("b.txt", TEXT_B)
    first, second = ent(*JON, [a], titulo="Lord Comandante"), ent(*JON, [b, a], titulo="Rey", genero="masculino")
    first["aliases"], second["aliases"] = ["el Bastardo"], ["Lord Snow", "el Bastardo"]
    first["mentions"], second["mentions"] = {a: 0.5}, {a: 0.75, b: 0.25}
    ext = Extraction.read(extraction({"a.txt": TEXT_A, "b.txt": TEXT_B}, [first, second], []))
    records = file_records(ext, ONTO)
    validated = [Validator(ONTO).check_entity({"name": e.name, "type": e.type, "properties": e.properties})[0]
                 for e in ext.entities]
    for v, e in zip(validated, ext.entities):
        v.chunk_ids, v.aliases, v.mentions = e.chunk_ids, e.aliases, e.mentions
    merged, _ = aggregate([ChunkValidation(None, None, validated, [])])
    assert records.entities == merged
    (only,) = merged
    assert only.properties == {"titulo": "Lord Comandante", "genero": "masculino"}
    assert only.chunk_ids == [a, b] and only.aliases == ["el Bastardo", "Lord Snow"] and only.mentions == {a: 0.75, b: 0.25}


def test_a_symmetric_fact_has_one_order_in_extract_and_in_load() -> None:
    assert swap_ends("Personaje|ygritte", "Personaje|jon snow", True)
    assert not swap_ends("Personaje|ygritte", "Personaje|jon snow", False)
    assert not swap_ends("Personaje|jon snow", "Personaje|ygritte", True)
    a = chunk_id("a.txt", TEXT_A)
    data = extraction({"a.txt": TEXT_A}, [ent(*JON, [a]), ent(*YGRITTE, [a])],
                      [rel(YGRITTE, "CASADO_CON", JON, [a], symmetric=True)])
    ext = Extraction.read(copy.deepcopy(data))
    identity = identity_attributes(ONTO)
    (key,) = build_plan(ext, ONTO).relations
    assert key == fact_key(ext.relations[0], identity) == ("Personaje|jon snow", "CASADO_CON", "Personaje|ygritte", ("",))
    _, (stored,) = aggregate([ChunkValidation(None, None, [], ext.relations)], identity)
    assert (stored.subject, stored.object) == (JON[1], YGRITTE[1])
