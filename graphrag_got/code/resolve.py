"""Cross-file resolution: which definition a call, a base class or an import names.

Static analysis only, and only as far as it is sound without running the code:

* names: the function's own scope and the enclosing functions' (Python skips class bodies), then
  the module (definitions, imports, star imports of modules of the tree), then builtins;
* imports: absolute and relative, followed through re-exports (``from .core import X`` in a
  package ``__init__``) up to :data:`MAX_REEXPORT_DEPTH` steps, submodules included;
* attributes: of modules of the tree (``mod.func``), of classes (``Class.method``) and of
  instances whose class is known: ``self``/``cls`` in methods, ``super()``, ``Class()``, parameters annotated
  with a class of the tree, locals assigned exactly once from a call to a class of the tree;
  a method is looked up in the class, then in its bases of the tree, depth-first.

Everything else (attributes of other values, calls of subscripts or call results, a method that
may come from a base outside the tree) is *unresolved*: counted, never guessed. Calls that resolve
outside the tree (builtins, the standard library, third-party modules) are *external*: counted,
without an edge, since the graph holds no node for them.
"""

from __future__ import annotations

import builtins
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Literal

from graphrag_got.code import vocabulary as v
from graphrag_got.code.parse import CALL_RESULT, LITERAL_PREFIX, SUPER, Binding, Chain, Definition, FileFacts

MAX_REEXPORT_DEPTH = 10
_BUILTINS = frozenset(dir(builtins))

SymKind = Literal["module", "def", "instance", "external", "unknown"]


@dataclass(frozen=True)
class Sym:
    """What a name or a chain denotes: a module or definition of the tree, an instance of a class of
    the tree, something outside the tree (``external``), or ``unknown``."""

    kind: SymKind
    target: str = ""


UNKNOWN = Sym("unknown")


@dataclass
class Edge:
    relation: str
    subject: tuple[str, str]  # (class, name)
    object: tuple[str, str]
    lines: list[int]
    segment: int  # chunk (top-level segment) of the subject's file the fact is written in


@dataclass
class CallCounts:
    resolved: int = 0
    external: int = 0
    unresolved: int = 0


@dataclass
class ResolvedFile:
    facts: FileFacts
    edges: list[Edge] = field(default_factory=list)
    calls: dict[str, CallCounts] = field(default_factory=dict)  # definition qualname -> counts
    module_origins: dict[str, str] = field(default_factory=dict)  # external module name -> origin


def module_name(path: str, package_dirs: set[str], root_name: str) -> tuple[str, bool]:
    """Dotted module of a file (POSIX path relative to the root) and whether it is a package.

    The module is named from the nearest folder up that is not a package (no ``__init__.py``), as
    Python and pytest's rootdir insertion name it: ``src/pkg/mod.py`` is ``pkg.mod`` when ``src`` has
    no ``__init__.py``; ``tests/test_x.py`` in a plain ``tests`` folder is ``test_x``. When the root
    itself is a package (``""`` in ``package_dirs``) its folder name ``root_name`` is the top package.
    """
    parts = path[:-3].split("/") if path.endswith(".py") else path.split("/")
    is_package = parts[-1] == "__init__"
    if is_package:
        parts = parts[:-1]
    dirs = path.split("/")[:-1]
    keep = 0  # how many trailing folders are packages
    while keep < len(dirs) and "/".join(dirs[: len(dirs) - keep]) in package_dirs:
        keep += 1
    prefix = [root_name] if keep == len(dirs) and "" in package_dirs and root_name else []
    name_parts = prefix + dirs[len(dirs) - keep:] + ([] if is_package else parts[-1:])
    return ".".join(name_parts), is_package


