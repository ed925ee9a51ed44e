"""Decorators and module variables with a meaning for resolution, read from the syntax only:
pytest fixtures (``@pytest.fixture``, ``@pytest.fixture(name="x")``, ``@pytest_asyncio.fixture``),
``@pytest.mark.usefixtures("a", "b")``, ``@pytest.mark.parametrize("a, b", [...])`` (the values
each parameter takes), ``@typing.overload`` stubs and ``pytest_plugins = [...]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import tree_sitter

from graphrag_got.code.chains import Chain, _text, chain_of

FIXTURE_DECORATORS = frozenset({"pytest.fixture", "fixture", "pytest_asyncio.fixture", "_pytest.fixtures.fixture"})
OVERLOAD_DECORATORS = frozenset({"overload", "typing.overload", "t.overload", "typing_extensions.overload"})
_FIXTURE_NAME = re.compile(r"\bname\s*=\s*['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")
_QUOTED = re.compile(r"['\"]([A-Za-z_][A-Za-z0-9_]*)['\"]")


@dataclass
class Marks:
    fixture: str | None = None  # the fixture's name when the function is a fixture
    overload: bool = False
    usefixtures: list[str] = field(default_factory=list)
    parametrized: list[tuple[str, tuple[Chain | None, ...]]] = field(default_factory=list)  # name -> its values


def read_marks(texts: list[str], nodes: list[tree_sitter.Node], memo: dict[int, Chain | None],
               name: str) -> Marks:
    """What the decorators (their texts and ``decorator`` nodes) of the function ``name`` mark it as."""
    marks = Marks()
    for text, node in zip(texts, nodes):
        head = text.split("(")[0].strip()
        if head in FIXTURE_DECORATORS:
            named = _FIXTURE_NAME.search(text)
            marks.fixture = named.group(1) if named else name
        elif head.endswith("mark.parametrize"):
            marks.parametrized += _parametrize(node, memo)
        elif head in OVERLOAD_DECORATORS:
            marks.overload = True
        elif head.endswith("mark.usefixtures"):
            marks.usefixtures += _QUOTED.findall(text)
    return marks


def _parametrize(deco: tree_sitter.Node, memo: dict[int, Chain | None]) -> list[tuple[str, tuple[Chain | None, ...]]]:
    """``@pytest.mark.parametrize("a, b", [(x1, y1), pytest.param(x2, y2)])``: the chains of each
    argument's values (None where a value is not nameable); nothing when the list is not written out."""
    call = deco.named_children[0] if deco.named_children else None
    args = call.child_by_field_name("arguments") if call is not None and call.type == "call" else None
    positional = [a for a in (args.named_children if args is not None else []) if a.type != "keyword_argument"]
    if len(positional) < 2 or positional[0].type != "string" or positional[1].type not in ("list", "tuple"):
        return []
    names_text = "".join(_text(c) for c in positional[0].children if c.type == "string_content")
    names = [n.strip() for n in names_text.split(",") if n.strip()]
    columns: list[list[Chain | None]] = [[] for _ in names]
    for row in positional[1].named_children:
        if row.type == "call" and _text(row.child_by_field_name("function")).endswith("param"):
            row_args = row.child_by_field_name("arguments")
            items = [a for a in (row_args.named_children if row_args is not None else []) if a.type != "keyword_argument"]
        elif len(names) == 1:
            items = [row]
        else:
            items = list(row.named_children) if row.type in ("tuple", "list") else []
        for i in range(len(names)):
            columns[i].append(chain_of(items[i], memo) if i < len(items) else None)
    return [(n, tuple(c)) for n, c in zip(names, columns)]


def plugin_names(assignment: tree_sitter.Node) -> list[str]:
    """The modules of ``pytest_plugins = ["pkg.fixtures", ...]`` (or ``= "pkg.fixtures"``)."""
    right = assignment.child_by_field_name("right")
    strings = [right] if right is not None and right.type == "string" else \
        [c for c in (right.named_children if right is not None else []) if c.type == "string"]
    out = []
    for st in strings:
        content = "".join(_text(c) for c in st.children if c.type == "string_content").strip()
        if content:
            out.append(content)
    return out
