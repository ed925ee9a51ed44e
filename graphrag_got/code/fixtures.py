"""pytest fixtures: which fixture function a test's (or a fixture's) parameter names, as pytest
looks it up, and the value it gives.

Mixed into :class:`graphrag_got.code.resolve.Index`. A function is a fixture when decorated with
``@pytest.fixture``/``@pytest.fixture(...)``/``@pytest_asyncio.fixture`` (or ``fixture`` imported
from them); its name is the ``name=`` argument or the function's name. The lookup order for a
parameter of a test or fixture ``fn`` of file ``f``:

1. fixtures defined in ``fn``'s class and its bases of the tree;
2. fixtures of ``f`` (defined there or imported into it);
3. ``conftest.py`` of ``f``'s folder, then of each parent folder up to the analysed root;
4. modules named by ``pytest_plugins`` in any ``conftest.py`` or top-level module of the tree.

A fixture that requests a fixture of its own name (overriding a farther one) gets the farther one.
Parameters no fixture of the tree provides may be pytest's own fixtures (:data:`BUILTIN_FIXTURES`:
their values are objects outside the tree, so calls on them are external), or stay unresolved.
Autouse fixtures are not linked (nothing in a test names them).
"""

from __future__ import annotations

from graphrag_got.code.parse import Binding, Definition, FileFacts
from graphrag_got.code.symbols import Sym

#: pytest's own fixtures and the types of their values (all outside the tree).
BUILTIN_FIXTURES = {
    "tmp_path": "pathlib.Path", "tmp_path_factory": "_pytest.tmpdir.TempPathFactory", "tmpdir": "py.path.local",
    "monkeypatch": "_pytest.monkeypatch.MonkeyPatch", "capsys": "_pytest.capture.CaptureFixture",
    "capsysbinary": "_pytest.capture.CaptureFixture", "capfd": "_pytest.capture.CaptureFixture",
    "capfdbinary": "_pytest.capture.CaptureFixture", "caplog": "_pytest.logging.LogCaptureFixture",
    "recwarn": "_pytest.recwarn.WarningsRecorder", "request": "_pytest.fixtures.FixtureRequest",
    "pytestconfig": "_pytest.config.Config", "record_property": "builtins.function",
    "doctest_namespace": "builtins.dict",
}


class FixtureRules:
    """Needs ``files``, ``modules``, ``defs``, ``def_file``, ``binding`` and ``class_bases``."""

    files: list[FileFacts]
    modules: dict[str, FileFacts]
    defs: dict[str, Definition]
    def_file: dict[str, FileFacts]
    _module_fixtures: dict[str, dict[str, Definition]]
    _conftests: dict[str, FileFacts] | None = None
    _plugins: list[FileFacts] | None = None

    def binding(self, b: Binding, depth: int = 0) -> Sym:  # pragma: no cover - Index's
        raise NotImplementedError

    def class_bases(self, cls: Definition) -> list[Sym]:  # pragma: no cover - Index's
        raise NotImplementedError

    @staticmethod
    def takes_fixtures(d: Definition) -> bool:
        return d.node_kind == "function" and (d.is_test or d.fixture is not None)

    def fixture_params(self, d: Definition) -> list[str]:
        """The parameters pytest fills with fixtures (``self``/``cls`` of a method and parametrized
        names left out)."""
        params = list(d.params)
        if params and d.parent is not None and d.parent.node_kind == "class" and d.kind != "staticmethod":
            params = params[1:]
        return [p for p in params if p not in d.parametrized]

    def module_fixtures(self, f: FileFacts) -> dict[str, Definition]:
        """Fixtures a module holds: its own top-level ones and those it imports."""
        if f.module in self._module_fixtures:
            return self._module_fixtures[f.module]
        out: dict[str, Definition] = {}
        self._module_fixtures[f.module] = out  # an import cycle sees what is found so far
        for b in f.bindings.values():
            sym = self.binding(b)
            d = self.defs.get(sym.target) if sym.kind == "def" else None
            if d is not None and d.fixture is not None:
                out.setdefault(d.fixture, d)
        for qualname in f.top_names.values():
            d = self.defs[qualname]
            if d.fixture is not None:
                out[d.fixture] = d
        return out

    def _scopes(self, f: FileFacts) -> list[FileFacts]:
        """conftest.py files from ``f``'s folder up to the root, then the plugin modules."""
        if self._conftests is None:
            self._conftests = {c.path.rsplit("/", 1)[0] if "/" in c.path else "": c
                               for c in self.files if c.path.rsplit("/", 1)[-1] == "conftest.py"}
            names = [p for c in self.files if c.path.rsplit("/", 1)[-1] == "conftest.py" or "/" not in c.path
                     for p in c.pytest_plugins]
            self._plugins = [self.modules[n] for n in dict.fromkeys(names) if n in self.modules]
        out = []
        folder = f.path.rsplit("/", 1)[0] if "/" in f.path else ""
        while True:
            c = self._conftests.get(folder)
            if c is not None and c is not f:
                out.append(c)
            if not folder:
                break
            folder = folder.rsplit("/", 1)[0] if "/" in folder else ""
        return out + list(self._plugins or [])

    def _class_fixture(self, cls: Definition, name: str, seen: set[str]) -> Definition | None:
        if cls.qualname in seen:
            return None
        seen.add(cls.qualname)
        for member in cls.members.values():
            d = self.defs.get(member)
            if d is not None and d.fixture == name:
                return d
        for base in self.class_bases(cls):
            b = self.defs.get(base.target) if base.kind == "def" else None
            if b is not None and b.node_kind == "class":
                found = self._class_fixture(b, name, seen)
                if found is not None:
                    return found
        return None

    def find_fixture(self, f: FileFacts, fn: Definition, name: str) -> Definition | None:
        """The fixture function pytest gives ``fn``'s parameter ``name``, or None."""
        candidates: list[Definition | None] = []
        if fn.parent is not None and fn.parent.node_kind == "class":
            candidates.append(self._class_fixture(fn.parent, name, set()))
        candidates.append(self.module_fixtures(f).get(name))
        candidates += [self.module_fixtures(c).get(name) for c in self._scopes(f)]
        for d in candidates:
            if d is not None and d.qualname != fn.qualname:
                return d
        return None
