"""Type rules of the resolution: what a local, an attribute, a return value or a loop variable holds.

Mixed into :class:`graphrag_got.code.resolve.Index`. A value's type is read, in this order, from

* an annotation: ``x: Foo``, ``Optional[Foo]``, ``list[Foo]`` (a collection: iterating it gives a
  ``Foo``), ``type[Foo]`` (the class itself);
* the values a name is bound to: every assignment of a local (and a parameter's default), every
  ``self.x = ...`` of a class's methods and ``x = ...`` of its body; they must all agree (``None``
  left out), otherwise the type is unknown: a name bound to a ``Foo`` and to a ``Bar`` is not guessed;
* what a function returns: its return annotation, else the values of its ``return`` statements
  (again all agreeing); a generator without an annotation is unknown;
* a loop target: each item of a typed collection, or of a literal ``[A(), A()]`` / ``(A, B)`` whose
  items agree.

Every symbol found this way is at best ``inferred`` (see :mod:`graphrag_got.code.symbols`).
"""

from __future__ import annotations

from graphrag_got.code.chains import CALL_RESULT, Chain, TypeRef
from graphrag_got.code.parse import NONE, Definition, FileFacts, Value
from graphrag_got.code.symbols import FIXTURE, INFERRED, UNKNOWN, Sym, agree, weakest


