"""Which tests of a recorded coverage run ran the lines a change touches, when the run is older.

A coverage import records, for every function of a measured file and every test of the run, the
fingerprint and first line it had (:mod:`graphrag_got.code.coverage`). For a function a diff changes:

* **recorded** (its fingerprint on the diff's old side equals the recorded one): the run saw exactly
  this code, shifted by ``old first line - recorded first line``. The tests to run are those whose
  recorded lines hold a statement the change replaces or removes (:attr:`ChangedSymbol.statements`),
  or, where code is only inserted, the statement beside the insertion at the inserted code's
  indentation (inserted at the top of a block: the block's first statement; after a block's last
  statement, at the block's level: that last one; otherwise both neighbours). A change of the header
  (decorators, signature, defaults), or of a module-level name its body reads, selects every test
  that ran the function. Tests that ran the function but none of those lines are kept apart
  (``ran_function_only``);
* **stale** (the fingerprints differ: the function changed since the run): the run's lines no longer
  say which test reaches which line (an edit above a line can change who gets there), but which tests
  *enter* the function is decided by its callers, not by its own body: every test that ran it before
  it changed answers for it (:mod:`graphrag_got.code.diff`). As for a recorded function, callers
  changed since the run are trusted to call it as the run saw;
* **not recorded** (a function the run never saw): the run says nothing about it; the answer falls
  back to the static closure.

Nothing here reads the database: :mod:`graphrag_got.code.diff` hands over the rows it read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from graphrag_got.code.changes import ChangedSymbol
from graphrag_got.code.lines import Statements, parse_ranges

RECORDED, STALE, NOT_RECORDED, NOT_IN_GRAPH = "recorded", "stale", "not recorded", "not in the graph"


def state(sym: ChangedSymbol, row: dict[str, Any] | None, executed: bool) -> str:
    """How the recorded run describes ``sym`` (``row``: its entity, ``executed``: it has EXECUTES
    edges). A graph whose coverage was imported without fingerprints is taken as recorded on this code."""
    if row is None:
        return NOT_IN_GRAPH
    recorded = row.get("recorded")
    if not recorded:
        return RECORDED if executed else NOT_RECORDED
    side = sym.old_fingerprint if sym.old_fingerprint is not None else sym.new_fingerprint
    return RECORDED if recorded == side else STALE


@dataclass
class Selection:
    """The recorded tests of one changed function: those that ran the changed lines, and the others."""

    hit: dict[str, set[int]] = field(default_factory=dict)  # test uid -> changed lines it ran (recorded lines)
    ran_function_only: set[str] = field(default_factory=set)
    lines: set[int] | None = None  # the recorded lines looked for (None: the whole function)


def _neighbours(sym: ChangedSymbol, statements: Statements, old_end: int, after: int, indent: int) -> set[int]:
    """Old-side statements beside code inserted after line ``after`` inside ``sym`` (see the module
    docstring): the statements at the inserted code's indentation, else both neighbours."""
    start = sym.old_start or 1
    same = statements.statement(after)
    if same is not None and same == statements.statement(after + 1):
        return {same}  # inserted inside one statement (a new argument line of a call)
    before = max((statements.owner[n] for n in range(start, after + 1) if n in statements.owner), default=None)
    nxt = min((statements.owner[n] for n in range(after + 1, old_end + 1) if n in statements.owner), default=None)
    near = [n for n in (before, nxt) if n is not None]
    level = [n for n in near if statements.indent(n) == indent]
    return set(level or near)


def select(sym: ChangedSymbol, statements: Statements | None, old_end: int, recorded_start: int | None,
           rows: list[dict[str, Any]]) -> Selection:
    """The tests of ``rows`` (EXECUTES rows of one recorded function: ``uid``, ``lines``) that ran what
    ``sym`` changes. ``old_end``: its last line on the old side; ``recorded_start``: its first line when
    recorded (None: unknown, taken as unmoved)."""
    out = Selection()
    ran = {row["uid"]: parse_ranges(row.get("lines")) for row in rows}
    if sym.header or sym.reads or statements is None or not statements.parsed or sym.old_start is None:
        out.hit = {uid: lines for uid, lines in ran.items()}
        return out
    shift = sym.old_start - (recorded_start if recorded_start is not None else sym.old_start)
    wanted = set(sym.statements)
    for after, indent in sym.insertions:
        wanted |= _neighbours(sym, statements, old_end, after, indent)
    out.lines = {n - shift for n in wanted}
    for uid, lines in ran.items():
        common = lines & out.lines
        if common:
            out.hit[uid] = common
        else:
            out.ran_function_only.add(uid)
    return out
