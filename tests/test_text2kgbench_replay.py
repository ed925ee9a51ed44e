"""The Text2KGBench replay: published Vicuna-13B answers through our validation (no model).

Reads the benchmark files from the shared data folder (Text2KGBench by Mihindukulasooriya, Tiwari,
Enguix, Lata; ISWC 2023; CC BY-SA 4.0); skipped when they are not there. The end-to-end tests run the
scripts' ``main`` on a copy of a few of those sentences in a temporary folder.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from graphrag_got.ontology.text2kgbench import import_text2kgbench
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.validate import Reason
from support import REPO, TEXT2KGBENCH_DATA, needs_text2kgbench

DATA = TEXT2KGBENCH_DATA
WEBNLG = DATA / "dbpedia_webnlg"
pytestmark = needs_text2kgbench
ONTOLOGY = "10_comicscharacter"  # the smallest test set: keeps this test fast


@pytest.fixture(scope="module")
def replay():
    pytest.importorskip("nltk", reason="the scorer needs NLTK: pip install -e '.[bench]'")
    from benchmarks.text2kgbench import replay

    return replay


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


def test_judging_triple_by_triple_matches_validating_the_whole_answer(replay, paths):
    onto_path, _gt, resp = paths
    ours, label_map = import_text2kgbench(onto_path)
    onto = Ontology.from_dict(ours)
    validator = replay.Validator(onto)
    lookup = replay.relation_lookup(label_map)
    refused = 0
    for sid, triples in replay.scorer.load_predictions(resp).items():
        raw, _ = replay.to_raw_answer(triples, lookup, onto)
        verdicts = replay.judge_relations(validator, raw, sid, ONTOLOGY)
        whole = validator.validate(raw, sid, ONTOLOGY)
        as_tuples = [(r.subject, r.subject_type, r.relation, r.object, r.object_type) for r in whole.relations]
        assert [(v.subject, v.subject_type, v.relation, v.object, v.object_type)
                for _item, v, _reason in verdicts if v is not None] == as_tuples
        assert [item for item, *_ in verdicts] == raw["relations"]
        assert all((v is None) != (reason is None) for _item, v, reason in verdicts)
        refused += sum(v is None for _item, v, _reason in verdicts)
    assert refused > 0


def _people_ontology() -> tuple[Ontology, dict[str, str]]:
    """A made-up ontology of people, cities and dates, and the benchmark labels of its relations."""
    onto = Ontology.from_dict({
        "nombre": "t", "clases": {"Person": {}, "City": {}, "LiteralDate": {}},
        "relaciones": [
            {"nombre": "BIRTH_PLACE", "dominio": "Person", "rango": ["City"]},
            {"nombre": "LEADER", "dominio": "City", "rango": ["Person"]},
            {"nombre": "BIRTH_DATE", "dominio": "Person", "rango": ["LiteralDate"]},
        ],
    })
    return onto, {"birthPlace": "BIRTH_PLACE", "leader": "LEADER", "birthDate": "BIRTH_DATE"}


def test_typing_votes_and_shapes(replay):
    """Made-up ontology: an entity typed two ways loses the minority triple; a date is no Person."""
    onto, lookup = _people_ontology()
    T = replay.scorer.Triple
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


def test_a_perfect_answer_and_the_names_no_class_fits(replay):
    """Made-up ontology and gold: the gold as an answer keeps its quoted literals; a name used where a
    Person and where a City is expected fits no single class (a hierarchy that makes both one kind
    would reconcile it)."""
    onto, lookup = _people_ontology()
    T = replay.scorer.Triple
    gold = {
        "s1": {"sent": "Ann Lee was born in New Rome on 2 January 1950.",
               "triples": [T("Ann_Lee", "birthPlace", "New_Rome"), T("Ann_Lee", "birthDate", '"1950-01-02"')]},
        "s2": {"sent": "New Rome, led by Ann Lee, was born in Old Rome.",   # New Rome as a City and as a Person
               "triples": [T("New_Rome", "leader", "Ann_Lee"), T("New_Rome", "birthPlace", "Old_Rome")]},
    }
    answers = replay.gold_as_answers(gold)
    assert answers["s1"] == [T("Ann Lee", "birthPlace", "New Rome"), T("Ann Lee", "birthDate", '"1950-01-02"')]
    # the scorer reads both spellings alike: the answer is the gold
    for sid, g in gold.items():
        assert {replay.scorer.triple_key(t) for t in answers[sid]} == {replay.scorer.triple_key(t) for t in g["triples"]}
    assert replay.conflicted_names(gold, onto, lookup) == {"new rome"}
    assert replay.conflicted_names({"s1": gold["s1"]}, onto, lookup) == set()


# ----------------------------------------------------------------------------- end to end, on a subset
# Gold lines of the subset: the first sentence (all kept) and three whose answers lose triples for
# different reasons (unknown class, range violation, unknown relation), about different subjects.
SUBSET_LINES = (0, 3, 12, 20)


@pytest.fixture
def subset(tmp_path, paths):
    """A data folder shaped like the benchmark's, holding one ontology and a few of its sentences."""
    onto, gt, resp = paths
    root = tmp_path / "data" / "dbpedia_webnlg"
    for sub in ("ontologies", "ground_truth", "vicuna13b_responses", "test"):
        (root / sub).mkdir(parents=True)
    all_gt = gt.read_text(encoding="utf-8").splitlines()
    gt_lines = [all_gt[i] for i in SUBSET_LINES]
    ids = [json.loads(line)["id"] for line in gt_lines]
    resp_lines = [line for line in resp.read_text(encoding="utf-8").splitlines() if json.loads(line)["id"] in ids]
    test_src = WEBNLG / "test" / f"ont_{ONTOLOGY}_test.jsonl"
    test_lines = [line for line in test_src.read_text(encoding="utf-8").splitlines() if json.loads(line)["id"] in ids]
    assert len(resp_lines) == len(test_lines) == len(ids) > 1
    files = {
        root / "ontologies" / onto.name: onto.read_text(encoding="utf-8"),
        root / "ground_truth" / gt.name: "\n".join(gt_lines) + "\n",
        root / "vicuna13b_responses" / resp.name: "\n".join(resp_lines) + "\n",
        root / "test" / test_src.name: "\n".join(test_lines) + "\n",
    }
    for path, text in files.items():
        path.write_text(text, encoding="utf-8")
    return {"data": tmp_path / "data", "onto": root / "ontologies" / onto.name, "gt": root / "ground_truth" / gt.name,
            "resp": root / "vicuna13b_responses" / resp.name, "ids": ids}


