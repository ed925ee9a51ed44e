"""`graphrag-got mcp`: the SDK's own stdio client starts the server as a subprocess, against the real
Neo4j, and lists and calls its tools. The LLM is the replay provider (recorded answers, in order).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp import StdioServerParameters
from mcp.client import Client

import test_service
from test_service import MEETING, ROOT

service_graph = test_service.service_graph  # the module's fixture, used by name

TOOLS = {"ask", "neighbourhood", "communities", "ontology"}


def _server(settings: Any, replay: Path, **extra: str) -> StdioServerParameters:
    env = {
        "NEO4J_URI": settings.neo4j.uri, "NEO4J_USERNAME": settings.neo4j.username,
        "NEO4J_PASSWORD": settings.neo4j.password, "NEO4J_DATABASE": settings.neo4j.database,
        "GRAPHRAG_HOME": str(settings.files.home), "GRAPHRAG_ONTOLOGY": str(ROOT / "ontology" / "got.json"),
        "GRAPHRAG_EMBEDDINGS": "0", "GRAPHRAG_LOCAL_RETRIEVAL": "graph",
        "GRAPHRAG_LLM_PROVIDER": "replay", "GRAPHRAG_REPLAY_FILE": str(replay), **extra,
    }
    return StdioServerParameters(command=sys.executable, args=["-m", "graphrag_got.cli", "mcp"], env=env, cwd=ROOT)


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


def test_mcp_stdio_lists_and_calls_the_read_only_tools(service_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811 (the imported fixture)
    replay = tmp_path / "replay.json"
    # local search with an answer: the anchor-name call, then the answer call
    replay.write_text(json.dumps({"responses": [], "fallback": ['{"entities": []}', "Se encuentran en Rocadragón [F1]."]}),
                      encoding="utf-8")
    server = _server(service_graph["settings"], replay)

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        with anyio.fail_after(90):
            async with Client(server) as client:
                listed = await client.list_tools()
                out["tools"] = {t.name: t for t in listed.tools}
                out["retrieval"] = _payload(await client.call_tool("ask", {"question": MEETING, "answer": False}))
                out["answer"] = _payload(await client.call_tool("ask", {"question": MEETING, "mode": "local"}))
                out["neighbourhood"] = _payload(await client.call_tool("neighbourhood", {"name": "Jon Snow", "limit": 5}))
                out["missing"] = await client.call_tool("neighbourhood", {"name": "Daeneris Targarien"})
                out["too_long"] = await client.call_tool("ask", {"question": "x" * 5000})
                out["unknown"] = await client.call_tool("ask", {"question": MEETING, "answer": False,
                                                                "cypher": "MATCH (n) DETACH DELETE n"})
                out["bad_type"] = await client.call_tool("neighbourhood", {"name": "Jon Snow", "limit": "many"})
                out["misspelt"] = await client.call_tool("neighbourhood", {"name": "Jon Snoww"})
                out["communities"] = _payload(await client.call_tool("communities", {"limit": 3}))
                out["ontology"] = _payload(await client.call_tool("ontology", {}))
        return out

    out = anyio.run(session)
    assert set(out["tools"]) == TOOLS
    assert all(t.annotations.read_only_hint and not t.annotations.destructive_hint for t in out["tools"].values())

    retrieval = out["retrieval"]
    assert retrieval["mode"] == "local" and retrieval["answer"] is None and retrieval["llm_calls"] == 0
    assert any("SE_ENCUENTRA_CON" in s["text"] and s["evidence"] == service_graph["sentence"]
               for s in retrieval["sources"])
    answer = out["answer"]
    assert answer["answer"] == "Se encuentran en Rocadragón [F1]." and answer["llm_calls"] == 2
    assert [c["id"] for c in answer["citations"]] == ["F1"]

    hood = out["neighbourhood"]
    assert [e["uid"] for e in hood["entities"]] == ["Personaje|jon snow"] and len(hood["relations"]) == 5

    assert out["missing"].is_error and "Daenerys Targaryen" in out["missing"].content[0].text  # the suggestion
    assert out["too_long"].is_error and "at most 1000" in out["too_long"].content[0].text
    # an argument the tool does not take is refused, as HTTP refuses it with 422 (not silently dropped)
    unknown = out["unknown"].content[0].text
    assert out["unknown"].is_error and "does not take 'cypher'" in unknown and "question" in unknown, unknown
    bad_type = out["bad_type"].content[0].text
    assert out["bad_type"].is_error and bad_type.startswith("invalid arguments for tool neighbourhood: limit:"), bad_type
    assert "pydantic" not in bad_type and "\n" not in bad_type and "For further information" not in bad_type
    assert out["misspelt"].is_error and "Jon Snow" in out["misspelt"].content[0].text

    assert out["communities"]["total"] == service_graph["communities"] and len(out["communities"]["items"]) == 3
    onto = out["ontology"]
    assert "Personaje" in onto["classes"] and any(r["name"] == "SE_ENCUENTRA_CON" for r in onto["relations"])
    assert onto["text"].startswith("ONTOLOGY:")


class _RawStdio:
    """`graphrag-got mcp` as a subprocess spoken to line by line, bytes as they are (the SDK's client
    would refuse to send what these tests send); each reply is awaited at most ``wait`` seconds."""

    def __init__(self, env: dict[str, str], wait: float = 30.0):
        import queue
        import subprocess
        import threading

        self.wait = wait
        self.proc = subprocess.Popen([sys.executable, "-m", "graphrag_got.cli", "mcp"], cwd=ROOT, env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: "queue.Queue[bytes]" = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)

    def send(self, raw: bytes) -> dict[str, Any]:
        """Write one line; return the one reply it gets (the test fails on a hang)."""
        import queue

        assert self.proc.stdin is not None
        self.proc.stdin.write(raw + b"\n")
        self.proc.stdin.flush()
        try:
            line = self.lines.get(timeout=self.wait)
        except queue.Empty:
            raise AssertionError(f"no reply within {self.wait} s to {raw[:120]!r}") from None
        line.decode("utf-8")  # strict: the server writes valid UTF-8
        return json.loads(line)

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.proc.stderr.read().decode("utf-8", "replace")


def test_mcp_stdio_answers_every_line_with_a_json_rpc_error_for_what_it_cannot_parse(tmp_path: Path) -> None:
    """Malformed JSON, invalid UTF-8, a lone surrogate, a message that is not JSON-RPC: each line gets
    a JSON-RPC error (with the request's id when it has one), and the server keeps serving (issue 37:
    the SDK's reader dropped such lines and the client waited forever)."""
    import os

    env = {**os.environ, "GRAPHRAG_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT),
           "GRAPHRAG_ONTOLOGY": str(ROOT / "ontology" / "got.json"), "GRAPHRAG_LLM_PROVIDER": "replay",
           "GRAPHRAG_REPLAY_FILE": str(tmp_path / "none.json")}
    server = _RawStdio(env)
    try:
        init = server.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert init["id"] == 0 and "result" in init, init
        server.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]

        cases = [
            (b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"', None, -32700, "not JSON"),
            (b'\xff\xfe{"jsonrpc": "2.0", "id": 2, "method": "tools/list"}', None, -32700, "not valid UTF-8"),
            (b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "ask", '
             b'"arguments": {"question": "who? \\ud800", "answer": false}}}', 3, -32600, "surrogate"),
            (b'{"jsonrpc": "2.0", "id": "four", "method": 42}', "four", -32600, "not a JSON-RPC message"),
            (b'[1, 2, 3]', None, -32600, "not a JSON-RPC message"),
            (b'"\\udc80"', None, -32600, "surrogate"),
        ]
        for raw, id_, code, words in cases:
            reply = server.send(raw)
            assert reply.get("id") == id_ and reply["error"]["code"] == code, (raw, reply)
            assert words in reply["error"]["message"], (raw, reply)
        listed = server.send(b'{"jsonrpc": "2.0", "id": 5, "method": "tools/list"}')
        assert listed["id"] == 5 and {t["name"] for t in listed["result"]["tools"]} == TOOLS
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr


def test_mcp_stdio_answers_a_request_whose_id_is_no_string_or_integer(tmp_path: Path) -> None:
    """A request (a message with a method and an id member) whose id MCP does not take gets -32600 Invalid
    Request instead of being taken for a notification and dropped (issue 48): with its own id when that is
    a JSON-RPC id (1.5), else with id null; ``Infinity`` is no JSON and gets -32700. A true notification (no
    id member) still gets no reply, and the server keeps serving."""
    import os

    env = {**os.environ, "GRAPHRAG_HOME": str(tmp_path / "home"), "PYTHONPATH": str(ROOT),
           "GRAPHRAG_ONTOLOGY": str(ROOT / "ontology" / "got.json"), "GRAPHRAG_LLM_PROVIDER": "replay",
           "GRAPHRAG_REPLAY_FILE": str(tmp_path / "none.json")}
    server = _RawStdio(env)
    try:
        init = server.send(json.dumps({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}).encode())
        assert init["id"] == "init" and "result" in init, init
        server.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')  # type: ignore[union-attr]

        cases = [
            (b'1.5', 1.5, -32600, "the id 1.5 is a number written with a fraction"),
            (b'8.0', 8.0, -32600, "the id 8.0 is a number written with a fraction or an exponent, not an integer"),
            (b'1e3', 1000.0, -32600, "not an integer"),
            (b'null', None, -32600, "the id is null"),
            (b'true', None, -32600, "the id is true, a boolean"),
            (b'false', None, -32600, "the id is false, a boolean"),
            (b'{"n": 1}', None, -32600, "the id is an object"),
            (b'[1]', None, -32600, "the id is an array"),
            (b'1e400', None, -32600, "the id is a number out of range"),
            (b'Infinity', None, -32700, "Infinity is no JSON value"),
            (b'-Infinity', None, -32700, "-Infinity is no JSON value"),
            (b'NaN', None, -32700, "NaN is no JSON value"),
        ]
        for raw_id, id_, code, words in cases:
            raw = b'{"jsonrpc": "2.0", "id": ' + raw_id + b', "method": "tools/list"}'
            reply = server.send(raw)
            assert "id" in reply and reply["id"] == id_ and reply["error"]["code"] == code, (raw, reply)
            assert words in reply["error"]["message"], (raw, reply)
            if code == -32600:
                assert "an MCP request's id is a string or an integer" in reply["error"]["message"]
        # a notification (no id member) gets no reply: the next line read is the reply to the next request
        server.proc.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", '  # type: ignore[union-attr]
                                b'"params": {"requestId": 99}}\n')
        listed = server.send(b'{"jsonrpc": "2.0", "id": 7, "method": "tools/list"}')
        assert listed["id"] == 7 and {t["name"] for t in listed["result"]["tools"]} == TOOLS
    finally:
        stderr = server.close()
    assert "Traceback" not in stderr, stderr


