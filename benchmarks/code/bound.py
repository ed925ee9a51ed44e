"""What a call-graph closure can reach at best on a package's own test run (issue 25's static target).

``ask impact``'s static answer is a closure: a test is listed when a chain of calls leads from it to
the changed function. The ground truth is execution: a test counts when it *ran* a line of the
function. The two differ even for a perfect call graph, because which branch runs depends on the
test's inputs (``--help`` or not, a file argument or not), and a closure cannot tell.

This module measures that gap on the package's own suite, without the database and without
``ask impact``:

* the **taken call graph**: every call the suite really made between two functions of the tree,
  recorded by :mod:`benchmarks.code.calltrace` (a profile hook, in a run apart from the coverage run),
  plus the extraction's fixture links (pytest, not the test, calls a fixture);
* the **bound**: ask impact's closure (the target and the functions written inside it, callers
  followed backwards to a fixed point, tests collected on the way) over that graph: what a perfect
  context-insensitive call graph gives, with no spurious edge and none missing;
* the **precision ceiling** of a target: a sound call graph holds every call the run made, so its
  closure lists at least the bound's tests; more edges can at best add all the missing true tests,
  so precision <= T / (n + T - h) for T true tests, n listed by the bound and h of them right.
"""

from __future__ import annotations

import ast
import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable, Iterator

from graphrag_got.code import vocabulary as v
from graphrag_got.code.symbols import FIXTURE

Node = tuple[str, int, str]  # (path under the root, line of the def keyword, function name)


def functions(path: Path) -> Iterator[tuple[int, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Each def of a file with its first line as ``co_firstlineno`` gives it (the first decorator's)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield min([node.lineno, *(d.lineno for d in node.decorator_list)]), node


def def_lines(path: Path) -> dict[int, int]:
    """First line of each def (the first decorator's) or the line as written -> the ``def`` keyword's
    (empty for a file that cannot be read or parsed)."""
    out: dict[int, int] = {}
    try:
        for first, node in functions(path):
            out[node.lineno] = node.lineno
            out.setdefault(first, node.lineno)
    except (OSError, SyntaxError, UnicodeDecodeError):
        return {}
    return out


class TakenGraph:
    """Callers of each function along the calls a recorded run made (reversed edges)."""

    def __init__(self, ext: Any, calls_file: Path, root: Path):
        self.root = root
        self._lines: dict[str, dict[int, int]] = {}
        self.node_of: dict[str, Node] = {}  # entity name -> node
        self.test_of: dict[Node, str] = {}  # node of a Test entity -> pytest node id
        for e in ext.entities:
            if e.type in (v.FUNCTION, v.TEST) and "path" in e.properties and "start_line" in e.properties:
                node = self._node(e.properties["path"], int(e.properties["start_line"]), e.name.rsplit(".", 1)[-1])
                self.node_of[e.name] = node
                if e.type == v.TEST:
                    self.test_of[node] = e.properties.get("nodeid", e.name)
        self.callers: dict[Node, set[Node]] = defaultdict(set)
        trace = json.loads(calls_file.read_text(encoding="utf-8"))
        rows = trace["edges"]
        self.pytest_exit_code = trace.get("pytest_exit_code")  # 0: every test of the traced run passed
        for a_path, a_line, a_name, b_path, b_line, b_name in rows:
            self.callers[self._node(b_path, b_line, b_name)].add(self._node(a_path, a_line, a_name))
        self.calls = len(rows)
        self.fixture_links = 0
        for r in ext.relations:
            if r.relation == v.USES_FIXTURE or r.attributes.get(v.RESOLUTION) == FIXTURE:
                user, fixture = self.node_of.get(r.subject), self.node_of.get(r.object)
                if user is not None and fixture is not None:
                    self.callers[fixture].add(user)
                    self.fixture_links += 1

    def _node(self, path: str, line: int, name: str) -> Node:
        if path not in self._lines:
            self._lines[path] = def_lines(self.root / path)
        return (path, self._lines[path].get(line, line), name)

    def closure(self, target: str) -> set[str]:
        """Test node ids reaching ``target`` (or a function written inside it) along taken calls."""
        prefix = target + "."
        seeds = {n for name, n in self.node_of.items() if name == target or name.startswith(prefix)}
        seen, frontier = set(seeds), list(seeds)
        while frontier:
            new = []
            for node in frontier:
                for caller in self.callers.get(node, ()):
                    if caller not in seen:
                        seen.add(caller)
                        new.append(caller)
            frontier = new
        return {self.test_of[n] for n in seen if n in self.test_of}


def ceiling(true: int, listed: int, hits: int) -> float:
    """Best precision of any closure that lists at least the bound's ``listed`` tests."""
    return round(true / (listed + true - hits), 3) if listed + true - hits else 1.0


def summarize(ceilings: Iterable[float], at: float = 0.9) -> dict[str, Any]:
    values = list(ceilings)
    return {"mean": round(sum(values) / len(values), 3) if values else None,
            "targets_below": sum(1 for c in values if c < at), "targets": len(values), "at": at}
