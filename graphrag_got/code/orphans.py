"""`ask orphans`: the functions and classes of a code graph that nothing defines, calls or tests.

One read over the graph (:func:`graphrag_got.code.cypher.code_symbol_uses`). A symbol is listed with a
reason (:class:`Reason`):

* ``not_defined``: no File DEFINES it: it is known only from coverage evidence recorded before it was
  deleted or renamed, or from a reference into a file the extractor skipped;
* ``unreferenced``: nothing CALLS it (nor MAY_CALL, TESTS, INHERITS, USES_FIXTURE), no recorded test
  run EXECUTES it, and, for a class, the same holds for every method it contains: dead code, or code
  reached in ways static analysis does not follow (the hints say which ways are likely).

Not listed, by rule: tests and the classes holding them (pytest runs them), and methods Python calls itself (``__dunder__``) or
reads as attributes (properties). Hints on a listed symbol: ``public`` (no leading underscore: it may be
used from outside the tree), ``nested`` (a function written inside another: usually returned or
passed on, so called through a value), ``override`` is not computed (MAY_CALL already links overrides).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

import neo4j

from graphrag_got.code import cypher
from graphrag_got.code import vocabulary as v
from graphrag_got.code.coverage import DOCUMENT_PREFIX
from graphrag_got.code.impact import _Reader
from graphrag_got.config import Neo4jSettings

FORMAT = "graphrag_got.orphans/1"
USES = (v.CALLS, v.MAY_CALL, v.TESTS, v.INHERITS, v.USES_FIXTURE)


class Reason(str, Enum):
    NOT_DEFINED = "not_defined"
    UNREFERENCED = "unreferenced"


@dataclass
class Orphan:
    name: str
    type: str
    path: str
    start_line: str | None
    reason: Reason
    hints: list[str] = field(default_factory=list)


@dataclass
class OrphanReport:
    orphans: list[Orphan]
    symbols: int
    coverage: bool  # the graph holds a recorded test run (EXECUTES): executed code is not an orphan
    excluded: dict[str, int] = field(default_factory=dict)

    def by_file(self) -> dict[str, list[Orphan]]:
        out: dict[str, list[Orphan]] = {}
        for o in self.orphans:
            out.setdefault(o.path or "(no file)", []).append(o)
        return out

    def to_data(self) -> dict[str, Any]:
        return {"format": FORMAT, "symbols": self.symbols, "coverage": self.coverage, "excluded": self.excluded,
                "counts": {r.value: sum(o.reason == r for o in self.orphans) for r in Reason},
                "files": {path: [{**asdict(o), "reason": o.reason.value} for o in items]
                          for path, items in self.by_file().items()}}

    def lines(self) -> list[str]:
        counts = {r.value: sum(o.reason == r for o in self.orphans) for r in Reason}
        out = [f"orphans: {len(self.orphans)} of {self.symbols} functions and classes "
               f"({', '.join(f'{k} {n}' for k, n in counts.items())}); "
               + ("a recorded test run counts as use" if self.coverage else
                  "no recorded test run in the graph: code reached only dynamically is listed too "
                  "(extract --coverage)"),
               "not judged: " + ", ".join(f"{k} {n}" for k, n in self.excluded.items())]
        for path, items in self.by_file().items():
            out.append(f"{path} ({len(items)}):")
            out += [f"  {o.start_line or '?':>5}  {o.type:<8} {o.name}  [{o.reason.value}"
                    + (f"; {', '.join(o.hints)}" if o.hints else "") + "]" for o in items]
        return out


def _is_dunder(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.startswith("__") and last.endswith("__")


def orphans(driver: neo4j.Driver, db: Neo4jSettings, *, use_coverage: bool = True) -> OrphanReport:
    """The orphan functions and classes of the code graph (see the module docstring); without
    ``use_coverage``, a recorded run's EXECUTES edges do not count as use (the static view)."""
    with _Reader(driver, db) as read:
        rows = read(cypher.code_symbol_uses(USES, v.DEFINES, v.EXECUTES, v.CONTAINS), types=[v.FUNCTION, v.CLASS])
        has_coverage = use_coverage and bool(read(cypher.code_has_relation(v.EXECUTES))[0]["found"])
    used = {r["uid"] for r in rows if r["uses"] or (use_coverage and r["executed"])}
    excluded = {"dunder methods": 0, "properties": 0, "test classes": 0}
    out: list[Orphan] = []
    for r in rows:
        docs = r.get("doc_ids") or []
        if not r["defined"]:
            where = ("coverage evidence recorded before it was deleted or renamed"
                     if docs and all(d.startswith(DOCUMENT_PREFIX) for d in docs) else "a reference only")
            out.append(Orphan(r["name"], r["type"], r.get("path") or "", r.get("start_line"), Reason.NOT_DEFINED,
                              [f"known from {where}"]))
            continue
        if _is_dunder(r["name"]):
            excluded["dunder methods"] += 1
            continue
        if r.get("kind") == "property":
            excluded["properties"] += 1
            continue
        if r["type"] == v.CLASS and any(m.startswith(v.TEST + "|") for m in r["members"] or []):
            excluded["test classes"] += 1
            continue
        if r["uid"] in used or (r["type"] == v.CLASS and any(m in used for m in r["members"] or [])):
            continue
        hints = []
        local = r["name"].rsplit(".", 1)[-1]
        if not local.startswith("_"):
            hints.append("public")
        if r.get("kind") == "nested":
            hints.append("nested: likely called through a value")
        if r["type"] == v.CLASS and r["members"]:
            hints.append(f"none of its {len(r['members'])} method(s) is used either")
        out.append(Orphan(r["name"], r["type"], r.get("path") or "", r.get("start_line"), Reason.UNREFERENCED, hints))
    return OrphanReport(orphans=out, symbols=len(rows), coverage=has_coverage, excluded=excluded)
