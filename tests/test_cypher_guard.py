"""The domain/range rule: one Python rule (``Relation.accepts``), and the Cypher of ``stats`` as its second line.

``Relation.fits``/``accepts``/``accepts_any`` decide everywhere in Python (validator, the load's removal of
what a new ontology refuses, the classify strategy's options); ``load_cypher.ontology_violations`` states the
rule again so that ``graphrag-got stats`` checks what the graph holds. The Neo4j test writes every
combination of end labels for every relation of a small ontology (subclasses, symmetric relations, nodes
with several class labels) and checks that the Cypher counts exactly the relationships the Python rule
refuses.
"""

from __future__ import annotations

import itertools

import pytest

from graphrag_got.extract.classify.pairs import options_for
from graphrag_got.extract.validate import Validator
from graphrag_got.graph.load_write import _relation_allowed
from graphrag_got.graph.stats import graph_stats
from graphrag_got.ontology.model import Ontology

ONTO = Ontology.from_dict({
    "name": "guard",
    "classes": {"Person": {}, "Pilot": {"subclass_of": "Person"}, "Ship": {}, "Port": {}},
    "relations": [
        {"name": "FLIES", "domain": "Pilot", "range": "Ship"},
        {"name": "OWNS", "domain": "Person", "range": ["Ship", "Port"]},
        {"name": "TRADES_WITH", "domain": ["Person", "Port"], "range": ["Person", "Port"], "symmetric": True},
        {"name": "DOCKS_AT", "domain": "Ship", "range": "Port"},
    ],
})
#: the label sets an entity may carry (a class, or two classes left by loads under other ontologies)
LABEL_SETS = [["Person"], ["Pilot"], ["Ship"], ["Port"], ["Ship", "Person"], ["Gone"]]


def test_the_rule_fits_one_way_and_accepts_a_symmetric_relation_either_way() -> None:
    flies, owns, trades = ONTO.relation("FLIES"), ONTO.relation("OWNS"), ONTO.relation("TRADES_WITH")
    assert flies.fits("Pilot", "Ship") and not flies.fits("Ship", "Pilot") and not flies.accepts("Ship", "Pilot")
    assert owns.accepts("Pilot", "Port")  # the domain Person is expanded over its subclass Pilot
    assert not owns.accepts("Port", "Person")
    assert trades.accepts("Person", "Port") and trades.accepts("Port", "Person") and not trades.fits("Ship", "Port")
    assert owns.accepts_any(["Ship", "Person"], ["Port"]) and not owns.accepts_any(["Ship"], ["Port", "Person"])


def test_every_python_use_asks_the_one_rule() -> None:
    validator = Validator(ONTO)
    for rel, (s, o) in itertools.product(ONTO.relations, itertools.product(ONTO.classes, repeat=2)):
        known = {"a": {s}, "b": {o}}
        record, rejections = validator.check_relation(
            {"relation": rel.name, "subject": "a", "subject_type": s, "object": "b", "object_type": o}, known)
        assert (record is not None) == rel.accepts(s, o), (rel.name, s, o, [r.reason for r in rejections])
        if record is None:  # the blamed end is the one out of the relation's classes
            assert rejections[0].reason.value == ("domain_violation" if s not in rel.domain else "range_violation")
        assert _relation_allowed(ONTO, rel.name, ["Entity", s], ["Entity", o]) == rel.accepts(s, o)
        offered = [forward for name, forward in options_for(ONTO, s, o) if name == rel.name]  # an unordered pair
        assert bool(offered) == (rel.accepts(s, o) or rel.accepts(o, s)), (rel.name, s, o)
        assert all(rel.accepts(s, o) if forward else rel.accepts(o, s) for forward in offered), (rel.name, s, o)


@pytest.mark.neo4j
def test_the_cypher_guard_counts_what_the_python_rule_refuses(neo4j_driver, neo4j_settings, clean_graph) -> None:
    expected: dict[str, int] = {}
    rows = []
    for i, (rel, a, b) in enumerate(itertools.product(ONTO.relations, LABEL_SETS, LABEL_SETS)):
        rows.append({"a": f"a{i}", "b": f"b{i}", "a_labels": a, "b_labels": b, "type": rel.name})
        if not rel.accepts_any(a, b):
            expected[f"{rel.name}:domain_range"] = expected.get(f"{rel.name}:domain_range", 0) + 1
    rows.append({"a": "x", "b": "y", "a_labels": ["Person"], "b_labels": ["Person"], "type": "HIRES"})
    expected["HIRES:unknown_type"] = 1
    # test-only Cypher (labels and types set by APOC-free dynamic syntax of Neo4j 5.26)
    neo4j_driver.execute_query(
        "UNWIND $rows AS row "
        "CREATE (a:Entity {uid: row.a}) SET a:$(row.a_labels) "
        "CREATE (b:Entity {uid: row.b}) SET b:$(row.b_labels) "
        "CREATE (a)-[:$(row.type)]->(b)", {"rows": rows}, database_=neo4j_settings.neo4j.database)
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)
    assert st["violations_by_type"] == expected
    assert st["violations"] == sum(expected.values()) > 0
