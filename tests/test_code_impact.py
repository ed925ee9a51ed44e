"""`ask impact`: the blast radius over a real Neo4j loaded from a code extraction.

The tree is written here, so every caller, importer and test is known by construction. The
Cypher builders are also checked without a database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.code import cypher as code_cypher
from graphrag_got.cli import main
from graphrag_got.code import vocabulary as v
from graphrag_got.code.extractor import run_code_extraction
from graphrag_got.code.impact import ImpactError, impact
from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology

REPO = Path(__file__).resolve().parents[1]
CODE_ONTOLOGY = REPO / "ontology" / "code.json"

TREE = {
    "app/__init__.py": "",
    "app/money.py": (
        "class Money:\n"
        "    def __init__(self, v):\n"
        "        self.v = v\n"
        "\n"
        "    def value(self):\n"
        "        return self.v\n"
        "\n"
        "\n"
        "def add(a: Money, b: Money) -> Money:\n"
        "    return Money(a.value() + b.value())\n"
    ),
    "app/cart.py": (
        "from app.money import Money, add\n"
        "\n"
        "\n"
        "class Cart:\n"
        "    def total(self, items):\n"
        "        acc = Money(0)\n"
        "        for i in items:\n"
        "            acc = add(acc, i)\n"
        "        return acc\n"
        "\n"
        "\n"
        "class Shop(Cart):\n"
        "    def checkout(self, items):\n"
        "        return self.total(items)\n"
        "\n"
        "\n"
        "def report(items):\n"
        "    return Shop().checkout(items)\n"
    ),
    "app/cli.py": "from app import cart\n\n\ndef main():\n    return cart.report([])\n",
    "tests/test_money.py": (
        "from app.money import Money, add\n"
        "\n"
        "\n"
        "def test_add():\n"
        "    assert add(Money(1), Money(2)).value() == 3\n"
    ),
    "tests/test_cart.py": (
        "from app.cart import report\n"
        "\n"
        "\n"
        "class TestReport:\n"
        "    def test_empty(self):\n"
        "        assert report([]).value() == 0\n"
    ),
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


def load_tree(driver, settings: Settings, root: Path, out: Path) -> None:  # type: ignore[no-untyped-def]
    summary = run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), root, out)
    load_extraction(driver, settings.neo4j, summary.out_path, Ontology.from_file(CODE_ONTOLOGY), graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)


@pytest.fixture()
def code_graph(clean_graph, neo4j_settings: Settings, tmp_path: Path):  # type: ignore[no-untyped-def]
    load_tree(clean_graph, neo4j_settings, write_tree(tmp_path / "repo", TREE), tmp_path / "ext.json")
    return clean_graph


def names(nodes) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {n.name: n.distance for n in nodes}


# ------------------------------------------------------------------------------ without Neo4j
def test_cypher_builders_escape_types_and_take_values_as_parameters() -> None:
    q = code_cypher.code_impact_dependents(v.IMPACT_RELATIONS)
    assert "[r:`CALLS`|`INHERITS`|`IMPORTS`|`TESTS`]" in q and "$frontier" in q
    with pytest.raises(ValueError):
        code_cypher.code_impact_dependents(["CALLS]->() DETACH DELETE a //"])
    with pytest.raises(ValueError):
        code_cypher.code_impact_dependents([])
    for q in (code_cypher.code_impact_candidates(), code_cypher.code_impact_members(), code_cypher.code_graph_size(),
              code_cypher.code_impact_unresolved(), code_cypher.code_impact_dependents(v.IMPACT_RELATIONS)):
        assert not any(word in q.upper() for word in ("CREATE", "MERGE", "DELETE", " SET "))


# ------------------------------------------------------------------------------ with Neo4j
def test_function_blast_radius_by_distance(code_graph, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    res = impact(code_graph, neo4j_settings.neo4j, "money.add", hops=3, code=neo4j_settings.code)
    assert [m.name for m in res.matches] == ["app.money.add"]
    assert names(res.affected) == {"app.cart.Cart.total": 1, "app.cart.Shop.checkout": 2, "app.cart.report": 3}
    # a test is not a step: test_add tests add itself (0), test_empty tests report (3)
    assert names(res.tests) == {"test_money.test_add": 0, "test_cart.TestReport.test_empty": 3}
    assert [t.nodeid for t in res.tests] == ["tests/test_money.py::test_add", "tests/test_cart.py::TestReport::test_empty"]
    assert {t.evidence_label for t in res.tests} == {"static exact"}
    assert names(res.files) == {"app/money.py": 0, "app/cart.py": 1}
    assert res.affected[0].via == "CALLS app.money.add (line 8)"
    closure = impact(code_graph, neo4j_settings.neo4j, "app.money.add", code=neo4j_settings.code)  # default: to a fixed point
    assert names(closure.affected) == {**names(res.affected), "app.cli.main": 4}
    assert closure.steps == 4 and not closure.cut and closure.hops is None
    shallow = impact(code_graph, neo4j_settings.neo4j, "app.money.add", hops=1, code=neo4j_settings.code)
    assert names(shallow.affected) == {"app.cart.Cart.total": 1}
    assert names(shallow.tests) == {"test_money.test_add": 0}


def test_class_target_includes_its_methods_and_subclasses(code_graph, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    res = impact(code_graph, neo4j_settings.neo4j, "Cart", hops=1, code=neo4j_settings.code)
    assert {n.name for n in res.changed} == {"app.cart.Cart.total"}
    assert names(res.affected) == {"app.cart.Shop": 1, "app.cart.Shop.checkout": 1}
    assert names(impact(code_graph, neo4j_settings.neo4j, "Cart", code=neo4j_settings.code).affected)["app.cart.report"] == 2


def test_file_target_follows_importers_and_their_tests(code_graph, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    res = impact(code_graph, neo4j_settings.neo4j, "app/money.py", hops=2, code=neo4j_settings.code)
    files = names(res.files)
    assert files["app/money.py"] == 0 and files["app/cart.py"] == 1 and files["tests/test_money.py"] == 1
    assert files["app/cli.py"] == 2  # imports app.cart, which imports app.money
    assert {n.name for n in res.changed} >= {"app.money.add", "app.money.Money", "app.money.Money.value"}
    tests = names(res.tests)
    # report() returns a Money (Shop().checkout() -> self.total() -> acc), so test_empty calls Money.value itself
    assert tests["test_money.test_add"] == 0 and tests["test_cart.TestReport.test_empty"] == 0


def test_unknown_and_ambiguous_targets_are_one_clear_error(code_graph, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ImpactError, match="'nothing.here' matches no function, class or test"):
        impact(code_graph, neo4j_settings.neo4j, "nothing.here", code=neo4j_settings.code)
    with pytest.raises(ImpactError, match="matches no file"):
        impact(code_graph, neo4j_settings.neo4j, "app/nothing.py", code=neo4j_settings.code)
    with pytest.raises(ConfigError, match="--hops"):
        impact(code_graph, neo4j_settings.neo4j, "add", hops=0, code=neo4j_settings.code)


def test_ambiguous_tail_lists_candidates(clean_graph, neo4j_settings: Settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    root = write_tree(tmp_path / "r", {"a.py": "def run():\n    pass\n", "b.py": "def run():\n    pass\n"})
    load_tree(clean_graph, neo4j_settings, root, tmp_path / "e.json")
    with pytest.raises(ImpactError, match=r"'run' is ambiguous: it names 2 entities: a\.run \(Function\), b\.run"):
        impact(clean_graph, neo4j_settings.neo4j, "run", code=neo4j_settings.code)
    assert [m.name for m in impact(clean_graph, neo4j_settings.neo4j, "b.run", code=neo4j_settings.code).matches] == ["b.run"]


def test_no_code_graph_says_what_to_do(clean_graph, neo4j_settings: Settings) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ImpactError, match="extract --extractor code"):
        impact(clean_graph, neo4j_settings.neo4j, "anything", code=neo4j_settings.code)


def test_cli_json_and_exit_codes(code_graph, capsys: pytest.CaptureFixture[str]) -> None:  # type: ignore[no-untyped-def]
    assert main(["ask", "impact", "app.money.Money.value", "--json", "--hops", "2"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["format"] == "graphrag_got.impact/2"
    assert {a["name"]: a["distance"] for a in data["affected"]} == {
        "app.money.add": 1, "app.cart.Cart.total": 2}
    assert data["pytest_args"] == ["tests/test_cart.py::TestReport::test_empty", "tests/test_money.py::test_add"]
    assert data["counts"]["tests_by_evidence"] == {"static": 2, "coverage": 0, "both": 0}
    assert data["counts"]["unresolved_calls_in_radius"] >= 0
    assert main(["ask", "impact", "app.money.add"]) == 0
    text = capsys.readouterr().out
    assert "tests to run" in text and "tests/test_money.py::test_add  [static exact]" in text
    assert main(["ask", "impact", "no_such_function"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: 'no_such_function' matches no")


def test_incremental_reload_drops_stale_calls(clean_graph, neo4j_settings: Settings, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """b.g renamed to b.h: a.py's bytes did not change, but its facts did; the reload must drop
    the old CALLS edge and the entity g (nothing supports it any more)."""
    files = {"a.py": "from b import g\n\n\ndef f():\n    return g()\n", "b.py": "def g():\n    return 1\n"}
    root = write_tree(tmp_path / "r", files)
    load_tree(clean_graph, neo4j_settings, root, tmp_path / "1.json")
    assert names(impact(clean_graph, neo4j_settings.neo4j, "b.g", code=neo4j_settings.code).affected) == {"a.f": 1}
    write_tree(root, {"b.py": "def h():\n    return 1\n"})
    load_tree(clean_graph, neo4j_settings, root, tmp_path / "2.json")
    with pytest.raises(ImpactError, match="matches no"):
        impact(clean_graph, neo4j_settings.neo4j, "b.g", code=neo4j_settings.code)
    assert impact(clean_graph, neo4j_settings.neo4j, "b.h", code=neo4j_settings.code).affected == []
    (root / "b.py").unlink()
    load_tree(clean_graph, neo4j_settings, root, tmp_path / "3.json")
    with pytest.raises(ImpactError, match="matches no file"):
        impact(clean_graph, neo4j_settings.neo4j, "b.py", code=neo4j_settings.code)
