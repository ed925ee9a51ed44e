"""Lines of Python source: a definition's fingerprint, and which statement a line belongs to.

* :func:`fingerprint` identifies a definition's text wherever it sits in its file: a function moved
  down by an edit above it keeps its fingerprint, any edit inside it changes it. The code extractor
  writes it on every Class, Function and Test (``fingerprint``), and a coverage import writes the one
  each had when the run was recorded (``recorded_fingerprint``): equal, the recorded lines still
  describe the function (shifted by the difference of its first lines).
* :func:`body_fingerprint` identifies what a definition does, whatever it is called and wherever it
  sits: a function renamed or moved to another module keeps it (``ask impact --diff`` pairs the
  deleted and the added definition by it).
* :class:`Statements` maps a line to the first line of the statement holding it, as coverage.py
  records an executed statement (a call spread over five lines is recorded on its first); a
  compound statement (``if``, ``for``, ``def``...) owns its header lines, its body's statements own
  theirs. Blank lines, comments and docstrings belong to no statement: nothing runs there. Read with
  the standard library's ``ast`` (what coverage.py reads too); a file that does not parse gives no map.
"""

from __future__ import annotations

import ast
import copy
import hashlib
from collections import deque
from functools import cached_property

FINGERPRINT_CHARS = 16


def fingerprint(text: str, start_line: int, end_line: int, lines: list[str] | None = None) -> str:
    """sha256 (first 16 hex digits) of lines ``start_line``..``end_line`` (1-based) of ``text``
    (``lines``: ``text.splitlines(keepends=True)`` when the caller has it)."""
    lines = (lines if lines is not None else text.splitlines(keepends=True))[start_line - 1:end_line]
    return hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def body_fingerprint(node: ast.AST | None) -> str | None:
    """What a definition does, wherever it sits and whatever it is called: sha256 (16 hex digits) of
    its syntax tree without its own name (a reference to that name inside it, a recursive call or
    the class named in its own methods, is the same placeholder on both sides), without docstrings
    and without the type hints of its functions' parameters and return values (running it does not
    read them; annotated assignments are kept: a dataclass field is one). Equal for a function that
    was only renamed or moved to another module; None for anything that is not a def or class."""
    if not isinstance(node, _DEFS):
        return None
    own = node.name
    tree = copy.deepcopy(node)
    tree.name = ""
    for sub in ast.walk(tree):
        if isinstance(sub, _DEFS) and sub.body and _is_docstring(sub.body[0], sub):
            sub.body = sub.body[1:] or [ast.Pass()]
        if isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef)):
            sub.returns = None
            a = sub.args
            for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]:
                if p is not None:
                    p.annotation = None
        elif isinstance(sub, ast.Name) and sub.id == own:
            sub.id = ""
    text = ast.dump(tree, annotate_fields=False, include_attributes=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_CHARS]


def parse_ranges(text: str | None) -> set[int]:
    """``"3-5, 8"`` (the ``lines`` of a relation) -> {3, 4, 5, 8}; unreadable parts are skipped."""
    out: set[int] = set()
    for part in (text or "").split(","):
        a, _, b = part.strip().partition("-")
        try:
            lo = int(a)
            hi = int(b) if b else lo
        except ValueError:
            continue
        out.update(range(lo, min(hi, lo + 100_000) + 1))
    return out


def _is_docstring(node: ast.stmt, parent: ast.AST) -> bool:
    body = getattr(parent, "body", None)
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            and isinstance(body, list) and bool(body) and body[0] is node
            and isinstance(parent, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)))


_BLOCKS = ("body", "orelse", "handlers", "finalbody", "cases", "decorator_list")


def _header_end(node: ast.AST, first: int) -> int:
    """Last line of a compound statement's header: its own expressions (condition, iterable, context
    managers, signature, bases), not its blocks, nor comments between the header and the body."""
    end = first
    for name, value in ast.iter_fields(node):
        if name in _BLOCKS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, ast.AST):
                end = max(end, _last_line(item))
    return end


def _last_line(node: ast.AST) -> int:
    """The last line of ``node``: its own end when it has one (a node's span holds its children's),
    else its children's (``ast.arguments`` has no position)."""
    end = getattr(node, "end_lineno", None)
    if end is not None:
        return end
    return max((_last_line(c) for c in ast.iter_child_nodes(node)), default=0)


