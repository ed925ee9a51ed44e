"""The Text2KGBench replay: published Vicuna-13B answers through our validation (no model).

Reads the benchmark files from the shared data folder (Text2KGBench by Mihindukulasooriya, Tiwari,
Enguix, Lata; ISWC 2023; CC BY-SA 4.0); skipped when they are not there.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from graphrag_got.importers import import_text2kgbench
from graphrag_got.ontology import Ontology
from support import TEXT2KGBENCH_DATA, needs_text2kgbench
from graphrag_got.validate import Reason

REPO = Path(__file__).resolve().parents[1]
BENCH_DIR = REPO / "benchmarks" / "text2kgbench"
DATA = TEXT2KGBENCH_DATA
WEBNLG = DATA / "dbpedia_webnlg"
pytestmark = needs_text2kgbench
ONTOLOGY = "10_comicscharacter"  # the smallest test set: keeps this test fast


@pytest.fixture(scope="module")
def replay():
    pytest.importorskip("nltk", reason="the scorer needs NLTK: pip install -e '.[bench]'")
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location("t2kb_replay", BENCH_DIR / "replay.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["t2kb_replay"] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(BENCH_DIR))
    return module


@pytest.fixture(scope="module")
def paths():
    onto = WEBNLG / "ontologies" / f"{ONTOLOGY}_ontology.json"
    gt = WEBNLG / "ground_truth" / f"ont_{ONTOLOGY}_ground_truth.jsonl"
    resp = WEBNLG / "vicuna13b_responses" / f"{ONTOLOGY}_Vicuna13B_responses.jsonl"
    for p in (onto, gt, resp):
        if not p.is_file():
            pytest.skip(f"{p} is missing from the Text2KGBench data folder")
    return onto, gt, resp


@pytest.mark.parametrize("mode", ["votes", "shape+votes"])
def test_replay_invariants(replay, paths, mode):
    onto_path, gt, resp = paths
    r = replay.replay_ontology(ONTOLOGY, onto_path, gt, resp, mode)
    scorer = replay.scorer

    # "before" is Vicuna's output as published: the benchmark's own scoring of it
    published = scorer.score_files(resp, gt, onto_path)
    assert r.before.averages == published.averages

    # every predicted triple is either kept or refused with exactly one reason
    n_pred = sum(len(v) for v in scorer.load_predictions(resp).values())
    assert r.n_predicted == n_pred > 0
    assert 0 < r.n_kept < r.n_predicted
    assert r.n_kept + r.n_refused == r.n_predicted
    assert r.kept_checked + r.kept_vacuous == r.n_kept
    assert all(0 <= r.refused_in_gold[k] <= v for k, v in r.refused_by_reason.items())
    assert set(r.refused_by_reason) <= {reason.value for reason in Reason}

    # after validation only ontology relations remain: conformance can only go up (to 1 per answered sentence)
    assert r.after.averages["onto_conf"] >= r.before.averages["onto_conf"]
    assert r.after.averages["rel_halluc"] <= r.before.averages["rel_halluc"]
    assert r.after.n_sentences == r.before.n_sentences
    # every kept triple, mapped back, carries one of the benchmark ontology's relation labels
    assert sum(s.n_pred for s in r.after.sentences) == r.n_kept
    assert all(s.n_conformant == s.n_pred for s in r.after.sentences)


def test_kept_relations_are_ontology_relations(replay, paths):
    """Direct check on the converted answers: each kept triple names a relation of our imported ontology."""
    onto_path, _gt, resp = paths
    ours, label_map = import_text2kgbench(onto_path)
    onto = Ontology.from_dict(ours)
    validator = replay.Validator(onto)
    lookup = replay.relation_lookup(label_map)
    names = {rel.name for rel in onto.relations}
    total = 0
    for sid, triples in replay.scorer.load_predictions(resp).items():
        raw, decisions = replay.to_raw_answer(triples, lookup, onto)
        # triples are passed untyped: types come only from the entity list
        assert all(set(item) == {"subject", "relation", "object"} for item in raw["relations"])
        assert all(e["type"] in onto.classes for e in raw["entities"])
        result = validator.validate(raw, sid)
        for rel in result.relations:
            assert rel.relation in names
            assert rel.subject_type in onto.relation(rel.relation).domain
            assert rel.object_type in onto.relation(rel.relation).range
            total += 1
        back = replay.scorer.to_benchmark_relations([(r.subject, r.relation, r.object) for r in result.relations],
                                                    label_map)
        assert all(t.rel in label_map["relations"] for t in back)
    assert total > 0


def test_typing_votes_and_shapes(replay):
    """Made-up ontology: an entity typed two ways loses the minority triple; a date is no Person."""
    onto = Ontology.from_dict({
        "nombre": "t", "clases": {"Person": {}, "City": {}, "LiteralDate": {}},
        "relaciones": [
            {"nombre": "BIRTH_PLACE", "dominio": "Person", "rango": ["City"]},
            {"nombre": "LEADER", "dominio": "City", "rango": ["Person"]},
            {"nombre": "BIRTH_DATE", "dominio": "Person", "rango": ["LiteralDate"]},
        ],
    })
    T = replay.scorer.Triple
    lookup = {"birthPlace": "BIRTH_PLACE", "leader": "LEADER", "birthDate": "BIRTH_DATE"}
    triples = [T("Ann", "birthPlace", "Rome"), T("Ann", "birthDate", "1950-01-02"),
               T("Rome", "leader", "Ann"), T("Ann", "leader", "Bob"),       # Ann: Person 3 votes vs City 1
               T("Bob", "birthDate", "Paris"),                                # text value where a date goes
               T("Ann", "spouse", "Bob")]                                     # not in the ontology
    raw, decisions = replay.to_raw_answer(triples, lookup, onto, use_shape=True)
    assert decisions["ann"].type == "Person"
    assert decisions["1950-01-02"].type == "LiteralDate"
    assert decisions["paris"].type is None and decisions["paris"].reason == "shape_conflict"
    result = replay.Validator(onto).validate(raw)
    kept = {(r.subject, r.relation, r.object) for r in result.relations}
    assert kept == {("Ann", "BIRTH_PLACE", "Rome"), ("Ann", "BIRTH_DATE", "1950-01-02"), ("Rome", "LEADER", "Ann")}
    reasons = sorted(r.reason.value for r in result.rejections if r.kind == "relation")
    assert reasons == ["domain_violation", "unknown_class", "unknown_relation"]
    # without shape evidence "Paris" becomes a date literal from its only triple: that check is vacuous
    _raw, dec2 = replay.to_raw_answer(triples, lookup, onto, use_shape=False)
    assert dec2["paris"].type == "LiteralDate"
    assert not replay.end_checked(dec2["paris"], "BIRTH_DATE", "object")
    assert replay.end_checked(decisions["ann"], "BIRTH_PLACE", "subject")
