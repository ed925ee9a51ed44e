"""Embeddings in Neo4j, vector indexes and hybrid local retrieval, against the real Neo4j.

The graph is a small extraction built with the ``Extraction`` model (a system-administration
vault: monitoring, storage, web servers, boot) and loaded with ``load_extraction``; chunks and
entities are embedded with the embedded e5 model (cached under the test's home).
"""

from __future__ import annotations

import json
import logging

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.graph import vector_cypher
from graphrag_got.search import cypher as search_cypher
from graphrag_got.config import Settings
from graphrag_got.llm.embeddings import CachedEmbeddings
from graphrag_got.errors import SearchError
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, EntityRecord, Extraction, RelationRecord
from graphrag_got.graph.db import read_all, write_query
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.hybrid import RRF_K, rrf, vector_hits
from graphrag_got.search.local import NO_ANCHOR_ANSWER, local_search
from graphrag_got.graph.vectors import embed_graph, embed_nodes, ensure_vector_index, vector_index_dimensions
from support import CallCounter

ONTOLOGY = {
    "nombre": "Sysadmin test",
    "clases": {"Tool": {"comment": "a program", "propiedades": {"kind": "string opcional"}},
               "Concept": {"comment": "an idea", "propiedades": {}}},
    "relaciones": [{"nombre": "USES", "dominio": "Tool", "rango": "Concept", "comment": "a tool relies on it"},
                   {"nombre": "ALTERNATIVE_TO", "dominio": "Tool", "rango": "Tool", "simetrica": True,
                    "comment": "either can do the job"}],
}

CHUNKS = {
    "mon": ("monitoring.md", "Monitoring",
            "Zabbix polls every host through its agent and raises an alert when a server stops answering. "
            "Nagios does the same with plugins and e-mails the on-call admin."),
    "lvm": ("storage.md", "Storage", "LVM groups disks into volume groups; lvextend grows a logical volume "
                                     "and resize2fs grows the filesystem on it."),
    "web": ("web.md", "Web servers", "Nginx serves static files and works as a reverse proxy in front of "
                                     "application servers; Apache httpd is the classic alternative."),
    "boot": ("boot.md", "Boot", "systemd starts units in parallel at boot; journalctl reads their logs."),
    # chunks for the expansion ranking: they share Zabbix / alerting with "mon", with other weights
    "x1": ("notes.md", "Notes", "Zabbix templates."),
    "x2": ("notes.md", "Notes 2", "Zabbix triggers and alerting rules."),
    "x3": ("notes.md", "Notes 3", "Alerting by SMS."),
}

# entity -> (class, {chunk key: confidence (MENTIONS.weight)})
ENTITIES = {
    "Zabbix": ("Tool", {"mon": 0.9, "x1": 1.0, "x2": 0.6}),
    "Nagios": ("Tool", {"mon": 1.0}),
    "alerting": ("Concept", {"mon": 0.8, "x2": 0.7, "x3": 0.55}),
    "LVM": ("Tool", {"lvm": 1.0}),
    "logical volume": ("Concept", {"lvm": 1.0}),
    "Nginx": ("Tool", {"web": 1.0}),
    "Apache httpd": ("Tool", {"web": 1.0}),
    "reverse proxy": ("Concept", {"web": 1.0}),
    "systemd": ("Tool", {"boot": 1.0}),
}
RELATIONS = [("Zabbix", "USES", "alerting", "mon", "Zabbix ... raises an alert when a server stops answering."),
             ("Nagios", "USES", "alerting", "mon", "Nagios does the same with plugins and e-mails the on-call admin."),
             ("Zabbix", "ALTERNATIVE_TO", "Nagios", "mon", "Nagios does the same with plugins"),
             ("LVM", "USES", "logical volume", "lvm", "lvextend grows a logical volume"),
             ("Nginx", "USES", "reverse proxy", "web", "works as a reverse proxy"),
             ("Apache httpd", "ALTERNATIVE_TO", "Nginx", "web", "Apache httpd is the classic alternative.")]

