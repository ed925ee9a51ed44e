"""Remote providers against real servers on loopback: OpenAI-compatible pools, retries, LangChain models.

The small servers here are real HTTP servers (stdlib ``http.server`` in threads on 127.0.0.1)
answering canned OpenAI-format JSON; our client, the OpenAI SDK and LangChain run unchanged
against them. The ``llm`` tests start a real llama.cpp OpenAI-compatible server
(``python -m llama_cpp.server``) with the small test model and run one extraction through it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

from graphrag_got.cli import main
from graphrag_got.config import ENV, Settings
from graphrag_got.errors import LLMError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.llm.calls import Attempt, LLMContextError, complete_text
from graphrag_got.llm.factory import get_chat_model, model_label, resolve_provider
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.llm.usage import LLMUsage
from graphrag_got.llm.providers.retry import ProviderUnreachableError, RetryPolicy, call_with_retries, is_transient
from support import TEST_MODEL, require_embedded_model

ROOT = Path(__file__).resolve().parents[1]
ONTOLOGY = ROOT / "ontology" / "got.json"
SCHEMA = {"type": "object", "properties": {"word": {"type": "string", "enum": ["yes", "no"]}},
          "required": ["word"]}
ANSWER = {"entities": [{"type": "Personaje", "name": "Eddard Stark"}], "relations": []}


# ---------------------------------------------------------------------------- tiny OpenAI-format servers
@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    #: a streamed answer (asked with "stream": true) is sent in pieces this many characters long ...
    piece_chars: int = 4
    #: ... this many seconds apart
    piece_delay_s: float = 0.0
    #: after this many pieces the server goes silent for ``stall_s`` seconds (None: it never stalls)
    stall_after: int | None = None
    stall_s: float = 0.0


def completion(content: str | None, *, tool_args: dict[str, Any] | None = None, model: str = "tiny-model",
               prompt_tokens: int = 11, completion_tokens: int = 7) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_args is not None:
        message["tool_calls"] = [{"id": "call_1", "type": "function",
                                  "function": {"name": "answer", "arguments": json.dumps(tool_args)}}]
    return {"id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class TinyServer:
    """A real HTTP server on 127.0.0.1 whose chat completions come from ``respond(request_body)``."""

    def __init__(self, respond: Callable[[dict[str, Any]], Reply], models: list[dict[str, Any]] | None = None):
        self.respond = respond
        self.models = models if models is not None else [{"id": "tiny-model", "object": "model",
                                                           "owned_by": "me", "max_model_len": 4096}]
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _stream(self, reply: Reply) -> None:
                """A 200 completion as server-sent events, the way OpenAI-compatible servers stream it."""
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                answer = reply.body or {}
                content = ((answer.get("choices") or [{}])[0].get("message") or {}).get("content") or ""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()

                def event(payload: dict[str, Any]) -> None:
                    self.wfile.write(b"data: " + json.dumps(payload).encode() + b"\n\n")
                    self.wfile.flush()

                base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0,
                        "model": answer.get("model", "tiny-model")}
                pieces = [content[i:i + reply.piece_chars] for i in range(0, len(content), reply.piece_chars)]
                try:
                    for n, piece in enumerate(pieces):
                        if reply.stall_after is not None and n == reply.stall_after:
                            time.sleep(reply.stall_s)
                        elif reply.piece_delay_s:
                            time.sleep(reply.piece_delay_s)
                        event({**base, "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": None}]})
                    event({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
                    if answer.get("usage"):
                        event({**base, "choices": [], "usage": answer["usage"]})
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):  # the client cut the call
                    pass

            def _send(self, reply: Reply) -> None:
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                data = json.dumps(reply.body or {}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(Reply(body={"object": "list", "data": server.models}))
                else:
                    self._send(Reply(404, {"error": {"message": "not found"}}))

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                with server.lock:
                    server.requests.append(body)
                reply = server.respond(body)
                if body.get("stream") and reply.status == 200 and "choices" in (reply.body or {}):
                    self._stream(reply)
                else:
                    self._send(reply)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "TinyServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def always(content: str, **kw: Any) -> Callable[[dict[str, Any]], Reply]:
    return lambda body: Reply(body=completion(content, **kw))


def sequence(*replies: Reply) -> Callable[[dict[str, Any]], Reply]:
    """The replies in order, then the last one for every further request."""
    state = {"i": 0}
    lock = threading.Lock()

    def respond(body: dict[str, Any]) -> Reply:
        with lock:
            i = min(state["i"], len(replies) - 1)
            state["i"] += 1
        return replies[i]

    return respond


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def clean_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No setting in the environment, a cwd without `.env`, and fast retries."""
    for var in ENV.values():
        monkeypatch.delenv(var, raising=False)
    for var in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("GRAPHRAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("GRAPHRAG_LLM_BACKOFF", "0.01")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def chat_of(settings: Settings) -> Any:
    """The chat model ``settings`` configure."""
    return get_chat_model(settings.llm, files=settings.files)


def pool_settings(tmp_path: Path, *urls: str, **kw: Any) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="openai",
                    openai_base_urls=list(urls), llm_backoff_s=0.01, **kw)


