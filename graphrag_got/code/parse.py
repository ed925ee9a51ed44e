"""One Python file -> its syntax facts, read with tree-sitter's Python grammar.

Nothing here looks at other files: definitions (qualified names, line spans, signatures, first
docstring lines), the names each function binds, its import bindings and its call sites (as the
dotted chain written, e.g. ``("self", "store", "get")``), and the file's top-level segments (the
chunks of ``extraction.json``). Cross-file resolution is :mod:`graphrag_got.code.resolve`.

The walk is iterative (an explicit stack), so deeply nested expressions cannot hit Python's
recursion limit. It is linear in the size of the file: a call chain is read at most
:data:`MAX_CHAIN_PARTS` parts deep (a longer one is an expression no resolution could follow: it counts
as unresolved), so the 20,000 calls of a generated ``a.m().m()...`` line do not cost 20,000 walks
down the chain. ``parse_file(max_seconds=...)`` abandons a file whose walk takes longer
(:class:`ParseBudgetExceeded`). tree-sitter is error tolerant: a file with syntax errors still yields what parses,
and :attr:`FileFacts.syntax_errors` says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator, Literal

import tree_sitter
import tree_sitter_python

from graphrag_got.code.chains import (  # noqa: F401 - re-exported: the parser's vocabulary
    _LITERALS, CALL_RESULT, LITERAL_PREFIX, MAX_CHAIN_PARTS, SUPER, Chain, TypeRef, _text, annotation_chain,
    annotation_type, chain_of, tuple_items)
from graphrag_got.code.parse_marks import plugin_names, read_marks

#: The chain of the literal ``None`` (a value the type rules skip: ``x = None`` then ``x = Foo()``).
NONE = (LITERAL_PREFIX + "None",)
_DEF_TYPES = ("function_definition", "class_definition")
#: The nodes a definition can sit in: all a walk for definitions only descends into (no expression holds one).
_DEFINITION_HOLDERS = frozenset({*_DEF_TYPES, "decorated_definition", "module", "block", "if_statement", "elif_clause",
                                 "else_clause", "for_statement", "while_statement", "try_statement", "except_clause",
                                 "except_group_clause", "finally_clause", "with_statement", "match_statement", "case_clause", "ERROR"})
_PROPERTY_DECORATORS = {"property", "cached_property", "functools.cached_property"}
SIGNATURE_MAX = 300
_CLOCK_EVERY = 4096  # nodes visited between two looks at the clock


class ParseBudgetExceeded(Exception):
    """A file's walk took longer than the time it was given."""


@lru_cache(maxsize=1)
def parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_python.language()))


@dataclass(frozen=True)
class Binding:
    """A name bound by an import: ``module`` (absolute dotted) and, for ``from m import x``, ``member``."""

    name: str
    module: str
    member: str | None
    line: int


@dataclass(frozen=True)
class ImportStatement:
    """One imported module of an import statement (``from m import a, b`` gives m with members a, b)."""

    module: str
    members: tuple[str, ...]
    line: int
    resolved: bool = True  # False: a relative import climbing above the analysed tree


@dataclass(frozen=True)
class Value:
    """What one binding of a name gives it: the chain of the expression (None: not nameable), or,
    for a loop target, each item of the iterable ``chain`` (``each``) or of a literal list/tuple/set
    written out (``items``, one chain per item), or one position of a tuple (``index``)."""

    chain: Chain | None
    each: bool = False
    items: tuple[Chain | None, ...] | None = None
    index: int | None = None  # `a, b = f()`: the position of this name in what ``chain`` gives


@dataclass(frozen=True)
class CallSite:
    chain: Chain | None
    line: int