def test_mcp_ask_lists_the_claims_left_out_and_why(service_graph, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811 (the imported fixture)
    claims = json.dumps({"claims": [
        {"statement": "Jon Snow se encuentra con Daenerys Targaryen en Rocadragón.", "sources": ["F1"]},
        {"statement": "Daenerys Targaryen se encuentra con Jon Snow en Rocadragón.", "sources": ["F1"]},
        {"statement": "Jon Snow se encuentra con Cersei Lannister.", "sources": ["F1"]}]})  # fmt: skip
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"responses": [], "fallback": ['{"entities": []}', claims]}), encoding="utf-8")
    server = _server(service_graph["settings"], replay, GRAPHRAG_ANSWER_FORMAT="claims")

    async def session() -> dict[str, Any]:
        with anyio.fail_after(90):
            async with Client(server) as client:
                return _payload(await client.call_tool("ask", {"question": MEETING, "mode": "local"}))

    answer = anyio.run(session)
    assert answer["answer"] == "Jon Snow se encuentra con Daenerys Targaryen en Rocadragón [F1]."
    assert answer["answer_format"] == "claims" and len(answer["claims"]) == 1
    assert [(c["reason"], c["detail"]) for c in answer["left_out"]] == [
        ("repeat", "repeats claim 1 with the same names"),
        ("entity_not_in_sources", "Cersei Lannister is in none of its sources (F1)")]  # fmt: skip
