"""The deterministic code extractor (graphrag_got.code): a small Python tree written here, whose
calls, imports and tests we know by construction, goes through parse, resolve, the one Validator
and the extraction contract. No Neo4j, no LLM."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.cli import main
from graphrag_got.code import vocabulary as v
from graphrag_got.code.extractor import build_code_extraction, parse_tree, run_code_extraction
from graphrag_got.code.resolve import resolve, unique_module_names
from graphrag_got.errors import CorpusError, OntologyError
from graphrag_got.extract.extraction import Extraction, Reason
from graphrag_got.ontology.model import Ontology

REPO = Path(__file__).resolve().parents[1]
CODE_ONTOLOGY = REPO / "ontology" / "code.json"

TREE = {
    "shop/__init__.py": "from .core import Cart as Cart\n",
    "shop/core.py": '''"""Core."""
import os
from .money import add, Money


class Base:
    def total(self):
        return 0


class Cart(Base):
    """A cart.

    Holds items."""

    def __init__(self):
        self.items = []

    def add_item(self, price: "Money"):
        self.items.append(price)
        self.check()
        return price.value()

    def check(self):
        return len(self.items)

    def total(self):
        base = super().total()
        acc = Money(0)
        for item in self.items:
            acc = add(acc, item)
        return base + os.path.join("a", "b").count("a") + self.unknown_helper.run()

    @staticmethod
    def empty():
        return Cart()
''',
    "shop/money.py": '''class Money:
    def __init__(self, value):
        self._v = value

    def value(self):
        return self._v


def add(a, b):
    return Money(a.value() + b.value())


def fact(n):
    return 1 if n < 2 else n * fact(n - 1)
''',
    "tests/test_cart.py": '''from shop import Cart
from shop.money import Money, add


def helper():
    return Cart()


def test_add():
    cart = helper()
    assert cart.add_item(Money(2)) == 2


class TestMoney:
    def test_sum(self):
        assert add(Money(1), Money(2)).value() == 3
''',
    "broken.py": "def ok():\n    return 1\n\ndef broken(:\n    pass\n",
}


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return root


@pytest.fixture()
def onto() -> Ontology:
    return Ontology.from_file(CODE_ONTOLOGY)


@pytest.fixture()
def extracted(tmp_path: Path, onto: Ontology) -> tuple[Extraction, object]:
    root = write_tree(tmp_path / "repo", TREE)
    summary = run_code_extraction(onto, root, tmp_path / "out" / "extraction.json")
    return Extraction.read(summary.out_path), summary


def edges(ext: Extraction, relation: str) -> set[tuple[str, str]]:
    return {(r.subject, r.object) for r in ext.relations if r.relation == relation}


def entity(ext: Extraction, type_: str, name: str):  # type: ignore[no-untyped-def]
    found = [e for e in ext.entities if e.type == type_ and e.name == name]
    assert found, f"no {type_} {name!r}; have {sorted(e.name for e in ext.entities if e.type == type_)}"
    return found[0]


def test_shipped_ontology_declares_the_extractor_vocabulary(onto: Ontology) -> None:
    assert set(v.CLASSES) <= set(onto.classes)
    assert all(onto.relation(r) is not None for r in v.RELATIONS)
    assert v.LINES in onto.relation_attributes and not onto.relation_attributes[v.LINES].identity
    assert main(["ontology", "check", str(CODE_ONTOLOGY)]) == 0


def test_entities_are_qualified_and_described(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    cart = entity(ext, v.CLASS, "shop.core.Cart")
    assert cart.properties["docstring"] == "A cart."
    assert cart.properties["signature"] == "class Cart(Base)"
    assert (cart.properties["start_line"], cart.properties["end_line"]) == ("11", "36")
    assert entity(ext, v.FUNCTION, "shop.core.Cart.empty").properties["kind"] == "staticmethod"
    assert entity(ext, v.FUNCTION, "shop.core.Cart.add_item").properties["signature"] == \
        'def add_item(self, price: "Money")'
    f = entity(ext, v.FILE, "shop/core.py")
    assert f.properties["module"] == "shop.core" and f.properties["language"] == "python"
    test = entity(ext, v.TEST, "test_cart.TestMoney.test_sum")
    assert test.properties["nodeid"] == "tests/test_cart.py::TestMoney::test_sum"
    assert entity(ext, v.FUNCTION, "test_cart.helper")  # not test*: a plain function of a test file
    assert not ext.rejections


def test_calls_resolve_through_imports_self_super_annotations_and_locals(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    calls = edges(ext, v.CALLS)
    assert ("shop.core.Cart.add_item", "shop.core.Cart.check") in calls  # self.
    assert ("shop.core.Cart.add_item", "shop.money.Money.value") in calls  # annotated parameter
    assert ("shop.core.Cart.total", "shop.core.Base.total") in calls  # super()
    assert ("shop.core.Cart.total", "shop.money.add") in calls  # relative from-import
    assert ("shop.core.Cart.total", "shop.money.Money") in calls  # instantiation -> the class
    assert ("shop.money.add", "shop.money.Money.value") not in calls  # a, b are untyped: not guessed
    assert ("shop.core.Cart.empty", "shop.core.Cart") in calls
    assert ("shop.money.fact", "shop.money.fact") not in calls  # recursion: no self edge
    assert ("test_cart.helper", "shop.core.Cart") in calls  # through the package's re-export
    assert edges(ext, v.INHERITS) == {("shop.core.Cart", "shop.core.Base")}
    assert ("shop.core.Cart", "shop.core.Cart.total") in edges(ext, v.CONTAINS)
    rel = next(r for r in ext.relations if r.relation == v.CALLS and r.object == "shop.money.add")
    assert rel.attributes[v.LINES] == "31"


def test_unresolved_and_external_calls_are_counted_not_guessed(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, summary = extracted
    total = entity(ext, v.FUNCTION, "shop.core.Cart.total").properties
    # resolved: super().total(), Money(0), add(); external: os.path.join(); unresolved: .count() on
    # what join returned, and self.unknown_helper.run() (an attribute of an instance)
    assert total["resolved_calls"] == "3"
    assert total["external_calls"] == "1"
    assert total["unresolved_calls"] == "2"
    add = entity(ext, v.FUNCTION, "shop.money.add").properties
    assert add["unresolved_calls"] == "2" and add["resolved_calls"] == "1"  # a.value(), b.value()
    assert summary.calls_unresolved >= 3
    assert summary.calls_unresolved == sum(int(e.properties.get("unresolved_calls", "0")) for e in ext.entities)
    assert "unresolved" in "\n".join(summary.lines())


def test_tests_edges_come_from_the_calls_a_test_makes(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    tests = edges(ext, v.TESTS)
    assert ("test_cart.test_add", "test_cart.helper") in tests
    assert ("test_cart.test_add", "shop.money.Money") in tests
    assert ("test_cart.TestMoney.test_sum", "shop.money.add") in tests
    # cart is what helper() returns, a Cart(): add_item is claimed, marked as inferred
    assert ("test_cart.test_add", "shop.core.Cart.add_item") in tests
    rel = next(r for r in ext.relations if (r.subject, r.object) == ("test_cart.test_add", "shop.core.Cart.add_item"))
    assert rel.attributes[v.RESOLUTION] == "inferred"
    assert not any(r.subject.startswith("test_cart.test") for r in ext.relations if r.relation == v.CALLS)


def test_imports_point_to_files_of_the_tree_or_to_modules(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    imports = {(r.subject, r.object, r.object_type) for r in ext.relations if r.relation == v.IMPORTS}
    assert ("shop/core.py", "shop/money.py", v.FILE) in imports
    assert ("shop/__init__.py", "shop/core.py", v.FILE) in imports
    assert ("tests/test_cart.py", "shop/__init__.py", v.FILE) in imports
    assert ("shop/core.py", "os", v.MODULE) in imports
    assert entity(ext, v.MODULE, "os").properties["origin"] == "stdlib"


def test_contract_chunks_documents_and_provenance(extracted, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ext, _ = extracted
    root = tmp_path / "repo"
    assert {d.id for d in ext.documents} == set(TREE)
    for c in ext.chunks:
        text = (root / c.document_id).read_text(encoding="utf-8")
        assert text[c.start:c.end] == c.text
    headings = [c.heading for c in ext.chunks if c.document_id == "shop/money.py"]
    assert headings == ["shop.money.Money", "shop.money.add", "shop.money.fact"]
    chunk_of = {c.id: c for c in ext.chunks}
    for e in ext.entities:
        assert e.chunk_ids, e.uid
        if e.type in (v.FUNCTION, v.CLASS, v.TEST) and "path" in e.properties:
            assert e.properties["path"] in {chunk_of[c].document_id for c in e.chunk_ids}
    assert ext.llm.provider == "code" and "tree-sitter" in ext.llm.model
    assert Extraction.from_data(ext.to_data()).counts.entities == len(ext.entities)


def test_syntax_errors_keep_what_parses(extracted) -> None:  # type: ignore[no-untyped-def]
    ext, summary = extracted
    assert summary.files_with_syntax_errors == ["broken.py"]
    assert entity(ext, v.FUNCTION, "broken.ok")


def test_document_hash_follows_the_facts_not_only_the_bytes(tmp_path: Path, onto: Ontology) -> None:
    """Renaming a callee changes what an unchanged caller's file resolves to: its hash must change,
    so `load` (incremental per document hash) reloads it and drops the stale CALLS edge."""
    files = {"a.py": "from b import g\n\ndef f():\n    return g()\n", "b.py": "def g():\n    return 1\n"}
    before = run_code_extraction(onto, write_tree(tmp_path / "r", files), tmp_path / "1.json")
    files["b.py"] = "def h():\n    return 1\n"
    after = run_code_extraction(onto, write_tree(tmp_path / "r", files), tmp_path / "2.json")
    one, two = Extraction.read(before.out_path), Extraction.read(after.out_path)
    h1 = {d.id: d for d in one.documents}
    h2 = {d.id: d for d in two.documents}
    assert h1["a.py"].metadata["sha256"] == h2["a.py"].metadata["sha256"]  # same bytes
    assert h1["a.py"].hash != h2["a.py"].hash  # different facts
    assert ("f", "g") not in {(r.subject, r.object) for r in two.relations}
    assert entity(two, v.FUNCTION, "a.f").properties["unresolved_calls"] == "1"


def test_refusals_are_audited_by_the_one_validator(tmp_path: Path) -> None:
    """An ontology without the Test class: tests and their edges are refused, with reasons."""
    data = json.loads(CODE_ONTOLOGY.read_text(encoding="utf-8"))
    del data["classes"]["Test"]
    data["relations"] = [r for r in data["relations"] if r["name"] != "TESTS" and "Test" not in (r["domain"], r["range"])]
    for r in data["relations"]:
        for key in ("domain", "range"):
            if isinstance(r[key], list):
                r[key] = [c for c in r[key] if c != "Test"]
    onto = Ontology.from_dict(data)
    root = write_tree(tmp_path / "repo", TREE)
    files, _ = parse_tree(root)
    ext = build_code_extraction(onto, root, resolve(files))
    reasons = {(r.reason, r.entity_type or r.relation) for r in ext.rejections}
    assert (Reason.UNKNOWN_CLASS, "Test") in reasons
    assert (Reason.UNKNOWN_RELATION, "TESTS") in reasons
    assert not [e for e in ext.entities if e.type == "Test"]


def test_module_names_follow_packages_and_stay_unique() -> None:
    names = unique_module_names(["src/pkg/__init__.py", "src/pkg/mod.py", "tests/conftest.py",
                                 "other/conftest.py", "tool.py"], "repo")
    assert names["src/pkg/mod.py"] == ("pkg.mod", False)
    assert names["src/pkg/__init__.py"] == ("pkg", True)
    assert names["tool.py"] == ("tool", False)
    assert names["tests/conftest.py"][0] == "tests.conftest"  # both would be "conftest"
    assert names["other/conftest.py"][0] == "other.conftest"


def test_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="not found"):
        run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), tmp_path / "missing", tmp_path / "x.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CorpusError, match=r"no \.py file"):
        run_code_extraction(Ontology.from_file(CODE_ONTOLOGY), tmp_path / "empty", tmp_path / "x.json")
    with pytest.raises(OntologyError, match="--ontology ontology/code.json"):
        run_code_extraction(Ontology.from_file(REPO / "ontology" / "got.json"), tmp_path, tmp_path / "x.json")


def test_cli_extract_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = write_tree(tmp_path / "repo", TREE)
    out = tmp_path / "ext.json"
    assert main(["extract", "--extractor", "code", str(root), "-o", str(out), "--ontology", str(CODE_ONTOLOGY)]) == 0
    printed = capsys.readouterr().out
    assert "unresolved" in printed and "CALLS" in printed and str(out) in printed
    assert Extraction.read(out).documents
    assert main(["extract", "--extractor", "code", str(root), "--revalidate", "--ontology", str(CODE_ONTOLOGY)]) == 1
    assert "--revalidate only apply to --extractor llm" in capsys.readouterr().err
    assert main(["extract", "--extractor", "code", str(root), "-o", str(out)]) == 1  # default ontology: not code
    assert "--ontology ontology/code.json" in capsys.readouterr().err


def test_definitions_only_walk_finds_the_full_walks_definitions():
    """`ask impact --diff` parses with ``definitions_only``: on real files (this package, pytest's
    sources: decorators, nested classes, overloads, tests) its definitions equal the full walk's."""
    import inspect

    import _pytest

    from graphrag_got.code.extractor import decode_source
    from graphrag_got.code.parse import parse_file

    here = Path(__file__).resolve().parents[1]
    files = sorted((here / "graphrag_got").rglob("*.py")) + sorted(Path(inspect.getfile(_pytest)).parent.rglob("*.py"))
    files += sorted((here / "tests").glob("test_code_*.py"))

    def seen(facts):
        return [(d.qualname, d.node_kind, d.kind, d.start_line, d.end_line, d.overload, d.is_test, d.fixture,
                 tuple(d.decorators), tuple(sorted(d.members.items())), d.signature, d.segment) for d in facts.definitions]

    compared = calls = 0
    for path in files:
        source, text = decode_source(path.read_bytes())
        rel = path.as_posix()
        full = parse_file(rel, "pkg.mod", source, text, is_package=False)
        light = parse_file(rel, "pkg.mod", source, text, is_package=False, definitions_only=True)
        assert seen(light) == seen(full), path
        assert not any(d.calls for d in light.definitions)  # expressions were skipped
        compared += len(full.definitions)
        calls += sum(len(d.calls) for d in full.definitions)
    assert compared > 1000 and calls > 1000