#: Names no entity: the graph matcher finds no anchor in it.
NO_NAME_QUESTION = "¿Cómo me entero de que una máquina ha dejado de responder?"


def _cid(key: str) -> str:
    return f"{CHUNKS[key][0]}:{key}"


def _evidence(key: str, text: str) -> dict[str, object]:
    """Evidence at its real offsets in the chunk (``load`` refuses evidence that differs from the text)."""
    chunk = CHUNKS[key][2]
    start = chunk.find(text.split(" ... ")[0])
    if " ... " in text or start < 0:  # an abridged quote: the whole sentence it abridges
        start = max(start, 0)
        end = chunk.find(".", start) + 1 or len(chunk)
        return {"chunk_id": _cid(key), "start": start, "end": end, "text": chunk[start:end]}
    return {"chunk_id": _cid(key), "start": start, "end": start + len(text), "text": text}


def build_extraction() -> Extraction:
    docs = sorted({d for d, _, _ in CHUNKS.values()})
    ext = Extraction(
        documents=[DocumentRecord(id=d, path=d, hash=f"h-{d}") for d in docs],
        chunks=[ChunkRecord(id=_cid(k), document_id=d, index=i, start=0, end=len(t), hash=f"h-{k}", text=t,
                            heading=h) for i, (k, (d, h, t)) in enumerate(CHUNKS.items())],
        entities=[EntityRecord(uid=f"{c}|{n.lower()}", key=n.lower(), name=n, type=c,
                               chunk_ids=[_cid(k) for k in m], mentions={_cid(k): w for k, w in m.items()})
                  for n, (c, m) in ENTITIES.items()],
        relations=[RelationRecord(subject=s, subject_key=s.lower(), subject_type=ENTITIES[s][0], relation=r,
                                  object=o, object_key=o.lower(), object_type=ENTITIES[o][0],
                                  symmetric=r == "ALTERNATIVE_TO", chunk_ids=[_cid(k)],
                                  evidence=[_evidence(k, ev)])
                   for s, r, o, k, ev in RELATIONS],
    )
    ext.recount()
    return ext


@pytest.fixture(scope="module")
def onto(tmp_path_factory: pytest.TempPathFactory) -> Ontology:
    path = tmp_path_factory.mktemp("onto") / "sysadmin.json"
    path.write_text(json.dumps(ONTOLOGY), encoding="utf-8")
    return Ontology.from_file(path)