def write_corpus(folder: Path, paragraphs: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n\n".join(f"Eddard Stark cabalga hacia el norte en la jornada {i}, con su guardia y sus banderas."
                       for i in range(paragraphs))
    (folder / "one.txt").write_text(text + "\n", encoding="utf-8")
    return folder


def error_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith("error:")]


# ---------------------------------------------------------------------------- settings and CLI wiring
def test_base_urls_from_the_environment_and_repeated_flags(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("GRAPHRAG_OPENAI_BASE_URLS", "http://127.0.0.1:1/v1/, http://127.0.0.1:2/v1")
    s = Settings.load()
    assert s.llm.openai_base_urls == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    assert resolve_provider(s.llm) == "openai"  # auto picks the configured pool
    from graphrag_got.cli import build_parser, settings_from_args

    args = build_parser().parse_args(["--base-url", "http://a:1/v1", "--base-url", "http://b:2/v1,http://c:3/v1",
                                      "extract", "--provider", "openai", "--model", "served-name"])
    s = settings_from_args(args)  # the flag wins over the environment; repeated and comma-separated add up
    assert s.llm.openai_base_urls == ["http://a:1/v1", "http://b:2/v1", "http://c:3/v1"]
    assert s.llm.openai_model == "served-name" and s.llm.provider == "openai"
    args = build_parser().parse_args(["--provider", "langchain", "--model", "openai:gpt-x", "doctor"])
    assert settings_from_args(args).llm.langchain_model == "openai:gpt-x"


def test_a_bad_base_url_is_one_error_line(clean_env: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["--provider", "openai", "--base-url", "localhost:8000", "doctor"]) == 1
    err = capsys.readouterr().err
    assert len(error_lines(err)) == 1 and "GRAPHRAG_OPENAI_BASE_URLS" in err and "http://" in err
    assert "Traceback" not in err


def test_the_api_key_is_secret(clean_env: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-very-secret")
    s = Settings.load()
    assert s.llm.openai_api_key is not None and s.llm.openai_api_key.get_secret_value() == "sk-very-secret"
    assert "sk-very-secret" not in repr(s.model_dump()) and "sk-very-secret" not in repr(s)
    assert s.with_overrides(concurrency=2).llm.openai_api_key.get_secret_value() == "sk-very-secret"


# ---------------------------------------------------------------------------- the pool
def test_constrained_json_with_usage_and_the_json_schema_form(tmp_path: Path):
    with TinyServer(always('{"word": "yes"}', prompt_tokens=21, completion_tokens=5)) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="tiny-model"))
        value, attempt = complete_json(chat, "Answer in JSON.", "Is the sky blue?", schema=SCHEMA)
    assert value == {"word": "yes"}
    assert attempt.raw_responses == ['{"word": "yes"}']
    assert (attempt.input_tokens, attempt.output_tokens, attempt.tokens_estimated) == (21, 5, False)
    (request,) = srv.requests
    assert request["model"] == "tiny-model" and request["temperature"] == 0
    assert request["response_format"] == {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
    assert request["max_tokens"] == 1536
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_a_server_refusing_json_schema_gets_json_object_with_the_schema(tmp_path: Path):
    """llama-cpp-python's server answers HTTP 500 naming response_format to the json_schema form."""

    def respond(body: dict[str, Any]) -> Reply:
        if body.get("response_format", {}).get("type") == "json_schema":
            return Reply(500, {"error": {"message": "1 validation error: ('body', 'response_format', 'type') "
                                                    "Input should be 'text' or 'json_object'"}})
        return Reply(body=completion('{"word": "no"}'))

    with TinyServer(respond) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m"))
        for _ in range(2):
            value, attempt = complete_json(chat, "s", "u", schema=SCHEMA)
            assert value == {"word": "no"} and attempt.transport_retries == 0
    forms = [r.get("response_format") for r in srv.requests]
    assert forms[0]["type"] == "json_schema"
    assert forms[1] == {"type": "json_object", "schema": SCHEMA}
    assert forms[2] == {"type": "json_object", "schema": SCHEMA}  # remembered: no second refusal
    assert len(forms) == 3


def test_calls_are_spread_over_the_pool(tmp_path: Path):
    with TinyServer(always("one")) as a, TinyServer(always("two")) as b:
        chat = chat_of(pool_settings(tmp_path, a.url, b.url, openai_model="m", openai_balance="round_robin"))
        answers = [complete_text(chat, "s", f"q{i}") for i in range(6)]
        assert len(a.requests) == 3 and len(b.requests) == 3
        assert sorted(answers) == ["one"] * 3 + ["two"] * 3


def test_least_busy_keeps_every_server_working_under_parallel_calls(tmp_path: Path):
    slow = lambda body: Reply(body=completion("ok"), delay_s=0.3)  # noqa: E731
    with TinyServer(slow) as a, TinyServer(slow) as b:
        chat = chat_of(pool_settings(tmp_path, a.url, b.url, openai_model="m"))
        t0 = time.monotonic()
        with ThreadPoolExecutor(max_workers=2) as pool:
            answers = list(pool.map(lambda i: complete_text(chat, "s", f"q{i}"), range(8)))
        elapsed = time.monotonic() - t0
    assert answers == ["ok"] * 8
    assert len(a.requests) + len(b.requests) == 8 and len(a.requests) >= 3 and len(b.requests) >= 3
    assert elapsed < 8 * 0.3 - 0.4  # two servers at once: clearly faster than one after the other
    assert all(s.in_flight == 0 for s in chat.pool.servers)


def test_extraction_over_a_pool_uses_both_servers(clean_env: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]):
    corpus = write_corpus(tmp_path / "corpus", 6)
    with TinyServer(always(json.dumps(ANSWER))) as a, TinyServer(always(json.dumps(ANSWER))) as b:
        monkeypatch.setenv("GRAPHRAG_CONCURRENCY", "2")
        code = main(["--provider", "openai", "--base-url", f"{a.url},{b.url}", "--ontology", str(ONTOLOGY),
                     "--out", str(tmp_path / "out"), "extract", str(corpus)])
        assert code == 0, capsys.readouterr().err
        assert len(a.requests) >= 1 and len(b.requests) >= 1 and len(a.requests) + len(b.requests) == 6
    ext = Extraction.read(tmp_path / "out" / "extraction.json")
    assert ext.llm.provider == "openai" and ext.llm.model == "openai:tiny-model"  # discovered from /models
    assert [e.name for e in ext.entities] == ["Eddard Stark"] and len(ext.entities[0].chunk_ids) == 6


