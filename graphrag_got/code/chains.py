"""Names of expressions as written: call chains (``a.b().c``) and the classes annotations name.

Read by :mod:`graphrag_got.code.parse`; nothing here looks beyond one syntax node. A chain is a
tuple of parts rooted at a name, ``super()`` or a literal; an annotation gives a :data:`TypeRef`:
an instance of a class (``Foo``, ``Foo | None``, ``Optional[Foo]``), a collection of instances
(``list[Foo]``, ``Sequence["Foo"]``, ``Iterator[Foo]``, ``tuple[Foo, ...]``) or the class itself
(``type[Foo]``, ``Type[Foo]``) or a callable returning an instance (``Callable[[F], Foo]``).
"""

from __future__ import annotations

import re
from typing import Literal

import tree_sitter

#: A call target as written: a dotted chain rooted at a name, ``super()`` or a literal; None when
#: the callee is an expression static analysis cannot name (``handlers[k]()``, ``f()()``).
Chain = tuple[str, ...]
SUPER = "super()"
CALL_RESULT = "()"
LITERAL_PREFIX = "<literal>"

_LITERALS = {"string": "str", "concatenated_string": "str", "list": "list", "dictionary": "dict",
             "set": "set", "tuple": "tuple", "integer": "int", "float": "float", "list_comprehension": "list",
             "dictionary_comprehension": "dict", "set_comprehension": "set"}

_DOTTED_TEXT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
#: Longest call chain read (``a.b().c`` has 4 parts: a, b, (), c); longer ones are not named (None).
MAX_CHAIN_PARTS = 64


def _text(node: tree_sitter.Node | None) -> str:
    return node.text.decode("utf-8", errors="replace") if node is not None and node.text is not None else ""


_UNNAMED = None  # the chain of an expression static analysis cannot name
_MISS = object()
_MEMO_MAX = 10_000  # chains remembered by one walker (they only help within one expression)


def chain_of(node: tree_sitter.Node | None, memo: dict[int, Chain | None] | None = None) -> Chain | None:
    """``a.b.c`` -> ("a", "b", "c"); ``super().m`` -> ("super()", "m"); ``"x".join`` -> ("<literal>str", "join");
    ``Shop().checkout`` -> ("Shop", "()", "checkout").

    A chain of more than :data:`MAX_CHAIN_PARTS` parts is None: the walk down stops there, so one
    call costs a bounded number of steps. With ``memo`` (node id -> chain), the chains of the inner
    nodes walked are remembered, so the nested calls of one ``a.m().m().m()`` are walked once."""
    path: list[tuple[int, str | None]] = []  # (node id, the part it adds; None for parentheses)
    parts = 0
    head: Chain | None
    while True:
        if node is None:
            head = _UNNAMED
            break
        if memo is not None:
            hit = memo.get(node.id, _MISS)
            if hit is not _MISS:
                head = hit  # type: ignore[assignment]
                break
        if len(path) > 4 * MAX_CHAIN_PARTS or parts > MAX_CHAIN_PARTS:  # too long to name: bounded work
            if memo is not None and path:
                memo[path[0][0]] = _UNNAMED
            return None
        t = node.type
        if t == "identifier":
            head = (_text(node),)
            break
        if t == "attribute":
            path.append((node.id, _text(node.child_by_field_name("attribute"))))
            parts += 1
            node = node.child_by_field_name("object")
            continue
        if t == "call":
            fn = node.child_by_field_name("function")
            if fn is not None and fn.type == "identifier" and _text(fn) == "super":
                head = (SUPER,)
                break
            path.append((node.id, CALL_RESULT))  # `Shop().checkout`: what Shop() returns
            parts += 1
            node = fn
            continue
        if t in _LITERALS:
            head = (LITERAL_PREFIX + _LITERALS[t],)
            break
        if t == "parenthesized_expression" and node.named_child_count == 1:
            path.append((node.id, None))
            node = node.named_children[0]
            continue
        head = _UNNAMED
        break
    if memo is not None and node is not None:
        memo[node.id] = head
    chain = head
    for node_id, part in reversed(path):
        if chain is not None and part is not None:
            chain = chain + (part,) if len(chain) < MAX_CHAIN_PARTS else _UNNAMED
        if memo is not None:
            memo[node_id] = chain
    if memo is not None and len(memo) > _MEMO_MAX:
        memo.clear()
    return chain


