"""Streamed answers: a call is cut when the server stops sending, never because it is long.

A whole-call time limit cannot tell a server that stalled from one that shares two busy cores with
other work and writes slowly: on a machine that is not quiet, four calls decoded at once each take
four times as long, cross the limit and are thrown away while they are still producing tokens. So
calls to servers stream (``stream=True``) and the HTTP client's *read* timeout is the limit: the
time allowed between two pieces of the answer (a stall), not for the whole answer.

llama.cpp's server sends nothing while a prompt is evaluated unless asked for progress
(``return_progress``), so the embedded server is asked for it: a long prompt evaluated on busy cores
keeps the stream alive too.

A call that stalls after part of its answer raises :class:`StalledCallError` with that part kept, so
the caller can resume from it (see ``OpenAIPoolChatModel``: llama.cpp's server continues a final
assistant message, its grammar advanced past the text already written, and its slot still holds
the evaluated prompt) instead of paying for it again.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

logger = logging.getLogger(__name__)


def machine_load() -> str:
    """The load average over the last minute and the cores, for messages ("3.4 on 2 cores")."""
    try:
        one_minute = os.getloadavg()[0]
    except OSError:  # not every platform has it
        return "unknown"
    return f"{one_minute:.1f} on {os.cpu_count() or '?'} cores"


class StalledCallError(TimeoutError):
    """No piece of the answer arrived for ``stall_s`` seconds: the call was cut.

    A ``TimeoutError``, so retry policies take it as worth another try. ``partial_text`` is what the
    server had written before it stalled (``pieces`` pieces of it), kept for a resumed call.
    """

    def __init__(self, url: str, stall_s: float, *, partial_text: str = "", pieces: int = 0,
                 started: bool = True, load: str | None = None):
        self.url = url
        self.stall_s = stall_s
        self.partial_text = partial_text
        self.pieces = pieces
        self.started = started
        self.load = load if load is not None else machine_load()
        if started:
            what = (f"no token for {stall_s:g} s from the server at {url} after {pieces} piece(s) of the answer"
                    if pieces else f"no token for {stall_s:g} s from the server at {url} (it was evaluating "
                    "the prompt or had not begun)")
        else:
            what = (f"no answer for {stall_s:g} s from the server at {url} (the request was sent; it is "
                    "queued behind other calls or stalled)")
        super().__init__(f"{what}; the machine's load is {self.load}")


@dataclass
class StreamedAnswer:
    """One streamed chat completion, put back together."""

    text: str = ""
    finish_reason: str | None = None
    #: the answer length this request allowed (finish_reason "length" well short of it: the context was full)
    max_tokens: int | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_tokens: int | None = None
    #: pieces of content received (llama.cpp sends one a token)
    pieces: int = 0
    #: prompt-progress messages received while the prompt was evaluated
    progress_events: int = 0
    seconds: float = 0.0
    #: the longest wait between two messages of the stream (how close the call came to the stall limit)
    longest_gap_s: float = 0.0
    first_piece_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _field(obj: Any, name: str) -> Any:
    """A field of an SDK object or of its extra (non-OpenAI) fields, such as llama.cpp's ``prompt_progress``."""
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


def is_read_timeout(exc: BaseException) -> bool:
    """A read timeout of the HTTP client under the SDK (httpx or httpx2: ``ReadTimeout``), or a timeout the SDK
    raised for one; told apart by class names, as the SDKs wrap different client libraries."""
    chain = [exc, exc.__cause__, exc.__context__]
    names = {cls.__name__ for e in chain if e is not None for cls in type(e).__mro__}
    return "ReadTimeout" in names


def repeated_line(text: str, marker: str = "") -> int | None:
    """Where to cut an answer written one item a line once its last complete line repeats an earlier one
    (a small model that starts its list again loops until its token limit): the start of that line, or
    None while every complete line is new. ``marker``: only lines holding it count (``"->"``: fact lines,
    whose repeats end an answer whose other lines may repeat harmlessly)."""
    if not text.endswith("\n"):
        return None
    body = text[:-1]
    start = body.rfind("\n") + 1
    last = body[start:].strip()
    if not last:
        return None
    if marker not in last:
        return None
    earlier = {line.strip() for line in body[:start].split("\n")}
    return start if last in earlier else None


def read_stream(chunks: Iterable[Any], *, url: str, stall_s: float, started_at: float | None = None,
                clock: Callable[[], float] = time.monotonic,
                until: Callable[[str], int | None] | None = None) -> StreamedAnswer:
    """Join the chunks of a streamed chat completion; a read timeout while iterating becomes a
    :class:`StalledCallError` that keeps what was received. The timeout itself is the HTTP client's read
    timeout (set to ``stall_s`` by the caller): this function only tells what happened. ``until``: given
    the text so far (after a piece with a line break), where to cut it and stop reading (the caller then
    closes the stream, and a llama.cpp server stops writing); ``finish_reason`` is then ``"repeated_line"``
    and the output tokens are the pieces kept (one a token on llama.cpp)."""
    answer = StreamedAnswer()
    start = started_at if started_at is not None else clock()
    last = start
    parts: list[str] = []
    try:
        for chunk in chunks:
            now = clock()
            answer.longest_gap_s = max(answer.longest_gap_s, now - last)
            last = now
            answer.model = answer.model or getattr(chunk, "model", None)
            progress = _field(chunk, "prompt_progress")
            if progress is not None:
                answer.progress_events += 1
                total = progress.get("total") if isinstance(progress, dict) else None
                if isinstance(total, int):  # the prompt's tokens, should the answer be cut before its usage
                    answer.extra["prompt_tokens"] = total
            usage = getattr(chunk, "usage", None)
            if usage is not None and getattr(usage, "prompt_tokens", None) is not None:
                answer.input_tokens = int(usage.prompt_tokens or 0)
                answer.output_tokens = int(usage.completion_tokens or 0)
                details = getattr(usage, "prompt_tokens_details", None)
                cached = getattr(details, "cached_tokens", None)
                answer.cached_tokens = cached if isinstance(cached, int) else None
            for choice in getattr(chunk, "choices", None) or []:
                delta = getattr(choice, "delta", None)
                content = getattr(delta, "content", None) if delta is not None else None
                if content:
                    parts.append(content)
                    answer.pieces += 1
                    if answer.first_piece_s is None:
                        answer.first_piece_s = now - start
                    cut = until("".join(parts)) if until is not None and "\n" in content else None
                    if cut is not None:
                        answer.text = "".join(parts)[:cut]
                        answer.finish_reason = "repeated_line"
                        answer.output_tokens = answer.pieces
                        answer.input_tokens = answer.input_tokens if answer.input_tokens is not None \
                            else answer.extra.get("prompt_tokens")
                        answer.seconds = clock() - start
                        return answer
                if getattr(choice, "finish_reason", None):
                    answer.finish_reason = choice.finish_reason
    except Exception as exc:
        if isinstance(exc, StalledCallError) or not is_read_timeout(exc):
            raise
        raise StalledCallError(url, stall_s, partial_text="".join(parts), pieces=answer.pieces) from exc
    answer.text = "".join(parts)
    answer.seconds = clock() - start
    return answer