# ---------------------------------------------------------------------------- streamed answers and stalls
FULL = '{"word": "yes", "why": "the sky scatters blue light more than red light"}'


def test_a_call_that_keeps_streaming_is_never_cut_however_long_it_takes(tmp_path: Path):
    """The whole answer takes ~4x the stall limit; no gap between two pieces reaches it: not cut."""
    slow = lambda body: Reply(body=completion(FULL), piece_chars=2, piece_delay_s=0.05)  # noqa: E731
    with TinyServer(slow) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m", llm_stall_timeout_s=0.4))
        attempt = Attempt()
        text = complete_text(chat, "s", "u", attempt)
    assert text == FULL and len(srv.requests) == 1 and srv.requests[0]["stream"] is True
    stats = chat.stream_stats.as_dict()
    assert stats["cut"] == 0 and stats["longest_call_s"] > 4 * 0.4 and stats["longest_gap_s"] < 0.4
    assert (attempt.input_tokens, attempt.output_tokens) == (11, 7)  # the usage chunk at the end of the stream


def _stalls_once(after: int, seconds: float) -> Callable[[dict[str, Any]], Reply]:
    """The first request stalls after ``after`` pieces; later ones answer at once."""
    return sequence(Reply(body=completion(FULL), stall_after=after, stall_s=seconds), Reply(body=completion(FULL)))


