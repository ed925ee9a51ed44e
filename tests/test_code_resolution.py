"""Static call resolution that follows how Python is written (issue 25): pytest fixtures, constructors,
class attributes holding classes, decorators that build instances, attribute types assigned in
methods, return values, loop variables, may-dispatch to overrides; every edge says how it was
resolved. A small tree written here, so each expected edge is known by construction; the last test
loads it into a real Neo4j."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.code import vocabulary as v
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology

REPO = Path(__file__).resolve().parents[1]
CODE_ONTOLOGY = REPO / "ontology" / "code.json"

TREE = {
    "kit/__init__.py": "",
    "kit/core.py": '''from dataclasses import dataclass
import typing as t


class Param:
    def __init__(self, name: str):
        self.name = name

    def handle(self, ctx: "Context"):
        return ctx.lookup(self.name)


class Option(Param):
    def handle(self, ctx):
        return None


class Context:
    def __init__(self, command: "Command"):
        self.command = command
        self.cache = None
        self.cache = Cache()

    def lookup(self, name):
        return self.cache.get(name)

    def help(self):
        return self.command.get_help()


class Cache:
    def get(self, name):
        return name


class Command:
    context_class = Context

    def __init__(self, name, params: t.Optional[t.List[Param]] = None):
        self.name = name
        self.params: t.List[Param] = params or []

    def make_context(self):
        ctx = self.context_class(self)
        for param in self.params:
            param.handle(ctx)
        return ctx

    def get_help(self):
        return self.format()

    def format(self):
        return self.name

    def run(self):
        return self.make_context().help()


class Group(Command):
    def format(self):
        return "group"


def command(f) -> Command:
    return Command(f.__name__)


@command
def hello():
    return 1


def build():
    return hello.run()


def loops(x, flag):
    for kind in (Param, Option):
        kind("a")
    for one in [Param("a"), Param("b")]:
        one.handle(None)
    thing = Param("a")
    if flag:
        thing = Cache()
    thing.get("a")
    x.anything()


@dataclass
class Point:
    x: int

    def __post_init__(self):
        self.x = abs(self.x)


def make_point():
    return Point(1)


def pair() -> t.Tuple[str, Cache]:
    return "a", Cache()


def unpack():
    name, cache = pair()
    return cache.get(name)


default_cache = Cache()
point = make = make_point


def module_names():
    make()
    Command("x").format()
    return default_cache.get("k")
''',
    "kit/testing.py": '''from kit.core import Command


class Runner:
    def invoke(self, cmd: Command):
        return cmd.run()

    def isolated(self):
        return self

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
''',
    "tests/conftest.py": '''import pytest
from kit.testing import Runner
from kit.core import Command


@pytest.fixture
def runner():
    return Runner()


@pytest.fixture(name="cmd")
def _command_fixture():
    yield Command("x")


@pytest.fixture
def prepared(runner, cmd):
    runner.invoke(cmd)
    return runner


pytest_plugins = ["tests.plugin"]
''',
    "tests/__init__.py": "",
    "tests/plugin.py": '''import pytest
from kit.core import Cache


@pytest.fixture
def cache() -> Cache:
    return Cache()
''',
    "tests/test_kit.py": '''import pytest
from kit.core import Context, Command, Param, Option


def test_invoke(runner, cmd):
    runner.invoke(cmd)


def test_chain(prepared, cache, tmp_path):
    prepared.isolated()
    cache.get("k")
    tmp_path.mkdir()


@pytest.mark.usefixtures("runner")
def test_uses():
    pass


@pytest.mark.parametrize("p, value", [(Param("a"), 1), pytest.param(Option("b"), 2)])
def test_param(p, value):
    p.handle(Context(Command("c")))


def test_with(runner):
    with runner.isolated() as r:
        r.invoke(Command("d"))


class TestLocal:
    @pytest.fixture
    def runner(self):
        return Command("local")

    def test_shadow(self, runner):
        runner.run()
''',
    "tests/deep/conftest.py": '''import pytest
from kit.core import Command


@pytest.fixture
def runner(runner):
    return runner.isolated()
''',
    "tests/deep/test_deep.py": '''def test_deep(runner):
    runner.invoke(None)
''',
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture()
def extracted(tmp_path: Path):  # type: ignore[no-untyped-def]
    summary = run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), write_tree(tmp_path / "repo", TREE),
                                  tmp_path / "ext.json")
    return Extraction.read(summary.out_path), summary


def rels(ext: Extraction, relation: str) -> dict[tuple[str, str], str | None]:
    """(subject, object) -> resolution of the edges of one relation type."""
    return {(r.subject, r.object): r.attributes.get(v.RESOLUTION) for r in ext.relations if r.relation == relation}


def props(ext: Extraction, name: str) -> dict[str, str]:
    return next(e.properties for e in ext.entities if e.name == name)


def test_constructors_class_attributes_and_decorators(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    calls = rels(ext, v.CALLS)
    # Class(...): the class and the __init__ it runs (inherited __init__ found along the bases)
    assert calls[("kit.core.loops", "kit.core.Param")] == "exact"
    assert calls[("kit.core.loops", "kit.core.Param.__init__")] == "exact"
    assert calls[("kit.core.make_point", "kit.core.Point.__post_init__")] == "exact"
    # a class attribute holding a class: self.context_class(self)
    assert calls[("kit.core.Command.make_context", "kit.core.Context")] == "inferred"
    assert calls[("kit.core.Command.make_context", "kit.core.Context.__init__")] == "inferred"
    # @command turns hello into a Command (the decorator is annotated -> Command)
    assert calls[("kit.core.build", "kit.core.Command.run")] == "inferred"


def test_attribute_return_and_loop_types(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    calls = rels(ext, v.CALLS)
    assert calls[("kit.core.Context.help", "kit.core.Command.get_help")] == "inferred"  # self.command: annotated param
    assert calls[("kit.core.Context.lookup", "kit.core.Cache.get")] == "inferred"  # None, then Cache(): Cache
    assert calls[("kit.core.Command.make_context", "kit.core.Param.handle")] == "inferred"  # for over List[Param]
    assert calls[("kit.core.Command.run", "kit.core.Context.help")] == "inferred"  # what make_context returns
    assert calls[("kit.core.Param.handle", "kit.core.Context.lookup")] == "inferred"  # annotated "Context"
    assert calls[("kit.core.unpack", "kit.core.Cache.get")] == "inferred"  # position 1 of -> Tuple[str, Cache]
    assert calls[("kit.core.module_names", "kit.core.make_point")] == "exact"  # a module-level alias
    assert calls[("kit.core.module_names", "kit.core.Cache.get")] == "inferred"  # a module-level instance
    assert calls[("kit.core.loops", "kit.core.Param.handle")] == "inferred"  # for over a literal list
    # not guessed, counted: kind() over the classes (Param, Option), thing (a Param or a Cache), x (untyped)
    assert ("kit.core.loops", "kit.core.Option") not in calls
    assert ("kit.core.loops", "kit.core.Cache.get") not in calls
    assert int(props(ext, "kit.core.loops")["unresolved_calls"]) == 3


def test_may_dispatch_to_overrides_is_its_own_relation(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, summary = extracted
    calls, may = rels(ext, v.CALLS), rels(ext, v.MAY_CALL)
    assert calls[("kit.core.Command.get_help", "kit.core.Command.format")] == "exact"
    assert may[("kit.core.Command.get_help", "kit.core.Group.format")] == "dispatch"
    assert ("kit.core.Command.get_help", "kit.core.Group.format") not in calls
    assert may[("kit.core.Command.make_context", "kit.core.Option.handle")] == "dispatch"
    # an object built here by naming its class is exactly that class: nothing to dispatch to
    assert calls[("kit.core.module_names", "kit.core.Command.format")] == "exact"
    assert ("kit.core.module_names", "kit.core.Group.format") not in may
    assert set(may.values()) == {"dispatch"}
    assert summary.dispatch_edges >= 2


def test_fixtures_are_linked_and_type_their_parameters(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, summary = extracted
    tests, calls = rels(ext, v.TESTS), rels(ext, v.CALLS)
    # the test requests the fixture: a TESTS edge marked fixture; the parameter is what it returns
    assert tests[("tests.test_kit.test_invoke", "tests.conftest.runner")] == "fixture"
    assert tests[("tests.test_kit.test_invoke", "tests.conftest._command_fixture")] == "fixture"  # name="cmd"
    assert tests[("tests.test_kit.test_invoke", "kit.testing.Runner.invoke")] == "fixture"
    # a fixture using fixtures, and a fixture from a pytest_plugins module, annotated
    assert calls[("tests.conftest.prepared", "tests.conftest.runner")] == "fixture"
    assert calls[("tests.conftest.prepared", "kit.testing.Runner.invoke")] == "fixture"
    assert tests[("tests.test_kit.test_chain", "kit.testing.Runner.isolated")] == "fixture"
    assert tests[("tests.test_kit.test_chain", "tests.plugin.cache")] == "fixture"
    assert tests[("tests.test_kit.test_chain", "kit.core.Cache.get")] == "fixture"
    # pytest's own tmp_path is outside the tree: its calls are external, not unresolved
    assert props(ext, "tests.test_kit.test_chain")["unresolved_calls"] == "0"
    assert tests[("tests.test_kit.test_uses", "tests.conftest.runner")] == "fixture"  # usefixtures
    # a fixture of the test's class wins over conftest.py
    assert tests[("tests.test_kit.TestLocal.test_shadow", "tests.test_kit.TestLocal.runner")] == "fixture"
    assert tests[("tests.test_kit.TestLocal.test_shadow", "kit.core.Command.run")] == "fixture"
    # the nearest conftest.py wins; the fixture it overrides is the one its own parameter gets
    assert tests[("test_deep.test_deep", "conftest.runner")] == "fixture"
    assert ("test_deep.test_deep", "tests.conftest.runner") not in tests
    assert calls[("conftest.runner", "tests.conftest.runner")] == "fixture"
    assert tests[("test_deep.test_deep", "kit.testing.Runner.invoke")] == "fixture"  # isolated() returns self
    assert summary.fixture_links >= 10


def test_parametrize_and_with_targets(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    tests, may = rels(ext, v.TESTS), rels(ext, v.MAY_CALL)
    # p is a Param or an Option: their common base Param, and the override may run
    assert tests[("tests.test_kit.test_param", "kit.core.Param.handle")] == "inferred"
    assert may[("tests.test_kit.test_param", "kit.core.Option.handle")] == "dispatch"
    assert ("tests.test_kit.test_param", "tests.conftest.runner") not in tests  # parametrized names are no fixtures
    # with runner.isolated() as r: what __enter__ returns
    assert tests[("tests.test_kit.test_with", "kit.testing.Runner.invoke")] == "fixture"


def test_summary_reports_each_resolution_kind(extracted, tmp_path: Path,  # type: ignore[no-untyped-def]
                                              capsys: pytest.CaptureFixture[str]) -> None:
    ext, summary = extracted
    by = summary.calls_by_resolution
    assert set(by) == {"exact", "inferred", "fixture"}
    assert sum(by.values()) == summary.calls_resolved
    assert summary.calls_unresolved == sum(int(e.properties.get("unresolved_calls", "0")) for e in ext.entities)
    assert all(r.attributes.get(v.RESOLUTION) for r in ext.relations if r.relation in (v.CALLS, v.TESTS, v.MAY_CALL))
    assert not ext.rejections
    out = tmp_path / "cli.json"
    assert main(["extract", "--extractor", "code", str(tmp_path / "repo"), "-o", str(out),
                 "--ontology", str(CODE_ONTOLOGY)]) == 0
    printed = capsys.readouterr().out
    assert "resolved by: exact" in printed and "MAY_CALL" in printed and "fixture parameters linked" in printed


def test_resolution_and_may_call_reach_neo4j(clean_graph, neo4j_settings: Settings,  # type: ignore[no-untyped-def]
                                             extracted) -> None:
    ext, summary = extracted
    onto = Ontology.from_file(CODE_ONTOLOGY)
    load_extraction(clean_graph, neo4j_settings.neo4j, summary.out_path, onto, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    with clean_graph.session(database=neo4j_settings.neo4j.database) as session:
        rows = session.run("MATCH (a:Entity)-[r]->(b:Entity) WHERE type(r) IN ['CALLS', 'TESTS', 'MAY_CALL'] "
                           "RETURN type(r) AS rel, r.resolution AS resolution, count(*) AS n").data()
    by = {(r["rel"], r["resolution"]): r["n"] for r in rows}
    expected: dict[tuple[str, str | None], int] = {}
    for r in ext.relations:
        if r.relation in (v.CALLS, v.TESTS, v.MAY_CALL):
            key = (r.relation, r.attributes.get(v.RESOLUTION))
            expected[key] = expected.get(key, 0) + 1
    assert by == expected
    assert by[(v.MAY_CALL, "dispatch")] >= 2 and by[(v.TESTS, "fixture")] >= 10
