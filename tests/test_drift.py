"""DRIFT search and the ask() entry point against the real Neo4j, with fake chat models."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.embed import embed_reports
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.communities import cypher as communities_cypher
from graphrag_got.graph import db as graphdb
from graphrag_got.errors import ModeUnavailable, SearchError
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.answer import AskResult, ask
from graphrag_got.search.drift import drift_search, lexical_scores, Report
from support import CallCounter

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
QUESTION = "¿Qué relación hay entre Robb Stark y Walder Frey?"
FOLLOWUPS = ["¿Quién traicionó a Robb Stark?", "¿Con quién se casó Sansa Stark?",
             "¿Dónde gobierna Daenerys Targaryen?", "¿Quién es Tyrion Lannister?"]  # fmt: skip

#: Test-only Cypher: give every community a report naming its members (the fake summarizer cannot).
NAMED_REPORTS = (
    "MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community) WHERE c.summary IS NOT NULL\n"
    "WITH c, collect(e.name) AS names\n"
    "SET c.title = 'Grupo ' + toString(c.id), c.summary = 'Miembros: ' + reduce(s = '', n IN names | s + n + '; ')"
)


def summarize(driver, settings) -> list[int]:  # type: ignore[no-untyped-def]
    """Detect, write and (fake-)summarize communities; returns the ids of the summarized ones."""
    comms = detect_communities(read_entity_graph(driver, settings.neo4j, ONTO,
                                                 communities=settings.communities, files=settings.files), 1.0, 42)
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    summary = json.dumps({"title": "Grupo", "summary": "Resumen del grupo."})
    summarize_communities(driver, settings.neo4j, FakeListChatModel(responses=[summary]), ontology=ONTO,
                             label="fake", export=False, progress=lambda s: None, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    with graphdb.session(driver, settings.neo4j, write=True) as s:
        s.run(NAMED_REPORTS).consume()
    embed_reports(driver, settings.neo4j, embedding=settings.embedding,
                  llm=settings.llm, files=settings.files)  # the reports changed: embed them again, as `communities summarize` does
    return [c.id for c in comms if c.size > 1]


@pytest.fixture(scope="module")
def reports_graph(gold_graph, neo4j_settings, tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("drift")
    settings = neo4j_settings.with_overrides(home=tmp / "home", out_dir=tmp / "out", local_retrieval="graph")
    ids = summarize(gold_graph, settings)
    return gold_graph, settings, ids


def primer(answer: str, follow_ups: list[str]) -> str:
    return json.dumps({"answer": answer, "follow_ups": follow_ups}, ensure_ascii=False)


def test_lexical_ranking_prefers_reports_naming_the_question_words() -> None:
    reports = [Report(1, "Grupo 1", "Miembros: Sansa Stark; Ramsay Bolton"),
               Report(2, "Grupo 2", "Miembros: Walder Frey; Robb Stark; Roose Bolton"),
               Report(3, "Grupo 3", "Miembros: Daenerys Targaryen")]  # fmt: skip
    scores = lexical_scores(QUESTION, reports)
    assert scores[1] > scores[0] > scores[2] == 0.0


def test_report_ranking_falls_back_to_lexical_without_usable_embeddings() -> None:
    from graphrag_got.config import Settings
    from graphrag_got.search.drift import rank_reports

    reports = [Report(1, "Grupo 1", "Miembros: Daenerys Targaryen", embedding=[1.0, 0.0]),
               Report(2, "Grupo 2", "Miembros: Walder Frey; Robb Stark", embedding=None)]  # fmt: skip
    s = Settings()
    ranked = rank_reports(s.embedding, QUESTION, reports, llm=s.llm, files=s.files)  # one report has no embedding
    assert [r.id for r in ranked] == [2, 1] and {r.ranking for r in ranked} == {"lexical"}
    reports[1].embedding = [0.0, 1.0]  # two dimensions: not the embedder's
    assert rank_reports(s.embedding, QUESTION, reports, llm=s.llm, files=s.files)[0].ranking == "lexical"


def test_drift_runs_followups_as_local_searches_and_resolves_citations(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    counter = CallCounter()
    chat = FakeListChatModel(responses=[primer("Borrador [R1] [R99].", FOLLOWUPS),
                                        "Respuesta final [R1] y [F1], además [F999]."], callbacks=[counter])  # fmt: skip
    res = drift_search(driver, settings.neo4j, QUESTION, chat=chat, ontology=ONTO, followups=3, reports=3,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert counter.calls == res.llm_calls == 2  # one primer round, one final answer: retrieval-only follow-ups
    assert res.rounds == 1 and res.bounds == {"depth": 1, "followups": 3, "max_calls": 6, "reports": 3, "rounds": 1}
    round1 = [f for f in res.followups if f.round == 1]
    assert [f.question for f in round1] == FOLLOWUPS[:3]  # the fourth is over the bound
    assert "Sansa Stark" in round1[1].anchors and "Daenerys Targaryen" in round1[2].anchors
    question_search = res.followups[0]
    assert question_search.round == 0 and {"Robb Stark", "Walder Frey"} <= set(question_search.anchors)
    # the context holds reports, then facts of every sub-search, numbered once per kind
    ids = [c.id for c in res.sources]
    assert len(ids) == len(set(ids)) and ids[:3] == ["R1", "R2", "R3"]
    facts = [c for c in res.sources if c.kind == "fact"]
    assert any("Sansa Stark" in c.text for c in facts) and any("Daenerys Targaryen" in c.text for c in facts)
    assert all(c.id == f"F{i}" for i, c in enumerate(facts, 1))
    final = counter.prompts[-1]
    assert "[R1] Grupo" in final and f"[F1] {facts[0].text}" in final and "Borrador [R1]." in final
    assert "R99" not in final  # the draft's invented id was removed before it was passed on
    assert res.answer == "Respuesta final [R1] y [F1], además."
    assert [c.id for c in res.citations] == ["R1", "F1"] and res.invented_citations == 1
    assert res.citations[0].community_id == str(res.reports[0].id)
    assert res.ranking == "embedding"  # the reports have embeddings: the question is compared to them
    assert any({"Robb Stark", "Walder Frey"} & set(r.members) for r in res.reports)


def test_drift_rounds_stop_at_the_call_bound(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    counter = CallCounter()
    chat = FakeListChatModel(responses=[primer("Uno.", FOLLOWUPS[:1]), primer("Dos.", FOLLOWUPS[1:2]),
                                        "Final."], callbacks=[counter])  # fmt: skip
    res = drift_search(driver, settings.neo4j, QUESTION, chat=chat, ontology=ONTO, depth=3, max_calls=3,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert counter.calls == res.llm_calls == 3 <= res.max_calls
    assert res.rounds == 2 and res.stopped and "max calls (3)" in res.stopped
    assert [f.question for f in res.followups if f.round] == FOLLOWUPS[:2] and res.drafts == ["Uno.", "Dos."]
    assert res.answer == "Final."


def test_drift_without_new_followups_stops_and_a_bad_primer_is_skipped(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    counter = CallCounter()
    chat = FakeListChatModel(responses=["no es JSON", "tampoco", "Respuesta."], callbacks=[counter])
    res = drift_search(driver, settings.neo4j, QUESTION, chat=chat, ontology=ONTO, depth=2,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert counter.calls == res.llm_calls == 3 and res.answer == "Respuesta."
    assert [f.round for f in res.followups] == [0] and "primer gave no valid answer" in res.warnings[0]
    assert res.stopped == "round 1 gave no new follow-up question"


def test_drift_retrieval_only_makes_no_llm_call(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    counter = CallCounter()
    res = drift_search(driver, settings.neo4j, QUESTION, chat=FakeListChatModel(responses=["x"], callbacks=[counter]),
                       answer=False, ontology=ONTO, search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # fmt: skip
    assert counter.calls == res.llm_calls == 0 and res.answer is None
    kinds = {c.kind for c in res.sources}
    assert {"report", "fact"} <= kinds and res.communities == [r.id for r in res.reports]


def test_drift_bounds_are_validated(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    with pytest.raises(SearchError, match="drift depth must be an integer from 1 to 3, got 0"):
        drift_search(driver, settings.neo4j, QUESTION, depth=0, answer=False, ontology=ONTO,
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    with pytest.raises(SearchError, match="max_calls"):
        drift_search(driver, settings.neo4j, QUESTION, max_calls=1, answer=False, ontology=ONTO,
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)


def test_ask_routes_and_fills_one_result_shape(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    counter = CallCounter()
    chat = FakeListChatModel(responses=[primer("Borrador.", FOLLOWUPS[:2]), "Final [F2] [R1]."], callbacks=[counter])
    res = ask(driver, settings.neo4j, QUESTION, chat=chat, ontology=ONTO,
              search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert isinstance(res, AskResult) and res.mode == "drift" and res.route.rule == "connective.es.que_relacion"
    assert res.llm_calls == counter.calls == 2 and res.followups == FOLLOWUPS[:2]
    assert [c.id for c in res.citations] == ["F2", "R1"] and res.bounds["followups"] == 3
    # the question's language is named in the prompts (small models drift into English otherwise)
    assert res.language == "Spanish" and "Answer in Spanish." in counter.prompts[-1]
    assert {"route", "search", "total"} <= set(res.timings)
    data = json.loads(json.dumps(res.model_dump(mode="json")))
    assert data["route"]["mode"] == "drift" and data["citations"][0]["kind"] == "fact" and "detail" not in data
    # local, retrieval only: no LLM, anchors and fact sources numbered
    local = ask(driver, settings.neo4j, "¿Quién traicionó a Robb Stark?", answer=False, ontology=ONTO,
                search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert local.mode == "local" and local.route.entities == ["Robb Stark"] and local.llm_calls == 0
    assert local.anchors and local.sources and local.sources[0].id in {"F1", "C1"}
    # global, retrieval only: the most similar reports, no LLM
    glob = ask(driver, settings.neo4j, "¿Cuáles son los principales temas?", answer=False, ontology=ONTO,
               search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert glob.mode == "global" and glob.llm_calls == 0 and glob.sources[0].kind == "report" and glob.communities
    forced = ask(driver, settings.neo4j, "¿Quién traicionó a Robb Stark?", "global", answer=False,
                 search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert forced.mode == "global" and forced.route.decided_by == "explicit"


def test_ask_refuses_bad_input_and_empty_graph_parts(reports_graph) -> None:  # type: ignore[no-untyped-def]
    driver, settings, _ = reports_graph
    with pytest.raises(SearchError, match="empty"):
        ask(driver, settings.neo4j, "  ",
            search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    with pytest.raises(SearchError, match="characters long"):
        ask(driver, settings.neo4j, "x" * 5000,
            search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    with pytest.raises(SearchError, match="unknown mode 'fast'"):
        ask(driver, settings.neo4j, "q", "fast",
            search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # type: ignore[arg-type]
    with pytest.raises(SearchError, match="unknown retrieval 'magic'"):
        ask(driver, settings.neo4j, "q", retrieval="magic",
            search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)


def test_drift_needs_reports(gold_graph, neo4j_settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", local_retrieval="graph")
    with graphdb.session(gold_graph, settings.neo4j, write=True) as s:
        s.run(communities_cypher.delete_communities()).consume()
    with pytest.raises(SearchError, match="communities summarize"):
        drift_search(gold_graph, settings.neo4j, QUESTION, answer=False, ontology=ONTO,
                     search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    # routed (not forced) to drift or global on a graph without reports: local when it names entities
    res = ask(gold_graph, settings.neo4j, QUESTION, answer=False, ontology=ONTO,
              search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.mode == "local" and res.route.rule == "connective.es.que_relacion"
    assert "no community reports, so local" in res.route.reason
    assert any("local retrieval answered it" in w and "`graphrag-got communities summarize`" in w for w in res.warnings)
    # a corpus-wide question (routed to global, naming no entity) falls back too instead of failing
    res = ask(gold_graph, settings.neo4j, "¿Cuáles son los temas principales?", answer=False,
              search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.mode == "local" and res.route.rule != "explicit"
    assert "routed to global (corpus-wide question: 'principales')" in res.warnings[0]
    assert "`graphrag-got communities summarize`" in res.warnings[0]
    # asked explicitly, a mode that cannot run says so and names the commands
    for mode in ("global", "drift"):
        for answer in (False, True):
            with pytest.raises(ModeUnavailable, match="communities detect.*communities summarize") as info:
                ask(gold_graph, settings.neo4j, "¿Cuáles son los temas principales?", mode, answer=answer,
                    search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
            assert info.value.mode == mode and info.value.command.endswith("graphrag-got communities summarize")