def test_a_stalled_call_resumes_from_what_it_wrote_on_a_llama_cpp_server(tmp_path: Path):
    def respond(body: dict[str, Any]) -> Reply:
        if body["messages"][-1]["role"] == "assistant":  # a resumed call: the rest of the answer only
            return Reply(body=completion(FULL[len(body["messages"][-1]["content"]):]))
        return Reply(body=completion(FULL), stall_after=5, stall_s=1.5)

    with TinyServer(respond) as srv:
        settings = pool_settings(tmp_path, srv.url, openai_model="m", llm_stall_timeout_s=0.4)
        chat = chat_of(settings)
        chat.pool.servers[0].llamacpp = True  # as /props tells of a llama.cpp server
        text = complete_text(chat, "s", "u")
    assert text == FULL
    first, second = srv.requests
    assert [m["role"] for m in first["messages"]] == ["system", "user"]
    assert [m["role"] for m in second["messages"]] == ["system", "user", "assistant"]
    assert second["messages"][-1]["content"] == FULL[:20]  # the 5 pieces of 4 characters written before the stall
    assert second["max_tokens"] == first["max_tokens"] - 5 and second.get("return_progress") is True
    stats = chat.stream_stats.as_dict()
    assert (stats["cut"], stats["resumed"], stats["pieces_kept"], stats["pieces_thrown_away"]) == (1, 1, 5, 0)


def test_a_stalled_call_elsewhere_starts_again_and_counts_what_was_thrown_away(tmp_path: Path):
    with TinyServer(_stalls_once(after=3, seconds=1.5)) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m", llm_stall_timeout_s=0.4))
        attempt = Attempt()
        assert complete_text(chat, "s", "u", attempt) == FULL
    assert [len(r["messages"]) for r in srv.requests] == [2, 2]  # not llama.cpp (no /props): asked anew
    stats = chat.stream_stats.as_dict()
    assert (stats["cut"], stats["resumed"], stats["pieces_thrown_away"]) == (1, 0, 3)
    assert attempt.transport_retries == 1


def test_extract_says_how_many_calls_stalls_cut_and_what_they_threw_away(clean_env: Path, tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        caplog: pytest.LogCaptureFixture):
    corpus = write_corpus(tmp_path / "corpus", 1)
    answer = json.dumps(ANSWER)
    replies = sequence(Reply(body=completion(answer), stall_after=4, stall_s=1.5), Reply(body=completion(answer)))
    monkeypatch.setenv("GRAPHRAG_LLM_STALL_TIMEOUT", "0.4")
    with TinyServer(replies) as srv:
        code = main(["--provider", "openai", "--base-url", srv.url, "--model", "m", "--ontology", str(ONTOLOGY),
                     "--out", str(tmp_path / "out"), "extract", str(corpus)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert ("stalls: 1 call(s) cut after no token for the stall limit (GRAPHRAG_LLM_STALL_TIMEOUT), 0 resumed "
            "from what they had written (0 piece(s) kept), 4 piece(s) thrown away") in captured.out
    assert "no token for 0.4 s from the server at " + srv.url in caplog.text  # the warning when it happened


def test_a_server_that_stalls_every_time_is_a_stall_not_unreachable(tmp_path: Path):
    stalls = lambda body: Reply(body=completion(FULL), stall_after=2, stall_s=1.0)  # noqa: E731
    with TinyServer(stalls) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m", llm_stall_timeout_s=0.3, llm_retries=1,
                                     llm_resume_cut_calls=False))
        with pytest.raises(ProviderUnreachableError) as caught:
            complete_text(chat, "s", "u")
    message = str(caught.value)
    assert f"no token for 0.3 s from the server at {srv.url} after 2 piece(s)" in message
    assert "cannot be reached" not in message and "load is" in message and "GRAPHRAG_LLM_STALL_TIMEOUT" in message


