"""One LangChain chat model over a pool of OpenAI-compatible servers (vLLM, LM Studio, llama.cpp, Ollama /v1).

Every call goes to one server of the pool, picked round robin or least-busy (fewest calls in
flight, ties taken in turn), so N servers serve N calls at once. A server that fails with a
transient error (HTTP 429/5xx, connection refused, timeout) is set aside for the backoff time
and the retry goes to another one when there is one; after the last try the call raises
:class:`~graphrag_got.llm.providers.retry.ProviderUnreachableError`.

Calls stream (:mod:`graphrag_got.llm.providers.streaming`): a call is cut only when no piece of the
answer has arrived for ``stall_s`` seconds, however long the whole answer takes, and a llama.cpp
server is asked for prompt progress so that a long prompt evaluated on busy cores is not taken for a
stall. A call cut after part of its answer resumes from that part on a llama.cpp server (the part is
sent back as the start of the assistant's message, which the server continues with its grammar
advanced past it and its slot's cache holding the evaluated tokens); elsewhere it starts again and
the part is counted as thrown away (:class:`StreamStats`).

Output is constrained by the JSON schema through ``response_format``. Servers disagree on its
form: OpenAI, vLLM, LM Studio, Ollama and llama.cpp's C++ server take
``{"type": "json_schema", "json_schema": {"name", "schema"}}``; llama-cpp-python's server refuses
that (HTTP 500 or 422 naming ``response_format``) and takes ``{"type": "json_object", "schema"}``.
With ``response_format="auto"`` each server starts with the first and steps down (json_object,
then none) the first time it refuses, remembering the form that works.
"""

from __future__ import annotations

import contextlib
from functools import partial
import json
import logging
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, Field, PrivateAttr, SecretStr

from graphrag_got.errors import LLMError
from graphrag_got.llm.providers.retry import RetryPolicy, call_with_retries, describe, is_transient, status_of
from graphrag_got.llm.providers.streaming import StalledCallError, StreamedAnswer, read_stream, repeated_line

logger = logging.getLogger(__name__)

#: The OpenAI API itself, used when no base URL is configured.
OPENAI_API_URL = "https://api.openai.com/v1"
#: Sent as the bearer token when no key is configured (local servers ignore it; the SDK needs one).
NO_KEY = "no-key"

ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]
Balance = Literal["least_busy", "round_robin"]
#: Forms of ``response_format`` tried in turn under "auto".
_FORMAT_ORDER: tuple[str, ...] = ("json_schema", "json_object", "none")
_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
#: A server that just failed is set aside this long, doubled per failure in a row (at most MAX_COOLDOWN_S).
COOLDOWN_S = 1.0
MAX_COOLDOWN_S = 30.0


@dataclass
class Server:
    """One base URL of the pool and what we learnt about it."""

    url: str
    client: Any  # openai.OpenAI
    response_format: str = "json_schema"
    in_flight: int = 0
    calls: int = 0
    failures: int = 0
    failures_in_a_row: int = 0
    down_until: float = 0.0
    #: whether it is llama.cpp's server (answers ``/props``): asked once, when a cut call could resume there
    llamacpp: bool | None = None


@dataclass
class StreamStats:
    """What the pool's streamed calls cost and what stalls took (read by benchmarks and ``usage``)."""

    calls: int = 0
    #: calls cut because no piece of the answer arrived for the stall limit
    cut: int = 0
    #: cut calls that went on from the part already written (llama.cpp servers)
    resumed: int = 0
    #: pieces (about one token each) received by calls that were then cut: kept when resumed ...
    pieces_kept: int = 0
    #: ... and thrown away when the call had to start again
    pieces_thrown_away: int = 0
    #: the longest wait between two messages of any stream, and of any whole call
    longest_gap_s: float = 0.0
    longest_call_s: float = 0.0
    #: how long each answered call took, in seconds (what a whole-call limit would have been compared with)
    call_seconds: list[float] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: float) -> None:
        with self._lock:
            for name, value in counts.items():
                if name in ("longest_gap_s", "longest_call_s"):
                    setattr(self, name, max(getattr(self, name), value))
                    if name == "longest_call_s":
                        self.call_seconds.append(value)
                else:
                    setattr(self, name, getattr(self, name) + value)

    def stall_line(self, before: dict[str, float] | None = None) -> str:
        """What stalls did since ``before`` (an earlier :meth:`as_dict`), for a run's summary; empty when none."""
        now, then = self.as_dict(), before or {}
        cut = now["cut"] - then.get("cut", 0)
        if not cut:
            return ""
        resumed = now["resumed"] - then.get("resumed", 0)
        kept = now["pieces_kept"] - then.get("pieces_kept", 0)
        lost = now["pieces_thrown_away"] - then.get("pieces_thrown_away", 0)
        return (f"stalls: {cut} call(s) cut after no token for the stall limit (GRAPHRAG_LLM_STALL_TIMEOUT), "
                f"{resumed} resumed from what they had written ({kept} piece(s) kept), {lost} piece(s) thrown away")

    def as_dict(self) -> dict[str, float]:
        with self._lock:
            return {"calls": self.calls, "cut": self.cut, "resumed": self.resumed, "pieces_kept": self.pieces_kept,
                    "pieces_thrown_away": self.pieces_thrown_away, "longest_gap_s": round(self.longest_gap_s, 1),
                    "longest_call_s": round(self.longest_call_s, 1)}


