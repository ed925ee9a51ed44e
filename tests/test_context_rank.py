"""The answer's context ranked by the question (graphrag_got/search/rank.py, search.local_context_order)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.search.citations import RANKED_HEADER, Citation, context_block, number_sources
from graphrag_got.search.facts import Excerpt, sentence_units
from graphrag_got.search.rank import question_scores, rank_by_question, terms

ROOT = Path(__file__).resolve().parents[1]


def _sources(*items: tuple[str, str]) -> list[Citation]:
    return number_sources([Citation(id="X", kind=kind, text=text) for kind, text in items])


def test_terms_fold_case_accents_and_cut_words_to_their_first_letters() -> None:
    assert terms("Who betrayed Ada's brother?") == ["who", "betra", "ada", "broth"]
    assert terms("¿Quién traicionó a Lord Byron?") == ["quien", "traic", "lord", "byron"]
    # a relation type meets the verb of the question: underscores split, the same first letters
    assert terms("Ada BETRAYS_TO Byron") == ["ada", "betra", "byron"]


def test_the_source_sharing_the_rarer_question_words_comes_first_and_ids_follow_the_new_order() -> None:
    sources = _sources(
        ("fact", "Ada Lovelace MEMBER_OF Royal Society"),
        ("fact", "Ada Lovelace FRIEND_OF Mary Somerville"),
        ("fact", "Charles Babbage MEMBER_OF Royal Society"),
        ("chunk", "In 1833 Ada Lovelace met Charles Babbage at a party given by Mary Somerville."),
        ("chunk", "The weather in London was cold that winter."),
    )
    ranked, order = rank_by_question("Where did Ada Lovelace meet Charles Babbage?", sources)
    # the excerpt naming both people and the verb beats the facts naming one of them
    assert order[0] == 3 and ranked[0].id == "C1" and ranked[0].text.startswith("In 1833")
    # every kind numbered again from 1 in the new order; the permutation says where each came from
    assert [c.id for c in ranked if c.kind == "fact"] == ["F1", "F2", "F3"]
    assert [sources[i].text for i in order] == [c.text for c in ranked]
    # the source sharing no word with the question is last
    assert ranked[-1].text.startswith("The weather") and question_scores("Where did Ada meet Babbage?",
                                                                          sources)[4] == 0.0  # fmt: skip


def test_sources_sharing_nothing_with_the_question_keep_their_retrieval_order() -> None:
    sources = _sources(("fact", "Mary Somerville FRIEND_OF Ada Lovelace"), ("fact", "Ada Lovelace CHILD_OF Lord Byron"),
                       ("chunk", "Somerville wrote on physical sciences."))  # fmt: skip
    ranked, order = rank_by_question("What is a difference engine?", sources)
    assert order == [0, 1, 2] and [c.id for c in ranked] == ["F1", "F2", "C1"]


def test_a_word_most_sources_share_weighs_less_than_a_rare_one() -> None:
    sources = _sources(("fact", "Ada Lovelace CHILD_OF Lord Byron"), ("fact", "Ada Lovelace FRIEND_OF Mary Somerville"),
                       ("fact", "Ada Lovelace MEMBER_OF Analytical Society"), ("fact", "Lord Byron POET_OF London"))  # fmt: skip
    scores = question_scores("Who was the poet father of Ada?", sources)
    # "ada" is in three of four sources, "poet" in one: the one naming the poet ranks first
    assert scores[3] == max(scores) and scores[3] > scores[0]


def test_sentence_units_split_excerpts_and_drop_repeated_sentences() -> None:
    units = sentence_units([Excerpt("d:1", "Ada met Babbage. They wrote letters!  Then she translated the paper.", "d"),
                            Excerpt("d:2", "They wrote letters! Byron was her father.", "d", "Family")])  # fmt: skip
    assert [u.text for u in units] == ["Ada met Babbage.", "They wrote letters!", "Then she translated the paper.",
                                       "Byron was her father."]  # fmt: skip
    assert [(u.chunk_id, u.document_id, u.heading) for u in units][-1] == ("d:2", "d", "Family")


def test_a_ranked_context_is_one_list_in_the_given_order() -> None:
    sources = _sources(("chunk", "Ada met Babbage."), ("fact", "Ada Lovelace FRIEND_OF Mary Somerville"))
    block = context_block(sources, ranked=True)
    assert block.splitlines() == [RANKED_HEADER, "[C1] Ada met Babbage.", "[F1] Ada Lovelace FRIEND_OF Mary Somerville"]
    assert context_block(sources).splitlines()[0] == "SOURCE EXCERPTS:"  # grouped by kind otherwise


class _Recording(ReplayChatModel):
    """The replay model that also keeps the prompts it was given."""

    prompts: list[str] = []

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:  # fmt: skip
        self.prompts.append("\n".join(str(m.content) for m in messages))
        return super()._generate(messages, stop, run_manager, **kwargs)


QUESTION = "¿Cómo se conocieron Jon Snow y Daenerys Targaryen en Rocadragón?"


@pytest.fixture(scope="module")
def ranked_settings(gold_graph, neo4j_settings, tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("rank")
    return gold_graph, neo4j_settings.with_overrides(home=tmp / "home", out_dir=tmp / "out", local_retrieval="graph",
                                                     embeddings=False, answer_format="claims")  # fmt: skip


def _ask(driver: Any, settings: Any, **overrides: Any) -> tuple[Any, _Recording]:
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.search import local_search

    settings = settings.with_overrides(**overrides) if overrides else settings
    claims = {"claims": [{"statement": "Jon Snow se encuentra con Daenerys Targaryen en Rocadragón.",
                          "sources": ["C1"]}]}  # fmt: skip
    chat = _Recording(fallback=[json.dumps({"entities": ["Jon Snow", "Daenerys Targaryen"]}), json.dumps(claims)])
    chat.prompts = []
    res = local_search(driver, settings.neo4j, QUESTION, chat=chat, ontology=Ontology.from_file(ROOT / "ontology" / "got.json"),
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # fmt: skip
    return res, chat


def test_local_answers_read_the_context_ranked_by_the_question(ranked_settings) -> None:  # type: ignore[no-untyped-def]
    driver, settings = ranked_settings
    assert settings.search.local_context_order == "question"  # the default
    everything, _ = _ask(driver, settings, local_answer_sources=0)
    assert everything.context_order == "question" and everything.ranked_out == 0
    res, chat = _ask(driver, settings, local_answer_sources=4)
    # the best four of the same ranking are given; the rest are counted, not silently dropped
    assert [c.text for c in res.sources] == [c.text for c in everything.sources[:4]]
    assert res.ranked_out == len(everything.sources) - 4 > 0
    # best first (scores are relative to the sources scored together: the whole retrieved context);
    # excerpts are single sentences
    scores = question_scores(QUESTION, everything.sources)
    assert scores == sorted(scores, reverse=True) and scores[0] > 0
    assert all(c.text.count(". ") == 0 for c in res.sources if c.kind == "chunk")
    # ids follow the listed order per kind, and the result's facts and excerpts are in that order too
    facts = [c for c in res.sources if c.kind == "fact"]
    assert [c.id for c in facts] == [f"F{i}" for i in range(1, len(facts) + 1)]
    assert [f.line for f in res.facts] == [c.text for c in facts]
    assert [e.text for e in res.excerpts] == [c.text for c in res.sources if c.kind == "chunk"]
    # the model read them in that one order, under one header
    answer_prompt = chat.prompts[-1]
    assert RANKED_HEADER in answer_prompt and res.context_text() in answer_prompt
    lines = [ln for ln in answer_prompt.splitlines() if ln.startswith("[")]
    assert [ln.split("]")[0][1:] for ln in lines] == [c.id for c in res.sources]
    # the claim citing C1 (the best-ranked sentence, which names both) is kept
    assert res.answer.endswith("[C1].") and len(res.support.kept) == 1 and not res.support.left_out


def test_retrieval_order_keeps_facts_then_whole_excerpts(ranked_settings) -> None:  # type: ignore[no-untyped-def]
    driver, settings = ranked_settings
    res, chat = _ask(driver, settings, local_context_order="retrieval")
    assert res.context_order == "retrieval" and res.ranked_out == 0
    kinds = [c.kind for c in res.sources]
    assert kinds == sorted(kinds, key=lambda k: k != "fact")  # every fact before every excerpt
    assert RANKED_HEADER not in chat.prompts[-1] and "FACTS:" in chat.prompts[-1]