def test_a_server_that_takes_the_request_and_never_answers_is_not_called_unreachable(tmp_path: Path):
    silent = lambda body: Reply(body=completion(FULL), delay_s=1.0)  # noqa: E731  (no headers for 1 s)
    with TinyServer(silent) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m", llm_stall_timeout_s=0.3, llm_retries=0))
        with pytest.raises(ProviderUnreachableError) as caught:
            complete_text(chat, "s", "u")
    assert "no answer for" in str(caught.value) and "cannot be reached" not in str(caught.value)


# ---------------------------------------------------------------------------- retries and failures
def test_429_twice_then_success_is_retried_and_counted(tmp_path: Path):
    busy = Reply(429, {"error": {"message": "rate limited"}}, headers={"Retry-After": "0"})
    with TinyServer(sequence(busy, busy, Reply(body=completion('{"word": "yes"}')))) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m"))
        value, attempt = complete_json(chat, "s", "u", schema=SCHEMA)
    assert value == {"word": "yes"} and attempt.transport_retries == 2 and len(srv.requests) == 3
    assert attempt.raw_responses == ['{"word": "yes"}']
    usage = LLMUsage()
    usage.count(attempt, 1)
    assert (usage.llm_calls, usage.transport_retries, usage.input_tokens) == (1, 2, 11)


def test_a_retry_goes_to_the_other_server(tmp_path: Path):
    down = Reply(503, {"error": {"message": "overloaded"}})
    with TinyServer(lambda body: down) as bad, TinyServer(always("fine")) as good:
        chat = chat_of(pool_settings(tmp_path, bad.url, good.url, openai_model="m",
                                            openai_balance="round_robin"))
        attempt = Attempt()
        answers = [complete_text(chat, "s", "u", attempt) for _ in range(3)]
    assert answers == ["fine"] * 3
    assert len(bad.requests) == 1  # failed once, then set aside while it cools down
    assert attempt.transport_retries == 1


def test_always_503_is_one_clear_error(tmp_path: Path):
    with TinyServer(lambda body: Reply(503, {"error": {"message": "model loading"}})) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m", llm_retries=2))
        with pytest.raises(ProviderUnreachableError) as info:
            complete_json(chat, "s", "u", schema=SCHEMA)
    message = str(info.value)
    assert "\n" not in message and "HTTP 503" in message and srv.url in message and "rerun" in message
    assert info.value.tries == 3 and len(srv.requests) == 3