class TypeRules:
    """Needs ``defs``, ``def_file``, ``_resolving``, ``chain``, ``class_bases`` and ``_as_instance``
    from the class it is mixed into."""

    defs: dict[str, Definition]
    def_file: dict[str, FileFacts]
    overloads: dict[str, list[Definition]]
    _resolving: set[tuple[str, str]]
    _returns: dict[str, Sym]
    _decorated: dict[str, Sym]

    def chain(self, f: FileFacts, fn: Definition | None, chain: Chain) -> Sym:  # pragma: no cover - Index's
        raise NotImplementedError

    def class_bases(self, cls: Definition) -> list[Sym]:  # pragma: no cover - Index's
        raise NotImplementedError

    def _as_instance(self, sym: Sym) -> Sym:  # pragma: no cover - Index's
        raise NotImplementedError

    # ---------------------------------------------------------------- annotations and values
    def type_ref(self, f: FileFacts, where: Definition | None, ref: TypeRef) -> Sym:
        """The symbol an annotation gives (evaluated in ``where``, the scope it is written in)."""
        kind, chain = ref
        named = self.chain(f, where, chain)
        if kind == "factory":
            inst = self._as_instance(named)
            out = Sym("factory", inst.target) if inst.kind == "instance" else UNKNOWN
        elif kind == "type":
            d = self.defs.get(named.target) if named.kind == "def" else None
            out = named if named.kind == "external" or (d is not None and d.node_kind == "class") else UNKNOWN
        else:
            out = self._as_instance(named)
            if kind == "each":
                out = Sym("each", out.target) if out.kind == "instance" else UNKNOWN
        return out.weakened(INFERRED) if out.kind != "unknown" else UNKNOWN

    def value_sym(self, f: FileFacts, scope: Definition | None, value: Value) -> Sym | None:
        """What one binding gives; None for the literal ``None`` (left out when bindings are compared)."""
        if value.items is not None:
            items = [self.chain(f, scope, c) if c is not None else UNKNOWN for c in value.items if c != NONE]
            return self.join(items).weakened(INFERRED) if items else None
        if value.chain is None:
            return UNKNOWN
        if value.chain == NONE:
            return None
        if value.index is not None:
            return self._tuple_item(f, scope, value.chain, value.index)
        sym = self.chain(f, scope, value.chain)
        if value.each:
            sym = Sym("instance", sym.target, sym.how) if sym.kind == "each" else UNKNOWN
        return sym

    def _tuple_item(self, f: FileFacts, scope: Definition | None, chain: Chain, index: int) -> Sym:
        """Position ``index`` of what a call returns, when the function is annotated ``-> Tuple[...]``."""
        if chain[-1] != CALL_RESULT:
            return UNKNOWN
        fn = self.chain(f, scope, chain[:-1])
        d = self.defs.get(fn.target) if fn.kind == "def" else None
        items = d.return_items if d is not None and d.node_kind == "function" else None
        ref = items[index] if items is not None and index < len(items) else None
        if d is None or ref is None:
            return UNKNOWN
        return self.type_ref(self.def_file[d.qualname], d.enclosing_function, ref).weakened(fn.how)

    def values_sym(self, pairs: list[tuple[FileFacts, Definition | None, Value]]) -> Sym:
        syms = [s for s in (self.value_sym(f, scope, v) for f, scope, v in pairs) if s is not None]
        out = self.join(syms)
        return out.weakened(INFERRED) if out.kind != "unknown" else UNKNOWN

    def join(self, syms: list[Sym]) -> Sym:
        """:func:`agree`, except that instances of different classes of the tree give an instance of
        their nearest common base class of the tree (a method called on it may then dispatch to the
        subclasses' overrides); no common base, or anything else that differs: unknown."""
        out = agree(syms)
        if out.kind != "unknown" or len(syms) < 2 or any(s.kind != "instance" for s in syms):
            return out
        lines = [self.ancestors(s.target) for s in syms]
        shared = set(lines[0]).intersection(*lines[1:])
        base = next((q for q in lines[0] if q in shared), None)
        return Sym("instance", base, weakest(*(s.how for s in syms))) if base is not None else UNKNOWN

    def ancestors(self, qualname: str) -> list[str]:
        """The class and its bases of the tree, nearest first (breadth first)."""
        out, todo = [qualname], [qualname]
        while todo:
            cls = self.defs.get(todo.pop(0))
            for base in self.class_bases(cls) if cls is not None and cls.node_kind == "class" else []:
                if base.kind == "def" and base.target not in out and base.target in self.defs:
                    out.append(base.target)
                    todo.append(base.target)
        return out

    def module_value(self, f: FileFacts, name: str) -> Sym:
        """A module-level variable: what its bindings agree on. A plain alias of a name (``ib = attrib``)
        is as sure as that name; anything computed is at best inferred."""
        key = (f.module, name)
        if key in self._resolving:
            return UNKNOWN
        self._resolving.add(key)
        try:
            values = f.module_values.get(name, [])
            syms = [s for s in (self.value_sym(f, None, v) for v in values) if s is not None]
            out = self.join(syms)
        finally:
            self._resolving.discard(key)
        if out.kind == "unknown":
            return UNKNOWN
        plain = all(v.chain is not None and not v.each and CALL_RESULT not in v.chain for v in values)
        return out if plain else out.weakened(INFERRED)

    def local_type(self, f: FileFacts, scope: Definition, name: str) -> Sym:
        """A local or parameter of ``scope``: its annotation, else the values it is bound to."""
        if name in scope.annotations:  # parameter annotations are read in the enclosing scope
            where = scope.enclosing_function if name in scope.params else scope
            return self.type_ref(f, where, scope.annotations[name])
        return self.values_sym([(f, scope, v) for v in scope.values.get(name, [])])

    # ---------------------------------------------------------------- functions
    def return_sym(self, d: Definition) -> Sym:
        """What calling the function ``d`` gives (unknown for a generator without annotation)."""
        if d.qualname in self._returns:
            return self._returns[d.qualname]
        key = (d.qualname, "<return>")
        if key in self._resolving:  # a recursive function: its own calls do not type it
            return UNKNOWN
        self._resolving.add(key)
        try:
            f = self.def_file[d.qualname]
            if d.return_type is not None:
                out = self.type_ref(f, d.enclosing_function, d.return_type)
            elif d.yields:
                out = UNKNOWN
            else:
                out = self.values_sym([(f, d, Value(c)) for c in d.returns])
            if out.kind == "unknown" and d.qualname in self.overloads:
                out = self._overloaded(d, "factory")  # called with its arguments: a decorator factory
        finally:
            self._resolving.discard(key)
        self._returns[d.qualname] = out
        return out

    def _overloaded(self, d: Definition, kind: str) -> Sym:
        """What the ``@overload`` stubs of ``d`` agree it returns, among those returning ``kind``
        (an instance, or a factory of instances)."""
        f = self.def_file[d.qualname]
        syms = [self.type_ref(f, o.enclosing_function, o.return_type) for o in self.overloads.get(d.qualname, [])
                if o.return_type is not None]
        return agree([s for s in syms if s.kind == kind])

    def decorated(self, qualname: str) -> Sym:
        """What the name of a definition holds once its decorators ran: a function stays itself,
        unless its decorators turn it into an instance of a class of the tree (``@Command``, a
        decorator typed ``-> Command`` or returning one, a factory typed ``-> Callable[[F], Command]``
        or returning such a decorator). A decorator that cannot be followed leaves the function."""
        plain = Sym("def", qualname, final=True)  # named directly: that very definition
        d = self.defs.get(qualname)
        if d is None or d.node_kind != "function" or not d.decorator_chains or d.fixture is not None:
            return plain
        if qualname in self._decorated:
            return self._decorated[qualname]
        key = (qualname, "<decorated>")
        if key in self._resolving:
            return plain
        self._resolving.add(key)
        value = plain
        try:
            f = self.def_file[qualname]
            outer = d.decorator_chains[0]  # the decorator applied last gives the name its value
            applied = self.apply_decorator(self.chain(f, d.enclosing_function, outer)) if outer else UNKNOWN
            if applied.kind == "instance":
                value = applied.weakened(INFERRED)
        finally:
            self._resolving.discard(key)
        self._decorated[qualname] = value
        return value

    def apply_decorator(self, deco: Sym) -> Sym:
        """What applying the decorator ``deco`` to a function gives, when it is an instance of the tree."""
        if deco.kind == "factory":
            return Sym("instance", deco.target, deco.how)
        d = self.defs.get(deco.target) if deco.kind == "def" else None
        if d is None:
            return UNKNOWN
        if d.node_kind == "class":
            return Sym("instance", d.qualname, deco.how)
        out = self.return_sym(d)
        if out.kind == "factory" or out.kind == "unknown":  # the stubs of a bare-decorator use
            out = self._overloaded(d, "instance") if d.qualname in self.overloads else UNKNOWN
        return out.weakened(deco.how) if out.kind == "instance" else UNKNOWN

    def fixture_sym(self, d: Definition) -> Sym:
        """The value a fixture function gives the tests that request it: what it yields or returns."""
        f = self.def_file[d.qualname]
        if d.yields:
            if d.return_type is not None and d.return_type[0] == "each":  # Iterator[Foo], Generator[Foo, ...]
                out = self.type_ref(f, d.enclosing_function, d.return_type)
                out = Sym("instance", out.target, out.how) if out.kind == "each" else UNKNOWN
            else:
                out = self.values_sym([(f, d, Value(c)) for c in d.yields])
        else:
            out = self.return_sym(d)
        return out.weakened(FIXTURE) if out.kind != "unknown" else UNKNOWN

    # ---------------------------------------------------------------- classes
    def attr_sym(self, qualname: str, attr: str, seen: set[str] | None = None) -> Sym:
        """An attribute of a class's instances (or of the class) that is not a method: its annotation
        in the class, else every value the class's methods and body assign to it; then the bases of
        the tree, in order."""
        cls = self.defs.get(qualname)
        seen = seen if seen is not None else set()
        if cls is None or cls.node_kind != "class" or qualname in seen:
            return UNKNOWN
        seen.add(qualname)
        f = self.def_file[qualname]
        where = cls.enclosing_function if cls.parent is not None else None
        key = (qualname, "." + attr)
        if key in self._resolving:
            return UNKNOWN
        self._resolving.add(key)
        try:
            if attr in cls.attr_types:
                return self.type_ref(f, where, cls.attr_types[attr])
            if attr in cls.attr_values:  # a subclass may assign it another class: never final
                out = self.values_sym([(f, scope if scope is not None else where, value)
                                       for value, scope in cls.attr_values[attr]])
                return Sym(out.kind, out.target, out.how) if out.final else out
        finally:
            self._resolving.discard(key)
        for base in self.class_bases(cls):
            if base.kind == "def":
                found = self.attr_sym(base.target, attr, seen)
                if found.kind != "unknown":
                    return found
        return UNKNOWN
