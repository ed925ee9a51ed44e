"""Order an answer's sources by how much they share with the question (``search.local_context_order``).

Retrieval ranks facts by their place in the graph (the anchors' own facts, then their neighbours')
and excerpts after all facts, so the sentence that answers a question can sit fortieth in a context
of forty facts. The embedded 1.5B model reads the top of its context: nearly every claim it wrote
in the live benchmark cited F1-F3, whatever they held (``benchmarks/qa/results/modes-live-recite.md``).

:func:`rank_by_question` scores every source against the question with BM25 (the ``bm25s`` library)
over the context's own sources, so a word frequent in the context (a family name shared by half the
facts) weighs little and a rarer one the question uses (the verb, an event's name) weighs much. Words
are compared by their first :data:`STEM` letters after case and accents are folded ("betrayed",
"betrays" and a relation type ``BETRAYS`` meet), which needs no stemmer or stop-word list per language. A fact is
scored on its line and its evidence sentence. Sources are then sorted by score (ties keep the
retrieval order) and numbered again per kind, F1 the best fact, C1 the best excerpt; the context lists
them in that one order. Local search cuts its excerpts into sentences first
(:func:`graphrag_got.search.facts.sentence_units`) and gives the answer the best
``search.local_answer_sources`` of them (measured live: ``benchmarks/results/qa_live.txt``).
"""

from __future__ import annotations

from collections.abc import Sequence

from graphrag_got.search.anchors import normalize_words
from graphrag_got.search.citations import Citation, number_sources

#: Letters a word is compared by (a prefix, standing in for a stemmer in any language).
STEM = 5
#: Words shorter than this are left out (articles, prepositions, most pronouns).
MIN_WORD = 3


def terms(text: str) -> list[str]:
    """The comparable words of ``text``: folded, split at punctuation and underscores, cut to STEM letters."""
    return [w[:STEM] for w in normalize_words(text.replace("_", " ")).split() if len(w) >= MIN_WORD]


def source_terms(source: Citation) -> list[str]:
    """What a source is scored on: its text, and a fact's evidence sentence."""
    return terms(f"{source.text} {source.evidence or ''}")


def question_scores(question: str, sources: Sequence[Citation]) -> list[float]:
    """The BM25 score of every source for ``question`` (0 for a source sharing no word with it)."""
    query = list(dict.fromkeys(terms(question)))
    docs = [source_terms(s) or ["_"] for s in sources]  # bm25s needs a token in every document
    if not query or not docs:
        return [0.0] * len(docs)
    import bm25s  # noqa: PLC0415 - imported on first use: the CLI's other commands do not pay for it

    model = bm25s.BM25()
    model.index(docs, show_progress=False)
    return [float(x) for x in model.get_scores(query)]


def rank_by_question(question: str, sources: Sequence[Citation]) -> tuple[list[Citation], list[int]]:
    """``sources`` best first for ``question``, numbered again per kind, and the permutation applied
    (``order[i]`` is the position in ``sources`` of the i-th source returned)."""
    scores = question_scores(question, sources)
    order = sorted(range(len(sources)), key=lambda i: -scores[i])  # stable: ties keep the retrieval order
    return number_sources([sources[i] for i in order]), order


__all__ = ["MIN_WORD", "STEM", "question_scores", "rank_by_question", "source_terms", "terms"]
