"""What a name or a chain denotes during resolution (:class:`Sym`), and how sure that is.

``how`` says on what a resolution rests, from the surest to the least sure:

* ``exact``: names, imports, ``module.func``, ``Class.method``, ``self``/``cls``/``super()``, a
  class's constructor;
* ``inferred``: a type read from an annotation, an assignment, a return value, an attribute
  assigned in a method or a loop over a typed collection;
* ``fixture``: a pytest fixture parameter, typed by the value the fixture returns or yields.

Two more kinds only label edges (not symbols): ``dispatch`` (a call may run an override in a
subclass: relation ``MAY_CALL``) and ``name`` (reserved for guesses by name alone; none are made).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

SymKind = Literal["module", "def", "instance", "each", "factory", "external", "unknown"]

EXACT = "exact"
INFERRED = "inferred"
FIXTURE = "fixture"
DISPATCH = "dispatch"
NAME = "name"
#: Every value of the relation attribute ``resolution``, the surest first.
RESOLUTIONS = (EXACT, INFERRED, FIXTURE, DISPATCH, NAME)
_RANK = {k: i for i, k in enumerate(RESOLUTIONS)}


def weakest(*hows: str) -> str:
    """The least sure of several resolution kinds (a chain is as sure as its weakest step)."""
    return max(hows, key=_RANK.__getitem__)


def surest(*hows: str) -> str:
    return min(hows, key=_RANK.__getitem__)


@dataclass(frozen=True)
class Sym:
    """What a name or a chain denotes: a module or definition of the tree, an instance of a class of
    the tree, a collection of such instances (``each``: what iterating it gives is an instance), a
    callable that returns such an instance (``factory``: a decorator typed ``Callable[[F], Foo]``),
    something outside the tree (``external``), or ``unknown``; ``how`` is what it rests on.
    Two symbols are :meth:`same` when they denote the same thing, however sure."""

    kind: SymKind
    target: str = ""
    how: str = EXACT
    #: an instance known to be of exactly ``target`` (built by ``target(...)``), not of a subclass:
    #: its method calls dispatch nowhere else
    final: bool = False

    def weakened(self, how: str) -> "Sym":
        """The same symbol, no surer than ``how``."""
        w = weakest(self.how, how)
        return self if w == self.how else Sym(self.kind, self.target, w, self.final)

    def same(self, other: "Sym") -> bool:
        """Denotes the same thing (however sure)."""
        return self.kind == other.kind and self.target == other.target


UNKNOWN = Sym("unknown")


def agree(syms: list[Sym]) -> Sym:
    """The one symbol every binding gives (``None`` literals left out by the caller), as sure as the
    least sure of them; UNKNOWN when they differ, when one is unknown, or when there is none."""
    if not syms or any(s.kind == "unknown" for s in syms):
        return UNKNOWN
    first = syms[0]
    if not all(s.same(first) for s in syms[1:]):
        return UNKNOWN
    out = first.weakened(weakest(*(s.how for s in syms)))
    final = all(s.final for s in syms)
    return out if out.final == final else Sym(out.kind, out.target, out.how, final)