def _sections(text: str) -> dict[str, list[str]]:
    """``## heading`` -> its lines."""
    out: dict[str, list[str]] = {}
    current = "preamble"
    for line in text.splitlines():
        if line.startswith("## "):
            current = line[3:]
            out[current] = []
        else:
            out.setdefault(current, []).append(line)
    return out


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _rows(lines: list[str], first_cell: str) -> list[list[str]]:
    return [_cells(line) for line in lines if line.startswith(f"| {first_cell} |")]


def test_replay_main_writes_the_report(replay, subset, tmp_path, capsys):
    out = tmp_path / "results" / "replay.md"
    assert replay.main(["--data", str(subset["data"]), "--ontologies", "10", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    text = out.read_text(encoding="utf-8")
    assert printed == f"{text}\nwrote {out}\n"   # the file holds exactly the report shown
    assert not list(out.parent.glob(".*.tmp"))   # atomic write: no temp file left behind

    assert "CC BY-SA 4.0" in text and "Mihindukulasooriya" in text
    assert "typing mode of this report: **shape+votes**" in text
    sections = _sections(text)
    assert list(sections)[1:] == ["Quality before → after validation",
                                  "Quality before → after our pipeline (audited repair, then validation)",
                                  "With the evidence check",
                                  "With the DBpedia class hierarchy",
                                  "A perfect answer through the same steps",
                                  "What the validator refused (relation triples, by reason)",
                                  "How the untyped triples were typed", "Reading these numbers"]
    scorer = replay.scorer
    n = len(subset["ids"])
    grounded = sections["With the evidence check"]
    (plain,) = _rows(grounded, "average, pipeline")
    (checked,) = _rows(grounded, "average, pipeline with the evidence check")
    assert plain[1] == checked[1] == str(n) and checked[5].endswith("→ 1.00")  # conformance 1.00 either way
    # the check refuses what the sentence does not mention: object hallucination can only go down
    assert float(checked[8].split(" → ")[1]) <= float(plain[8].split(" → ")[1])
    hier = sections["With the DBpedia class hierarchy"]
    assert len(_rows(hier, "average, pipeline, DBpedia hierarchy")) == 1
    assert len(_rows(hier, "average, validation, no hierarchy")) == 1
    # without a hierarchy file the section is left out
    bare = tmp_path / "bare.md"
    assert replay.main(["--data", str(subset["data"]), "--ontologies", "10", "--out", str(bare),
                        "--hierarchy", "none"]) == 0
    capsys.readouterr()
    assert "With the DBpedia class hierarchy" not in bare.read_text(encoding="utf-8")
    bad = tmp_path / "bad.json"
    bad.write_text('{"parents": {"City": "Place"}}')
    assert replay.main(["--data", str(subset["data"]), "--ontologies", "10", "--out", str(bare),
                        "--hierarchy", str(bad)]) == 1
    assert "expected" in capsys.readouterr().err

    # quality: "before" is the benchmark's own scoring of the subset; after validation only ontology relations
    published = scorer.score_files(subset["resp"], subset["gt"], subset["onto"])
    quality = sections["Quality before → after validation"]
    (row,) = _rows(quality, ONTOLOGY)
    assert row[1] == str(n) and len(row) == 2 + len(scorer.METRICS) + 1
    before_after = dict(zip(scorer.METRICS, (cell.split(" → ") for cell in row[2:])))
    for metric, (before, after) in before_after.items():
        assert before == f"{published.averages[metric]:.2f}", metric
        assert re.fullmatch(r"\d\.\d\d", after), (metric, after)
    assert before_after["onto_conf"][1] == "1.00" and before_after["rel_halluc"][1] == "0.00"
    assert re.fullmatch(r"(\d\.\d\d|n/a) → (\d\.\d\d|n/a)", row[-1])
    for mode in ("shape+votes", "votes"):   # both typing modes are averaged for comparison
        (avg,) = _rows(quality, f"average, {mode}")
        assert avg[1] == str(n)

    # the counts add up, across the three places that report them
    n_pred = sum(len(t) for t in scorer.load_predictions(subset["resp"]).values())
    reading = "\n".join(sections["Reading these numbers"])
    m = re.search(r"- (\d+) predicted triples, (\d+) kept \((\S+)\), (\d+) refused, (\d+) of them equal to a gold",
                  reading)
    assert m, reading
    pred, kept, refused, in_gold = (int(m.group(i)) for i in (1, 2, 4, 5))
    assert pred == n_pred > 0 and kept + refused == pred and 0 < kept and 0 < refused and in_gold <= refused
    assert m.group(3) == f"{kept / pred:.2f}"

    refusals = sections["What the validator refused (relation triples, by reason)"]
    header = next(_cells(line) for line in refusals if line.startswith("| ontology | triples |"))
    this_mode = _rows(refusals, ONTOLOGY)[0]
    assert this_mode[1:3] == [str(pred), str(kept)]
    assert this_mode[3] == f"{refused} ({in_gold})"
    by_reason = {reason: int(cell.split()[0]) for reason, cell in zip(header[4:], this_mode[4:])}
    assert sum(by_reason.values()) == refused
    assert len(by_reason) > 1 and set(by_reason) <= {reason.value for reason in Reason}

    # the pipeline: same "before", conformance 1.00 after, and the kept/repair counts per ontology
    pipeline = sections["Quality before → after our pipeline (audited repair, then validation)"]
    prow = _rows(pipeline, ONTOLOGY)[0]  # the quality row; the counts row follows
    p_before_after = dict(zip(scorer.METRICS, (cell.split(" → ") for cell in prow[2:])))
    assert {m: ba[0] for m, ba in p_before_after.items()} == {m: ba[0] for m, ba in before_after.items()}
    assert p_before_after["onto_conf"][1] == "1.00"
    counts = next(_cells(line) for line in pipeline if line.startswith("| ontology | triples | kept by validation"))
    (crow,) = [r for r in _rows(pipeline, ONTOLOGY) if len(r) == len(counts)]
    assert crow[1:3] == [str(pred), str(kept)] and 0 < int(crow[3]) <= pred
    assert all(re.fullmatch(r"\d+", c) for c in crow[4:])

    # a perfect answer (the gold itself) loses only what the ontology refuses of its own gold
    perfect = sections["A perfect answer through the same steps"]
    (prow,) = _rows(perfect, ONTOLOGY)
    gold_n = sum(len(g["triples"]) for g in scorer.load_ground_truth(subset["gt"]).values())
    assert prow[1] == str(gold_n) and int(prow[2].split()[0]) <= gold_n
    f1_val, f1_pipe, raw, pipe = map(float, prow[3:7])
    assert 0 < f1_val <= 1 and 0 < f1_pipe <= 1 and raw == float(before_after["f1"][0])
    assert pipe == float(p_before_after["f1"][1])
    assert len(_rows(perfect, "**average, DBpedia hierarchy**")) == 1

    typing = sections["How the untyped triples were typed"]
    (typed_row,) = _rows(typing, ONTOLOGY)
    typed, no_evidence, tie, conflict, checked, vacuous = map(int, typed_row[1:])
    assert checked + vacuous == kept
    assert typed > 0 and min(no_evidence, tie, conflict) >= 0


def test_replay_main_reports_a_missing_data_folder(replay, tmp_path, capsys):
    out = tmp_path / "replay.md"
    assert replay.main(["--data", str(tmp_path / "nowhere"), "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "no dbpedia_webnlg folder" in err and "TEXT2KGBENCH_DIR" in err
    assert not out.exists()


def test_replay_runs_as_a_module_from_the_repo_root(subset, tmp_path):
    pytest.importorskip("nltk", reason="the scorer needs NLTK: pip install -e '.[bench]'")
    out = tmp_path / "module-run.md"
    run = subprocess.run([sys.executable, "-m", "benchmarks.text2kgbench.replay", "--data", str(subset["data"]),
                          "--ontologies", ONTOLOGY, "--typing", "votes", "--out", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "typing mode of this report: **votes**" in out.read_text(encoding="utf-8")
    # run as a file it cannot import its sibling modules: it says how to run it, without a traceback
    as_file = subprocess.run([sys.executable, str(REPO / "benchmarks" / "text2kgbench" / "replay.py"), "--help"],
                             cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert as_file.returncode == 1
    assert "python -m benchmarks.text2kgbench.replay" in as_file.stderr and "Traceback" not in as_file.stderr


def test_live_main_writes_its_report_from_cached_answers(replay, subset, tmp_path, capsys, monkeypatch):
    """live.py's whole main path with every answer already cached: no model runs, both files are written.

    The cached answers are Vicuna's published triples in our answer shape, stored under the key live.py
    computes (same settings, ontology and sentence text), so this is the path a rerun takes.
    """
    from benchmarks.text2kgbench import live

    def no_model(*_args, **_kwargs):
        raise AssertionError("every answer is cached: no chat model may be created")

    monkeypatch.setattr(live, "get_chat_model", no_model)
    home = tmp_path / "home"
    settings = live.Settings.load(home=home, llm_provider="llamacpp", llamacpp_model="qwen2.5-coder-0.5b",
                                  max_entities=live.DEFAULT_MAX_ITEMS, max_relations=live.DEFAULT_MAX_ITEMS)
    cache = live.ExtractionCache(settings.cache_dir, live.model_label(settings.llm, "llamacpp"),
                                 settings.extract.max_entities, settings.extract.max_relations)
    ours, label_map = import_text2kgbench(subset["onto"])
    onto = Ontology.from_dict(ours, source=str(subset["onto"]))
    lookup = replay.relation_lookup(label_map)
    predictions = replay.scorer.load_predictions(subset["resp"])
    tests = replay.scorer.read_jsonl(subset["data"] / "dbpedia_webnlg" / "test" / f"ont_{ONTOLOGY}_test.jsonl")
    for i, rec in enumerate(tests):
        raw, _ = replay.to_raw_answer(predictions[rec["id"]], lookup, onto)
        chunk = live.sentence_chunk(ONTOLOGY, i, rec["id"], rec["sent"])
        record = {"status": "ok", "parsed": raw, "raw_responses": [json.dumps(raw)], "seconds": 1.5,
                  "output_tokens": 7}   # the shape extract_chunk stores for an answer that parsed
        cache.put(chunk.hash, onto.hash, record)

    out = tmp_path / "results" / "live.md"
    # the answers were cached for the ontology without examples: --train none with every sentence sampled
    # leaves no held-out sentence to be one
    code = live.main(["--data", str(subset["data"]), "--ontologies", "10", "--per-ontology", str(len(tests)),
                      "--home", str(home), "--out", str(out), "--train", "none"])
    assert code == 0, capsys.readouterr().err
    store = json.loads(out.with_suffix(".json").read_text(encoding="utf-8"))
    (run,) = store["runs"]
    (row,) = run["ontologies"]
    assert row["ontology"] == ONTOLOGY and row["sentences"] == len(tests)
    assert row["fresh_calls"] == 0 and row["failed"] == 0 and row["seconds"] == [1.5] * len(tests)
    assert row["relations_raw"] == sum(len(predictions[r["id"]]) for r in tests)
    assert 0 < row["relations_kept"] <= row["relations_raw"]
    text = out.read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in text and f"## {run['model']} — {run['sample']}" in text
    assert f"{len(tests)} sentences, 0 new model calls" in text
    assert "The whole pipeline" in text
    assert 0 <= row["relations_pipeline"] <= row["relations_raw"]
    assert set(row["pipeline"]["averages"]) == set(row["after"]["averages"])
    # refused triples that are gold triples are counted per reason, never more than were refused
    for refused, in_gold in (("refused_by_reason", "refused_in_gold"),
                             ("pipeline_refused_by_reason", "pipeline_refused_in_gold")):
        assert all(0 < n <= row[refused][reason] for reason, n in row[in_gold].items())
    assert "of which equal to one of the sentence's gold triples" in text
    # the same answers revalidated against the ontology with DBpedia's class hierarchy, no new call
    assert "The same answers revalidated, with no new model call" in text
    assert 0 <= row["relations_hierarchy"] <= row["relations_raw"]
    assert set(row["hierarchy"]["averages"]) == set(row["pipeline"]["averages"])


def test_live_examples_are_held_out_valid_and_about_other_subjects(replay, paths):
    """Examples for the prompt come from test sentences not sampled, pass our ontology's example
    checks, and name no subject of a sampled sentence."""
    from benchmarks.text2kgbench import live

    onto_path, gt_path, _resp = paths
    ours, label_map = import_text2kgbench(onto_path)
    ground_truth = replay.scorer.load_ground_truth(gt_path)
    tests = [r for r in replay.scorer.read_jsonl(WEBNLG / "test" / f"ont_{ONTOLOGY}_test.jsonl")
             if r["id"] in ground_truth]
    chosen = set(live.sample_ids([r["id"] for r in tests], 5))
    examples = live.pick_examples(tests, chosen, ground_truth, ours, label_map, 2)
    assert 1 <= len(examples) <= 2
    sampled = " ".join(r["sent"].lower() for r in tests if r["id"] in chosen)
    for ex in examples:
        assert ex["text"] not in {r["sent"] for r in tests if r["id"] in chosen}
        assert all(e["name"].lower() in ex["text"].lower() for e in ex["entities"])
        assert not any(r["subject"].lower() in sampled for r in ex["relations"])
    onto = Ontology.from_dict({**ours, "examples": examples})  # accepted by the ontology's own checks
    assert len(onto.examples) == len(examples)
    assert live.example_of({"sent": "nothing here"}, ground_truth[tests[0]["id"]]["triples"], ours, label_map) is None


def test_live_examples_come_from_the_benchmarks_train_sentences(replay, paths, tmp_path):
    """The vendored train sentences give every listed ontology prompt examples that pass our ontology's
    checks, each about another subject, none of them a test sentence; a broken file is a clear error."""
    from benchmarks.text2kgbench import live
    from graphrag_got.errors import GraphragGotError

    train = live.load_train_examples(live.TRAIN_EXAMPLES)
    assert ONTOLOGY in train and all(r["id"].startswith(f"ont_{ONTOLOGY}_train_") for r in train[ONTOLOGY])
    onto_path, gt_path, _resp = paths
    ours, label_map = import_text2kgbench(onto_path)
    test_sentences = {r["sent"] for r in replay.scorer.read_jsonl(WEBNLG / "test" / f"ont_{ONTOLOGY}_test.jsonl")}
    examples = live.pick_train_examples(train[ONTOLOGY], ours, label_map, 2)
    assert examples and len(examples) <= 2
    subjects = [{r["subject"] for r in ex["relations"]} for ex in examples]
    assert all(not (a & b) for i, a in enumerate(subjects) for b in subjects[i + 1:])
    assert not {ex["text"] for ex in examples} & test_sentences
    onto = Ontology.from_dict({**ours, "examples": examples})
    assert len(onto.examples) == len(examples)
    assert live.pick_train_examples(train[ONTOLOGY], ours, label_map, 0) == []

    bad = tmp_path / "train.json"
    bad.write_text('{"ontologies": {"10_comicscharacter": {"not": "a list"}}}', encoding="utf-8")
    with pytest.raises(GraphragGotError, match="expected"):
        live.load_train_examples(bad)
    with pytest.raises(GraphragGotError, match="--train none"):
        live.load_train_examples(tmp_path / "missing.json")
