"""Cypher of code impact (:mod:`graphrag_got.code.impact`; read only).

The rules of :mod:`graphrag_got.graph.cypher` apply.
"""

from __future__ import annotations

from typing import Sequence

from graphrag_got.graph.cypher import escape_name

# ---------------------------------------------------------------------------------------------
# Code impact
# ---------------------------------------------------------------------------------------------


def code_impact_candidates() -> str:
    """Entities of the classes ``$types`` whose key is ``$key`` or ends with one of ``$suffixes``
    (``.name`` for a qualified name, ``/name`` for a path), at most ``$limit``."""
    return (
        "MATCH (e:Entity) WHERE e.type IN $types\n"
        "  AND (e.key = $key OR any(s IN $suffixes WHERE e.key ENDS WITH s))\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, e.path AS path, e.start_line AS start_line,\n"
        "       e.nodeid AS nodeid\n"
        "ORDER BY size(e.name), e.name LIMIT $limit"
    )


def code_impact_members() -> str:
    """What the entities ``$uids`` hold through the relationship types ``$types`` (a file's
    definitions, a class's methods), restricted to the classes ``$classes``."""
    return (
        "MATCH (s:Entity)-[r]->(m:Entity) WHERE s.uid IN $uids AND type(r) IN $types AND m.type IN $classes\n"
        "RETURN DISTINCT m.uid AS uid, m.name AS name, m.type AS type, m.path AS path,\n"
        "       m.start_line AS start_line, m.nodeid AS nodeid, s.uid AS via, type(r) AS relation\n"
        "ORDER BY name"
    )


def code_impact_nested() -> str:
    """Entities of the classes ``$classes`` whose key starts with one of ``$prefixes`` (``pkg.mod.f.``:
    the functions and classes written inside a function or class, part of its text)."""
    return (
        "UNWIND $prefixes AS prefix\n"
        "MATCH (m:Entity) WHERE m.key STARTS WITH prefix AND m.type IN $classes\n"
        "RETURN DISTINCT m.uid AS uid, m.name AS name, m.type AS type, m.path AS path,\n"
        "       m.start_line AS start_line, m.nodeid AS nodeid\n"
        "ORDER BY name"
    )


def code_impact_dependents(relations: Sequence[str]) -> str:
    """One step of the blast radius: entities with a relationship of ``relations`` *towards* one of
    ``$frontier`` (uids): the callers, subclasses, importers and tests of the frontier."""
    if not relations:
        raise ValueError("code_impact_dependents needs at least one relationship type")
    types = "|".join(escape_name(r) for r in relations)
    return (
        f"MATCH (a:Entity)-[r:{types}]->(b:Entity) WHERE b.uid IN $frontier\n"
        "RETURN a.uid AS uid, a.name AS name, a.type AS type, a.path AS path, a.start_line AS start_line,\n"
        "       a.nodeid AS nodeid, b.uid AS via, b.name AS via_name, type(r) AS relation, r.lines AS lines,\n"
        "       r.resolution AS resolution\n"
        "ORDER BY uid, via"
    )


def code_impact_executors(relation: str) -> str:
    """Tests with a ``relation`` edge (dynamic evidence, ``EXECUTES``) to one of ``$uids``: the tests a
    recorded run saw executing the changed code."""
    return (
        f"MATCH (t:Entity)-[r:{escape_name(relation)}]->(f:Entity) WHERE f.uid IN $uids\n"
        "RETURN t.uid AS uid, t.name AS name, t.type AS type, t.path AS path, t.start_line AS start_line,\n"
        "       t.nodeid AS nodeid, t.fingerprint AS fingerprint, t.recorded_fingerprint AS recorded,\n"
        "       f.uid AS via, f.name AS via_name, r.lines AS lines\n"
        "ORDER BY uid, via"
    )


def code_recorded_tests(relation: str) -> str:
    """Which of the tests ``$uids`` have any ``relation`` edge (``EXECUTES``): the tests a recorded run
    measured at all."""
    return (
        f"MATCH (t:Entity) WHERE t.uid IN $uids AND EXISTS {{ (t)-[:{escape_name(relation)}]->() }}\n"
        "RETURN t.uid AS uid, t.fingerprint AS fingerprint, t.recorded_fingerprint AS recorded ORDER BY uid"
    )


def code_test_successors(defines: str) -> str:
    """For the entities ``$uids`` that no File defines any more but a recorded run saw (a
    ``recorded_fingerprint``): the one test or function of the tree, new to the run (no recorded
    fingerprint of its own), whose text is the one the run saw (a test moved to another file)."""
    return (
        "MATCH (g:Entity) WHERE g.uid IN $uids AND g.recorded_fingerprint IS NOT NULL\n"
        f"  AND NOT EXISTS {{ (:Entity)-[:{escape_name(defines)}]->(g) }}\n"
        "MATCH (t:Entity) WHERE t.type = g.type AND t.fingerprint = g.recorded_fingerprint\n"
        f"  AND t.recorded_fingerprint IS NULL AND EXISTS {{ (:Entity)-[:{escape_name(defines)}]->(t) }}\n"
        "WITH g, collect(t) AS found WHERE size(found) = 1\n"
        "WITH g, found[0] AS t\n"
        "RETURN g.uid AS ghost, t.uid AS uid, t.name AS name, t.type AS type, t.path AS path,\n"
        "       t.start_line AS start_line, t.nodeid AS nodeid ORDER BY ghost"
    )