@dataclass
class Definition:
    """A class or a function (methods and nested functions included)."""

    qualname: str
    name: str
    node_kind: Literal["class", "function"]
    kind: str  # class | function | method | staticmethod | classmethod | property | nested
    start_line: int
    end_line: int
    signature: str
    docstring: str
    segment: int  # index of the top-level segment (chunk) holding it
    parent: "Definition | None" = None
    is_test: bool = False
    decorators: list[str] = field(default_factory=list)
    bases: list[tuple[Chain | None, int]] = field(default_factory=list)  # classes: (base chain, line)
    members: dict[str, str] = field(default_factory=dict)  # classes: name -> qualname (methods, classes)
    params: list[str] = field(default_factory=list)
    annotations: dict[str, TypeRef] = field(default_factory=dict)  # local name -> its annotation
    values: dict[str, list[Value]] = field(default_factory=dict)  # local name -> each binding (defaults too)
    returns: list[Chain | None] = field(default_factory=list)  # functions: `return X` values (bare: none)
    yields: list[Chain | None] = field(default_factory=list)  # functions: `yield X` values
    return_type: TypeRef | None = None  # functions: the return annotation
    return_items: tuple[TypeRef | None, ...] | None = None  # functions annotated -> Tuple[A, B]: each position
    decorator_chains: list[Chain | None] = field(default_factory=list)
    fixture: str | None = None  # functions marked @pytest.fixture: the fixture's name
    overload: bool = False  # a @typing.overload stub (its annotations describe the real definition)
    usefixtures: list[str] = field(default_factory=list)  # @pytest.mark.usefixtures("a", ...)
    parametrized: set[str] = field(default_factory=set)  # @pytest.mark.parametrize names (not fixtures)
    # classes: attribute name -> its bindings (`self.x = v` in a method, `x = v` in the body), each
    # with the function it is evaluated in (None: the class's enclosing scope)
    attr_values: dict[str, list[tuple[Value, "Definition | None"]]] = field(default_factory=dict, repr=False)
    attr_types: dict[str, TypeRef] = field(default_factory=dict)  # classes: annotated attributes
    locals: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)
    nested: dict[str, str] = field(default_factory=dict)  # defs directly in this function: name -> qualname
    bindings: dict[str, Binding] = field(default_factory=dict)  # function-level imports
    star_imports: list[str] = field(default_factory=list)
    calls: list[CallSite] = field(default_factory=list)

    @property
    def enclosing_function(self) -> "Definition | None":
        """The nearest function around this one whose scope Python lets it see (class bodies are skipped)."""
        p = self.parent
        while p is not None and p.node_kind == "class":
            p = p.parent
        return p


@dataclass
class Segment:
    """A top-level definition, or a run of other top-level statements: one chunk."""

    start_byte: int
    end_byte: int
    heading: str | None  # the definition's qualified name; None for module-level code