class Statements:
    """Line -> first line of the innermost statement owning it (see the module docstring)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.owner: dict[int, int] = {}
        self.headers: dict[int, int] = {}  # first line of a def or class (decorators included) -> last header line
        self.kinds: dict[int, str] = {}  # first line of a statement -> its ast node type ("Import", "If", ...)
        self.defs: dict[int, ast.AST] = {}  # first line of a def (decorators included) -> its ast node
        self.nodes: dict[int, ast.AST] = {}  # first line of a statement -> its ast node
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            self.parsed = False
            return
        self.parsed = True
        todo = deque((child, tree) for child in ast.iter_child_nodes(tree))
        while todo:  # outer statements first: inner ones paint over them
            node, parent = todo.popleft()
            if isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)) and not (
                    isinstance(node, ast.stmt) and _is_docstring(node, parent)):
                self._own(node)
            todo += [(c, node) for c in ast.iter_child_nodes(node) if isinstance(c, (ast.stmt, ast.excepthandler,
                                                                                     ast.match_case))]

    def _own(self, node: ast.AST) -> None:
        first = getattr(node, "lineno", None)
        if isinstance(node, ast.match_case):
            first = node.pattern.lineno
        if first is None:
            return
        decorators = getattr(node, "decorator_list", None) or []
        start = min([first, *(d.lineno for d in decorators)])
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.AST):
            end = _header_end(node, first)
        else:
            end = getattr(node, "end_lineno", None) or first
        key = first if isinstance(node, (ast.stmt, ast.excepthandler)) else start
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self.headers[start] = end
            self.defs[start] = node
        self.kinds[key] = type(node).__name__
        self.nodes[key] = node
        for line in range(start, end + 1):
            self.owner[line] = key

    def statement(self, line: int) -> int | None:
        """First line of the statement owning ``line`` (None: blank, comment, docstring, outside)."""
        return self.owner.get(line)

    def is_import(self, line: int) -> bool:
        """Whether ``line`` belongs to an import statement."""
        return self.kinds.get(self.owner.get(line, -1)) in ("Import", "ImportFrom")

    def in_header(self, def_start: int, line: int) -> bool:
        """Whether ``line`` is in the header (decorators, signature) of the def or class starting at
        ``def_start`` (as the extractor's ``start_line``: its first decorator's line)."""
        end = self.headers.get(def_start)
        return end is not None and def_start <= line <= end

    @cached_property
    def _lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def lines_kept(self) -> list[str]:
        """The text's lines with their ends (what :func:`fingerprint` hashes)."""
        return self.text.splitlines(keepends=True)

    def indent(self, line: int) -> int:
        """Indentation (columns) of ``line``."""
        if not 1 <= line <= len(self._lines):
            return -1
        s = self._lines[line - 1]
        return len(s) - len(s.lstrip())

    def code_lines(self, lines: list[int] | range) -> list[int]:
        """The lines of ``lines`` some statement owns."""
        return [n for n in lines if n in self.owner]


def same_but_annotations(old: ast.AST | None, new: ast.AST | None) -> bool:
    """Whether two function definitions have the same header once their annotations are left out
    (the same parameters, defaults and decorators): a change of type hints only, which running the
    function does not see."""
    if not isinstance(old, (ast.FunctionDef, ast.AsyncFunctionDef)) or type(old) is not type(new):
        return False

    def header(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
        a = node.args
        names = [(p.arg, "pos") for p in a.posonlyargs] + [(p.arg, "arg") for p in a.args] + \
            [(p.arg, "kw") for p in a.kwonlyargs] + [(p.arg, "*") for p in (a.vararg,) if p is not None] + \
            [(p.arg, "**") for p in (a.kwarg,) if p is not None]
        values = [*a.defaults, *[d for d in a.kw_defaults if d is not None], *node.decorator_list]
        return repr(names) + "|" + "|".join(ast.dump(x) for x in values) + "|" + str([d is None for d in a.kw_defaults])

    return header(old) == header(new)  # type: ignore[arg-type]


#: Builtins a module-level ``if`` may call in its test and still only choose what to bind.
_PURE_BUILTINS = frozenset({"hasattr", "getattr", "isinstance", "issubclass", "callable", "len"})


def assigned_names(node: ast.AST | None) -> set[str] | None:
    """The names a module-level assignment binds (``X = ...``, ``X: T = ...``, ``X += ...``); None for
    any other statement. An ``if`` whose test calls nothing (but ``hasattr``, ``isinstance`` and the
    like) and whose branches only bind names (assignments, imports, undecorated defs and classes,
    ``pass``, such an ``if`` again) chooses what those names are: it binds them all."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    elif isinstance(node, ast.If):
        if any(isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and n.func.id in _PURE_BUILTINS)
               for n in ast.walk(node.test)):
            return None
        names: set[str] = set()
        for stmt in [*node.body, *node.orelse]:
            if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
                continue
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                if any(a.name == "*" for a in stmt.names):
                    return None
                names |= {(a.asname or a.name).split(".")[0] for a in stmt.names}
            elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and not stmt.decorator_list:
                names.add(stmt.name)
            else:
                sub = assigned_names(stmt)
                if sub is None:
                    return None
                names |= sub
        return names
    else:
        return None
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _loads(node: ast.AST) -> list[str]:
    """Names ``node`` reads when it runs in a function body: not the annotation of an annotated
    assignment, which a function never evaluates."""
    out: list[str] = []
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            out.append(n.id)
        todo += [c for c in ast.iter_child_nodes(n) if not (isinstance(n, ast.AnnAssign) and c is n.annotation)]
    return out


def readers(statements: Statements, names: set[str]) -> dict[int, set[str]]:
    """First line (decorators included) of each function whose body reads one of ``names`` -> the names
    it reads."""
    out: dict[int, set[str]] = {}
    for start, node in statements.defs.items():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            read = {n for stmt in node.body for n in _loads(stmt) if n in names}
            if read:
                out[start] = read
    return out
