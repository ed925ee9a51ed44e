"""Cypher of the graph lock (:mod:`graphrag_got.graph.lock`): one ``(:GraphLock)`` node per lock name.

Every value is a parameter; times are the server's clock (``timestamp()``, milliseconds), so writers on
machines whose clocks disagree still agree on when a lease expires.
"""

from __future__ import annotations

from graphrag_got.graph.cypher import escape_name

#: The label of the lock node (not an ontology class: the ontology refuses reserved names, and no
#: reader of the knowledge graph matches it).
GRAPH_LOCK = "GraphLock"


def lock_constraint() -> str:
    """One lock node per name: two writers MERGEing it at once find the same node."""
    return (f"CREATE CONSTRAINT graph_lock_name IF NOT EXISTS FOR (l:{escape_name(GRAPH_LOCK)}) "
            "REQUIRE l.name IS UNIQUE")


def claim_lock() -> str:
    """MERGE the lock node ``$name`` and write to it, which takes the node's write lock until the transaction
    ends: the reads that follow in the same transaction see the latest committed holder, and no other
    writer can change it before this one commits (read the holder with :func:`read_lock` next)."""
    return f"MERGE (l:{escape_name(GRAPH_LOCK)} {{name: $name}}) SET l.claimed_at = timestamp()"


def take_lock() -> str:
    """Make ``$owner`` the holder of ``$name`` with a lease of ``$lease_ms`` (run after :func:`claim_lock`)."""
    return (f"MATCH (l:{escape_name(GRAPH_LOCK)} {{name: $name}})\n"
            "SET l.owner = $owner, l.host = $host, l.pid = $pid, l.command = $command,\n"
            "    l.started_at = timestamp(), l.expires_at = timestamp() + $lease_ms")


def renew_lock() -> str:
    """Extend ``$owner``'s lease (the heartbeat); no row when the lock is no longer ``$owner``'s."""
    return (f"MATCH (l:{escape_name(GRAPH_LOCK)} {{name: $name}}) WHERE l.owner = $owner\n"
            "SET l.expires_at = timestamp() + $lease_ms RETURN l.expires_at AS expires_at")


def release_lock() -> str:
    """Delete the lock node when ``$owner`` still holds it (a lock taken over is left to its new holder)."""
    return f"MATCH (l:{escape_name(GRAPH_LOCK)} {{name: $name}}) WHERE l.owner = $owner DELETE l"


def read_lock() -> str:
    """The holder of ``$name`` (``owner`` null, or no row, when nobody holds it) and the server's time."""
    return (f"MATCH (l:{escape_name(GRAPH_LOCK)} {{name: $name}})\n"
            "RETURN l.owner AS owner, l.host AS host, l.pid AS pid, l.command AS command,\n"
            "       l.started_at AS started_at, l.expires_at AS expires_at, timestamp() AS now")
