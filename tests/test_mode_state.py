"""Routing never fails for the graph's state (issue 27): on a graph without community reports a
question routed to global or drift is answered by local retrieval with a warning naming the command
that enables it, in the library, the CLI, the HTTP service and MCP alike; an explicit global or drift
is refused with that command (HTTP 409 ``mode_unavailable``, a one-line CLI error, an MCP tool error).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client import Client

from graphrag_got.cli import main
from graphrag_got.service import create_app
from graphrag_got.service.background import serve_in_thread
from test_mcp import _payload, _server
from test_service import ROOT, ScriptedChat, service_settings

CORPUS_WIDE = "¿Cuáles son los temas principales?"  # names no entity: routed to global
ENABLE = "graphrag-got communities summarize"



@pytest.fixture(scope="module")
def no_reports(gold_graph, neo4j_settings, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The gold graph, loaded without communities (so without reports)."""
    tmp = tmp_path_factory.mktemp("modestate")
    settings = service_settings(neo4j_settings, tmp)
    with gold_graph.session(database=settings.neo4j.database) as s:
        assert s.run("MATCH (c:Community) RETURN count(c) AS n").single()["n"] == 0
    return {"driver": gold_graph, "settings": settings, "tmp": tmp}


def test_service_falls_back_when_routed_and_answers_409_when_forced(no_reports) -> None:  # type: ignore[no-untyped-def]
    chat = ScriptedChat()
    app = create_app(no_reports["settings"], chat=chat, driver=no_reports["driver"])
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=60) as client:
        for answer in (False, True):
            res = client.post("/ask", json={"question": CORPUS_WIDE, "answer": answer})
            assert res.status_code == 200, res.text
            body = res.json()
            assert body["mode"] == "local" and "no community reports, so local" in body["route"]["reason"]
            assert any(ENABLE in w and "routed to global" in w for w in body["warnings"]), body["warnings"]
        for mode in ("global", "drift"):
            res = client.post("/ask", json={"question": CORPUS_WIDE, "mode": mode, "answer": False})
            assert res.status_code == 409, res.text
            err = res.json()["error"]
            assert err["code"] == "mode_unavailable" and err["detail"]["mode"] == mode
            assert err["detail"]["command"].endswith(ENABLE) and ENABLE in err["message"]
        assert client.post("/ask", json={"question": CORPUS_WIDE, "mode": "local", "answer": False}).status_code == 200


def test_cli_falls_back_with_a_warning_and_refuses_a_forced_global(no_reports, capsys) -> None:  # type: ignore[no-untyped-def]
    tmp: Path = no_reports["tmp"]
    extra = ["--ontology", str(ROOT / "ontology" / "got.json"), "--home", str(tmp / "home"), "--out", str(tmp / "out")]
    code = main(["ask", CORPUS_WIDE, "--no-answer", "--json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    result = json.loads(out)
    assert result["mode"] == "local" and any(ENABLE in w for w in result["warnings"])
    code = main(["ask", "global", CORPUS_WIDE, "--no-answer", *extra])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert len(err.strip().splitlines()) == 1 and "mode global needs community reports" in err and ENABLE in err


def test_mcp_falls_back_and_refuses_a_forced_global(no_reports, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"responses": [], "fallback": ['{"entities": []}']}), encoding="utf-8")
    server = _server(no_reports["settings"], replay)

    async def session() -> dict[str, Any]:
        with anyio.fail_after(90):
            async with Client(server) as client:
                return {"auto": _payload(await client.call_tool("ask", {"question": CORPUS_WIDE, "answer": False})),
                        "forced": await client.call_tool("ask", {"question": CORPUS_WIDE, "mode": "global",
                                                                 "answer": False})}

    out = anyio.run(session)
    assert out["auto"]["mode"] == "local" and any(ENABLE in w for w in out["auto"]["warnings"])
    assert out["forced"].is_error and ENABLE in out["forced"].content[0].text
