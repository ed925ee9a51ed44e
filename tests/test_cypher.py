"""Query builders of the loader and search Cypher modules (no server needed)."""

from __future__ import annotations

import inspect
import re

import pytest

from graphrag_got.graph import cypher as graph_cypher
from graphrag_got.graph import load_cypher
from graphrag_got.search import cypher as search_cypher

HOSTILE_NAMES = [
    "",
    "1Personaje",
    "Per sonaje",
    "Personaje`",
    "Personaje` ) DETACH DELETE n //",
    "A`B",
    "Personaje}) MATCH (n) DETACH DELETE n",
    "x//comment",
    "Personaje\n",
    "Ñandú",
    "日本語",
    "a-b",
    "a.b",
    "$param",
    None,
    42,
]


def test_escape_name_quotes_plain_identifiers() -> None:
    assert graph_cypher.escape_name("Personaje") == "`Personaje`"
    assert graph_cypher.escape_name("CASADO_CON") == "`CASADO_CON`"
    assert graph_cypher.escape_name("_x9") == "`_x9`"


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_escape_name_rejects_anything_else(name: object) -> None:
    with pytest.raises(ValueError, match="not a valid label"):
        graph_cypher.escape_name(name)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_builders_refuse_hostile_labels_and_types(name: object) -> None:
    for build in (load_cypher.merge_entities, load_cypher.merge_relations, load_cypher.count_label):
        with pytest.raises(ValueError):
            build(name)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        load_cypher.create_constraints([name])  # type: ignore[list-item]


def test_label_and_type_come_from_the_argument() -> None:
    q = load_cypher.merge_entities("CasaNoble")
    assert "SET e:`CasaNoble`" in q
    assert "MERGE (e:Entity {uid: row.uid})" in q
    r = load_cypher.merge_relations("LEAL_A")
    assert "MERGE (a)-[r:`LEAL_A`]->(b)" in r  # no identity attribute: the fact is (start, type, end)
    keyed = load_cypher.merge_relations("LEAL_A", ["momento", "lugar"])
    assert "[r:`LEAL_A` {`momento`: row.identity.`momento`, `lugar`: row.identity.`lugar`}]" in keyed
    assert "SET r += row.attributes" in keyed
    with pytest.raises(ValueError):
        load_cypher.merge_relations("LEAL_A", ["momento} ]->() DETACH DELETE a //"])
    assert "MATCH (a:Entity {uid: row.start})" in r and "MATCH (b:Entity {uid: row.end})" in r
    # The only backticked names are the ones passed in.
    assert re.findall(r"`[^`]*`", q) == ["`CasaNoble`"]
    assert re.findall(r"`[^`]*`", r) == ["`LEAL_A`"]


def test_entity_merge_sets_the_record_and_unions_provenance() -> None:
    q = load_cypher.merge_entities("Personaje")
    assert "e += row.properties" in q
    # model fields set after the property map, so a property can never overwrite them
    assert q.index("e += row.properties") < q.index("e.key = row.key")
    assert "e.name = row.name" in q and "e.aliases = coalesce(row.aliases, [])" in q  # the file's record
    assert "NOT k IN $reserved" in q and q.index("SET e[k] = null") < q.index("e += row.properties")
    assert "WHERE NOT x IN coalesce(e.chunk_ids, [])" in q
    assert "WHERE NOT x IN coalesce(e.doc_ids, [])" in q


def test_relation_merge_unions_provenance() -> None:
    r = load_cypher.merge_relations("CASADO_CON")
    assert "WHERE NOT x IN coalesce(r.chunk_ids, [])" in r
    assert "WHERE NOT x IN coalesce(r.doc_ids, [])" in r


def _write_builders() -> list[str]:
    """Every write query the module builds (sample labels for parameterized builders)."""
    return [
        load_cypher.merge_documents(),
        load_cypher.finalize_documents(),
        load_cypher.merge_chunks(),
        load_cypher.merge_mentions(),
        load_cypher.merge_entities("Personaje"),
        load_cypher.merge_relations("CASADO_CON"),
        load_cypher.set_entity_provenance(),
        load_cypher.set_relation_provenance(),
        load_cypher.delete_chunks(),
        load_cypher.delete_documents(),
        load_cypher.prune_relations(),
        load_cypher.prune_entities(),
    ]