@dataclass
class ServerPool:
    """Picks the server for each call; thread-safe."""

    servers: list[Server]
    balance: Balance = "least_busy"
    _turn: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def acquire(self) -> Server:
        with self._lock:
            now = time.monotonic()
            up = [i for i, s in enumerate(self.servers) if s.down_until <= now]
            if not up:  # every server is cooling down: take the one that comes back first
                up = [min(range(len(self.servers)), key=lambda i: self.servers[i].down_until)]
            n = len(self.servers)
            order = sorted(up, key=lambda i: (i - self._turn) % n)  # candidates from our turn onwards
            pick = order[0] if self.balance == "round_robin" else min(order, key=lambda i: self.servers[i].in_flight)
            self._turn = (pick + 1) % n
            server = self.servers[pick]
            server.in_flight += 1
            server.calls += 1
            return server

    def release(self, server: Server, *, failed: bool = False) -> None:
        """End one call; a failed one (transient error) sets the server aside for a while."""
        with self._lock:
            server.in_flight -= 1
            if failed:
                server.failures += 1
                server.failures_in_a_row += 1
                cooldown = min(MAX_COOLDOWN_S, COOLDOWN_S * 2 ** (server.failures_in_a_row - 1))
                server.down_until = time.monotonic() + cooldown
            else:
                server.failures_in_a_row = 0
                server.down_until = 0.0

    @property
    def urls(self) -> list[str]:
        return [s.url for s in self.servers]


def _response_format(form: str, schema: dict[str, Any] | None) -> dict[str, Any] | None:
    if schema is None or form == "none":
        return None
    if form == "json_object":
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}


def _refuses_format(exc: BaseException) -> bool:
    """A server saying it does not understand the ``response_format`` we sent (not a transient error)."""
    text = str(exc).lower()
    return status_of(exc) in (400, 422, 500) and ("response_format" in text or "json_schema" in text)


