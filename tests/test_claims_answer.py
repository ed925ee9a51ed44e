"""The claims answer format: a schema that admits only the context's ids, rendered by code."""

from __future__ import annotations

import json
from pathlib import Path

from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.config import Settings
from graphrag_got.ontology.model import Ontology
from graphrag_got.search import local_search
from graphrag_got.search.claims import Claim, ClaimsAnswer, claims_schema, render_claims, use_claims
from support import CallCounter

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
MEETING = "¿Cómo se conocieron Jon Snow y Daenerys?"
ANCHORS = '{"entities": ["Jon Snow", "Daenerys Targaryen"]}'


def test_claims_render_one_cited_sentence_each() -> None:
    answer = ClaimsAnswer(claims=[Claim(statement=" Se conocieron en Rocadragón. ", sources=["F1", "F1", "C2"]),
                                  Claim(statement="¿Y después?", sources=["F3"]), Claim(statement="  ", sources=["F4"]),
                                  Claim(statement="Sin fuente", sources=[])])  # fmt: skip
    assert render_claims(answer) == "Se conocieron en Rocadragón [F1, C2]. ¿Y después [F3]? Sin fuente."


def test_the_schema_admits_only_the_context_ids() -> None:
    schema = claims_schema(["F1", "C1", "F1"])
    sources = schema["properties"]["claims"]["items"]["properties"]["sources"]
    assert sources["items"]["enum"] == ["F1", "C1"] and sources["minItems"] == 1
    assert schema["properties"]["claims"]["minItems"] == 1


def test_auto_asks_claims_of_the_embedded_model_only() -> None:
    fake = FakeListChatModel(responses=["x"])
    settings = Settings.load()
    assert not use_claims(settings.with_overrides(answer_format="auto").search, fake)
    assert use_claims(settings.with_overrides(answer_format="claims").search, fake)
    assert not use_claims(settings.with_overrides(answer_format="text").search, fake)


def test_a_local_answer_as_claims_and_its_fallback_to_prose(gold_graph, neo4j_settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the context in retrieval order (F1 the meeting, after the battle; C1 the excerpt placing it on the island:
    # both back the claim); tests/test_context_rank.py tests the context ranked by the question
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", local_retrieval="graph",
                                             answer_format="claims", local_context_order="retrieval")  # fmt: skip
    claims = json.dumps({"claims": [{"statement": "Jon Snow y Daenerys se conocieron en Rocadragón.",
                                     "sources": ["F1", "C1"]}]})  # fmt: skip
    counter = CallCounter()
    chat = FakeListChatModel(responses=[ANCHORS, claims], callbacks=[counter])
    res = local_search(gold_graph, settings.neo4j, MEETING, chat=chat, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.answer == "Jon Snow y Daenerys se conocieron en Rocadragón [F1, C1]."
    assert [c.id for c in res.citations] == ["F1", "C1"] and counter.calls == res.llm_calls == 2
    assert res.answer_format == "claims" and res.support is not None and res.support.left_out == []
    assert "JSON" in counter.prompts[-1] or "claims" in counter.prompts[-1]
    # an answer that is not the JSON, twice: one prose call instead, counted, its sentences checked as claims
    counter = CallCounter()
    prose = "Se conocieron tras la Batalla de los Bastardos [F1]. Se casaron en Invernalia [F1]."
    chat = FakeListChatModel(responses=[ANCHORS, "no json", "still none", prose], callbacks=[counter])  # fmt: skip
    res = local_search(gold_graph, settings.neo4j, MEETING, chat=chat, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert res.answer == "Se conocieron tras la Batalla de los Bastardos [F1]." and counter.calls == res.llm_calls == 4
    assert res.support is not None and [c.reason.value for c in res.support.left_out] == ["entity_not_in_sources"]
    assert any("prose fallback was checked" in w for w in res.warnings)
