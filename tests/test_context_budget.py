"""Answer contexts fitted to the model's window: the prefix that fits, ids unchanged, a warning."""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel

from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import local_answer_prompt
from graphrag_got.search import local_search
from graphrag_got.search.local import ANSWER_MAX_TOKENS
from graphrag_got.search.budget import TEMPLATE_MARGIN, context_window, count_tokens, fit_sources
from graphrag_got.search.citations import Citation, context_block
from support import CallCounter

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")
MEETING = "¿Cómo se conocieron Jon Snow y Daenerys?"


class WindowedChat(FakeListChatModel):
    """A fake model with a context window, counting one token per word."""

    context_window: int = 4096

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _sources(n: int) -> list[Citation]:
    return [Citation(id=f"F{i}", kind="fact", text=f"A{i} REL B{i} with five more words") for i in range(1, n + 1)]


def test_the_longest_prefix_that_leaves_room_for_the_answer_is_kept() -> None:
    sources = _sources(20)
    chat = WindowedChat(responses=["x"], context_window=TEMPLATE_MARGIN + 100 + 40)  # 40 tokens for the prompt
    kept, dropped = fit_sources(chat, "sys tem", context_block, sources, answer_tokens=100)
    assert [c.id for c in kept] == [f"F{i}" for i in range(1, len(kept) + 1)] and dropped == 20 - len(kept)
    assert count_tokens(chat, "sys tem") + count_tokens(chat, context_block(kept)) <= 40
    assert count_tokens(chat, "sys tem") + count_tokens(chat, context_block(sources[: len(kept) + 1])) > 40
    big = WindowedChat(responses=["x"])
    assert fit_sources(big, "sys", context_block, sources, 100) == (sources, 0)
    unknown = FakeListChatModel(responses=["x"])  # no window known: the context is left as it is
    assert context_window(unknown) is None and fit_sources(unknown, "s", context_block, sources, 10) == (sources, 0)
    assert count_tokens(unknown, "abcdef") == 3  # characters / 3 without a tokenizer


@pytest.mark.neo4j
def test_a_local_answer_never_exceeds_the_window(gold_graph, neo4j_settings, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # retrieval order: the answer's context is then the retrieved one, trimmed to fit (a context ranked by the
    # question is cut the same way, a prefix of its ranking: tests/test_context_rank.py)
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", local_retrieval="graph",
                                             local_context_order="retrieval")
    full = local_search(gold_graph, settings.neo4j, MEETING, answer=False, ontology=ONTO,
                        search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert len(full.sources) > 4
    counter = CallCounter()
    room = (len(local_answer_prompt().split()) + len(f"QUESTION: {MEETING}".split())
            + len(context_block(full.sources[:3]).split()) + 20)  # three sources and the closing line
    chat = WindowedChat(responses=['{"entities": ["Jon Snow", "Daenerys Targaryen"]}',
                                   "Se conocieron en Rocadragón [F1]."], callbacks=[counter],
                        context_window=ANSWER_MAX_TOKENS + TEMPLATE_MARGIN + room)
    res = local_search(gold_graph, settings.neo4j, MEETING, chat=chat, ontology=ONTO,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    assert counter.calls == 2 and 0 < len(res.sources) < len(full.sources)  # the anchors, then the answer
    assert [c.id for c in res.sources] == [c.id for c in full.sources[: len(res.sources)]]
    assert len(res.facts) + len(res.excerpts) == len(res.sources)
    assert any("left out to fit the model's context window" in w for w in res.warnings)
    assert res.citations and res.citations[0].id == "F1"
