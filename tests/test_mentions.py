"""The mentions extraction strategy (GRAPHRAG_EXTRACTION=mentions) without a model or Neo4j: batches of
short chunks, the answer of several texts read per text, the per-chunk cache (key with strategy and
prompt version), resume after a provider failure, replay of an exported run, typed relations asked
for chosen notes only (--relations-for), the auto choice, and the extraction's progress (notes done,
rate, time left) on a fake clock.

A scripted chat stands in for the model: it answers a mentions question with the names of a fixed
list that each text of the question contains (plus one name no text contains, which the validator
must refuse), and the typed-relations question with one fact; it counts its calls, so a test fails on
a call paid twice."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.common.progress import ProgressEvent
from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError, ExtractionError, LLMError
from graphrag_got.extract.classify.mentions import candidate_spans, read_mentions, read_sections, sections_schema
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.mentions_only import answer_form, plan_batches
from graphrag_got.extract.progress import ExtractProgress
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.strategy import choose_strategy, small_model
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.llm.model_size import parameters_billions
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import MENTIONS_VERSION

from test_classify import ONTOLOGY

NAMES = {"Orla Venn": "Person", "Bram Oduya": "Person", "Lantern Guild": "Guild", "Tassow": "Town",
         "Marrow Pass": "Town", "Salt Guild": "Guild"}
_BLOCK = re.compile(r'TEXT(?: (\d+))?:\n"""\n(.*?)\n"""', re.DOTALL)


class VaultChat(BaseChatModel):
    """Mentions: the listed names each text holds (JSON per text, as the schema asks) plus "Nowhere
    Town" for the first text; the typed-relations question: one MEMBER_OF fact. Counts calls."""

    calls: int = 0
    typed_calls: int = 0
    fail_after: int | None = None  # raise a provider error from this call on

    @property
    def _llm_type(self) -> str:
        return "vault-script"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise LLMError("the scripted provider is down")
        self.calls += 1
        system, user = str(messages[0].content), str(messages[-1].content)
        if not system.startswith("You read texts and list the entities"):
            self.typed_calls += 1
            text = json.dumps({"entities": [{"name": "Orla Venn", "type": "Person"},
                                            {"name": "Lantern Guild", "type": "Guild"}],
                               "relations": [{"relation": "MEMBER_OF", "subject": "Orla Venn", "subject_type": "Person",
                                              "object": "Lantern Guild", "object_type": "Guild"}]})
            return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
        blocks = _BLOCK.findall(user)
        answers = [[{"name": n, "class": c} for n, c in NAMES.items() if n in body] for _, body in blocks]
        answers[0].append({"name": "Nowhere Town", "class": "Town"})
        if len(blocks) == 1:
            text = json.dumps({"mentions": answers[0]})
        else:
            text = json.dumps({f"TEXT {k}": a for k, a in enumerate(answers, 1)})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def _onto() -> Ontology:
    return Ontology.from_dict(ONTOLOGY, source="<guilds>")


NOTES = {
    "guilds/lantern.md": "# Lantern Guild\n\nOrla Venn joined the Lantern Guild of Tassow as an apprentice.\n\n"
                         "## Hall\n\nThe Lantern Guild keeps its hall in Tassow, next to the [[salt]] warehouse.\n",
    "guilds/salt.md": "# Salt\n\nThe Salt Guild trades over Marrow Pass every spring. #trade\n",
    "people.md": "# People\n\nBram Oduya taught Orla Venn the trade in Tassow.\n\n## quiet\n\n"
                 "nothing here is named at all, only plain lower-case words of no import.\n",
}


def _vault(root: Path) -> Path:
    for rel, text in NOTES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _settings(tmp: Path, **kw: Any) -> Settings:
    return Settings(**{"home": tmp / "home", "out_dir": tmp / "out", "extraction": "mentions", **kw})