class OpenAIPoolChatModel(BaseChatModel):
    """Chat completions over one or more OpenAI-compatible base URLs, with retries and JSON constraint.

    Call arguments: ``json_schema`` (a JSON schema the answer must follow), ``grammar`` (a GBNF grammar, for
    llama.cpp servers: it replaces the schema there; other servers get the schema, or nothing),
    ``max_tokens``, ``stop``.
    The answer's ``response_metadata`` has ``base_url`` (the server that answered) and ``retries``;
    ``usage_metadata`` has the server's token counts when it reports them.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    model_name: str
    base_urls: list[str]
    api_key: SecretStr | None = None
    #: the whole-call limit, used only where the answer does not stream (``streaming=False``)
    timeout_s: float = 600.0
    #: seconds without a piece of a streamed answer before the call is cut (a stall)
    stall_s: float = 120.0
    #: stream answers, so that only a stall cuts a call
    streaming: bool = True
    #: a cut call goes on from the part already written where the server continues an assistant message
    #: (llama.cpp's server); False: always start again
    resume: bool = True
    max_tokens: int = 1536
    temperature: float = 0.0
    response_format: ResponseFormat = "auto"
    balance: Balance = "least_busy"
    retries: int = 3
    backoff_s: float = 1.0
    #: sent with every request beside the OpenAI fields (llama.cpp: ``cache_prompt``)
    extra_body: dict[str, Any] = Field(default_factory=dict)
    #: the embedded model served by our llama-server (``graphrag_got.llm.server``), not a remote one
    embedded: bool = False
    #: tokens one call holds, when known (the embedded server's context per slot)
    context_window: int | None = None
    _pool: ServerPool = PrivateAttr()
    _capacity: int | None = PrivateAttr(default=None)
    _stats: StreamStats = PrivateAttr(default_factory=StreamStats)

    def model_post_init(self, context: Any) -> None:
        import openai

        if not self.base_urls:
            raise LLMError("the openai provider needs at least one base URL (--base-url or GRAPHRAG_OPENAI_BASE_URLS)")
        key = self.api_key.get_secret_value() if self.api_key else NO_KEY
        start = "json_schema" if self.response_format == "auto" else self.response_format
        # streamed: the read timeout is the time allowed between two pieces of the answer, not for all of it
        timeout = (openai.Timeout(self.stall_s, connect=min(10.0, self.stall_s)) if self.streaming
                   else openai.Timeout(self.timeout_s))
        servers = [Server(url=url, client=openai.OpenAI(base_url=url, api_key=key, timeout=timeout,
                                                        max_retries=0), response_format=start)
                   for url in self.base_urls]
        self._pool = ServerPool(servers, balance=self.balance)

    @property
    def _llm_type(self) -> str:
        return "openai-pool"

    @property
    def pool(self) -> ServerPool:
        return self._pool

    @property
    def stream_stats(self) -> StreamStats:
        """Calls made, calls cut by a stall, resumed, and the pieces of answers kept or thrown away."""
        return self._stats

    @property
    def retry_policy(self) -> RetryPolicy:
        return RetryPolicy(retries=self.retries, backoff_s=self.backoff_s)

    def capacity(self) -> int:
        """Calls the pool takes at once: per server, the slots a llama.cpp server reports (``/props``
        ``total_slots``), else :data:`DEFAULT_SLOTS`; asked once."""
        if self._capacity is None:
            key = self.api_key.get_secret_value() if self.api_key else None
            self._capacity = sum(server_slots(url, key) or DEFAULT_SLOTS for url in self._pool.urls)
        return self._capacity

    def share_prefix(self, messages: list[BaseMessage]) -> int:
        """Put the prompt prefix ``messages`` (say, the system prompt and an empty user message) in every slot
        of the llama.cpp servers of the pool, evaluated once per server: the first slot evaluates it, the
        others restore it from the server's prompt cache in RAM (``--cache-ram``) instead of evaluating it
        again. Without this, calls sent at once to empty slots each evaluate the whole prefix. Returns the
        slots prepared; servers that are not llama.cpp servers (no ``/props``) are left alone. Never raises.

        How (llama-server's slot selection, tools/server/server-context.cpp): a call pinned to a slot
        (``id_slot``) that holds another prompt saves that prompt and loads the cached one that shares the
        longest prefix with the call; a slot that is idle when another call starts is saved to the cache.
        So: the prefix into slot 0, a one-token prompt into every other slot (each start saves slot 0's
        prefix to the cache), then the prefix into every other slot (each restores it)."""
        body = [{"role": _ROLES.get(m.type, "user"), "content": str(m.content)} for m in messages]
        key = self.api_key.get_secret_value() if self.api_key else None
        prepared = 0
        for server in self._pool.servers:
            slots = server_slots(server.url, key)
            if not slots or slots < 2:
                continue

            def ask(content: list[dict[str, Any]], slot: int) -> Any:
                # not streamed (one token): the whole-call limit applies, not the stall limit
                return server.client.chat.completions.create(
                    model=self.model_name, messages=content, max_tokens=1, temperature=0.0, timeout=self.timeout_s,
                    extra_body={**self.extra_body, "cache_prompt": True, "id_slot": slot})

            try:
                t0 = time.monotonic()
                ask(body, 0)
                for slot in range(1, slots):
                    ask([{"role": "user", "content": "ok"}], slot)
                reused = [getattr(getattr(ask(body, slot).usage, "prompt_tokens_details", None), "cached_tokens", 0)
                          for slot in range(1, slots)]
            except Exception as exc:  # an optimisation only: the calls work without it
                logger.info("%s: could not share the prompt prefix among its slots (%s)", server.url, describe(exc))
                continue
            logger.info("%s: prompt prefix in %d slot(s) in %.1f s (tokens restored from its cache per slot: %s)",
                        server.url, slots, time.monotonic() - t0, reused)
            prepared += slots
        return prepared

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` under the embedded server's tokenizer (``/tokenize``); None for other servers."""
        if not self.embedded:
            return None
        url = _root(self._pool.urls[0]) + "/tokenize"
        request = urllib.request.Request(url, data=json.dumps({"content": text}).encode("utf-8"),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=min(30.0, self.timeout_s)) as resp:  # noqa: S310 (loopback)
                return len(json.loads(resp.read().decode("utf-8")).get("tokens") or [])
        except (urllib.error.URLError, OSError, ValueError, AttributeError):
            return None

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        schema = kwargs.pop("json_schema", None)
        grammar = kwargs.pop("grammar", None)  # GBNF: llama.cpp servers only (others get the prompt alone)
        marker = kwargs.pop("end_on_repeated_line", None)  # True: any line; a string: lines holding it
        until = (partial(repeated_line, marker="" if marker is True else str(marker))
                 if marker and self.streaming else None)
        max_tokens = kwargs.pop("max_tokens", None) or self.max_tokens
        extra_body = dict(self.extra_body)
        if "repeat_penalty" in kwargs:  # llama.cpp's own sampling field, not an OpenAI one
            penalty = kwargs.pop("repeat_penalty")
            if self.embedded:
                extra_body["repeat_penalty"] = penalty
        if extra_body:
            kwargs["extra_body"] = {**extra_body, **(kwargs.get("extra_body") or {})}
        body = [{"role": _ROLES.get(m.type, "user"), "content": m.content if isinstance(m.content, str)
                 else json.dumps(m.content, ensure_ascii=False)} for m in messages]
        policy = self.retry_policy
        retries = 0
        served_by: list[str] = []
        kept, kept_pieces = "", 0  # the part of the answer written before a stall, continued by the next try

        def on_retry(exc: BaseException, wait: float) -> None:
            nonlocal retries
            retries += 1

        def one_try() -> StreamedAnswer:
            nonlocal kept, kept_pieces
            server = self._pool.acquire()
            resume_from, resumed_pieces = (kept, kept_pieces) if kept and self._resumes_on(server) else ("", 0)
            if kept and not resume_from:
                self._stats.add(pieces_thrown_away=kept_pieces)
                kept, kept_pieces = "", 0
            messages_sent = body + [{"role": "assistant", "content": resume_from}] if resume_from else body
            try:
                extra, constrain = kwargs, schema
                if grammar and self._is_llamacpp(server):  # llama.cpp takes a grammar or a schema, not both
                    extra = {**kwargs, "extra_body": {**(kwargs.get("extra_body") or {}), "grammar": grammar}}
                    constrain = None
                answer = self._create(server, messages_sent, constrain, max_tokens - resumed_pieces, stop, extra,
                                      until=until)
                answer.max_tokens = max(1, max_tokens - resumed_pieces)
            except BaseException as exc:
                self._pool.release(server, failed=is_transient(exc))
                if isinstance(exc, StalledCallError):
                    self._stats.add(cut=1)
                    if exc.partial_text:  # kept for the next try; counted as kept or thrown away then
                        kept, kept_pieces = resume_from + exc.partial_text, resumed_pieces + exc.pieces
                elif resume_from:  # the server would not go on from the written part: the next try starts again
                    logger.warning("%s: could not resume the call from its %d written piece(s) (%s); asking again "
                                   "from the start", server.url, resumed_pieces, describe(exc))
                    self._stats.add(pieces_thrown_away=resumed_pieces)
                    kept, kept_pieces = "", 0
                raise
            self._pool.release(server)
            served_by.append(server.url)
            if resume_from:
                self._stats.add(resumed=1, pieces_kept=resumed_pieces)
                logger.info("%s: the call went on from the %d piece(s) it had written before it stalled",
                            server.url, resumed_pieces)
                # llama.cpp's server sends the continued message whole (the written part first); others the rest
                if not answer.text.startswith(resume_from):
                    answer.text = resume_from + answer.text
                    answer.pieces += resumed_pieces
            return answer

        what = f"openai server(s) {', '.join(self._pool.urls)}"
        try:
            answer = call_with_retries(one_try, policy, what=what, on_retry=on_retry)
        except LLMError:  # ProviderUnreachableError included
            raise
        except Exception as exc:
            explained = self._explain(exc)
            if explained is exc:
                raise
            raise explained from exc
        self._stats.add(calls=1, longest_gap_s=answer.longest_gap_s, longest_call_s=answer.seconds)
        usage_metadata = None
        if answer.input_tokens is not None:
            output = int(answer.output_tokens or 0)
            usage_metadata = {"input_tokens": answer.input_tokens, "output_tokens": output,
                              "total_tokens": answer.input_tokens + output}
        message = AIMessage(content=answer.text, usage_metadata=usage_metadata, response_metadata={
            "model_name": answer.model or self.model_name, "base_url": served_by[-1],
            "retries": retries, "finish_reason": answer.finish_reason, "max_tokens": answer.max_tokens,
            "prefix_reused": answer.cached_tokens, "longest_gap_s": round(answer.longest_gap_s, 1),
            "seconds": round(answer.seconds, 1)})
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _resumes_on(self, server: Server) -> bool:
        """Whether a cut call can go on from its written part on ``server``: llama.cpp's server continues a
        final assistant message (others would answer it anew), so resuming is for llama.cpp servers only."""
        if not (self.resume and self.streaming):
            return False
        return self._is_llamacpp(server)

    def _is_llamacpp(self, server: Server) -> bool:
        """Whether ``server`` is llama.cpp's (asked once: its ``/slots``), which takes grammars and resumes."""
        if server.llamacpp is None:
            key = self.api_key.get_secret_value() if self.api_key else None
            server.llamacpp = self.embedded or server_slots(server.url, key) is not None
        return server.llamacpp

    def _create(self, server: Server, body: list[dict[str, Any]], schema: dict[str, Any] | None,
                max_tokens: int, stop: list[str] | None, extra: dict[str, Any],
                until: Callable[[str], int | None] | None = None) -> StreamedAnswer:
        """One request to one server, stepping its ``response_format`` down while it refuses the form."""
        while True:
            form = server.response_format
            request: dict[str, Any] = {"model": self.model_name, "messages": body, "temperature": self.temperature,
                                       "max_tokens": max(1, max_tokens)}
            fmt = _response_format(form, schema)
            if fmt is not None:
                request["response_format"] = fmt
            if stop:
                request["stop"] = stop
            options = dict(extra)
            if self.streaming:
                request["stream"] = True
                request["stream_options"] = {"include_usage": True}
                if self.embedded or server.llamacpp:  # llama.cpp: messages while the prompt is evaluated
                    options["extra_body"] = {**(options.get("extra_body") or {}), "return_progress": True}
            t0 = time.monotonic()
            try:
                response = server.client.chat.completions.create(**request, **options)
            except Exception as exc:
                if _read_timed_out(exc):  # sent, and nothing came back in time: not "cannot be reached"
                    raise StalledCallError(server.url, self.stall_s if self.streaming else self.timeout_s,
                                           started=False) from exc
                if fmt is None or self.response_format != "auto" or not _refuses_format(exc):
                    raise
                following = _FORMAT_ORDER[_FORMAT_ORDER.index(form) + 1]
                logger.info("%s refuses response_format %r; using %r from now on", server.url, form, following)
                server.response_format = following
                continue
            if self.streaming:
                with contextlib.closing(response):
                    return read_stream(response, url=server.url, stall_s=self.stall_s, started_at=t0, until=until)
            return _whole_answer(response, time.monotonic() - t0)

    def _explain(self, exc: Exception) -> Exception:
        """A clear LLMError for answers no retry can fix; other errors go back to the caller unchanged."""
        status = status_of(exc)
        where = ", ".join(self._pool.urls)
        if status in (401, 403):
            return LLMError(f"the openai server(s) {where} {describe(exc)}: the API key is missing or refused. "
                            "Set OPENAI_API_KEY (unset it for local servers that need none).")
        if status == 404:
            return LLMError(f"the openai server(s) {where} {describe(exc)} for model {self.model_name!r}: check "
                            "the base URL (it usually ends in /v1) and the model name (--model or "
                            "GRAPHRAG_OPENAI_MODEL; `graphrag-got doctor` lists the server's models).")
        return exc  # e.g. HTTP 400 "maximum context length": llm.calls.invoke_model tells that case apart


def _read_timed_out(exc: BaseException) -> bool:
    """The SDK's timeout error caused by a read timeout (the server took the request and said nothing),
    not by a connection that could not be made."""
    cause = exc.__cause__ or exc.__context__
    return (type(exc).__name__ == "APITimeoutError" and cause is not None
            and any(cls.__name__ == "ReadTimeout" for cls in type(cause).__mro__))


def _whole_answer(response: Any, seconds: float) -> StreamedAnswer:
    """A non-streamed completion in the form of a streamed one."""
    choice = response.choices[0] if response.choices else None
    answer = StreamedAnswer(text=(choice.message.content if choice is not None else None) or "",
                            finish_reason=getattr(choice, "finish_reason", None),
                            model=getattr(response, "model", None), seconds=seconds, longest_gap_s=seconds)
    usage = getattr(response, "usage", None)
    if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
        answer.input_tokens = int(usage.prompt_tokens or 0)
        answer.output_tokens = int(usage.completion_tokens or 0)
        cached = getattr(getattr(usage, "prompt_tokens_details", None), "cached_tokens", None)
        answer.cached_tokens = cached if isinstance(cached, int) else None
    return answer


# ---------------------------------------------------------------------------- what a server says about itself
#: Calls in flight per server that does not say how many it takes (LightRAG's default is 4).
DEFAULT_SLOTS = 4


@dataclass
class ServerInfo:
    """What ``/models`` (and llama.cpp's ``/props``) tell about one server."""

    url: str
    answers: bool
    models: list[str] = field(default_factory=list)
    context: int | None = None
    error: str = ""
    slots: int | None = None  # llama.cpp: parallel slots (/props total_slots)


def _root(url: str) -> str:
    """A base URL without its ``/v1`` (where llama.cpp's own endpoints are)."""
    base = url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def server_slots(url: str, api_key: str | None = None, timeout: float = 3.0) -> int | None:
    """The parallel slots a llama.cpp server reports (``/props`` ``total_slots``); None for other servers."""
    try:
        props = _get_json(_root(url) + "/props", api_key, timeout)
    except (urllib.error.URLError, OSError, ValueError):
        return None
    slots = props.get("total_slots") if isinstance(props, dict) else None
    return slots if isinstance(slots, int) and slots > 0 else None


def _get_json(url: str, api_key: str | None, timeout: float) -> Any:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key or NO_KEY}",
                                                   "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as resp:  # noqa: S310 (configured URL)
        return json.loads(resp.read().decode("utf-8"))


