"""`ask impact --diff`: the tests and code a change affects, from its changed lines (no LLM).

1. git gives the changed line ranges (:mod:`graphrag_got.code.gitdiff`), mapped to the functions,
   methods and classes they fall in on both sides, added and deleted ones included
   (:mod:`graphrag_got.code.changes`); files that are not Python are listed as such;
2. the graph's entities of those names are the seeds: a changed test is run itself; a changed
   function the recorded coverage run saw as it is on the old side (*recorded*) is answered by the
   run's lines (:mod:`graphrag_got.code.stale`); a function changed since the run (*stale*) by every
   test that ran it before it changed (which tests enter a function depends on its callers, not on its
   own body); a definition renamed or moved unchanged (:func:`graphrag_got.code.changes.pair_moves`) by
   every test that ran it under its old name (a class: its methods, when it has its own ``__init__``
   or ``__new__``); each plus the tests the run did not measure that the static closure reaches
   (:func:`graphrag_got.code.impact.overrule_by_coverage`). A function the run never saw, a changed
   class body and a renamed class without a recorded constructor fall back to the static closure
   (:func:`graphrag_got.code.impact.closure`); a header changed only in its type hints, an
   ``@overload`` stub, module-level imports and ``if TYPE_CHECKING:`` select nothing, a module-level
   assignment the functions of its file that read it (:mod:`graphrag_got.code.changes`), and other
   module-level code (run at import time) the tests that ran code of that module, or without coverage
   the tests of the test files importing it. A test the run saw that was moved to another file since
   is the test it is now (same text), one deleted since is left out;
3. the answer is the union, each test saying where it comes from; ``pytest_args`` are its node ids.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from graphrag_got.code import cypher, stale
from graphrag_got.code import vocabulary as v
from graphrag_got.code.coverage import _ranges as ranges
from graphrag_got.code.changes import ADDED, DELETED, MOVED, RENAMED, ChangedFile, ChangedSymbol, read_change
from graphrag_got.code.extractor import pytest_nodeid
from graphrag_got.code.impact import (DISPATCH, EXACT, STATIC, SYMBOL_CLASSES, ImpactError, ImpactNode, ImpactResult,
                                      _node, _rank, _Reader, _unresolved, affected_files, check_hops, closure, coverage_state,
                                      current_tests, import_tests, overrule_by_coverage)
from graphrag_got.code.parse import is_test_file
from graphrag_got.common.normalize import normalize_name
from graphrag_got.config import CodeSettings, Neo4jSettings

logger = logging.getLogger(__name__)

FORMAT = "graphrag_got.impact-diff/2"
CHANGED, COVERAGE, COVERAGE_MODULE = "changed", "coverage", "coverage (module)"
#: Whole-function answers from the recorded run: a function changed since the run; renamed or moved.
COVERAGE_STALE, COVERAGE_RENAMED, COVERAGE_MOVED = "coverage (before it changed)", "coverage (renamed)", \
    "coverage (moved)"
#: Methods whose run stands for a class's (every instance is made by one of them).
CONSTRUCTORS = ("__init__", "__new__")


@dataclass
class SymbolReport:
    """A changed definition and what answered for it."""

    name: str
    type: str
    path: str
    change: str  # modified | added | deleted | renamed | moved
    coverage: str  # recorded | stale | not recorded | not in the graph
    answered_by: str  # coverage ... | static closure | run itself | nothing ...
    lines: str = ""
    tests: int = 0
    old_name: str | None = None  # renamed or moved: its name (and file) on the old side
    old_path: str | None = None
    header: bool = False  # its header changed (decorators, signature, defaults; not type hints only)
    reads: list[str] = field(default_factory=list)  # module-level names the change rebinds that it reads


@dataclass
class DiffImpact:
    label: str
    old: str
    new: str | None
    files: list[ChangedFile]
    symbols: list[SymbolReport] = field(default_factory=list)
    affected: list[ImpactNode] = field(default_factory=list)
    affected_files: list[ImpactNode] = field(default_factory=list)
    tests: list[ImpactNode] = field(default_factory=list)
    not_run: list[ImpactNode] = field(default_factory=list)  # static tests the fresh run measured not running it
    ran_function_only: list[ImpactNode] = field(default_factory=list)  # ran a recorded function, not the lines
    warnings: list[str] = field(default_factory=list)
    queries: int = 0
    seconds: float = 0.0
    cut: bool = False

    @property
    def pytest_args(self) -> list[str]:
        return [t.nodeid for t in self.tests if t.nodeid]

    def to_data(self) -> dict[str, Any]:
        def rows(nodes: list[ImpactNode]) -> list[dict[str, Any]]:
            return [{k: val for k, val in asdict(n).items() if val is not None} for n in nodes]

        files = [{"path": f.path, "status": f.status, "python": f.python, "note": f.note, "skipped": f.skipped,
                  "code_changed": f.code_changed, "module_level_lines": f.module_lines,
                  "module_level_removed": f.module_removed, "module_level_imports": f.module_imports,
                  "symbols": len(f.symbols)} for f in self.files]
        by: dict[str, int] = {}
        for t in self.tests:
            by[t.evidence or ""] = by.get(t.evidence or "", 0) + 1
        return {"format": FORMAT, "change": self.label, "old": self.old, "new": self.new or "working tree",
                "files": files, "symbols": [asdict(s) for s in self.symbols], "affected": rows(self.affected),
                "affected_files": rows(self.affected_files), "tests": rows(self.tests), "pytest_args": self.pytest_args,
                "static_not_run": rows(self.not_run), "ran_function_only": rows(self.ran_function_only),
                "warnings": self.warnings,
                "counts": {"files": len(self.files), "symbols": len(self.symbols), "affected": len(self.affected),
                           "tests": len(self.tests), "tests_by_evidence": by, "static_not_run": len(self.not_run),
                           "ran_function_only": len(self.ran_function_only)},
                "cut": self.cut, "queries": self.queries, "seconds": round(self.seconds, 3)}

    def lines(self) -> list[str]:
        out = [f"change: {self.label} ({len(self.files)} file(s))"]
        for f in self.files:
            what = f.note or (f"{len(f.symbols)} definition(s)" + (", module-level code" if f.module_lines
                                                                    or f.module_removed else "")
                              + (", imports (select no test)" if f.module_imports else "")
                              if f.code_changed else "no code changed (comments, blank lines)")
            out.append(f"  {f.status:<8} {f.path}: {what}")
        if self.symbols:
            out.append("changed definitions (change, coverage of the recorded run -> answered by):")
            out += [f"  {s.change:<8} {s.type:<8} {s.name}" + (f" (was {s.old_name})" if s.old_name else "")
                    + (f" (reads {', '.join(s.reads)})" if s.reads else "")
                    + f"  [{s.coverage} -> {s.answered_by}]" for s in self.symbols]
        if self.affected:
            out.append(f"affected functions and classes ({len(self.affected)}, static closure):")
            out += [f"  {n.distance}  {n.type:<8} {n.name}  <- {n.via}" for n in self.affected[:50]]
            out += [f"  ... {len(self.affected) - 50} more (--json lists all)"] if len(self.affected) > 50 else []
        out.append(f"tests to run ({len(self.tests)}):")
        out += [f"  {t.nodeid or t.name}  [{t.evidence}]" for t in self.tests]
        for title, nodes in (("not listed: static paths the recorded run measured without running the change",
                              self.not_run),
                             ("not listed: ran a changed function, but not the changed lines", self.ran_function_only)):
            if nodes:
                shown = ", ".join(t.nodeid or t.name for t in nodes[:8]) + (" ..." if len(nodes) > 8 else "")
                out.append(f"{title} ({len(nodes)}): {shown}")
        out += [f"warning: {w}" for w in self.warnings]
        return out


def _test_node(sym: ChangedSymbol, module: str | None, row: dict[str, Any] | None) -> ImpactNode:
    nodeid = (row or {}).get("nodeid") or pytest_nodeid(sym.path, module or "", sym.name)
    return ImpactNode(uid=(row or {}).get("uid") or f"{v.TEST}|{normalize_name(sym.name)}", name=sym.name, type=v.TEST,
                      distance=0, path=sym.path, nodeid=nodeid, via=f"{sym.change} in this change", evidence=CHANGED)


class _Answer:
    """The tests of one diff, each with where it comes from (the first reason wins)."""

    def __init__(self) -> None:
        self.tests: dict[str, ImpactNode] = {}

    def add(self, node: ImpactNode, evidence: str, via: str | None = None) -> None:
        t = self.tests.get(node.uid)
        if t is None:
            self.tests[node.uid] = t = ImpactNode(uid=node.uid, name=node.name, type=v.TEST, distance=node.distance,
                                                  path=node.path, start_line=node.start_line, nodeid=node.nodeid,
                                                  via=via or node.via, path_kind=node.path_kind, evidence=evidence)
        elif t.evidence != evidence and evidence not in (t.evidence or ""):
            t.evidence = f"{t.evidence} + {evidence}"


def _static_label(t: ImpactNode) -> str:
    return f"static {t.path_kind}" if t.path_kind else "static"


def diff_impact(driver: neo4j.Driver, db: Neo4jSettings, root: str | Path = ".", spec: str | None = None, *,
                code: CodeSettings, staged: bool = False, hops: int | None = None) -> DiffImpact:
    """The impact of the change ``spec`` of the git repository holding ``root`` (the folder the code
    graph was extracted from)."""
    check_hops(hops)
    t0 = time.perf_counter()
    root = Path(root)
    ch, files = read_change(root, spec, staged=staged, max_bytes=code.max_file_bytes)
    result = DiffImpact(label=ch.label, old=ch.old, new=ch.new, files=files)
    unread = [f.path for f in files if f.skipped]
    if unread:
        result.warnings.append(f"{len(unread)} changed Python file(s) not read ({', '.join(unread[:5])}"
                               f"{' ...' if len(unread) > 5 else ''}): a symbolic link, a device, too large or "
                               "nested too deeply (each file's note says which); their changes select no test")
    with _Reader(driver, db) as read:
        _answer(read, code, result, hops)
        result.queries = read.count
    result.seconds = time.perf_counter() - t0
    logger.info("impact of %s: %d symbols, %d tests, %d queries, %.2fs", ch.label, len(result.symbols),
                len(result.tests), result.queries, result.seconds)
    return result


def _whole(sym: ChangedSymbol, st: str) -> str | None:
    """The evidence label when every test the recorded run saw running the definition answers for it
    (see the module docstring), None when it does not. ``st`` of a class: recorded when the run
    measured a constructor of its own."""
    moved = sym.change in (RENAMED, MOVED)
    if sym.type == v.FUNCTION and (st == stale.STALE or (moved and st == stale.RECORDED)):
        return COVERAGE_MOVED if sym.change == MOVED else COVERAGE_RENAMED if moved else COVERAGE_STALE
    if sym.type == v.CLASS and moved and st == stale.RECORDED:
        return COVERAGE_MOVED if sym.change == MOVED else COVERAGE_RENAMED
    return None


def _answer(read: _Reader, code: CodeSettings, result: DiffImpact, hops: int | None) -> None:
    syms = [(f, s) for f in result.files for s in f.symbols]
    module_files = [f for f in result.files if f.module_lines or f.module_removed]
    if not syms and not module_files:
        return
    rows = read(cypher.code_entities_by_key(), keys=sorted({normalize_name(s.graph_name) for _, s in syms}),
                types=list(SYMBOL_CLASSES)) if syms else []
    if not rows and not read(cypher.code_graph_size(), types=list(v.CLASSES))[0]["count"]:
        raise ImpactError("the graph holds no code graph: run `graphrag-got code refresh` (or `extract --extractor "
                          "code` and `load`) first.")
    by_key = {(r["type"], normalize_name(r["name"])): r for r in rows}
    moved_classes = [by_key[k]["uid"] for _, s in syms if s.type == v.CLASS and s.old_name
                     and (k := (v.CLASS, normalize_name(s.old_name))) in by_key]
    members: dict[str, list[dict[str, Any]]] = {}  # a moved class's methods: their runs are the class's
    for row in read(cypher.code_impact_members(), uids=moved_classes, types=[v.CONTAINS],
                    classes=[v.FUNCTION]) if moved_classes else ():
        members.setdefault(row["via"], []).append(row)
    functions = [r["uid"] for r in rows if r["type"] == v.FUNCTION] + [m["uid"] for ms in members.values() for m in ms]
    executions: dict[str, list[dict[str, Any]]] = {}
    ran, gone = current_tests(read, read(cypher.code_impact_executors(v.EXECUTES), uids=functions)) if functions \
        else ([], 0)
    for row in ran:
        executions.setdefault(row["via"], []).append(row)
    for uid, ms in members.items():
        executions[uid] = [r for m in ms for r in executions.get(m["uid"], [])]
    constructors = [m["uid"] for ms in members.values() for m in ms if m["name"].rsplit(".", 1)[-1] in CONSTRUCTORS]
    measured = {uid for uid, r in coverage_state(read, constructors).items() if r.get("recorded")}
    constructed = {uid for uid, ms in members.items() if any(m["uid"] in measured for m in ms)}
    answer, fresh, static = _Answer(), {}, {}
    function_only: dict[str, ImpactNode] = {}
    missing = []
    deleted: set[str] = set()  # tests this change deletes
    for f, sym in syms:
        row = by_key.get((sym.type, normalize_name(sym.graph_name)))
        runs = executions.get(row["uid"], []) if row else []
        st = stale.RECORDED if row and row["uid"] in constructed else stale.state(sym, row, bool(runs))
        report = SymbolReport(sym.name, sym.type, sym.path, sym.change, st, "nothing", _short(sym.lines),
                              old_name=sym.old_name, old_path=sym.old_path if sym.old_path != sym.path else None,
                              header=sym.header and not sym.overload, reads=list(sym.reads))
        result.symbols.append(report)
        if sym.overload:
            report.answered_by = "nothing (@overload stub: read by type checkers only)"
            continue
        if sym.type == v.TEST:
            if sym.change != DELETED:
                answer.add(_test_node(sym, f.module, row), CHANGED)
                report.answered_by, report.tests = "run itself", 1
            else:  # it cannot run any more, whatever reaches it
                report.answered_by = "nothing (deleted)"
                deleted.add(_test_node(sym, f.module, row).uid)
            continue
        if sym.annotations_only and not sym.statements and not sym.insertions:
            report.answered_by = "nothing (type hints only)"
            continue
        if row is None:
            if sym.change != ADDED:
                missing.append(sym.graph_name)
            continue
        node = _node(row, 0, f"{sym.change} in this change")
        node.path_kind = EXACT
        whole = _whole(sym, st)
        if st == stale.RECORDED and sym.type == v.FUNCTION and whole is None:
            sel = stale.select(sym, f.old_statements, sym.old_end or int(row.get("end_line") or 0),
                               _int(row.get("recorded_start_line")), runs)
            for r in runs:
                t = _node(r, 0, f"ran {sym.name}" + (f" (changed lines {_short(sel.hit[r['uid']])})"
                                                     if r["uid"] in sel.hit and sel.lines is not None else ""))
                if r["uid"] in sel.hit:
                    answer.add(t, COVERAGE)
                else:
                    function_only.setdefault(r["uid"], t)
            report.answered_by, report.tests = "coverage", len(sel.hit)
            fresh[row["uid"]] = node
        elif whole is not None:
            for r in runs:
                answer.add(_node(r, 0, f"ran {r['via_name']}" + (" before it changed" if st == stale.STALE else "")
                                 + (f" (as {r['moved_from']})" if r.get("moved_from") else "")), whole)
            report.answered_by, report.tests = whole, len({r["uid"] for r in runs})
            fresh[row["uid"]] = node
        else:
            report.answered_by = "static closure"
            static[row["uid"]] = node
    _modules(read, module_files, answer, static)
    nodes = _closures(read, code, result, answer, fresh, static, hops)
    result.tests = sorted((t for t in answer.tests.values() if t.uid not in deleted), key=lambda t: (t.nodeid or t.name))
    result.ran_function_only = sorted((t for uid, t in function_only.items() if uid not in answer.tests
                                       and uid not in deleted), key=_rank)
    result.not_run = [t for t in result.not_run if t.uid not in answer.tests and t.uid not in deleted]
    result.affected = sorted((n for n in nodes.values() if n.distance > 0 and n.type in (v.FUNCTION, v.CLASS)), key=_rank)
    result.affected_files = affected_files([n for n in nodes.values() if n.type != v.TEST])
    if missing:
        result.warnings.append(f"{len(missing)} changed definition(s) are not in the graph ({', '.join(missing[:5])}"
                               f"{' ...' if len(missing) > 5 else ''}): the graph is older than the diff's old side; "
                               "run `graphrag-got code refresh` on it")
    if gone:
        result.warnings.append(f"{gone} test(s) the recorded run saw running these definitions no longer exist (deleted "
                               "since the run): not listed")


def _modules(read: _Reader, files: list[ChangedFile], answer: _Answer, static: dict[str, ImpactNode]) -> None:
    """Module-level code runs at import: the tests that ran code of the module, else (and for a test
    file, always) the static import closure from the File."""
    measured: dict[str, list[dict[str, Any]]] = {}
    src = [f.path for f in files if not is_test_file(f.path)]
    for row in read(cypher.code_module_executors(v.EXECUTES), paths=src) if src else ():
        measured.setdefault(row["via"], []).append(row)
    for f in files:
        if f.path in measured:
            for r in measured[f.path]:
                answer.add(_node(r, 0, f"ran code of {f.path}"), COVERAGE_MODULE)
            continue
        uid = f"{v.FILE}|{normalize_name(f.path)}"
        static[uid] = ImpactNode(uid=uid, name=f.path, type=v.FILE, distance=0, path=f.path,
                                 via="module-level code changed", path_kind=EXACT)


def _closures(read: _Reader, code: CodeSettings, result: DiffImpact, answer: _Answer, fresh: dict[str, ImpactNode],
              static: dict[str, ImpactNode], hops: int | None) -> dict[str, ImpactNode]:
    """The static closures: from the recorded functions (its tests kept only where the run did not
    measure them) and from the others (all kept)."""
    nodes: dict[str, ImpactNode] = {}
    for seeds, overrule in ((fresh, True), (static, False)):
        if not seeds:
            continue
        scratch = ImpactResult(target=result.label, hops=hops, matches=[])
        seen, tests = closure(read, code, dict(seeds), hops, scratch)
        import_tests(read, [n for n in seen.values() if n.type == v.FILE], tests)
        if overrule:
            overrule_by_coverage(read, scratch, tests)
            result.not_run += scratch.not_run
        for t in tests.values():
            answer.add(t, _static_label(t) if t.path_kind != DISPATCH else "static dispatch")
        result.cut = result.cut or scratch.cut
        _unresolved(read, seen)
        for uid, n in seen.items():
            if uid not in nodes or n.distance < nodes[uid].distance:
                nodes[uid] = n
    for t in answer.tests.values():
        if t.evidence == STATIC:
            t.evidence = "static"
    return nodes


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _short(lines: Any) -> str:
    return ranges(sorted(set(lines)))