def test_short_chunks_share_a_call_up_to_the_budget() -> None:
    from graphrag_got.ingest.chunking import Chunk

    def chunk(n: int, size: int) -> Chunk:
        return Chunk(id=f"c{n}", document_id="d", index=n, start=0, end=size, text="x" * size, hash=f"h{n}")

    chunks = [chunk(1, 300), chunk(2, 500), chunk(3, 900), chunk(4, 2000), chunk(5, 100)]
    assert [[c.id for c in b] for b in plan_batches(chunks, 1200)] == [["c1", "c2"], ["c3"], ["c4"], ["c5"]]
    assert [len(b) for b in plan_batches(chunks, 0)] == [1, 1, 1, 1, 1]


def test_a_json_answer_cut_short_keeps_its_complete_items() -> None:
    # a server's JSON-schema answer, indented, cut by the token limit inside the second text's list
    cut = json.dumps({"TEXT 1": [{"name": "Orla \"Venn\"", "class": "Person"}],
                      "TEXT 2": [{"name": "Tassow", "class": "Town"}, {"name": "Brel", "class": "Town"}]},
                     indent=2)[:-40]
    with pytest.raises(ValueError):
        json.loads(cut)
    reads = read_sections(cut, 2)
    assert [r.mentions for r in reads] == [(('Orla "Venn"', "Person"),), (("Tassow", "Town"),)]
    assert reads[0].unread == () and read_sections(cut[:1], 2)[1].mentions == ()
    single = read_mentions(json.dumps({"mentions": [{"name": "Tassow", "class": "Town"}, {"name": "B"}]}, indent=2)[:-30])
    assert single.mentions == (("Tassow", "Town"),)


def test_an_answer_for_several_texts_is_read_per_text() -> None:
    lines = "## TEXT 1\n- Orla Venn (Person)\n## TEXT 2\n## TEXT 3\n- Tassow (Town)\n- Tassow (Town)\n"
    reads = read_sections(lines, 3)
    assert [r.mentions for r in reads] == [(("Orla Venn", "Person"),), (), (("Tassow", "Town"),)]
    as_json = json.dumps({"TEXT 1": [], "TEXT 2": [{"name": "Tassow", "class": "Town"}]})
    assert [r.mentions for r in read_sections(as_json, 2)] == [(), (("Tassow", "Town"),)]
    single = read_sections("- Orla Venn (Person)\n", 1)
    assert single[0].mentions == (("Orla Venn", "Person"),)
    stray = read_sections("preamble\n## TEXT 9\n- X (Person)\n## TEXT 2\n- Tassow (Town)\n", 2)
    assert stray[1].mentions == (("Tassow", "Town"),) and stray[0].unread == ("preamble", "- X (Person)")
    texts = ["Orla Venn came.", "Rain falls on Tassow."]
    schema = sections_schema([candidate_spans(t) for t in texts], ["Person", "Town"])
    assert schema["required"] == ["TEXT 1", "TEXT 2"]
    assert schema["properties"]["TEXT 2"]["items"]["properties"]["name"]["enum"] == ["Tassow", "on Tassow"]  # its own text only