def unique_module_names(paths: list[str], root_name: str) -> dict[str, tuple[str, bool]]:
    """:func:`module_name` of each path, made unique: files that would share a module name (two
    ``conftest.py`` in plain folders) are named by their path instead (``a.b.conftest``)."""
    package_dirs = {p.rsplit("/", 1)[0] if "/" in p else "" for p in paths if p.rsplit("/", 1)[-1] == "__init__.py"}
    names = {p: module_name(p, package_dirs, root_name) for p in paths}
    count: dict[str, int] = defaultdict(int)
    for mod, _ in names.values():
        count[mod] += 1
    out: dict[str, tuple[str, bool]] = {}
    taken: set[str] = set()
    for p in sorted(paths):
        mod, pkg = names[p]
        if count[mod] > 1 or not mod:
            stem = p[:-3] if p.endswith(".py") else p
            mod = stem.replace("/", ".").removesuffix(".__init__") or root_name or "__root__"
        base, n = mod, 2
        while mod in taken:
            mod, n = f"{base}_{n}", n + 1
        taken.add(mod)
        out[p] = (mod, pkg)
    return out


def module_origin(module: str) -> str:
    top = module.split(".")[0]
    if not top:
        return "unresolved"
    return "stdlib" if top in sys.stdlib_module_names or top == "__future__" else "external"


