"""Regression tests for `load` against the real Neo4j: inputs a hostile user sent that left the graph
half-written, gave a traceback, or made `stats` fail. One test per failure; the name says which.

The ontology here is a small one of its own (not the worked example's), so the tests say exactly
which classes and relations exist.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
from typing import Any

import pytest

from graphrag_got.cli import main
from graphrag_got.errors import ExtractionFileError, GraphragGotError, Neo4jError
from graphrag_got.extract.extraction import FORMAT
from graphrag_got.graph.load import load_extraction
from graphrag_got.graph.stats import graph_stats
from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.ontology.model import Ontology

pytestmark = pytest.mark.neo4j

ONTOLOGY: dict[str, Any] = {
    "name": "households",
    "classes": {
        "Person": {"properties": {"title": "string, optional"}},
        "House": {"properties": {}},
        "Place": {"properties": {}},
    },
    "relations": [
        {"name": "MARRIED_TO", "domain": "Person", "range": "Person", "symmetric": True},
        {"name": "MEMBER_OF", "domain": "Person", "range": "House"},
        {"name": "RULES", "domain": ["Person", "House"], "range": "Place"},
    ],
    "relation_attributes": {"when": {"type": "string", "required": False, "identity": True}},
}
ONTO = Ontology.from_dict(ONTOLOGY, source="households.json")


def narrower_ontology() -> Ontology:
    """The same ontology without the class Place and the relation RULES."""
    data = copy.deepcopy(ONTOLOGY)
    del data["classes"]["Place"]
    data["relations"] = [r for r in data["relations"] if r["name"] != "RULES"]
    return Ontology.from_dict(data, source="households-v2.json")


# ------------------------------------------------------------------------------------ builders


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Builder:
    """An extraction built document by document; entities are aggregated per uid like `extract` does."""

    def __init__(self) -> None:
        self.documents: list[dict[str, Any]] = []
        self.chunks: list[dict[str, Any]] = []
        self.entities: dict[str, dict[str, Any]] = {}
        self.relations: list[dict[str, Any]] = []

    def document(self, doc_id: str, *paragraphs: str) -> list[str]:
        """Add a document of one chunk per paragraph; returns the chunk ids."""
        self.documents.append({"id": doc_id, "path": f"corpus/{doc_id}", "hash": _sha("\n\n".join(paragraphs)),
                               "metadata": {}})  # fmt: skip
        ids, pos = [], 0
        for i, text in enumerate(paragraphs):
            cid = f"{doc_id}:{_sha(text)[:12]}"
            self.chunks.append({"id": cid, "document_id": doc_id, "index": i, "start": pos, "end": pos + len(text),
                                "hash": _sha(text), "text": text, "heading": None})  # fmt: skip
            ids.append(cid)
            pos += len(text) + 2
        return ids

    def entity(self, cls: str, name: str, chunk: str, **props: str) -> tuple[str, str]:
        uid = entity_uid(cls, name)
        row = self.entities.setdefault(uid, {"uid": uid, "key": normalize_name(name), "name": name, "type": cls,
                                             "properties": {}, "chunk_ids": []})  # fmt: skip
        row["properties"].update(props)
        if chunk not in row["chunk_ids"]:
            row["chunk_ids"].append(chunk)
        return cls, name

    def relation(self, s: tuple[str, str], relation: str, o: tuple[str, str], chunk: str, *, symmetric: bool = False,
                 when: str | None = None) -> None:  # fmt: skip
        self.relations.append({
            "subject": s[1], "subject_key": normalize_name(s[1]), "subject_type": s[0], "relation": relation,
            "object": o[1], "object_key": normalize_name(o[1]), "object_type": o[0],
            "attributes": {"when": when} if when else {}, "symmetric": symmetric, "chunk_ids": [chunk],
        })  # fmt: skip

    def build(self, ontology: Ontology = ONTO) -> dict[str, Any]:
        return {"format": FORMAT, "ontology": {"path": ontology.source, "hash": ontology.hash},
                "llm": {"provider": "replay", "model": "test"}, "prompt_version": "test",
                "documents": self.documents, "chunks": self.chunks, "entities": list(self.entities.values()),
                "relations": self.relations, "rejections": [], "failed_chunks": [], "counts": {}}  # fmt: skip


def three_documents(b_id: str = "b.txt", b_version: int = 1) -> dict[str, Any]:
    """a, b, c: Ann appears in all three (in version 1 of b), Bob in a and b; each document has its
    own relations. Version 2 of b: Bob rules Lowmarsh instead of Highmarsh, and Ann is not in it."""
    b = Builder()
    a1, a2 = b.document("a.txt", "Ann married Bob.", "Ann is of House Vale.")
    b1, = b.document(b_id, "Bob rules Highmarsh, Ann is at his side." if b_version == 1 else "Bob now rules Lowmarsh.")
    c1, = b.document("c.txt", "Cid serves House Vale, like Ann.")
    ann, bob = b.entity("Person", "Ann", a1), b.entity("Person", "Bob", a1)
    vale = b.entity("House", "House Vale", a2)
    b.relation(ann, "MARRIED_TO", bob, a1, symmetric=True)
    b.relation(ann, "MEMBER_OF", vale, a2)
    b.entity("Person", "Bob", b1)
    if b_version == 1:
        b.entity("Person", "Ann", b1)
        b.relation(bob, "RULES", b.entity("Place", "Highmarsh", b1), b1, when="after the wedding")
    else:
        b.relation(bob, "RULES", b.entity("Place", "Lowmarsh", b1), b1)
    cid = b.entity("Person", "Cid", c1)
    b.entity("House", "House Vale", c1)
    b.entity("Person", "Ann", c1)
    b.relation(cid, "MEMBER_OF", vale, c1)
    return b.build()


# ------------------------------------------------------------------------------------ graph reads


def q(driver, settings, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = driver.execute_query(query, params, database_=settings.neo4j.database)
    return [r.data() for r in records]


def snapshot(driver, settings) -> tuple[list[str], list[str]]:
    """Every node and relationship with labels/type and properties, as sorted JSON lines."""
    nodes = q(driver, settings, "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props")
    rels = q(driver, settings, "MATCH (a)-[r]->(b) RETURN coalesce(a.uid, a.id) AS a, type(r) AS type, "
                               "coalesce(b.uid, b.id) AS b, properties(r) AS props")  # fmt: skip

    def norm(x: dict[str, Any]) -> str:
        x = {k: sorted(v) if isinstance(v, list) else v for k, v in x.items()}
        x["props"] = {k: sorted(v) if isinstance(v, list) else v for k, v in x["props"].items()}
        return json.dumps(x, sort_keys=True, ensure_ascii=False)

    return sorted(map(norm, nodes)), sorted(map(norm, rels))


def assert_every_document_whole_or_absent(driver, settings, ext: dict[str, Any]) -> None:
    """Each document of ``ext`` is either loaded whole (its hash and exactly its chunks) or absent
    (no node, no chunk); no entity or relationship cites a chunk or document the graph lacks."""
    graph_chunks = {r["id"]: r["doc"] for r in q(driver, settings, "MATCH (c:Chunk) RETURN c.id AS id, c.document_id AS doc")}
    graph_docs = {r["id"]: r["hash"] for r in q(driver, settings, "MATCH (d:Document) RETURN d.id AS id, d.hash AS hash")}
    for doc in ext["documents"]:
        mine = {c["id"] for c in ext["chunks"] if c["document_id"] == doc["id"]}
        held = {cid for cid, d in graph_chunks.items() if d == doc["id"]}
        if doc["id"] in graph_docs:
            assert graph_docs[doc["id"]] == doc["hash"] and held == mine, doc["id"]
        else:
            assert held == set(), doc["id"]
    cited = q(driver, settings, "MATCH (e:Entity) RETURN e.chunk_ids AS c, e.doc_ids AS d UNION ALL "
                                "MATCH (:Entity)-[r]->(:Entity) RETURN r.chunk_ids AS c, r.doc_ids AS d")  # fmt: skip
    for row in cited:
        assert set(row["c"] or []) <= set(graph_chunks), row
        assert set(row["d"] or []) <= set(graph_docs), row


def fail_relations_to(monkeypatch: pytest.MonkeyPatch, marker: str) -> None:
    """Make the server fail (integer division by zero, a real Neo4j error) while writing any
    relation row whose end uid contains ``marker``: a failure in the middle of a document's
    transaction, after its document node, chunks and entities were sent."""
    from graphrag_got.graph import load_cypher
    original = load_cypher.merge_relations

    def failing(rel_type: str, identity: Any = ()) -> str:
        text = original(rel_type, identity)
        guard = "UNWIND $rows AS row\nWITH row WHERE 1 / (CASE WHEN row.end CONTAINS '" + marker + "' THEN 0 ELSE 1 END) = 1\n"
        return text.replace("UNWIND $rows AS row\n", guard, 1)

    monkeypatch.setattr(load_cypher, "merge_relations", failing)


# ------------------------------------------------------------------------------------ 1. all or nothing


def test_failure_mid_document_leaves_nothing_of_it_and_earlier_documents_whole(
        neo4j_driver, neo4j_settings, clean_graph, monkeypatch) -> None:  # fmt: skip
    """Used to: batches spanned documents, so a failure left other documents' rows committed
    without their hash and this document's entities in the graph."""
    ext = three_documents()
    fail_relations_to(monkeypatch, "highmarsh")  # the relation of b.txt
    with pytest.raises(Neo4jError) as info:
        load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    message = str(info.value)
    assert "'b.txt'" in message and "relations" in message and "\n" not in message
    assert "Traceback" not in message

    docs = {r["id"] for r in q(neo4j_driver, neo4j_settings, "MATCH (d:Document) RETURN d.id AS id")}
    assert docs == {"a.txt"}  # a before it is whole; b rolled back; c not started
    assert_every_document_whole_or_absent(neo4j_driver, neo4j_settings, ext)
    names = {r["n"] for r in q(neo4j_driver, neo4j_settings, "MATCH (e:Entity) RETURN e.name AS n")}
    assert names == {"Ann", "Bob", "House Vale"}  # not Highmarsh (b only) nor Cid (c only)
    ann = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Person|ann'}) RETURN e.doc_ids AS d")[0]["d"]
    assert ann == ["a.txt"]  # only the provenance of committed documents
    assert q(neo4j_driver, neo4j_settings, "MATCH ()-[r:RULES]->() RETURN count(r) AS n")[0]["n"] == 0

    monkeypatch.undo()
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)  # resumes: a unchanged, b and c new
    assert (again.documents_unchanged, again.documents_added) == (1, 2)
    resumed = snapshot(neo4j_driver, neo4j_settings)
    q(neo4j_driver, neo4j_settings, "MATCH (n) DETACH DELETE n")
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert snapshot(neo4j_driver, neo4j_settings) == resumed  # same graph as one clean load


