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
from dataclasses import dataclass, field

from graphrag_got.code import vocabulary as v
from graphrag_got.code.fixtures import BUILTIN_FIXTURES, FixtureRules
from graphrag_got.code.hierarchy import HierarchyRules
from graphrag_got.code.modules import module_name, module_origin, unique_module_names  # noqa: F401 - re-exported
from graphrag_got.code.parse import CALL_RESULT, LITERAL_PREFIX, SUPER, Binding, Chain, Definition, FileFacts
from graphrag_got.code.symbols import DISPATCH, FIXTURE, UNKNOWN, Sym, surest
from graphrag_got.code.types import TypeRules

MAX_REEXPORT_DEPTH = 10
_BUILTINS = frozenset(dir(builtins))


@dataclass
class Edge:
    relation: str
    subject: tuple[str, str]  # (class, name)
    object: tuple[str, str]
    lines: list[int]
    segment: int  # chunk (top-level segment) of the subject's file the fact is written in
    resolution: str | None = None  # calls: how the surest of its sites was resolved (symbols.RESOLUTIONS)


@dataclass
class CallCounts:
    resolved: int = 0
    external: int = 0
    unresolved: int = 0
    by_resolution: dict[str, int] = field(default_factory=dict)  # resolved sites per resolution kind
    dispatch_edges: int = 0  # MAY_CALL targets added (overrides in subclasses)
    fixture_links: int = 0  # fixture parameters linked to the fixture function


@dataclass
class ResolvedFile:
    facts: FileFacts
    edges: list[Edge] = field(default_factory=list)
    calls: dict[str, CallCounts] = field(default_factory=dict)  # definition qualname -> counts
    module_origins: dict[str, str] = field(default_factory=dict)  # external module name -> origin