class Index:
    """Every module and definition of the analysed tree, and the resolution rules over them."""

    def __init__(self, files: list[FileFacts]):
        self.files = files
        self.modules: dict[str, FileFacts] = {f.module: f for f in files}
        self.defs: dict[str, Definition] = {}
        self.def_file: dict[str, FileFacts] = {}
        self._resolving: set[tuple[str, str]] = set()
        for f in files:
            for d in f.definitions:
                self.defs.setdefault(d.qualname, d)
                self.def_file.setdefault(d.qualname, f)

    # ---------------------------------------------------------------- modules and bindings
    def binding(self, b: Binding, depth: int = 0) -> Sym:
        if b.member is None:
            return Sym("module", b.module) if b.module in self.modules else Sym("external", b.module)
        sub = f"{b.module}.{b.member}" if b.module else b.member
        if b.module in self.modules:
            return self.module_member(b.module, b.member, depth + 1)
        if sub in self.modules:  # a namespace package (no __init__.py) of the tree
            return Sym("module", sub)
        return Sym("external", sub)

    def module_member(self, module: str, name: str, depth: int = 0) -> Sym:
        facts = self.modules.get(module)
        if facts is None or depth > MAX_REEXPORT_DEPTH:
            return UNKNOWN
        if name in facts.top_names:
            return Sym("def", facts.top_names[name])
        if name in facts.bindings:
            return self.binding(facts.bindings[name], depth + 1)
        if f"{module}.{name}" in self.modules:
            return Sym("module", f"{module}.{name}")
        if name in facts.module_vars:
            return UNKNOWN
        for star in facts.star_imports:
            if star in self.modules and star != module:
                found = self.module_member(star, name, depth + 1)
                if found.kind != "unknown":
                    return found
        return UNKNOWN

    # ---------------------------------------------------------------- classes
    def class_bases(self, cls: Definition) -> list[Sym]:
        f = self.def_file[cls.qualname]
        return [self.chain(f, cls.enclosing_function if cls.parent is not None else None, chain)
                if chain is not None else UNKNOWN for chain, _ in cls.bases]

    def class_member(self, qualname: str, attr: str, *, skip_self: bool = False, seen: set[str] | None = None) -> Sym:
        """``attr`` looked up on a class of the tree and its bases (depth-first, left to right)."""
        cls = self.defs.get(qualname)
        seen = seen if seen is not None else set()
        if cls is None or cls.node_kind != "class" or qualname in seen:
            return UNKNOWN
        seen.add(qualname)
        if not skip_self and attr in cls.members:
            return Sym("def", cls.members[attr])
        for base in self.class_bases(cls):
            if base.kind != "def":
                return UNKNOWN  # the attribute may come from a base we cannot see
            found = self.class_member(base.target, attr, seen=seen)
            if found.kind != "unknown":
                return found
        return UNKNOWN

    def _as_instance(self, sym: Sym) -> Sym:
        """An instance of what ``sym`` names: of a class of the tree, or of something outside it
        (``path: Path``, ``out = []``: its methods are external calls)."""
        if sym.kind == "external":
            return sym
        d = self.defs.get(sym.target) if sym.kind == "def" else None
        return Sym("instance", sym.target) if d is not None and d.node_kind == "class" else UNKNOWN

    # ---------------------------------------------------------------- names and chains
    def name(self, f: FileFacts, fn: Definition | None, name: str) -> Sym:
        scope = fn
        while scope is not None:
            if scope.node_kind == "class":
                scope = scope.parent
                continue
            if name in scope.declared_global:
                break
            if name in scope.nested:
                return Sym("def", scope.nested[name])
            if name in scope.bindings:
                return self.binding(scope.bindings[name])
            if name in scope.locals:
                return self._local(f, scope, name)
            scope = scope.parent
        if name in f.top_names:
            return Sym("def", f.top_names[name])
        if name in f.bindings:
            return self.binding(f.bindings[name])
        if name in f.module_vars:
            return UNKNOWN
        for star in f.star_imports:
            if star in self.modules:
                found = self.module_member(star, name)
                if found.kind != "unknown":
                    return found
            else:
                return UNKNOWN  # might come from a module outside the tree
        if name in _BUILTINS:
            return Sym("external", f"builtins.{name}")
        return UNKNOWN

    def _local(self, f: FileFacts, scope: Definition, name: str) -> Sym:
        """A name bound in a function: ``self``/``cls``, an annotated parameter, a local built once
        from a class of the tree; any other local is a value we cannot type."""
        owner = scope.parent
        if scope.params and name == scope.params[0] and owner is not None and owner.node_kind == "class":
            if scope.kind in ("method", "property"):
                return Sym("instance", owner.qualname)
            if scope.kind == "classmethod":
                return Sym("def", owner.qualname)
        key = (scope.qualname, name)
        if key in self._resolving:  # `a = b(); b = a()`: a cycle types nothing
            return UNKNOWN
        self._resolving.add(key)
        try:
            where = scope.enclosing_function if name in scope.params else scope  # parameter annotations
            if name in scope.annotations:                                         # are read outside
                return self._as_instance(self.chain(f, where, scope.annotations[name]))
            if name in scope.constructed:
                built = self.chain(f, scope, scope.constructed[name])
                if built.kind == "external" and not scope.constructed[name][0].startswith(LITERAL_PREFIX):
                    return UNKNOWN  # what an outside function returns may be anything, objects of the tree too
                return self._as_instance(built)
            return UNKNOWN
        finally:
            self._resolving.discard(key)

    def chain(self, f: FileFacts, fn: Definition | None, chain: Chain) -> Sym:
        root, rest = chain[0], chain[1:]
        if root == SUPER:
            owner = fn.parent if fn is not None else None
            if owner is None or owner.node_kind != "class" or not rest:
                return UNKNOWN
            sym = self.class_member(owner.qualname, rest[0], skip_self=True)
            rest = rest[1:]
        elif root.startswith(LITERAL_PREFIX):
            sym = Sym("external", "builtins." + root[len(LITERAL_PREFIX):])
        else:
            sym = self.name(f, fn, root)
        for attr in rest:
            # the result of calling a class of the tree is its instance; of anything else, unknown
            sym = (self._as_instance(sym) if sym.kind == "def" else UNKNOWN) if attr == CALL_RESULT \
                else self.attribute(sym, attr)
            if sym.kind == "unknown":
                break
        return sym

    def attribute(self, sym: Sym, attr: str) -> Sym:
        if sym.kind == "module":
            return self.module_member(sym.target, attr)
        if sym.kind in ("def", "instance"):
            d = self.defs.get(sym.target)
            if d is None or d.node_kind != "class":
                return UNKNOWN
            return self.class_member(sym.target, attr)
        if sym.kind == "external":
            return Sym("external", f"{sym.target}.{attr}")
        return UNKNOWN

    # ---------------------------------------------------------------- imports
    def import_targets(self, f: FileFacts) -> list[tuple[tuple[str, str], int]]:
        """((class, name), line) of each module an import statement of ``f`` names."""
        out: list[tuple[tuple[str, str], int]] = []
        for imp in f.imports:
            if not imp.resolved:
                out.append(((v.MODULE, imp.module), imp.line))
                continue
            candidates = [f"{imp.module}.{m}" for m in imp.members if m != "*"] if imp.members else []
            hit_sub = [c for c in candidates if c in self.modules]
            for sub in hit_sub:
                out.append(((v.FILE, self.modules[sub].path), imp.line))
            if len(hit_sub) < len(candidates) or not candidates or "*" in imp.members:
                target = self._longest_module(imp.module)
                if target is not None:
                    out.append(((v.FILE, self.modules[target].path), imp.line))
                else:
                    out.append(((v.MODULE, imp.module), imp.line))
        return [(t, line) for t, line in out if t != (v.FILE, f.path)]

    def _longest_module(self, dotted: str) -> str | None:
        parts = dotted.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in self.modules:
                return ".".join(parts[:n])
        return None


