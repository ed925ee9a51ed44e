"""Text2KGBench importer and scorer.

The real-data tests read the benchmark files from the shared data folder (Text2KGBench by
Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023; CC BY-SA 4.0). The small ontologies and
sentences below are made up for these tests.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.errors import OntologyError
from graphrag_got.ontology.text2kgbench import import_text2kgbench, renamed_labels, write_ontology
from graphrag_got.ontology.text2kgbench import class_identifier, relation_identifier
from graphrag_got.ontology.model import Ontology
from support import TEXT2KGBENCH_DATA, needs_text2kgbench

DATA = TEXT2KGBENCH_DATA
WEBNLG = DATA / "dbpedia_webnlg"
needs_data = needs_text2kgbench


@pytest.fixture(scope="module")
def scorer():
    pytest.importorskip("nltk", reason="the scorer needs NLTK: pip install -e '.[bench]'")
    from benchmarks.text2kgbench import scorer

    return scorer


@pytest.fixture(scope="module")
def reproduce(scorer):
    from benchmarks.text2kgbench import reproduce

    return reproduce


# ----------------------------------------------------------------------------- identifiers
@pytest.mark.parametrize("label, expected", [
    ("birth date", "BIRTH_DATE"),
    ("birthDate", "BIRTH_DATE"),
    ("isPartOf", "IS_PART_OF"),
    ("ISBNNumber", "ISBN_NUMBER"),
    ("elevationAboveTheSeaLevel", "ELEVATION_ABOVE_THE_SEA_LEVEL"),
    ("1stRunwaySurfaceType", "REL_1ST_RUNWAY_SURFACE_TYPE"),
    ("country of citizenship", "COUNTRY_OF_CITIZENSHIP"),
    ("académie", "ACADEMIE"),
])
def test_relation_identifier(label, expected):
    assert relation_identifier(label) == expected


@pytest.mark.parametrize("label, expected", [
    ("EthnicGroup", "EthnicGroup"),
    ("ethnic group", "EthnicGroup"),
    ("human", "Human"),
    ("1stRunwaySurfaceType", "Class1stRunwaySurfaceType"),
])
def test_class_identifier(label, expected):
    assert class_identifier(label) == expected


def _write(tmp_path: Path, data) -> Path:
    p = tmp_path / "onto.json"
    p.write_text(json.dumps(data) if not isinstance(data, str) else data, encoding="utf-8")
    return p


def test_import_handmade_edge_cases(tmp_path):
    src = {
        "title": "Test Ontology", "id": "ont_test",
        "concepts": [{"qid": "Q1", "label": "human"}, {"qid": "Q2", "label": "Document"},
                     {"qid": "Q3", "label": "ethnic group"}],
        "relations": [
            {"pid": "P1", "label": "birth date", "domain": "Q1", "range": "Date"},
            {"pid": "P2", "label": "birthDate", "domain": "Q1", "range": "date"},
            {"pid": "P3", "label": "mentions", "domain": "Q2", "range": "Q1"},
            {"pid": "P4", "label": "ethnicGroup", "domain": "Q1", "range": "ethnicGroup"},
            {"pid": "P5", "label": "staff", "domain": "Q1", "range": ""},
            {"pid": "P6", "label": "employer", "domain": "Q1", "range": "Organisation"},
            {"pid": "P7", "label": "height", "domain": "human", "range": "xsd:number"},
        ],
    }
    onto, label_map = import_text2kgbench(_write(tmp_path, src))
    validated = Ontology.from_dict(onto)

    assert label_map["classes"] == {"human": "Human", "Document": "DocumentConcept",
                                    "ethnic group": "EthnicGroup", "ethnicGroup": "EthnicGroup",
                                    "Organisation": "Organisation"}
    assert label_map["relations"] == {"birth date": "BIRTH_DATE", "birthDate": "BIRTH_DATE_2",
                                      "mentions": "MENTIONS_REL", "ethnicGroup": "ETHNIC_GROUP",
                                      "staff": "STAFF", "employer": "EMPLOYER", "height": "HEIGHT"}
    # date and Date share one literal class; xsd: prefix dropped
    assert label_map["datatypes"] == {"Date": "LiteralDate", "date": "LiteralDate", "xsd:number": "LiteralNumber"}
    rels = {r.name: r for r in validated.relations}
    assert rels["BIRTH_DATE"].domain == ("Human",) and rels["BIRTH_DATE"].range == ("LiteralDate",)
    assert rels["BIRTH_DATE_2"].range == ("LiteralDate",)
    assert rels["MENTIONS_REL"].domain == ("DocumentConcept",)
    assert rels["ETHNIC_GROUP"].range == ("EthnicGroup",)      # case variant merged with the concept
    assert set(rels["STAFF"].range) == set(validated.classes)   # unspecified range: any class
    assert rels["EMPLOYER"].range == ("Organisation",)          # undeclared: added as a class
    assert "relation \"employer\"" in validated.classes["Organisation"].comment
    assert 'original label: "birth date"' in rels["BIRTH_DATE"].comment
    assert all(not r.symmetric for r in validated.relations)
    # only the labels whose spelling changed count as renamed ("Organisation" stays, datatypes are not labels)
    assert renamed_labels(label_map) == {
        "classes": {"human": "Human", "Document": "DocumentConcept", "ethnic group": "EthnicGroup",
                    "ethnicGroup": "EthnicGroup"},
        "relations": {"birth date": "BIRTH_DATE", "birthDate": "BIRTH_DATE_2", "mentions": "MENTIONS_REL",
                      "ethnicGroup": "ETHNIC_GROUP", "staff": "STAFF", "employer": "EMPLOYER", "height": "HEIGHT"},
    }
    # the benchmark has no relation attributes: the import must not declare one
    assert "atributos_de_relacion" not in onto and "relation_attributes" not in onto
    assert validated.relation_attributes == {}


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "not valid JSON"),
    ({"concepts": []}, "$.relations"),
    ({"concepts": [], "relations": [{"label": "  "}]}, "$.relations[0].label"),
])
def test_import_rejects_bad_files(tmp_path, content, fragment):
    with pytest.raises(OntologyError) as err:
        import_text2kgbench(_write(tmp_path, content))
    assert fragment in str(err.value)


def test_import_missing_file(tmp_path):
    with pytest.raises(OntologyError, match="not found"):
        import_text2kgbench(tmp_path / "nope.json")


@needs_data
@pytest.mark.parametrize("name", ["1_university", "3_airport"])
def test_import_real_ontology(tmp_path, name):
    path = WEBNLG / "ontologies" / f"{name}_ontology.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    onto, label_map = import_text2kgbench(path)

    out = write_ontology(onto, tmp_path / "out" / f"{name}.json")
    validated = Ontology.from_file(out)
    assert not list((tmp_path / "out").glob(".*.tmp"))  # no temp file left behind

    assert set(label_map["relations"]) == {r["label"] for r in raw["relations"]}
    assert len(validated.relations) == len(raw["relations"])
    for r in raw["relations"]:
        rel = validated.relation(label_map["relations"][r["label"]])
        assert f'original label: "{r["label"]}"' in rel.comment
        if r["range"].lower() in {"string", "number", "date", "year"}:
            assert rel.range == (label_map["datatypes"][r["range"]],)
            assert rel.range[0].startswith("Literal")
    for c in raw["concepts"]:
        assert label_map["classes"][c["label"]] in validated.classes


@needs_data
def test_every_local_ontology_validates():
    files = sorted((WEBNLG / "ontologies").glob("*_ontology.json"))
    assert files
    for path in files:
        onto, _ = import_text2kgbench(path)
        validated = Ontology.from_dict(onto, source=str(path))  # raises OntologyError on any problem
        # no source file has relation attributes, so no import may declare one (it would reach the prompt)
        assert "relation_attributes" not in json.loads(path.read_text(encoding="utf-8"))
        assert validated.relation_attributes == {}, path.name


# ----------------------------------------------------------------------------- `ontology import` command
DATATYPE_SPELLINGS = {"string", "number", "date", "year"}  # the datatypes the DBpedia-WebNLG files use


def _expected_renames(source: dict, written: dict) -> int:
    """Labels of the source that do not survive verbatim as a class or relation name of the output."""
    relation_names = {r["nombre"] for r in written["relaciones"]}
    class_spellings = {c["label"] for c in source["concepts"]}
    class_spellings |= {r[end] for r in source["relations"] for end in ("domain", "range")
                        if r[end] and r[end].lower() not in DATATYPE_SPELLINGS}
    renamed_relations = {r["label"] for r in source["relations"]} - relation_names
    return len(renamed_relations) + len(class_spellings - set(written["clases"]))


@needs_data
def test_ontology_import_command(tmp_path, capsys):
    src = WEBNLG / "ontologies" / "2_musicalwork_ontology.json"  # has class labels that get renamed too
    out = tmp_path / "imported" / "musicalwork.json"
    code = main(["ontology", "import", "--from", "text2kgbench", str(src), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    onto = Ontology.from_file(out)
    written = json.loads(out.read_text(encoding="utf-8"))
    source = json.loads(src.read_text(encoding="utf-8"))
    expected = _expected_renames(source, written)
    assert 0 < expected < len(source["relations"]) + len(source["concepts"])
    assert f"wrote {out}: {len(onto.classes)} classes, {len(onto.relations)} relations " in printed.out
    assert f"({expected} labels renamed to identifiers:" in printed.out
    assert onto.relation_attributes == {}


def test_ontology_import_command_bad_input(tmp_path, capsys):
    bad = _write(tmp_path, {"concepts": [], "relations": [{"label": "x", "domain": "", "range": ""}, 5]})
    out = tmp_path / "out.json"
    code = main(["ontology", "import", "--from", "text2kgbench", str(bad), "-o", str(out)])
    printed = capsys.readouterr()
    assert code == 1
    assert "$.relations[1]" in printed.err and str(bad) in printed.err
    assert "Traceback" not in printed.err
    assert not out.exists()


# ----------------------------------------------------------------------------- scorer, hand-made cases
TOY_ONTOLOGY = {
    "concepts": [{"qid": "University", "label": "University"}, {"qid": "City", "label": "City"},
                 {"qid": "Person", "label": "Person"}],
    "relations": [
        {"pid": "city", "label": "city", "domain": "University", "range": "City"},
        {"pid": "established", "label": "established", "domain": "University", "range": "Date"},
        {"pid": "dean", "label": "dean", "domain": "University", "range": "Person"},
        {"pid": "birthDate", "label": "birth date", "domain": "Person", "range": "Date"},
    ],
}
SENT = "A College in Springfield was founded in 1990."
GOLD = [{"sub": "A_College", "rel": "city", "obj": "Springfield"},
        {"sub": "A_College", "rel": "established", "obj": "1990"}]


def _one(scorer, pred, gold=GOLD, sent=SENT):
    return scorer.score({"s1": pred}, {"s1": {"sent": sent, "triples": gold}}, TOY_ONTOLOGY)


def test_precision_recall_after_relation_filter(scorer):
    pred = [["A College", "city", "springfield"],      # matches (case, space vs _ ignored)
            ["A College", "established", "1991"],      # kept, wrong
            ["A College", "dean", "Bob"]]              # relation not in gold: set aside
    res = _one(scorer, pred)
    s = res.sentences[0]
    assert (s.n_pred, s.n_kept) == (3, 2)
    assert res.averages["precision"] == pytest.approx(0.5)
    assert res.averages["recall"] == pytest.approx(0.5)
    assert res.averages["f1"] == pytest.approx(0.5)
    assert res.averages["onto_conf"] == pytest.approx(1.0)
    assert res.averages["rel_halluc"] == pytest.approx(0.0)
    assert res.averages["sub_halluc"] == pytest.approx(0.0)
    assert res.averages["obj_halluc"] == pytest.approx(2 / 3)   # 1991 and Bob are not in the sentence
    assert res.published_format()["avg_obj_halluc"] == "0.67"


def test_conformance_and_relation_hallucination(scorer):
    pred = [["A College", "locatedIn", "Springfield"], ["A College", "city", "Springfield"],
            ["A College", "city", "Springfield"], ["A College", "founder", "Springfield"]]
    res = _one(scorer, pred)
    assert res.averages["onto_conf"] == pytest.approx(0.5)
    assert res.averages["rel_halluc"] == pytest.approx(0.5)
    # duplicates collapse in the set comparison: 1 kept distinct triple, correct
    assert res.averages["precision"] == pytest.approx(1.0)
    assert res.averages["recall"] == pytest.approx(0.5)
    assert res.averages["f1"] == pytest.approx(2 / 3)


def test_labels_with_spaces_compare_with_underscores(scorer):
    gold = [{"sub": "Bob", "rel": "birth date", "obj": "1950"}]
    sent = "Bob was born in 1950."
    res = _one(scorer, [["Bob", "birth_date", "1950"]], gold=gold, sent=sent)
    assert res.averages["f1"] == pytest.approx(1.0) and res.averages["onto_conf"] == pytest.approx(1.0)
    # the benchmark compares relation labels with spaces read as "_": a spaced label is neither kept nor conformant
    res = _one(scorer, [["Bob", "birth date", "1950"]], gold=gold, sent=sent)
    assert res.averages["f1"] == 0 and res.averages["onto_conf"] == 0


def test_empty_and_missing_predictions(scorer):
    res = _one(scorer, [])
    assert res.averages == {"precision": 0, "recall": 0, "f1": 0, "onto_conf": 1.0, "sub_halluc": 0,
                            "rel_halluc": 0, "obj_halluc": 0}
    gt = {"s1": {"sent": SENT, "triples": GOLD}, "s2": {"sent": SENT, "triples": GOLD}}
    perfect = [["A_College", "city", "Springfield"], ["A_College", "established", "1990"]]
    res = scorer.score({"s1": perfect}, gt, TOY_ONTOLOGY)   # s2 absent: counts 0 everywhere
    assert res.n_sentences == 2 and len(res.sentences) == 1
    assert res.averages["f1"] == pytest.approx(0.5)
    assert res.averages["onto_conf"] == pytest.approx(0.5)


def test_subject_hallucination_uses_stemming_and_concepts(scorer):
    # "Colleges" stems like "College"; "City" is a concept label, so it is not hallucinated
    pred = [["A Colleges", "city", "City"], ["Z University Foo", "city", "Springfield"]]
    res = _one(scorer, pred)
    assert res.averages["sub_halluc"] == pytest.approx(0.5)
    assert res.averages["obj_halluc"] == pytest.approx(0.0)


def test_domain_range_from_gold_types(scorer):
    pred = [["A College", "dean", "Springfield"],     # domain ok (University), range Person vs City: violation
            ["Springfield", "city", "A College"],     # domain and range both violated
            ["A College", "city", "Springfield"],     # both ok
            ["Nobody", "dean", "Bob"],                # types unknown: not checked
            ["A College", "founder", "Bob"]]          # not in the ontology: not checked
    dr = _one(scorer, pred).domain_range
    assert (dr["domain_checked"], dr["domain_ok"]) == (3, 2)
    assert (dr["range_checked"], dr["range_ok"]) == (3, 1)
    assert (dr["both_checked"], dr["both_ok"]) == (3, 1)
    assert dr["conformant_triples"] == 4
    assert dr["domain_range_conformance"] == pytest.approx(1 / 3)
    assert dr["typed_coverage"] == pytest.approx(3 / 4)


def test_domain_range_with_given_types_and_label_map(scorer, tmp_path):
    src = dict(TOY_ONTOLOGY, title="Toy", id="toy")
    _, label_map = import_text2kgbench(_write(tmp_path, src))
    ours = [{"subject": "X", "relation": "ESTABLISHED", "object": "1990",
             "subject_type": "University", "object_type": "LiteralDate"},
            {"subject": "X", "relation": "ESTABLISHED", "object": "Bob",
             "subject_type": "University", "object_type": "Person"},
            {"subject": "Bob", "relation": "BIRTH_DATE", "object": "1950",
             "subject_type": "Person", "object_type": "LiteralDate"}]
    pred = scorer.to_benchmark_relations(ours, label_map)
    assert [t.rel for t in pred] == ["established", "established", "birth date"]
    dr = _one(scorer, pred).domain_range
    assert (dr["both_checked"], dr["both_ok"]) == (2, 1)   # "birth date" with a space is non-conformant


# ----------------------------------------------------------------------------- reproduction
@needs_data
@pytest.mark.parametrize("name", ["1_university", "10_comicscharacter"])
def test_reproduces_published_vicuna_averages(reproduce, scorer, name):
    published = reproduce.published_averages(WEBNLG / "vicuna13b_avg_eval_results.jsonl")[name]
    res = scorer.score_files(WEBNLG / "vicuna13b_responses" / f"{name}_Vicuna13B_responses.jsonl",
                             WEBNLG / "ground_truth" / f"ont_{name}_ground_truth.jsonl",
                             WEBNLG / "ontologies" / f"{name}_ontology.json")
    for metric in scorer.METRICS:
        assert res.averages[metric] == pytest.approx(published[metric], abs=0.02), metric
