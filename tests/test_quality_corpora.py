"""The quality ladder over several gold corpora: the English observatory corpus (its ontology, its
hand-curated gold, its recorded answers) and the ladder's per-corpus runs and results files.
No model, no Neo4j: the rungs replay recorded answers."""

from __future__ import annotations

import importlib.util
import json
from itertools import combinations
from types import ModuleType

import pytest

from benchmarks.quality import ladder
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.cli import main as cli_main
from graphrag_got.errors import CorpusError, GraphragGotError
from graphrag_got.extract.extraction import FORMAT, Extraction
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology

SPEC = ladder.OBSERVATORY
FOLDER = SPEC.gold.parent


def _load_make_gold() -> ModuleType:
    spec = importlib.util.spec_from_file_location("observatory_make_gold", FOLDER / "make_gold.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def make_gold() -> ModuleType:
    return _load_make_gold()


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(SPEC.ontology)


@pytest.fixture(scope="module")
def gold() -> Extraction:
    return Extraction.read(SPEC.gold)


# ---------------------------------------------------------------------------- the corpus and its ontology
def test_the_corpora_are_registered_got_first_each_with_its_own_files():
    assert ladder.CORPORA[0] is ladder.GOT
    assert (ladder.GOT.corpus, ladder.GOT.ontology, ladder.GOT.gold, ladder.GOT.replay) == (
        ladder.CORPUS, ladder.ONTOLOGY, ladder.GOLD, ladder.REPLAY)
    assert SPEC in ladder.CORPORA
    assert len({c.name for c in ladder.CORPORA}) == len(ladder.CORPORA)
    for c in ladder.CORPORA:  # a corpus may wait for its recording (the ladder skips it and says how to make it)
        assert [what for what, _ in c.missing()] in ([], ["recorded answers"]), c.name
    assert {c.name for c in ladder.CORPORA if c.stripped} >= {"got-stripped", "observatory-stripped"}
    assert ladder.GOT_CLASSIFY.settings == {"extraction": "classify"}


def test_a_stripped_ontology_has_no_examples_and_no_cues(tmp_path):
    from benchmarks.quality.stripped import write_stripped

    stripped = Ontology.from_file(write_stripped(ladder.ONTOLOGY, tmp_path))
    given = Ontology.from_file(ladder.ONTOLOGY)
    assert given.examples and any(r.all_cues for r in given.relations)
    assert not stripped.examples and not any(r.all_cues for r in stripped.relations)
    assert [(r.name, r.domain, r.range, r.comment) for r in stripped.relations] == \
        [(r.name, r.domain, r.range, r.comment) for r in given.relations]


def test_ontology_passes_the_cli_check(capsys):
    assert cli_main(["ontology", "check", str(SPEC.ontology)]) == 0
    assert "valid ontology" in capsys.readouterr().out


def test_ontology_has_the_shape_the_benchmark_needs(onto):
    assert 4 <= len(onto.classes) <= 6 and 6 <= len(onto.relations) <= 10
    assert any(r.symmetric for r in onto.relations)
    assert onto.identity_attributes == ("year",)
    certainty = onto.relation_attributes["certainty"]
    assert certainty.kind == "enum" and not certainty.identity and "disputed" in certainty.values
    for cls in onto.classes.values():
        assert cls.comment
    for rel in onto.relations:
        assert rel.comment


def test_corpus_has_a_dozen_paragraphs_over_several_documents():
    docs = read_corpus(SPEC.corpus, min_chars=40, max_chars=1500)
    assert len(docs) >= 2 and sum(len(d.chunks) for d in docs) >= 12


# ---------------------------------------------------------------------------- the gold extraction
def test_checked_in_gold_equals_regenerated(make_gold, tmp_path):
    ext = make_gold.build()
    assert ext.to_data() == json.loads(SPEC.gold.read_text(encoding="utf-8"))
    written = ext.write(tmp_path / "gold.json").read_text(encoding="utf-8")
    assert written == SPEC.gold.read_text(encoding="utf-8") == make_gold.render(ext)
    assert make_gold.main(["--check"]) == 0


def test_check_reports_a_stale_file(make_gold, tmp_path, capsys):
    stale = tmp_path / "gold.json"
    stale.write_text("{}", encoding="utf-8")
    assert make_gold.main(["--check", "--out", str(stale)]) == 1
    assert "stale" in capsys.readouterr().err


def test_gold_is_the_extraction_of_this_corpus(gold, onto):
    assert gold.format == FORMAT and gold.ontology.hash == onto.hash
    docs = read_corpus(SPEC.corpus, min_chars=40, max_chars=1500)
    assert [c.id for c in gold.chunks] == [c.id for d in docs for c in d.chunks]
    assert [d.id for d in gold.documents] == [d.document.id for d in docs]
    assert gold.counts.entities == len(gold.entities) and gold.counts.relations == len(gold.relations)
    assert gold.consistency_problems() == []
    assert {r.relation for r in gold.relations} == {r.name for r in onto.relations}  # every relation is used


def test_gold_uses_both_relation_attributes(gold):
    assert any(r.attributes.get("certainty") == "disputed" for r in gold.relations)
    assert any("year" in r.attributes for r in gold.relations)
    # one fact type with two years between the same ends would be two facts; here: one director, two posts
    directs = [(r.subject, r.object) for r in gold.relations if r.relation == "DIRECTS"]
    assert len(directs) == len(set(directs))


def test_two_entities_named_together_without_a_stated_relation_stay_unrelated(gold):
    """The corpus names some pairs side by side and states no relation between them: a prediction of
    one is an invented fact. Each pair must meet in one paragraph and have no gold relation."""
    by_name = {e.name: e for e in gold.entities}
    related = {frozenset((r.subject_key, r.object_key)) for r in gold.relations}
    traps = [("Sefa Anand", "Piet Rowan", "Rowan"), ("Corran Institute for Celestial Physics",
                                                    "University of Corran", "University of Corran"),
             ("Mount Halde", "Vellmar", "Vellmar"), ("Piet Rowan", "Halde Mountain Observatory", "Observatory")]
    for a, b, b_mention in traps:
        assert frozenset((by_name[a].key, by_name[b].key)) not in related, (a, b)
        shared = set(by_name[a].chunk_ids) & set(by_name[b].chunk_ids)
        assert shared, f"{a} and {b} never meet in one paragraph"
        text = {c.id: c.text for c in gold.chunks}
        assert any(b_mention in text[cid] for cid in shared)


def test_some_entities_are_named_by_an_alias_in_some_paragraph(gold):
    """Aliases are used naturally: a surname or "the Institute" where the full name was given before."""
    text = {c.id: c.text for c in gold.chunks}
    aliased = [e.name for e in gold.entities
               if any(e.name.casefold() not in text[cid].casefold() for cid in e.chunk_ids)]
    assert {"Ingrid Halvorsen", "Corran Institute for Celestial Physics", "Northern Science Trust"} <= set(aliased)
    # the gold lists those mentions as aliases, each found in one of the entity's paragraphs
    for e in gold.entities:
        assert (e.name in aliased) == bool(e.aliases), e.name
        for alias in e.aliases:
            assert any(alias.casefold() in text[cid].casefold() for cid in e.chunk_ids), (e.name, alias)


def test_a_fact_the_ontology_refuses_stops_the_generator_with_its_place(make_gold, monkeypatch):
    facts = json.loads(json.dumps(make_gold.GOLD["history.txt"][0]))  # a deep copy, lists instead of tuples
    facts["relations"].append(["Vellmar", "WORKS_AT", "Ingrid Halvorsen"])
    monkeypatch.setitem(make_gold.GOLD, "history.txt", {**make_gold.GOLD["history.txt"], 0: facts})
    with pytest.raises(ValueError, match=r"history\.txt paragraph 0: .*WORKS_AT.* refused"):
        make_gold.build()


def test_a_mention_missing_from_its_paragraph_stops_the_generator(make_gold, monkeypatch):
    facts = {"entities": [("Person", "Mara Quill", {})], "relations": []}
    monkeypatch.setitem(make_gold.GOLD, "history.txt", {**make_gold.GOLD["history.txt"], 0: facts})
    with pytest.raises(ValueError, match=r"history\.txt paragraph 0: 'Mara Quill'"):
        make_gold.build()


# ---------------------------------------------------------------------------- the ladder on this corpus
@pytest.fixture(scope="module")
def first_rung(tmp_path_factory, onto) -> ladder.RungResult:
    gold = json.loads(SPEC.gold.read_text(encoding="utf-8"))
    return ladder.run_rung(ladder.RUNGS[0], tmp_path_factory.mktemp("observatory-rung0"), ontology=onto,
                           gold=gold, replay=SPEC.replay, corpus=SPEC.corpus)


def test_recorded_answers_cover_every_chunk_and_name_their_model(gold):
    replay = json.loads(SPEC.replay.read_text(encoding="utf-8"))
    assert ladder.recorded_model(SPEC.replay) == replay["model"] and "qwen2.5-coder" in replay["model"]
    answers = {r["chunk_hash"] for r in replay["responses"] if not r["chunk_hash"].startswith("verify:")}
    assert answers == {c.hash for c in gold.chunks}
    assert ladder.has_verdicts(SPEC.replay)  # verification verdicts too, so the +verification rung replays


def test_first_rung_on_the_observatory_corpus_scores_ratios_and_the_extraction_counts(first_rung, gold):
    counts = first_rung.extraction_counts
    assert first_rung.llm_calls == len(gold.chunks)  # every chunk answered from the recording
    assert first_rung.kept == counts["relations"] and first_rung.refused == counts["rejected_relations"]
    assert first_rung.entities == counts["entities"]
    for mode in first_rung.score.modes:
        assert mode.entities.predicted == counts["entities"] and mode.relations.predicted == counts["relations"]
        assert mode.entities.gold == len(gold.entities) and mode.relations.gold == len(gold.relations)
        assert sum(p.predicted for p in mode.by_relation.values()) == counts["relations"]
        for prf in (mode.entities, mode.relations, *mode.by_relation.values()):
            assert 0.0 <= prf.precision <= 1.0 and 0.0 <= prf.recall <= 1.0 and 0.0 <= prf.f1 <= 1.0
            assert prf.correct <= prf.predicted and prf.found <= prf.gold
    ex, tol = first_rung.score.exact, first_rung.score.tolerant
    assert 0 < ex.entities.correct and tol.entities.correct >= ex.entities.correct
    assert tol.relations.correct >= ex.relations.correct


def test_corpus_results_name_the_corpus_and_its_model(first_rung):
    cr = ladder.CorpusResults(corpus=SPEC, results=[first_rung], model="llamacpp:some-model")
    md = ladder.corpus_markdown(cr)
    assert md.startswith(f"# Extraction quality on {SPEC.title}")
    assert "`llamacpp:some-model`" in md and "data/observatory/corpus" in md
    assert md.count(f"| {first_rung.rung} ") == 2
    doc = ladder.corpus_doc(cr)
    assert doc["corpus"] == "observatory" and doc["model"] == "llamacpp:some-model"
    assert doc["rungs"][0]["kept"] == first_rung.kept


# ---------------------------------------------------------------------------- the CLI over several corpora
@pytest.fixture
def one_rung(monkeypatch):
    """Only the first rung, whatever else RUNGS holds, so the CLI tests stay a few seconds long."""
    monkeypatch.setattr(ladder, "RUNGS", ladder.RUNGS[:1])


def test_cli_writes_one_table_and_results_pair_per_corpus(one_rung, tmp_path, capsys):
    assert ladder.main(["--out", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    out = captured.out
    recorded = [c for c in ladder.CORPORA if c.replay.exists()]
    for c in ladder.CORPORA:
        if c not in recorded:
            assert f"skipped corpus {c.name!r}: no recorded answers" in captured.err
    for c in recorded:
        assert f"## {c.name}: {c.title}" in out
        md = (tmp_path / f"{c.name}-recorded.md").read_text(encoding="utf-8")
        data = json.loads((tmp_path / f"{c.name}-recorded.json").read_text(encoding="utf-8"))
        assert data["corpus"] == c.name and data["gold"] in md
        # +verification follows on a corpus whose recording holds verification verdicts
        expected = [ladder.RUNGS[0].name] + ([ladder.VERIFICATION.name] if ladder.has_verdicts(c.replay) else [])
        assert [r["rung"] for r in data["rungs"]] == expected
    assert out.count("| raw (today's validation) |") == 2 * len(recorded)
    assert ladder.has_verdicts(ladder.GOT.replay)  # the current GoT recording covers verification


def test_cli_json_and_a_single_corpus(one_rung, tmp_path, capsys):
    assert ladder.main(["--corpus", "observatory", "--corpus", "observatory", "--out", str(tmp_path), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["corpus"] for d in data["corpora"]] == ["observatory"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["observatory-recorded.json", "observatory-recorded.md"]


@pytest.mark.parametrize("argv, message", [
    (["--corpus", "nope"], "unknown corpus 'nope'; the ladder knows got, observatory, got-short-chunks"),
    (["--corpus", "got", "--corpus", "observatory", "--replay", "x.json"], "pass a single --corpus NAME"),
    (["--corpus", "observatory", "--replay", "missing-replay.json"], "record the answers with `graphrag-got"),
])
def test_cli_bad_choices_give_one_clear_error(argv, message, tmp_path, capsys):
    assert ladder.main([*argv, "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_select_corpora_keeps_order_and_drops_repeats():
    assert ladder.select_corpora() == list(ladder.CORPORA)
    assert ladder.select_corpora(["observatory", "got", "observatory"]) == [SPEC, ladder.GOT]
    with pytest.raises(CorpusError, match="unknown corpus"):
        ladder.select_corpora(["GOT"])


def test_with_paths_replaces_only_the_files_given(tmp_path):
    replaced = SPEC.with_paths(replay=tmp_path / "r.json", gold=None)
    assert replaced.replay == tmp_path / "r.json" and replaced.gold == SPEC.gold and replaced.name == SPEC.name
    assert replaced.missing() == [("recorded answers", tmp_path / "r.json")]


def test_entity_names_are_unique_per_class_once_normalized(gold):
    keys = [(e.type, normalize_name(e.name)) for e in gold.entities]
    assert len(keys) == len(set(keys))
    # and no two gold entities of one class are one another's surname (aliases were folded by hand)
    for a, b in combinations(gold.entities, 2):
        if a.type == b.type == "Person":
            assert a.key.split()[-1] != b.key.split()[-1], (a.name, b.name)


def test_a_corpus_variant_runs_every_rung_with_its_own_settings(tmp_path):
    """got-short-chunks: the GoT files, the answers recorded for 300-character chunks; its rungs must
    cut the corpus the same way, or the recording has no answer for the chunks."""
    spec = ladder.GOT_SHORT_CHUNKS
    assert (spec.corpus, spec.gold, spec.ontology) == (ladder.GOT.corpus, ladder.GOT.gold, ladder.GOT.ontology)
    assert spec.settings == {"chunk_max_chars": 300} and spec.replay != ladder.GOT.replay
    onto = Ontology.from_file(spec.ontology)
    gold = json.loads(spec.gold.read_text(encoding="utf-8"))
    result = ladder.run_rung(ladder.RUNGS[0], tmp_path / "rung", ontology=onto, gold=gold, replay=spec.replay,
                             corpus=spec.corpus, settings=spec.settings)
    recorded = json.loads(spec.replay.read_text(encoding="utf-8"))["responses"]
    assert result.llm_calls == len(recorded) == result.extraction_counts["chunks"] > len(gold["chunks"])
    with pytest.raises(GraphragGotError):  # paragraph chunks: the recording has no answer for them
        ladder.run_rung(ladder.RUNGS[0], tmp_path / "plain", ontology=onto, gold=gold, replay=spec.replay,
                        corpus=spec.corpus)
    cr = ladder.CorpusResults(corpus=spec, results=[result], model="m")
    assert "- settings of every rung: `chunk_max_chars=300`" in ladder.corpus_markdown(cr)
    assert ladder.corpus_doc(cr)["settings"] == {"chunk_max_chars": 300}