class Index(TypeRules, HierarchyRules, FixtureRules):
    """Every module and definition of the analysed tree, and the resolution rules over them (the
    type, hierarchy and fixture rules are in their own modules)."""

    def __init__(self, files: list[FileFacts]):
        self.files = files
        self.modules: dict[str, FileFacts] = {f.module: f for f in files}
        self.defs: dict[str, Definition] = {}
        self.def_file: dict[str, FileFacts] = {}
        self._resolving: set[tuple[str, str]] = set()
        self._returns: dict[str, Sym] = {}
        self._decorated: dict[str, Sym] = {}
        self.overloads: dict[str, list[Definition]] = {}  # qualname -> its @overload stubs
        self._module_fixtures: dict[str, dict[str, Definition]] = {}
        for f in files:
            for d in f.definitions:  # the first definition that is not an @overload stub stands for
                if d.overload:       # its name (a property's getter, an overloaded function's body)
                    self.overloads.setdefault(d.qualname, []).append(d)
                if d.qualname not in self.defs or (self.defs[d.qualname].overload and not d.overload):
                    self.defs[d.qualname] = d
                    self.def_file[d.qualname] = f

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
            return self.decorated(facts.top_names[name])
        if name in facts.bindings:
            return self.binding(facts.bindings[name], depth + 1)
        if f"{module}.{name}" in self.modules:
            return Sym("module", f"{module}.{name}")
        if name in facts.module_vars:
            return self.module_value(facts, name)
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
        return Sym("instance", sym.target, sym.how) if d is not None and d.node_kind == "class" else UNKNOWN

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
                return self.decorated(scope.nested[name])
            if name in scope.bindings:
                return self.binding(scope.bindings[name])
            if name in scope.locals:
                return self._local(f, scope, name)
            scope = scope.parent
        if name in f.top_names:
            return self.decorated(f.top_names[name])
        if name in f.bindings:
            return self.binding(f.bindings[name])
        if name in f.module_vars:
            return self.module_value(f, name)
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
        """A name bound in a function: ``self``/``cls``, a fixture parameter of a test or fixture, or a
        local typed by the rules of :mod:`graphrag_got.code.types`."""
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
            if name not in scope.annotations and self.takes_fixtures(scope) and name in self.fixture_params(scope):
                fixture = self.find_fixture(f, scope, name)
                if fixture is not None:
                    return self.fixture_sym(fixture)
                if name in BUILTIN_FIXTURES:
                    return Sym("external", BUILTIN_FIXTURES[name], FIXTURE)
            return self.local_type(f, scope, name)
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
            sym = self.call_result(sym) if attr == CALL_RESULT else self.attribute(sym, attr)
            if sym.kind == "unknown":
                break
        return sym

    def call_result(self, sym: Sym) -> Sym:
        """What calling ``sym`` gives: an instance of a class of the tree, what a function of the tree
        returns (:meth:`return_sym`); anything else (an outside function's result) is unknown."""
        d = self.defs.get(sym.target) if sym.kind in ("def", "factory") else None
        if d is None:
            return UNKNOWN
        if d.node_kind == "class" and sym.kind == "def":  # a class named directly builds exactly that class
            out = self._as_instance(sym)
            return Sym(out.kind, out.target, out.how, final=sym.final) if out.kind == "instance" else out
        out = self.return_sym(d) if sym.kind == "def" else Sym("instance", d.qualname, sym.how)  # factory
        return out.weakened(sym.how) if out.kind != "unknown" else UNKNOWN

    def attribute(self, sym: Sym, attr: str) -> Sym:
        """``sym.attr``: a module's member, a class's method (or nested class), else an attribute
        typed by the class's assignments (:meth:`attr_sym`); a property gives what it returns."""
        if sym.kind == "module":
            return self.module_member(sym.target, attr).weakened(sym.how)
        if sym.kind in ("def", "instance"):
            d = self.defs.get(sym.target)
            if d is None:
                return UNKNOWN
            if d.node_kind == "function":  # a property read through an instance: its value
                if d.kind != "property":
                    return UNKNOWN
                return self.attribute(self.return_sym(d).weakened(sym.how), attr)
            found = self.class_member(sym.target, attr)
            if found.kind == "unknown":
                found = self.attr_sym(sym.target, attr)
            return found.weakened(sym.how) if found.kind != "unknown" else UNKNOWN
        if sym.kind == "each":  # a method of the collection itself (append, count): not of the tree
            return Sym("external", f"builtins.collection.{attr}", sym.how)
        if sym.kind == "external":
            return Sym("external", f"{sym.target}.{attr}", sym.how)
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

    def add(relation: str, subject: tuple[str, str], obj: tuple[str, str], line: int | None, segment: int,
            resolution: str | None = None) -> None:
        key = (relation, subject, obj)
        edge = grouped.get(key)
        if edge is None:
            grouped[key] = edge = Edge(relation, subject, obj, [], segment, resolution)
        elif resolution is not None:
            edge.resolution = surest(edge.resolution, resolution) if edge.resolution else resolution
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

        def link(target: Definition, line: int, how: str, rel: str = relation) -> None:
            if target.qualname != d.qualname and not target.is_test:  # recursion: no self edge
                add(rel, me, (entity_class(target), target.qualname), line, d.segment, how)

        if index.takes_fixtures(d):
            for name in [*index.fixture_params(d), *d.usefixtures]:
                fixture = index.find_fixture(f, d, name)
                if fixture is not None:
                    counts.fixture_links += 1
                    link(fixture, d.start_line, FIXTURE)
        for site in d.calls:
            sym, receiver = _callee(index, f, d, site.chain) if site.chain is not None else (UNKNOWN, None)
            target = index.defs.get(sym.target) if sym.kind in ("def", "instance") else None
            if sym.kind == "instance" and target is not None:  # calling an object runs its __call__
                call = index.class_member(target.qualname, "__call__")
                target = index.defs.get(call.target) if call.kind == "def" else None
            if sym.kind == "external":
                counts.external += 1
                continue
            if target is None:
                counts.unresolved += 1
                continue
            counts.resolved += 1
            counts.by_resolution[sym.how] = counts.by_resolution.get(sym.how, 0) + 1
            link(target, site.line, sym.how)
            if target.node_kind == "class":
                for init in index.constructors(target.qualname):
                    link(index.defs[init], site.line, sym.how)
            elif receiver is not None and site.chain is not None and _dispatches(d, receiver, site.chain):
                for override in index.overrides(receiver.target, site.chain[-1], target.qualname):
                    counts.dispatch_edges += 1
                    link(index.defs[override], site.line, DISPATCH, v.MAY_CALL)
    out.edges = list(grouped.values())
    return out


def _callee(index: Index, f: FileFacts, d: Definition, chain: Chain) -> tuple[Sym, Sym | None]:
    """What a call site's chain names and, for ``x.m(...)``, what ``x`` is (the receiver)."""
    if len(chain) >= 2 and chain[0] != SUPER and chain[-1] != CALL_RESULT:
        receiver = index.chain(f, d, chain[:-1])
        if receiver.kind == "unknown":
            return UNKNOWN, None
        return index.attribute(receiver, chain[-1]), receiver
    return index.chain(f, d, chain), None


def _dispatches(d: Definition, receiver: Sym, chain: Chain) -> bool:
    """Whether a method call may run an override: through an instance, or through ``cls`` in a
    classmethod (an explicit ``Class.method`` names exactly that method)."""
    if receiver.kind == "instance":
        return not receiver.final
    return receiver.kind == "def" and d.kind == "classmethod" and len(chain) == 2 and bool(d.params) \
        and chain[0] == d.params[0]


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
