"""graphrag_got.graph.load against the real Neo4j server (fixtures in tests/conftest.py)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.errors import ExtractionFileError
from graphrag_got.extract.extraction import FORMAT as EXTRACTION_FORMAT
from graphrag_got.graph.load import load_extraction, read_extraction
from graphrag_got.graph.stats import graph_stats
from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")


# ------------------------------------------------------------------------------------ builders


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def chunk_id(doc_id: str, text: str) -> str:
    return f"{doc_id}:{_sha(text)[:12]}"


def ent(cls: str, name: str, chunks: list[str], **props: Any) -> dict[str, Any]:
    return {"uid": entity_uid(cls, name), "key": normalize_name(name), "name": name, "type": cls,
            "properties": props, "chunk_ids": chunks}  # fmt: skip


def rel(s: tuple[str, str], relation: str, o: tuple[str, str], chunks: list[str], momento: str | None = None,
        symmetric: bool = False) -> dict[str, Any]:  # fmt: skip
    (stype, sname), (otype, oname) = s, o
    return {"subject": sname, "subject_key": normalize_name(sname), "subject_type": stype, "relation": relation,
            "object": oname, "object_key": normalize_name(oname), "object_type": otype,
            "attributes": {"momento": momento} if momento is not None else {},
            "symmetric": symmetric, "chunk_ids": chunks}  # fmt: skip


def extraction(docs: dict[str, str], entities: list[dict], relations: list[dict]) -> dict[str, Any]:
    """One chunk per document (the whole text)."""
    documents, chunks = [], []
    for doc_id, text in docs.items():
        documents.append({"id": doc_id, "path": f"corpus/{doc_id}", "hash": _sha(text), "metadata": {"lang": "es"}})
        chunks.append({"id": chunk_id(doc_id, text), "document_id": doc_id, "index": 0, "start": 0,
                       "end": len(text), "hash": _sha(text), "text": text, "heading": None})  # fmt: skip
    return {"format": EXTRACTION_FORMAT, "ontology": {"path": "ontology/got.json", "hash": ONTO.hash},
            "llm": {"provider": "replay", "model": "test"}, "prompt_version": "extract-v1",
            "documents": documents, "chunks": chunks, "entities": entities, "relations": relations,
            "rejections": [], "failed_chunks": [], "counts": {}}  # fmt: skip


JON, YGRITTE, SANSA = ("Personaje", "Jon Snow"), ("Personaje", "Ygritte"), ("Personaje", "Sansa Stark")
STARK, GUARDIA = ("CasaNoble", "Casa Stark"), ("Organizacion", "Guardia de la Noche")
TEXT_A = "Jon Snow, de la Casa Stark, se casa con Ygritte."
TEXT_B = "Jon Snow jura sus votos en la Guardia de la Noche."


def base_extraction() -> dict[str, Any]:
    a, b = chunk_id("a.txt", TEXT_A), chunk_id("b.txt", TEXT_B)
    return extraction(
        {"a.txt": TEXT_A, "b.txt": TEXT_B},
        [ent(*JON, [a, b], genero="masculino"), ent(*YGRITTE, [a], genero="femenino"), ent(*STARK, [a]),
         ent(*GUARDIA, [b], tipo="militar")],
        [rel(JON, "CASADO_CON", YGRITTE, [a], symmetric=True), rel(JON, "PERTENECE_A", STARK, [a]),
         rel(JON, "ES_MIEMBRO_DE", GUARDIA, [b], momento="al jurar sus votos")],
    )  # fmt: skip


# ------------------------------------------------------------------------------------ graph reads


def q(driver, settings, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(query, params, database_=settings.neo4j.database)
    return [r.data() for r in records]


def snapshot(driver, settings) -> tuple[list, list]:
    """Every node and relationship with its labels/type and properties, in a stable order."""
    nodes = q(driver, settings, "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props")
    rels = q(
        driver, settings,
        "MATCH (a)-[r]->(b) RETURN coalesce(a.uid, a.id) AS a, type(r) AS type, coalesce(b.uid, b.id) AS b, "
        "properties(r) AS props",
    )  # fmt: skip
    key = lambda x: json.dumps(x, sort_keys=True, ensure_ascii=False)  # noqa: E731
    nodes = [{"labels": sorted(n["labels"]), "props": n["props"]} for n in nodes]
    return sorted(nodes, key=key), sorted(rels, key=key)


def count(driver, settings, query: str, **params: Any) -> int:
    return q(driver, settings, query, **params)[0]["n"]


# ------------------------------------------------------------------------------------ tests


@pytest.mark.neo4j
def test_load_counts_and_model(neo4j_driver, neo4j_settings, clean_graph) -> None:
    cfg = neo4j_settings.with_overrides(batch_size=2)
    s = load_extraction(neo4j_driver, cfg.neo4j, base_extraction(), ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    assert (s.documents_added, s.documents_updated, s.documents_unchanged, s.documents_pruned) == (2, 0, 0, 0)
    assert s.entities_written == 4 and s.relations_written == 4 and s.relations_unmatched == 0
    assert s.batches > 5  # batch size 2: several batches per kind
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)
    assert st["nodes_by_label"]["Entity"] == 4
    assert st["nodes_by_label"]["Personaje"] == 2
    assert st["nodes_by_label"]["CasaNoble"] == 1 and st["nodes_by_label"]["Organizacion"] == 1
    assert st["documents"] == 2 and st["chunks"] == 2
    assert st["relations_by_type"]["CASADO_CON"] == 2
    assert st["relations_by_type"]["PERTENECE_A"] == 1 and st["relations_by_type"]["ES_MIEMBRO_DE"] == 1
    assert st["relations_by_type"]["HAS_CHUNK"] == 2
    assert st["relations_by_type"]["MENTIONS"] == 5  # Jon in two chunks, three others in one
    jon = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: $u}) RETURN e {.*} AS e", u="Personaje|jon snow")[0]["e"]
    assert jon["name"] == "Jon Snow" and jon["key"] == "jon snow" and jon["type"] == "Personaje"
    assert jon["genero"] == "masculino"
    assert sorted(jon["doc_ids"]) == ["a.txt", "b.txt"] and len(jon["chunk_ids"]) == 2
    doc = q(neo4j_driver, neo4j_settings, "MATCH (d:Document {id: 'a.txt'}) RETURN d {.*} AS d")[0]["d"]
    assert doc["hash"] == _sha(TEXT_A) and json.loads(doc["metadata"]) == {"lang": "es"}
    pert = q(neo4j_driver, neo4j_settings, "MATCH ()-[r:PERTENECE_A]->() RETURN r {.*} AS r")[0]["r"]
    assert pert["momento"] == "" and pert["symmetric"] is False and pert["doc_ids"] == ["a.txt"]


@pytest.mark.neo4j
def test_rerun_is_identical_and_writes_nothing(neo4j_driver, neo4j_settings, clean_graph) -> None:
    ext = base_extraction()
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    before = snapshot(neo4j_driver, neo4j_settings)
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert again.documents_unchanged == 2 and again.documents_added == again.documents_updated == 0
    assert again.batches == 0 and again.nodes_created == 0 and again.relationships_created == 0
    assert snapshot(neo4j_driver, neo4j_settings) == before


@pytest.mark.neo4j
def test_forced_rewrite_adds_no_duplicates(neo4j_driver, neo4j_settings, clean_graph) -> None:
    """Even when the documents are written again (hash changed), nothing is duplicated."""
    ext = base_extraction()
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    before = snapshot(neo4j_driver, neo4j_settings)
    q(neo4j_driver, neo4j_settings, "MATCH (d:Document) SET d.hash = 'stale'")
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert again.documents_updated == 2 and again.relations_pruned == 0 and again.entities_pruned == 0
    assert snapshot(neo4j_driver, neo4j_settings) == before


@pytest.mark.neo4j
def test_symmetric_relation_written_both_ways(neo4j_driver, neo4j_settings, clean_graph) -> None:
    a = chunk_id("a.txt", TEXT_A)
    # given in non-canonical order on purpose
    ext = extraction({"a.txt": TEXT_A}, [ent(*JON, [a]), ent(*YGRITTE, [a])],
                     [rel(YGRITTE, "CASADO_CON", JON, [a], momento="más allá del Muro", symmetric=True)])  # fmt: skip
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    rows = q(neo4j_driver, neo4j_settings,
             "MATCH (x)-[r:CASADO_CON]->(y) RETURN x.name AS x, y.name AS y, r.momento AS m, r.symmetric AS s ORDER BY x")  # fmt: skip
    assert rows == [
        {"x": "Jon Snow", "y": "Ygritte", "m": "más allá del Muro", "s": True},
        {"x": "Ygritte", "y": "Jon Snow", "m": "más allá del Muro", "s": True},
    ]


@pytest.mark.neo4j
def test_the_entity_is_what_its_record_in_the_file_says(neo4j_driver, neo4j_settings, clean_graph) -> None:
    """An entity is written from its whole record in the file: a later document's properties join it (the
    file's record has them all), a document whose records did not change is not rewritten (an entity is
    written whole by any of its documents: one that is written anyway carries its new fields, issue 40),
    and a property the record loses is removed from the graph (issue 37: the graph equals its extraction)."""
    a, b = chunk_id("a.txt", TEXT_A), chunk_id("b.txt", TEXT_B)
    first = extraction({"a.txt": TEXT_A}, [ent(*JON, [a], genero="masculino"), ent(*YGRITTE, [a])], [])
    load_extraction(neo4j_driver, neo4j_settings.neo4j, first, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    # a later run sees another document, which names Ygritte only: a.txt's records are the same
    second = extraction({"a.txt": TEXT_A, "b.txt": TEXT_B},
                        [ent(*JON, [a], genero="masculino"), ent(*YGRITTE, [a, b], titulo="guerrera libre")], [])
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, second, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    # Ygritte's record changed (a property, a chunk): b.txt, new, writes it whole; a.txt is not written again
    assert (s.documents_added, s.documents_updated, s.documents_reloaded_for_records) == (1, 0, 0)
    ygritte = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Personaje|ygritte'}) RETURN e {.*} AS e")
    assert ygritte[0]["e"]["titulo"] == "guerrera libre" and sorted(ygritte[0]["e"]["doc_ids"]) == ["a.txt", "b.txt"]
    third = extraction({"a.txt": TEXT_A, "b.txt": TEXT_B},
                       [ent("Personaje", "JON  SNOW", [a, b], titulo="Lord Comandante"), ent(*YGRITTE, [a, b])], [])
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, third, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    # b.txt now holds Jon Snow too: it is written again and writes both changed entities whole; a.txt is not
    assert s.documents_updated == 1 and s.documents_reloaded_for_records == 1
    jon = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Personaje|jon snow'}) RETURN e {.*} AS e")[0]["e"]
    assert "genero" not in jon and jon["titulo"] == "Lord Comandante"  # the record lost genero: so did the graph
    assert jon["name"] == "JON  SNOW"  # the record's display name
    assert sorted(jon["doc_ids"]) == ["a.txt", "b.txt"] and sorted(jon["chunk_ids"]) == sorted([a, b])
    ygritte = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Personaje|ygritte'}) RETURN e {.*} AS e")
    assert "titulo" not in ygritte[0]["e"]
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, third, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert again.documents_unchanged == 2 and again.batches == 0


@pytest.mark.neo4j
def test_two_momentos_of_the_same_triple_are_both_kept(neo4j_driver, neo4j_settings, clean_graph) -> None:
    a = chunk_id("a.txt", TEXT_A)
    ext = extraction({"a.txt": TEXT_A}, [ent(*JON, [a]), ent(*STARK, [a])],
                     [rel(JON, "LEAL_A", STARK, [a]), rel(JON, "LEAL_A", STARK, [a], momento="tras la boda roja"),
                      rel(JON, "LEAL_A", STARK, [a], momento=None)])  # fmt: skip
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    momentos = q(neo4j_driver, neo4j_settings, "MATCH ()-[r:LEAL_A]->() RETURN r.momento AS m ORDER BY m")
    assert [r["m"] for r in momentos] == ["", "tras la boda roja"]


HOSTILE = [
    'Jon "El Bastardo" Snow',
    "O'Brien's `tick` name",
    "Casa {Stark} }) RETURN 1 //",
    "// comentario",
    "x' }) MATCH (n) DETACH DELETE n //",
    "MATCH (n) DETACH DELETE n",
    "línea uno\nlínea dos\r\n\ttab",
    "日本語の名前",
    "Ελληνικά ονόματα",
    "العربية",
    "back\\slash $param ${x}",
]


@pytest.mark.neo4j
def test_hostile_names_round_trip_byte_for_byte(neo4j_driver, neo4j_settings, clean_graph) -> None:
    a = chunk_id("a.txt", TEXT_A)
    ents = [ent("Personaje", name, [a], titulo=name) for name in HOSTILE]
    rels = [rel(("Personaje", HOSTILE[i]), "TRAICIONA_A", ("Personaje", HOSTILE[i + 1]), [a], momento=HOSTILE[i])
            for i in range(len(HOSTILE) - 1)]  # fmt: skip
    assert len({e["uid"] for e in ents}) == len(HOSTILE)
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, extraction({"a.txt": TEXT_A}, ents, rels), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert s.entities_written == len(HOSTILE) and s.relations_written == len(HOSTILE) - 1
    assert count(neo4j_driver, neo4j_settings, "MATCH (e:Entity) RETURN count(e) AS n") == len(HOSTILE)
    assert count(neo4j_driver, neo4j_settings, "MATCH (d:Document) RETURN count(d) AS n") == 1
    for e in ents:
        got = q(neo4j_driver, neo4j_settings,
                "MATCH (e:Entity {uid: $uid}) RETURN e.name AS name, e.key AS key, e.titulo AS titulo", uid=e["uid"])  # fmt: skip
        assert got == [{"name": e["name"], "key": e["key"], "titulo": e["name"]}]
        assert got[0]["name"].encode("utf-8") == e["name"].encode("utf-8")
    momentos = q(neo4j_driver, neo4j_settings, "MATCH ()-[r:TRAICIONA_A]->() RETURN r.momento AS m")
    assert sorted(r["m"] for r in momentos) == sorted(HOSTILE[:-1])


@pytest.mark.neo4j
def test_incremental_skip_replace_prune(neo4j_driver, neo4j_settings, clean_graph) -> None:
    t_a, t_b, t_c = TEXT_A, TEXT_B, "Sansa Stark y Jon Snow se reencuentran en el Castillo Negro."
    a, b, c = chunk_id("a.txt", t_a), chunk_id("b.txt", t_b), chunk_id("c.txt", t_c)
    first = extraction(
        {"a.txt": t_a, "b.txt": t_b, "c.txt": t_c},
        [ent(*JON, [a, b, c]), ent(*YGRITTE, [a]), ent(*STARK, [a, c]), ent(*GUARDIA, [b]), ent(*SANSA, [c])],
        [rel(JON, "CASADO_CON", YGRITTE, [a], symmetric=True), rel(JON, "ES_MIEMBRO_DE", GUARDIA, [b]),
         rel(JON, "SE_ENCUENTRA_CON", SANSA, [c], symmetric=True), rel(SANSA, "PERTENECE_A", STARK, [c]),
         rel(JON, "PERTENECE_A", STARK, [a, c])],
    )  # fmt: skip
    load_extraction(neo4j_driver, neo4j_settings.neo4j, first, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert count(neo4j_driver, neo4j_settings, "MATCH (e:Entity) RETURN count(e) AS n") == 5

    # b.txt changes (Jon now joins another organization), c.txt disappears, a.txt is unchanged
    t_b2 = "Jon Snow deja la Guardia y cabalga con los Segundos Hijos."
    b2 = chunk_id("b.txt", t_b2)
    hijos = ("Organizacion", "Segundos Hijos")
    second = extraction(
        {"a.txt": t_a, "b.txt": t_b2},
        [ent(*JON, [a, b2]), ent(*YGRITTE, [a]), ent(*STARK, [a]), ent(*hijos, [b2])],
        [rel(JON, "CASADO_CON", YGRITTE, [a], symmetric=True), rel(JON, "ES_MIEMBRO_DE", hijos, [b2]),
         rel(JON, "PERTENECE_A", STARK, [a])],
    )  # fmt: skip
    cfg = neo4j_settings.with_overrides(batch_size=1)
    s = load_extraction(neo4j_driver, cfg.neo4j, second, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    assert (s.documents_added, s.documents_updated, s.documents_unchanged, s.documents_pruned) == (0, 1, 1, 1)
    # pruned: ES_MIEMBRO_DE Guardia, SE_ENCUENTRA_CON both ways, Sansa PERTENECE_A Stark
    assert s.relations_pruned == 4
    assert s.entities_pruned == 2  # Guardia (only in old b) and Sansa (only in c)

    names = {r["n"] for r in q(neo4j_driver, neo4j_settings, "MATCH (e:Entity) RETURN e.name AS n")}
    assert names == {"Jon Snow", "Ygritte", "Casa Stark", "Segundos Hijos"}
    docs = {r["id"] for r in q(neo4j_driver, neo4j_settings, "MATCH (d:Document) RETURN d.id AS id")}
    assert docs == {"a.txt", "b.txt"}
    chunks = {r["id"] for r in q(neo4j_driver, neo4j_settings, "MATCH (c:Chunk) RETURN c.id AS id")}
    assert chunks == {a, b2}
    jon = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Personaje|jon snow'}) RETURN e {.*} AS e")[0]["e"]
    assert sorted(jon["chunk_ids"]) == sorted([a, b2]) and sorted(jon["doc_ids"]) == ["a.txt", "b.txt"]
    stark = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'CasaNoble|casa stark'}) RETURN e {.*} AS e")[0]["e"]
    assert stark["chunk_ids"] == [a] and stark["doc_ids"] == ["a.txt"]
    pert = q(neo4j_driver, neo4j_settings, "MATCH ()-[r:PERTENECE_A]->() RETURN r {.*} AS r")
    assert len(pert) == 1 and pert[0]["r"]["chunk_ids"] == [a]
    types = {r["t"]: r["n"] for r in q(neo4j_driver, neo4j_settings,
                                       "MATCH (:Entity)-[r:!CO_OCCURS]->(:Entity) RETURN type(r) AS t, count(*) AS n")}  # fmt: skip
    assert types == {"CASADO_CON": 2, "ES_MIEMBRO_DE": 1, "PERTENECE_A": 1}
    mentions = q(neo4j_driver, neo4j_settings,
                 "MATCH (c:Chunk)-[:MENTIONS]->(e) RETURN c.id AS c, e.name AS e ORDER BY c, e")  # fmt: skip
    assert {(m["c"], m["e"]) for m in mentions} == {
        (a, "Jon Snow"), (a, "Ygritte"), (a, "Casa Stark"), (b2, "Jon Snow"), (b2, "Segundos Hijos")}

    after = snapshot(neo4j_driver, neo4j_settings)
    third = load_extraction(neo4j_driver, neo4j_settings.neo4j, second, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert third.documents_unchanged == 2 and third.batches == 0
    assert snapshot(neo4j_driver, neo4j_settings) == after
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)
    assert st["missing_symmetric"] == 0 and st["violations"] == 0 and st["orphan_entities"] == 0


@pytest.mark.neo4j
def test_relations_outside_the_ontology_are_refused(neo4j_driver, neo4j_settings, clean_graph) -> None:
    a = chunk_id("a.txt", TEXT_A)
    ext = extraction(
        {"a.txt": TEXT_A},
        [ent(*JON, [a]), ent(*STARK, [a]), ent("Dragon", "Drogon", [a]), ent(*YGRITTE, [a], color="rojo")],
        [rel(JON, "PERTENECE_A", STARK, [a]),
         rel(JON, "GOBIERNA", STARK, [a]),                       # range is Region
         rel(JON, "MATA_A", YGRITTE, [a]),                       # not a relation of the ontology
         rel(JON, "LEAL_A", ("Personaje", "Arya Stark"), [a])],  # end not among the file's entities
    )  # fmt: skip
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert s.entities_refused == 1 and s.relations_refused == 3
    # the same reason codes as extraction: load re-checks with the extraction's validator
    assert s.refused_by_reason == {"unknown_class": 1, "range_violation": 1, "unknown_relation": 1,
                                   "object_not_extracted": 1, "unknown_property": 1}  # fmt: skip
    assert s.properties_dropped == 1  # `color` is not a Personaje property
    types = [r["t"] for r in q(neo4j_driver, neo4j_settings, "MATCH (:Entity)-[r:!CO_OCCURS]->(:Entity) RETURN type(r) AS t")]
    assert types == ["PERTENECE_A"]
    assert count(neo4j_driver, neo4j_settings, "MATCH (e:Entity) WHERE e.name = 'Drogon' RETURN count(e) AS n") == 0
    assert count(neo4j_driver, neo4j_settings, "MATCH (e:Entity) WHERE e.color IS NOT NULL RETURN count(e) AS n") == 0


@pytest.mark.neo4j
def test_stats_checks_are_zero_and_can_fail(neo4j_driver, neo4j_settings, clean_graph) -> None:
    load_extraction(neo4j_driver, neo4j_settings.neo4j, base_extraction(), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)
    assert st["missing_symmetric"] == 0 and st["violations"] == 0 and st["orphan_entities"] == 0
    assert st["entity_relations"] == 4
    # break the graph by hand: stats must notice
    q(neo4j_driver, neo4j_settings, "MATCH (:Personaje {key: 'ygritte'})-[r:CASADO_CON]->() DELETE r")
    q(neo4j_driver, neo4j_settings, "MATCH (a:Personaje {key: 'jon snow'}), (b:CasaNoble) CREATE (a)-[:GOBIERNA]->(b)")
    q(neo4j_driver, neo4j_settings, "MATCH (a:Personaje {key: 'jon snow'}), (b:CasaNoble) CREATE (a)-[:MATA_A]->(b)")
    q(neo4j_driver, neo4j_settings, "CREATE (:Entity:Personaje {uid: 'Personaje|solo', key: 'solo', name: 'Solo'})")
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)
    assert st["missing_symmetric"] == 1 and st["missing_symmetric_by_type"] == {"CASADO_CON": 1}
    assert st["violations"] == 2
    assert st["violations_by_type"] == {"GOBIERNA:domain_range": 1, "MATA_A:unknown_type": 1}
    assert st["orphan_entities"] == 1


@pytest.mark.neo4j
def test_value_the_graph_cannot_hold_is_refused_before_writing(tmp_path) -> None:
    """A list property (Neo4j refuses lists mixing strings and numbers; the ontology's properties are
    text) is refused by the file contract, with its JSON path, before anything is written."""
    a = chunk_id("a.txt", TEXT_A)
    ext = extraction({"a.txt": TEXT_A}, [ent(*JON, [a]), ent(*YGRITTE, [a], titulo=["reina", 1])], [])
    with pytest.raises(ExtractionFileError, match=r"\$\.entities\[1\]\.properties\.titulo"):
        read_extraction(ext)


@pytest.mark.neo4j
def test_langchain_neo4jgraph_reads_the_loaded_graph(neo4j_driver, neo4j_settings, clean_graph) -> None:
    from langchain_neo4j import Neo4jGraph

    load_extraction(neo4j_driver, neo4j_settings.neo4j, base_extraction(), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    graph = Neo4jGraph(url=neo4j_settings.neo4j.uri, username=neo4j_settings.neo4j.username,
                       password=neo4j_settings.neo4j.password, database=neo4j_settings.neo4j.database,
                       refresh_schema=False)  # fmt: skip
    try:
        rows = graph.query(
            "MATCH (p:Personaje)-[:CASADO_CON]->(q:Personaje) RETURN p.name AS p, q.name AS q ORDER BY p"
        )
    finally:
        graph.close()
    assert rows == [{"p": "Jon Snow", "q": "Ygritte"}, {"p": "Ygritte", "q": "Jon Snow"}]


# ------------------------------------------------------------------------------------ file checks (no server)


@pytest.mark.parametrize(
    ("mutate", "where"),
    [
        (lambda d: d.update(format="other/2"), "$.format"),
        (lambda d: d["entities"][1].pop("uid"), "$.entities[1].uid"),
        (lambda d: d["relations"][2].update(attributes=3), "$.relations[2].attributes"),
        (lambda d: d["entities"][0]["chunk_ids"].append("nope:1"), "$.entities[0].chunk_ids[2]"),
        (lambda d: d["chunks"][0].update(document_id="zzz"), "$.chunks[0].document_id"),
        (lambda d: d["entities"][0]["properties"].update(titulo={"a": 1}), "$.entities[0].properties.titulo"),
        (lambda d: d["entities"][0].update(uid="Personaje|otro"), "$.entities[0].uid"),
    ],
)
def test_bad_extraction_file_names_path_and_field(tmp_path, mutate, where) -> None:
    data = base_extraction()
    mutate(data)
    path = tmp_path / "extraction.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ExtractionFileError) as info:
        read_extraction(path)
    assert str(path) in str(info.value) and where in str(info.value)


def test_missing_or_broken_extraction_file(tmp_path) -> None:
    with pytest.raises(ExtractionFileError, match="not found"):
        read_extraction(tmp_path / "nope.json")
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": ', encoding="utf-8")
    with pytest.raises(ExtractionFileError, match=r"bad.json:1:\d+: not valid JSON"):
        read_extraction(bad)
