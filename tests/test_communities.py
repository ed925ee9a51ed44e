"""graphrag_got.communities (graph, detect, store, reports, embed) against the real Neo4j (fixtures in tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.embeddings import Embeddings

from graphrag_got.communities.detect import IGraphView, detect_communities, leiden_membership, level_view, sweep
from graphrag_got.communities.embed import report_text
from graphrag_got.communities.graph import EntityGraph, build_entity_graph, read_entity_graph
from graphrag_got.communities.reports import (MAX_EXCERPTS, MAX_EXCERPTS_CHARS, CommunityReport, Finding, clean_findings,
                                               summarize_communities)
from graphrag_got.communities.store import parse_findings, write_communities
from graphrag_got.graph import db as graphdb
from graphrag_got.communities import cypher as communities_cypher
from graphrag_got.graph import vector_cypher
from graphrag_got.errors import GraphragGotError
from graphrag_got.ontology.model import Ontology
from support import CallCounter, nested_groups

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
SUMMARY = json.dumps({"title": "Grupo", "summary": "Un grupo de entidades relacionadas."})



def fake_chat(responses: list[str]) -> tuple[FakeListChatModel, CallCounter]:
    counter = CallCounter()
    return FakeListChatModel(responses=responses, callbacks=[counter]), counter


@pytest.fixture()
def got(gold_graph, neo4j_settings, tmp_path):  # type: ignore[no-untyped-def]
    """No communities yet; settings with caches and outputs under tmp_path."""
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", concurrency=1,
                                             embeddings=False)  # the report-embedding test passes its own model
    with graphdb.session(gold_graph, settings.neo4j, write=True) as s:
        s.run(communities_cypher.delete_communities()).consume()
        s.run(communities_cypher.clear_entity_communities()).consume()
    return gold_graph, settings


def _stored(driver, settings) -> dict[int, set[str]]:  # type: ignore[no-untyped-def]
    rows = graphdb.read_all(driver, settings.neo4j, "MATCH (e:Entity)-[m:IN_COMMUNITY]->(c:Community) "
                                         "RETURN c.id AS id, c.level AS level, c.size AS size, collect(e.uid) AS uids, "
                                         "collect(e.communityId) AS cids, collect(DISTINCT m.communityLevel) AS mlevels")  # fmt: skip
    for r in rows:
        assert r["size"] == len(r["uids"]), f"community {r['id']}: size {r['size']} but {len(r['uids'])} members"
        assert r["mlevels"] == [r["level"]]  # every membership carries its level
        if r["level"] == 0:
            assert set(r["cids"]) == {r["id"]}  # Entity.communityId is the level-0 community
    return {r["id"]: set(r["uids"]) for r in rows}


def test_entity_graph_counts_symmetric_relations_once(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    assert len(eg.entities) == len(gold["entities"]) == 65
    assert len(eg.relations) == len(gold["relations"]) == 109  # both directions of a symmetric pair: one
    # Jon-Daenerys: SE_ENCUENTRA_CON (symmetric, stored twice) + LEAL_A, one chunk each
    assert eg.graph["Personaje|jon snow"]["Personaje|daenerys targaryen"]["weight"] == 2
    # Casa Lannister - Casa Stark: EN_GUERRA_CON supported by two chunks
    assert eg.graph["CasaNoble|casa lannister"]["CasaNoble|casa stark"]["weight"] == 2
    assert not any(u == v for u, v in eg.graph.edges)


def test_detect_is_deterministic_and_written(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    first = detect_communities(eg, resolution=1.0, seed=42)
    second = detect_communities(read_entity_graph(driver, settings.neo4j, ONTO,
                                                  communities=settings.communities, files=settings.files), resolution=1.0, seed=42)
    assert [(c.id, c.level, c.parent, c.members) for c in first] == [(c.id, c.level, c.parent, c.members)
                                                                       for c in second]
    top = [c for c in first if c.level == 0]
    sizes = [c.size for c in top]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == len(eg.entities)
    assert [c.id for c in first] == list(range(len(first)))  # ids unique across levels, level 0 first
    isolated = {n for n in eg.graph.nodes if eg.graph.degree(n) == 0}
    assert isolated and {c.members[0] for c in top if c.size == 1} == isolated  # isolated -> singletons
    by_id = {c.id: c for c in first}
    deeper = [c for c in first if c.level > 0]
    assert deeper, "the gold graph has a level-0 community over the size cap 10: it must be split"
    for c in deeper:  # a child is inside its parent, one level down, and the parent was over the cap
        parent = by_id[c.parent]
        assert c.level == parent.level + 1 and set(c.members) < set(parent.members) and parent.size > 10

    counts = write_communities(driver, settings.neo4j, first,
                               communities=settings.communities, graph_settings=settings.graph)
    assert counts == {"communities": len(first), "members": sum(c.size for c in first), "summaries_kept": 0}
    levels = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) RETURN c.id AS id, c.level AS level, "
                                                "c.parent AS parent")  # fmt: skip
    assert {r["id"]: (r["level"], r["parent"]) for r in levels} == {c.id: (c.level, c.parent) for c in first}
    stored = _stored(driver, settings)
    assert stored == {c.id: set(c.members) for c in first}
    # rerun replaces instead of adding: same nodes, every entity in exactly one community
    write_communities(driver, settings.neo4j, second, communities=settings.communities, graph_settings=settings.graph)
    assert _stored(driver, settings) == stored
    n = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) RETURN count(c) AS n")[0]["n"]
    assert n == len(first)
    per_entity = graphdb.read_all(driver, settings.neo4j, "MATCH (e:Entity) RETURN COUNT { (e)-[m:IN_COMMUNITY]->() "
                                                    "WHERE m.communityLevel = 0 } AS k")  # fmt: skip
    assert {r["k"] for r in per_entity} == {1}  # exactly one level-0 community per entity
    # a different resolution replaces the previous communities
    more = detect_communities(eg, resolution=2.0, seed=42)
    write_communities(driver, settings.neo4j, more, communities=settings.communities, graph_settings=settings.graph)
    assert _stored(driver, settings) == {c.id: set(c.members) for c in more}


def test_sweep_values_are_sane_and_write_nothing(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    rows = sweep(eg, [0.5, 1.0, 2.0], seed=42, algorithms=["louvain"])
    assert [r.resolution for r in rows] == [0.5, 1.0, 2.0]
    isolated = sum(1 for n in eg.graph.nodes if eg.graph.degree(n) == 0)
    for r in rows:
        assert 1 <= r.communities <= len(eg.entities)
        assert r.singletons >= isolated
        assert 1 <= r.largest <= len(eg.entities)
        assert -0.5 <= r.modularity <= 1.0
    assert rows[0].communities <= rows[-1].communities  # higher resolution: more communities
    assert rows[1].modularity > 0.3  # the GoT graph has clear factions
    assert rows[1].communities == len(detect_communities(eg, 1.0, 42, algorithm="louvain"))
    both = sweep(eg, [1.0], seed=42, algorithms=["leiden", "louvain"])
    assert [r.algorithm for r in both] == ["leiden", "louvain"] and all(r.ok for r in both)
    assert both[0].communities == sum(1 for c in detect_communities(eg, 1.0, 42) if c.level == 0)
    assert both[0].levels >= 2 and both[1].levels == 1
    assert graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) RETURN count(c) AS n")[0]["n"] == 0


def test_summarize_calls_once_per_community_then_never(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    comms = detect_communities(eg, 1.0, 42)
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    eligible = [c for c in comms if c.size > 1]

    chat, counter = fake_chat([SUMMARY])
    lines: list = []
    res = summarize_communities(driver, settings.neo4j, chat, ontology=ONTO, label="fake", progress=lines.append,
                                llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert counter.calls == res.llm_calls == len(eligible)
    assert (res.generated, res.cached, res.unchanged, res.failed) == (len(eligible), 0, 0, [])
    assert res.singletons_skipped == len(comms) - len(eligible)
    assert res.input_tokens > 0 and res.tokens_estimated  # the fake model reports no usage
    assert (lines[-1].step, lines[-1].done, lines[-1].total) == ("summaries", len(eligible), len(eligible))
    assert lines[-1].finished and lines[-1].stats["LLM calls"] == res.llm_calls
    # the prompt carries types, properties and relations with momento, not only names
    biggest = next(p for p in counter.prompts if "Jon Snow" in p)
    assert "Jon Snow (Personaje; genero: masculino" in biggest
    assert "Daenerys Targaryen SE_ENCUENTRA_CON Jon Snow (momento: tras la Batalla de los Bastardos)" in biggest
    assert "language of the community's content" in biggest  # no language forced

    exported = json.loads((settings.files.out_dir / "communities.json").read_text(encoding="utf-8"))
    assert len(exported["communities"]) == len(comms)
    by_id = {c["id"]: c for c in exported["communities"]}
    assert all(by_id[c.id]["summary"] for c in eligible)
    assert all(by_id[c.id]["summary"] is None for c in comms if c.size == 1)

    # unchanged graph: no call (summaries on the nodes), nor with --force (disk cache), nor after
    # detecting the same communities again (summaries carried over)
    chat2, counter2 = fake_chat([SUMMARY])
    again = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", progress=lines.append,
                                  llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert (counter2.calls, again.llm_calls, again.unchanged) == (0, 0, len(eligible))
    forced = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", force=True,
                                      progress=lines.append, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    assert (counter2.calls, forced.cached) == (0, len(eligible))
    kept = write_communities(driver, settings.neo4j, detect_communities(eg, 1.0, 42),
                             communities=settings.communities, graph_settings=settings.graph)
    assert kept["summaries_kept"] == len(eligible)
    summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", progress=lines.append,
                          llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert counter2.calls == 0
    # another model label is another cache key
    summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="other", progress=lines.append,
                          llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert counter2.calls == len(eligible)
    # a forced language is another cache key, and the prompt says it
    chat3, counter3 = fake_chat([SUMMARY])
    summarize_communities(driver, settings.neo4j, chat3, ontology=ONTO, label="fake", language="English",
                             progress=lines.append, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    assert counter3.calls == len(eligible)
    assert all("Write in English." in p and "community's content" not in p for p in counter3.prompts)


def test_summarize_reports_a_failing_community_and_goes_on(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    comms = detect_communities(read_entity_graph(driver, settings.neo4j, ONTO,
                                                 communities=settings.communities, files=settings.files), 1.0, 42)
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    eligible = sum(1 for c in comms if c.size > 1)
    # the first community answers garbage twice (answer + retry), the others answer well
    chat, counter = fake_chat(["no es JSON", "tampoco"] + [SUMMARY] * eligible)
    res = summarize_communities(driver, settings.neo4j, chat, ontology=ONTO, label="fake", progress=lambda s: None,
                                llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert [f["id"] for f in res.failed] == [0]
    assert res.generated == eligible - 1 and counter.calls == res.llm_calls == eligible + 1
    # the next run only asks for the failed one
    chat2, counter2 = fake_chat([SUMMARY])
    res2 = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", progress=lambda s: None,
                                 llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert (counter2.calls, res2.generated, res2.failed) == (1, 1, [])


def test_repeated_sentences_are_dropped_from_summaries():
    from graphrag_got.llm.calls import drop_repeated_sentences

    text = "La Casa Stark lidera el Norte. Jon Snow es su rey.  La casa stark lidera el Norte. Jon Snow es su rey."
    assert drop_repeated_sentences(text) == "La Casa Stark lidera el Norte. Jon Snow es su rey."


# ------------------------------------------------------------------ levels, sweep, co-occurrence (no database)


def planted(blocks: int, size: int, *, seed: int = 1, inside: float = 0.9, across: int = 3) -> EntityGraph:
    """``blocks`` dense groups of ``size`` entities, with ``across`` links between consecutive groups."""
    import random

    rng = random.Random(seed)
    ents = [{"uid": f"T|b{b}n{i}", "name": f"B{b} N{i}", "type": "T", "properties": {}}
            for b in range(blocks) for i in range(size)]  # fmt: skip
    rels = []
    for b in range(blocks):
        for i in range(size):
            for j in range(i + 1, size):
                if rng.random() < inside:
                    rels.append({"start": f"T|b{b}n{i}", "end": f"T|b{b}n{j}", "type": "R", "symmetric": False,
                                 "support": 1, "attributes": []})  # fmt: skip
        for k in range(across):
            nb = (b + 1) % blocks
            rels.append({"start": f"T|b{b}n{k}", "end": f"T|b{nb}n{size - 1 - k}", "type": "R", "symmetric": False,
                         "support": 1, "attributes": []})  # fmt: skip
    return build_entity_graph(ents, rels)


def test_leiden_levels_split_big_communities_under_the_size_cap() -> None:
    # 4 groups of 30 entities, each made of 3 dense sub-groups of 10 loosely tied together
    ents, rels = nested_groups()
    eg = build_entity_graph(ents, rels)

    comms = detect_communities(eg, resolution=0.3, seed=3, max_size=10, max_levels=3)
    top = [c for c in comms if c.level == 0]
    assert sum(c.size for c in top) == len(ents) and max(c.size for c in top) > 10  # low resolution: big groups
    by_id = {c.id: c for c in comms}
    parents = {c.parent for c in comms if c.parent is not None}
    for c in comms:
        if c.parent is not None:
            assert by_id[c.parent].size > 10 and c.level == by_id[c.parent].level + 1
        if c.id in parents:  # a split community is partitioned exactly by its children
            kids = [k for k in comms if k.parent == c.id]
            assert len(kids) >= 2 and sorted(u for k in kids for u in k.members) == c.members
    finals = [c for c in comms if c.id not in parents]
    assert sorted(u for c in finals for u in c.members) == sorted(e["uid"] for e in ents)  # the leaves partition
    assert max(c.size for c in finals) <= 10  # every over-cap community could be split
    planted_groups = {tuple(sorted(f"T|g{g}s{s}n{i}" for i in range(10))) for g in range(4) for s in range(3)}
    assert {tuple(c.members) for c in comms if c.level == 1} == planted_groups  # level 1 finds the sub-groups
    # the deepest view partitions the graph too, and level_view(0) is level 0
    deepest = max(c.level for c in comms)
    assert sorted(u for c in level_view(comms, deepest) for u in c.members) == sorted(e["uid"] for e in ents)
    assert level_view(comms, 0) == top

    one_level = detect_communities(eg, resolution=0.3, seed=3, max_size=10, max_levels=1)
    assert {c.level for c in one_level} == {0} and [c.members for c in one_level] == [c.members for c in top]
    louvain = detect_communities(eg, resolution=0.3, seed=3, algorithm="louvain")
    assert {c.level for c in louvain} == {0} and {c.algorithm for c in louvain} == {"louvain"}


def test_leiden_is_deterministic_for_a_seed_and_finds_planted_groups() -> None:
    eg = planted(12, 8)
    a = detect_communities(eg, 1.0, seed=5)
    b = detect_communities(planted(12, 8), 1.0, seed=5)
    assert [(c.id, c.level, c.parent, c.members) for c in a] == [(c.id, c.level, c.parent, c.members) for c in b]
    found = {tuple(c.members) for c in a if c.level == 0}
    truth = {tuple(sorted(f"T|b{g}n{i}" for i in range(8))) for g in range(12)}
    assert len(found & truth) >= 10  # dense groups with 3 links between neighbours are recovered
    for algorithm in ("leiden", "louvain"):  # both backends of leiden agree on the planted groups too
        assert detect_communities(eg, 1.0, 5, algorithm=algorithm)
    g = IGraphView.from_networkx(eg.graph).graph
    ref = leiden_membership(g, 1.0, 5, backend="leidenalg")
    assert len(set(ref)) == 12


def test_bad_detection_arguments_are_refused() -> None:
    eg = planted(3, 4)
    for kwargs in ({"algorithm": "spectral"}, {"max_size": 1}, {"max_levels": 0}):
        with pytest.raises(GraphragGotError):
            detect_communities(eg, 1.0, 1, **kwargs)
    with pytest.raises(GraphragGotError, match="resolution"):
        detect_communities(eg, 0.0, 1)


def test_sweep_warns_when_no_community_of_two_comes_out() -> None:
    lonely = build_entity_graph([{"uid": f"T|{i}", "name": str(i), "type": "T", "properties": {}}
                                    for i in range(5)], [])  # fmt: skip
    rows = sweep(lonely, [0.5, 1.0], seed=1, algorithms=["leiden", "louvain"])
    assert len(rows) == 4 and all(r.communities == 5 and r.sized == 0 for r in rows)
    assert all(r.warning and "no community of 2 or more" in r.warning and "--co-occurrence" in r.warning for r in rows)
    good = sweep(planted(4, 6), [1.0], seed=1, algorithms=["leiden", "louvain"])
    assert all(r.ok and r.sized >= 3 and r.modularity > 0.4 for r in good)


def test_cooccurrence_edges_join_the_graph_only_when_asked() -> None:
    ents = [{"uid": f"T|{n}", "name": n, "type": "T", "properties": {}} for n in "abcdef"]
    rels = [{"start": "T|a", "end": "T|b", "type": "R", "symmetric": False, "support": 2, "attributes": []}]
    cooc = [{"start": "T|a", "end": "T|b", "weight": 0.5, "count": 1},
            {"start": "T|c", "end": "T|d", "weight": 1.7, "count": 2},
            {"start": "T|d", "end": "T|e", "weight": None, "count": 3},
            {"start": "T|e", "end": "T|zz", "weight": 1.0, "count": 1}]  # an unknown end is ignored
    without = build_entity_graph(ents, rels)
    with_ = build_entity_graph(ents, rels, cooc)
    assert without.graph.number_of_edges() == 1 and not without.cooccurrence
    assert with_.cooccurrence and with_.cooccurrence_links == 3
    assert with_.graph["T|a"]["T|b"]["weight"] == 2.5  # relation support + co-occurrence weight
    assert with_.graph["T|c"]["T|d"]["weight"] == 1.7 and with_.graph["T|d"]["T|e"]["weight"] == 3.0  # count
    assert with_.relations == without.relations  # reports still cite ontology relations only
    sized = [c for c in detect_communities(with_, 1.0, 1) if c.size > 1]
    assert {tuple(c.members) for c in sized} >= {("T|c", "T|d", "T|e")}
    assert sum(1 for c in detect_communities(without, 1.0, 1) if c.size > 1) == 1


def test_findings_cite_only_real_members() -> None:
    findings = [Finding(statement="Ana Gómez dirige el taller con Luis.", members=["ana gomez", "Inventado"]),
                Finding(statement="  ", members=[])]
    out = clean_findings(findings, ["Ana Gómez", "Luis", "Marta"])
    assert out == [{"statement": "Ana Gómez dirige el taller con Luis.", "members": ["Ana Gómez", "Luis"]}]
    assert CommunityReport(title="t", summary="s", rating=14).rating == 10.0
    assert parse_findings("not json") == [] and parse_findings(json.dumps(out)) == out
    assert report_text("T", "S", json.dumps(out)) == "T\nS\n- Ana Gómez dirige el taller con Luis."


# ------------------------------------------------------------------ reports and their embeddings (database)


class WordEmbeddings(Embeddings):
    """A tiny deterministic embedder: hashed bag of words (texts sharing words get similar vectors)."""

    def __init__(self, dims: int = 64) -> None:
        self.dims, self.calls, self.texts = dims, 0, 0
        self.model_id = f"words-{dims}"  # as CachedEmbeddings names its model: part of the embedding key

    def _vec(self, text: str) -> list[float]:
        import re
        import zlib

        v = [0.0] * self.dims
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % self.dims] += 1.0
        return v

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        self.texts += len(texts)
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


REPORT = json.dumps({"title": "Grupo", "summary": "Un grupo de entidades relacionadas.",
                     "findings": [{"statement": "Jon Snow lidera a los suyos.", "members": ["Jon Snow", "Nadie"]}],
                     "rating": 7, "rating_explanation": "Central en la historia."})  # fmt: skip


def test_reports_have_findings_rating_excerpts_and_embeddings(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    comms = detect_communities(eg, 1.0, 42)
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    eligible = [c for c in comms if c.size > 1]
    chat, counter = fake_chat([REPORT])
    emb = WordEmbeddings()
    res = summarize_communities(driver, settings.neo4j, chat, ontology=ONTO, label="fake", embedder=emb, embed=True,
                                llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert res.generated == len(eligible) == counter.calls and res.embedded == len(eligible)
    assert res.embedding_error is None and emb.texts == len(eligible)
    jon = next(p for p in counter.prompts if "Jon Snow (Personaje" in p)
    assert "SOURCE EXCERPTS:" in jon and "findings" in jon and "rating" in jon
    excerpt_lines = [ln for ln in jon.split("SOURCE EXCERPTS:")[1].splitlines() if ln.startswith("- [")]
    assert 1 <= len(excerpt_lines) <= MAX_EXCERPTS
    assert sum(len(ln) for ln in excerpt_lines) <= MAX_EXCERPTS_CHARS + 60 * len(excerpt_lines)
    nodes = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) WHERE c.summary IS NOT NULL "
                                               "RETURN c.id AS id, c.findings AS f, c.rating AS rating, "
                                               "c.rating_explanation AS why, size(c.embedding) AS dims, "
                                               "c.level AS level")  # fmt: skip
    assert len(nodes) == len(eligible) and all(n["rating"] == 7.0 and n["dims"] == 64 for n in nodes)
    jon_ids = {c.id for c in eligible if "Personaje|jon snow" in c.members}
    for n in nodes:  # an invented member is never cited; Jon Snow only where he is a member
        cited = [m for f in json.loads(n["f"]) for m in f["members"]]
        assert "Nadie" not in cited and (cited == ["Jon Snow"]) == (n["id"] in jon_ids)
    index = [r for r in graphdb.read_all(driver, settings.neo4j, vector_cypher.vector_indexes())
             if r["name"] == communities_cypher.COMMUNITY_VECTOR_INDEX]
    assert index and index[0]["dimensions"] == 64 and index[0]["similarity"].lower() == "cosine"
    exported = json.loads((settings.files.out_dir / "communities.json").read_text(encoding="utf-8"))
    assert {c["level"] for c in exported["communities"]} == {c.level for c in comms}
    assert all(c["findings"] and c["rating"] == 7.0 for c in exported["communities"] if c["summary"])

    # nothing changed: no LLM call, no embedding call; re-detecting carries reports and vectors over
    chat2, counter2 = fake_chat([REPORT])
    again = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", embedder=emb, embed=True, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert (counter2.calls, again.embedded, again.embeddings_unchanged, emb.calls) == (0, 0, len(eligible), 1)
    write_communities(driver, settings.neo4j, detect_communities(eg, 1.0, 42),
                      communities=settings.communities, graph_settings=settings.graph)
    third = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", embedder=emb, embed=True, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert (counter2.calls, third.unchanged, third.embedded, emb.calls) == (0, len(eligible), 0, 1)
    # another embedding model: every report is embedded again
    other = WordEmbeddings(dims=32)
    fourth = summarize_communities(driver, settings.neo4j, chat2, ontology=ONTO, label="fake", embedder=other, embed=True, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert fourth.embedded == len(eligible) and other.calls == 1
    index = [r for r in graphdb.read_all(driver, settings.neo4j, vector_cypher.vector_indexes())
             if r["name"] == communities_cypher.COMMUNITY_VECTOR_INDEX]
    assert index[0]["dimensions"] == 32  # re-created for the new dimension


def test_a_failing_embedder_leaves_the_reports_written(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = read_entity_graph(driver, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    write_communities(driver, settings.neo4j, detect_communities(eg, 1.0, 42), communities=settings.communities,
                      graph_settings=settings.graph)

    class Broken(WordEmbeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            raise RuntimeError("model server down")

    chat, _ = fake_chat([REPORT])
    res = summarize_communities(driver, settings.neo4j, chat, ontology=ONTO, label="fake", embedder=Broken(), embed=True, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
    assert res.generated > 0 and "model server down" in (res.embedding_error or "")
    n = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) WHERE c.summary IS NOT NULL RETURN count(c) AS n")
    assert n[0]["n"] == res.generated
