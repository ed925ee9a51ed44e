"""Connecting to Neo4j with one clear error instead of a driver traceback, plus query helpers.

    driver = connect(settings.neo4j)                    # verified: reachable, credentials, database
    records, summary, keys = read_query(driver, settings.neo4j, "MATCH (n) RETURN count(n) AS n")
    write_query(driver, settings.neo4j, cypher.upsert_entities(...), {"rows": rows})
    with read_session(driver, settings.neo4j) as session: ...

Every function takes the ``neo4j`` section (:class:`~graphrag_got.config.Neo4jSettings`: address,
credentials, database, time limit), named ``db`` here because ``neo4j`` is the driver module.

Query text comes from the ``cypher`` modules (``graphrag_got.graph.cypher`` and the feature modules
next to their callers); every value travels as a parameter.
"""

from __future__ import annotations

import contextlib
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Iterator, LiteralString, cast
from urllib.parse import urlsplit

import neo4j
from neo4j import exceptions as nx

from graphrag_got.config import Neo4jSettings
from graphrag_got.errors import Neo4jError

START_HINT = (
    "Start one with `graphrag-got neo4j start` (embedded, no Docker needed) or `docker compose up -d neo4j`, "
    "or set NEO4J_URI to a running server."
)
#: The driver errors that mean the server did not answer or went away (not a refused query).
CONNECTION_ERRORS = (nx.ServiceUnavailable, nx.SessionExpired, nx.ConnectionPoolError)


@dataclass(frozen=True)
class Limits:
    """The time limits a driver was made with (see :func:`connect`), for messages and queries."""

    timeout_s: float
    setting: str  # the variable that sets timeout_s, named in messages
    query_timeout_s: float | None = None  # server-side limit of each read transaction


#: Limits of the drivers :func:`connect` made (a driver made elsewhere has none: no query limit).
_LIMITS: "weakref.WeakKeyDictionary[neo4j.Driver, Limits]" = weakref.WeakKeyDictionary()


def timed_out(exc: BaseException) -> bool:
    """True when a driver error means "no answer in time" (a stopped, hung or overloaded server)
    rather than "refused" (nothing listens) or a query error."""
    seen: BaseException | None = exc
    for _ in range(8):  # the driver chains a socket timeout under its own error
        if seen is None:
            return False
        if isinstance(seen, (TimeoutError, nx.ConnectionAcquisitionTimeoutError)):
            return True
        text = str(seen).lower()
        if "timed out" in text or "deadline" in text or "timeout" in text:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def hang_hint(exc: BaseException) -> str:
    """A sentence to add to a message about a failed Neo4j call that timed out, else ``""``."""
    if not timed_out(exc):
        return ""
    return (". Neo4j did not answer in time: the server is stopped, hung or overloaded; check it with "
            "`graphrag-got neo4j status`")


def hang_message(uri: str, limits: Limits) -> str:
    """What to say when Neo4j at ``uri`` did not answer within ``limits.timeout_s``."""
    return (f"Neo4j at {uri} did not answer within {limits.timeout_s:g} s ({limits.setting}): the server is "
            "stopped, hung or overloaded. Check it with `graphrag-got neo4j status` (the embedded one restarts "
            "with `graphrag-got neo4j stop` then `graphrag-got neo4j start`); for a slow remote server raise "
            f"{limits.setting}.")


def connection_error(exc: BaseException, driver: neo4j.Driver | None, db: Neo4jSettings, doing: str) -> Neo4jError:
    """One clear Neo4jError for a driver error while ``doing`` something (``"reading the graph"``)."""
    uri = db.uri
    if timed_out(exc):
        limits = _LIMITS.get(driver) if driver is not None else None
        return Neo4jError(f"{doing} failed: " + hang_message(uri, limits or Limits(db.timeout_s,
                                                                                     "GRAPHRAG_NEO4J_TIMEOUT")))
    reason = " ".join(str(exc).split())[:400]
    return Neo4jError(f"{doing} failed: lost the connection to Neo4j at {uri} ({reason}). {START_HINT}")


