"""The MCP server's stdio transport: every line the client sends gets an answer.

The SDK's own reader (``mcp.server.stdio.stdio_server``, mcp 2.3.0) decodes stdin with
``errors="replace"`` (invalid UTF-8 silently becomes U+FFFD), and a line it cannot parse
(malformed JSON; a lone UTF-16 surrogate such as ``"\\ud800"``, which pydantic's JSON parser
refuses; valid JSON that is no JSON-RPC message) is handed to the session as an exception, which
logs it at debug level and drops it (``mcp.shared.jsonrpc_dispatcher``): no JSON-RPC error goes
back, so a client waiting for its request's reply waits forever. This transport reads the raw
bytes itself and answers such a line with the error JSON-RPC 2.0 prescribes: ``-32700`` (parse
error: not UTF-8, not JSON) or ``-32600`` (invalid request: a lone surrogate, not a JSON-RPC
message), with the request's id when the line has a usable one, else ``null``. Lines holding only
whitespace carry no message and are skipped.

A request's id decides whether it gets a reply, so it is checked first. JSON-RPC 2.0 makes a message
with a ``method`` and no ``id`` member a notification (no reply); one with an ``id`` member is a request,
and MCP requires that id to be a string or an integer. The SDK validates a request whose id is anything
else (``1.5``, ``null``, ``true``, an object) as a notification, because notifications may carry extra
members, and never answers it. Here each gets ``-32600 Invalid Request``: with its own id when that is
a JSON-RPC id (a number written with a fraction or an exponent, such as ``1.5`` or ``8.0``, which
the SDK refuses too), else with id ``null`` (JSON-RPC's id for an
answer to a request whose id cannot be told, which covers ``"id": null`` too). ``NaN`` and
``Infinity`` are no JSON (Python's parser takes them): a line holding one gets ``-32700``.

    async with answering_stdio() as (read_stream, write_stream):
        await lowlevel_server.run(read_stream, write_stream, init_options)

Like the SDK's transport, it serves from private copies of fd 0 and 1 and points fd 0 at the null
device and fd 1 at stderr meanwhile, so a stray print or a child process cannot corrupt or steal
the protocol stream; both are restored on exit.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import os
from typing import Any, AsyncIterator, BinaryIO, Iterator

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from graphrag_got.common.sanitize import replace_surrogates

logger = logging.getLogger(__name__)

#: Longest line read (bytes); a longer one is answered with a parse error and skipped to its end.
MAX_LINE_BYTES = 4 * 1024 * 1024


def _where(path: list[str | int]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(path)) or "the message"


def _lone_surrogate(value: Any, path: list[str | int]) -> str | None:
    """Where the first string (key or value) holding a lone surrogate is, else None."""
    if isinstance(value, str):
        return _where(path) if replace_surrogates(value) != value else None
    if isinstance(value, dict):
        for k, v in value.items():
            if replace_surrogates(k) != k:
                return f"a key of {_where(path)}"
            found = _lone_surrogate(v, [*path, k])
            if found:
                return found
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found = _lone_surrogate(v, [*path, i])
            if found:
                return found
    return None


def _request_id(value: Any) -> int | str | None:
    """The id to answer with: the message's own when it is a JSON-RPC id we can send back."""
    if not isinstance(value, dict):
        return None
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, (int, str)):
        return None
    if isinstance(found, str) and replace_surrogates(found) != found:
        return None
    return found


def _id_problem(value: Any) -> tuple[str, float | None] | None:
    """What is wrong with a request's id for MCP (a string or an integer), and the id to answer with
    (the request's own when it is a JSON-RPC id, a finite number; else None); None when it is fine."""
    if isinstance(value, bool):
        return f"the id is {'true' if value else 'false'}, a boolean", None
    if isinstance(value, (int, str)):
        return None
    if value is None:
        return ("the id is null (a message without an id member is a notification, which gets no reply; "
                "one with an id is a request)"), None
    if isinstance(value, float):
        if not math.isfinite(value):
            return "the id is a number out of range", None
        return f"the id {value!r} is a number written with a fraction or an exponent, not an integer", value
    return f"the id is {'an object' if isinstance(value, dict) else 'an array'}", None


def _error(code: int, message: str, id_: int | str | float | None = None) -> SessionMessage:
    if isinstance(id_, float):  # a JSON-RPC id the SDK's types cannot hold: built as it is, sent as it is
        reply = types.JSONRPCError.model_construct(jsonrpc="2.0", id=id_,
                                                   error=types.ErrorData(code=code, message=message))
        return SessionMessage(reply)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=id_, error=types.ErrorData(code=code, message=message)))


def encode(message: Any) -> bytes:
    """One line of the wire: ``message`` (a JSON-RPC message of the SDK's types) as JSON."""
    if isinstance(message, types.JSONRPCError) and isinstance(message.id, float):
        return (json.dumps({"jsonrpc": "2.0", "id": message.id, "error": message.error.model_dump(
            by_alias=True, exclude_none=True)}) + "\n").encode("utf-8")
    return (message.model_dump_json(by_alias=True, exclude_unset=True) + "\n").encode("utf-8")


class _NotJsonConstant(ValueError):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _refuse_constant(name: str) -> Any:
    raise _NotJsonConstant(name)