def _context_of(entry: dict[str, Any]) -> int | None:
    """The context window a ``/models`` entry states, under the names vLLM, LM Studio and others use."""
    meta = entry.get("meta") if isinstance(entry.get("meta"), dict) else {}
    for value in (entry.get("max_model_len"), entry.get("context_length"), entry.get("max_context_length"),
                  meta.get("n_ctx"), meta.get("n_ctx_train")):
        if isinstance(value, int) and value > 0:
            return value
    return None


def server_info(url: str, api_key: str | None = None, timeout: float = 5.0) -> ServerInfo:
    """Ask one server for its models and context size; never raises."""
    base = url.rstrip("/")
    try:
        data = _get_json(base + "/models", api_key, timeout)
    except urllib.error.HTTPError as exc:
        return ServerInfo(url, answers=True, error=f"GET /models answered HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return ServerInfo(url, answers=False, error=f"{type(exc).__name__}: {getattr(exc, 'reason', exc)}")
    entries = [e for e in (data.get("data") or []) if isinstance(e, dict)] if isinstance(data, dict) else []
    info = ServerInfo(url, answers=True, models=[str(e.get("id", "")) for e in entries])
    info.context = next((c for c in (_context_of(e) for e in entries) if c), None)
    try:  # llama.cpp's own server reports the context it runs with (per slot) and its slots
        props = _get_json(_root(base) + "/props", api_key, timeout)
        if isinstance(props, dict):
            n_ctx = (props.get("default_generation_settings") or {}).get("n_ctx")
            if isinstance(n_ctx, int) and n_ctx > 0:
                info.context = n_ctx
            if isinstance(props.get("total_slots"), int) and props["total_slots"] > 0:
                info.slots = props["total_slots"]
    except (urllib.error.URLError, OSError, ValueError):
        pass
    return info


_DISCOVERED: dict[tuple[str, ...], str] = {}
_DISCOVER_LOCK = threading.Lock()


def discover_model(urls: list[str], api_key: str | None, timeout: float = 10.0) -> str:
    """The first model the first answering server lists (cached per pool), for when none is configured."""
    key = tuple(urls)
    with _DISCOVER_LOCK:
        if key in _DISCOVERED:
            return _DISCOVERED[key]
        problems = []
        for url in urls:
            info = server_info(url, api_key, timeout)
            if info.models and info.models[0]:
                _DISCOVERED[key] = info.models[0]
                return info.models[0]
            problems.append(f"{url}: {info.error or 'lists no model'}")
    raise LLMError("no model name given and no server of the pool lists one (" + "; ".join(problems) + "). "
                   "Start the server, or name the model with --model or GRAPHRAG_OPENAI_MODEL.")
