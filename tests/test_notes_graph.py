"""Note structure, mention weights and co-occurrence in a real Neo4j (fixtures in tests/conftest.py)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.extract.extraction import FORMAT, Extraction
from graphrag_got.graph.load import load_extraction
from graphrag_got.graph.stats import graph_stats
from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.ingest.notes import note_records
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "notes.json")


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def cid(doc_id: str, text: str) -> str:
    return f"{doc_id}:{_sha(text)[:12]}"


def build(docs: dict[str, list[str]], entities: list[tuple[str, str, dict[str, float]]] = (),
          notes: bool = True) -> Extraction:  # fmt: skip
    """``docs``: document id -> chunk texts; ``entities``: (class, name, {chunk id: confidence}).
    Note records are computed from the chunk texts over the whole set, as extraction does."""
    full = {d: "\n\n".join(chunks) for d, chunks in docs.items()}
    records = note_records([(d, text, {}) for d, text in full.items()]) if notes else {}
    documents, chunk_rows = [], []
    for d, chunks in docs.items():
        documents.append({"id": d, "path": f"vault/{d}", "hash": _sha(full[d]),
                          "note": records[d].model_dump() if d in records else None})  # fmt: skip
        for i, text in enumerate(chunks):
            chunk_rows.append({"id": cid(d, text), "document_id": d, "index": i, "start": 0, "end": len(text),
                               "hash": _sha(text), "text": text})  # fmt: skip
    ents = [{"uid": entity_uid(cls, name), "key": normalize_name(name), "name": name, "type": cls,
             "chunk_ids": list(mentions), "mentions": mentions} for cls, name, mentions in entities]  # fmt: skip
    ext = Extraction.read({"format": FORMAT, "ontology": {"path": "ontology/notes.json", "hash": ONTO.hash},
                           "documents": documents, "chunks": chunk_rows, "entities": ents})  # fmt: skip
    return ext


def q(driver, settings, query: str, **params: Any) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    records, _, _ = driver.execute_query(query, params, database_=settings.neo4j.database)
    return [r.data() for r in records]


def links(driver, settings) -> set[tuple[str, str, str, str]]:  # type: ignore[no-untyped-def]
    """(source id, kind, target label, target id or name) of every LINKS_TO."""
    rows = q(driver, settings, "MATCH (s:Document)-[r:LINKS_TO]->(t) "
                               "RETURN s.id AS s, r.kind AS kind, labels(t)[0] AS label, coalesce(t.id, t.name) AS t")
    return {(r["s"], r["kind"], r["label"], r["t"]) for r in rows}


def names(driver, settings, label: str, key: str = "name") -> set[str]:  # type: ignore[no-untyped-def]
    return {r["v"] for r in q(driver, settings, f"MATCH (n:{label}) RETURN n.{key} AS v")}


LVM = "ops/storage/lvm.md"
RAID = "ops/raid.md"
TOP = "top.md"
LVM_TEXT = "# LVM notes\nGrow volumes with lvextend #lvm #storage/thin, mirror with [[raid|RAID]], compare [[ZFS]]."
RAID_TEXT = "# RAID\nmdadm builds mirrors. Back to [lvm](storage/lvm.md#grow). #raid"
TOP_TEXT = "Index of the vault: ![[lvm]] and [[ops/raid]]."


def vault(**extra: list[str]) -> dict[str, list[str]]:
    docs = {LVM: [LVM_TEXT], RAID: [RAID_TEXT], TOP: [TOP_TEXT]}
    docs.update(extra)
    return docs


# ------------------------------------------------------------------------------------ structure


def test_folders_tags_and_links_are_written(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    summary = load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert summary.notes_written == 3
    chain = q(d, s, "MATCH (f:Folder)-[:IN_FOLDER]->(p:Folder) RETURN f.path AS f, f.name AS name, p.path AS p")
    assert chain == [{"f": "ops/storage", "name": "storage", "p": "ops"}]
    placed = q(d, s, "MATCH (d:Document)-[:IN_FOLDER]->(f:Folder) RETURN d.id AS d, f.path AS f ORDER BY d")
    assert placed == [{"d": RAID, "f": "ops"}, {"d": LVM, "f": "ops/storage"}]
    assert q(d, s, "MATCH (d:Document {id: $id})-[:IN_FOLDER]->() RETURN d", id=TOP) == []
    tags = q(d, s, "MATCH (d:Document {id: $id})-[r:TAGGED]->(t:Tag) RETURN t.name AS t, r.source AS src "
                   "ORDER BY src, t", id=LVM)  # fmt: skip
    assert [(r["t"], r["src"]) for r in tags] == [("ops", "folder"), ("storage", "folder"), ("lvm", "tag"),
                                                  ("storage/thin", "tag")]  # fmt: skip
    doc = q(d, s, "MATCH (d:Document {id: $id}) RETURN d.title AS title, d.tags AS tags, d.folder AS folder", id=LVM)
    assert doc == [{"title": "LVM notes", "tags": ["lvm", "storage/thin"], "folder": "ops/storage"}]
    assert links(d, s) == {
        (LVM, "wikilink", "Document", RAID), (LVM, "wikilink", "MissingNote", "zfs"),
        (RAID, "markdown", "Document", LVM), (TOP, "embed", "Document", LVM), (TOP, "wikilink", "Document", RAID),
    }  # fmt: skip
    text = q(d, s, "MATCH (:Document {id: $id})-[r:LINKS_TO]->(:Document) RETURN r.text AS text", id=LVM)
    assert text == [{"text": "RAID"}]
    # a second load of the same extraction writes nothing
    again = load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert again.documents_unchanged == 3 and again.transactions == 0


def test_dangling_link_is_repointed_when_the_note_appears(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert names(d, s, "MissingNote") == {"zfs"}
    # the new note lands in a folder; the linking note's record now resolves the link, so it is written again
    summary = load_extraction(d, s.neo4j, build(vault(**{"fs/ZFS.md": ["# ZFS\nPools and datasets."]})), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert summary.documents_added == 1 and summary.documents_updated == summary.documents_reloaded_for_records == 1
    assert (LVM, "wikilink", "Document", "fs/ZFS.md") in links(d, s)
    assert names(d, s, "MissingNote") == set()


def test_deleting_a_note_turns_links_to_it_dangling_and_prunes(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    docs = vault()
    del docs[RAID]
    summary = load_extraction(d, s.neo4j, build(docs), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert summary.documents_pruned == 1
    got = links(d, s)
    assert (LVM, "wikilink", "MissingNote", "raid") in got and (TOP, "wikilink", "MissingNote", "ops/raid") in got
    assert not any(RAID in (x[0], x[3]) for x in got)
    assert names(d, s, "Tag") >= {"ops", "lvm"} and "raid" not in names(d, s, "Tag")
    assert names(d, s, "Folder", "path") == {"ops", "ops/storage"}  # lvm.md still lives under ops
    # the note comes back: both missing notes are claimed again
    load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert {(LVM, "wikilink", "Document", RAID), (TOP, "wikilink", "Document", RAID)} <= links(d, s)
    assert names(d, s, "MissingNote") == {"zfs"}
    # only the root note left: every folder, folder tag and missing note is pruned
    load_extraction(d, s.neo4j, build({TOP: [TOP_TEXT]}), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert names(d, s, "Folder", "path") == set()
    assert names(d, s, "Tag") == set()
    assert names(d, s, "MissingNote") == {"lvm", "ops/raid"}


def test_rewritten_note_replaces_its_structure(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    load_extraction(d, s.neo4j, build(vault()), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    docs = vault()
    docs[LVM] = ["# LVM, revised\nNow only about thin pools #thin, see [[top]]."]
    summary = load_extraction(d, s.neo4j, build(docs), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert summary.documents_updated == 1
    got = links(d, s)
    assert {x for x in got if x[0] == LVM} == {(LVM, "wikilink", "Document", TOP)}
    assert (RAID, "markdown", "Document", LVM) in got and (TOP, "embed", "Document", LVM) in got  # incoming kept
    assert "zfs" not in names(d, s, "MissingNote")
    assert "lvm" not in names(d, s, "Tag") and "thin" in names(d, s, "Tag")
    assert q(d, s, "MATCH (d:Document {id: $id}) RETURN d.title AS t", id=LVM) == [{"t": "LVM, revised"}]


def test_documents_without_note_record_get_no_structure(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    load_extraction(d, s.neo4j, build(vault(), notes=False), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    counts = q(d, s, "MATCH (n) WHERE n:Folder OR n:Tag OR n:MissingNote RETURN count(n) AS n")
    assert counts == [{"n": 0}]
    assert q(d, s, "MATCH ()-[r:LINKS_TO|TAGGED|IN_FOLDER]->() RETURN count(r) AS n") == [{"n": 0}]


# ------------------------------------------------------------------------------------ mentions and co-occurrence

A1, A2 = "Grow with lvextend and mdadm, then check.", "Later mdadm and lvextend again, twice."
B1 = "A third chunk naming lvextend and mdadm."
LVEXTEND, MDADM, NGINX = ("Command", "lvextend"), ("Tool", "mdadm"), ("Tool", "nginx")


def cooc_extraction(with_b: bool = True, a_chunks: tuple[str, ...] = (A1, A2)) -> Extraction:
    a1, a2, b1 = cid("a.md", A1), cid("a.md", A2), cid("b.md", B1)
    docs = {"a.md": list(a_chunks)}
    lv = {a1: 0.9, a2: 0.8} if A2 in a_chunks else {a1: 0.9}
    md = {a1: 0.6, a2: 1.0} if A2 in a_chunks else {}
    if with_b:
        docs["b.md"] = [B1]
        lv, md = {**lv, b1: 0.5}, {**md, b1: 0.5}
    ents = [(*LVEXTEND, lv)] + ([(*MDADM, md)] if md else [])
    return build(docs, ents)


def cooccurs(driver, settings) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    return q(driver, settings, "MATCH (a:Entity)-[r:CO_OCCURS]-(b:Entity) WHERE a.uid < b.uid "
                               "RETURN a.uid AS a, b.uid AS b, r.weight AS weight, r.count AS count, "
                               "r.doc_ids AS docs, size(r.chunk_ids) AS chunks, startNode(r) = a AS forward")


def test_mention_weight_is_the_model_confidence(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    ext = cooc_extraction()
    ext.entities[0].mentions.pop(cid("b.md", B1))  # no confidence recorded: 1.0
    load_extraction(d, s.neo4j, ext, ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    rows = q(d, s, "MATCH (c:Chunk)-[m:MENTIONS]->(e:Entity {uid: $uid}) RETURN c.id AS c, m.weight AS w",
             uid=entity_uid(*LVEXTEND))
    assert {r["c"]: r["w"] for r in rows} == {cid("a.md", A1): 0.9, cid("a.md", A2): 0.8, cid("b.md", B1): 1.0}


def test_cooccurrence_weight_count_and_updates_on_reload(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    summary = load_extraction(d, s.neo4j, cooc_extraction(), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert summary.cooccurrences_written >= 1
    (row,) = cooccurs(d, s)
    uids = sorted([entity_uid(*LVEXTEND), entity_uid(*MDADM)])
    assert (row["a"], row["b"], row["forward"]) == (uids[0], uids[1], True)  # stored once, smaller uid first
    assert row["count"] == 3 and row["weight"] == pytest.approx(0.6 + 0.8 + 0.5)
    assert sorted(row["docs"]) == ["a.md", "b.md"]
    # b.md leaves the extraction: its chunk's share is removed
    load_extraction(d, s.neo4j, cooc_extraction(with_b=False), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    (row,) = cooccurs(d, s)
    assert row["count"] == 2 and row["weight"] == pytest.approx(1.4) and row["docs"] == ["a.md"]
    # a.md rewritten so the two never share a chunk any more: the edge goes
    summary = load_extraction(d, s.neo4j, cooc_extraction(with_b=False, a_chunks=(A1,)), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    assert cooccurs(d, s) == [] and summary.cooccurrences_pruned == 1


def test_cooccurrence_is_not_an_ontology_relation(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    load_extraction(d, s.neo4j, cooc_extraction(), ONTO, graph=s.graph, extract=s.extract, embedding=s.embedding, code=s.code, llm=s.llm, files=s.files)
    st = graph_stats(d, s.neo4j, ONTO)
    assert st["relations_by_type"].get("CO_OCCURS") == 1
    assert st["violations"] == 0 and st["entity_relations"] == 0
    assert st["orphan_entities"] == 2  # co-occurring is not being related


def test_cooccurrence_caps_entities_per_chunk_and_can_be_off(clean_graph, neo4j_settings) -> None:  # type: ignore[no-untyped-def]
    d, s = clean_graph, neo4j_settings
    text = "lvextend, mdadm and nginx in one chunk."
    c = cid("c.md", text)
    ext = build({"c.md": [text]}, [(*LVEXTEND, {c: 0.9}), (*MDADM, {c: 0.4}), (*NGINX, {c: 0.7})])
    cfg = s.with_overrides(cooccurrence_max_entities=2)
    load_extraction(d, cfg.neo4j, ext, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    pairs = {(r["a"], r["b"]) for r in cooccurs(d, s)}
    assert pairs == {tuple(sorted([entity_uid(*LVEXTEND), entity_uid(*NGINX)]))}  # the two most confident
    q(d, s, "MATCH (n) DETACH DELETE n")
    cfg = s.with_overrides(cooccurrence=False)
    load_extraction(d, cfg.neo4j, ext, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    assert cooccurs(d, s) == []
    assert len(q(d, s, "MATCH (:Chunk)-[m:MENTIONS]->() RETURN m")) == 3