def test_failed_rewrite_of_a_changed_document_keeps_its_previous_version(
        neo4j_driver, neo4j_settings, clean_graph, monkeypatch) -> None:  # fmt: skip
    """Used to: a changed document lost its old chunks and provenance in committed batches before
    the new version failed to write."""
    load_extraction(neo4j_driver, neo4j_settings.neo4j, three_documents(), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    before = snapshot(neo4j_driver, neo4j_settings)
    second = three_documents(b_version=2)

    fail_relations_to(monkeypatch, "lowmarsh")
    with pytest.raises(Neo4jError, match="'b.txt'"):
        cfg = neo4j_settings.with_overrides(batch_size=1)
        load_extraction(neo4j_driver, cfg.neo4j, second, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    assert snapshot(neo4j_driver, neo4j_settings) == before  # the old b.txt is still there, whole

    monkeypatch.undo()
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, second, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert s.documents_updated == 1 and s.relations_pruned == 1 and s.entities_pruned == 1  # Highmarsh
    places = {r["n"] for r in q(neo4j_driver, neo4j_settings, "MATCH (p:Place) RETURN p.name AS n")}
    assert places == {"Lowmarsh"}
    assert_every_document_whole_or_absent(neo4j_driver, neo4j_settings, second)


def test_several_documents_share_one_transaction_and_entities_get_each_documents_provenance(
        neo4j_driver, neo4j_settings, clean_graph) -> None:  # fmt: skip
    """The speed side of the rule: small documents are grouped (fewer transactions than
    documents), and an entity shared across groups ends with the provenance of all of them."""
    ext = three_documents()
    grouped = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert grouped.transactions == 1
    together = snapshot(neo4j_driver, neo4j_settings)
    q(neo4j_driver, neo4j_settings, "MATCH (n) DETACH DELETE n")
    cfg = neo4j_settings.with_overrides(batch_size=1)
    alone = load_extraction(neo4j_driver, cfg.neo4j, ext, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    assert alone.transactions == 3
    assert snapshot(neo4j_driver, neo4j_settings) == together
    ann = q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: 'Person|ann'}) RETURN e {.*} AS e")[0]["e"]
    assert sorted(ann["doc_ids"]) == ["a.txt", "b.txt", "c.txt"] and len(ann["chunk_ids"]) == 3
    assert alone.entities_written == grouped.entities_written == 5
    assert alone.relations_written == grouped.relations_written == 5  # MARRIED_TO both ways


# ------------------------------------------------------------------------------------ 2. values


def test_integer_beyond_64_bits_is_refused_naming_document_and_field_before_writing(
        neo4j_driver, neo4j_settings, clean_graph) -> None:  # fmt: skip
    """Used to: OverflowError traceback from the driver after other documents were committed."""
    ext = three_documents()
    ext["chunks"][2]["start"] = 2**70  # the chunk of b.txt
    with pytest.raises(ExtractionFileError) as info:
        load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert "$.chunks[2].start" in str(info.value) and "'b.txt'" in str(info.value)
    assert "nothing was written" in str(info.value)
    assert q(neo4j_driver, neo4j_settings, "MATCH (n) RETURN count(n) AS n")[0]["n"] == 0


def test_lone_surrogate_is_refused_naming_document_and_field(neo4j_driver, neo4j_settings, clean_graph, tmp_path) -> None:
    """Used to: UnicodeEncodeError traceback while packing, after documents were committed. In a
    property the file contract refuses it (JSON path); in document metadata (free JSON) the loader does."""
    ext = three_documents()
    ext["entities"][0]["name"] = "Ann \ud800"
    path = tmp_path / "extraction.json"
    path.write_text(json.dumps(ext), encoding="utf-8")  # json escapes it as \\ud800: a valid JSON file
    with pytest.raises(ExtractionFileError, match=r"\$\.entities\[0\]\.name"):
        load_extraction(neo4j_driver, neo4j_settings.neo4j, path, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)

    ext = three_documents()
    ext["documents"][2]["metadata"] = {"note": "bad \udcff"}
    with pytest.raises(ExtractionFileError) as info:
        load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert "$.documents[2].metadata" in str(info.value) and "'c.txt'" in str(info.value)
    assert q(neo4j_driver, neo4j_settings, "MATCH (n) RETURN count(n) AS n")[0]["n"] == 0


def test_id_too_large_for_the_index_fails_one_document_with_one_line(neo4j_driver, neo4j_settings, clean_graph) -> None:
    """Used to: a driver traceback. Neo4j cannot index a value over ~8 kB (Document.id, Chunk.id):
    the error names the document, shortened, and nothing of it is written."""
    huge = "b" * 9000 + ".txt"
    ext = three_documents(b_id=huge)
    with pytest.raises(Neo4jError) as info:
        load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    message = str(info.value)
    assert "9004 characters" in message and "\n" not in message and len(message) < 1200
    assert isinstance(info.value, GraphragGotError)
    assert_every_document_whole_or_absent(neo4j_driver, neo4j_settings, ext)
    docs = {r["id"] for r in q(neo4j_driver, neo4j_settings, "MATCH (d:Document) RETURN d.id AS id")}
    assert docs == {"a.txt"}


# ------------------------------------------------------------------------------------ 3. ontology mismatch


def test_extraction_of_another_ontology_warns_with_both_hashes_and_is_rechecked(
        neo4j_driver, neo4j_settings, clean_graph, caplog) -> None:  # fmt: skip
    """Used to: loaded silently, as if made with the configured ontology."""
    ext = three_documents()  # made with ONTO, which has Place and RULES
    narrow = narrower_ontology()
    with caplog.at_level(logging.WARNING, logger="graphrag_got.graph.load"):
        s = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, narrow, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert ONTO.hash[:12] in warning and narrow.hash[:12] in warning
    assert "households.json" in warning and "households-v2.json" in warning
    assert s.ontology_mismatch and s.extraction_ontology_hash == ONTO.hash and s.ontology_hash == narrow.hash
    assert s.refused_by_reason == {"unknown_class": 1, "unknown_relation": 1}  # Highmarsh, RULES
    assert q(neo4j_driver, neo4j_settings, "MATCH (p:Place) RETURN count(p) AS n")[0]["n"] == 0

    same = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert not same.ontology_mismatch


def test_load_command_prints_the_ontology_mismatch(neo4j_settings, clean_graph, tmp_path, capsys) -> None:
    ext = three_documents()
    ext["ontology"] = {"path": "old/households.json", "hash": "0" * 64}
    path = tmp_path / "extraction.json"
    path.write_text(json.dumps(ext), encoding="utf-8")
    onto_path = tmp_path / "households.json"
    onto_path.write_text(json.dumps(ONTOLOGY), encoding="utf-8")
    assert main(["load", str(path), "--ontology", str(onto_path)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("warning:"))
    assert "old/households.json" in line and "000000000000" in line
    assert str(onto_path) in line and Ontology.from_file(onto_path).hash[:12] in line


def test_stats_reports_rows_of_an_earlier_ontology_and_load_removes_them(
        neo4j_driver, neo4j_settings, clean_graph, tmp_path, capsys) -> None:  # fmt: skip
    """Used to: after the ontology dropped a class and a relation, the rows an earlier load wrote
    stayed and `stats` failed; now `stats` counts them (exit 0) and the next load, which rewrites
    every document loaded under another ontology, removes them."""
    ext = three_documents()
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    narrow = narrower_ontology()
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, narrow)
    assert st["violations_by_type"] == {"RULES:unknown_type": 1}
    assert st["entity_violations_by_class"] == {"Place:unknown_class": 1}

    onto_path = tmp_path / "narrow.json"
    data = copy.deepcopy(ONTOLOGY)
    del data["classes"]["Place"]
    data["relations"] = [r for r in data["relations"] if r["name"] != "RULES"]
    onto_path.write_text(json.dumps(data), encoding="utf-8")
    assert main(["stats", "--ontology", str(onto_path)]) == 0
    out = capsys.readouterr().out
    assert "relations violating the ontology: 1" in out and "entities of no class of the ontology: 1" in out
    assert main(["stats", "--strict", "--ontology", str(onto_path)]) == 1
    capsys.readouterr()

    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, narrow, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert s.documents_updated == 3 and s.documents_reloaded_for_ontology == 3
    assert s.relations_removed_by_ontology == 1 and s.entities_removed_by_ontology == 1
    st = graph_stats(neo4j_driver, neo4j_settings.neo4j, narrow)
    assert st["violations"] == 0 and st["entity_violations"] == 0 and st["missing_symmetric"] == 0
    assert_every_document_whole_or_absent(neo4j_driver, neo4j_settings, ext)
    again = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, narrow, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert again.documents_unchanged == 3 and again.batches == 0


def test_rewritten_document_removes_a_refused_relation_other_documents_still_cite(
        neo4j_driver, neo4j_settings, clean_graph) -> None:  # fmt: skip
    """A relationship of a type the ontology does not have, cited by a rewritten document and by an
    unchanged one, is removed with the rewrite (the ontology refuses it whoever cites it)."""
    ext = three_documents()
    load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    a1 = ext["chunks"][0]["id"]
    c1 = ext["chunks"][3]["id"]
    q(neo4j_driver, neo4j_settings,
      "MATCH (a:Entity {uid: 'Person|ann'}), (c:Entity {uid: 'Person|cid'}) "
      "CREATE (a)-[:HATES {chunk_ids: [$a1, $c1], doc_ids: ['a.txt', 'c.txt']}]->(c)", a1=a1, c1=c1)  # fmt: skip
    assert graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)["violations_by_type"] == {"HATES:unknown_type": 1}
    q(neo4j_driver, neo4j_settings, "MATCH (d:Document {id: 'a.txt'}) SET d.hash = 'stale'")
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, ext, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert s.documents_updated == 1 and s.documents_unchanged == 2 and s.relations_removed_by_ontology == 1
    assert graph_stats(neo4j_driver, neo4j_settings.neo4j, ONTO)["violations"] == 0
