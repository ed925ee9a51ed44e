"""Many chunks in flight at once: the per-chunk cache and resume stay exact, and progress stays truthful.

A thread-safe stand-in chat model counts how often each chunk is asked and how many calls overlap; the
stops (Ctrl-C, the provider going down) happen while several calls are in flight.
"""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import PrivateAttr
from rich.console import Console

from graphrag_got.commands.render import LineRenderer, _StepState, progress_bar
from graphrag_got.common.progress import ProgressEvent
from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionError
from graphrag_got.extract.progress import ExtractProgress
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.extract.cache import ExtractionCache
from graphrag_got.extract.run import run_extraction
from graphrag_got.llm.concurrency import calls_in_flight
from graphrag_got.llm.providers.openai_pool import DEFAULT_SLOTS, OpenAIPoolChatModel
from graphrag_got.llm.providers.retry import ProviderUnreachableError
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"
EMPTY = json.dumps({"entities": [], "relations": []})


class CountingChat(BaseChatModel):
    """Answers every chunk with an empty extraction after ``delay`` seconds; thread-safe; counts the asks of
    each chunk and the most calls seen at once. ``down_after``: calls after that many raise as a provider
    that stopped answering would."""

    delay: float = 0.15
    down_after: int | None = None
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)
    _asked: dict[str, int] = PrivateAttr(default_factory=dict)
    _now: int = PrivateAttr(default=0)
    _most: int = PrivateAttr(default=0)
    _started: int = PrivateAttr(default=0)
    _answered: set[str] = PrivateAttr(default_factory=set)

    @property
    def _llm_type(self) -> str:
        return "counting"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        text = str(messages[-1].content)
        with self._lock:
            self._started += 1
            down = self.down_after is not None and self._started > self.down_after
            self._asked[text] = self._asked.get(text, 0) + 1
            self._now += 1
            self._most = max(self._most, self._now)
        try:
            time.sleep(self.delay)
            if down:
                raise ProviderUnreachableError("connection refused (the stand-in server is down)", tries=2)
        finally:
            with self._lock:
                self._now -= 1
        with self._lock:
            self._answered.add(text)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=EMPTY))])

    @property
    def asks(self) -> list[int]:
        return list(self._asked.values())

    @property
    def answered(self) -> set[str]:
        return set(self._answered)

    @property
    def most_at_once(self) -> int:
        return self._most


def _corpus(tmp: Path, n: int) -> Path:
    paragraphs = [p for p in (ROOT / "corpus" / "got.txt").read_text(encoding="utf-8").split("\n\n") if p.strip()]
    path = tmp / "corpus.txt"
    path.write_text("\n\n".join(paragraphs[:n]) + "\n", encoding="utf-8")
    return path


def _settings(tmp: Path, **kw: Any) -> Settings:
    return Settings(home=tmp / "home", out_dir=tmp / "out", concurrency=4, **kw)


def _stored(settings: Settings, onto: Ontology) -> dict[str, str]:
    """chunk hash -> status of every record in the extraction cache."""
    out = {}
    for path in (settings.cache_dir / "extract").rglob("*.json"):
        rec = json.loads(path.read_text(encoding="utf-8"))
        out[rec["chunk_hash"]] = rec["status"]
    return out


