"""Corrected passages (issue 50): the store beside the ontology, the editable file, `examples
suggest/add/list/remove/export`, and `eval`, leave-one-out, scored like the benchmark scorer.

The model is the recorded 1.5B answers (`--provider replay`): no model runs, no Neo4j."""

from __future__ import annotations

import json
import re
import shutil
import sys
from pathlib import Path

import pytest

from benchmarks.quality.reading import read_extraction_file
from benchmarks.quality.score import main as score_main
from benchmarks.quality.score import score as bench_score
from graphrag_got.cli import main
from graphrag_got.errors import OntologyError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.ontology.example_store import read_store, store_path
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import extraction_system_prompt
from graphrag_got.teach.draft import draft_example, example_text, read_example_text
from graphrag_got.teach.evaluate import gold_of
from graphrag_got.teach.store import save_example
from graphrag_got.teach.suggest import suggest_passages

ROOT = Path(__file__).resolve().parent.parent
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
REPLAY = ROOT / "tests" / "data" / "recorded" / "got-qwen2.5-coder-1.5b.json"
CHUNK = "got.txt:3242821a7cbe"  # the Battle of the Bastards paragraph


@pytest.fixture()
def work(tmp_path: Path) -> dict[str, Path]:
    onto = tmp_path / "onto" / "got.json"
    onto.parent.mkdir()
    shutil.copy(ROOT / "ontology" / "got.json", onto)
    return {"onto": onto, "out": tmp_path / "out", "home": tmp_path / "home", "tmp": tmp_path}


def cli(work: dict[str, Path], *args: str) -> int:
    return main(["--ontology", str(work["onto"]), "--out", str(work["out"]), "--home", str(work["home"]),
                 "--provider", "replay", "--replay-file", str(REPLAY), *args])


