"""graphrag_got.communities against the real Neo4j (fixtures in tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got import communities as cm
from graphrag_got import graphdb
from graphrag_got import cypher
from graphrag_got.ontology import Ontology
from support import CallCounter

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
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", concurrency=1)
    with graphdb.session(gold_graph, settings, write=True) as s:
        s.run(cypher.delete_communities()).consume()
        s.run(cypher.clear_entity_communities()).consume()
    return gold_graph, settings


def _stored(driver, settings) -> dict[int, set[str]]:  # type: ignore[no-untyped-def]
    rows = graphdb.read_all(driver, settings, "MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community) "
                                         "RETURN c.id AS id, c.size AS size, collect(e.uid) AS uids, "
                                         "collect(e.communityId) AS cids")  # fmt: skip
    for r in rows:
        assert r["size"] == len(r["uids"]), f"community {r['id']}: size {r['size']} but {len(r['uids'])} members"
        assert set(r["cids"]) == {r["id"]}
    return {r["id"]: set(r["uids"]) for r in rows}


def test_entity_graph_counts_symmetric_relations_once(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = cm.read_entity_graph(driver, settings, ONTO)
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
    eg = cm.read_entity_graph(driver, settings, ONTO)
    first = cm.detect_communities(eg, resolution=1.0, seed=42)
    second = cm.detect_communities(cm.read_entity_graph(driver, settings, ONTO), resolution=1.0, seed=42)
    assert [(c.id, c.members) for c in first] == [(c.id, c.members) for c in second]
    sizes = [c.size for c in first]
    assert sizes == sorted(sizes, reverse=True) and sum(sizes) == len(eg.entities)
    isolated = {n for n in eg.graph.nodes if eg.graph.degree(n) == 0}
    assert isolated and {c.members[0] for c in first if c.size == 1} == isolated  # isolated -> singletons

    counts = cm.write_communities(driver, settings, first)
    assert counts == {"communities": len(first), "members": len(eg.entities), "summaries_kept": 0}
    stored = _stored(driver, settings)
    assert stored == {c.id: set(c.members) for c in first}
    # rerun replaces instead of adding: same nodes, every entity in exactly one community
    cm.write_communities(driver, settings, second)
    assert _stored(driver, settings) == stored
    n = graphdb.read_all(driver, settings, "MATCH (c:Community) RETURN count(c) AS n")[0]["n"]
    assert n == len(first)
    per_entity = graphdb.read_all(driver, settings, "MATCH (e:Entity) RETURN COUNT { (e)-[:IN_COMMUNITY]->() } AS k")
    assert {r["k"] for r in per_entity} == {1}
    # a different resolution replaces the previous communities
    more = cm.detect_communities(eg, resolution=2.0, seed=42)
    cm.write_communities(driver, settings, more)
    assert _stored(driver, settings) == {c.id: set(c.members) for c in more}


def test_sweep_values_are_sane_and_write_nothing(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = cm.read_entity_graph(driver, settings, ONTO)
    rows = cm.sweep(eg, [0.5, 1.0, 2.0], seed=42)
    assert [r.resolution for r in rows] == [0.5, 1.0, 2.0]
    isolated = sum(1 for n in eg.graph.nodes if eg.graph.degree(n) == 0)
    for r in rows:
        assert 1 <= r.communities <= len(eg.entities)
        assert r.singletons >= isolated
        assert 1 <= r.largest <= len(eg.entities)
        assert -0.5 <= r.modularity <= 1.0
    assert rows[0].communities <= rows[-1].communities  # higher resolution: more communities
    assert rows[1].modularity > 0.3  # the GoT graph has clear factions
    assert rows[1].communities == len(cm.detect_communities(eg, 1.0, 42))
    assert graphdb.read_all(driver, settings, "MATCH (c:Community) RETURN count(c) AS n")[0]["n"] == 0


def test_summarize_calls_once_per_community_then_never(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    eg = cm.read_entity_graph(driver, settings, ONTO)
    comms = cm.detect_communities(eg, 1.0, 42)
    cm.write_communities(driver, settings, comms)
    eligible = [c for c in comms if c.size > 1]

    chat, counter = fake_chat([SUMMARY])
    lines: list = []
    res = cm.summarize_communities(driver, settings, chat, ontology=ONTO, label="fake", progress=lines.append)
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

    exported = json.loads((settings.out_dir / "communities.json").read_text(encoding="utf-8"))
    assert len(exported["communities"]) == len(comms)
    by_id = {c["id"]: c for c in exported["communities"]}
    assert all(by_id[c.id]["summary"] for c in eligible)
    assert all(by_id[c.id]["summary"] is None for c in comms if c.size == 1)

    # unchanged graph: no call (summaries on the nodes), nor with --force (disk cache), nor after
    # detecting the same communities again (summaries carried over)
    chat2, counter2 = fake_chat([SUMMARY])
    again = cm.summarize_communities(driver, settings, chat2, ontology=ONTO, label="fake", progress=lines.append)
    assert (counter2.calls, again.llm_calls, again.unchanged) == (0, 0, len(eligible))
    forced = cm.summarize_communities(driver, settings, chat2, ontology=ONTO, label="fake", force=True,
                                      progress=lines.append)  # fmt: skip
    assert (counter2.calls, forced.cached) == (0, len(eligible))
    kept = cm.write_communities(driver, settings, cm.detect_communities(eg, 1.0, 42))
    assert kept["summaries_kept"] == len(eligible)
    cm.summarize_communities(driver, settings, chat2, ontology=ONTO, label="fake", progress=lines.append)
    assert counter2.calls == 0
    # another model label is another cache key
    cm.summarize_communities(driver, settings, chat2, ontology=ONTO, label="other", progress=lines.append)
    assert counter2.calls == len(eligible)
    # a forced language is another cache key, and the prompt says it
    chat3, counter3 = fake_chat([SUMMARY])
    cm.summarize_communities(driver, settings, chat3, ontology=ONTO, label="fake", language="English",
                             progress=lines.append)  # fmt: skip
    assert counter3.calls == len(eligible)
    assert all("Write in English." in p and "community's content" not in p for p in counter3.prompts)


def test_summarize_reports_a_failing_community_and_goes_on(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    comms = cm.detect_communities(cm.read_entity_graph(driver, settings, ONTO), 1.0, 42)
    cm.write_communities(driver, settings, comms)
    eligible = sum(1 for c in comms if c.size > 1)
    # the first community answers garbage twice (answer + retry), the others answer well
    chat, counter = fake_chat(["no es JSON", "tampoco"] + [SUMMARY] * eligible)
    res = cm.summarize_communities(driver, settings, chat, ontology=ONTO, label="fake", progress=lambda s: None)
    assert [f["id"] for f in res.failed] == [0]
    assert res.generated == eligible - 1 and counter.calls == res.llm_calls == eligible + 1
    # the next run only asks for the failed one
    chat2, counter2 = fake_chat([SUMMARY])
    res2 = cm.summarize_communities(driver, settings, chat2, ontology=ONTO, label="fake", progress=lambda s: None)
    assert (counter2.calls, res2.generated, res2.failed) == (1, 1, [])


def test_repeated_sentences_are_dropped_from_summaries():
    from graphrag_got.llm import drop_repeated_sentences

    text = "La Casa Stark lidera el Norte. Jon Snow es su rey.  La casa stark lidera el Norte. Jon Snow es su rey."
    assert drop_repeated_sentences(text) == "La Casa Stark lidera el Norte. Jon Snow es su rey."
