"""`graphrag-got serve`: the HTTP API against the real Neo4j, served for real by uvicorn on loopback.

The chat model is scripted (no LLM): it names no anchor when asked for names, and answers from the
context citing [F1] plus an id the context does not have, so citation resolution is exercised. A
gate (threading.Event) holds an answer back to test the timeout and the LLM-slot cap.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import ConfigDict, PrivateAttr

from graphrag_got.config import Settings
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.citations import RANKED_HEADER
from graphrag_got.service import create_app
from graphrag_got.service.background import serve_in_thread

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
JON, DANY = "Personaje|jon snow", "Personaje|daenerys targaryen"
MEETING = "¿Cómo se conocieron Jon Snow y Daenerys Targaryen?"
ALIAS = "Lord Snow"
SCRIPTED_ANSWER = "Se encuentran en Rocadragón [F1] y él le es leal [F2, F99]."


# ------------------------------------------------------------------------------ fixtures and helpers


class ScriptedChat(BaseChatModel):
    """Answers the anchor-name prompt with no names and an answer prompt (it holds ``FACTS:``, or the
    header of a context ranked by the question) with
    ``answer``. With ``gate`` set, every call waits for it first (at most 30 s)."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    answer: str = SCRIPTED_ANSWER
    gate: threading.Event | None = None
    _calls: int = PrivateAttr(default=0)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @property
    def _llm_type(self) -> str:
        return "scripted"

    @property
    def calls(self) -> int:
        return self._calls

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        with self._lock:
            self._calls += 1
        if self.gate is not None:
            self.gate.wait(30)
        text = "\n".join(str(m.content) for m in messages)
        reply = self.answer if "FACTS:" in text or RANKED_HEADER in text else '{"entities": []}'
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply))])


def meeting_sentence(data: dict[str, Any]) -> tuple[dict[str, Any], int, str]:
    """The chunk of the Jon/Daenerys meeting, and the offset and text of the sentence stating it."""
    rel = next(r for r in data["relations"]
               if r["relation"] == "SE_ENCUENTRA_CON" and {r["subject_key"], r["object_key"]} == {"jon snow", "daenerys targaryen"})
    chunk = next(c for c in data["chunks"] if c["id"] == rel["chunk_ids"][0])
    match = next(m for m in re.finditer(r"[^.]+\.", chunk["text"]) if "se encuentra con Daenerys" in m.group())
    start = match.start() + len(match.group()) - len(match.group().lstrip())
    return chunk, start, match.group().strip()


def evidence_extraction(path: Path) -> tuple[Path, str]:
    """The gold extraction with the meeting's evidence sentence and an alias of Jon Snow, written
    to ``path``; returns the path and the sentence."""
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    chunk, start, sentence = meeting_sentence(data)
    for rel in data["relations"]:
        if rel["relation"] == "SE_ENCUENTRA_CON" and {rel["subject_key"], rel["object_key"]} == {"jon snow", "daenerys targaryen"}:
            rel["evidence"] = [{"chunk_id": chunk["id"], "start": start, "end": start + len(sentence), "text": sentence,
                                "document_start": chunk["start"] + start,
                                "document_end": chunk["start"] + start + len(sentence)}]
    for ent in data["entities"]:
        if ent["uid"] == JON:
            ent["aliases"] = [ALIAS]
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path, sentence


def service_settings(base: Settings, tmp: Path, **overrides: Any) -> Settings:
    """Test settings: no embeddings (graph retrieval), no classifier, state under ``tmp``."""
    return base.with_overrides(home=tmp / "home", out_dir=tmp / "out", embeddings=False, local_retrieval="graph",
                               ontology_path=ROOT / "ontology" / "got.json", **overrides)


def graph_fingerprint(driver: Any, settings: Settings) -> str:
    """A hash of every node and relationship with its labels/type and properties (test-only Cypher)."""
    with driver.session(database=settings.neo4j.database) as s:
        nodes = sorted(json.dumps([sorted(r["labels"]), r["props"]], sort_keys=True, default=str)
                       for r in s.run("MATCH (n) RETURN labels(n) AS labels, properties(n) AS props"))
        rels = sorted(json.dumps([r["t"], r["a"], r["b"], r["props"]], sort_keys=True, default=str)
                      for r in s.run("MATCH (a)-[r]->(b) RETURN type(r) AS t, elementId(a) AS a, elementId(b) AS b, "
                                     "properties(r) AS props"))
    return hashlib.sha256("\n".join(nodes + ["--"] + rels).encode()).hexdigest()


