"""The classify extraction strategy: candidate spans and their grammar, pairs and options, the stored
answer under a probability threshold, the cache per call and replay of a recording (no model, no
Neo4j). A scripted chat model stands in for the model where a whole run is needed: it answers the
mentions question with names of the text and every choice with recorded-looking log-probabilities,
and it counts its calls, so a test can fail on a second paid call."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.config import Settings
from graphrag_got.extract.classify.backend import read_choice
from graphrag_got.extract.classify.chunk import answer_items
from graphrag_got.extract.classify.mentions import candidate_spans, mention_grammar, read_mentions
from graphrag_got.extract.classify.pairs import candidate_pairs, options_for
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import run_extraction
from graphrag_got.ontology.model import Ontology

ONTOLOGY = {
    "name": "Guilds",
    "classes": {"Person": {"comment": "A named person."}, "Guild": {"comment": "A named guild or company."},
                "Town": {"comment": "A named town."}},
    "relations": [
        {"name": "MEMBER_OF", "domain": "Person", "range": "Guild", "comment": "A person belongs to a guild."},
        {"name": "MARRIED_TO", "domain": "Person", "range": "Person", "symmetric": True,
         "comment": "Two people are married."},
        {"name": "MENTORS", "domain": "Person", "range": "Person", "comment": "A person teaches another."},
        {"name": "BASED_IN", "domain": "Guild", "range": "Town", "comment": "A guild has its hall in a town."},
    ],
}
TEXT = ("Orla Venn joined the Lantern Guild of Tassow as an apprentice. The Lantern Guild keeps its hall in "
        "Tassow. Orla Venn later married Bram Oduya, who had taught her the trade.")


def _onto() -> Ontology:
    return Ontology.from_dict(ONTOLOGY, source="<guilds>")


class ScriptedChat(BaseChatModel):
    """Answers the two classify questions from a script: mentions as JSON, choices with log-probabilities
    (the first relation option most likely), and counts its calls."""

    mentions: list[dict[str, str]] = []
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        user = str(messages[-1].content)
        if "Which of these does the text state?" in user:
            labels = re.findall(r"^([A-Z])\. ", user, re.MULTILINE)
            weights = {lab: (3.0 if i == 0 else 0.5) for i, lab in enumerate(labels)}
            total = math.log(sum(math.exp(w) for w in weights.values()))
            text = json.dumps({"answer": labels[0], "logprobs": {k: w - total for k, w in weights.items()}})
        else:
            text = json.dumps({"mentions": self.mentions})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def _settings(tmp: Path, **kw: Any) -> Settings:
    return Settings(home=tmp / "home", out_dir=tmp / "out", extraction="classify", **kw)


def _corpus(tmp: Path) -> Path:
    folder = tmp / "corpus"
    folder.mkdir(exist_ok=True)
    (folder / "guilds.txt").write_text(TEXT + "\n", encoding="utf-8")
    return folder


MENTIONS = [{"name": "Orla Venn", "class": "Person"}, {"name": "Lantern Guild", "class": "Guild"},
            {"name": "Tassow", "class": "Town"}, {"name": "Bram Oduya", "class": "Person"}]


def test_candidate_spans_are_runs_of_the_text_and_the_grammar_compiles() -> None:
    spans = ["".join(s) for s in candidate_spans(TEXT)]
    assert "Orla Venn" in spans and "Lantern Guild of Tassow" in spans and "Bram Oduya" in spans
    assert all(s in TEXT for s in spans)
    assert "Venn joined" not in spans and "the trade" not in spans  # a lower-case word longer than three letters
    grammar = mention_grammar(candidate_spans(TEXT), ["Person", "Guild", "Town"])
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_cpp.LlamaGrammar.from_string(grammar, verbose=False)  # raises on a malformed grammar


def test_mentions_and_choices_are_read_from_either_form() -> None:
    lines = read_mentions("- Orla Venn (Person)\n- Tassow (Town)\nnot a mention\n- Orla Venn (Person)\n")
    assert lines.mentions == (("Orla Venn", "Person"), ("Tassow", "Town")) and lines.unread == ("not a mention",)
    js = read_mentions(json.dumps({"mentions": [{"name": "Tassow", "class": "Town"}, 3]}))
    assert js.mentions == (("Tassow", "Town"),) and len(js.unread) == 1
    label, probs = read_choice(json.dumps({"answer": "A", "logprobs": {"A": -2.0, "B": -0.2}}), ["A", "B"])
    assert label == "B" and probs is not None and abs(sum(probs.values()) - 1) < 1e-9  # the scores decide
    assert read_choice('{"answer": "B"}', ["A", "B"]) == ("B", None)
    assert read_choice('{"answer": "Q"}', ["A", "B"]) == (None, None)


def test_pairs_meet_within_the_window_and_offer_both_directions() -> None:
    onto = _onto()
    assert options_for(onto, "Person", "Person") == [("MARRIED_TO", True), ("MENTORS", True), ("MENTORS", False)]
    assert options_for(onto, "Town", "Guild") == [("BASED_IN", False)]
    mentions = [(m["name"], m["class"]) for m in MENTIONS]
    pairs, left = candidate_pairs(onto, mentions, ChunkText(TEXT), window=0, threshold=0.85, max_pairs=10)
    asked = {(p.first[0], p.second[0]) for p in pairs}
    # Person-Town admits no relation; Orla/Bram meet in the third sentence; Orla/Lantern Guild in the first
    assert asked == {("Orla Venn", "Lantern Guild"), ("Lantern Guild", "Tassow"), ("Orla Venn", "Bram Oduya")}
    assert left == 0 and all(p.options[-1].relation is None for p in pairs)
    assert candidate_pairs(onto, mentions, ChunkText(TEXT), window=0, threshold=0.85, max_pairs=1)[1] == 2


def test_answer_items_keep_chosen_facts_and_drop_unchosen_ones_under_the_threshold() -> None:
    parsed = {"entities": [], "classify": {}, "relations": [
        {"relation": "R", "probability": 0.4, "chosen": True}, {"relation": "S", "probability": 0.4, "chosen": False},
        {"relation": "T", "probability": 0.7, "chosen": False}]}
    assert [r["relation"] for r in answer_items(parsed, 0.5)["relations"]] == ["R", "T"]
    assert [r["relation"] for r in answer_items(parsed, 0.3)["relations"]] == ["R", "S", "T"]
    assert answer_items({"entities": [], "relations": []}, 0.5) == {"entities": [], "relations": []}


def test_a_classify_run_is_cached_per_call_revalidated_and_replayed(tmp_path: Path) -> None:
    onto, corpus = _onto(), _corpus(tmp_path)
    chat = ScriptedChat(mentions=MENTIONS + [{"name": "Nowhere Town", "class": "Town"}])
    settings = _settings(tmp_path)
    first = run_extraction(settings.extract, onto, corpus, chat=chat, export_replay=tmp_path / "replay.json", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    asked = chat.calls
    # one mentions question, one choice per pair within one sentence of each other (the default window):
    # Orla/Lantern Guild, Lantern Guild/Tassow, Lantern Guild/Bram (next sentence), Orla/Bram
    assert first.llm_calls == asked == 1 + 4
    ext = Extraction.read(first.out_path)
    assert ext.prompt_version.startswith("classify")
    facts = {(r.subject, r.relation, r.object) for r in ext.relations}
    assert ("Orla Venn", "MEMBER_OF", "Lantern Guild") in facts and ("Lantern Guild", "BASED_IN", "Tassow") in facts
    for rel in ext.relations:
        (score,) = rel.scores.values()
        assert 0 <= score.probability <= 1 and score.runner_up and 0 <= (score.runner_up_probability or 0) <= 1
    # the name the text does not contain is refused by the evidence check, as for the generative strategy
    assert any(r.reason.value == "not_in_text" and r.entity_name == "Nowhere Town" for r in ext.rejections)
    # a rerun pays nothing
    again = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.llm_calls == 0 and chat.calls == asked
    # a stricter threshold refuses chosen facts as low_probability, with zero model calls
    cfg = settings.with_overrides(min_fact_probability=0.99)
    strict = run_extraction(cfg.extract, onto, corpus, chat=chat,
                            revalidate=True, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert strict.relations == 0 and strict.by_reason.get("low_probability") == first.relations + \
        first.by_reason.get("low_probability", 0)
    low = next(r for r in Extraction.read(strict.out_path).rejections if r.reason.value == "low_probability")
    assert "runner-up" in low.message and "GRAPHRAG_MIN_FACT_PROBABILITY" in low.message
    # the recording replays the same extraction in a fresh home, without the model
    cfg = Settings(home=tmp_path / "h2", out_dir=tmp_path / "o2", extraction="classify",
                   llm_provider="replay", replay_file=tmp_path / "replay.json")
    replayed = run_extraction(cfg.extract, onto, corpus, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert {(r.subject, r.relation, r.object) for r in Extraction.read(replayed.out_path).relations} == facts
    assert chat.calls == asked


def test_the_generative_strategy_is_unchanged_by_default(tmp_path: Path) -> None:
    assert Settings().extract.strategy == "auto"  # generate unless the corpus is a vault read with a small model
    data = Extraction.read(Path(__file__).parent / "data" / "got_extraction.json").to_data()
    assert all("scores" not in r for r in data["relations"])  # files without scores keep their shape


def test_one_entity_named_twice_is_not_a_pair() -> None:
    onto = _onto()
    mentions = [("Orla Venn", "Person"), ("Venn", "Person"), ("Lantern Guild", "Guild"), ("the Lantern Guild", "Guild")]
    pairs, _ = candidate_pairs(onto, mentions, ChunkText(TEXT), window=1, threshold=0.85, max_pairs=10)
    assert {(p.first[0], p.second[0]) for p in pairs} == {("Orla Venn", "Lantern Guild")}


def test_the_next_mention_line_offers_no_other_form_of_a_listed_name_and_a_repeat_ends_the_answer() -> None:
    from graphrag_got.extract.classify.mentions import next_line_grammar

    spans = candidate_spans(TEXT)
    grammar = next_line_grammar(spans, ["Person", "Guild"], ["- Lantern Guild (Guild)\n"])
    assert grammar is not None and '"Tassow"' in grammar and '"Bram"' in grammar
    assert "of Tassow" not in grammar  # "Lantern Guild of Tassow" is a longer form of a listed name
    assert next_line_grammar(spans, ["Guild"], ["- Lantern Guild (Guild)\n", "- Lantern Guild (Guild)\n"]) is None


def test_the_summary_says_what_the_classify_strategy_asked(tmp_path: Path) -> None:
    chat = ScriptedChat(mentions=MENTIONS)
    cfg = _settings(tmp_path)
    summary = run_extraction(cfg.extract, _onto(), _corpus(tmp_path), chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert "  classify: 4 mentions, 4 pairs asked (0 answered none, 0 unusable, 0 without a score)" in summary.lines()


def test_the_recorded_answers_of_the_embedded_model_replay_with_their_scores(tmp_path: Path) -> None:
    """The 1.5B model's classify answers for the first three GoT paragraphs (stripped ontology) replay
    through the whole pipeline: every fact keeps its probability and runner-up."""
    from benchmarks.extract_speed import _corpus
    from benchmarks.quality.stripped import write_stripped

    root = Path(__file__).resolve().parents[1]
    recording = root / "tests" / "data" / "recorded" / "got-first3-qwen2.5-coder-1.5b-classify-stripped.json"
    onto = Ontology.from_file(write_stripped(root / "ontology" / "got.json", tmp_path))
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", extraction="classify",
                        llm_provider="replay", replay_file=recording)
    summary = run_extraction(settings.extract, onto, _corpus(3, tmp_path), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.chunks == 3 and summary.failed_chunks == 0 and summary.relations > 0
    ext = Extraction.read(summary.out_path)
    texts = {c.id: c.text for c in ext.chunks}
    for rel in ext.relations:
        for chunk_id, score in rel.scores.items():
            assert score.probability >= 0.5 and score.runner_up  # the default threshold
            assert rel.subject in texts[chunk_id] or rel.subject in {e.name for e in ext.entities}
    assert all(r.reason.value != "not_in_text" for r in ext.rejections)  # names are spans of their chunk


def test_the_gold_mentions_diagnostic_answers_mentions_from_the_gold_and_restores_the_backend() -> None:
    """benchmarks.extract_speed's classify-gold-mentions: the mentions of the chunk the prompt holds come
    from the gold, the pair questions still go to the model's backend, and the run's backend factory is
    the original again afterwards."""
    import graphrag_got.extract.strategies as run  # the module whose backend_for the strategies call
    from benchmarks.extract_speed import _gold_mentions, _GoldMentionsBackend

    class Inner:
        scored = True

        def choose(self, system: str, user: str, labels: list[str], key: str) -> str:
            return f"chose among {len(labels)}"

    gold = {"chunks": [{"id": "c1", "text": "Ana vive en Lora."}, {"id": "c2", "text": "Otro texto."}],
            "entities": [{"name": "Ana", "type": "Persona", "chunk_ids": ["c1"]},
                         {"name": "Lora", "type": "Lugar", "chunk_ids": ["c1"]},
                         {"name": "Otro", "type": "Persona", "chunk_ids": ["c2"]}]}
    backend = _GoldMentionsBackend(Inner(), gold)
    answer = backend.mentions("sys", 'TEXT:\n"""\nAna vive en Lora.\n"""\n\nList...', [], [], "k")
    assert read_mentions(answer.raw).mentions == (("Ana", "Persona"), ("Lora", "Lugar"))
    assert backend.mentions("sys", "a text the gold does not hold", [], [], "k").raw == ""
    assert backend.choose("sys", "q", ["A", "B"], "k") == "chose among 2" and backend.scored
    original = run.backend_for
    with _gold_mentions(gold):
        assert isinstance(run.backend_for(object()), _GoldMentionsBackend)
    assert run.backend_for is original
    with _gold_mentions(None):
        assert run.backend_for is original
