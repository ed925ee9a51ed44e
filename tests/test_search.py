"""Local and global questions against the real Neo4j, with recorded/fake model answers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.graph import db as graphdb
from graphrag_got.communities import cypher as communities_cypher
from graphrag_got.search import cypher as search_cypher
from graphrag_got.errors import SearchError
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.ontology.model import Ontology
from support import CallCounter
from graphrag_got.search import global_search, local_search
from graphrag_got.search.global_ import NOTHING_RELEVANT_ANSWER
from graphrag_got.search.anchors import match_entities
from graphrag_got.search.local import NO_ANCHOR_ANSWER

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
JON, DANY = "Personaje|jon snow", "Personaje|daenerys targaryen"
MEETING = "¿Cómo se conocieron Jon Snow y Daenerys?"



@pytest.fixture()
def got(gold_graph, neo4j_settings, tmp_path):  # type: ignore[no-untyped-def]
    # graph retrieval: these tests pin the name-anchored behaviour (hybrid is tests/test_hybrid.py)
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", local_retrieval="graph")
    return gold_graph, settings


def _facts(res) -> set[tuple[str, str, str]]:  # type: ignore[no-untyped-def]
    return {(f.start, f.type, f.end) for f in res.facts}


# ------------------------------------------------------------------------------------- local


def test_matcher_exact_partial_fuzzy_ambiguous() -> None:
    catalog = [{"uid": f"Personaje|{k}", "key": k, "name": k.title(), "type": "Personaje"}
               for k in ("jon snow", "daenerys targaryen", "sansa stark", "robb stark", "eddard stark", "arya stark")]
    by_term = {m.term: m for m in match_entities("¿Cómo se conocieron Jón Snow, Daeneris y los Stark?", catalog)}
    assert by_term["jon snow"].how == "exact" and by_term["jon snow"].uids == [JON]
    assert by_term["daeneris"].how == "fuzzy" and by_term["daeneris"].uids == [DANY]
    assert by_term["stark"].how == "ambiguous"  # four Starks: not an anchor
    assert match_entities("daenerys", catalog)[0].how == "partial"


def test_local_meeting_of_jon_and_daenerys(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    res = local_search(driver, settings.neo4j, MEETING, answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.llm_calls == 0 and res.answer is None and not res.no_anchor
    assert {a.uid for a in res.anchors} == {JON, DANY}
    meeting = [f for f in res.facts if f.type == "SE_ENCUENTRA_CON" and {f.start, f.end} == {JON, DANY}]
    assert len(meeting) == 1 and meeting[0].dist == 1
    assert dict(meeting[0].attributes) == {"momento": "tras la Batalla de los Bastardos"}  # what the gold records
    assert res.facts[0] in meeting or res.facts[1] in meeting  # facts joining both anchors rank first
    assert "Rocadragón" in res.context_text()  # LEAL_A "tras el encuentro en Rocadragón" and the excerpt
    assert any("se encuentra con Daenerys Targaryen" in e.text for e in res.excerpts)
    assert len(res.facts) <= settings.search.local_max_facts


def test_local_red_wedding_finds_the_betrayal(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    res = local_search(driver, settings.neo4j, "¿Qué pasó en la Boda Roja?", answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert [a.uid for a in res.anchors] == ["Evento|boda roja"]
    facts = _facts(res)
    assert ("CasaNoble|casa frey", "TRAICIONA_A", "CasaNoble|casa stark") in facts
    assert ("CasaNoble|casa bolton", "TRAICIONA_A", "CasaNoble|casa stark") in facts
    assert ("Personaje|walder frey", "TRAICIONA_A", "Personaje|robb stark") in facts
    assert ("Personaje|roose bolton", "TRAICIONA_A", "Personaje|robb stark") in facts


def test_one_hop_facts_all_touch_an_anchor(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    one = local_search(driver, settings.neo4j, MEETING, hops=1, answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    anchors = {a.uid for a in one.anchors}
    assert one.facts and all(f.start in anchors or f.end in anchors for f in one.facts)
    assert {f.dist for f in one.facts} == {1}
    two = local_search(driver, settings.neo4j, MEETING, hops=2, answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert any(f.start not in anchors and f.end not in anchors for f in two.facts)  # the check can fail
    assert _facts(one) <= _facts(two)
    few = local_search(driver, settings.neo4j, MEETING, hops=2, max_facts=5, answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert len(few.facts) == 5


def test_symmetric_facts_appear_once(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    res = local_search(driver, settings.neo4j, MEETING, hops=2, answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    keys = [(f.start, f.type, f.end, f.attributes) for f in res.facts]
    assert len(keys) == len(set(keys))
    for f in res.facts:
        if f.symmetric:
            assert (f.end, f.type, f.start, f.attributes) not in keys
    assert sum(1 for f in res.facts if f.type == "SE_ENCUENTRA_CON" and {f.start, f.end} == {JON, DANY}) == 1


def test_unknown_entity_gives_no_anchor_without_an_answer_call(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    res = local_search(driver, settings.neo4j, "¿Quién es Gandalf el Gris?", answer=False, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.no_anchor and res.answer == NO_ANCHOR_ANSWER and res.llm_calls == 0 and res.facts == []

    counter = CallCounter()
    chat = FakeListChatModel(responses=['{"entities": ["Gandalf"]}', "SHOULD NOT BE USED"], callbacks=[counter])
    res = local_search(driver, settings.neo4j, "¿Quién es Gandalf el Gris?", chat=chat, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.no_anchor and res.answer == NO_ANCHOR_ANSWER
    assert counter.calls == res.llm_calls == 1  # the anchor names only, never the answer
    assert any(m.how == "unresolved" and m.term == "Gandalf" for m in res.matches)


def test_local_answer_is_asked_with_the_context(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    counter = CallCounter()
    # the LLM names an alias the deterministic matcher cannot see in the question
    chat = FakeListChatModel(responses=['{"entities": ["Robb Stark"]}', "Respuesta de prueba."], callbacks=[counter])
    res = local_search(driver, settings.neo4j, "¿A quién traicionó el Joven Lobo?", chat=chat, hops=1, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert [(a.uid, a.how) for a in res.anchors] == [("Personaje|robb stark", "llm:exact")]
    assert res.answer == "Respuesta de prueba." and counter.calls == res.llm_calls == 2
    assert "Robb Stark TRAICIONA_A Walder Frey" in counter.prompts[-1]
    assert all(c in counter.prompts[0] for c in ONTO.classes)  # the anchor prompt names the ontology's classes
    assert "in the language of the question" in counter.prompts[-1]


def test_hops_are_validated(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    with pytest.raises(SearchError):
        local_search(driver, settings.neo4j, MEETING, hops=5, answer=False, ontology=ONTO,
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    for bad in (0, 5, "2", True, 2.0):
        with pytest.raises(ValueError):
            search_cypher.local_neighborhood(bad)  # type: ignore[arg-type]
    assert "*1..3]" in search_cypher.local_neighborhood(3)


# ------------------------------------------------------------------------------------ global


@pytest.fixture()
def summarized(got):  # type: ignore[no-untyped-def]
    driver, settings = got
    # map-reduce tests: one level (louvain), no embeddings and no cap, so every community is mapped
    # (selection by level and similarity is tested in tests/test_global_select.py)
    settings = settings.with_overrides(embeddings=False, global_max_communities=1000)
    comms = detect_communities(read_entity_graph(driver, settings.neo4j, ONTO,
                                                 communities=settings.communities, files=settings.files), 1.0, 42, algorithm="louvain")
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    summary = json.dumps({"title": "Grupo", "summary": "Resumen del grupo."})
    summarize_communities(driver, settings.neo4j, FakeListChatModel(responses=[summary]), ontology=ONTO,
                             label="fake", export=False, progress=lambda s: None, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    ids = [c.id for c in comms if c.size > 1]
    assert len(ids) >= 4
    return driver, settings, ids


def _rating(relevance: int, extract: str) -> list[str]:
    return [json.dumps({"relevance": relevance, "extract": extract})]


def test_global_map_reduce_filters_orders_and_skips_failures(summarized) -> None:  # type: ignore[no-untyped-def]
    driver, settings, ids = summarized
    a, b, c, d, *rest = ids
    responses = {f"community:{a}": _rating(6, "EXTRACT-A"), f"community:{b}": _rating(9, "EXTRACT-B"),
                 f"community:{c}": ["esto no es JSON", "sigue sin serlo"],  # invalid twice: reported, skipped
                 f"community:{d}": _rating(2, "EXTRACT-D")}  # fmt: skip
    responses.update({f"community:{i}": _rating(0, "") for i in rest})
    counter = CallCounter()
    chat = ReplayChatModel(responses=responses, fallback=["RESPUESTA GLOBAL"], callbacks=[counter])
    res = global_search(driver, settings.neo4j, "¿Qué bandos hay?", chat=chat, threshold=5, concurrency=3,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert [r.id for r in res.ratings] == sorted(ids)
    assert [(r.id, r.relevance) for r in res.kept] == [(b, 9), (a, 6)]
    assert [r.id for r in res.failed] == [c] and "no valid JSON" in (res.failed[0].error or "")
    assert res.answer == "RESPUESTA GLOBAL"
    assert counter.calls == res.llm_calls == len(ids) + 1 + 1  # maps, the retry of c, the reduce
    reduce_prompt = counter.prompts[-1]
    assert reduce_prompt.index("EXTRACT-B") < reduce_prompt.index("EXTRACT-A")
    assert "EXTRACT-D" not in reduce_prompt
    assert "in the language of the question" in reduce_prompt


def test_global_answer_language_can_be_forced(summarized) -> None:  # type: ignore[no-untyped-def]
    driver, settings, ids = summarized
    counter = CallCounter()
    chat = ReplayChatModel(responses={f"community:{i}": _rating(9, "x") for i in ids}, fallback=["ANSWER"],
                           callbacks=[counter])  # fmt: skip
    res = global_search(driver, settings.neo4j, "¿Qué bandos hay?", chat=chat, threshold=5, language="English",
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.answer == "ANSWER" and counter.calls == len(ids) + 1
    assert all("in English" in p and "language of the question" not in p for p in counter.prompts)


def test_global_nothing_relevant_makes_no_reduce_call(summarized) -> None:  # type: ignore[no-untyped-def]
    driver, settings, ids = summarized
    counter = CallCounter()
    chat = ReplayChatModel(responses={f"community:{i}": _rating(3, "x") for i in ids}, callbacks=[counter])
    res = global_search(driver, settings.neo4j, "¿Qué opinan los dragones?", chat=chat, threshold=8,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.kept == [] and res.answer == NOTHING_RELEVANT_ANSWER.format(threshold=8)
    assert counter.calls == res.llm_calls == len(ids)


def test_global_needs_summaries(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    with graphdb.session(driver, settings.neo4j, write=True) as s:
        s.run(communities_cypher.delete_communities()).consume()
    with pytest.raises(SearchError, match="communities summarize"):
        global_search(driver, settings.neo4j, "¿Qué bandos hay?", chat=FakeListChatModel(responses=["{}"]),
                      search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