def resolve(files: list[FileFacts]) -> list[ResolvedFile]:
    """Resolve every file's imports, bases and calls against the whole tree."""
    index = Index(files)
    return [_resolve_file(index, f) for f in files]


def entity_class(d: Definition) -> str:
    return v.CLASS if d.node_kind == "class" else v.TEST if d.is_test else v.FUNCTION


def _resolve_file(index: Index, f: FileFacts) -> ResolvedFile:
    out = ResolvedFile(f)
    grouped: dict[tuple[str, tuple[str, str], tuple[str, str]], Edge] = {}

    def add(relation: str, subject: tuple[str, str], obj: tuple[str, str], line: int | None, segment: int) -> None:
        key = (relation, subject, obj)
        edge = grouped.get(key)
        if edge is None:
            grouped[key] = edge = Edge(relation, subject, obj, [], segment)
        if line is not None and line not in edge.lines:
            edge.lines.append(line)

    import_lines: dict[int, int] = {}  # line -> segment of the statement
    for d in f.definitions:
        for line in range(d.start_line, d.end_line + 1):
            import_lines.setdefault(line, d.segment)
    for target, line in index.import_targets(f):
        segment = import_lines.get(line, _segment_of_line(f, line))
        if target[0] == v.MODULE:
            out.module_origins[target[1]] = module_origin(target[1])
        add(v.IMPORTS, (v.FILE, f.path), target, line, segment)

    for d in f.definitions:
        me = (entity_class(d), d.qualname)
        add(v.DEFINES, (v.FILE, f.path), me, d.start_line, d.segment)
        if d.parent is not None and d.parent.node_kind == "class" and d.node_kind == "function":
            add(v.CONTAINS, (v.CLASS, d.parent.qualname), me, d.start_line, d.segment)
        if d.node_kind == "class":
            for (chain, line), base in zip(d.bases, index.class_bases(d)):
                target = index.defs.get(base.target) if base.kind == "def" else None
                if target is not None and target.node_kind == "class" and target.qualname != d.qualname:
                    add(v.INHERITS, me, (v.CLASS, target.qualname), line, d.segment)
            continue
        counts = out.calls.setdefault(d.qualname, CallCounts())
        relation = v.TESTS if d.is_test else v.CALLS
        for site in d.calls:
            sym = index.chain(f, d, site.chain) if site.chain is not None else UNKNOWN
            target = index.defs.get(sym.target) if sym.kind == "def" else None
            if sym.kind == "external":
                counts.external += 1
            elif target is None:
                counts.unresolved += 1
            else:
                counts.resolved += 1
                if target.qualname != d.qualname and not target.is_test:  # recursion: no self edge
                    add(relation, me, (entity_class(target), target.qualname), site.line, d.segment)
    out.edges = list(grouped.values())
    return out


def _segment_of_line(f: FileFacts, line: int) -> int:
    """The segment holding a line (module-level statements)."""
    offset = 0
    for _ in range(line - 1):
        nl = f.source.find(b"\n", offset)
        if nl < 0:
            break
        offset = nl + 1
    for i, seg in enumerate(f.segments):
        if seg.start_byte <= offset < max(seg.end_byte, seg.start_byte + 1):
            return i
    best = 0
    for i, seg in enumerate(f.segments):
        if seg.start_byte <= offset:
            best = i
    return best