@pytest.fixture(scope="module")
def settings(neo4j_settings: Settings, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return neo4j_settings.with_overrides(home=tmp_path_factory.mktemp("home"), embeddings=True)


@pytest.fixture(scope="module")
def graph(neo4j_driver, settings: Settings, onto: Ontology, wipe_graph):  # type: ignore[no-untyped-def]
    """The test vault loaded and embedded once for the module; yields (driver, first embed summary)."""
    wipe_graph()
    load_extraction(neo4j_driver, settings.neo4j, build_extraction(), onto, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)  # embed_graph is under test
    summary = embed_graph(neo4j_driver, settings.neo4j, settings.embedding, llm=settings.llm, files=settings.files)
    yield neo4j_driver, summary
    wipe_graph()


# ---------------------------------------------------------------------------- embedding the graph


def test_embed_graph_writes_vectors_and_indexes_idempotently(graph, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    driver, first = graph
    assert first.chunks_embedded == len(CHUNKS) and first.entities_embedded == len(ENTITIES)
    assert set(first.indexes_created) <= {vector_cypher.CHUNK_VECTOR_INDEX, vector_cypher.ENTITY_VECTOR_INDEX}
    assert vector_index_dimensions(driver, settings.neo4j) == {vector_cypher.CHUNK_VECTOR_INDEX: 384,
                                                               vector_cypher.ENTITY_VECTOR_INDEX: 384}
    rows = read_all(driver, settings.neo4j, "MATCH (n) WHERE n:Chunk OR n:Entity "
                    "RETURN size(n.embedding) AS dims, n.embedding_hash IS NOT NULL AS hashed")
    assert rows and all(r["dims"] == 384 and r["hashed"] for r in rows)

    again = embed_graph(driver, settings.neo4j, settings.embedding, llm=settings.llm, files=settings.files)  # nothing changed: nothing embedded, no model call, same indexes
    assert again.embedded == 0 and again.unchanged == len(CHUNKS) + len(ENTITIES)
    assert again.model_calls == 0 and again.indexes_created == [] and again.indexes_recreated == []
    assert len(read_all(driver, settings.neo4j, vector_cypher.vector_indexes())) == 2

    # one chunk's text changes: only it is embedded again
    write_query(driver, settings.neo4j, "MATCH (c:Chunk {id: $id}) SET c.text = c.text + ' Edited.'", {"id": _cid("boot")})
    edited = embed_graph(driver, settings.neo4j, settings.embedding, llm=settings.llm, files=settings.files)
    assert edited.chunks_embedded == 1 and edited.entities_embedded == 0 and edited.model_calls == 1


def test_embeddings_off_skips(graph, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    off = settings.with_overrides(embeddings=False)
    summary = embed_graph(driver, off.neo4j, off.embedding, llm=off.llm, files=off.files)
    assert summary.skipped and summary.embedded == 0


def test_embed_nodes_for_other_labels(graph, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    rows = [("monitoring.md", "Notes about watching servers"), ("storage.md", "Notes about disks")]
    first = embed_nodes(driver, settings.neo4j, settings.embedding, "Document", rows, "document_embedding",
                        llm=settings.llm, files=settings.files)
    assert first.nodes_embedded == 2 and first.indexes_created == ["document_embedding"]
    second = embed_nodes(driver, settings.neo4j, settings.embedding, "Document", rows, "document_embedding",
                        llm=settings.llm, files=settings.files)
    assert second.nodes_embedded == 0 and second.unchanged == 2 and second.model_calls == 0
    assert vector_index_dimensions(driver, settings.neo4j)["document_embedding"] == 384
    write_query(driver, settings.neo4j, vector_cypher.drop_index("document_embedding"))


def test_dimension_change_recreates_the_index_with_a_warning(graph, settings: Settings,
                                                             caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    with caplog.at_level(logging.WARNING, logger="graphrag_got.graph.vectors"):
        assert ensure_vector_index(driver, settings.neo4j, "probe_embedding", "Document", 8) == "created"
        assert ensure_vector_index(driver, settings.neo4j, "probe_embedding", "Document", 8) == "kept"
        assert ensure_vector_index(driver, settings.neo4j, "probe_embedding", "Document", 16) == "recreated"
    assert vector_index_dimensions(driver, settings.neo4j)["probe_embedding"] == 16
    assert any("probe_embedding has 8 dimensions" in r.getMessage() for r in caplog.records)
    write_query(driver, settings.neo4j, vector_cypher.drop_index("probe_embedding"))
    with pytest.raises(ValueError):
        vector_cypher.create_vector_index("x", "Chunk", 0)
    with pytest.raises(ValueError):
        vector_cypher.create_vector_index("x", "Chunk", True)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------- retrieval


def test_question_without_entity_names_finds_the_chunk_in_hybrid_only(graph, settings: Settings,
                                                                     onto: Ontology) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    g = local_search(driver, settings.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto, retrieval="graph",
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert g.no_anchor and g.answer == NO_ANCHOR_ANSWER and g.chunk_ids == []

    h = local_search(driver, settings.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto, retrieval="hybrid",
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert not h.no_anchor and h.retrieval == "hybrid" and h.llm_calls == 0
    assert h.chunk_ids[0] == _cid("mon")
    assert h.excerpts[0].chunk_id == _cid("mon") and h.excerpts[0].document_id == "monitoring.md"
    assert any(a.how == "vector" and 0 < a.score <= 1 for a in h.anchors)
    assert {"embed", "vector", "facts", "total"} <= set(h.timings)
    # the numbered sources: chunks C1.. with document and heading
    c1 = next(s for s in h.sources if s.id == "C1")
    assert c1.chunk_id == _cid("mon") and c1.heading == "Monitoring" and c1.document_id == "monitoring.md"

    v = local_search(driver, settings.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto, retrieval="vector",
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert v.chunk_ids[0] == _cid("mon") and all(a.how == "vector" for a in v.anchors)
    assert v.matches == []  # no name matching in vector mode


def test_default_retrieval_comes_from_the_settings(graph, settings: Settings, onto: Ontology) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    assert local_search(driver, settings.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding).retrieval == "hybrid"
    graph_only = settings.with_overrides(local_retrieval="graph")
    assert local_search(driver, graph_only.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto,
                        search=graph_only.search, llm=graph_only.llm, files=graph_only.files, embedding=graph_only.embedding).no_anchor
    with pytest.raises(SearchError, match="retrieval must be one of"):
        local_search(driver, settings.neo4j, "x", answer=False, ontology=onto, retrieval="fuzzy",
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # type: ignore[arg-type]


def test_expansion_ranks_chunks_by_shared_entity_weight(graph, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    rows = read_all(driver, settings.neo4j, search_cypher.chunk_expansion(), chunk_ids=[_cid("mon")], max_mentions=50, limit=10)
    got = {r["id"]: r["score"] for r in rows}
    # from "mon" (Zabbix 0.9, alerting 0.8): x2 shares both, x1 Zabbix only, x3 alerting only
    expected = {_cid("x2"): 0.9 * 0.6 + 0.8 * 0.7, _cid("x1"): 0.9 * 1.0, _cid("x3"): 0.8 * 0.55}
    assert [r["id"] for r in rows] == sorted(expected, key=lambda k: -expected[k])
    assert all(abs(got[k] - v) < 1e-9 for k, v in expected.items())
    assert _cid("mon") not in got and _cid("lvm") not in got  # seeds and unrelated chunks are not expanded to
    assert set(next(r for r in rows if r["id"] == _cid("x2"))["shared"]) == {"Zabbix", "alerting"}
    # Zabbix and alerting are mentioned by 3 chunks each: above max_mentions they are hubs, not used
    hub = read_all(driver, settings.neo4j, search_cypher.chunk_expansion(), chunk_ids=[_cid("mon")], max_mentions=2, limit=10)
    assert hub == []


def test_vector_hits_feed_expansion(graph, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    from graphrag_got.llm.embeddings import shared_embedder

    q = shared_embedder(settings.embedding, llm=settings.llm, files=settings.files).embed_query("alerts when a host is down")
    hits = vector_hits(driver, settings.neo4j, q, top_k=1)
    assert [c["id"] for c in hits.chunks] == [_cid("mon")] and len(hits.entities) == 1
    assert hits.expansion and hits.expansion[0]["id"] == _cid("x2")


def test_rrf_fuses_ranked_lists() -> None:
    fused = rrf({"a": ["x", "y", "z"], "b": ["y", "z"], "c": ["w", "y"]})
    scores = {item: score for item, score, _ in fused}
    assert abs(scores["y"] - (1 / (RRF_K + 2) + 1 / (RRF_K + 1) + 1 / (RRF_K + 2))) < 1e-12
    assert abs(scores["x"] - 1 / (RRF_K + 1)) < 1e-12
    assert [item for item, _, _ in fused] == ["y", "z", "x", "w"]  # x and w tie: first seen first
    assert dict((i, r) for i, _, r in fused)["z"] == {"a": 3, "b": 2}
    assert rrf({"a": ["x", "x", "y"]})[1][0] == "y" and rrf({"a": ["x", "x", "y"]})[1][2] == {"a": 3}


def test_hybrid_fuses_graph_and_vector_lists(graph, settings: Settings, onto: Ontology) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    res = local_search(driver, settings.neo4j, "What does Nginx do?", answer=False, ontology=onto, retrieval="hybrid",
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.anchors[0].name == "Nginx" and res.anchors[0].how == "exact"
    assert res.chunk_ids[0] == _cid("web")  # the vector list and the chunks behind Nginx's facts agree
    top = res.ranked_chunks[0]
    assert {"vector_chunks", "graph_chunks"} <= set(top.ranks)  # one chunk list per retriever
    assert res.ranked_chunks == sorted(res.ranked_chunks, key=lambda c: -c.score)
    assert ("Nginx", "USES", "reverse proxy") in {(f.start_name, f.type, f.end_name) for f in res.facts}


def test_without_vector_indexes_hybrid_degrades_to_graph(graph, settings: Settings, onto: Ontology,
                                                         caplog: pytest.LogCaptureFixture) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    write_query(driver, settings.neo4j, vector_cypher.drop_index(vector_cypher.CHUNK_VECTOR_INDEX))
    try:
        with caplog.at_level(logging.WARNING, logger="graphrag_got.search.local"):
            res = local_search(driver, settings.neo4j, "What does Nginx do?", answer=False, ontology=onto,
                               search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
        assert res.retrieval == "graph" and res.vector_unavailable and res.warnings
        assert any("falls back to graph" in r.getMessage() for r in caplog.records)
        assert [a.name for a in res.anchors] == ["Nginx"] and res.facts
        with pytest.raises(SearchError, match="vector retrieval is not possible"):
            local_search(driver, settings.neo4j, "What does Nginx do?", answer=False, ontology=onto, retrieval="vector",
                         search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    finally:
        embed_graph(driver, settings.neo4j, settings.embedding, llm=settings.llm, files=settings.files)  # recreates the index
    assert vector_cypher.CHUNK_VECTOR_INDEX in vector_index_dimensions(driver, settings.neo4j)


def test_other_model_dimension_degrades_with_a_reason(graph, settings: Settings, onto: Ontology) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    other = CachedEmbeddings(DeterministicFakeEmbedding(size=8), "fake-8", None)
    res = local_search(driver, settings.neo4j, NO_NAME_QUESTION, answer=False, ontology=onto, embedder=other,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.retrieval == "graph" and res.vector_unavailable and "the model changed" in res.warnings[0]


# ---------------------------------------------------------------------------- cited answers


def test_cited_answer_keeps_known_ids_and_drops_invented_ones(graph, settings: Settings, onto: Ontology) -> None:  # type: ignore[no-untyped-def]
    driver, _ = graph
    counter = CallCounter()
    answer = ("Zabbix avisa cuando una máquina deja de responder [C1][F1]. Nagios envía un correo al administrador "
              "[F1, F99]. También avisa por radio [X7] [C42].")
    chat = FakeListChatModel(responses=['{"entities": []}', answer], callbacks=[counter])
    res = local_search(driver, settings.neo4j, NO_NAME_QUESTION, chat=chat, ontology=onto, retrieval="hybrid",
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert counter.calls == res.llm_calls == 2 and res.answer_language == "Spanish" and not res.language_retry
    prompt = counter.prompts[-1]
    assert "[F1] " in prompt and "[C1] " in prompt and "cite only ids" in prompt.lower()
    assert res.raw_answer == answer
    assert [c.id for c in res.citations] == ["C1", "F1"]  # first use first, each once
    assert res.invented_citations == 2  # F99 and C42 ([X7] is not a citation id)
    assert "F99" not in res.answer and "C42" not in res.answer and "[F1]" in res.answer
    assert res.citations[0].chunk_id == _cid("mon")
    assert {c.id for c in res.citations} <= {s.id for s in res.sources}
    fact = next(s for s in res.sources if s.id == "F1")
    assert fact.kind == "fact" and fact.evidence and fact.document_id
    assert "answer" in res.timings
