"""The embedded model served by a real llama-server on loopback: start, health, parallel answers, stop,
and a crash of the server in the middle of an extraction (kill -9) that a rerun finishes.

Runs the small test model (GRAPHRAG_TEST_MODEL) with 2 slots, a tiny ontology and short passages, and
asserts on form and on what the run does with the answers, never on what the model wrote. Skipped when
llama-server is not built, except under GRAPHRAG_REQUIRE_LLM=1 (scripts/test.sh), where a missing
server is a failure unless its build was turned off (GRAPHRAG_BUILD_LLAMA_SERVER=0).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from graphrag_got.cli import main
from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionError
from graphrag_got.common.progress import ProgressEvent
from graphrag_got.extract.run import run_extraction
from graphrag_got.llm import server as srv
from graphrag_got.llm.calls import constraint_kwargs
from graphrag_got.llm.concurrency import calls_in_flight
from graphrag_got.llm.factory import get_chat_model
from graphrag_got.ontology.model import Ontology
from support import TEST_MODEL, served_settings

pytestmark = pytest.mark.llm

ONTOLOGY = {
    "name": "Guilds",
    "classes": {"Person": {"comment": "A named person."}, "Guild": {"comment": "A named guild or company."}},
    "relations": [
        {"name": "MEMBER_OF", "domain": "Person", "range": "Guild", "comment": "A person belongs to a guild."},
        {"name": "MARRIED_TO", "domain": "Person", "range": "Person", "symmetric": True,
         "comment": "Two people are married."},
    ],
}
PASSAGES = [  # 4 chunks, 2 slots: the kill typically finds one answered, one in flight, two not asked
    "Orla Venn joined the Lantern Guild as an apprentice. She married Bram Oduya in the spring.",
    "Bram Oduya was a member of the Lantern Guild for twenty years. He taught the trade to many.",
    "Tessa Marr led the Salt Company. Her husband Ivo Marr kept its books.",
    "Ivo Marr left the Salt Company after a quarrel. He joined the Lantern Guild the next year.",
]


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[Settings]:
    """Settings whose embedded model is served by llama-server (2 slots, a free port, a private home)."""
    settings = served_settings(tmp_path, llama_server_slots=2, llamacpp_n_ctx=2048, llm_max_tokens=160,
                               max_entities=3, max_relations=2, llm_retries=1, llm_backoff_s=0.2)
    try:
        yield settings
    finally:
        srv.stop(settings.files, timeout_s=10)


def _corpus(tmp: Path) -> Path:
    path = tmp / "guilds.txt"
    path.write_text("\n\n".join(PASSAGES) + "\n", encoding="utf-8")
    return path


def _onto(tmp: Path) -> Ontology:
    path = tmp / "guilds.json"
    path.write_text(json.dumps(ONTOLOGY), encoding="utf-8")
    return Ontology.from_file(path)


def test_start_health_parallel_answers_and_stop(served: Settings, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    info = srv.ensure_running(served.llm, files=served.files)
    assert info.started and info.url.startswith("http://127.0.0.1:")
    st = srv.status(served.llm, files=served.files)
    assert st.answering and st.pid == info.pid and st.slots == 2 and st.ctx_per_slot == 2048
    assert st.model and Path(st.model).name == f"{TEST_MODEL}.gguf"
    assert srv.ensure_running(served.llm, files=served.files).started is False  # the same plan: reused, not started again

    chat = get_chat_model(served.llm, files=served.files)  # the pool over our server, as extract/demo/build get it
    assert getattr(chat, "embedded", False) and calls_in_flight(served.llm, chat).calls == 2  # /props total_slots
    assert chat.count_tokens("Orla Venn joined the Lantern Guild.") > 3  # the server's own tokenizer

    schema = {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"},
                                                         "minItems": 1, "maxItems": 3}},
              "required": ["names"], "additionalProperties": False}
    system = "List the people named in the text as JSON. " + " ".join(PASSAGES)  # a shared prefix of ~150 tokens
    prefix = [SystemMessage(content=system), HumanMessage(content="")]
    assert chat.share_prefix(prefix) == 2  # evaluated in one slot, restored into the other
    busy: list[int] = []
    answers: dict[int, AIMessage] = {}

    def ask(i: int) -> None:
        messages = [SystemMessage(content=system), HumanMessage(content=PASSAGES[i])]
        answers[i] = chat.invoke(messages, max_tokens=60, **constraint_kwargs(chat, schema))

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        busy.append(srv.status(served.llm, files=served.files).slots_busy or 0)
        time.sleep(0.05)
    for t in threads:
        t.join()
    assert max(busy) == 2  # both calls were decoded at the same time, one per slot
    for message in answers.values():
        usage = message.usage_metadata or {}
        assert usage["input_tokens"] > 100 and usage["output_tokens"] > 0  # the server's own counts
        # neither slot evaluated the shared system prompt again: both found it in place
        assert message.response_metadata["prefix_reused"] > 100
        value = json.loads(str(message.content))  # constrained by json_schema: JSON of the schema's shape
        assert isinstance(value["names"], list) and 1 <= len(value["names"]) <= 3

    monkeypatch.setenv("GRAPHRAG_HOME", str(served.files.home))  # the CLI reads the environment
    monkeypatch.setenv("GRAPHRAG_LLAMA_SERVER_PORT", str(served.llm.llama_server_port))
    assert main(["llm", "status"]) == 0
    out = capsys.readouterr().out
    assert "answering" in out and "2 slot(s) x 2048 tokens" in out and f"running, pid {info.pid}" in out
    assert srv.stop(served.files) == info.pid
    after = srv.status(served.llm, files=served.files)
    assert after.pid is None and after.health == "down"
    assert not srv.pid_path(served.files).exists()


def test_a_server_killed_mid_run_leaves_failed_chunks_that_a_rerun_finishes(served: Settings, tmp_path: Path) -> None:
    corpus, onto = _corpus(tmp_path), _onto(tmp_path)
    fresh: list[str] = []
    killed: list[int] = []

    def kill_after_first_answer(event: ProgressEvent) -> None:
        if event.message.startswith("asking") or event.done == 0:
            return
        fresh.append(event.message)
        if len(fresh) == 1:
            pid = srv.status(served.llm, files=served.files).pid
            assert pid is not None
            os.kill(pid, signal.SIGKILL)  # the server dies with calls in flight
            killed.append(pid)

    with pytest.raises(ExtractionError, match="provider down") as stopped:
        run_extraction(served.extract, onto, corpus, progress=kill_after_first_answer, files=served.files, chunking=served.chunking, llm=served.llm)
    assert killed and "failed when the provider stopped answering" in str(stopped.value)
    records = [json.loads(p.read_text(encoding="utf-8")) for p in (served.cache_dir / "extract").rglob("*.json")]
    done_first = {r["chunk_id"] for r in records if r["status"] == "ok"}
    failed_first = {r["chunk_id"] for r in records if r.get("reason") == "provider"}
    assert done_first and failed_first and not done_first & failed_first

    asked_again: list[str] = []

    def note_asks(event: ProgressEvent) -> None:
        if event.message.startswith("asking "):
            asked_again.append(event.message.removeprefix("asking "))

    summary = run_extraction(served.extract, onto, corpus, progress=note_asks, files=served.files, chunking=served.chunking, llm=served.llm)  # starts the server again on demand
    assert summary.chunks == len(PASSAGES) and summary.cache_hits == len(done_first)
    # the rerun asked every chunk without an answer (the failed ones first among them), none answered before
    assert failed_first <= set(asked_again) and set(asked_again).isdisjoint(done_first)
    assert len(asked_again) == len(PASSAGES) - len(done_first)
    assert "served by llama-server" in "\n".join(summary.lines())
    assert srv.status(served.llm, files=served.files).pid is None  # the rerun started the server, so it stopped it at its end
