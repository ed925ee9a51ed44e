"""The embedded Neo4j server and the connection helpers, against a real server."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from graphrag_got.graph import server as neo4j_server
from graphrag_got.config import Settings
from graphrag_got.errors import Neo4jError, Neo4jServerError
from graphrag_got.graph.db import connect, read_query, read_session, write_query

pytestmark = pytest.mark.neo4j


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_server_answers_return_1(neo4j_driver, neo4j_settings: Settings) -> None:
    records, _, keys = read_query(neo4j_driver, neo4j_settings.neo4j, "RETURN 1 AS one")
    assert keys == ["one"] and records[0]["one"] == 1
    assert neo4j_driver.get_server_info().agent.startswith("Neo4j/5.")


def test_read_and_write_helpers(clean_graph, neo4j_settings: Settings) -> None:
    driver = clean_graph
    result = write_query(driver, neo4j_settings.neo4j, "UNWIND $rows AS r CREATE (:T {v: r})", {"rows": [1, 2, 3]})
    assert result.summary.counters.nodes_created == 3
    records, _, _ = read_query(driver, neo4j_settings.neo4j, "MATCH (n:T) RETURN sum(n.v) AS s")
    assert records[0]["s"] == 6
    with read_session(driver, neo4j_settings.neo4j) as session:
        with pytest.raises(Exception, match="(?i)read access mode"):
            session.run("CREATE (:T {v: 4})").consume()
    with pytest.raises(Neo4jError, match="SyntaxError"):
        read_query(driver, neo4j_settings.neo4j, "RETURN 1 +")


def test_clean_graph_removes_nodes_constraints_and_indexes(clean_graph, wipe_graph, neo4j_settings: Settings) -> None:
    driver = clean_graph
    write_query(driver, neo4j_settings.neo4j, "CREATE CONSTRAINT test_uid IF NOT EXISTS FOR (n:TestNode) REQUIRE n.uid IS UNIQUE")
    write_query(driver, neo4j_settings.neo4j, "CREATE INDEX test_key IF NOT EXISTS FOR (n:TestNode) ON (n.key)")
    write_query(driver, neo4j_settings.neo4j, "CREATE (:TestNode {uid: 'a', key: 'a'})-[:R]->(:TestNode {uid: 'b'})")
    wipe_graph()
    count = read_query(driver, neo4j_settings.neo4j, "MATCH (n) RETURN count(n) AS n").records[0]["n"]
    constraints = read_query(driver, neo4j_settings.neo4j, "SHOW CONSTRAINTS YIELD name").records
    indexes = read_query(driver, neo4j_settings.neo4j, "SHOW INDEXES YIELD name, type").records
    assert count == 0
    assert constraints == []
    assert {r["type"] for r in indexes} <= {"LOOKUP"}  # the built-in token lookup indexes stay


def test_connect_with_wrong_password_raises_one_clear_error(neo4j_settings: Settings) -> None:
    bad = neo4j_settings.with_overrides(neo4j_password="not-the-password")
    with pytest.raises(Neo4jError) as err:
        connect(bad.neo4j)
    msg = str(err.value)
    assert "refused" in msg and "NEO4J_PASSWORD" in msg and bad.neo4j.uri in msg
    assert err.value.__cause__ is None and err.value.__context__ is None  # no driver traceback attached
    connect(neo4j_settings.neo4j).close()  # the right password still works


def test_connect_to_closed_port_fails_fast_with_hint(neo4j_settings: Settings) -> None:
    uri = f"bolt://127.0.0.1:{_free_port()}"
    t0 = time.monotonic()
    with pytest.raises(Neo4jError) as err:
        connect(neo4j_settings.with_overrides(neo4j_uri=uri).neo4j)
    # not the ~30 s of the driver's transaction retries
    assert time.monotonic() - t0 < 10
    msg = str(err.value)
    assert uri in msg and "graphrag-got neo4j start" in msg and "docker compose up -d" in msg
    assert err.value.__cause__ is None and err.value.__context__ is None


@pytest.mark.parametrize("uri", ["http://127.0.0.1:7474", "bolt://127.0.0.1:notaport", "nonsense"])
def test_connect_rejects_bad_uris(neo4j_settings: Settings, uri: str) -> None:
    with pytest.raises(Neo4jError, match="NEO4J_URI"):
        connect(neo4j_settings.with_overrides(neo4j_uri=uri).neo4j)


def test_status_of_the_running_server(neo4j_settings: Settings, neo4j_server_info) -> None:
    st = neo4j_server.status(neo4j_settings.neo4j, files=neo4j_settings.files)
    assert st.answering and st.auth_ok is True
    assert st.server_agent and st.server_agent.startswith("Neo4j/5.")
    if neo4j_server_info.started:
        assert st.pid == neo4j_server_info.pid
        assert st.log_path.is_file() and "READY bolt://" in st.log_path.read_text()


def test_status_reports_refused_credentials(neo4j_settings: Settings) -> None:
    bad = neo4j_settings.with_overrides(neo4j_password="not-the-password")
    st = neo4j_server.status(bad.neo4j, files=bad.files)
    assert st.answering and st.auth_ok is False


def test_status_when_nothing_listens(tmp_path: Path) -> None:
    settings = Settings.load(neo4j_uri=f"bolt://127.0.0.1:{_free_port()}", home=tmp_path)
    st = neo4j_server.status(settings.neo4j, files=settings.files)
    assert not st.answering and st.auth_ok is None and st.pid is None
    assert neo4j_server.stop(settings.files) is None  # nothing of ours to stop


def test_start_refuses_a_port_used_by_someone_else(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        settings = Settings.load(neo4j_uri=f"bolt://127.0.0.1:{port}", home=tmp_path)
        with pytest.raises(Neo4jServerError, match="another server already listens"):
            neo4j_server.start(settings.neo4j, wait_s=30, files=settings.files)
    assert not neo4j_server.pid_path(settings.files).exists()


def test_start_refuses_remote_uri_and_short_password(tmp_path: Path) -> None:
    with pytest.raises(Neo4jServerError, match="another machine"):
        remote = Settings.load(neo4j_uri="bolt://db.example.org:7687", home=tmp_path)
        neo4j_server.start(remote.neo4j, files=remote.files)
    with pytest.raises(Neo4jServerError, match="8 characters"):
        short = Settings.load(neo4j_uri=f"bolt://127.0.0.1:{_free_port()}", home=tmp_path, neo4j_password="short")
        neo4j_server.start(short.neo4j, files=short.files)


def test_start_stop_and_restart_on_an_existing_home(tmp_path: Path, neo4j_settings: Settings) -> None:
    """A second embedded server (own port and home): fresh start, reuse, stop, warm start, stop."""
    settings = Settings.load(neo4j_uri=f"bolt://127.0.0.1:{_free_port()}", home=tmp_path,
                             neo4j_password="another-password")
    try:
        first = neo4j_server.start(settings.neo4j, files=settings.files)
        assert first.started and first.pid and first.startup_s is not None
        again = neo4j_server.start(settings.neo4j, files=settings.files)  # already running: reused, not started twice
        assert not again.started and again.pid == first.pid
        st = neo4j_server.status(settings.neo4j, files=settings.files)
        assert st.answering and st.auth_ok and st.pid == first.pid
        connect(settings.neo4j).close()

        assert neo4j_server.stop(settings.files) == first.pid
        st = neo4j_server.status(settings.neo4j, files=settings.files)
        assert not st.answering and st.pid is None

        # existing home: the password is already set and must still be accepted
        second = neo4j_server.start(settings.neo4j, files=settings.files)
        assert second.started and second.pid != first.pid
        driver = connect(settings.neo4j)
        with driver:
            assert read_query(driver, settings.neo4j, "RETURN 2 AS two").records[0]["two"] == 2
    finally:
        neo4j_server.stop(settings.files)
    assert not neo4j_server.status(settings.neo4j, files=settings.files).answering