@dataclass
class FileFacts:
    path: str  # relative to the analysed root, POSIX
    module: str
    is_package: bool
    is_test_file: bool
    source: bytes
    text: str
    segments: list[Segment] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    top_names: dict[str, str] = field(default_factory=dict)  # module-level def name -> qualname
    bindings: dict[str, Binding] = field(default_factory=dict)  # module-level imports
    star_imports: list[str] = field(default_factory=list)
    module_vars: set[str] = field(default_factory=set)
    module_values: dict[str, list[Value]] = field(default_factory=dict)  # module-level name -> its bindings
    pytest_plugins: list[str] = field(default_factory=list)  # modules named by `pytest_plugins = [...]`
    imports: list[ImportStatement] = field(default_factory=list)
    syntax_errors: int = 0
    _offset_memo: tuple[int, int] = field(default=(0, 0), repr=False, compare=False)

    @property
    def lines(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") or not self.text else 1)

    def char_offset(self, byte_offset: int) -> int:
        """Character offset in :attr:`text` of a byte offset in :attr:`source` (tree-sitter counts bytes).

        Offsets asked in increasing order (segments are) cost the bytes between them only, so a
        file with thousands of segments is not decoded from its start thousands of times."""
        if len(self.source) == len(self.text):
            return byte_offset
        last_byte, last_char = self._offset_memo
        if byte_offset < last_byte:
            last_byte, last_char = 0, 0
        chars = last_char + len(self.source[last_byte:byte_offset].decode("utf-8", errors="ignore"))
        self._offset_memo = (byte_offset, chars)
        return chars


def is_test_file(path: str) -> bool:
    """pytest's default ``python_files``: ``test_*.py`` and ``*_test.py``."""
    base = path.rsplit("/", 1)[-1]
    return base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py"))


def _target_names(node: tree_sitter.Node | None) -> Iterator[str]:
    """Names a binding target binds, in the order written: ``a``, ``a, (b, *c)``; attributes and
    subscripts bind none."""
    stack = [node] if node is not None else []
    while stack:
        n = stack.pop()
        if n.type == "identifier":
            yield _text(n)
        elif n.type in ("pattern_list", "tuple_pattern", "list_pattern", "list_splat_pattern", "tuple",
                        "list", "parenthesized_expression", "as_pattern_target", "expression_list"):
            stack.extend(reversed(n.named_children))


def _first_docstring_line(body: tree_sitter.Node | None) -> str:
    if body is None or not body.named_children:
        return ""
    first = body.named_children[0]
    if first.type != "expression_statement" or first.named_child_count != 1:
        return ""
    string = first.named_children[0]
    if string.type != "string":
        return ""
    content = "".join(_text(c) for c in string.children if c.type == "string_content")
    for line in content.splitlines():
        if line.strip():
            return line.strip()[:SIGNATURE_MAX]
    return ""


def _signature(node: tree_sitter.Node, source: bytes) -> str:
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    # slice the head only (node.text would copy the whole definition, nested ones again and again)
    cap = node.start_byte + 4 * SIGNATURE_MAX + 4096
    head = source[node.start_byte:min(end, cap)].decode("utf-8", errors="replace")
    head = " ".join(head.split()).rstrip(":").rstrip()
    if len(head) <= SIGNATURE_MAX and end <= cap:
        return head
    return head[: SIGNATURE_MAX - 3] + "..."


def _package_of(module: str, is_package: bool) -> list[str]:
    parts = module.split(".") if module else []
    return parts if is_package else parts[:-1]


class _Walker:
    def __init__(self, facts: FileFacts, max_seconds: float | None = None, definitions_only: bool = False):
        self.f = facts
        self.definitions_only = definitions_only
        self.segment = 0
        self.deadline = time.monotonic() + max_seconds if max_seconds is not None else None
        self.max_seconds = max_seconds
        self._chains: dict[int, Chain | None] = {}  # chain_of's memo

    # ---------------------------------------------------------------- imports
    def _absolute(self, module_node: tree_sitter.Node | None) -> tuple[str, bool]:
        """The absolute module of ``from X import``: relative dots resolved against this file's package."""
        if module_node is None:
            return "", False
        if module_node.type != "relative_import":
            return _text(module_node), True
        prefix = next((c for c in module_node.children if c.type == "import_prefix"), None)
        level = _text(prefix).count(".") if prefix is not None else 0
        rest = next((c for c in module_node.children if c.type == "dotted_name"), None)
        package = _package_of(self.f.module, self.f.is_package)
        if level - 1 > len(package):
            return "." * level + _text(rest), False
        base = package[: len(package) - (level - 1)]
        parts = base + ([_text(rest)] if rest is not None else [])
        return ".".join(p for p in parts if p), True

    def imports(self, node: tree_sitter.Node, scope: Definition | None) -> None:
        line = node.start_point[0] + 1
        bindings = scope.bindings if scope is not None else self.f.bindings
        stars = scope.star_imports if scope is not None else self.f.star_imports
        if node.type == "import_statement":
            for item in node.children_by_field_name("name"):
                if item.type == "aliased_import":
                    module = _text(item.child_by_field_name("name"))
                    alias = _text(item.child_by_field_name("alias"))
                    bindings[alias] = Binding(alias, module, None, line)
                else:
                    module = _text(item)
                    top = module.split(".")[0]
                    bindings[top] = Binding(top, top, None, line)
                self.f.imports.append(ImportStatement(module, (), line))
            return
        module, ok = self._absolute(node.child_by_field_name("module_name"))
        members: list[str] = []
        if any(c.type == "wildcard_import" for c in node.children):
            if ok:
                stars.append(module)
        for item in node.children_by_field_name("name"):
            if item.type == "aliased_import":
                member = _text(item.child_by_field_name("name"))
                alias = _text(item.child_by_field_name("alias"))
            else:
                member = alias = _text(item)
            members.append(member)
            if ok:
                bindings[alias] = Binding(alias, module, member, line)
        self.f.imports.append(ImportStatement(module, tuple(members), line, resolved=ok))

    # ---------------------------------------------------------------- definitions
    def define(self, node: tree_sitter.Node, outer: tree_sitter.Node, decorators: list[tree_sitter.Node],
               scope: Definition | None, stack: list[tuple[tree_sitter.Node, Definition | None]]) -> None:
        name = _text(node.child_by_field_name("name"))
        node_kind: Literal["class", "function"] = "class" if node.type == "class_definition" else "function"
        prefix = scope.qualname if scope is not None else self.f.module
        qualname = f"{prefix}.{name}" if prefix else name
        decos = [_text(d.named_children[0]) if d.named_children else "" for d in decorators]
        deco_names = {d.split("(")[0] for d in decos}
        if node_kind == "class":
            kind = "class"
        elif scope is not None and scope.node_kind == "class":
            kind = ("staticmethod" if "staticmethod" in deco_names else
                    "classmethod" if "classmethod" in deco_names else
                    "property" if deco_names & _PROPERTY_DECORATORS or any(d.endswith((".setter", ".getter",
                                                                                       ".deleter"))
                                                                        for d in deco_names) else "method")
        elif scope is not None:
            kind = "nested"
        else:
            kind = "function"
        body = node.child_by_field_name("body")
        d = Definition(qualname=qualname, name=name, node_kind=node_kind, kind=kind,
                       start_line=outer.start_point[0] + 1, end_line=outer.end_point[0] + 1,
                       signature=_signature(node, self.f.source), docstring=_first_docstring_line(body), segment=self.segment,
                       parent=scope, decorators=decos,
                       decorator_chains=[chain_of(x.named_children[0], self._chains) if x.named_children else None
                                         for x in decorators])
        marks = read_marks(decos, decorators, self._chains, name)
        d.fixture, d.overload, d.usefixtures = marks.fixture, marks.overload, marks.usefixtures
        for pname, column in marks.parametrized:
            d.parametrized.add(pname)
            d.values.setdefault(pname, []).append(Value(None, each=True, items=column))
        self.f.definitions.append(d)
        if scope is None:
            self.f.top_names[name] = qualname
        elif scope.node_kind == "class":
            scope.members[name] = qualname
        else:
            scope.nested[name] = qualname
        if node_kind == "class":
            supers = node.child_by_field_name("superclasses")
            for arg in supers.named_children if supers is not None else []:
                if arg.type == "keyword_argument":  # metaclass=..., total=False
                    continue
                d.bases.append((chain_of(arg, self._chains), arg.start_point[0] + 1))
                stack.append((arg, scope))
        else:
            self._parameters(d, node.child_by_field_name("parameters"), scope, stack)
            ret = node.child_by_field_name("return_type")
            d.return_type = annotation_type(ret)
            d.return_items = tuple_items(ret)
            if ret is not None:
                stack.append((ret, scope))
        for deco in decorators:  # evaluated in the enclosing scope
            stack.append((deco, scope))
        if body is not None:
            stack.extend((c, d) for c in reversed(body.children))

    def _parameters(self, d: Definition, params: tree_sitter.Node | None, scope: Definition | None,
                    stack: list[tuple[tree_sitter.Node, Definition | None]]) -> None:
        for p in params.named_children if params is not None else []:
            name_node: tree_sitter.Node | None = None
            annotation: tree_sitter.Node | None = None
            if p.type == "identifier":
                name_node = p
            elif p.type in ("typed_parameter",):
                name_node = next((c for c in p.named_children if c.type == "identifier"), None)
                if name_node is None:  # *args: T, **kw: T
                    splat = next((c for c in p.named_children if c.type.endswith("splat_pattern")), None)
                    name_node = splat.named_children[0] if splat is not None and splat.named_children else None
                else:  # `*args: T` annotates each item, not the name
                    annotation = p.child_by_field_name("type")
            elif p.type in ("default_parameter", "typed_default_parameter"):
                name_node = p.child_by_field_name("name")
                annotation = p.child_by_field_name("type")
                value = p.child_by_field_name("value")
                if value is not None:
                    stack.append((value, scope))  # defaults are evaluated in the enclosing scope
                    if name_node is not None:  # a default is one value the parameter may hold
                        d.values.setdefault(_text(name_node), []).append(self._value(value))
            elif p.type in ("list_splat_pattern", "dictionary_splat_pattern"):
                name_node = p.named_children[0] if p.named_children else None
                if name_node is not None:  # *args is a tuple, **kwargs a dict
                    kind = "tuple" if p.type == "list_splat_pattern" else "dict"
                    d.values.setdefault(_text(name_node), []).append(Value((LITERAL_PREFIX + kind,)))
            if name_node is None or name_node.type != "identifier":
                continue
            name = _text(name_node)
            d.params.append(name)
            d.locals.add(name)
            ref = annotation_type(annotation)
            if ref is not None:
                d.annotations[name] = ref

    # ---------------------------------------------------------------- bindings in a function
    def _value(self, node: tree_sitter.Node | None) -> Value:
        if node is not None and node.type == "none":
            return Value(NONE)
        return Value(chain_of(node, self._chains))

    def bind(self, scope: Definition | None, names: Iterator[str], value: Value | None = None,
             annotation: tree_sitter.Node | None = None, flat: bool = False) -> None:
        """Names bound in ``scope``; with one name, ``value`` (what it is given) and ``annotation``
        are kept for the type rules. Class bodies bind class attributes, not names of a scope."""
        names = list(names)
        if scope is None:
            self.f.module_vars.update(names)
            for name in names:  # `ib = attrib`, `_default = Runner()`: module aliases and singletons
                self.f.module_values.setdefault(name, []).append(
                    value if value is not None and len(names) == 1 else Value(None))
            return
        if scope.node_kind == "class":
            if len(names) == 1:
                self._attribute(scope, names[0], value, annotation, None)
            return
        unpack = len(names) > 1 and value is not None and value.chain is not None and not value.each
        for i, name in enumerate(names):  # `a, b = f()` (flat targets): each name one position
            scope.locals.add(name)
            scope.values.setdefault(name, []).append(
                value if value is not None and len(names) == 1 else
                Value(value.chain, index=i) if unpack and value is not None and flat else Value(None))
        ref = annotation_type(annotation)
        if len(names) == 1 and ref is not None:
            scope.annotations[names[0]] = ref

    @staticmethod
    def _attribute(cls: Definition, name: str, value: Value | None, annotation: tree_sitter.Node | None,
                   where: Definition | None) -> None:
        ref = annotation_type(annotation)
        if ref is not None:
            cls.attr_types.setdefault(name, ref)
        if value is not None:
            cls.attr_values.setdefault(name, []).append((value, where))

    def _self_attribute(self, scope: Definition | None, left: tree_sitter.Node | None, value: Value,
                        annotation: tree_sitter.Node | None) -> None:
        """``self.x = v`` (or ``cls.x = v``) in a method: a binding of the class's attribute ``x``."""
        if scope is None or left is None or left.type != "attribute" or scope.node_kind != "function":
            return
        owner = scope.parent
        obj = left.child_by_field_name("object")
        if owner is None or owner.node_kind != "class" or obj is None or obj.type != "identifier" \
                or not scope.params or _text(obj) != scope.params[0] or scope.kind == "staticmethod":
            return
        self._attribute(owner, _text(left.child_by_field_name("attribute")), value, annotation, scope)

    def _as_value(self, node: tree_sitter.Node) -> Value:
        """``with X as y``: what ``X.__enter__()`` returns; ``except E as e``: an instance of ``E``."""
        expr = node.named_children[0] if node.named_children else None
        chain = chain_of(expr, self._chains) if expr is not None and expr.type != "as_pattern_target" else None
        parent = node.parent.type if node.parent is not None else ""
        if chain is None or len(chain) + 2 > MAX_CHAIN_PARTS:
            return Value(None)
        if parent == "with_item":
            return Value(chain + ("__enter__", CALL_RESULT))
        if parent == "except_clause" and expr is not None and expr.type in ("identifier", "attribute"):
            return Value(chain + (CALL_RESULT,))
        return Value(None)

    def _loop(self, scope: Definition | None, node: tree_sitter.Node) -> None:
        right = node.child_by_field_name("right")
        if right is not None and right.type in ("list", "tuple", "set"):
            value = Value(None, each=True, items=tuple(chain_of(c, self._chains) for c in right.named_children))
        else:
            value = Value(chain_of(right, self._chains), each=True)
        self.bind(scope, _target_names(node.child_by_field_name("left")), value)

    # ---------------------------------------------------------------- the walk
    def run(self, root: tree_sitter.Node) -> None:
        self._segments(root)
        for index, seg_nodes in enumerate(self._segment_nodes):
            self.segment = index
            stack: list[tuple[tree_sitter.Node, Definition | None]] = [(n, None) for n in reversed(seg_nodes)]
            visited = 0
            while stack:
                node, scope = stack.pop()
                self.visit(node, scope, stack)
                visited += 1
                if self.deadline is not None and visited % _CLOCK_EVERY == 0 and time.monotonic() > self.deadline:
                    raise ParseBudgetExceeded(f"parsing took more than {self.max_seconds:g}s (at line "
                                              f"{node.start_point[0] + 1}); the file is skipped")

    def _segments(self, root: tree_sitter.Node) -> None:
        groups: list[list[tree_sitter.Node]] = []
        headings: list[str | None] = []
        current: list[tree_sitter.Node] = []
        for child in root.children:
            inner = child.child_by_field_name("definition") if child.type == "decorated_definition" else child
            if inner is not None and inner.type in _DEF_TYPES:
                if current:
                    groups.append(current)
                    headings.append(None)
                    current = []
                name = _text(inner.child_by_field_name("name"))
                groups.append([child])
                headings.append(f"{self.f.module}.{name}" if self.f.module else name)
            else:
                current.append(child)
        if current:
            groups.append(current)
            headings.append(None)
        self._segment_nodes = groups
        self.f.segments = [Segment(g[0].start_byte, g[-1].end_byte, h) for g, h in zip(groups, headings)]
        if not self.f.segments:  # an empty file is one empty chunk, so its File entity has a home
            self.f.segments = [Segment(0, len(self.f.source), None)]
            self._segment_nodes = [[]]

    def visit(self, node: tree_sitter.Node, scope: Definition | None,
              stack: list[tuple[tree_sitter.Node, Definition | None]]) -> None:
        t = node.type
        if self.definitions_only and t not in _DEFINITION_HOLDERS:
            return
        if t == "ERROR" or node.is_missing:
            self.f.syntax_errors += 1
        if t == "decorated_definition":
            inner = node.child_by_field_name("definition")
            if inner is not None and inner.type in _DEF_TYPES:
                self.define(inner, node, [c for c in node.children if c.type == "decorator"], scope, stack)
                return
        if t in _DEF_TYPES:
            self.define(node, node, [], scope, stack)
            return
        if t in ("import_statement", "import_from_statement"):
            self.imports(node, scope)
            return
        if t == "future_import_statement":
            self.f.imports.append(ImportStatement("__future__", (), node.start_point[0] + 1))
            return
        if t == "call":
            fn = scope
            while fn is not None and fn.node_kind == "class":
                fn = fn.parent  # a call in a class body runs in the enclosing function, if any
            chain = chain_of(node.child_by_field_name("function"), self._chains) if fn is not None else None
            if fn is not None and chain != ("super",):  # `super()` is counted with the method it looks up
                fn.calls.append(CallSite(chain, node.start_point[0] + 1))
        elif t == "assignment":
            left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
            while right is not None and right.type == "assignment":  # a = b = value
                right = right.child_by_field_name("right")
            value = self._value(right) if right is not None else None
            flat = left is not None and left.type in ("pattern_list", "tuple_pattern", "list_pattern") \
                and all(c.type == "identifier" for c in left.named_children)
            self.bind(scope, _target_names(left), value, node.child_by_field_name("type"), flat)
            self._self_attribute(scope, left, value or Value(None), node.child_by_field_name("type"))
            if scope is None and left is not None and _text(left) == "pytest_plugins":
                self.f.pytest_plugins += plugin_names(node)
        elif t == "augmented_assignment":
            self.bind(scope, _target_names(node.child_by_field_name("left")))
        elif t in ("for_statement", "for_in_clause"):
            self._loop(scope, node)
        elif t == "return_statement" or (t == "yield" and node.is_named):
            fn = scope
            if fn is not None and fn.node_kind == "function":
                expr = node.named_children[0] if node.named_children else None
                if expr is not None and expr.type == "expression_list":
                    expr = None  # `return a, b`: a tuple
                if t == "yield":  # `yield from it` yields the items of it: not followed
                    from_ = any(c.type == "from" for c in node.children)
                    fn.yields.append(None if from_ else self._value(expr).chain if expr is not None else NONE)
                elif expr is not None:
                    fn.returns.append(self._value(expr).chain)
        elif t == "as_pattern":
            self.bind(scope, _target_names(node.child_by_field_name("alias")), self._as_value(node))
        elif t == "named_expression":
            self.bind(scope, _target_names(node.child_by_field_name("name")))
        elif t in ("global_statement", "nonlocal_statement"):
            if scope is not None and t == "global_statement":
                scope.declared_global.update(_text(c) for c in node.named_children if c.type == "identifier")
        stack.extend((c, scope) for c in reversed(node.children))


def _is_test(facts: FileFacts, d: Definition) -> bool:
    """pytest's defaults: ``test*`` functions at module level, ``test*`` methods of ``Test*``
    classes without ``__init__`` (nested ``Test*`` classes included), in a test file."""
    if not facts.is_test_file or d.node_kind != "function" or not d.name.startswith("test"):
        return False
    p = d.parent
    while p is not None:
        if p.node_kind != "class" or not p.name.startswith("Test") or "__init__" in p.members:
            return False
        p = p.parent
    return True


def parse_file(path: str, module: str, source: bytes, text: str, *, is_package: bool,
               max_seconds: float | None = None, definitions_only: bool = False) -> FileFacts:
    """Parse one file (``source`` UTF-8 bytes, ``text`` the same decoded) into its facts; with
    ``max_seconds``, raise :class:`ParseBudgetExceeded` when the walk takes longer. ``definitions_only``:
    the walk skips expressions and imports; the definitions are the full walk's, without calls or bindings."""
    facts = FileFacts(path=path, module=module, is_package=is_package, is_test_file=is_test_file(path),
                      source=source, text=text)
    tree = parser().parse(source)
    _Walker(facts, max_seconds, definitions_only).run(tree.root_node)
    if tree.root_node.has_error and not facts.syntax_errors:  # the error sits where the walk does not look
        facts.syntax_errors = 1
    for d in facts.definitions:
        d.is_test = _is_test(facts, d)
        d.locals -= d.declared_global
    return facts
