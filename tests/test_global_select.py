"""Selective global search against the real Neo4j: level, similarity ranking, call bounds, citations.

The reports are written by a fake chat model from each community's real prompt (its member names),
and embedded by a tiny deterministic bag-of-words embedder, so a question naming some members is
measurably closer to their communities' reports than to the others.
"""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import SimpleChatModel
from langchain_core.messages import BaseMessage

from graphrag_got.communities.detect import Community, detect_communities, level_view
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.graph import db as graphdb
from graphrag_got.errors import SearchError
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.global_ import (NOTHING_SIMILAR_ANSWER, choose_level, global_search,
                                         select_communities)
from support import CallCounter

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
QUESTION = "¿Qué une a Jon Snow y Daenerys Targaryen con sus aliados?"


class WordEmbeddings(Embeddings):
    """Hashed bag of words: texts sharing words get similar vectors (deterministic, no model)."""

    model_id = "words-256"

    def __init__(self) -> None:
        self.calls = 0

    def _vec(self, text: str) -> list[float]:
        v = [0.0] * 256
        for w in re.findall(r"\w+", text.lower()):
            v[zlib.crc32(w.encode()) % 256] += 1.0
        return v

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        self.calls += 1
        return [self._vec(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


class MemberReportModel(SimpleChatModel):
    """Writes a report naming the community's members, rated by its size (a stand-in for a real model)."""

    @property
    def _llm_type(self) -> str:
        return "member-report-fake"

    def _call(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> str:
        prompt = str(messages[-1].content)
        names = re.findall(r"^- (.+?) \(", prompt.split("RELATIONS AMONG THEM")[0], flags=re.MULTILINE)
        return json.dumps({"title": " y ".join(names[:2]), "summary": "Miembros: " + ", ".join(names) + ".",
                           "findings": [{"statement": f"{names[0]} está en el centro.", "members": names[:1]}],
                           "rating": min(10, len(names)), "rating_explanation": "Tamaño del grupo."})  # fmt: skip


@pytest.fixture(scope="module")
def reports(gold_graph, neo4j_settings, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The gold graph with Leiden communities (levels), reports and report embeddings."""
    tmp = tmp_path_factory.mktemp("global_select")
    settings = neo4j_settings.with_overrides(home=tmp / "home", out_dir=tmp / "out", concurrency=1)
    comms = detect_communities(read_entity_graph(gold_graph, settings.neo4j, ONTO,
                                                 communities=settings.communities, files=settings.files), 1.0, 42)
    write_communities(gold_graph, settings.neo4j, comms,
                      communities=settings.communities, graph_settings=settings.graph)
    emb = WordEmbeddings()
    res = summarize_communities(gold_graph, settings.neo4j, MemberReportModel(), ontology=ONTO, label="fake",
                                   embedder=emb, embed=True, export=False, llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)  # fmt: skip
    assert res.failed == [] and res.embedded == res.eligible > 6
    assert len({c.level for c in comms}) >= 2
    return gold_graph, settings, comms, emb


def _maps(comms: list[Community]) -> dict[str, list[str]]:
    return {f"community:{c.id}": [json.dumps({"relevance": 8, "extract": f"EXTRACT-{c.id}"})] for c in comms}


def test_similarity_ranking_skips_unrelated_communities_and_bounds_calls(reports) -> None:  # type: ignore[no-untyped-def]
    driver, settings, comms, emb = reports
    counter = CallCounter()
    answer = "Jon Snow y Daenerys Targaryen se alían [R1]. Un detalle inventado [R9]."
    chat = ReplayChatModel(responses=_maps(comms), fallback=[answer], callbacks=[counter])
    res = global_search(driver, settings.neo4j, QUESTION, chat=chat, embedder=emb, min_similarity=0.1, max_communities=4,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.selection == "similarity" and res.level == 0  # level 0 has the count closest to 8
    by_id = {c.id: c for c in comms}
    assert {c.id for c in res.candidates} == {c.id for c in comms if c.level == 0 and c.size > 1}
    sims = [c.similarity for c in res.candidates]
    assert sims == sorted(sims, reverse=True) and all(s is not None for s in sims)
    best = by_id[res.candidates[0].id]
    assert {"Personaje|jon snow", "Personaje|daenerys targaryen"} & set(best.members)
    # unrelated communities are skipped before the map step, for their similarity
    low = [c for c in res.skipped if c.reason.startswith("similarity")]
    assert low and all(c.similarity < 0.1 for c in low) and all(c.similarity >= 0.1 for c in res.selected)
    assert not any({"Personaje|jon snow", "Personaje|daenerys targaryen"} & set(by_id[c.id].members) for c in low)
    assert 1 <= len(res.selected) <= 4
    # LLM calls: one map per kept community, one reduce; nothing for the skipped ones
    assert counter.calls == res.llm_calls == len(res.selected) + 1
    assert {r.id for r in res.ratings} == {c.id for c in res.selected}
    assert all(f"EXTRACT-{c.id}" not in counter.prompts[-1] for c in res.skipped)
    assert all(r.similarity is not None for r in res.ratings)
    # citations: R1 resolves to the most relevant kept report, the invented R9 is removed and counted
    assert [s.id for s in res.sources] == [f"R{i}" for i in range(1, len(res.kept) + 1)]
    assert res.sources[0].community_id == str(res.kept[0].id) and res.sources[0].entities
    assert [c.id for c in res.citations] == ["R1"] and res.invented_citations == 1 and res.invented_ids == ["R9"]
    assert "[R9]" not in (res.answer or "") and "[R1]" in (res.answer or "")
    assert "[R1]" in counter.prompts[-1] and "cite" in counter.prompts[-1].lower()
    assert set(res.timings) >= {"select", "map", "reduce", "total"}
    assert res.input_tokens > 0


def test_without_embeddings_the_most_important_reports_are_kept(reports) -> None:  # type: ignore[no-untyped-def]
    driver, settings, comms, _ = reports
    plain = settings.with_overrides(embeddings=False)
    counter = CallCounter()
    chat = ReplayChatModel(responses=_maps(comms), fallback=["Respuesta [R2]."], callbacks=[counter])
    res = global_search(driver, plain.neo4j, QUESTION, chat=chat, max_communities=3,
                        search=plain.search, llm=plain.llm, files=plain.files, embedding=plain.embedding)
    assert res.selection == "rating" and res.min_similarity is None and res.warnings
    ratings = [c.rating for c in res.candidates]
    assert ratings == sorted(ratings, reverse=True)  # the fake rates by size
    assert [c.selected for c in res.candidates] == [i < 3 for i in range(len(res.candidates))]
    assert counter.calls == res.llm_calls == 3 + 1
    assert [c.id for c in res.citations] == ["R2"] and res.invented_citations == 0


def test_nothing_similar_makes_no_llm_call(reports) -> None:  # type: ignore[no-untyped-def]
    driver, settings, comms, emb = reports
    counter = CallCounter()
    chat = ReplayChatModel(responses=_maps(comms), fallback=["x"], callbacks=[counter])
    res = global_search(driver, settings.neo4j, "¿Qué tiempo hará mañana en la playa?", chat=chat, embedder=emb,
                        min_similarity=0.5, search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # fmt: skip
    assert counter.calls == res.llm_calls == 0 and res.selected == [] and res.ratings == []
    assert res.answer.startswith(NOTHING_SIMILAR_ANSWER.split("(")[0])


def test_level_is_chosen_or_given(reports) -> None:  # type: ignore[no-untyped-def]
    driver, settings, comms, emb = reports
    chat = ReplayChatModel(responses=_maps(comms), fallback=["ok"])
    deep = global_search(driver, settings.neo4j, QUESTION, chat=chat, embedder=emb, level=1, min_similarity=-1,
                         max_communities=100, search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # fmt: skip
    view = {c.id for c in level_view(comms, 1) if c.size > 1}
    assert deep.level == 1 and {c.id for c in deep.candidates} == view
    assert any(c.level == 0 for c in deep.candidates) and any(c.level == 1 for c in deep.candidates)
    assert deep.levels[1] == len(view) and deep.levels[0] == sum(1 for c in comms if c.level == 0 and c.size > 1)
    # a target of many communities picks the deeper level
    many = settings.with_overrides(global_target_communities=len(view))
    assert global_search(driver, many.neo4j, QUESTION, chat=chat, embedder=emb, min_similarity=0.99,
                         search=many.search, llm=many.llm, files=many.files, embedding=many.embedding).level == 1
    with pytest.raises(SearchError, match="levels 0, 1"):
        global_search(driver, settings.neo4j, QUESTION, chat=chat, embedder=emb, level=7,
                      search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)


def test_level_choice_and_selection_units() -> None:
    assert choose_level({0: 3, 1: 9, 2: 20}, 8) == 1
    assert choose_level({0: 6, 1: 10}, 8) == 0  # a tie goes to the broader level
    assert choose_level({}, 8) == 0
    rows = [{"id": 1, "title": "a", "size": 3, "level": 0, "rating": 2, "embedding": [1.0, 0.0]},
            {"id": 2, "title": "b", "size": 9, "level": 0, "rating": 9, "embedding": [0.0, 1.0]},
            {"id": 3, "title": "c", "size": 4, "level": 0, "rating": 5, "embedding": None}]
    by_sim, how = select_communities(rows, [1.0, 0.1], max_communities=5, min_similarity=0.5)
    assert how == "similarity" and [c.id for c in by_sim] == [1, 2, 3] and [c.selected for c in by_sim] == [True, False, False]
    assert by_sim[2].reason == "report not embedded"
    by_rating, how = select_communities(rows, None, max_communities=2, min_similarity=0.5)
    assert how == "rating" and [c.id for c in by_rating] == [2, 3, 1] and [c.selected for c in by_rating] == [True, True, False]


def test_stored_levels_and_parents_are_consistent(reports) -> None:  # type: ignore[no-untyped-def]
    driver, settings, comms, _ = reports
    rows = graphdb.read_all(driver, settings.neo4j, "MATCH (e:Entity)-[m:IN_COMMUNITY]->(c:Community) WHERE c.level > 0 "
                                              "MATCH (e)-[p:IN_COMMUNITY]->(up:Community {id: c.parent}) "
                                              "RETURN count(*) AS n, collect(DISTINCT m.communityLevel) AS levels, "
                                              "collect(DISTINCT p.communityLevel) AS up_levels")  # fmt: skip
    deeper = sum(c.size for c in comms if c.level > 0)
    assert rows[0]["n"] == deeper  # every member of a sub-community is a member of its parent
    assert rows[0]["levels"] == [1] and rows[0]["up_levels"] == [0]
