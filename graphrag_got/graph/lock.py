"""One writer at a time: a lock on the graph held in Neo4j itself.

A load (or any other writer of the knowledge graph) runs inside :func:`graph_lock`. The lock is one
``(:GraphLock {name})`` node (a uniqueness constraint keeps it one), holding an owner token, the host, pid
and command of its holder, when it was taken and when its lease ends. Because it lives in the database,
it holds across processes and machines: two ``graphrag-got load`` runs against one Neo4j never write at
the same time (two loads of different files at once used to leave a graph matching neither).

* Taking it is one write transaction: MERGE the node and write to it (which takes its write lock until
  commit), read the holder, and become the holder when there is none, when it is us, or when its lease
  expired. So two writers never both take it.
* The lease (``settings.graph.lock_lease_s``) is renewed by a heartbeat thread every third of it; a
  holder that crashed or lost its machine stops renewing, and its lock is taken over once the lease ran
  out (logged, and :attr:`GraphLock.took_over` says whose it was). Times are the server's clock.
* A second writer waits, up to ``settings.graph.lock_wait_s`` (``load --lock-wait``), reporting "waiting
  for the graph lock held by ..." through the progress callback and the log; 0 refuses at once.
  Giving up raises :class:`~graphrag_got.errors.GraphLockBusy` naming the holder.
* It is released in ``finally`` (the node is deleted when it is still ours). A writer whose lease was
  taken over while it wrote (its heartbeat could not reach the server for a whole lease) learns it from
  :meth:`GraphLock.check`, which raises :class:`~graphrag_got.errors.GraphLockLost`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

import neo4j
from neo4j import exceptions as nx

from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.config import GraphSettings, Neo4jSettings
from graphrag_got.errors import GraphLockBusy, GraphLockError, GraphLockLost
from graphrag_got.graph import lock_cypher
from graphrag_got.graph.db import CONNECTION_ERRORS, connection_error, run_schema, session

logger = logging.getLogger(__name__)

#: The one lock of the knowledge graph (loads, community writes).
GRAPH = "graph"
#: Seconds between two attempts to take a lock someone holds.
POLL_S = 0.5
#: Seconds between two "waiting for the graph lock" progress lines.
REPORT_EVERY_S = 5.0


def _when(ms: int | None) -> str:
    if ms is None:
        return "?"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class LockHolder:
    """Who holds a lock, as its node says (times in server milliseconds)."""

    owner: str
    host: str
    pid: int
    command: str
    started_at: int
    expires_at: int
    now: int  # the server's time when it was read

    @classmethod
    def of(cls, rec: dict[str, Any]) -> "LockHolder | None":
        if not rec or rec.get("owner") is None:
            return None
        return cls(owner=rec["owner"], host=str(rec.get("host") or "?"), pid=int(rec.get("pid") or 0),
                   command=str(rec.get("command") or "?"), started_at=int(rec.get("started_at") or 0),
                   expires_at=int(rec.get("expires_at") or 0), now=int(rec["now"]))  # fmt: skip

    @property
    def expired(self) -> bool:
        return self.expires_at < self.now

    def describe(self) -> str:
        """``load of X (pid N on host H) since T``."""
        return f"{self.command} (pid {self.pid} on host {self.host}) since {_when(self.started_at)}"


class GraphLock:
    """A held lock: its heartbeat, :meth:`check` and :meth:`release`. Made by :func:`graph_lock`."""

    def __init__(self, driver: neo4j.Driver, db: Neo4jSettings, name: str, owner: str, lease_s: float,
                 took_over: LockHolder | None) -> None:  # fmt: skip
        self.driver, self.db, self.name, self.owner, self.lease_s = driver, db, name, owner, lease_s
        self.took_over = took_over  # the expired holder this lock was taken from (None: it was free)
        self.lost = False
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, name=f"graph-lock-{name}", daemon=True)
        self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                with session(self.driver, self.db, write=True) as ses:
                    rows = ses.execute_write(lambda tx: list(tx.run(
                        lock_cypher.renew_lock(), name=self.name, owner=self.owner, lease_ms=int(self.lease_s * 1000))))
            except Exception as exc:  # noqa: BLE001 - a missed beat is retried; the lease covers two more
                logger.warning("could not renew the graph lock (%s); trying again in %.0f s", exc, self.lease_s / 3)
                continue
            if not rows:
                self.lost = True
                logger.error("the graph lock was taken over by another writer (our lease had expired)")
                return

    def check(self) -> None:
        """Raise :class:`GraphLockLost` when another writer took the lock over while we held it."""
        if self.lost:
            raise GraphLockLost(
                "another writer took the graph lock over while this one was writing (its lease of "
                f"{self.lease_s:g} s ran out: the heartbeat could not reach Neo4j, or the process was stalled). "
                "The graph may mix both writes: when the other writer is done, run `graphrag-got load FILE "
                "--repair` with the extraction file the graph should hold, or raise GRAPHRAG_LOCK_LEASE.")

    def release(self) -> None:
        self._stop.set()
        self._beat.join(timeout=5)
        if self.lost:
            return
        try:
            with session(self.driver, self.db, write=True) as ses:
                ses.execute_write(lambda tx: tx.run(lock_cypher.release_lock(), name=self.name,
                                                    owner=self.owner).consume())
        except Exception as exc:  # noqa: BLE001 - never hide the writer's own outcome; the lease runs out
            logger.warning("could not release the graph lock (%s); it expires within %.0f s", exc, self.lease_s)


class _Vanished(Exception):
    """The lock node was deleted (released by its holder) between our MERGE and our read: try again."""


def _try_take(driver: neo4j.Driver, db: Neo4jSettings, name: str, owner: str, command: str,
              lease_s: float) -> tuple[bool, LockHolder | None]:  # fmt: skip
    """One attempt: ``(True, the expired holder taken over or None)`` or ``(False, the live holder)``."""

    def work(tx: neo4j.ManagedTransaction) -> tuple[bool, LockHolder | None]:
        tx.run(lock_cypher.claim_lock(), name=name).consume()
        rows = [r.data() for r in tx.run(lock_cypher.read_lock(), name=name)]
        if not rows:  # the holder's release deleted the node our MERGE had matched
            raise _Vanished()
        holder = LockHolder.of(rows[0])
        if holder is not None and holder.owner != owner and not holder.expired:
            return False, holder
        tx.run(lock_cypher.take_lock(), name=name, owner=owner, host=socket.gethostname(), pid=os.getpid(),
               command=command, lease_ms=int(lease_s * 1000)).consume()
        return True, holder if holder is not None and holder.owner != owner else None

    with _raw_session(driver, db) as ses:
        return ses.execute_write(work)


def _raw_session(driver: neo4j.Driver, db: Neo4jSettings) -> neo4j.Session:
    """A write session whose driver errors reach :func:`acquire` as they are (it words them itself)."""
    return driver.session(database=db.database, default_access_mode=neo4j.WRITE_ACCESS,
                          notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF)


def acquire(driver: neo4j.Driver, db: Neo4jSettings, *, command: str, wait_s: float, lease_s: float,
            name: str = GRAPH, progress: ProgressCallback | None = None) -> GraphLock:  # fmt: skip
    """Take the lock ``name`` for ``command`` (e.g. ``"load of out/extraction.json"``), waiting at most
    ``wait_s`` seconds for a live holder; see the module docstring."""
    owner = uuid.uuid4().hex
    deadline = time.monotonic() + wait_s
    reported = 0.0
    try:
        with _raw_session(driver, db) as ses:
            run_schema(ses, [lock_cypher.lock_constraint()])
        while True:
            try:
                taken, holder = _try_take(driver, db, name, owner, command, lease_s)
            except _Vanished:
                time.sleep(0.01)
                continue
            except nx.ClientError as exc:  # the node was deleted (released) under our MERGE: try again
                if "NotFound" not in (exc.code or "") and "Deleted" not in (exc.code or ""):
                    raise
                time.sleep(0.01)
                continue
            if taken:
                break
            assert holder is not None
            left = deadline - time.monotonic()
            if left <= 0:
                raise GraphLockBusy(
                    f"the graph is being written by {holder.describe()}; its lease runs until "
                    f"{_when(holder.expires_at)} and is renewed while it runs. Wait for it to finish and run this "
                    f"again, or wait longer with `--lock-wait SECONDS` (GRAPHRAG_LOCK_WAIT, now {wait_s:g} s). A "
                    "writer that died releases it when its lease runs out (GRAPHRAG_LOCK_LEASE).")
            now = time.monotonic()
            if now - reported >= REPORT_EVERY_S:
                reported = now
                line = f"waiting for the graph lock held by {holder.describe()}"
                logger.info("%s (%.0f s more at most)", line, left)
                if progress:
                    progress(ProgressEvent(step="lock", message=line))
            time.sleep(min(POLL_S, max(left, 0.0)))
    except CONNECTION_ERRORS as exc:
        raise connection_error(exc, driver, db, "taking the graph lock") from exc
    except (nx.Neo4jError, nx.DriverError) as exc:
        raise GraphLockError(f"taking the graph lock failed: {exc}. Check the server with "
                             "`graphrag-got neo4j status` and run this again.") from exc
    if reported and progress:  # we waited: close the waiting line
        progress(ProgressEvent(step="lock", message="graph lock taken", finished=True))
    if holder is not None:
        logger.warning("took over the graph lock of %s: its lease expired at %s (that writer crashed or hung); "
                       "the graph may hold part of its writes", holder.describe(), _when(holder.expires_at))
    return GraphLock(driver, db, name, owner, lease_s, holder)


def current_holder(driver: neo4j.Driver, db: Neo4jSettings, name: str = GRAPH) -> LockHolder | None:
    """Who holds the lock ``name`` now (None: nobody; an expired holder is returned, see ``expired``)."""
    with session(driver, db) as ses:
        rows = ses.execute_read(lambda tx: [r.data() for r in tx.run(lock_cypher.read_lock(), name=name)])
    return LockHolder.of(rows[0]) if rows else None


@contextlib.contextmanager
def graph_lock(driver: neo4j.Driver, db: Neo4jSettings, graph: GraphSettings, *, command: str,
               wait_s: float | None = None, progress: ProgressCallback | None = None) -> Iterator[GraphLock]:
    """Hold the graph lock while the block runs (``wait_s``: default ``graph.lock_wait_s``; the lease is
    ``graph.lock_lease_s``); released in ``finally``."""
    lock = acquire(driver, db, command=command, wait_s=graph.lock_wait_s if wait_s is None else wait_s,
                   lease_s=graph.lock_lease_s, progress=progress)
    try:
        yield lock
    finally:
        lock.release()
