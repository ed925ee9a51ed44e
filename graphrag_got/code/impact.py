"""The blast radius of a change: what calls, subclasses, imports or tests it, and which tests ran it.

``impact(driver, settings.neo4j, target, hops=None, code=settings.code)`` reads the code graph
(``ontology/code.json``, written by ``extract --extractor code`` and ``load``) with read-only Cypher:

1. the target is a file path (``pkg/mod.py``) or a qualified name or its tail (``mod.func``,
   ``Class.method``, ``func``); exact names win over tails, and a tail shared by several entities
   is refused with the candidates listed;
2. the seeds (distance 0) are the target plus what it holds: a file's definitions, a class's methods,
   the functions and classes written inside a function;
3. the closure over dependents: each step follows CALLS, MAY_CALL (a call that may dispatch to an
   override), INHERITS, IMPORTS and USES_FIXTURE *backwards* from the previous step's new nodes,
   one query per step, until nothing new is reached (a fixed point; ``hops`` stops it earlier) or
   ``code.impact_max_nodes`` nodes are collected (the result says it was cut, and where);
4. a test is not a hop: a Test reached by TESTS, USES_FIXTURE or a call from a node at distance d
   is at distance d. Its static path is ``exact`` when every edge on it is an exact call
   (``CALLS`` without a ``resolution`` other than :data:`~graphrag_got.code.vocabulary.EXACT_RESOLUTIONS`,
   INHERITS, IMPORTS, TESTS, USES_FIXTURE) and ``dispatch`` when one of them may dispatch;
5. dynamic evidence: the tests with an EXECUTES edge (a recorded coverage run,
   :mod:`graphrag_got.code.coverage`) to a seed ran the changed code; each test says whether it
   comes from the static closure, from coverage or from both;
6. affected files are the seeds' files, the importers reached and the files of the affected
   definitions; for a file target, the tests of test files that import an affected file are added.

A call that static analysis could not resolve has no edge, so the static radius is a lower bound: the
functions' ``unresolved_calls`` say how much was left out (reported as ``unresolved_calls_in_radius``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

import neo4j

from graphrag_got.code import cypher
from graphrag_got.config import CodeSettings, Neo4jSettings
from graphrag_got.errors import ConfigError, Neo4jError, SearchError
from graphrag_got.common.normalize import normalize_name
from graphrag_got.code import vocabulary as v

logger = logging.getLogger(__name__)

FORMAT = "graphrag_got.impact/2"
MAX_HOPS = 1000
CANDIDATE_LIMIT = 50
SYMBOL_CLASSES = (v.FUNCTION, v.CLASS, v.TEST)
#: Relations followed backwards from the frontier (names absent from the graph simply match nothing).
FOLLOWED = (v.CALLS, v.MAY_CALL, v.INHERITS, v.IMPORTS, v.USES_FIXTURE, v.TESTS)
#: Kinds of the static path that reached a node or test, best first.
EXACT, DISPATCH, IMPORT = "exact", "dispatch", "import"
STATIC, COVERAGE, BOTH = "static", "coverage", "both"
#: A test the static closure reaches but the recorded run measured without it executing the target.
NOT_RUN = "static, not run"


class ImpactError(SearchError):
    """The impact target matches nothing (or too much), or the graph holds no code graph."""


@dataclass
class ImpactNode:
    uid: str
    name: str
    type: str
    distance: int
    path: str | None = None
    start_line: str | None = None
    nodeid: str | None = None
    via: str | None = None  # "CALLS pkg.mod.f (lines 12, 40)": the edge it was reached by
    unresolved_calls: int = 0
    path_kind: str | None = None  # static path: exact | dispatch | import (tests of importing files)
    evidence: str | None = None  # tests: static | coverage | both
    executed: str | None = None  # tests with coverage evidence: "pkg.mod.f (lines 3-5)"

    @property
    def location(self) -> str:
        if not self.path:
            return ""
        return f"{self.path}:{self.start_line}" if self.start_line else self.path

    @property
    def evidence_label(self) -> str:
        if self.evidence == COVERAGE:
            return "coverage"
        static = f"static {self.path_kind}" if self.path_kind else "static"
        return f"{static} + coverage" if self.evidence == BOTH else static


@dataclass
class ImpactResult:
    target: str
    hops: int | None  # None: to a fixed point
    matches: list[ImpactNode]
    changed: list[ImpactNode] = field(default_factory=list)  # seeds besides the match (distance 0)
    affected: list[ImpactNode] = field(default_factory=list)  # functions and classes, distance >= 1
    files: list[ImpactNode] = field(default_factory=list)
    tests: list[ImpactNode] = field(default_factory=list)
    #: tests reached statically that the recorded coverage run measured without executing the target:
    #: the dynamic evidence overrules the static guess, so they are listed apart (not in pytest_args)
    not_run: list[ImpactNode] = field(default_factory=list)
    queries: int = 0
    steps: int = 0  # closure steps taken (the largest distance reached)
    cut: bool = False  # the closure stopped at max_nodes before its fixed point
    max_nodes: int = 0
    stale: int = 0  # seeds changed since the recorded coverage run (its tests are not overruled then)

    @property
    def unresolved_calls_in_radius(self) -> int:
        return sum(n.unresolved_calls for n in [*self.matches, *self.changed, *self.affected])

    def evidence_counts(self) -> dict[str, int]:
        return {k: sum(t.evidence == k for t in self.tests) for k in (STATIC, COVERAGE, BOTH)}

    def to_data(self) -> dict[str, Any]:
        def rows(nodes: list[ImpactNode]) -> list[dict[str, Any]]:
            return [{k: val for k, val in asdict(n).items() if val is not None} for n in nodes]

        return {
            "format": FORMAT, "target": self.target, "hops": self.hops, "steps": self.steps,
            "fixed_point": not self.cut and self.hops is None, "cut": self.cut, "max_nodes": self.max_nodes,
            "matches": rows(self.matches), "changed": rows(self.changed), "affected": rows(self.affected),
            "files": rows(self.files), "tests": rows(self.tests), "static_not_run": rows(self.not_run),
            "pytest_args": [t.nodeid for t in self.tests if t.nodeid],
            "counts": {"affected": len(self.affected), "files": len(self.files), "tests": len(self.tests),
                       "tests_by_evidence": self.evidence_counts(), "static_not_run": len(self.not_run),
                       "unresolved_calls_in_radius": self.unresolved_calls_in_radius,
                       "stale_seeds": self.stale},
        }

    def lines(self) -> list[str]:
        """The human report, nearest first (also the context whose size the benchmark measures)."""
        out = []
        for m in self.matches:
            out.append(f"target: {m.name} ({m.type}{', ' + m.location if m.location else ''})")
        reach = f"within {self.hops} step(s)" if self.hops is not None else "to a fixed point"
        if self.cut:
            reach = (f"cut at {self.max_nodes} nodes (GRAPHRAG_IMPACT_MAX_NODES) at distance {self.steps}: farther "
                     "dependents are not listed")
        ev = self.evidence_counts()
        out.append(f"blast radius {reach}: {len(self.affected)} function(s)/class(es), {len(self.files)} file(s), "
                   f"{len(self.tests)} test(s) ({ev[STATIC]} static only, {ev[COVERAGE]} coverage only, "
                   f"{ev[BOTH]} both)")
        if self.changed:
            out.append(f"changed with it ({len(self.changed)}): " + ", ".join(n.name for n in self.changed[:20])
                       + (" ..." if len(self.changed) > 20 else ""))
        if self.affected:
            out.append("affected functions and classes (distance, name, where, reached by):")
            out += [f"  {n.distance}  {n.type:<8} {n.name}  {n.location}  <- {n.via}"
                    + (" [dispatch]" if n.path_kind == DISPATCH else "") for n in self.affected]
        if self.files:
            out.append("affected files:")
            out += [f"  {n.distance}  {n.name}" for n in self.files]
        if self.tests:
            out.append("tests to run (distance, test, evidence):")
            out += [f"  {n.distance}  {n.nodeid or n.name}  [{n.evidence_label}]" for n in self.tests]
        if self.not_run:
            out.append(f"not listed: {len(self.not_run)} test(s) reach it statically, but the recorded coverage run "
                       "measured them without executing it (re-import a newer coverage file after changing the code): "
                       + ", ".join(n.nodeid or n.name for n in self.not_run[:10]) + (" ..." if len(self.not_run) > 10 else ""))
        if self.stale:
            out.append(f"note: {self.stale} of these definitions changed since the recorded coverage run: its tests "
                       "are kept as recorded and no static test is overruled (run the tests with coverage again)")
        if self.unresolved_calls_in_radius:
            out.append(f"note: {self.unresolved_calls_in_radius} call site(s) in these functions could not be "
                       "resolved statically; callers reached only through them are not listed")
        return out


class _Reader:
    """Read-only queries of one impact question, in one session."""

    def __init__(self, driver: neo4j.Driver, db: Neo4jSettings) -> None:
        self.driver, self.db, self.session, self.count = driver, db, None, 0

    def __enter__(self) -> "_Reader":
        try:
            self.session = self.driver.session(database=self.db.database,
                                               notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF)
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"reading the code graph failed: {exc}") from exc
        return self

    def __exit__(self, *exc: object) -> None:
        if self.session is not None:
            self.session.close()

    def __call__(self, query: str, **params: Any) -> list[dict[str, Any]]:
        assert self.session is not None
        self.count += 1
        try:
            return self.session.execute_read(lambda tx: [r.data() for r in tx.run(query, **params)])
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"reading the code graph failed: {exc}") from exc


def _read(driver: neo4j.Driver, db: Neo4jSettings, query: str, **params: Any) -> list[dict[str, Any]]:
    with _Reader(driver, db) as read:
        return read(query, **params)


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _node(row: dict[str, Any], distance: int, via: str | None = None) -> ImpactNode:
    return ImpactNode(uid=row["uid"], name=row["name"], type=row["type"], distance=distance, path=row.get("path"),
                      start_line=row.get("start_line"), nodeid=row.get("nodeid"), via=via)


def find_target(driver: neo4j.Driver, db: Neo4jSettings, target: str, read: _Reader | None = None
                ) -> list[ImpactNode]:
    """The entities ``target`` names (one, or several only when they share the exact same name)."""
    if read is None:
        with _Reader(driver, db) as own:
            return find_target(driver, db, target, own)
    raw = target.strip()
    if not raw:
        raise ImpactError("the impact target is empty: give a file path (pkg/mod.py), a qualified name "
                          "(pkg.mod.func) or its tail (mod.func, Class.method).")
    is_path = _is_path(raw)
    text = raw.replace("\\", "/").removeprefix("./") if is_path else raw
    key = normalize_name(text)
    types = [v.FILE] if is_path else list(SYMBOL_CLASSES)
    suffixes = ["/" + key] if is_path else ["." + key]
    rows = read(cypher.code_impact_candidates(), types=types, key=key, suffixes=suffixes, limit=CANDIDATE_LIMIT)
    if not rows:
        if not read(cypher.code_graph_size(), types=list(v.CLASSES))[0]["count"]:
            raise ImpactError("the graph holds no code graph: run `graphrag-got extract --extractor code REPO "
                              "--ontology ontology/code.json` and `graphrag-got load --ontology "
                              "ontology/code.json` first.")
        what = "file" if is_path else "function, class or test"
        raise ImpactError(f"{raw!r} matches no {what} of the code graph; give a path relative to the analysed "
                          "root (pkg/mod.py) or a qualified name or its tail (pkg.mod.func, Class.method).")
    sep = "/" if is_path else "."

    def tier(name: str) -> int:  # exact name, exact tail, then the same ignoring case
        if name == text:
            return 0
        if name.endswith(sep + text):
            return 1
        return 2 if normalize_name(name) == key else 3

    best = min(tier(r["name"]) for r in rows)
    chosen = [r for r in rows if tier(r["name"]) == best]
    if best > 0 and len({r["name"] for r in chosen}) > 1:
        shown = ", ".join(f"{r['name']} ({r['type']})" for r in chosen[:10])
        more = f" and {len(chosen) - 10} more" if len(chosen) > 10 else ""
        raise ImpactError(f"{raw!r} is ambiguous: it names {len(chosen)} entities: {shown}{more}. "
                          "Give a longer qualified name.")
    return [_node(r, 0) for r in chosen]


def _edge_kind(row: dict[str, Any]) -> str:
    if row["relation"] == v.MAY_CALL:
        return DISPATCH
    resolution = row.get("resolution")
    if row["relation"] == v.CALLS and resolution is not None and resolution not in v.EXACT_RESOLUTIONS:
        return DISPATCH
    return EXACT


def _better(kind: str, than: str | None) -> bool:
    order = (EXACT, DISPATCH, IMPORT)
    return than is None or order.index(kind) < order.index(than)


def _via(row: dict[str, Any]) -> str:
    lines = row.get("lines") or ""
    where = f" (line{'s' if ',' in lines or '-' in lines else ''} {lines})" if lines else ""
    return f"{row['relation']} {row['via_name']}{where}"


def check_hops(hops: int | None) -> None:
    """``hops`` is None (the whole closure) or an integer from 1 to MAX_HOPS (a ConfigError otherwise)."""
    if hops is not None and (isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS):
        raise ConfigError(f"--hops must be an integer from 1 to {MAX_HOPS}, got {hops!r} (leave it out for the "
                          "whole closure)")


def impact(driver: neo4j.Driver, db: Neo4jSettings, target: str, hops: int | None = None, *,
           code: CodeSettings) -> ImpactResult:
    """The blast radius of ``target``: its dependents to a fixed point (or within ``hops`` steps), the
    tests that reach them statically and the tests a recorded run saw executing it."""
    check_hops(hops)
    with _Reader(driver, db) as read:
        result = _impact(read, code, target, hops, find_target(driver, db, target, read))
        result.queries = read.count
    logger.info("impact of %s: %d affected, %d files, %d tests, %d queries%s", target, len(result.affected),
                len(result.files), len(result.tests), result.queries, " (cut)" if result.cut else "")
    return result


def _impact(read: _Reader, code: CodeSettings, target: str, hops: int | None,
            matches: list[ImpactNode]) -> ImpactResult:
    max_nodes = code.impact_max_nodes
    result = ImpactResult(target=target, hops=hops, matches=matches, max_nodes=max_nodes)
    seen: dict[str, ImpactNode] = {}
    for m in matches:
        m.path_kind = EXACT
        seen[m.uid] = m
    for row in read(cypher.code_impact_members(), uids=list(seen), types=[v.DEFINES, v.CONTAINS],
                    classes=list(SYMBOL_CLASSES)):
        if row["uid"] not in seen:
            seen[row["uid"]] = node = _node(row, 0, f"{row['relation']} of {target}")
            node.path_kind = EXACT
            result.changed.append(node)
    symbols = [normalize_name(m.name) + "." for m in matches if m.type != v.FILE]
    for row in read(cypher.code_impact_nested(), prefixes=symbols, classes=list(SYMBOL_CLASSES)) if symbols else ():
        if row["uid"] not in seen:  # a function or class written inside the target is part of its text
            seen[row["uid"]] = node = _node(row, 0, f"inside {target}")
            node.path_kind = EXACT
            result.changed.append(node)
    seen, tests = closure(read, code, seen, hops, result)
    _executed(read, result, seen, tests)
    _unresolved(read, seen)
    nodes = [n for n in seen.values() if n.type != v.TEST]
    result.affected = sorted((n for n in nodes if n.distance > 0 and n.type in (v.FUNCTION, v.CLASS)), key=_rank)
    result.files = affected_files(nodes)
    import_tests(read, nodes, tests)
    seeds = [n.uid for n in [*result.matches, *result.changed] if n.type != v.TEST]
    stale = [uid for uid, row in coverage_state(read, seeds).items() if is_stale(row)]
    if stale:  # the recorded run saw other code: its evidence says nothing against a static path
        for t in tests.values():
            if t.evidence in (COVERAGE, BOTH):
                t.executed = f"{t.executed} (recorded before it changed)"
    else:
        overrule_by_coverage(read, result, tests)
    result.stale = len(stale)
    result.tests = sorted(tests.values(), key=_rank)
    return result


def coverage_state(read: _Reader, uids: list[str]) -> dict[str, dict[str, Any]]:
    """uid -> ``{fingerprint, recorded}`` of the entities ``uids`` (one query)."""
    return {row["uid"]: row for row in read(cypher.code_coverage_state(), uids=uids)} if uids else {}


def is_stale(row: dict[str, Any]) -> bool:
    """The recorded coverage run saw another version of this definition (both fingerprints known,
    different). Without a recorded fingerprint (no coverage, or one imported before fingerprints were
    recorded) the evidence is taken as recorded on this code."""
    return bool(row.get("recorded")) and bool(row.get("fingerprint")) and row["recorded"] != row["fingerprint"]


def closure(read: _Reader, code: CodeSettings, seen: dict[str, ImpactNode], hops: int | None,
            result: ImpactResult) -> tuple[dict[str, ImpactNode], dict[str, ImpactNode]]:
    """The closure over dependents from the seeds ``seen`` (uid -> node at distance 0, ``path_kind``
    set): every node reached (``seen``, grown in place) and the tests reached (uid -> test), one query
    per step; ``result.steps`` and ``result.cut`` say how far it went."""
    max_nodes = code.impact_max_nodes
    seeds = [uid for uid, n in seen.items() if n.type != v.TEST]
    tests: dict[str, ImpactNode] = {uid: n for uid, n in seen.items() if n.type == v.TEST}
    for t in tests.values():
        t.evidence = STATIC
    frontier = list(seeds)
    collected = len(seeds)  # functions, classes and files (tests do not count against the cap)
    query = cypher.code_impact_dependents(FOLLOWED)
    distance = 0  # of the frontier; its dependents are at distance + 1, its tests at distance
    while frontier:
        new: list[str] = []
        grow = (hops is None or distance < hops) and not result.cut
        for row in read(query, frontier=frontier):
            via = seen[row["via"]]
            kind = EXACT if _edge_kind(row) == EXACT and via.path_kind == EXACT else DISPATCH
            uid = row["uid"]
            if row["type"] == v.TEST:  # a test link is not a step: the test is at its code's distance
                t = tests.get(uid)
                if t is None or (via.distance, _rank_kind(kind)) < (t.distance, _rank_kind(t.path_kind)):
                    tests[uid] = t = _node(row, via.distance, _via(row))
                    t.path_kind, t.evidence = kind, STATIC
                continue
            node = seen.get(uid)
            if node is not None:
                if node.distance == distance + 1 and _better(kind, node.path_kind):
                    node.path_kind, node.via = kind, _via(row)
                continue
            if not grow or result.cut:
                continue
            if collected >= max_nodes:
                result.cut = True
                continue
            collected += 1
            seen[uid] = node = _node(row, distance + 1, _via(row))
            node.path_kind = kind
            new.append(uid)
        distance += 1
        if new:
            result.steps = distance
        frontier = new
    return seen, tests


def import_tests(read: _Reader, nodes: list[ImpactNode], tests: dict[str, ImpactNode]) -> None:
    """Add the tests of the test files among ``nodes`` (a target file and the importers reached)."""
    file_nodes = {n.uid: n for n in nodes if n.type == v.FILE}
    if not file_nodes:
        return
    for row in read(cypher.code_impact_members(), uids=list(file_nodes), types=[v.DEFINES], classes=[v.TEST]):
        dist = file_nodes[row["via"]].distance
        if row["uid"] not in tests or dist < tests[row["uid"]].distance:
            tests[row["uid"]] = t = _node(row, dist, f"in {row['path']}, which imports an affected file"
                                          if dist else f"in {row['path']}")
            t.path_kind, t.evidence = IMPORT, STATIC


def affected_files(nodes: list[ImpactNode]) -> list[ImpactNode]:
    """The files of ``nodes`` (a File node itself, or the file of a definition), nearest first."""
    files: dict[str, ImpactNode] = {}
    for n in nodes:
        path = n.name if n.type == v.FILE else n.path
        if path and (path not in files or n.distance < files[path].distance):
            files[path] = ImpactNode(uid=f"{v.FILE}|{normalize_name(path)}", name=path, type=v.FILE,
                                     distance=n.distance, path=path, via=n.name if n.type != v.FILE else n.via)
    return sorted(files.values(), key=_rank)


def overrule_by_coverage(read: _Reader, result: ImpactResult, tests: dict[str, ImpactNode],
                         only: set[str] | None = None) -> None:
    """Where a user has dynamic evidence it is the real answer: a test found only by the static
    closure (a call that may or may not run) that the recorded run measured without it executing the
    target moves to ``not_run`` (one query). Tests the run did not measure (newer tests, or no coverage
    imported) and tests changed since the run keep their static evidence. ``only``: the tests that may
    be overruled (default: every static one)."""
    static_only = [uid for uid, t in tests.items() if t.evidence == STATIC and (only is None or uid in only)]
    if not static_only:
        return
    measured = [row["uid"] for row in read(cypher.code_recorded_tests(v.EXECUTES), uids=static_only)
                if not is_stale(row)]
    rest = sorted(set(static_only) - set(measured))
    if rest:  # moved to another file since the run: measured under their old name
        measured += [row["uid"] for row in read(cypher.code_test_predecessors(v.DEFINES, v.EXECUTES), uids=rest)]
    for uid in measured:
        t = tests.pop(uid)
        t.evidence = NOT_RUN
        result.not_run.append(t)
    result.not_run.sort(key=_rank)


def current_tests(read: _Reader, rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """Rows of tests a recorded run saw (``code_impact_executors``), each for the test of the tree it is
    now: a test no File defines any more (no node id) is the one test new to the run with its recorded
    text (moved to another file since the run, one query), else it is left out (it no longer exists;
    the count of those is returned)."""
    gone = sorted({r["uid"] for r in rows if not r.get("nodeid")})
    if not gone:
        return rows, 0
    now = {r["ghost"]: r for r in read(cypher.code_test_successors(v.DEFINES), uids=gone)}
    out: list[dict[str, Any]] = []
    for r in rows:
        if r.get("nodeid"):
            out.append(r)
        elif r["uid"] in now:
            t = now[r["uid"]]
            out.append({**r, "uid": t["uid"], "name": t["name"], "path": t["path"], "start_line": t["start_line"],
                        "nodeid": t["nodeid"], "moved_from": r["name"]})
    return out, len({r["uid"] for r in rows if not r.get("nodeid") and r["uid"] not in now})


def _executed(read: _Reader, result: ImpactResult, seen: dict[str, ImpactNode], tests: dict[str, ImpactNode]) -> None:
    """Add the tests a recorded run saw executing a seed (one query)."""
    seeds = [n.uid for n in [*result.matches, *result.changed] if n.type != v.TEST]
    if not seeds:
        return
    rows, _ = current_tests(read, read(cypher.code_impact_executors(v.EXECUTES), uids=seeds))
    for row in rows:
        t = tests.get(row["uid"])
        ran = f"{row['via_name']} (lines {row['lines']})" if row.get("lines") else row["via_name"]
        if t is None:
            tests[row["uid"]] = t = _node(row, 0, f"{v.EXECUTES} {row['via_name']}")
            t.evidence, t.executed = COVERAGE, ran
        else:
            t.evidence = BOTH if t.evidence in (STATIC, BOTH) else t.evidence
            t.executed = ran if t.executed is None else t.executed
            t.distance = 0


def _unresolved(read: _Reader, seen: dict[str, ImpactNode]) -> None:
    """Fill ``unresolved_calls`` of the functions in the radius (one query)."""
    uids = [uid for uid, n in seen.items() if n.type in (v.FUNCTION, v.TEST)]
    if not uids:
        return
    for row in read(cypher.code_impact_unresolved(), uids=uids):
        try:
            seen[row["uid"]].unresolved_calls = int(row["unresolved"] or 0)
        except (TypeError, ValueError):
            continue


def _rank_kind(kind: str | None) -> int:
    return {EXACT: 0, DISPATCH: 1, IMPORT: 2}.get(kind or "", 3)


def _rank(n: ImpactNode) -> tuple[int, str]:
    return (n.distance, n.name)