def test_every_batched_write_unwinds_rows() -> None:
    for q in _write_builders():
        assert q.startswith("UNWIND $rows AS row\n"), q
        assert re.search(r"\b(MERGE|SET|DELETE|CREATE|REMOVE)\b", q), q


def test_no_value_is_spliced_into_the_text() -> None:
    """Values reach queries as parameters: no string literals except fixed reason codes."""
    for q in _write_builders():
        assert "'" not in q and '"' not in q, q
    loader_builders = [
        load_cypher.create_constraints, graph_cypher.await_indexes, load_cypher.existing_documents,
        load_cypher.merge_documents, load_cypher.finalize_documents, load_cypher.merge_chunks,
        load_cypher.merge_mentions, load_cypher.merge_entities, load_cypher.merge_relations,
        load_cypher.chunks_of_documents, load_cypher.entities_of_documents, load_cypher.relations_of_documents,
        load_cypher.set_entity_provenance, load_cypher.set_relation_provenance, load_cypher.delete_chunks,
        load_cypher.delete_documents, load_cypher.prune_relations, load_cypher.prune_entities,
        load_cypher.count_nodes_by_label, load_cypher.count_relations_by_type, load_cypher.count_label,
        load_cypher.missing_symmetric_directions, load_cypher.ontology_violations, load_cypher.orphan_entities,
        load_cypher.delete_all_in_batches,
    ]  # fmt: skip
    for fn in loader_builders:
        params = inspect.signature(fn).parameters
        # these builders take only labels/types (escaped) or a checked batch size, never free values
        assert set(params) <= {"label", "rel_type", "class_labels", "batch", "name", "identity"}, fn.__name__


def test_read_queries_are_read_only() -> None:
    for q in (
        load_cypher.existing_documents(),
        load_cypher.chunks_of_documents(),
        load_cypher.entities_of_documents(),
        load_cypher.relations_of_documents(),
        load_cypher.count_nodes_by_label(),
        load_cypher.count_relations_by_type(),
        load_cypher.count_label("Personaje"),
        load_cypher.missing_symmetric_directions(),
        load_cypher.ontology_violations(),
        load_cypher.orphan_entities(),
    ):
        assert not re.search(r"\b(MERGE|CREATE|SET|DELETE|REMOVE)\b", q), q


def test_constraints_are_idempotent_and_cover_the_model() -> None:
    stmts = load_cypher.create_constraints(["Personaje", "CasaNoble"])
    assert all("IF NOT EXISTS" in s for s in stmts)
    joined = "\n".join(stmts)
    assert "REQUIRE e.uid IS UNIQUE" in joined
    assert "FOR (e:Entity) ON (e.key)" in joined
    assert "REQUIRE d.id IS UNIQUE" in joined
    assert "REQUIRE c.id IS UNIQUE" in joined
    assert "FOR (n:`Personaje`) ON (n.key)" in joined
    assert "FOR (n:`CasaNoble`) ON (n.key)" in joined


def test_delete_all_batch_must_be_a_positive_int() -> None:
    assert "IN TRANSACTIONS OF 500 ROWS" in load_cypher.delete_all_in_batches(500)
    for bad in (0, -1, "10 ROWS} MATCH (n) DELETE n //", 1.5):
        with pytest.raises(ValueError):
            load_cypher.delete_all_in_batches(bad)  # type: ignore[arg-type]


# --- relation attribute full-text index -------------------------------------------------------
def test_relation_attribute_index_escapes_types_and_attributes() -> None:
    stmt = load_cypher.relation_attribute_index(["LEAL_A", "CASADO_CON"], ["momento"])
    assert stmt == ("CREATE FULLTEXT INDEX relation_attributes IF NOT EXISTS FOR ()-[r:`LEAL_A`|`CASADO_CON`]-() "
                    "ON EACH [r.`momento`]")
    with pytest.raises(ValueError):
        load_cypher.relation_attribute_index(["BAD-TYPE"], ["momento"])
    with pytest.raises(ValueError):
        load_cypher.relation_attribute_index(["OK"], [])


def test_lucene_phrases_quote_every_name_and_escape_quotes_and_backslashes() -> None:
    assert search_cypher.lucene_phrases(["boda roja", "  x  y ", ""]) == '"boda roja" OR "x y"'
    assert search_cypher.lucene_phrases(['a "b" \\ c OR d:*']) == '"a \\"b\\" \\\\ c OR d:*"'
    indexed = search_cypher.local_attribute_facts_indexed()
    assert "$terms" in indexed and "relation_attributes" in indexed
