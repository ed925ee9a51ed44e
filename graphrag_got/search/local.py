"""Local questions: find the entities a question is about, read their neighbourhood, answer from it.

Steps of :func:`local_search`:

1. Anchors (:mod:`graphrag_got.search.anchors`). A deterministic matcher (always) looks for graph entities in the normalized question:
   the whole normalized key (or alias) as words ("ada lovelace"), then one distinctive word of a key
   ("lovelace" -> Ada Lovelace), then close spellings (``difflib``: "lovelase"). A word that
   fits more than ``MAX_AMBIGUOUS`` entities (a family name many share) is reported as ambiguous
   and not used.
   When an answer is wanted, the LLM is also asked for the names the question is about
   (``complete_json``, a list of names) and each name is resolved against the graph the same way,
   which catches aliases the matcher cannot see. With ``answer=False`` (CLI ``--no-answer``) only
   the deterministic matcher runs, so retrieval works and is testable without any model.
2. Facts (:mod:`graphrag_got.search.facts`). Ontology relations on paths of 1..hops from the anchors (read-only session,
   variable-length Cypher path whose relationship types are restricted to the ontology's, the hop
   bound a validated integer literal, at most ``path_limit`` paths); plus, from 2 hops on,
   relations one of whose relation attributes names an anchor ("after the Great Fire" for the event Great Fire).
   A symmetric relation (stored both ways) appears once. Ranking: nearest first, then facts
   joining two anchors, then attribute hits, then most supported (number of chunks).
3. Context: one line per fact, plus short excerpts of the chunks behind the best facts.
4. Answer from that context only, in the form ``search.local_answer`` names
   (:mod:`graphrag_got.search.local_answer`: the model writes the claims, or the corpus's sentences
   naming the question's entities together are the answer's core and the model states the answer
   from them); the answer's language checked; every claim checked against the sources it cites and
   left out, with its reason, when they do not back it (:mod:`graphrag_got.search.support`). No
   anchor, or no fact: a fixed answer saying so, and the LLM is not asked.

That is ``retrieval="graph"``. ``"hybrid"`` (the default, ``GRAPHRAG_LOCAL_RETRIEVAL``) adds the
question's vector (:mod:`graphrag_got.llm.embeddings`) against the ``chunk_embedding`` and
``entity_embedding`` indexes (:mod:`graphrag_got.graph.vectors`): the top-k entities become anchors
(``how="vector"``, their cosine ``score``; their own one-hop facts), the top-k chunks are expanded
to the chunks sharing their entities (ranked by shared-entity weight, ``cypher.chunk_expansion``),
and every ranked list - vector chunks, expansion, the name anchors' neighbourhood facts, the
chunks behind those facts, the facts of the vector entities, the facts read from the vector
chunks - is fused by reciprocal rank fusion (:mod:`graphrag_got.search.hybrid`) into one context: the best
``max_facts`` facts and ``GRAPHRAG_LOCAL_MAX_CHUNKS`` chunks. A question naming no entity is
answered from the chunks. ``"vector"`` uses the vector lists only. Without vector indexes (or
with indexes of another model's dimension) hybrid falls back to graph with a warning
(``LocalResult.vector_unavailable``); vector raises ``SearchError``.

The context is a list of numbered sources (facts ``[F1]``.., chunks ``[C1]``..:
:mod:`graphrag_got.search.citations`); the answer cites them and ids it invents are removed and
counted. ``LocalResult.chunk_ids`` is the fused chunk ranking (recall@k), ``timings`` the seconds
per stage. :func:`local_sources` numbers the sources of any local result (also a retrieval-only one).
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel

from graphrag_got.communities.graph import relation_types
from graphrag_got.common.once import warn_once
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings, SearchSettings
from graphrag_got.errors import LLMError, SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.llm.calls import Attempt, LLMOutputError
from graphrag_got.llm.embeddings import shared_embedder
from graphrag_got.llm.factory import get_chat_model
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.llm.usage import LLMUsage
from graphrag_got.ontology.loading import load_ontology
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import anchor_prompt, load_prompts, local_answer_prompt
from graphrag_got.search import cypher
from graphrag_got.search.anchors import (ANCHOR_MAX_TOKENS, ANCHOR_SCHEMA, MAX_ANCHORS, Anchor, AnchorNames, Match,
                                         entity_catalog, find_anchors, normalize_words)
from graphrag_got.search.budget import fit_sources
from graphrag_got.search.claims import AnswerChecks
from graphrag_got.search.citations import Citation, context_block, number_sources
from graphrag_got.search.local_answer import (ANSWER_MAX_TOKENS, AnswerInputs, WrittenAnswer, answer_prompt,
                                              local_answer_form)
from graphrag_got.search.facts import (PATH_LIMIT, Excerpt, Fact, excerpts_for, retrieve_facts, sentence_excerpt,
                                       sentence_units)
from graphrag_got.search.hybrid import (CHUNK_EXCERPT_CHARS, RETRIEVALS, RankedChunk, Retrieval, VectorHits, fuse,
                                        vector_anchors, vector_side)
from graphrag_got.search.rank import rank_by_question

log = logging.getLogger(__name__)

#: Runs the vector half of hybrid and vector questions beside their name matching (one thread a question).
_VECTOR_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="local-vector")

NO_ANCHOR_ANSWER = (
    "No anchor found: the question names no entity of the graph, so there is nothing to answer from. "
    "Use the name of an entity (a person, a place, an organization...) as the corpus writes it."
)
NO_FACTS_ANSWER = "The graph has no relation around {names}: not enough context to answer."


@dataclass
class LocalResult(LLMUsage, AnswerChecks):
    question: str
    hops: int
    anchors: list[Anchor] = field(default_factory=list)
    matches: list[Match] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    excerpts: list[Excerpt] = field(default_factory=list)
    answer: str | None = None
    no_anchor: bool = False
    llm_errors: list[str] = field(default_factory=list)
    retrieval: str = "graph"  # the retrieval actually used (hybrid falls back to graph without vector indexes)
    vector_unavailable: bool = False  # vector/hybrid was asked for but the graph has no usable vector index
    warnings: list[str] = field(default_factory=list)
    ranked_chunks: list[RankedChunk] = field(default_factory=list)  # every retrieved chunk, best first
    sources: list[Citation] = field(default_factory=list)  # the numbered context: facts F1.., chunks C1..
    citations: list[Citation] = field(default_factory=list)  # the sources the answer cites, first use first
    invented_citations: int = 0  # ids the answer cited that were not in its context (removed)
    context_order: str = "retrieval"  # "question": the answer's sources were ranked by the question (search/rank.py)
    ranked_out: int = 0  # sources retrieved but ranked below the ones given to the answer (search.local_answer_sources)
    raw_answer: str | None = None  # the answer as the model wrote it, before invented ids were removed
    answer_form: str | None = None  # how the answer was written: written | extractive (search/local_answer.py)
    timings: dict[str, float] = field(default_factory=dict)  # seconds per stage

    @property
    def chunk_ids(self) -> list[str]:
        """Retrieved chunk ids, best first (recall@k is computed on these)."""
        return [c.chunk_id for c in self.ranked_chunks]

    @property
    def context_lines(self) -> list[str]:
        return [f.context_line for f in self.facts]

    def context_text(self) -> str:
        """The context the answering model reads: the numbered sources when built, else plain lines."""
        if self.sources:
            return context_block(self.sources, ranked=self.context_order == "question")
        parts = ["FACTS:"] + [f"- {line}" for line in self.context_lines]
        if self.excerpts:
            parts.append("\nSOURCE EXCERPTS:")
            parts += [f"[{e.chunk_id}] {e.text}" for e in self.excerpts]
        return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Sources and citations
# ---------------------------------------------------------------------------------------------


def _chunk_meta(driver: neo4j.Driver, db: Neo4jSettings, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {r["id"]: r for r in read_all(driver, db, cypher.chunk_sources(), ids=wanted)}


def build_sources(facts: list[Fact], excerpts: list[Excerpt], meta: dict[str, dict[str, Any]],
                  anchors: list[Anchor]) -> list[Citation]:  # fmt: skip
    """The numbered context (facts F1.., then excerpts C1..) with document, chunk and evidence."""
    out: list[Citation] = []
    for f in facts:
        chunk = f.chunk_ids[0] if f.chunk_ids else None
        info = meta.get(chunk or "", {})
        evidence = " ".join(f.evidence[0].split())[:300] if f.evidence else None
        out.append(Citation(id="F0", kind="fact", text=f.line, chunk_id=chunk, document_id=info.get("document_id"),
                            heading=info.get("heading"), location=info.get("location"), evidence=evidence,
                            entities=[f.start_name, f.end_name]))
    names = [a.name for a in anchors]
    for e in excerpts:
        info = meta.get(e.chunk_id, {})
        low = normalize_words(e.text)
        out.append(Citation(id="C0", kind="chunk", text=e.text, chunk_id=e.chunk_id,
                            document_id=e.document_id or info.get("document_id"),
                            heading=e.heading or info.get("heading"), location=e.location or info.get("location"),
                            entities=[n for n in names if normalize_words(n) in low]))
    return number_sources(out)



def local_sources(res: Any) -> list[Citation]:
    """The sources of a local result: its own ``sources`` when it has them, else built from its facts
    and excerpts (numbered F1.., C1..), so retrieval-only results can be cited and shown too."""
    own = getattr(res, "sources", None)
    if own:
        return list(own)
    out: list[Citation] = []
    for f in getattr(res, "facts", []) or []:
        chunk = f.chunk_ids[0] if f.chunk_ids else None
        out.append(Citation(id="F0", kind="fact", text=f.line, chunk_id=chunk,
                            document_id=_document_of(chunk),
                            evidence=" ".join(f.evidence[0].split()) if f.evidence else None,
                            entities=[f.start_name, f.end_name]))  # fmt: skip
    names = [a.name for a in getattr(res, "anchors", []) or []]
    for e in getattr(res, "excerpts", []) or []:
        out.append(Citation(id="C0", kind="chunk", text=e.text, chunk_id=e.chunk_id,
                            document_id=_document_of(e.chunk_id), location=getattr(e, "location", None),
                            entities=names))  # fmt: skip
    return number_sources(out)


def _document_of(chunk_id: str | None) -> str | None:
    """Chunk ids are ``<document id>:<hash>``: the document part, when the id has that shape."""
    if not chunk_id or ":" not in chunk_id:
        return None
    return chunk_id.rsplit(":", 1)[0] or None

# ---------------------------------------------------------------------------------------------
# Local search
# ---------------------------------------------------------------------------------------------

#: The answer prompt in its default form (language of the question); see ``prompts.local_answer_prompt``.
ANSWER_PROMPT = local_answer_prompt()


def local_search(
    driver: neo4j.Driver,
    db: Neo4jSettings,
    question: str,
    *,
    search: SearchSettings,
    llm: LLMSettings,
    files: FilesSettings,
    embedding: EmbeddingSettings,
    chat: BaseChatModel | None = None,
    hops: int | None = None,
    max_facts: int | None = None,
    answer: bool = True,
    llm_anchors: bool = True,
    excerpts: bool = True,
    ontology: Ontology | str | Path | None = None,
    path_limit: int = PATH_LIMIT,
    language: str | None = None,
    retrieval: Retrieval | None = None,
    embedder: Embeddings | None = None,
    top_k: int | None = None,
) -> LocalResult:
    """Answer ``question`` from the neighbourhood of the entities it names (see module docstring).

    ``answer=False`` retrieves only (no LLM at all). ``chat`` defaults to
    ``get_chat_model(llm, files=files)``, built only when a call is needed. ``language``
    forces the answer's language (``"English"``); None answers in the language of the question.
    ``retrieval`` is ``graph``, ``vector`` or ``hybrid`` (None: ``search.local_retrieval``);
    ``embedder`` embeds the question (default: the process-wide
    :func:`~graphrag_got.llm.embeddings.shared_embedder`); ``top_k`` vector hits per index (default
    ``search.local_top_k``).
    """
    t_start = time.perf_counter()
    clock = _Clock()
    hops = search.local_hops if hops is None else hops
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= cypher.MAX_HOPS:
        raise SearchError(f"--hops must be an integer from 1 to {cypher.MAX_HOPS}, got {hops!r}")
    max_facts = search.local_max_facts if max_facts is None else max_facts
    if max_facts < 1:
        raise SearchError(f"max_facts must be at least 1, got {max_facts}")
    mode = search.local_retrieval if retrieval is None else retrieval
    if mode not in RETRIEVALS:
        raise SearchError(f"retrieval must be one of {', '.join(RETRIEVALS)}, got {mode!r}")
    top_k = search.local_top_k if top_k is None else top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 200:
        raise SearchError(f"top_k must be an integer from 1 to 200, got {top_k!r}")
    if not question.strip():
        raise SearchError("the question is empty")
    onto = load_ontology(ontology, files)
    types = relation_types(onto)
    res = LocalResult(question=question, hops=hops, retrieval=mode, timings=clock.timings)
    try:
        return _search(driver, db, res, onto, types, search=search, llm=llm, files=files, embedding=embedding,
                       chat=chat, max_facts=max_facts, answer=answer,
                       llm_anchors=llm_anchors, excerpts=excerpts, path_limit=path_limit, language=language,
                       embedder=embedder, top_k=top_k, clock=clock)
    finally:
        res.timings["total"] = round(time.perf_counter() - t_start, 4)


class _Clock:
    """Seconds per stage: ``lap(name)`` adds the time since the previous lap to ``timings[name]``."""

    def __init__(self) -> None:
        self.timings: dict[str, float] = {}
        self._last = time.perf_counter()

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round(self.timings.get(name, 0.0) + now - self._last, 4)
        self._last = now


def _search(driver: neo4j.Driver, db: Neo4jSettings, res: LocalResult, onto: Ontology, types: list[str], *,
            search: SearchSettings, llm: LLMSettings, files: FilesSettings, embedding: EmbeddingSettings,
            chat: BaseChatModel | None, max_facts: int, answer: bool, llm_anchors: bool, excerpts: bool,
            path_limit: int, language: str | None, embedder: Embeddings | None, top_k: int,
            clock: _Clock) -> LocalResult:  # fmt: skip
    question, hops, mode = res.question, res.hops, res.retrieval
    prompts = load_prompts(llm.prompts_dir)
    # the vector half (embed the question, query the indexes) needs nothing of the name matching: it runs
    # beside it (the embedding model and the server's answers leave the interpreter free), and whether
    # it found hits decides the mode actually used
    side = None
    if mode != "graph":
        embedder = embedder or shared_embedder(embedding, llm=llm, files=files)
        side = _VECTOR_POOL.submit(vector_side, driver, db, embedder, question, top_k, mode == "hybrid")
    catalog, index = entity_catalog(driver, db, search=search)
    if not catalog:
        raise SearchError("the graph has no entities: run `graphrag-got load` first")
    clock.lap("catalog")

    llm_names: list[str] = []
    if answer and llm_anchors and mode != "vector":
        chat = chat or get_chat_model(llm, files=files)
        try:
            obj, attempt = complete_json(chat, anchor_prompt(list(onto.classes), prompts=prompts), f"QUESTION: {question}",
                                         AnchorNames, schema=ANCHOR_SCHEMA, max_tokens=ANCHOR_MAX_TOKENS)
            res.count(attempt, len(attempt.raw_responses))
            llm_names = [n for n in obj.entities if isinstance(n, str) and n.strip()][:MAX_ANCHORS]
        except LLMOutputError as exc:
            res.llm_calls += len(exc.raw_responses)
            res.llm_errors.append(f"anchor extraction: {exc}")
        except LLMError as exc:
            res.llm_calls += 1
            res.llm_errors.append(f"anchor extraction: {exc}")
    if mode != "vector":
        res.anchors, res.matches = find_anchors(question, catalog, llm_names, index=index)
    clock.lap("anchors")
    hits = VectorHits()
    if side is not None:
        vec = side.result()
        clock.lap("vector wait")  # what the vector half added to the question's time
        for name, secs in (("embed", vec.embed_s), ("vector", vec.vector_s)):
            if secs is not None:
                res.timings[name] = secs
        hits = vec.hits
        if vec.problem is not None:
            if mode == "vector":
                raise SearchError(f"vector retrieval is not possible: {vec.problem}")
            warn_once(log, "hybrid retrieval fell back to graph", "hybrid retrieval falls back to graph: %s",
                      vec.problem)
            res.warnings.append(f"hybrid retrieval fell back to graph: {vec.problem}")
            res.vector_unavailable = True
            res.retrieval = mode = "graph"
    res.anchors += vector_anchors(hits, {a.uid for a in res.anchors})
    if not res.anchors and not hits.chunks:
        res.no_anchor = True
        res.answer = NO_ANCHOR_ANSWER
        return res

    attributes = list(onto.relation_attributes)
    if mode == "graph":
        res.facts = retrieve_facts(driver, db, res.anchors, hops, types, max_facts, path_limit,
                                   attributes=attributes)
        clock.lap("facts")
        if excerpts and res.facts:
            res.excerpts = excerpts_for(driver, db, res.facts, res.anchors)
        seen: list[str] = []
        for f in res.facts:
            seen += [c for c in f.chunk_ids if c not in seen]
        res.ranked_chunks = [RankedChunk(cid, 0.0, {"fact_chunks": i}) for i, cid in enumerate(seen, start=1)]
    else:
        # name anchors: their neighbourhood as in graph mode; vector anchors (near in meaning, not
        # named): their own facts only, one hop, so a loose hit cannot pull in a whole region
        named = [a for a in res.anchors if a.how != "vector"]
        near = [a for a in res.anchors if a.how == "vector"]
        graph_facts = retrieve_facts(driver, db, named, hops, types, max_facts * 2, path_limit,
                                     attributes=attributes) if named else []  # fmt: skip
        vector_facts = retrieve_facts(driver, db, near, 1, types, max_facts * 2, path_limit,
                                      attributes=attributes) if near else []  # fmt: skip
        clock.lap("facts")
        res.facts, res.ranked_chunks = fuse(graph_facts, vector_facts, hits, max_facts, mode)
        if excerpts and search.local_max_chunks:
            top = res.ranked_chunks[: search.local_max_chunks]
            known = {c["id"]: c for c in hits.chunks}
            meta = _chunk_meta(driver, db, [c.chunk_id for c in top if c.chunk_id not in known])
            names = [normalize_words(a.name) for a in res.anchors if a.how != "vector"]
            for rc in top:
                row = known.get(rc.chunk_id) or meta.get(rc.chunk_id)
                if row and (row.get("text") or "").strip():
                    res.excerpts.append(Excerpt(rc.chunk_id, sentence_excerpt(row["text"], names, CHUNK_EXCERPT_CHARS),
                                                row.get("document_id"), row.get("heading"), round(rc.score, 6),
                                                sorted(rc.ranks), row.get("location")))
    clock.lap("fuse" if mode != "graph" else "excerpts")
    meta = _chunk_meta(driver, db, [f.chunk_ids[0] for f in res.facts if f.chunk_ids] +
                       [e.chunk_id for e in res.excerpts if e.document_id is None])
    # an answer's context ranked by the question (search/rank.py); retrieval alone (--no-answer, DRIFT's
    # follow-ups) keeps the retrieval order. Excerpts are ranked one sentence at a time: a chunk's one
    # answering sentence is then not outweighed by the rest of the chunk
    ranked = answer and search.local_context_order == "question"
    if ranked:
        res.excerpts = sentence_units(res.excerpts)
    res.sources = build_sources(res.facts, res.excerpts, meta, res.anchors)
    if ranked:  # the sources sharing the most with the question first (search/rank.py), numbered again
        res.context_order = "question"
        res.sources, order = rank_by_question(question, res.sources)
        cap = search.local_answer_sources
        if cap and len(order) > cap:  # the answer reads the best-ranked only; the rest are counted
            res.ranked_out = len(order) - cap
            log.info("local search: %d of %d sources ranked below the %d given to the answer", res.ranked_out,
                     len(order), cap)
            res.sources, order = res.sources[:cap], order[:cap]
        n = len(res.facts)
        res.facts, res.excerpts = ([res.facts[i] for i in order if i < n],
                                   [res.excerpts[i - n] for i in order if i >= n])
    clock.lap("sources")
    if not answer:
        return res
    if not res.facts and not res.excerpts:
        res.answer = NO_FACTS_ANSWER.format(names=", ".join(a.name for a in res.anchors) or "the question")
        return res
    chat = chat or get_chat_model(llm, files=files)
    form = local_answer_form(search, chat)  # written, or extractive-first (search/local_answer.py)
    inputs = AnswerInputs(question=question, sources=res.sources, anchors=res.anchors, index=index, chat=chat,
                          search=search, llm=llm, language=language, ranked=ranked)  # fmt: skip
    written = WrittenAnswer()
    kept, dropped = fit_sources(chat, written.system(inputs), lambda srcs: answer_prompt(question, srcs, ranked=ranked),
                                res.sources, ANSWER_MAX_TOKENS)  # fmt: skip
    if dropped:  # the lowest-ranked sources (excerpts, then the last facts) go; the ids of the rest stay
        res.sources = inputs.sources = kept
        ids = {c.id for c in kept}
        res.facts = [f for i, f in enumerate(res.facts, start=1) if f"F{i}" in ids]
        res.excerpts = [e for i, e in enumerate(res.excerpts, start=1) if f"C{i}" in ids]
        res.warnings.append(f"{dropped} of {dropped + len(kept)} sources left out to fit the model's context window")
    attempt = Attempt()
    try:
        checked = form.answer(inputs, attempt)
    finally:
        res.count(attempt, max(len(attempt.raw_responses), form.least_calls))
        clock.lap("answer")
    res.raw_answer, res.answer, res.citations = checked.raw, checked.text, checked.citations
    res.answer_form = checked.form or form.name
    res.invented_citations = len(checked.invented)
    res.warnings.extend(checked.warnings)
    res.record(checked)
    if checked.invented:
        log.info("local answer cited %d id(s) not in its context, removed: %s", len(checked.invented),
                 ", ".join(checked.invented))
    return res