def test_a_mentions_run_asks_each_batch_once_keeps_no_relation_and_is_refused_like_any(tmp_path: Path) -> None:
    vault, onto = _vault(tmp_path / "vault"), _onto()
    settings = _settings(tmp_path, mentions_batch_chars=400)
    chat = VaultChat()
    first = run_extraction(settings.extract, onto, vault, chat=chat, export_replay=tmp_path / "replay.json", files=settings.files, chunking=settings.chunking, llm=settings.llm)
    docs = read_corpus(vault, min_chars=settings.chunking.min_chars, max_chars=settings.chunking.max_chars)
    chunks = [c for d in docs for c in d.chunks]
    spanned = [c for c in chunks if candidate_spans(c.text)]
    assert len(spanned) < len(chunks)  # the lower-case section needs no call
    assert first.llm_calls == chat.calls == len(plan_batches(spanned, 400)) < len(spanned)
    ext = Extraction.read(first.out_path)
    assert ext.prompt_version == MENTIONS_VERSION and ext.relations == [] and first.relations == 0
    assert {e.name for e in ext.entities} == {"Orla Venn", "Bram Oduya", "Lantern Guild", "Tassow", "Marrow Pass",
                                              "Salt Guild"}
    assert any(r.reason.value == "not_in_text" and r.entity_name == "Nowhere Town" for r in ext.rejections)
    assert any(line.startswith("  extraction strategy: mentions") for line in first.lines())
    assert any(line.startswith("  mentions: ") and "at most" in line for line in first.lines())
    # a rerun asks nothing; another batch budget finds the same per-chunk answers
    cfg = settings.with_overrides(mentions_batch_chars=0)
    again = run_extraction(cfg.extract, onto, vault, chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert again.llm_calls == 0 and chat.calls == first.llm_calls
    # the recording replays the run in a fresh home, without the model
    cfg = Settings(home=tmp_path / "h2", out_dir=tmp_path / "o2", extraction="mentions",
                   mentions_batch_chars=400, llm_provider="replay",
                   replay_file=tmp_path / "replay.json")
    replayed = run_extraction(cfg.extract, onto, vault, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert {e.name for e in Extraction.read(replayed.out_path).entities} == {e.name for e in ext.entities}


def test_the_cache_key_holds_the_strategy_and_its_prompt_version(tmp_path: Path) -> None:
    assert answer_form() == f"mentions|{MENTIONS_VERSION}"
    vault, onto, chat = _vault(tmp_path / "vault"), _onto(), VaultChat()
    cfg = _settings(tmp_path)
    run_extraction(cfg.extract, onto, vault, chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    asked = chat.calls
    cfg = _settings(tmp_path, extraction="generate")
    generate = run_extraction(cfg.extract, onto, vault, chat=chat, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert generate.llm_calls == generate.chunks  # the generate answers are not the mentions answers
    assert chat.typed_calls == generate.chunks and chat.calls == asked + generate.chunks


def test_an_interrupted_mentions_run_resumes_where_it_stopped(tmp_path: Path) -> None:
    vault, onto = _vault(tmp_path / "vault"), _onto()
    settings = _settings(tmp_path, mentions_batch_chars=0)  # a call per chunk: the third fails
    with pytest.raises(ExtractionError, match="(?i)rerun the same command to resume"):
        run_extraction(settings.extract, onto, vault, chat=VaultChat(fail_after=2), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    rest = VaultChat()
    done = run_extraction(settings.extract, onto, vault, chat=rest, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert rest.calls == done.llm_calls and 0 < done.llm_calls and done.cache_hits >= 2
    assert run_extraction(settings.extract, onto, vault, chat=rest, files=settings.files, chunking=settings.chunking, llm=settings.llm).llm_calls == 0


def test_typed_relations_are_asked_for_the_chosen_notes_only_and_kept(tmp_path: Path) -> None:
    vault, onto = _vault(tmp_path / "vault"), _onto()
    settings = _settings(tmp_path)
    run_extraction(settings.extract, onto, vault, chat=VaultChat(), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    chat = VaultChat()
    typed = run_extraction(settings.extract, onto, vault, chat=chat, relations_for=[str(vault / "guilds" / "lantern.md")], files=settings.files, chunking=settings.chunking, llm=settings.llm)
    lantern = [c for d in read_corpus(vault, min_chars=40, max_chars=1500) if d.document.id == "guilds/lantern.md"
               for c in d.chunks]
    assert chat.calls == chat.typed_calls == len(lantern)  # nothing else is asked again
    ext = Extraction.read(typed.out_path)
    assert {(r.subject, r.relation, r.object) for r in ext.relations} == {("Orla Venn", "MEMBER_OF", "Lantern Guild")}
    assert all(c.startswith("guilds/lantern.md") for r in ext.relations for c in r.chunk_ids)
    assert "typed relations asked for" in (typed.mentions or "")
    # the same note given inside the vault, and a plain run: nothing asked, the facts stay
    for paths in (["guilds/lantern.md"], None):
        again = run_extraction(settings.extract, onto, vault, chat=chat, relations_for=paths, files=settings.files, chunking=settings.chunking, llm=settings.llm)
        assert again.llm_calls == 0 and again.relations == 1
    assert chat.calls == len(lantern)
    # a folder: its other note is asked now, once
    folder = run_extraction(settings.extract, onto, vault, chat=chat, relations_for=["guilds/"], files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert folder.llm_calls == chat.typed_calls - len(lantern) == 1
    assert run_extraction(settings.extract, onto, vault, chat=chat, relations_for=["guilds"], files=settings.files, chunking=settings.chunking, llm=settings.llm).llm_calls == 0
    # revalidation never asks, not even for a note named now
    assert run_extraction(settings.extract, onto, vault, chat=chat, relations_for=["people.md"], revalidate=True, files=settings.files, chunking=settings.chunking, llm=settings.llm).llm_calls == 0
    assert chat.typed_calls == len(lantern) + 1
    with pytest.raises(ConfigError, match="no note of .* is at 'guilds/nope.md'"):
        run_extraction(settings.extract, onto, vault, chat=chat, relations_for=["guilds/nope.md"], files=settings.files, chunking=settings.chunking, llm=settings.llm)
    with pytest.raises(ConfigError, match="the generate strategy runs"):
        cfg = settings.with_overrides(extraction="generate")
        run_extraction(cfg.extract, onto, vault, chat=chat, relations_for=["guilds"], files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)


def test_auto_picks_terms_for_a_vault_with_a_small_model(tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    text = tmp_path / "plain.txt"
    text.write_text("Orla Venn joined the Lantern Guild.\n", encoding="utf-8")
    auto = Settings()
    assert auto.extract.strategy == "auto"
    small = choose_strategy(auto.extract, vault, "llamacpp", "qwen2.5-coder-1.5b", chunking=auto.chunking)
    assert small.strategy == "terms" and "1.5B parameters <= GRAPHRAG_SMALL_MODEL_PARAMS=3" in small.reason
    assert small.lines()[0].startswith("extraction strategy: terms (key terms of each chunk found without a model")
    assert "--relations-for" in small.lines()[1]
    assert choose_strategy(auto.extract, vault, "ollama", "llama3.2:3b", chunking=auto.chunking).strategy == "terms"
    big = choose_strategy(auto.extract, vault, "ollama", "qwen2.5:7b-instruct", chunking=auto.chunking)
    assert big.strategy == "generate" and "7B parameters > GRAPHRAG_SMALL_MODEL_PARAMS=3" in big.reason
    assert choose_strategy(auto.extract, text, "llamacpp", "qwen2.5-coder-1.5b", chunking=auto.chunking).strategy == "generate"
    assert choose_strategy(auto.extract, vault, "llamacpp", "/models/my-model.gguf", chunking=auto.chunking).strategy == "terms"  # embedded CPU
    assert choose_strategy(auto.extract, vault, "custom", None, chunking=auto.chunking).strategy == "generate"
    cfg = Settings(small_model_params=0)
    assert choose_strategy(cfg.extract, vault, "llamacpp", "qwen2.5-coder-0.5b", chunking=cfg.chunking).strategy == \
        "generate"
    cfg = Settings(small_model_params=8)
    assert choose_strategy(cfg.extract, vault, "ollama", "qwen2.5:7b", chunking=cfg.chunking).strategy == "terms"
    cfg = Settings(extraction="generate")
    chosen = choose_strategy(cfg.extract, vault, "llamacpp", "qwen2.5-coder-0.5b", chunking=cfg.chunking)
    assert (chosen.strategy, chosen.reason) == ("generate", "GRAPHRAG_EXTRACTION=generate")
    assert small_model(auto.extract, "openai", None) == (False, "the openai model, whose name states no size")
    assert [parameters_billions(n) for n in ("llama3.2:3b", "Qwen2.5-Coder-0.5B-Instruct-Q4_K_M.gguf", "smollm2:360m",
                                             "mixtral:8x7b", "gpt-4o-mini")] == [3.0, 0.5, 0.36, None, None]


def test_the_build_says_first_which_strategy_runs_and_why(tmp_path: Path) -> None:
    from graphrag_got.pipeline.build import build_strategy

    vault = _vault(tmp_path / "vault")
    embedded = Settings(llm_provider="llamacpp", llamacpp_model="qwen2.5-coder-1.5b")
    choice = build_strategy(embedded, vault)
    assert choice.strategy == "terms" and "llamacpp:qwen2.5-coder-1.5b" in choice.reason
    assert build_strategy(embedded, vault, chat=VaultChat()).strategy == "generate"  # a caller's model: no size
    assert build_strategy(Settings(llm_provider="ollama", ollama_model="qwen2.5:7b-instruct"), vault).strategy == \
        "generate"


class _Clock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_the_rate_meter_leaves_out_what_is_found_done_and_the_first_unit_s_one_off_cost() -> None:
    from graphrag_got.common.progress import RateMeter

    clock = _Clock()
    meter = RateMeter(100, clock=clock)
    assert meter.eta() is None and meter.rate() is None
    meter.start()
    clock.now += 30.0  # the first unit: 10 of work, and a model loaded on first use
    meter.add(10)
    assert meter.eta() == pytest.approx(90 * 30.0 / 10)  # nothing better known yet
    clock.now += 10.0
    meter.add(20)  # 20 in 10 s since the first unit finished: 2 per second
    assert meter.eta() == pytest.approx(70 / 2.0) and meter.rate() == pytest.approx(30 / 40.0)
    clock.now += 5.0
    assert meter.eta() == pytest.approx(70 * 15.0 / 20)  # time passes, nothing done: the pace drops
    meter.add(70)
    assert meter.eta() == 0.0


def test_progress_counts_notes_and_its_eta_comes_from_the_work_asked_so_far(tmp_path: Path) -> None:
    from graphrag_got.commands.render import LineRenderer
    from graphrag_got.extract.progress import CHUNK_WORK

    vault = _vault(tmp_path / "vault")
    docs = read_corpus(vault, min_chars=40, max_chars=1500)
    chunks = {d.document.id: d.chunks for d in docs}
    events: list[ProgressEvent] = []
    clock = _Clock()
    tracker = ExtractProgress(docs, events.append, clock=clock)
    cached = chunks["guilds/salt.md"]
    tracker.cached({c.id: False for c in cached})
    assert events[-1].done == len(cached) and events[-1].stats["notes"] == "1/3" and events[-1].eta_s is None
    todo = [c for d in docs for c in d.chunks if c not in cached]
    assert len(todo) >= 3
    tracker.start(todo)
    work = [len(c.text) + CHUNK_WORK for c in todo]
    clock.now += 10.0
    tracker.step(cached=False, failed=False, calls=1, chunk_id=todo[0].id)
    ev = events[-1]
    assert ev.eta_s == pytest.approx((sum(work) - work[0]) * 10.0 / work[0])  # the first chunk's pace
    assert "rate" not in ev.stats  # no note of this run finished yet
    clock.now += 4.0
    tracker.step(cached=False, failed=False, calls=1, chunk_id=todo[1].id)
    # the pace since the first chunk finished: work[1] in 4 s
    assert events[-1].eta_s == pytest.approx((sum(work) - work[0] - work[1]) * 4.0 / work[1])
    for c in todo[2:]:
        clock.now += 4.0
        tracker.step(cached=False, failed=False, calls=1, chunk_id=c.id)
    last = events[-1]
    elapsed = 10.0 + 4.0 * (len(todo) - 1)
    assert last.finished and last.eta_s == 0.0 and last.stats["notes"] == "3/3"
    assert last.stats["rate"] == f"{2 / elapsed:.3g} notes/s"  # the two notes asked, not the cached one
    lines: list[str] = []
    renderer = LineRenderer(lines.append, clock=clock)
    renderer(ProgressEvent("extract", done=3, total=9, stats={"notes": "1/4"}))
    clock.now += 1.0
    renderer(ProgressEvent("extract", done=4, total=9, stats={"notes": "2/4", "rate": "0.5 notes/s"}, own_eta=True, eta_s=125.0))
    assert lines[-1] == "extract: 4/9 (44%) · ETA 2m05s · notes: 2/4 · rate: 0.5 notes/s"


def test_chunks_one_call_answered_count_as_one_step_of_the_pace(tmp_path: Path) -> None:
    from graphrag_got.extract.progress import CHUNK_WORK

    docs = read_corpus(_vault(tmp_path / "vault"), min_chars=40, max_chars=1500)
    todo = [c for d in docs for c in d.chunks]
    work = [len(c.text) + CHUNK_WORK for c in todo]
    events: list[ProgressEvent] = []
    clock = _Clock()
    tracker = ExtractProgress(docs, events.append, clock=clock)
    tracker.start(todo)
    clock.now += 20.0  # one call answers the first two chunks
    tracker.asked([(todo[0].id, False, 1), (todo[1].id, False, 0)])
    assert len(events) == 1 and events[-1].done == 2
    clock.now += 5.0  # the next call: todo[2] in 5 s, the pace since the first call ended
    tracker.asked([(todo[2].id, False, 1)])
    assert events[-1].eta_s == pytest.approx((sum(work) - sum(work[:3])) * 5.0 / work[2])


RECORDED = Path(__file__).parent / "data" / "recorded" / "notes3-qwen2.5-coder-0.5b-mentions.json"
RECORDED_NOTES = ("backups/restic.md", "backups/borg-backup.md", "contenedores/docker-basico.md")


def test_the_recorded_answers_of_the_embedded_model_replay_through_the_validator(tmp_path: Path) -> None:
    """Three notes of corpus/notes in chunks of at most 400 characters, the 0.5B model's mentions answers
    (several chunks per call) recorded with

        GRAPHRAG_CHUNK_MAX_CHARS=400 graphrag-got --ontology ontology/notes.json --provider llamacpp \\
            --model qwen2.5-coder-0.5b extract VAULT --strategy mentions --export-replay FILE

    replay through the pipeline: names are spans of their chunk, classes the ontology's, a name written
    again (how the model ends its list) is left out, and a rerun pays nothing."""
    import shutil

    root = Path(__file__).resolve().parents[1]
    vault = tmp_path / "vault"
    for rel in RECORDED_NOTES:
        (vault / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / "corpus" / "notes" / rel, vault / rel)
    onto = Ontology.from_file(root / "ontology" / "notes.json")
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", extraction="mentions", chunk_max_chars=400,
                        llm_provider="replay", replay_file=RECORDED)
    summary = run_extraction(settings.extract, onto, vault, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.failed_chunks == 0 and 0 < summary.llm_calls < summary.chunks  # several chunks per call
    ext = Extraction.read(summary.out_path)
    texts = {c.id: c.text for c in ext.chunks}
    assert ext.entities and ext.relations == []
    for e in ext.entities:
        assert e.type in onto.classes and any(e.name in texts[c] or any(a in texts[c] for a in e.aliases)
                                              for c in e.chunk_ids)
    assert not any(r.reason.value == "not_in_text" for r in ext.rejections)
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in (settings.cache_dir / "extract").rglob("*.json")]
    audits = [r["parsed"]["mentions"] for r in stored]
    assert max(a["texts_in_call"] for a in audits) > 1 and any(a["repeated"] for a in audits)
    for record in stored:
        names = [e["name"] for e in record["parsed"]["entities"]]
        assert len(names) == len(set(names))  # each name once per chunk
    assert run_extraction(settings.extract, onto, vault, files=settings.files, chunking=settings.chunking, llm=settings.llm).llm_calls == 0


def test_the_build_command_takes_the_strategy_and_the_notes_to_ask_relations_for() -> None:
    from graphrag_got.cli import build_parser

    args = build_parser().parse_args(["build", "vault", "--strategy", "mentions", "--relations-for", "a.md", "b/"])
    assert (args.corpus, args.strategy, args.relations_for) == ("vault", "mentions", ["a.md", "b/"])
    assert build_parser().parse_args(["build", "vault"]).relations_for == []
    assert build_parser().parse_args(["extract", "vault", "--strategy", "mentions"]).strategy == "mentions"