TypeKind = Literal["one", "each", "type", "factory"]
#: What an annotation says a value is: ("one", chain) an instance of the class the chain names,
#: ("each", chain) a collection of such instances, ("type", chain) the class itself, ("factory",
#: chain) a callable returning such an instance (``Callable[[...], Foo]``: a decorator that turns
#: the function it decorates into a ``Foo``).
TypeRef = tuple[TypeKind, Chain]

#: Generic containers whose iteration yields their (first) type argument.
_EACH = frozenset({"list", "List", "Sequence", "MutableSequence", "Iterable", "Iterator", "Collection", "set", "Set",
                   "frozenset", "FrozenSet", "AbstractSet", "MutableSet", "deque", "Deque", "Generator",
                   "AsyncIterator", "AsyncIterable", "AsyncGenerator", "Reversible"})
_TYPE = frozenset({"type", "Type"})


def _type_args(node: tree_sitter.Node) -> tuple[tree_sitter.Node | None, list[tree_sitter.Node]]:
    """(head, arguments) of ``X[a, b]`` (a subscript in an expression, a generic_type in a signature)."""
    head = node.child_by_field_name("value") or (node.named_children[0] if node.named_children else None)
    args: list[tree_sitter.Node] = []
    for c in node.named_children:
        if c is head or (head is not None and c.id == head.id):
            continue
        if c.type == "type_parameter":
            args.extend(c.named_children)
        else:
            args.append(c)
    args = [a.named_children[0] if a.type == "type" and a.named_child_count == 1 else a for a in args]
    return head, args


def annotation_type(node: tree_sitter.Node | None) -> TypeRef | None:
    """The :data:`TypeRef` an annotation gives, when it names exactly one class; None otherwise
    (unions of two classes, mappings, callables)."""
    if node is None:
        return None
    if node.type == "type" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type in ("identifier", "attribute"):
        chain = chain_of(node)
        return ("one", chain) if chain is not None else None
    if node.type == "string":
        content = "".join(_text(c) for c in node.children if c.type == "string_content").strip()
        if _DOTTED_TEXT.fullmatch(content):
            return ("one", tuple(content.split(".")))
        return None  # a quoted generic ("list[Foo]") is not read
    if node.type == "binary_operator" and _text(node.child_by_field_name("operator")) == "|":
        sides = [node.child_by_field_name("left"), node.child_by_field_name("right")]
        named = [s for s in sides if s is not None and _text(s) != "None"]
        return annotation_type(named[0]) if len(named) == 1 else None
    if node.type in ("subscript", "generic_type"):
        head, args = _type_args(node)
        name = _text(head).split(".")[-1] if head is not None else ""
        if name in ("Optional", "Union"):
            named = [a for a in args if _text(a) != "None"]
            return annotation_type(named[0]) if len(named) == 1 else None
        if name in ("Final", "ClassVar", "Annotated") and args:
            return annotation_type(args[0])
        if name in _TYPE and len(args) == 1:
            inner = annotation_type(args[0])
            return ("type", inner[1]) if inner is not None and inner[0] == "one" else None
        if name == "Callable" and len(args) == 2:
            inner = annotation_type(args[1])
            return ("factory", inner[1]) if inner is not None and inner[0] == "one" else None
        if name in _EACH or (name in ("tuple", "Tuple") and len(args) == 2 and _text(args[1]) == "..."):
            inner = annotation_type(args[0]) if args else None
            return ("each", inner[1]) if inner is not None and inner[0] == "one" else None
    return None


def tuple_items(node: tree_sitter.Node | None) -> tuple[TypeRef | None, ...] | None:
    """``Tuple[A, B | None, list[C]]``: the :data:`TypeRef` of each position (None where an item names
    no class); None when the annotation is not a tuple of fixed length."""
    if node is None:
        return None
    if node.type == "type" and node.named_child_count == 1:
        node = node.named_children[0]
    if node.type not in ("subscript", "generic_type"):
        return None
    head, args = _type_args(node)
    if head is None or _text(head).split(".")[-1] not in ("tuple", "Tuple") or any(_text(a) == "..." for a in args):
        return None
    return tuple(annotation_type(a) for a in args)


def annotation_chain(node: tree_sitter.Node | None) -> Chain | None:
    """The class an annotation names when it is an instance of exactly one class (see :func:`annotation_type`)."""
    ref = annotation_type(node)
    return ref[1] if ref is not None and ref[0] == "one" else None