@pytest.fixture(scope="module")
def service_graph(neo4j_driver, neo4j_settings, wipe_graph, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The gold graph plus one evidence sentence and one alias, with communities and summaries."""
    from langchain_core.language_models.fake_chat_models import FakeListChatModel

    from graphrag_got.communities.detect import detect_communities
    from graphrag_got.communities.graph import read_entity_graph
    from graphrag_got.communities.reports import summarize_communities
    from graphrag_got.communities.store import write_communities
    tmp = tmp_path_factory.mktemp("service")
    settings = service_settings(neo4j_settings, tmp)
    path, sentence = evidence_extraction(tmp / "extraction.json")
    wipe_graph()
    load_extraction(neo4j_driver, settings.neo4j, path, ONTO, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    comms = detect_communities(read_entity_graph(neo4j_driver, settings.neo4j, ONTO,
                                                 communities=settings.communities, files=settings.files), 1.0, 42)
    write_communities(neo4j_driver, settings.neo4j, comms,
                      communities=settings.communities, graph_settings=settings.graph)
    summary = json.dumps({"title": "Group", "summary": "What the group is about."})
    summarize_communities(neo4j_driver, settings.neo4j, FakeListChatModel(responses=[summary]), ontology=ONTO,
                             label="fake", export=False, progress=lambda s: None, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    yield {"driver": neo4j_driver, "settings": settings, "sentence": sentence, "tmp": tmp,
           "entities": len(json.loads(path.read_text(encoding="utf-8"))["entities"]), "communities": len(comms),
           "levels": sorted({c.level for c in comms}), "level0": sum(1 for c in comms if c.level == 0)}
    wipe_graph()


@pytest.fixture()
def served(service_graph):  # type: ignore[no-untyped-def]
    """A started service (uvicorn thread, free port) with a scripted chat; yields (client, chat)."""
    chat = ScriptedChat()
    app = create_app(service_graph["settings"], chat=chat, driver=service_graph["driver"])
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        yield client, chat


def _error(res: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert res.status_code == status, res.text
    body = res.json()
    assert body["error"]["code"] == code, body
    assert body["error"]["message"]
    return body["error"]


# ------------------------------------------------------------------------------------------ health


def test_health_reports_neo4j_counts_and_model(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    res = client.get("/health")
    assert res.status_code == 200
    h = res.json()
    assert h["status"] == "ok" and h["neo4j"] is True
    assert h["entities"] == service_graph["entities"] and h["communities"] == service_graph["communities"]
    assert "ScriptedChat" in h["model"] and h["llm_slots"] == 2 and h["llm_busy"] == 0


def _closed_port() -> int:
    """A loopback port nothing listens on (bound, read back, released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("silent", [False, True], ids=["closed-port", "silent-listener"])
def test_neo4j_down_is_503_within_2_s_without_driver_internals(tmp_path: Path, silent: bool) -> None:
    """A closed port (refused at once) and a port that accepts but never speaks Bolt (the driver waits
    for its connection timeout): each request gets its 503 within ~2 s, naming no URI or driver text."""
    with contextlib.ExitStack() as stack:
        if silent:
            listener = stack.enter_context(socket.socket())
            listener.bind(("127.0.0.1", 0))
            listener.listen(16)  # connections complete in the backlog; nobody ever answers
            port = int(listener.getsockname()[1])
        else:
            port = _closed_port()
        settings = Settings(neo4j_uri=f"bolt://127.0.0.1:{port}", home=tmp_path)
        assert settings.service.neo4j_timeout_s == 2.0
        url = stack.enter_context(serve_in_thread(create_app(settings, chat=ScriptedChat())))
        client = stack.enter_context(httpx.Client(base_url=url, timeout=30))
        for path in ("/health", "/entities/anything", "/communities"):
            start = time.monotonic()
            res = client.get(path)
            elapsed = time.monotonic() - start
            assert res.status_code == 503, res.text
            assert elapsed < 3.0, (path, elapsed)
            assert str(port) not in res.text and "bolt" not in res.text.lower(), res.text
            assert "ServiceUnavailable" not in res.text and "Errno" not in res.text
        start = time.monotonic()
        res = client.post("/ask", json={"question": MEETING, "answer": False})
        assert res.status_code == 503 and time.monotonic() - start < 3.0, res.text
        assert client.get("/health").json()["neo4j"] is False
        err = _error(client.get("/entities/anything"), 503, "neo4j_unavailable")
        assert "graphrag-got neo4j start" in err["message"]


class _GoneAwayProxy:
    """A loopback TCP forwarder to the test Neo4j that can "go down": then it resets every open
    connection and accepts new ones without ever answering (a hung or vanished server)."""

    def __init__(self, host: str, port: int):
        self.target, self.down, self.sockets = (host, port), False, []  # type: ignore[var-annotated]
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = int(self.listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.sockets.append(client)
            if self.down:
                continue
            upstream = socket.create_connection(self.target)
            self.sockets.append(upstream)
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            b.shutdown(socket.SHUT_RDWR)

    def go_down(self) -> None:
        self.down = True
        for s in list(self.sockets):
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
                s.close()

    def close(self) -> None:
        self.go_down()
        self.listener.close()


def test_neo4j_going_away_after_connecting_is_503_within_2_s(service_graph) -> None:  # type: ignore[no-untyped-def]
    """The service's driver connected (through a proxy), then Neo4j goes away: the driver's retries
    stay within the budget instead of the 13-16 s of issue 27."""
    from urllib.parse import urlsplit

    real = urlsplit(service_graph["settings"].neo4j.uri)
    proxy = _GoneAwayProxy(real.hostname or "127.0.0.1", real.port or 7687)
    try:
        settings = service_graph["settings"].with_overrides(neo4j_uri=f"bolt://127.0.0.1:{proxy.port}")
        with serve_in_thread(create_app(settings, chat=ScriptedChat())) as url, \
                httpx.Client(base_url=url, timeout=60) as client:
            assert client.get("/entities/Jon Snow").status_code == 200
            proxy.go_down()
            for path in ("/entities/Jon Snow", "/communities", "/health"):
                start = time.monotonic()
                res = client.get(path)
                elapsed = time.monotonic() - start
                assert res.status_code == 503 and elapsed < 3.0, (path, elapsed, res.text)
                assert str(proxy.port) not in res.text
    finally:
        proxy.close()


# ---------------------------------------------------------------------------------------- hardening


def test_host_header_outside_the_allowlist_gets_400(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, chat = served
    port = client.base_url.port
    for host in ("attacker.example:8766", f"attacker.example:{port}", "127.0.0.1.nip.io", "localhost.attacker.example"):
        for res in (client.get("/entities/Jon Snow", headers={"host": host}),
                    client.post("/ask", json={"question": MEETING}, headers={"host": host}),
                    client.get("/health", headers={"host": host})):
            err = _error(res, 400, "host_not_allowed")
            assert "GRAPHRAG_SERVICE_ALLOWED_HOSTS" in err["message"]
    assert chat.calls == 0  # the refused /ask spent no LLM call
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", "LOCALHOST"):
        assert client.get("/health", headers={"host": host}).status_code == 200, host
    # the --host value and the setting's names are accepted too
    settings = service_graph["settings"].with_overrides(service_allowed_hosts="graph.lan, Other.Lan")
    app = create_app(settings, chat=ScriptedChat(), driver=service_graph["driver"], host="box.lan")
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as other:
        for host in ("graph.lan", "other.lan:80", "box.lan:8765"):
            assert other.get("/health", headers={"host": host}).status_code == 200, host
        _error(other.get("/health", headers={"host": "attacker.example"}), 400, "host_not_allowed")


def test_access_log_line_per_request(served, caplog) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    with caplog.at_level(logging.INFO, logger="graphrag_got.service.access"):
        client.get("/health")
        client.get("/entities/Nobody At All")
    lines = [r.getMessage() for r in caplog.records if r.name == "graphrag_got.service.access"]
    assert any("GET /health 200" in line for line in lines), lines
    assert any("GET /entities/Nobody At All 404" in line for line in lines), lines


def test_hybrid_fallback_warning_is_logged_once_and_counted(served, caplog) -> None:  # type: ignore[no-untyped-def]
    from graphrag_got.common.once import repeated_warnings

    client, _ = served
    key = "hybrid retrieval fell back to graph"
    before = repeated_warnings().get(key, 0)
    with caplog.at_level(logging.DEBUG, logger="graphrag_got"):
        for _ in range(3):
            res = client.post("/ask", json={"question": MEETING, "answer": False, "retrieval": "hybrid"})
            assert res.status_code == 200, res.text
            assert any("fell back to graph" in w for w in res.json()["warnings"])  # the client still sees it
    warned = [r for r in caplog.records if "falls back to graph" in r.getMessage() and r.levelno >= logging.WARNING]
    assert len(warned) == (1 if before == 0 else 0)
    assert repeated_warnings()[key] == before + 3


# ---------------------------------------------------------------------------------------- entities


def test_entity_neighbourhood_has_attributes_and_evidence(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    res = client.get("/entities/Jon Snow")
    assert res.status_code == 200
    body = res.json()
    assert [e["uid"] for e in body["entities"]] == [JON]
    assert body["entities"][0]["aliases"] == [ALIAS]
    assert body["entities"][0]["properties"].get("genero") == "masculino"
    meetings = [r for r in body["relations"] if r["type"] == "SE_ENCUENTRA_CON" and {r["start"], r["end"]} == {JON, DANY}]
    assert len(meetings) == 1  # stored in both directions, returned once
    meeting = meetings[0]
    assert meeting["symmetric"] is True and meeting["attributes"] == {"momento": "tras la Batalla de los Bastardos"}
    assert meeting["evidence"] == [{"text": service_graph["sentence"], "chunk_id": meeting["evidence"][0]["chunk_id"],
                                    "document_id": "got.txt"}]
    assert meeting["evidence"][0]["chunk_id"].startswith("got.txt:")
    assert all(JON in (r["start"], r["end"]) for r in body["relations"])
    # no bookkeeping (chunk ids, evidence arrays) leaks in as an attribute
    assert all(set(r["attributes"]) <= set(ONTO.relation_attributes) for r in body["relations"])


def test_entity_found_by_alias_and_by_spelling_variants(served) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    for name in (ALIAS, "jon snow", "JON SNÓW", "  Jon   Snow "):
        res = client.get(f"/entities/{name}")
        assert res.status_code == 200, (name, res.text)
        assert [e["uid"] for e in res.json()["entities"]] == [JON]
    assert client.get("/entities/Jon Snow", params={"type": "Personaje"}).status_code == 200
    _error(client.get("/entities/Jon Snow", params={"type": "Region"}), 404, "entity_not_found")
    err = _error(client.get("/entities/Jon Snow", params={"type": "Planet"}), 422, "invalid_request")
    assert "Personaje" in err["message"]  # lists the classes that exist


def test_unknown_entity_is_404_with_suggestions(served) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    err = _error(client.get("/entities/Daeneris Targarien"), 404, "entity_not_found")
    assert "Daeneris Targarien" in err["message"]
    assert "Daenerys Targaryen" in err["detail"]["suggestions"]
    # no single word of it is distinctive ("snow" is short and not a first name): the whole name is close
    err = _error(client.get("/entities/Jon%20Snoww"), 404, "entity_not_found")
    assert err["detail"]["suggestions"][0] == "Jon Snow" and "Jon Snow" in err["message"]
    assert _error(client.get("/entities/Zzqx Vwkj"), 404, "entity_not_found")["detail"]["suggestions"] == []


def test_entity_limit_truncates_and_is_bounded(served) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    full = client.get("/entities/Jon Snow").json()
    assert len(full["relations"]) > 2 and full["truncated"] is False
    two = client.get("/entities/Jon Snow", params={"limit": 2}).json()
    assert len(two["relations"]) == 2 and two["truncated"] is True
    assert two["relations"] == full["relations"][:2]  # most supported first, stable
    for bad in (0, 201, "many"):
        _error(client.get("/entities/Jon Snow", params={"limit": bad}), 422, "invalid_request")
    _error(client.get("/entities/" + "x" * 301), 422, "invalid_request")


# ------------------------------------------------------------------------------------- communities


def test_communities_with_reports_level_filter_and_paging(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    page = client.get("/communities").json()
    assert page["total"] == service_graph["communities"] and page["levels"] == service_graph["levels"]
    assert len(page["items"]) == min(50, page["total"])
    assert [(c["level"], c["id"]) for c in page["items"]] == sorted((c["level"], c["id"]) for c in page["items"])
    assert all(c["title"] == "Group" and c["summary"] for c in page["items"] if c["size"] and c["size"] > 1)
    assert any("Jon Snow" in c["members"] for c in page["items"])
    second = client.get("/communities", params={"limit": 2, "offset": 2}).json()
    assert [c["id"] for c in second["items"]] == [c["id"] for c in page["items"][2:4]]
    level0 = client.get("/communities", params={"level": 0}).json()
    assert level0["total"] == service_graph["level0"] and {c["level"] for c in level0["items"]} == {0}
    none = client.get("/communities", params={"level": 99}).json()
    assert none["total"] == 0 and none["items"] == []
    _error(client.get("/communities", params={"level": -1}), 422, "invalid_request")
    _error(client.get("/communities", params={"limit": 1000}), 422, "invalid_request")


# --------------------------------------------------------------------------------------------- ask


def test_ask_retrieval_only_makes_no_llm_call(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, chat = served
    res = client.post("/ask", json={"question": MEETING, "answer": False})
    assert res.status_code == 200, res.text
    r = res.json()
    assert r["mode"] == "local" and r["route"]["mode"] == "local" and r["route"]["reason"]
    assert r["answer"] is None and r["llm_calls"] == 0 and chat.calls == 0
    assert {"Jon Snow", "Daenerys Targaryen"} <= set(r["anchors"])
    meeting = [s for s in r["sources"] if s["kind"] == "fact" and "SE_ENCUENTRA_CON" in s["text"]
               and {"Jon Snow", "Daenerys Targaryen"} == set(s["entities"])]
    assert meeting and meeting[0]["evidence"] == service_graph["sentence"] and meeting[0]["document_id"] == "got.txt"


def test_ask_answer_has_resolved_citations(served) -> None:  # type: ignore[no-untyped-def]
    client, chat = served
    res = client.post("/ask", json={"question": MEETING, "mode": "local"})
    assert res.status_code == 200, res.text
    r = res.json()
    assert r["route"]["decided_by"] == "explicit" and chat.calls >= 1 and r["llm_calls"] == chat.calls
    assert "[F1]" in r["answer"] and "F99" not in r["answer"]  # the invented id is removed
    assert [c["id"] for c in r["citations"]] == ["F1", "F2"] and r["invented_citations"] == 1
    by_id = {s["id"]: s for s in r["sources"]}
    assert all(c["text"] == by_id[c["id"]]["text"] for c in r["citations"])


def test_ask_claims_answer_lists_the_claims_left_out_in_a_typed_response(service_graph) -> None:  # type: ignore[no-untyped-def]
    claims = json.dumps({"claims": [
        {"statement": "Jon Snow se encuentra con Daenerys Targaryen en Rocadragón.", "sources": ["F1"]},
        {"statement": "Jon Snow se encuentra con Cersei Lannister.", "sources": ["F1"]}]})  # fmt: skip
    settings = service_graph["settings"].with_overrides(answer_format="claims")
    app = create_app(settings, chat=ScriptedChat(answer=claims), driver=service_graph["driver"])
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        res = client.post("/ask", json={"question": MEETING, "mode": "local"})
        schema = client.get("/openapi.json").json()
    assert res.status_code == 200, res.text
    r = res.json()
    # F1's evidence sentence places the meeting on the island: the first claim stands
    assert r["answer"] == "Jon Snow se encuentra con Daenerys Targaryen en Rocadragón [F1]." and r["answer_format"] == "claims"
    assert [c["basis"] for c in r["claims"]] == ["relation"]
    assert r["left_out"] == [{"statement": "Jon Snow se encuentra con Cersei Lannister.", "sources": ["F1"],
                              "reason": "entity_not_in_sources", "entities": ["Jon Snow", "Cersei Lannister"],
                              "detail": "Cersei Lannister is in none of its sources (F1)"}]  # fmt: skip
    body = schema["paths"]["/ask"]["post"]["responses"]["200"]["content"]["application/json"]["schema"]
    assert body == {"$ref": "#/components/schemas/AskResult"}
    typed = schema["components"]["schemas"]["AskResult"]["properties"]
    assert {"claims", "left_out", "answer_language", "language_retry"} <= set(typed)
    assert "LeftOutClaim" in json.dumps(typed["left_out"]) and "SupportReason" in schema["components"]["schemas"]


def test_ask_modes_and_types_are_validated(served) -> None:  # type: ignore[no-untyped-def]
    client, chat = served
    for body in ({"question": MEETING, "mode": "everything"}, {"question": 42}, {"mode": "local"},
                 {"question": MEETING, "retrieval": "psychic"}, {"question": MEETING, "cypher": "MATCH (n) RETURN n"}):
        err = _error(client.post("/ask", json=body), 422, "invalid_request")
        assert err["detail"]["problems"][0]["where"].startswith("body")
    _error(client.post("/ask", content=b"{not json", headers={"content-type": "application/json"}), 422,
           "invalid_request")
    _error(client.post("/ask", json={"question": "   "}), 422, "invalid_request")
    assert chat.calls == 0


def test_lone_surrogates_in_a_question_are_cleaned_not_a_500(served) -> None:  # type: ignore[no-untyped-def]
    """A question holding a lone UTF-16 surrogate (valid JSON escape, not a character) is answered:
    the surrogate becomes U+FFFD in what the service uses and echoes, the response is valid UTF-8
    (issue 37: it was HTTP 500, the echoed question could not be encoded)."""
    client, chat = served
    for answer in ("false", "true"):
        body = ('{"question": "\\u00bfC\\u00f3mo se conocieron Jon Snow y Daenerys Targaryen\\ud800?", '
                f'"mode": "local", "answer": {answer}}}').encode()
        res = client.post("/ask", content=body, headers={"content-type": "application/json"})
        assert res.status_code == 200, res.text
        res.content.decode("utf-8")  # strict: no surrogate escaped into the bytes
        r = res.json()
        assert r["question"] == "¿Cómo se conocieron Jon Snow y Daenerys Targaryen\ufffd?"
        assert {"Jon Snow", "Daenerys Targaryen"} <= set(r["anchors"])
    only = client.post("/ask", content=b'{"question": "\\udc80\\ud800", "answer": false}',
                       headers={"content-type": "application/json"})
    assert only.status_code in (200, 422), only.text  # two replacement characters: a question without words
    only.content.decode("utf-8")
    res = client.get("/entities/Jon%ED%A0%80Snow")  # the UTF-8 bytes of a surrogate, percent-encoded
    assert res.status_code in (200, 404), res.text
    res.content.decode("utf-8")


def test_ask_refuses_long_questions_and_bodies_with_413(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, chat = served
    limit = service_graph["settings"].service.max_question_chars
    err = _error(client.post("/ask", json={"question": "x" * (limit + 1)}), 413, "too_large")
    assert err["detail"] == {"limit": limit, "length": limit + 1} and "GRAPHRAG_SERVICE_MAX_QUESTION_CHARS" in err["message"]
    assert client.post("/ask", json={"question": "Jon Snow " + "x" * (limit - 9), "answer": False}).status_code == 200
    huge = json.dumps({"question": "x" * 50_000}).encode()
    _error(client.post("/ask", content=huge, headers={"content-type": "application/json"}), 413, "too_large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: the body is counted as it streams in
        yield b'{"question": "'
        for _ in range(100):
            yield b"y" * 1000
        yield b'"}'

    _error(client.post("/ask", content=chunks(), headers={"content-type": "application/json"}), 413, "too_large")
    assert chat.calls == 0


def test_timeout_gives_504_and_frees_the_slot_when_the_work_ends(service_graph) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    chat = ScriptedChat(gate=gate)
    settings = service_settings(service_graph["settings"], service_graph["tmp"], service_timeout_s=0.5,
                                service_max_llm_requests=1)
    app = create_app(settings, chat=chat, driver=service_graph["driver"])
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        t0 = time.monotonic()
        err = _error(client.post("/ask", json={"question": MEETING, "mode": "local"}), 504, "timeout")
        assert time.monotonic() - t0 < 5 and "GRAPHRAG_SERVICE_TIMEOUT" in err["message"]
        # the worker still holds the only LLM slot until the model returns
        assert client.get("/health").json()["llm_busy"] == 1
        _error(client.post("/ask", json={"question": MEETING}), 503, "busy")
        gate.set()
        deadline = time.monotonic() + 10
        while client.get("/health").json()["llm_busy"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert client.get("/health").json()["llm_busy"] == 0
        assert client.post("/ask", json={"question": MEETING, "mode": "local"}).status_code == 200


def test_llm_cap_gives_503_while_retrieval_still_answers(service_graph) -> None:  # type: ignore[no-untyped-def]
    gate = threading.Event()
    chat = ScriptedChat(gate=gate)
    settings = service_settings(service_graph["settings"], service_graph["tmp"], service_max_llm_requests=1)
    app = create_app(settings, chat=chat, driver=service_graph["driver"])
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        first: dict[str, httpx.Response] = {}
        worker = threading.Thread(target=lambda: first.setdefault("res", client.post(
            "/ask", json={"question": MEETING, "mode": "local"})))
        worker.start()
        deadline = time.monotonic() + 10
        while chat.calls == 0 and time.monotonic() < deadline:  # the first request is inside the model
            time.sleep(0.02)
        err = _error(client.post("/ask", json={"question": MEETING}), 503, "busy")
        assert "answer=false" in err["message"]
        assert client.post("/ask", json={"question": MEETING, "answer": False}).status_code == 200
        assert client.get("/entities/Jon Snow").status_code == 200
        gate.set()
        worker.join(30)
        assert first["res"].status_code == 200 and first["res"].json()["answer"]


# ------------------------------------------------------------------------------------------ read only


def test_no_endpoint_writes_and_no_write_method_exists(served, service_graph) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    driver, settings = service_graph["driver"], service_graph["settings"]
    before = graph_fingerprint(driver, settings)
    hostile = "x') DETACH DELETE n //"
    calls = [
        client.get("/health"), client.get("/communities"), client.get("/entities/Jon Snow"),
        client.get(f"/entities/{hostile}"), client.get("/entities/Jon Snow", params={"type": "Personaje`) DELETE n"}),
        client.post("/ask", json={"question": "MATCH (n) DETACH DELETE n RETURN 1", "answer": False}),
        client.post("/ask", json={"question": MEETING}), client.post("/ask", json={"question": MEETING, "mode": "drift"}),
        client.post("/ask", json={"question": "¿Cuáles son los principales temas?", "mode": "global"}),
    ]
    assert all(c.status_code < 500 for c in calls), [(c.request.url, c.status_code, c.text) for c in calls]
    for path in ("/ask", "/entities/Jon Snow", "/communities", "/health", "/"):
        for method in ("PUT", "PATCH", "DELETE"):
            assert client.request(method, path).status_code == 405
    for path in ("/cypher", "/query", "/db/neo4j/tx", "/admin"):
        _error(client.post(path, json={"query": "MATCH (n) DETACH DELETE n"}), 404, "http_error")
    assert graph_fingerprint(driver, settings) == before
    app_routes = {(r.path, m) for r in client_app_routes(settings) for m in getattr(r, "methods", None) or ()}
    assert {m for _, m in app_routes} <= {"GET", "HEAD", "POST"}
    # /ask and /impact/diff only read; /examples writes the corrected-passages file beside the ontology, never the
    # graph, and only in a service started with --allow-examples (this one was not: 403)
    assert sorted(p for p, m in app_routes if m == "POST") == ["/ask", "/examples", "/impact/diff"]
    assert client.post("/examples", json={"chunk_id": "x", "entities": [], "relations": []}).status_code == 403
    assert graph_fingerprint(driver, settings) == before
    _error(client.post("/impact/diff", json={}), 409, "no_code_root")  # started without a repository: reads nothing


def client_app_routes(settings: Settings) -> list[Any]:
    return list(create_app(settings, chat=ScriptedChat()).routes)


def test_page_is_served_with_a_strict_policy(served) -> None:  # type: ignore[no-untyped-def]
    client, _ = served
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert 'id="question"' in page.text and "/static/app.js" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert "http" not in re.sub(r"http://www\.w3\.org/2000/svg", "", client.get("/static/app.js").text)  # no CDN
    assert client.get("/static/style.css").status_code == 200


def test_page_clears_the_previous_result_on_a_new_request() -> None:
    """app.js run by node against a minimal DOM: an error after an answer leaves no old route,
    answer, warnings or sources on the page."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    script = ROOT / "tests" / "js" / "page_clears.js"
    app_js = ROOT / "graphrag_got" / "service" / "static" / "app.js"
    run = subprocess.run([node, str(script), str(app_js)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    states = json.loads(run.stdout)
    assert "OLD-ROUTE" in states["first"]["route"] and "OLD-SOURCE" in states["first"]["sources"]
    assert "OLD-LEFT-OUT [F1] — OLD-WHY" in states["first"]["left_out"] and "1 kept, 1 left out" in states["first"]["left_out"]
    second = states["second"]
    assert second["status"] == "NEW-ERROR" and second["result_hidden"] is True
    assert second["route"] == second["answer"] == second["warnings"] == second["sources"] == second["left_out"] == ""
