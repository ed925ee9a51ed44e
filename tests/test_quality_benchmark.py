"""The quality benchmark (benchmarks/quality): the scorer on tiny hand-made extractions, its CLI, and
the recorded ladder's first rung (replay provider: no model, no Neo4j)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality import ladder
from benchmarks.quality.score import PRF, NameKeys, class_words, main, score
from graphrag_got.errors import ExtractionFileError, GraphragGotError
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]

ONTO = Ontology.from_dict({
    "name": "tiny",
    "classes": {"Person": {}, "NobleHouse": {}, "Place": {}},
    "relations": [
        {"name": "MARRIED_TO", "domain": "Person", "range": "Person", "symmetric": True},
        {"name": "SERVES", "domain": "Person", "range": "Person"},
        {"name": "MEMBER_OF", "domain": "Person", "range": "NobleHouse"},
        {"name": "RULES", "domain": ["Person", "NobleHouse"], "range": "Place"},
    ],
})


def ent(name: str, type_: str, **extra) -> dict:
    return {"name": name, "type": type_, **extra}


def rel(s: str, st: str, r: str, o: str, ot: str, **extra) -> dict:
    return {"subject": s, "subject_type": st, "relation": r, "object": o, "object_type": ot, **extra}


def doc(entities=(), relations=(), fmt: str | None = "graphrag_got.extraction/1") -> dict:
    d = {"entities": list(entities), "relations": list(relations)}
    if fmt:
        d["format"] = fmt
    return d


GOLD = doc(
    [ent("Ned Vale", "Person"), ent("Cat Reed", "Person"), ent("House Vale", "NobleHouse"),
     ent("The Wall", "Place")],
    [rel("Ned Vale", "Person", "MARRIED_TO", "Cat Reed", "Person"),
     rel("Ned Vale", "Person", "SERVES", "Cat Reed", "Person"),
     rel("Ned Vale", "Person", "MEMBER_OF", "House Vale", "NobleHouse"),
     rel("House Vale", "NobleHouse", "RULES", "The Wall", "Place")],
)


# ---------------------------------------------------------------------------- names
def test_class_words_split_at_capitals_digits_and_underscores():
    assert class_words("NobleHouse") == {"noble", "house"}
    assert class_words("HTTPServer") == {"http", "server"}
    assert class_words("noble_house2") == {"noble", "house", "2"}


def test_tolerant_key_drops_class_words_then_leading_articles_but_never_empties_a_name():
    keys = NameKeys.for_mode("tolerant", ONTO)
    assert keys.key("NobleHouse", "The  House Vale") == "vale"
    assert keys.key("NobleHouse", "Vale") == "vale"
    assert keys.key("Place", "The Wall") == "wall"
    assert keys.key("Place", "Los Llanos") == "llanos"
    # only the entity's own class words go: "house" is not a word of Place
    assert keys.key("Place", "House of Black") == "house of black"
    # articles go only at the start
    assert keys.key("Person", "Jon the Bold") == "jon the bold"
    assert keys.key("NobleHouse", "The House") == "the house"
    assert NameKeys.for_mode("exact", ONTO).key("NobleHouse", "The  Hóuse Vale") == "the house vale"


# ---------------------------------------------------------------------------- scores
def test_identical_extractions_score_one_everywhere():
    result = score(GOLD, GOLD, ONTO)
    for mode in result.modes:
        assert (mode.entities.precision, mode.entities.recall, mode.entities.f1) == (1.0, 1.0, 1.0)
        assert (mode.relations.precision, mode.relations.recall, mode.relations.f1) == (1.0, 1.0, 1.0)


def test_exact_and_tolerant_differ_on_class_words_and_articles():
    pred = doc(
        [ent("ned vale", "Person"), ent("Vale", "NobleHouse"), ent("Wall", "Place"), ent("Stranger", "Person")],
        [rel("Ned Vale", "Person", "MEMBER_OF", "Vale", "NobleHouse"),
         rel("Vale", "NobleHouse", "RULES", "Wall", "Place"),
         rel("Ned Vale", "Person", "SERVES", "Stranger", "Person")],
    )
    result = score(pred, GOLD, ONTO)
    ex, tol = result.exact, result.tolerant
    assert (ex.entities.predicted, ex.entities.gold, ex.entities.correct, ex.entities.found) == (4, 4, 1, 1)
    assert (tol.entities.correct, tol.entities.found) == (3, 3)
    assert ex.relations.correct == 0 and tol.relations.correct == 2
    assert tol.relations.precision == pytest.approx(2 / 3)
    assert tol.relations.recall == pytest.approx(2 / 4)
    assert tol.relations.f1 == pytest.approx(2 * (2 / 3) * 0.5 / (2 / 3 + 0.5))
    assert ex.entities.f1 == pytest.approx(0.25)


def test_symmetric_relations_match_in_either_direction_and_others_do_not():
    pred = doc([], [rel("Cat Reed", "Person", "MARRIED_TO", "Ned Vale", "Person"),
                    rel("Cat Reed", "Person", "SERVES", "Ned Vale", "Person")])
    result = score(pred, GOLD, ONTO)
    by = result.exact.by_relation
    assert (by["MARRIED_TO"].correct, by["MARRIED_TO"].found) == (1, 1)
    assert (by["SERVES"].correct, by["SERVES"].found) == (0, 0)
    assert result.exact.relations.correct == 1


def test_per_relation_counts_cover_every_ontology_relation_and_unknown_ones():
    pred = doc([], [rel("Ned Vale", "Person", "MARRIED_TO", "Cat Reed", "Person"),
                    rel("Ned Vale", "Person", "MARRIED_TO", "Stranger", "Person"),
                    rel("Ned Vale", "Person", "KNOWS", "Cat Reed", "Person")])
    by = score(pred, GOLD, ONTO).exact.by_relation
    assert list(by) == ["MARRIED_TO", "SERVES", "MEMBER_OF", "RULES", "KNOWS"]
    assert by["MARRIED_TO"] == PRF(predicted=2, gold=1, correct=1, found=1)
    assert by["MARRIED_TO"].precision == 0.5 and by["MARRIED_TO"].recall == 1.0
    assert by["SERVES"] == PRF(predicted=0, gold=1, correct=0, found=0)
    assert by["KNOWS"] == PRF(predicted=1, gold=0, correct=0, found=0)
    assert sum(p.predicted for p in by.values()) == 3 and sum(p.gold for p in by.values()) == 4


def test_relation_attributes_and_other_fields_are_ignored():
    pred = doc([], [rel("Ned Vale", "Person", "MARRIED_TO", "Cat Reed", "Person", momento="in spring",
                        chunk_ids=["x"], confidence=0.1)], fmt="graphrag_got.extraction/2")
    gold = doc([], [rel("Ned Vale", "Person", "MARRIED_TO", "Cat Reed", "Person", momento="later")])
    assert score(pred, gold, ONTO).exact.relations.correct == 1


def test_a_relation_needs_the_same_type_and_classes_of_both_ends():
    pred = doc([], [rel("Ned Vale", "Person", "SERVES", "House Vale", "Person"),
                    rel("Ned Vale", "Person", "RULES", "Cat Reed", "Person")])
    assert score(pred, GOLD, ONTO).tolerant.relations.correct == 0


def test_aliases_count_only_in_tolerant_mode_and_reach_relation_ends():
    pred = doc([ent("Eddard", "Person", aliases=["Ned Vale", "Lord Eddard"])],
               [rel("Eddard", "Person", "MEMBER_OF", "Vale", "NobleHouse")])
    result = score(pred, GOLD, ONTO)
    assert result.exact.entities.correct == 0 and result.exact.relations.correct == 0
    assert result.tolerant.entities.correct == 1
    assert result.tolerant.relations.correct == 1


def test_two_predicted_names_of_one_gold_entity_are_both_right_and_found_once():
    pred = doc([ent("House Vale", "NobleHouse"), ent("Vale", "NobleHouse")])
    tol = score(pred, GOLD, ONTO).tolerant.entities
    assert (tol.correct, tol.found) == (2, 1)
    assert tol.precision == 1.0 and tol.recall == 0.25


@pytest.mark.parametrize("pred,gold,expected", [
    (doc(), doc(), (1.0, 1.0, 1.0)),
    (doc(), GOLD, (0.0, 0.0, 0.0)),
    (GOLD, doc(), (0.0, 0.0, 0.0)),
    ({"entities": []}, {}, (1.0, 1.0, 1.0)),
])
def test_empty_sides_give_defined_scores(pred, gold, expected):
    result = score(pred, gold, ONTO)
    for mode in result.modes:
        for prf in (mode.entities, mode.relations, *mode.by_relation.values()):
            if prf.predicted == 0 and prf.gold == 0:
                assert (prf.precision, prf.recall, prf.f1) == (1.0, 1.0, 1.0)
        assert (mode.relations.precision, mode.relations.recall, mode.relations.f1) == expected


# ---------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("bad,where", [
    ({"format": "graphrag_got.extraction/9", "entities": []}, "$.format"),
    ({"entities": {"a": 1}}, "$.entities"),
    ({"entities": ["Ned"]}, "$.entities[0]"),
    ({"entities": [{"name": "  ", "type": "Person"}]}, "$.entities[0].name"),
    ({"entities": [{"name": "\u200b", "type": "Person"}]}, "$.entities[0].name"),
    ({"entities": [{"name": "Ned", "type": "Person", "aliases": "Eddard"}]}, "$.entities[0].aliases"),
    ({"relations": [rel("Ned", "Person", "SERVES", "Cat", "Person"), {"subject": "Ned"}]},
     "$.relations[1].subject_type"),
])
def test_malformed_input_names_the_file_and_json_path(bad, where):
    with pytest.raises(ExtractionFileError) as err:
        score(bad, GOLD, ONTO, pred_source="pred.json")
    assert str(err.value).startswith("pred.json: ") and where in str(err.value)
    assert isinstance(err.value, GraphragGotError)


def test_cli_prints_tables_and_json(tmp_path, capsys):
    pred = tmp_path / "pred.json"
    gold = tmp_path / "gold.json"
    onto = tmp_path / "onto.json"
    pred.write_text(json.dumps(doc([ent("Vale", "NobleHouse")])), encoding="utf-8")
    gold.write_text(json.dumps(GOLD), encoding="utf-8")
    onto.write_text(json.dumps(ONTO.raw), encoding="utf-8")
    assert main([str(pred), str(gold), "--ontology", str(onto)]) == 0
    out = capsys.readouterr().out
    assert "| entities " in out and "| MARRIED_TO " in out and "tolerant F1" in out
    assert main([str(pred), str(gold), "--ontology", str(onto), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["exact"]["entities"]["correct"] == 0
    assert data["tolerant"]["entities"] == {"predicted": 1, "gold": 4, "correct": 1, "found": 1,
                                            "precision": 1.0, "recall": 0.25, "f1": 0.4}


def test_cli_reports_bad_files_without_traceback(tmp_path, capsys):
    broken = tmp_path / "broken.json"
    broken.write_text('{"entities": [\n  {"name": "x",}\n]}', encoding="utf-8")
    onto = ROOT / "ontology" / "got.json"
    assert main([str(broken), str(broken), "--ontology", str(onto)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and f"{broken}:2:" in err and "Traceback" not in err
    assert main([str(tmp_path / "missing.json"), str(broken), "--ontology", str(onto)]) == 1
    assert "missing.json: file not found" in capsys.readouterr().err


# ---------------------------------------------------------------------------- the recorded ladder
@pytest.fixture(scope="module")
def first_rung(tmp_path_factory) -> ladder.RungResult:
    onto = Ontology.from_file(ladder.ONTOLOGY)
    gold = json.loads(ladder.GOLD.read_text(encoding="utf-8"))
    return ladder.run_rung(ladder.RUNGS[0], tmp_path_factory.mktemp("rung0"), ontology=onto, gold=gold)


def test_first_rung_scores_are_ratios_and_counts_are_the_extraction_counts(first_rung):
    gold = json.loads(ladder.GOLD.read_text(encoding="utf-8"))
    counts = first_rung.extraction_counts
    assert first_rung.kept == counts["relations"] and first_rung.refused == counts["rejected_relations"]
    assert first_rung.entities == counts["entities"]
    for mode in first_rung.score.modes:
        assert mode.entities.predicted == counts["entities"]
        assert mode.relations.predicted == counts["relations"]
        assert mode.entities.gold == len(gold["entities"]) and mode.relations.gold == len(gold["relations"])
        assert sum(p.predicted for p in mode.by_relation.values()) == counts["relations"]
        for prf in (mode.entities, mode.relations, *mode.by_relation.values()):
            assert 0.0 <= prf.precision <= 1.0 and 0.0 <= prf.recall <= 1.0 and 0.0 <= prf.f1 <= 1.0
            assert prf.correct <= prf.predicted and prf.found <= prf.gold
    # the recorded model is far from perfect, and tolerant matching never loses an exact match
    ex, tol = first_rung.score.exact, first_rung.score.tolerant
    assert 0 < ex.relations.correct < ex.relations.predicted
    assert tol.relations.correct >= ex.relations.correct and tol.entities.correct >= ex.entities.correct


def test_ladder_results_render_every_rung(first_rung):
    md = ladder.results_markdown([first_rung], gold_path=ladder.GOLD, replay=ladder.REPLAY,
                                 ontology_path=ladder.ONTOLOGY)
    assert md.count(f"| {first_rung.rung} ") == 2  # one row per matching mode
    data = json.loads(ladder.results_json([first_rung], gold_path=ladder.GOLD, replay=ladder.REPLAY,
                                          ontology_path=ladder.ONTOLOGY))
    assert data["rungs"][0]["kept"] == first_rung.kept
    assert data["rungs"][0]["scores"]["exact"]["relations"]["correct"] == first_rung.score.exact.relations.correct


def test_a_rung_must_return_settings_or_run_extraction_arguments(tmp_path):
    bad = ladder.Rung("bad", lambda settings: 42)
    with pytest.raises(TypeError, match="rung 'bad'"):
        ladder.run_rung(bad, tmp_path, ontology=ONTO, gold=GOLD)
