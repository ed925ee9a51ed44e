"""Shared fixtures: a real Neo4j for the tests that need one (never a mock).

``neo4j_settings`` reuses the server answering at NEO4J_URI (embedded, Docker, any) or starts the
embedded one under ``settings.files.home`` and, in that case only, stops it when the session ends.
Tests that use these fixtures are marked ``neo4j`` automatically: ``pytest -m "not neo4j"`` skips
them.

Warning: ``clean_graph`` empties the database it is pointed at (Community has a single one). To keep
a development graph, run the tests against another port and home, e.g.
``NEO4J_URI=bolt://127.0.0.1:7688 GRAPHRAG_HOME=/tmp/graphrag-test pytest``.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Iterator

import pytest

from graphrag_got.config import Settings

NEO4J_FIXTURES = {"neo4j_server_info", "neo4j_settings", "neo4j_driver", "clean_graph", "wipe_graph"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if NEO4J_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.neo4j)


@pytest.fixture(scope="session")
def neo4j_server_info():  # type: ignore[no-untyped-def]
    """The ServerInfo of the server the session uses (``started`` tells whether we started it)."""
    from graphrag_got.graph import server as neo4j_server
    from graphrag_got.errors import Neo4jError

    settings = Settings.load()
    try:
        info = neo4j_server.ensure_running(settings.neo4j, files=settings.files)
    except Neo4jError as exc:
        pytest.fail(f"no Neo4j for the tests: {exc}\n(deselect these tests with -m 'not neo4j')", pytrace=False)
    yield info
    if info.started:
        neo4j_server.stop(settings.files)


@pytest.fixture(scope="session")
def neo4j_settings(neo4j_server_info) -> Settings:  # type: ignore[no-untyped-def]
    """Settings whose NEO4J_URI answers (see module docstring)."""
    return Settings.load()


@pytest.fixture(scope="session")
def neo4j_driver(neo4j_settings: Settings):  # type: ignore[no-untyped-def]
    from graphrag_got.graph.db import connect

    driver = connect(neo4j_settings.neo4j)
    yield driver
    driver.close()


def _quote(name: str) -> str:
    """Backtick-quote a schema name read back from the server (not user input)."""
    return "`" + name.replace("`", "``") + "`"


def _wipe(driver, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    """Delete every node and relationship, every constraint, every index but the built-in lookups.

    Test-only Cypher, kept here rather than in a graphrag_got ``cypher`` module: the package never wipes a graph.
    Auto-commit session (not execute_query) because CALL ... IN TRANSACTIONS needs one.
    """
    with driver.session(database=settings.neo4j.database) as session:
        for rec in list(session.run("SHOW CONSTRAINTS YIELD name")):
            session.run(f"DROP CONSTRAINT {_quote(rec['name'])} IF EXISTS").consume()
        for rec in list(session.run("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP'")):
            session.run(f"DROP INDEX {_quote(rec['name'])} IF EXISTS").consume()
        session.run("MATCH (n) CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS").consume()


@pytest.fixture(scope="session")
def wipe_graph(neo4j_driver, neo4j_settings: Settings) -> Callable[[], None]:  # type: ignore[no-untyped-def]
    """A function that empties the test database (nodes, relationships, constraints, indexes)."""
    return lambda: _wipe(neo4j_driver, neo4j_settings)


@pytest.fixture(scope="module")
def gold_graph(neo4j_driver, neo4j_settings: Settings, wipe_graph: Callable[[], None]):  # type: ignore[no-untyped-def]
    """The hand-curated GoT extraction (tests/data/got_extraction.json), loaded once per test module."""
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.ontology.model import Ontology

    root = Path(__file__).resolve().parents[1]
    wipe_graph()
    load_extraction(neo4j_driver, neo4j_settings.neo4j, root / "tests" / "data" / "got_extraction.json",
                    Ontology.from_file(root / "ontology" / "got.json"), graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    yield neo4j_driver
    wipe_graph()


@pytest.fixture()
def clean_graph(neo4j_driver, wipe_graph: Callable[[], None]) -> Iterator[object]:  # type: ignore[no-untyped-def]
    """An empty database before the test and again after it; yields the driver."""
    wipe_graph()
    yield neo4j_driver
    wipe_graph()


# --- hypothesis profiles (property-based tests, e.g. tests/test_fuzz_input.py) ----------------
# "default" is what every run uses; `pytest --hypothesis-profile=thorough` searches much longer.
# No example database: the suite writes no files into the tree, and a failure prints its example.
try:
    from hypothesis import settings as _hypothesis_settings
except ImportError:  # the dev extra is not installed: the property tests fail at import, not the rest
    pass
else:
    _hypothesis_settings.register_profile("default", max_examples=50, deadline=None, database=None)
    _hypothesis_settings.register_profile("thorough", max_examples=2000, deadline=None, database=None)
    _hypothesis_settings.load_profile("default")


@pytest.fixture(autouse=True)
def _fresh_once_warnings() -> None:
    """Each test sees the first occurrence of a once-logged warning (graphrag_got.common.once)."""
    from graphrag_got.common.once import reset_repeated_warnings

    reset_repeated_warnings()


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """``cli.main()`` installs a handler on the root logger; put the root logger back as it was."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.fixture(autouse=True, scope="module")
def _stop_model_servers_after_module() -> Iterator[None]:
    """A llama-server a test module started outside an extraction scope (the adapter built directly)
    stops when the module ends, not at interpreter exit: the next module may use another home and
    would find the port taken by a server that is not its own."""
    yield
    from graphrag_got.llm import server

    server.stop_started_here()