def extract(work: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> int:
    """Extract the GoT corpus; the model calls it made."""
    assert cli(work, "extract", str(ROOT / "corpus" / "got.txt")) == 0
    seen = capsys.readouterr()
    found = re.search(r"LLM calls (\d+) · cached (\d+)", seen.out + seen.err)
    assert found, seen.out
    return int(found[1])


def test_a_draft_reads_back_as_the_same_example_and_names_what_it_leaves_out() -> None:
    gold = Extraction.read(GOLD)
    onto = Ontology.from_file(ROOT / "ontology" / "got.json", stored_examples=False)
    for chunk in gold.chunks:
        draft = draft_example(gold, chunk.id)
        text = example_text(draft.example, draft.left_out)
        assert text.startswith(f"# PASSAGE {chunk.id}")
        back = read_example_text(text, chunk.text, onto, chunk_id=chunk.id)
        assert back is not None
        assert {e.model_dump_json() for e in back.entities} == {e.model_dump_json() for e in draft.example.entities}
        assert back.relations == draft.example.relations
    # an entity the passage never names is said, not silently dropped
    assert any("Tommen Baratheon" in x for x in draft_example(gold, "got.txt:4ba6d1c21231").left_out)


def test_an_unreadable_line_is_refused_with_its_line_number() -> None:
    onto = Ontology.from_file(ROOT / "ontology" / "got.json", stored_examples=False)
    with pytest.raises(OntologyError) as err:
        read_example_text("# comment\nJon Snow (Personaje) -LEAL_A-> Sansa Stark (Personaje)\nnot a line\n",
                          "Jon Snow y Sansa Stark.", onto)
    assert err.value.problems[0][0] == "line 3"
    assert read_example_text("# only comments\n\n", "x", onto) is None


def test_stored_examples_reach_the_prompt_and_the_hash_and_a_wrong_one_is_refused(work: dict[str, Path]) -> None:
    gold = Extraction.read(GOLD)
    before = Ontology.from_file(work["onto"])
    example = draft_example(gold, CHUNK).example
    save_example(work["onto"], example)
    after = Ontology.from_file(work["onto"])
    assert after.hash != before.hash and len(after.examples) == len(before.examples) + 1
    assert example.text.strip() in extraction_system_prompt(after)
    assert Ontology.from_file(work["onto"], stored_examples=False).hash == before.hash
    bad = example.model_copy(update={"id": "ex-bad", "text": "Nadie aparece aqui."})
    with pytest.raises(OntologyError) as err:
        save_example(work["onto"], bad)
    assert any("does not occur" in msg for _, msg in err.value.problems)
    assert [e.id for e in read_store(store_path(work["onto"])).examples] == [example.id]  # nothing written


def test_suggest_covers_the_audit_and_skips_corrected_and_long_passages() -> None:
    x = Extraction.read(GOLD)
    picks = suggest_passages(x, 3)
    assert len({p.chunk_id for p in picks}) == 3
    assert picks[0].score >= picks[1].score >= picks[2].score
    taught = [f for p in picks for f in p.teaches]
    assert len(taught) == len(set(taught))  # each pick teaches something the earlier ones do not
    assert picks[0].chunk_id not in {p.chunk_id for p in suggest_passages(x, 3, exclude={picks[0].chunk_id})}
    assert suggest_passages(x, 3, max_chars=10) == []


def test_add_through_an_editor_then_extract_asks_again_and_remove_returns_to_the_cache(
        work: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    first = extract(work, capsys)
    assert first == 16
    assert cli(work, "examples", "suggest", "-n", "2") == 0
    assert "got.txt:" in capsys.readouterr().out
    # the "editor" deletes the last fact line and writes one more fact, as a user would
    editor = work["tmp"] / "editor.py"
    editor.write_text("import sys\np = sys.argv[1]\nlines = open(p, encoding='utf-8').read().splitlines()\n"
                      "facts = [i for i, l in enumerate(lines) if '->' in l]\ndel lines[facts[-1]]\n"
                      "lines.append('Ramsay Bolton (Personaje) -LEAL_A-> Casa Bolton (CasaNoble)')\n"
                      "open(p, 'w', encoding='utf-8').write('\\n'.join(lines) + '\\n')\n", encoding="utf-8")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    assert cli(work, "examples", "add", CHUNK) == 0
    assert "stored example" in capsys.readouterr().out
    stored = read_store(store_path(work["onto"])).examples
    assert len(stored) == 1 and stored[0].chunk_id == CHUNK
    assert any(r.subject == "Ramsay Bolton" and r.relation == "LEAL_A" for r in stored[0].relations)
    assert extract(work, capsys) == 16  # a new example: every chunk is asked again
    assert cli(work, "examples", "list") == 0 and stored[0].id in capsys.readouterr().out
    assert cli(work, "examples", "export", "-o", str(work["tmp"] / "ex.json")) == 0
    exported = json.loads((work["tmp"] / "ex.json").read_text(encoding="utf-8"))
    assert exported["ejemplos"][0]["texto"] == stored[0].text
    assert cli(work, "examples", "remove", stored[0].id) == 0
    assert extract(work, capsys) == 0  # removed: the earlier answers come back with no call
    assert cli(work, "examples", "remove", "ex-none") == 1
    assert "no stored example" in capsys.readouterr().err


def test_a_wrong_correction_is_located_by_line_and_nothing_is_stored(
        work: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    extract(work, capsys)
    draft = work["tmp"] / "draft.txt"
    assert cli(work, "examples", "add", CHUNK, "--draft", str(draft)) == 0
    text = draft.read_text(encoding="utf-8") + "Fantasma (Personaje) -LEAL_A-> Jon Snow (Personaje)\n"
    draft.write_text(text, encoding="utf-8")
    capsys.readouterr()
    assert cli(work, "examples", "add", CHUNK, "--file", str(draft)) == 1
    err = capsys.readouterr().err
    line = len(text.splitlines())
    assert f"line {line}: 'Fantasma' does not occur" in err and "--file" in err
    assert not store_path(work["onto"]).exists()


def test_eval_equals_the_benchmark_scorer_on_the_same_passages(
        work: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    extract(work, capsys)
    gold = Extraction.read(GOLD)
    for chunk_id in (CHUNK, "got.txt:11cd044a8126"):
        save_example(work["onto"], draft_example(gold, chunk_id).example)
    assert cli(work, "eval", "--dry-run") == 0
    assert "2 corrected passage(s)" in capsys.readouterr().out
    report = work["tmp"] / "eval.json"
    assert cli(work, "eval", "--compare", "GRAPHRAG_ANSWER_FORM=compact", "--json", str(report)) == 0
    out = capsys.readouterr().out
    assert "| relations P / R / F1 (tolerant) |" in out and "B (GRAPHRAG_ANSWER_FORM=compact)" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    onto = Ontology.from_file(work["onto"], stored_examples=False)
    stored = {e.id: e for e in read_store(store_path(work["onto"])).examples}
    for result in data["results"]:
        sums = {"predicted": 0, "gold": 0, "correct": 0, "found": 0}
        for passage in result["passages"]:
            gold_file = work["tmp"] / f"gold-{passage['example_id']}.json"
            gold_file.write_text(json.dumps(gold_of(stored[passage["example_id"]])), encoding="utf-8")
            # the benchmark scorer, through its own CLI, on the passage's extraction file
            assert score_main([passage["extraction"], str(gold_file), "--ontology", str(ROOT / "ontology" / "got.json"),
                               "--json"]) == 0
            bench = json.loads(capsys.readouterr().out)
            assert bench["tolerant"] == passage["tolerant"] and bench["exact"] == passage["exact"]
            q = bench_score(read_extraction_file(passage["extraction"]), gold_of(stored[passage["example_id"]]), onto)
            for k in sums:
                sums[k] += q.tolerant.relations.to_dict()[k]
        assert {k: result["tolerant"]["relations"][k] for k in sums} == sums


def test_with_more_passages_than_a_prompt_carries_each_chunk_gets_the_nearest(work: dict[str, Path]) -> None:
    from graphrag_got.config import EmbeddingSettings, Settings
    from graphrag_got.extract.example_selection import prompt_ontologies
    from graphrag_got.ingest.chunking import read_corpus
    from graphrag_got.ontology.example_store import stored_of

    gold = Extraction.read(GOLD)
    picked = [c.id for c in gold.chunks[:4]]
    for chunk_id in picked:
        save_example(work["onto"], draft_example(gold, chunk_id).example)
    onto = Ontology.from_file(work["onto"])
    assert len(stored_of(onto)) == 4
    settings = Settings(home=work["home"], llamacpp_n_ctx=32768)  # room for all four: the ranking alone decides
    chunks = [c for d in read_corpus(ROOT / "corpus" / "got.txt", min_chars=settings.chunking.min_chars,
                                     max_chars=settings.chunking.max_chars) for c in d.chunks]
    texts = {c.id: c.text for c in gold.chunks}
    fits = settings.extract.model_copy(update={"examples_per_prompt": 4})
    every = prompt_ontologies(onto, chunks, fits, embedding=EmbeddingSettings(), llm=settings.llm, files=settings.files)
    assert all(o is onto for o in every.values())  # all four fit one prompt: one prompt for the run
    for selector in ("first", "similar"):
        extract = settings.extract.model_copy(update={"examples_per_prompt": 1, "example_selector": selector})
        chosen = prompt_ontologies(onto, chunks, extract, embedding=EmbeddingSettings(), llm=settings.llm,
                                   files=settings.files)
        sets = {c.id: tuple(e.text for e in stored_of(chosen[c.id])) for c in chunks}
        assert all(len(s) == 1 for s in sets.values())
        if selector == "first":
            assert len(set(sets.values())) == 1
        else:  # a corrected passage is nearest to itself
            by_text = {c.text: c.id for c in chunks}
            for chunk_id in picked:
                own = by_text.get(texts[chunk_id])
                if own is not None:
                    assert sets[own] == (texts[chunk_id],)
            assert len(set(sets.values())) > 1


def test_a_run_with_per_chunk_examples_keys_each_answer_by_its_prompt(
        work: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    gold = Extraction.read(GOLD)
    for chunk in gold.chunks[:2]:
        save_example(work["onto"], draft_example(gold, chunk.id).example)
    monkeypatch.setenv("GRAPHRAG_EXAMPLES_PER_PROMPT", "1")
    monkeypatch.setenv("GRAPHRAG_EXAMPLE_SELECTOR", "similar")
    assert extract(work, capsys) == 16
    assert extract(work, capsys) == 0  # each chunk's answer is found under its own prompt's ontology
    monkeypatch.setenv("GRAPHRAG_EXAMPLES_PER_PROMPT", "2")
    assert extract(work, capsys) == 16  # both fit one prompt now: another prompt for every chunk


def test_a_prompt_carries_only_the_passages_that_leave_room_for_the_answer(
        work: dict[str, Path], caplog: pytest.LogCaptureFixture) -> None:
    """Three GoT passages in the full form do not fit a 4096-token call with room for a 1536-token answer:
    each chunk gets those that fit (nearest first), and the run says so."""
    from graphrag_got.config import EmbeddingSettings, Settings
    from graphrag_got.extract.example_selection import estimate_tokens, example_tokens, prompt_ontologies
    from graphrag_got.ingest.chunking import read_corpus
    from graphrag_got.ontology.example_store import stored_of, without_stored

    from benchmarks.quality.stripped import strip_ontology

    raw = json.loads(work["onto"].read_text(encoding="utf-8"))
    raw.pop("$schema", None)
    work["onto"].write_text(json.dumps(strip_ontology(raw), ensure_ascii=False), encoding="utf-8")  # as a user starts
    gold = Extraction.read(GOLD)
    for chunk in gold.chunks[:3]:
        save_example(work["onto"], draft_example(gold, chunk.id).example)
    onto = Ontology.from_file(work["onto"])
    settings = Settings(home=work["home"])
    chunks = [c for d in read_corpus(ROOT / "corpus" / "got.txt", min_chars=settings.chunking.min_chars,
                                     max_chars=settings.chunking.max_chars) for c in d.chunks]
    chosen = prompt_ontologies(onto, chunks, settings.extract, embedding=EmbeddingSettings(), llm=settings.llm,
                               files=settings.files)
    base = without_stored(onto)
    for chunk in chunks:
        carried = stored_of(chosen[chunk.id])
        used = (estimate_tokens(extraction_system_prompt(base)) + estimate_tokens(chunk.text)
                + sum(example_tokens(base, ex, "full") for ex in carried))
        assert used + settings.llm.max_tokens <= settings.llm.llamacpp_n_ctx
        assert len(carried) < 3
    assert any(stored_of(o) for o in chosen.values())  # one passage fits beside most chunks
    assert "fewer corrected passages than GRAPHRAG_EXAMPLES_PER_PROMPT" in caplog.text
    roomy = Settings(home=work["home"], llamacpp_n_ctx=16384)
    every = prompt_ontologies(onto, chunks, roomy.extract, embedding=EmbeddingSettings(), llm=roomy.llm,
                              files=roomy.files)
    assert all(o is onto for o in every.values())  # a larger context takes all three, one prompt for the run


def test_an_answer_cut_by_a_full_context_is_a_context_overflow_not_a_short_answer() -> None:
    from langchain_core.messages import AIMessage

    from graphrag_got.llm.calls import LLMContextError, _check_not_cut_by_context

    cut = AIMessage(content='{"entities": [{"type": "A"', response_metadata={"finish_reason": "length", "max_tokens": 1536},
                    usage_metadata={"input_tokens": 4023, "output_tokens": 73, "total_tokens": 4096})
    with pytest.raises(LLMContextError) as err:
        _check_not_cut_by_context(cut, cut.content, None)
    assert err.value.cut and err.value.raw_responses == [cut.content] and "73 tokens" in str(err.value)
    whole = AIMessage(content="x", response_metadata={"finish_reason": "length", "max_tokens": 100},
                      usage_metadata={"input_tokens": 10, "output_tokens": 100, "total_tokens": 110})
    _check_not_cut_by_context(whole, "x", None)  # the answer used its whole allowance: a long answer, not a cut
    stopped = AIMessage(content="x", response_metadata={"finish_reason": "stop"},
                        usage_metadata={"input_tokens": 10, "output_tokens": 5, "total_tokens": 15})
    _check_not_cut_by_context(stopped, "x", 1536)