def test_an_interrupted_batched_run_resumes_without_asking_any_chunk_twice(tmp_path: Path) -> None:
    onto = Ontology.from_file(GOT)
    settings = _settings(tmp_path)
    corpus = _corpus(tmp_path, 12)
    chat = CountingChat()
    fresh = 0

    def ctrl_c_after_three(event: ProgressEvent) -> None:
        nonlocal fresh
        if not event.message.startswith("asking"):
            fresh += 1
            if fresh == 3:
                raise KeyboardInterrupt  # Ctrl-C while the next calls are in flight

    with pytest.raises(ExtractionError, match="interrupted") as stopped:
        run_extraction(settings.extract, onto, corpus, chat=chat, progress=ctrl_c_after_three, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert "not asked" in str(stopped.value) and "Rerun the same command" in str(stopped.value)
    asked_first = sum(chat.asks)
    assert chat.most_at_once == 4  # the calls really overlapped
    # every call that was in flight when Ctrl-C came was waited for and its answer stored
    assert len(_stored(settings, onto)) == asked_first and asked_first < 12

    summary = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.chunks == 12 and summary.cache_hits == asked_first
    assert summary.llm_calls == 12 - asked_first
    assert sorted(chat.asks) == [1] * 12  # no chunk was asked twice over the two runs


def test_a_provider_that_goes_down_mid_run_leaves_failed_chunks_that_the_rerun_finishes(tmp_path: Path) -> None:
    onto = Ontology.from_file(GOT)
    settings = _settings(tmp_path)
    corpus = _corpus(tmp_path, 10)
    down = CountingChat(down_after=5)
    with pytest.raises(ExtractionError, match="provider down") as stopped:
        run_extraction(settings.extract, onto, corpus, chat=down, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    message = str(stopped.value)
    assert "failed when the provider stopped answering" in message and "Rerun the same command" in message
    stored = _stored(settings, onto)
    ok = {h for h, status in stored.items() if status == "ok"}
    assert len(ok) == 5 and set(stored.values()) == {"ok", "failed"}
    cache = ExtractionCache(settings.cache_dir, "custom:CountingChat", settings.extract.max_entities,
                            settings.extract.max_relations, settings.extract.answer_form)
    failed = [cache.get(h, onto.hash) for h, status in stored.items() if status == "failed"]
    assert failed and all(r is not None and r.reason == "provider" for r in failed)

    healthy = CountingChat()
    summary = run_extraction(settings.extract, onto, corpus, chat=healthy, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.cache_hits == 5 and summary.llm_calls == 5 and summary.failed_chunks == 0
    assert sorted(healthy.asks) == [1] * 5  # only the chunks without an answer were asked
    assert not set(healthy._asked) & down.answered  # never a chunk answered before the provider went down


def test_progress_counts_in_flight_and_takes_the_eta_from_the_aggregate_rate(tmp_path: Path) -> None:
    corpus = tmp_path / "equal.txt"  # ten paragraphs of one length: ten equal units of work
    corpus.write_text("\n\n".join(f"Paragraph {i:02d} " + "word " * 40 for i in range(10)) + "\n", encoding="utf-8")
    docs = read_corpus(corpus, min_chars=1, max_chars=1500)
    chunks = [c for d in docs for c in d.chunks]
    assert len(chunks) == 10 and len({len(c.text) for c in chunks}) == 1  # ten equal units of work
    now = [0.0]
    events: list[ProgressEvent] = []
    progress = ExtractProgress(docs, events.append, clock=lambda: now[0])
    progress.cached({c.id: False for c in chunks[:4]})  # cached chunks finish at once: they say nothing of the rate
    assert events[-1].done == 4 and not events[-1].own_eta and events[-1].eta_s is None
    progress.start(chunks[4:])
    for c in chunks[4:8]:
        progress.begin(c.id)
    assert events[-1].stats["in flight"] == 4 and events[-1].own_eta and events[-1].eta_s is None  # not known yet
    now[0] = 20.0
    progress.end()
    progress.asked([(chunks[4].id, False, 1)])
    last = events[-1]
    # one answer in 20 s with 4 in flight: 20 s a chunk so far, 5 chunks left
    assert last.done == 5 and last.stats["in flight"] == 3 and last.eta_s == pytest.approx(100.0)
    now[0] = 24.0
    for c in chunks[5:8]:
        progress.end()
        progress.asked([(c.id, False, 1)])
    # three more answers 4 s after the first (the slots worked in parallel): the pace since the first answer
    # (which also paid the one-off costs) is 4 s for 3 chunks, 2 left; amortized 6 s a chunk since the start
    assert events[-1].eta_s == pytest.approx(8 / 3) and events[-1].stats["s per chunk"] == 6.0
    line = LineRenderer.line(_StepState(started=0.0, first_done=4, last_emit=0.0, last=events[-1]), 24.0)
    assert line.startswith("extract: 8/10 (80%) · ETA 2.7s") and "0 in flight" in line


def test_progress_of_a_batched_run_in_a_log_that_is_not_a_terminal(tmp_path: Path) -> None:
    onto = Ontology.from_file(GOT)
    settings = _settings(tmp_path)
    run_extraction(settings.extract, onto, _corpus(tmp_path, 3), chat=CountingChat(delay=0.0), files=settings.files, chunking=settings.chunking, llm=settings.llm)  # 3 chunks cached
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    with progress_bar(console, min_interval=0.0) as progress:
        summary = run_extraction(settings.extract, onto, _corpus(tmp_path, 9), chat=CountingChat(delay=0.2), progress=progress, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.cache_hits == 3 and summary.llm_calls == 6
    assert "calls: custom, 4 call(s) in flight (GRAPHRAG_CONCURRENCY=4)" in "\n".join(summary.lines())
    lines = [ln for ln in out.getvalue().splitlines() if ln.startswith("extract:")]
    assert lines[0].startswith("extract: 3/9 (33%)")  # the cached chunks, said at once
    # while the first calls are in flight nothing is known of their rate: no ETA is made up
    waiting = [ln for ln in lines if "4 in flight" in ln and "ETA" in ln]
    assert waiting and "ETA not known yet" in waiting[0]
    answered = [ln for ln in lines if "s per chunk" in ln and "/9" in ln and "done in" not in ln]
    assert answered and all(" · ETA " in ln and "not known" not in ln for ln in answered)
    assert lines[-1].startswith("extract: 9/9 (100%) · done in") and "6 LLM calls" in lines[-1]


def test_calls_in_flight_follow_what_the_server_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pool = OpenAIPoolChatModel(model_name="m", base_urls=["http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"],
                               timeout_s=1.0)
    assert calls_in_flight(Settings(home=tmp_path).llm, pool).calls == 2 * DEFAULT_SLOTS  # no /props: 4 per server
    assert calls_in_flight(Settings(home=tmp_path, concurrency=1).llm, pool).calls == 2  # at least one per server
    assert calls_in_flight(Settings(home=tmp_path, concurrency=6).llm, pool).calls == 6
    assert calls_in_flight(Settings(home=tmp_path).llm, CountingChat()).calls == 1  # a model we do not know
    from langchain_ollama import ChatOllama

    ollama = ChatOllama(model="m", base_url="http://127.0.0.1:9")
    monkeypatch.delenv("OLLAMA_NUM_PARALLEL", raising=False)
    assert calls_in_flight(Settings(home=tmp_path).llm, ollama).calls == DEFAULT_SLOTS
    monkeypatch.setenv("OLLAMA_NUM_PARALLEL", "2")
    assert calls_in_flight(Settings(home=tmp_path).llm, ollama).calls == 2
    assert calls_in_flight(Settings(home=tmp_path, concurrency=3).llm, ollama).calls == 3