def code_test_predecessors(defines: str, relation: str) -> str:
    """For the tests ``$uids`` new to the recorded run (no ``recorded_fingerprint``): the one test the
    run measured (a ``relation`` edge, ``EXECUTES``) that no File defines any more and whose recorded
    text is theirs (the same test, moved to another file since the run)."""
    return (
        "MATCH (t:Entity) WHERE t.uid IN $uids AND t.recorded_fingerprint IS NULL AND t.fingerprint IS NOT NULL\n"
        "MATCH (g:Entity) WHERE g.type = t.type AND g.recorded_fingerprint = t.fingerprint\n"
        f"  AND NOT EXISTS {{ (:Entity)-[:{escape_name(defines)}]->(g) }}\n"
        f"  AND EXISTS {{ (g)-[:{escape_name(relation)}]->() }}\n"
        "WITH t, collect(g.uid) AS found WHERE size(found) = 1\n"
        "RETURN t.uid AS uid, found[0] AS ghost ORDER BY uid"
    )


def code_graph_size() -> str:
    """How many entities of the classes ``$types`` the graph holds (is a code graph loaded?)."""
    return "MATCH (e:Entity) WHERE e.type IN $types RETURN count(e) AS count"


def code_impact_unresolved() -> str:
    """``unresolved_calls`` of the entities ``$uids`` (a property the code extractor writes)."""
    return "MATCH (e:Entity) WHERE e.uid IN $uids RETURN e.uid AS uid, e.unresolved_calls AS unresolved"


# ---------------------------------------------------------------------------------------------
# Impact of a diff (graphrag_got.code.diff)
# ---------------------------------------------------------------------------------------------


def code_entities_by_key() -> str:
    """Entities of the classes ``$types`` whose key is one of ``$keys`` (the definitions a diff names),
    with their fingerprints (current, and the one a recorded coverage run saw)."""
    return (
        "MATCH (e:Entity) WHERE e.key IN $keys AND e.type IN $types\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, e.path AS path, e.start_line AS start_line,\n"
        "       e.end_line AS end_line, e.nodeid AS nodeid, e.fingerprint AS fingerprint,\n"
        "       e.recorded_fingerprint AS recorded, e.recorded_start_line AS recorded_start_line,\n"
        "       EXISTS { (:Entity)-[:DEFINES]->(e) } AS defined"
    )


def code_coverage_state() -> str:
    """Fingerprints of the entities ``$uids``: the current one and the one a recorded run saw."""
    return ("MATCH (e:Entity) WHERE e.uid IN $uids\n"
            "RETURN e.uid AS uid, e.fingerprint AS fingerprint, e.recorded_fingerprint AS recorded")


def code_module_executors(relation: str) -> str:
    """Tests with a ``relation`` edge (``EXECUTES``) to a function of one of the files ``$paths``: the
    tests a recorded run saw running code of those modules."""
    return (
        f"MATCH (t:Entity)-[r:{escape_name(relation)}]->(f:Entity) WHERE f.path IN $paths\n"
        "RETURN DISTINCT t.uid AS uid, t.name AS name, t.type AS type, t.path AS path, t.start_line AS start_line,\n"
        "       t.nodeid AS nodeid, f.path AS via\n"
        "ORDER BY uid, via"
    )


# ---------------------------------------------------------------------------------------------
# Orphan symbols (graphrag_got.code.orphans)
# ---------------------------------------------------------------------------------------------


def code_symbol_uses(uses: Sequence[str], defines: str, executes: str, contains: str) -> str:
    """Every Function and Class with what points at it: whether a File defines it, how many edges of
    ``uses`` (calls, tests, subclasses, fixture uses) reach it, whether a recorded run executed it, and
    for a class, the uids of its methods."""
    if not uses:
        raise ValueError("code_symbol_uses needs at least one relationship type")
    types = "|".join(escape_name(u) for u in uses)
    return (
        "MATCH (e:Entity) WHERE e.type IN $types\n"
        "RETURN e.uid AS uid, e.name AS name, e.type AS type, e.path AS path, e.start_line AS start_line,\n"
        "       e.kind AS kind, e.doc_ids AS doc_ids,\n"
        f"       EXISTS {{ (:Entity)-[:{escape_name(defines)}]->(e) }} AS defined,\n"
        f"       COUNT {{ (:Entity)-[:{types}]->(e) }} AS uses,\n"
        f"       EXISTS {{ (:Entity)-[:{escape_name(executes)}]->(e) }} AS executed,\n"
        f"       [(e)-[:{escape_name(contains)}]->(m:Entity) | m.uid] AS members\n"
        "ORDER BY path, name"
    )


def code_has_relation(relation: str) -> str:
    """One relationship of type ``relation`` if the graph holds any (is there a recorded run?)."""
    return f"MATCH ()-[r:{escape_name(relation)}]->() RETURN count(r) > 0 AS found LIMIT 1"