def connect(db: Neo4jSettings, timeout_s: float | None = None, *, retry_s: float | None = None,
            setting: str = "GRAPHRAG_NEO4J_TIMEOUT", query_timeout_s: float | None = None) -> neo4j.Driver:
    """A driver for ``db.uri`` whose connection, credentials and database were checked.

    ``timeout_s`` (default ``db.timeout_s``, named ``setting`` in messages) bounds
    opening a connection (TCP connect, TLS, Bolt handshake) and taking one from the pool, which
    includes checking that a pooled connection still answers (a liveness check on every use);
    ``retry_s`` (default ``timeout_s``) is how long a failed read or write transaction is retried,
    the first retry after a fifth of it at most (the service passes a short one so a Neo4j that
    went away is answered with 503 within about ``timeout_s``). ``query_timeout_s``: the server
    ends a read transaction of :func:`read_query` / :func:`read_all` that runs longer (the service
    passes its request budget, so a query whose client got 504 stops on the server too).

    Why a liveness check on every use: a read on a pooled connection waits for the server's
    ``connection.recv_timeout_seconds`` hint (Neo4j's keep-alive times its probes, 120 s by
    default), so a server that stopped (SIGSTOP, a frozen VM) while the connection sat in the pool
    held the first request for 121 s; the check is one RESET round trip bounded by ``timeout_s``.
    A query already running when the server hangs still waits for that hint: the driver has no
    read timeout of its own, and one shorter than the server's keep-alive would cut long queries.

    Raises Neo4jError with one message saying what is wrong and what to do; the driver's own
    exception is not chained, so no deep traceback reaches the user.
    """
    timeout_s = db.timeout_s if timeout_s is None else timeout_s
    limits = Limits(timeout_s, setting, query_timeout_s)
    uri = db.uri
    scheme = urlsplit(uri).scheme
    if scheme not in {"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}:
        raise Neo4jError(
            f"NEO4J_URI={uri!r} is not a Bolt address; use bolt://127.0.0.1:7687 (or neo4j://host:7687). "
            "Port 7474 is Neo4j's web console, not the database protocol."
        )
    try:
        urlsplit(uri).port
    except ValueError:
        raise Neo4jError(f"NEO4J_URI={uri!r} has an invalid port; use e.g. bolt://127.0.0.1:7687") from None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            driver = neo4j.GraphDatabase.driver(
                uri,
                auth=(db.username, db.password),
                connection_timeout=timeout_s,
                connection_acquisition_timeout=timeout_s,
                liveness_check_timeout=0,  # every pooled connection is checked before use (docstring)
                max_transaction_retry_time=timeout_s if retry_s is None else retry_s,
                **({} if retry_s is None else {"initial_retry_delay": min(1.0, retry_s / 5)}),
            )
    except (nx.ConfigurationError, ValueError) as exc:
        raise Neo4jError(f"NEO4J_URI={uri!r} is not a valid Neo4j address ({exc}); use e.g. bolt://127.0.0.1:7687") from None

    problem: str | None = None
    try:
        # verify_connectivity and an auto-commit query: unlike execute_query they are not retried,
        # so a stopped server is reported at once instead of after ~30 s of retries.
        driver.verify_connectivity()
        with driver.session(database=db.database, default_access_mode=neo4j.READ_ACCESS) as session:
            session.run("RETURN 1").consume()
    except nx.AuthError as exc:
        problem = (
            f"Neo4j at {uri} refused user {db.username!r} with the configured password "
            f"({exc.message or 'authentication failure'}). Set NEO4J_USERNAME / NEO4J_PASSWORD (environment "
            "or .env) to the server's credentials; the embedded server and the docker compose service use "
            "NEO4J_PASSWORD, default 'graphrag-got'. Note: after 3 failed attempts Neo4j locks the user for 5 s."
        )
    except (*CONNECTION_ERRORS, OSError, ValueError) as exc:
        if timed_out(exc):
            problem = hang_message(uri, limits)
        else:
            reason = str(exc).replace("\n", " ")
            problem = f"no Neo4j server answers at {uri} ({reason}). {START_HINT}"
    except nx.ClientError as exc:
        if exc.code and "DatabaseNotFound" in exc.code:
            problem = (
                f"Neo4j at {uri} has no database {db.database!r}. Set NEO4J_DATABASE to an existing "
                "one (Community edition has exactly one: 'neo4j')."
            )
        else:
            problem = f"Neo4j at {uri} rejected the connection check: {exc.code}: {exc.message}"
    except (nx.Neo4jError, nx.DriverError) as exc:
        problem = f"cannot use Neo4j at {uri}: {type(exc).__name__}: {exc}. {START_HINT}"
    if problem is not None:
        driver.close()
        raise Neo4jError(problem)
    _LIMITS[driver] = limits
    return driver


def _run(driver: neo4j.Driver, db: Neo4jSettings, query: str, params: dict[str, Any] | None,
         routing: neo4j.RoutingControl, **kwargs: Any) -> neo4j.EagerResult:
    what = "write" if routing == neo4j.RoutingControl.WRITE else "read"
    limits = _LIMITS.get(driver)
    text: Any = cast(LiteralString, query)
    if what == "read" and limits is not None and limits.query_timeout_s:
        text = neo4j.Query(text, timeout=limits.query_timeout_s)
    try:
        return driver.execute_query(text, parameters_=params or {}, routing_=routing,
                                    database_=db.database, **kwargs)
    except CONNECTION_ERRORS as exc:
        raise connection_error(exc, driver, db, f"a Neo4j {what}") from exc
    except nx.Neo4jError as exc:
        raise Neo4jError(f"Neo4j {what} failed: {exc.code}: {exc.message}") from exc


def read_query(driver: neo4j.Driver, db: Neo4jSettings, query: str,
               params: dict[str, Any] | None = None, **kwargs: Any) -> neo4j.EagerResult:
    """Run a read query (managed, retried transaction); returns ``(records, summary, keys)``."""
    return _run(driver, db, query, params, neo4j.RoutingControl.READ, **kwargs)


def write_query(driver: neo4j.Driver, db: Neo4jSettings, query: str,
                params: dict[str, Any] | None = None, **kwargs: Any) -> neo4j.EagerResult:
    """Run a write query (managed, retried transaction); returns ``(records, summary, keys)``.

    ``summary.counters`` tells what changed (nodes_created, relationships_created, ...).
    """
    return _run(driver, db, query, params, neo4j.RoutingControl.WRITE, **kwargs)


@contextlib.contextmanager
def session(driver: neo4j.Driver, db: Neo4jSettings, *, write: bool = False) -> Iterator[neo4j.Session]:
    """A session on db.database, read-only unless ``write``; driver errors become one
    clear Neo4jError. Server notifications are off: "property key does not exist" warnings on a
    graph without communities yet are noise."""
    mode = neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS
    try:
        with driver.session(database=db.database, default_access_mode=mode,
                            notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF) as s:
            yield s
    except CONNECTION_ERRORS as exc:
        raise connection_error(exc, driver, db, f"a Neo4j {'write' if write else 'read'}") from exc
    except nx.Neo4jError as exc:
        raise Neo4jError(f"Neo4j {'write' if write else 'read'} failed: {exc.code}: {exc.message}") from exc


def read_session(driver: neo4j.Driver, db: Neo4jSettings) -> contextlib.AbstractContextManager[neo4j.Session]:
    """A read-only session on db.database (writes in it fail on the server)."""
    return session(driver, db)


def write_session(driver: neo4j.Driver, db: Neo4jSettings) -> contextlib.AbstractContextManager[neo4j.Session]:
    """A read-write session on db.database, e.g. for `CALL {...} IN TRANSACTIONS`."""
    return session(driver, db, write=True)


def read_all(driver: neo4j.Driver, db: Neo4jSettings, query: str, **params: Any) -> list[dict[str, Any]]:
    """Records of one read query as dicts, run as a read transaction in a read-only session (ended
    by the server after the driver's query limit, when :func:`connect` was given one)."""
    limits = _LIMITS.get(driver)

    def work(tx: neo4j.ManagedTransaction) -> list[dict[str, Any]]:
        return [r.data() for r in tx.run(cast(LiteralString, query), **params)]

    if limits is not None and limits.query_timeout_s:
        work = neo4j.unit_of_work(timeout=limits.query_timeout_s)(work)
    with session(driver, db) as s:
        return s.execute_read(work)


#: Schema errors that mean another process made (or dropped) the same rule a moment before us: with
#: ``IF NOT EXISTS`` / ``IF EXISTS`` statements they are the outcome we wanted, not a failure.
SCHEMA_ALREADY_DONE = ("EquivalentSchemaRuleAlreadyExists", "IndexAlreadyExists", "ConstraintAlreadyExists",
                       "IndexNotFound", "ConstraintNotFound", "ConstraintDropFailed", "IndexDropFailed")
#: How often a schema statement that met a transient error (a lock, a deadlock) is tried.
SCHEMA_ATTEMPTS = 6


def run_schema(ses: neo4j.Session, statements: list[str]) -> None:
    """Run idempotent schema statements (``CREATE ... IF NOT EXISTS``, ``DROP ... IF EXISTS``) so that
    several processes setting up the same schema at once all succeed.

    Why by hand: ``IF NOT EXISTS`` is checked when the statement starts, so two processes creating the same
    constraint at once both pass the check and the second commit fails with
    ``EquivalentSchemaRuleAlreadyExists``; that error (and its kin in :data:`SCHEMA_ALREADY_DONE`) means the
    rule is there, so it counts as success. A transient error (schema lock, deadlock) is tried again after a
    short pause. Anything else propagates (the caller words it).
    """
    for stmt in statements:
        for attempt in range(1, SCHEMA_ATTEMPTS + 1):
            try:
                ses.run(cast(LiteralString, stmt)).consume()
                break
            except nx.Neo4jError as exc:
                code = exc.code or ""
                if any(code.endswith(tail) for tail in SCHEMA_ALREADY_DONE):
                    break  # another writer made (or dropped) it at the same moment: what we wanted
                if isinstance(exc, nx.TransientError) and attempt < SCHEMA_ATTEMPTS:
                    time.sleep(0.1 * attempt)
                    continue
                raise