def parse_line(raw: bytes) -> SessionMessage | None:
    """The message one line holds, or the JSON-RPC error to answer it with; None for a blank line."""
    if not raw.strip():
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _error(types.PARSE_ERROR, f"Parse error: the line is not valid UTF-8 (byte 0x{raw[exc.start]:02x} at "
                                         f"offset {exc.start}); send JSON-RPC messages as UTF-8 text")
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except (json.JSONDecodeError, RecursionError, _NotJsonConstant) as exc:
        detail = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                  else f"{exc.name} is no JSON value" if isinstance(exc, _NotJsonConstant) else "nested too deep")
        return _error(types.PARSE_ERROR, f"Parse error: the line is not JSON ({detail}); send one JSON-RPC "
                                         "message per line")
    if isinstance(value, dict) and "method" in value and "id" in value:
        bad_id = _id_problem(value["id"])
        if bad_id is not None:
            what, echo = bad_id
            return _error(types.INVALID_REQUEST, f"Invalid Request: {what}; an MCP request's id is a string or an "
                                                 "integer", echo)
    id_ = _request_id(value)
    where = _lone_surrogate(value, [])
    if where:
        return _error(types.INVALID_REQUEST, f"Invalid Request: the text at {where} holds a lone UTF-16 surrogate "
                                             "(an escape such as \\ud800 that encodes no character); send valid "
                                             "Unicode text", id_)
    try:
        message = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError as exc:
        first = exc.errors()[0] if exc.errors() else {}
        loc = ".".join(str(p) for p in first.get("loc", ())[1:]) or "the message"
        return _error(types.INVALID_REQUEST, f"Invalid Request: this is not a JSON-RPC message the server takes "
                                             f"({loc}: {first.get('msg', 'invalid')})", id_)
    return SessionMessage(message)


def _read_line(wire: BinaryIO) -> tuple[bytes, bool] | None:
    """One line without its end, and whether it was cut at MAX_LINE_BYTES; None at the end of input."""
    line = wire.readline(MAX_LINE_BYTES + 1)
    if not line:
        return None
    if len(line) <= MAX_LINE_BYTES or line.endswith(b"\n"):
        return line.rstrip(b"\r\n"), False
    while True:  # skip the rest of an over-long line
        rest = wire.readline(MAX_LINE_BYTES)
        if not rest or rest.endswith(b"\n"):
            return line, True


@contextlib.contextmanager
def _claimed_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """Private copies of fd 0 and 1 for the protocol; fd 0 -> null device, fd 1 -> stderr meanwhile.

    The copies are never closed: a worker thread may still block reading the input one after the
    session ended, and a closed descriptor could be reused under it (the SDK does the same).
    """
    wire_in_fd, wire_out_fd = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
        os.dup2(2, 1)
    finally:
        os.close(null)
    try:
        yield (os.fdopen(wire_in_fd, "rb", buffering=0, closefd=False),
               os.fdopen(wire_out_fd, "wb", closefd=False))
    finally:
        for wire, fd in ((wire_in_fd, 0), (wire_out_fd, 1)):
            with contextlib.suppress(OSError):
                os.dup2(wire, fd)


@contextlib.asynccontextmanager
async def answering_stdio(wire_in: BinaryIO | None = None, wire_out: BinaryIO | None = None) -> AsyncIterator[
        tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]]:
    """The read and write streams of an MCP session over stdin/stdout (or the binary files given)."""
    with contextlib.ExitStack() as stack:
        if wire_in is None or wire_out is None:
            wire_in, wire_out = stack.enter_context(_claimed_stdio())
        assert wire_in is not None and wire_out is not None
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
        replies = write_send.clone()  # our own errors go out through the same writer
        out = wire_out
        reading = anyio.CancelScope()

        async def reader() -> None:
            with reading:
                async with read_send, replies:
                    await _read_lines(wire_in, read_send, replies)

        async def writer() -> None:
            async with write_recv:
                async for item in write_recv:
                    await anyio.to_thread.run_sync(_write, out, encode(item.message))

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_recv, write_send
            finally:
                # the writer sends what the session wrote, then ends with its streams; the reader may
                # sit in a blocking read of a client that keeps the pipe open
                reading.cancel()
                await write_send.aclose()


async def _read_lines(wire_in: BinaryIO, messages: MemoryObjectSendStream[SessionMessage | Exception],
                      replies: MemoryObjectSendStream[SessionMessage]) -> None:
    """Messages to the session, errors straight back to the client, until the input ends."""
    while True:
        read = await anyio.to_thread.run_sync(_read_line, wire_in, abandon_on_cancel=True)
        if read is None:
            return  # end of input: the client closed the connection
        raw, cut = read
        item = (_error(types.PARSE_ERROR, f"Parse error: the line is longer than {MAX_LINE_BYTES} bytes; it was "
                                          "skipped") if cut else parse_line(raw))
        if item is None:
            continue
        if isinstance(item.message, types.JSONRPCError):
            logger.warning("answered an unreadable line with a JSON-RPC error: %s", item.message.error.message)
            await replies.send(item)
        else:
            await messages.send(item)


def _write(wire: BinaryIO, data: bytes) -> None:
    wire.write(data)
    wire.flush()
