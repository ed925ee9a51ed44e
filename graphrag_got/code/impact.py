"""The blast radius of a change: what calls, subclasses, imports or tests it, within N hops.

``impact(driver, settings, target, hops)`` reads the code graph (``ontology/code.json``, written by
``extract --extractor code`` and ``load``) with read-only Cypher:

1. the target is a file path (``pkg/mod.py``) or a qualified name or its tail (``mod.func``,
   ``Class.method``, ``func``); exact names win over tails, and a tail shared by several entities
   is refused with the candidates listed;
2. the seeds (distance 0) are the target plus what it holds: a file's definitions, a class's methods;
3. each hop follows CALLS, INHERITS, IMPORTS and TESTS *backwards* (callers, subclasses, importers,
   tests) from the previous hop's new nodes, one query per hop, so a hub cannot blow up the query;
4. affected files are the seeds' files, the importers reached and the files of the affected
   definitions; the tests to run are the Test nodes reached plus the tests of test files that
   import an affected file, each at the distance it was reached.

A call that static analysis could not resolve has no edge, so the radius is a lower bound: the
functions' ``unresolved_calls`` say how much was left out (reported as ``unresolved_calls_in_radius``).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from typing import Any

import neo4j

from graphrag_got.code import cypher
from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError, Neo4jError, SearchError
from graphrag_got.common.normalize import normalize_name
from graphrag_got.code import vocabulary as v

logger = logging.getLogger(__name__)

FORMAT = "graphrag_got.impact/1"
MAX_HOPS = 10
CANDIDATE_LIMIT = 50
SYMBOL_CLASSES = (v.FUNCTION, v.CLASS, v.TEST)


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

    @property
    def location(self) -> str:
        if not self.path:
            return ""
        return f"{self.path}:{self.start_line}" if self.start_line else self.path


@dataclass
class ImpactResult:
    target: str
    hops: int
    matches: list[ImpactNode]
    changed: list[ImpactNode] = field(default_factory=list)  # seeds besides the match (distance 0)
    affected: list[ImpactNode] = field(default_factory=list)  # functions and classes, distance >= 1
    files: list[ImpactNode] = field(default_factory=list)
    tests: list[ImpactNode] = field(default_factory=list)
    queries: int = 0

    @property
    def unresolved_calls_in_radius(self) -> int:
        return sum(n.unresolved_calls for n in [*self.matches, *self.changed, *self.affected])

    def to_data(self) -> dict[str, Any]:
        def rows(nodes: list[ImpactNode]) -> list[dict[str, Any]]:
            return [{k: val for k, val in asdict(n).items() if val is not None} for n in nodes]

        return {
            "format": FORMAT, "target": self.target, "hops": self.hops,
            "matches": rows(self.matches), "changed": rows(self.changed), "affected": rows(self.affected),
            "files": rows(self.files), "tests": rows(self.tests),
            "pytest_args": [t.nodeid for t in self.tests if t.nodeid],
            "counts": {"affected": len(self.affected), "files": len(self.files), "tests": len(self.tests),
                       "unresolved_calls_in_radius": self.unresolved_calls_in_radius},
        }

    def lines(self) -> list[str]:
        """The human report, nearest first (also the context whose size the benchmark measures)."""
        out = []
        for m in self.matches:
            out.append(f"target: {m.name} ({m.type}{', ' + m.location if m.location else ''})")
        out.append(f"blast radius within {self.hops} hop(s): {len(self.affected)} function(s)/class(es), "
                   f"{len(self.files)} file(s), {len(self.tests)} test(s)")
        if self.changed:
            out.append(f"changed with it ({len(self.changed)}): " + ", ".join(n.name for n in self.changed[:20])
                       + (" ..." if len(self.changed) > 20 else ""))
        if self.affected:
            out.append("affected functions and classes (distance, name, where, reached by):")
            out += [f"  {n.distance}  {n.type:<8} {n.name}  {n.location}  <- {n.via}" for n in self.affected]
        if self.files:
            out.append("affected files:")
            out += [f"  {n.distance}  {n.name}" for n in self.files]
        if self.tests:
            out.append("tests to run:")
            out += [f"  {n.distance}  {n.nodeid or n.name}" for n in self.tests]
        if self.unresolved_calls_in_radius:
            out.append(f"note: {self.unresolved_calls_in_radius} call site(s) in these functions could not be "
                       "resolved statically; callers reached only through them are not listed")
        return out


def _read(driver: neo4j.Driver, settings: Settings, query: str, **params: Any) -> list[dict[str, Any]]:
    try:
        with driver.session(database=settings.neo4j.database,
                            notifications_min_severity=neo4j.NotificationMinimumSeverity.OFF) as s:
            return s.execute_read(lambda tx: [r.data() for r in tx.run(query, **params)])
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"reading the code graph failed: {exc}") from exc


def _is_path(target: str) -> bool:
    return target.endswith(".py") or "/" in target or "\\" in target


def _node(row: dict[str, Any], distance: int, via: str | None = None) -> ImpactNode:
    return ImpactNode(uid=row["uid"], name=row["name"], type=row["type"], distance=distance, path=row.get("path"),
                      start_line=row.get("start_line"), nodeid=row.get("nodeid"), via=via)


def find_target(driver: neo4j.Driver, settings: Settings, target: str) -> list[ImpactNode]:
    """The entities ``target`` names (one, or several only when they share the exact same name)."""
    raw = target.strip()
    if not raw:
        raise ImpactError("the impact target is empty: give a file path (pkg/mod.py), a qualified name "
                          "(pkg.mod.func) or its tail (mod.func, Class.method).")
    is_path = _is_path(raw)
    text = raw.replace("\\", "/").removeprefix("./") if is_path else raw
    key = normalize_name(text)
    types = [v.FILE] if is_path else list(SYMBOL_CLASSES)
    suffixes = ["/" + key] if is_path else ["." + key]
    rows = _read(driver, settings, cypher.code_impact_candidates(), types=types, key=key, suffixes=suffixes,
                 limit=CANDIDATE_LIMIT)
    if not rows:
        if not _read(driver, settings, cypher.code_graph_size(), types=list(v.CLASSES))[0]["count"]:
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


def impact(driver: neo4j.Driver, settings: Settings, target: str, hops: int = 3) -> ImpactResult:
    """The blast radius of ``target`` within ``hops`` reverse CALLS/INHERITS/IMPORTS/TESTS steps."""
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= MAX_HOPS:
        raise ConfigError(f"--hops must be an integer from 1 to {MAX_HOPS}, got {hops!r}")
    matches = find_target(driver, settings, target)
    result = ImpactResult(target=target, hops=hops, matches=matches)
    seen: dict[str, ImpactNode] = {n.uid: n for n in matches}
    changed = _read(driver, settings, cypher.code_impact_members(), uids=list(seen),
                    types=[v.DEFINES, v.CONTAINS], classes=list(SYMBOL_CLASSES))
    result.queries = 2
    for row in changed:
        if row["uid"] not in seen:
            seen[row["uid"]] = node = _node(row, 0, f"{row['relation']} of {target}")
            result.changed.append(node)
    frontier = [uid for uid, n in seen.items() if n.type != v.TEST]
    query = cypher.code_impact_dependents(v.IMPACT_RELATIONS)
    for distance in range(1, hops + 1):
        if not frontier:
            break
        rows = _read(driver, settings, query, frontier=frontier)
        result.queries += 1
        frontier = []
        for row in rows:
            if row["uid"] in seen:
                continue
            lines = f" (line{'s' if ',' in (row.get('lines') or '') else ''} {row['lines']})" if row.get("lines") else ""
            node = _node(row, distance, f"{row['relation']} {row['via_name']}{lines}")
            seen[row["uid"]] = node
            if node.type != v.TEST:
                frontier.append(node.uid)
    _unresolved(driver, settings, result, seen)
    nodes = list(seen.values())
    result.affected = sorted((n for n in nodes if n.distance > 0 and n.type in (v.FUNCTION, v.CLASS)), key=_rank)
    files: dict[str, ImpactNode] = {}
    for n in nodes:
        path = n.name if n.type == v.FILE else n.path
        if path and (path not in files or n.distance < files[path].distance):
            files[path] = ImpactNode(uid=f"{v.FILE}|{normalize_name(path)}", name=path, type=v.FILE,
                                     distance=n.distance, path=path, via=n.name if n.type != v.FILE else n.via)
    result.files = sorted(files.values(), key=_rank)
    tests = {n.uid: n for n in nodes if n.type == v.TEST}
    file_nodes = {n.uid: n for n in nodes if n.type == v.FILE}  # the target file and its importers
    if file_nodes:
        for row in _read(driver, settings, cypher.code_impact_members(), uids=list(file_nodes), types=[v.DEFINES],
                         classes=[v.TEST]):
            if row["uid"] not in tests:
                dist = file_nodes[row["via"]].distance
                tests[row["uid"]] = _node(row, dist, f"in {row['path']}, which imports an affected file"
                                          if dist else f"in {row['path']}")
        result.queries += 1
    result.tests = sorted(tests.values(), key=_rank)
    logger.info("impact of %s: %d affected, %d files, %d tests, %d queries", target, len(result.affected),
                len(result.files), len(result.tests), result.queries)
    return result


def _unresolved(driver: neo4j.Driver, settings: Settings, result: ImpactResult, seen: dict[str, ImpactNode]) -> None:
    """Fill ``unresolved_calls`` of the functions in the radius (one query)."""
    uids = [uid for uid, n in seen.items() if n.type in (v.FUNCTION, v.TEST)]
    if not uids:
        return
    rows = _read(driver, settings, cypher.code_impact_unresolved(), uids=uids)
    result.queries += 1
    for row in rows:
        try:
            seen[row["uid"]].unresolved_calls = int(row["unresolved"] or 0)
        except (TypeError, ValueError):
            continue


def _rank(n: ImpactNode) -> tuple[int, str]:
    return (n.distance, n.name)