def test_extract_against_a_503_server_exits_with_one_error_line(clean_env: Path, tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str],
                                                                monkeypatch: pytest.MonkeyPatch):
    corpus = write_corpus(tmp_path / "corpus", 1)
    monkeypatch.setenv("GRAPHRAG_LLM_RETRIES", "1")
    with TinyServer(lambda body: Reply(503, {"error": {"message": "down"}})) as srv:
        code = main(["--provider", "openai", "--base-url", srv.url, "--model", "m", "--ontology", str(ONTOLOGY),
                     "--out", str(tmp_path / "out"), "extract", str(corpus)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = error_lines(err)
    assert "unreachable" in line and "HTTP 503" in line and "rerun" in line
    assert not (tmp_path / "out" / "extraction.json").exists()


def test_nothing_listening_is_unreachable(clean_env: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          monkeypatch: pytest.MonkeyPatch):
    url = f"http://127.0.0.1:{free_port()}/v1"
    chat = chat_of(pool_settings(tmp_path, url, openai_model="m", llm_retries=1))
    with pytest.raises(ProviderUnreachableError, match="cannot be reached"):
        complete_text(chat, "s", "u")
    # without a model name the pool asks /models first: that failure is one line too
    corpus = write_corpus(tmp_path / "corpus", 1)
    monkeypatch.setenv("GRAPHRAG_LLM_RETRIES", "0")
    assert main(["--provider", "openai", "--base-url", url, "--ontology", str(ONTOLOGY),
                 "--out", str(tmp_path / "out"), "extract", str(corpus)]) == 1
    err = capsys.readouterr().err
    (line,) = error_lines(err)
    assert url in line and "--model" in line and "Traceback" not in err


@pytest.mark.parametrize("status, words", [(401, "OPENAI_API_KEY"), (404, "base URL")])
def test_answers_no_retry_can_fix_fail_at_once(clean_env: Path, tmp_path: Path, status: int, words: str,
                                               capsys: pytest.CaptureFixture[str]):
    corpus = write_corpus(tmp_path / "corpus", 1)
    with TinyServer(lambda body: Reply(status, {"error": {"message": "no"}})) as srv:
        code = main(["--provider", "openai", "--base-url", srv.url, "--model", "m", "--ontology", str(ONTOLOGY),
                     "--out", str(tmp_path / "out"), "extract", str(corpus)])
        assert len(srv.requests) == 1  # not retried
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = error_lines(err)
    assert f"HTTP {status}" in line and words in line


def test_a_prompt_too_long_for_the_server_is_a_context_error(tmp_path: Path):
    message = ("This model's maximum context length is 2048 tokens. However, you requested 3035 tokens. "
               "Please reduce the length of the messages or completion.")
    with TinyServer(lambda body: Reply(400, {"error": {"message": message, "code": "context_length_exceeded"}})) as srv:
        chat = chat_of(pool_settings(tmp_path, srv.url, openai_model="m"))
        with pytest.raises(LLMContextError):
            complete_json(chat, "s", "u", schema=SCHEMA)
        assert len(srv.requests) == 1


def test_call_with_retries_classifies_errors():
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 3:
            raise ConnectionResetError("peer went away")
        return "ok"

    waits: list[float] = []
    seen: list[BaseException] = []
    result = call_with_retries(flaky, RetryPolicy(retries=3, backoff_s=0.5), what="x",
                               on_retry=lambda exc, wait: seen.append(exc), sleep=waits.append)
    assert result == "ok" and waits == [0.5, 1.0] and len(seen) == 2  # exponential backoff
    assert not is_transient(ValueError("bad request body")) and is_transient(TimeoutError())

    def broken() -> str:
        raise KeyError("not transient")

    with pytest.raises(KeyError):
        call_with_retries(broken, RetryPolicy(retries=3, backoff_s=0), what="x", sleep=waits.append)
    assert waits == [0.5, 1.0]  # no wait for an error no retry can fix


# ---------------------------------------------------------------------------- doctor
def test_doctor_shows_the_pool_the_model_the_context_and_a_latency(clean_env: Path,
                                                                   capsys: pytest.CaptureFixture[str]):
    with TinyServer(always("ready", prompt_tokens=9, completion_tokens=1)) as srv:
        main(["--provider", "openai", "--base-url", srv.url, "doctor"])
    out = capsys.readouterr().out
    assert f"[ok  ] openai server: {srv.url} answers; models: tiny-model; context 4096 tokens" in out
    assert "openai -> openai (openai:tiny-model)" in out
    answers = next(ln for ln in out.splitlines() if "llm answers" in ln)
    assert answers.startswith("[ok  ]") and "'ready' in " in answers and "9 tokens in, 1 out" in answers


def test_doctor_reports_a_server_that_does_not_answer(clean_env: Path, capsys: pytest.CaptureFixture[str]):
    url = f"http://127.0.0.1:{free_port()}/v1"
    assert main(["--provider", "openai", "--base-url", url, "--model", "m", "doctor"]) == 1
    out = capsys.readouterr().out
    assert f"[FAIL] openai server: {url} does not answer" in out
    assert not any("llm answers" in ln for ln in out.splitlines())  # no call to a server known down


# ---------------------------------------------------------------------------- the langchain provider
def langchain_settings(tmp_path: Path, url: str, **kw: Any) -> Settings:
    return Settings(home=tmp_path / "home", llm_provider="langchain", langchain_model="openai:tiny-model",
                    openai_base_urls=[url], llm_backoff_s=0.01, **kw)


@pytest.fixture()
def openai_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")  # ChatOpenAI refuses to start without one
    for var in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
        monkeypatch.delenv(var, raising=False)


def test_langchain_model_uses_json_schema_structured_output(tmp_path: Path, openai_key: None):
    with TinyServer(always('{"word": "yes"}', prompt_tokens=30, completion_tokens=4)) as srv:
        chat = chat_of(langchain_settings(tmp_path, srv.url))
        assert type(chat).__name__ == "ChatOpenAI"
        value, attempt = complete_json(chat, "Answer in JSON.", "Is the sky blue?", schema=SCHEMA)
    assert value == {"word": "yes"}
    assert attempt.raw_responses == ['{"word": "yes"}']  # the JSON text of the structured result
    assert (attempt.input_tokens, attempt.output_tokens, attempt.tokens_estimated) == (30, 4, False)
    (request,) = srv.requests
    fmt = request["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "answer"
    assert fmt["json_schema"]["schema"]["properties"] == SCHEMA["properties"]
    assert model_label(langchain_settings(tmp_path, srv.url).llm) == "langchain:openai:tiny-model"


def test_langchain_falls_back_to_tool_calling_when_json_schema_is_refused(tmp_path: Path, openai_key: None):
    def respond(body: dict[str, Any]) -> Reply:
        if "response_format" in body:
            return Reply(400, {"error": {"message": "response_format json_schema is not supported"}})
        assert body["tools"][0]["function"]["name"] == "answer"
        return Reply(body=completion(None, tool_args={"word": "no"}))

    with TinyServer(respond) as srv:
        chat = chat_of(langchain_settings(tmp_path, srv.url))
        value, attempt = complete_json(chat, "s", "u", schema=SCHEMA)
        again, _ = complete_json(chat, "s", "u", schema=SCHEMA)
    assert value == again == {"word": "no"}
    assert json.loads(attempt.raw_responses[0]) == {"word": "no"}
    assert ["response_format" in r for r in srv.requests] == [True, False, False]  # the fallback is remembered


def test_langchain_unparsable_structured_answer_goes_through_repair_and_retry(tmp_path: Path, openai_key: None):
    replies = sequence(Reply(body=completion("not json at all")), Reply(body=completion('{"word": "yes"}')))
    with TinyServer(replies) as srv:
        chat = chat_of(langchain_settings(tmp_path, srv.url))
        value, attempt = complete_json(chat, "s", "u", schema=SCHEMA)
    assert value == {"word": "yes"} and attempt.retried
    assert attempt.raw_responses == ["not json at all", '{"word": "yes"}']  # raw text kept for the audit


def test_langchain_calls_are_retried_and_counted(tmp_path: Path, openai_key: None):
    down = Reply(503, {"error": {"message": "busy"}})
    with TinyServer(sequence(down, down, Reply(body=completion("fine")))) as srv:
        chat = chat_of(langchain_settings(tmp_path, srv.url))
        attempt = Attempt()
        assert complete_text(chat, "s", "u", attempt) == "fine"
    assert attempt.transport_retries == 2 and len(srv.requests) == 3  # ours, not the SDK's hidden ones


def test_langchain_missing_package_is_one_error_naming_it(clean_env: Path, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]):
    pytest.importorskip("langchain")
    if __import__("importlib").util.find_spec("langchain_deepseek") is not None:
        pytest.skip("langchain-deepseek is installed here")
    corpus = write_corpus(tmp_path / "corpus", 1)
    code = main(["--provider", "langchain", "--model", "deepseek:deepseek-chat", "--ontology", str(ONTOLOGY),
                 "--out", str(tmp_path / "out"), "extract", str(corpus)])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    (line,) = error_lines(err)
    assert "pip install langchain-deepseek" in line


@pytest.mark.parametrize("model, words", [("no-such-thing-at-all", "PROVIDER:MODEL"), ("", "needs a model")])
def test_langchain_bad_model_strings_are_one_error(clean_env: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch, model: str, words: str):
    argv = ["--provider", "langchain"] + (["--model", model] if model else []) + ["doctor", "--no-llm-call"]
    assert main(argv) == 1
    captured = capsys.readouterr()
    assert words in captured.out + captured.err and "Traceback" not in captured.err


def test_langchain_pool_is_refused(tmp_path: Path, openai_key: None):
    settings = Settings(home=tmp_path, llm_provider="langchain", langchain_model="openai:m",
                        openai_base_urls=["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"])
    with pytest.raises(LLMError, match="--provider openai"):
        get_chat_model(settings.llm, files=settings.files)


# ---------------------------------------------------------------------------- a real llama.cpp server
@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the small test model on a free loopback port (one per session)."""
    base = Settings.load()
    require_embedded_model(base, TEST_MODEL)
    from graphrag_got.llm.model_store import resolve_model_path

    chosen = base.with_overrides(llamacpp_model=TEST_MODEL)
    path = resolve_model_path(chosen.llm, files=chosen.files)
    try:
        import fastapi, sse_starlette, starlette_context, uvicorn  # noqa: E401, F401
    except ImportError as exc:
        if os.environ.get("GRAPHRAG_REQUIRE_LLM") == "1":
            pytest.fail(f"the llama.cpp server needs {exc.name}: pip install uvicorn fastapi sse-starlette "
                        "starlette-context")
        pytest.skip(f"llama.cpp server dependency missing: {exc.name}")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", str(path), "--host", "127.0.0.1",
                                 "--port", str(port), "--n_ctx", "4096", "--seed", "0"],
                                stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while True:
            if proc.poll() is not None:
                pytest.fail(f"the llama.cpp server exited with {proc.returncode}: "
                            f"{log.read_text(errors='replace')[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail("the llama.cpp server did not answer within 180 s")
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.mark.llm
def test_extraction_end_to_end_through_a_real_llama_cpp_server(llama_server: str, clean_env: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               capsys: pytest.CaptureFixture[str]):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    paragraph = (ROOT / "corpus" / "got.txt").read_text(encoding="utf-8").split("\n\n")[0]
    two_sentences = ". ".join(paragraph.split(". ")[:2]).rstrip(".") + "."  # one call: ~2.4k tokens in
    (corpus / "one.txt").write_text(two_sentences + "\n", encoding="utf-8")
    for var, value in {"GRAPHRAG_MAX_ENTITIES": "3", "GRAPHRAG_MAX_RELATIONS": "2",
                       "GRAPHRAG_LLM_MAX_TOKENS": "256"}.items():
        monkeypatch.setenv(var, value)
    code = main(["--provider", "openai", "--base-url", llama_server, "--ontology", str(ONTOLOGY),
                 "--out", str(tmp_path / "out"), "extract", str(corpus)])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    ext = Extraction.read(tmp_path / "out" / "extraction.json")  # valid against the contract
    assert ext.llm.provider == "openai" and ext.llm.model.startswith("openai:")
    assert ext.counts.chunks_extracted + ext.counts.chunks_failed == 1
    records = [json.loads(p.read_text(encoding="utf-8"))
               for p in (tmp_path / "home" / "cache" / "extract").rglob("*.json")]
    (record,) = records
    assert record["raw_responses"] and record["calls"] in (1, 2)
    if record["status"] == "ok":
        # the server reported real token counts, and decoding was constrained: the answer is JSON
        assert record["input_tokens"] > 500 and record["output_tokens"] > 0
        json.loads(record["raw_responses"][-1])
