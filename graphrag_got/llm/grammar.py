"""GBNF grammars for llama.cpp: a choice among fixed strings, written as a trie.

A grammar that lets the model write only the spans of one text (``name ::= "Jon" | "Jon Snow" |
...``) is fastest when alternatives that share a beginning share a rule: llama.cpp's grammar engine
keeps one stack per alternative still possible, and a trie keeps that number small. Strings are
split into pieces (words with the text between them) and the pieces form the trie's edges.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def literal(text: str) -> str:
    """``text`` as a GBNF string literal (quotes, backslashes and control characters escaped)."""
    out = []
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif ch == "\r":
            out.append("\\r")
        elif ord(ch) < 32:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class _Node:
    __slots__ = ("children", "terminal")

    def __init__(self) -> None:
        self.children: dict[str, _Node] = {}
        self.terminal = False


def trie_rules(name: str, choices: Iterable[Sequence[str]]) -> list[str]:
    """GBNF rules defining ``name`` as exactly one of ``choices``, each given as its pieces
    (joined without separator: ``("Jon", " Snow")`` is "Jon Snow"). Empty choices are ignored;
    at least one non-empty choice is required."""
    root = _Node()
    for pieces in choices:
        pieces = [p for p in pieces if p]
        if not pieces:
            continue
        node = root
        for piece in pieces:
            node = node.children.setdefault(piece, _Node())
        node.terminal = True
    if not root.children:
        raise ValueError(f"grammar rule {name!r} needs at least one non-empty choice")
    rules: list[str] = []
    counter = [0]

    def rule_of(node: _Node, rule: str) -> None:
        alternatives = []
        for piece, child in sorted(node.children.items()):
            if not child.children:
                alternatives.append(literal(piece))
                continue
            counter[0] += 1
            sub = f"{name}-{counter[0]}"
            rule_of(child, sub)
            alternatives.append(f"{literal(piece)} {sub}" + ("?" if child.terminal else ""))
        rules.append(f"{rule} ::= " + " | ".join(alternatives))

    rule_of(root, name)
    return rules


def one_of(name: str, choices: Iterable[str]) -> str:
    """A rule choosing one of ``choices`` whole (class names, labels)."""
    items = sorted({c for c in choices if c})
    if not items:
        raise ValueError(f"grammar rule {name!r} needs at least one non-empty choice")
    return f"{name} ::= " + " | ".join(literal(c) for c in items)
