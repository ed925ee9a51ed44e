"""Local questions: find the entities a question is about, read their neighbourhood, answer from it.

Steps of :func:`local_search`:

1. Anchors. A deterministic matcher (always) looks for graph entities in the normalized question:
   the whole normalized key (or alias) as words ("ada lovelace"), then one distinctive word of a key
   ("lovelace" -> Ada Lovelace), then close spellings (``difflib``: "lovelase"). A word that
   fits more than ``MAX_AMBIGUOUS`` entities (a family name many share) is reported as ambiguous
   and not used.
   When an answer is wanted, the LLM is also asked for the names the question is about
   (``complete_json``, a list of names) and each name is resolved against the graph the same way,
   which catches aliases the matcher cannot see. With ``answer=False`` (CLI ``--no-answer``) only
   the deterministic matcher runs, so retrieval works and is testable without any model.
2. Facts. Ontology relations on paths of 1..hops from the anchors (read-only session,
   variable-length Cypher path whose relationship types are restricted to the ontology's, the hop
   bound a validated integer literal, at most ``path_limit`` paths); plus, from 2 hops on,
   relations one of whose relation attributes names an anchor ("after the Great Fire" for the event Great Fire).
   A symmetric relation (stored both ways) appears once. Ranking: nearest first, then facts
   joining two anchors, then attribute hits, then most supported (number of chunks).
3. Context: one line per fact, plus short excerpts of the chunks behind the best facts.
4. Answer (``complete_text``) from that context only. No anchor, or no fact: a fixed answer
   saying so, and the LLM is not asked.

That is ``retrieval="graph"``. ``"hybrid"`` (the default, ``GRAPHRAG_LOCAL_RETRIEVAL``) adds the
question's vector (:mod:`graphrag_got.llm.embeddings`) against the ``chunk_embedding`` and
``entity_embedding`` indexes (:mod:`graphrag_got.graph.vectors`): the top-k entities become anchors
(``how="vector"``, their cosine ``score``; their own one-hop facts), the top-k chunks are expanded
to the chunks sharing their entities (ranked by shared-entity weight, ``cypher.chunk_expansion``),
and every ranked list - vector chunks, expansion, the name anchors' neighbourhood facts, the
chunks behind those facts, the facts of the vector entities, the facts read from the vector
chunks - is fused by reciprocal rank fusion (:data:`RRF_K`) into one context: the best
``max_facts`` facts and ``GRAPHRAG_LOCAL_MAX_CHUNKS`` chunks. A question naming no entity is
answered from the chunks. ``"vector"`` uses the vector lists only. Without vector indexes (or
with indexes of another model's dimension) hybrid falls back to graph with a warning
(``LocalResult.vector_unavailable``); vector raises ``SearchError``.

The context is a list of numbered sources (facts ``[F1]``.., chunks ``[C1]``..:
:mod:`graphrag_got.search.citations`); the answer cites them and ids it invents are removed and
counted. ``LocalResult.chunk_ids`` is the fused chunk ranking (recall@k), ``timings`` the seconds
per stage.
"""

from __future__ import annotations

import difflib
import logging
import re
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Literal

import neo4j
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graphrag_got.graph import queries as cypher
from graphrag_got.communities.core import _load_ontology, fact_line, relation_types
from graphrag_got.llm.embeddings import shared_embedder
from graphrag_got.graph.db import read_all
from graphrag_got.config import Settings
from graphrag_got.errors import LLMError, SearchError
from graphrag_got.llm.client import Attempt, LLMOutputError, LLMUsage, complete_json, complete_text, get_chat_model
from graphrag_got.common.normalize import normalize_name
from graphrag_got.prompts import anchor_prompt, local_answer_prompt
from graphrag_got.graph.vectors import vector_index_dimensions
from graphrag_got.search.citations import Citation, context_block, number_sources, resolve_citations

log = logging.getLogger(__name__)

MAX_AMBIGUOUS = 3  # a partial/fuzzy word matching more entities than this is not an anchor
MAX_ANCHORS = 10
PATH_LIMIT = 5000  # paths expanded at most per neighbourhood query (hub guard)
MAX_EXCERPTS = 3
EXCERPT_CHARS = 400
FUZZY_CUTOFF = 0.82
ANCHOR_MAX_TOKENS = 150  # a short list of names
ANSWER_MAX_TOKENS = 600

NO_ANCHOR_ANSWER = (
    "No anchor found: the question names no entity of the graph, so there is nothing to answer from. "
    "Use the name of an entity (a person, a place, an organization...) as the corpus writes it."
)
NO_FACTS_ANSWER = "The graph has no relation around {names}: not enough context to answer."

#: Languages whose function words ship in ``graphrag_got/data/stopwords/<code>.txt``.
STOPWORD_LANGUAGES = ("es", "en")


def load_stopwords(languages: Iterable[str] = STOPWORD_LANGUAGES) -> frozenset[str]:
    """Function words and question words of ``languages``, never used alone as partial/fuzzy anchors.

    They are language data, not corpus vocabulary: one word a line, ``#`` starts a comment. A
    question may mix languages with the names it cites, so every shipped list applies by default.
    """
    words: set[str] = set()
    folder = resources.files("graphrag_got").joinpath("data/stopwords")
    for code in languages:
        try:
            text = folder.joinpath(f"{code}.txt").read_text(encoding="utf-8")
        except FileNotFoundError:
            shipped = sorted(p.name.removesuffix(".txt") for p in folder.iterdir() if p.name.endswith(".txt"))
            raise SearchError(f"no stopword list for language {code!r}; shipped: {', '.join(shipped)}") from None
        for line in text.splitlines():
            words.update(normalize_name(w) for w in line.split("#", 1)[0].split())
    return frozenset(words)


STOPWORDS = load_stopwords()


# ---------------------------------------------------------------------------------------------
# Results
# ---------------------------------------------------------------------------------------------


@dataclass
class Match:
    """How a piece of the question (or an LLM-given name) was matched: exact, partial, fuzzy,
    ambiguous (too many candidates, not used) or unresolved (an LLM name the graph lacks)."""

    term: str
    how: str
    uids: list[str]
    names: list[str]
    source: str = "question"  # "question" or "llm"
    score: float = 1.0


@dataclass
class Anchor:
    uid: str
    name: str
    type: str
    how: str  # exact | partial | fuzzy (prefixed "llm:" when found through the LLM's names) | vector
    term: str
    score: float = 1.0  # vector anchors: cosine similarity of the entity to the question


@dataclass
class Fact:
    start: str
    start_name: str
    type: str
    end: str
    end_name: str
    attributes: tuple[tuple[str, str], ...]  # the ontology's relation attributes the fact holds
    symmetric: bool
    chunk_ids: list[str]
    dist: int
    via: str  # "path", or "attribute" (an attribute value names an anchor)
    evidence: list[str] = field(default_factory=list)  # sentences of the corpus stating the fact

    @property
    def context_line(self) -> str:
        """The fact and, when the graph holds one, the first sentence that states it."""
        if not self.evidence:
            return self.line
        sentence = " ".join(self.evidence[0].split())
        return f"{self.line} — \"{sentence[:300]}{'…' if len(sentence) > 300 else ''}\""

    @property
    def support(self) -> int:
        return len(self.chunk_ids)

    @property
    def line(self) -> str:
        return fact_line(self.start_name, self.type, self.end_name, dict(self.attributes))

    def key(self) -> tuple[Any, ...]:
        a, b = (self.start, self.end)
        if self.symmetric and b < a:
            a, b = b, a
        return (a, self.type, b, self.attributes)


@dataclass
class Excerpt:
    chunk_id: str
    text: str
    document_id: str | None = None
    heading: str | None = None
    score: float = 0.0  # fused (RRF) score in vector/hybrid retrieval
    via: list[str] = field(default_factory=list)  # the ranked lists that brought the chunk


@dataclass
class RankedChunk:
    """One chunk of the fused ranking: its RRF score and its 1-based rank in each list that had it."""

    chunk_id: str
    score: float
    ranks: dict[str, int] = field(default_factory=dict)


@dataclass
class LocalResult(LLMUsage):
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
    raw_answer: str | None = None  # the answer as the model wrote it, before invented ids were removed
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
            return context_block(self.sources)
        parts = ["FACTS:"] + [f"- {line}" for line in self.context_lines]
        if self.excerpts:
            parts.append("\nSOURCE EXCERPTS:")
            parts += [f"[{e.chunk_id}] {e.text}" for e in self.excerpts]
        return "\n".join(parts)



# ---------------------------------------------------------------------------------------------
# Anchor matching (deterministic)
# ---------------------------------------------------------------------------------------------

_NON_WORD = re.compile(r"[^\w]+")


def _words(text: str) -> str:
    """normalize_name plus punctuation to spaces: '¿Cómo... Lovelace?' -> 'como ... lovelace'."""
    return " ".join(_NON_WORD.sub(" ", normalize_name(text)).split())


class MatchIndex:
    """The matcher's view of a catalog, built once per catalog (a graph of 10^5 entities would
    otherwise rebuild it, and scan every key, for each question).

    ``keys``: normalized key or alias -> its entities; ``by_word``: a distinctive key word -> the
    entities of the keys holding it; ``max_words``: the longest key, in words; keys and words are
    also bucketed by length so the fuzzy step only compares strings whose lengths allow the cutoff.
    """

    def __init__(self, catalog: list[dict[str, Any]]) -> None:
        keys: dict[str, list[dict[str, Any]]] = {}
        for e in catalog:
            aliases = e.get("aliases")
            for raw in [e.get("key") or e.get("name"), *(aliases if isinstance(aliases, list) else [])]:
                if not isinstance(raw, str):
                    continue
                k = _words(raw)
                if k and all(other["uid"] != e["uid"] for other in keys.get(k, ())):
                    keys.setdefault(k, []).append(e)
        self.keys = keys
        self.max_words = max((k.count(" ") + 1 for k in keys), default=0)
        # A key word can be matched alone when it is distinctive: 5+ letters, or the first word of the
        # key (a given name like "robb"); a short later word ("gris" of "gusano gris") is too common.
        by_word: dict[str, list[dict[str, Any]]] = {}
        for k, ents in keys.items():
            for i, w in enumerate(k.split()):
                if (len(w) >= 5 or (i == 0 and len(w) >= 4)) and w not in STOPWORDS:
                    by_word.setdefault(w, []).extend(ents)
        self.by_word = by_word
        self._keys_by_len = _by_length(keys)
        self._words_by_len = _by_length(by_word)

    def close_keys(self, phrase: str) -> list[str]:
        return _close(phrase, self._keys_by_len)

    def close_words(self, word: str) -> list[str]:
        return _close(word, self._words_by_len)


def _by_length(items: Iterable[str]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for item in items:
        out.setdefault(len(item), []).append(item)
    return out


def _close(term: str, by_len: dict[int, list[str]]) -> list[str]:
    """``difflib.get_close_matches(term, vocabulary, n=1, cutoff=FUZZY_CUTOFF)`` over the strings
    whose length allows the cutoff at all (ratio <= 2*min(la, lb) / (la + lb)): same answer, far
    fewer comparisons."""
    la = len(term)
    pool = [x for lb, xs in by_len.items() if lb and 2 * min(la, lb) / (la + lb) >= FUZZY_CUTOFF for x in xs]
    return difflib.get_close_matches(term, pool, n=1, cutoff=FUZZY_CUTOFF)


def match_entities(text: str, catalog: list[dict[str, Any]], source: str = "question",
                   index: MatchIndex | None = None) -> list[Match]:  # fmt: skip
    """Entities named in ``text``: exact keys, then distinctive words, then close spellings.

    ``catalog`` rows are ``{uid, key, name, type}`` with optional ``aliases`` (other names entity
    resolution merged into the entity): an alias anchors its entity like the entity's own key.
    ``index`` is ``MatchIndex(catalog)`` when the caller keeps one. Matches come in the order
    found; ambiguous words are returned with ``how="ambiguous"`` (not anchors).
    """
    idx = index if index is not None else MatchIndex(catalog)
    keys, by_word = idx.keys, idx.by_word
    q = _words(text)
    out: list[Match] = []
    consumed = [False] * len(q)

    # 1. exact: whole keys, longest first, as whole words, not overlapping an earlier match.
    # A key matches at word boundaries exactly when it equals a run of the question's words, so
    # the candidates are the question's word n-grams found in ``keys`` (not a scan of every key).
    spans = [(m.start(), m.end()) for m in re.finditer(r"\w+", q)]
    found: dict[str, list[int]] = {}
    for i in range(len(spans)):
        for j in range(i, min(len(spans), i + idx.max_words)):
            gram = q[spans[i][0] : spans[j][1]]
            if gram in keys:
                found.setdefault(gram, []).append(spans[i][0])
    for k in sorted(found, key=lambda k: (-len(k), k)):
        for start in found[k]:
            end = start + len(k)
            if any(consumed[start:end]):
                continue
            for i in range(start, end):
                consumed[i] = True
            ents = keys[k]
            out.append(Match(k, "exact", [e["uid"] for e in ents], [e["name"] for e in ents], source))
            break

    # the words left over
    tokens: list[str] = []
    for m in re.finditer(r"\w+", q):
        if not any(consumed[m.start() : m.end()]) and len(m.group()) >= 4 and m.group() not in STOPWORDS:
            tokens.append(m.group())
    used: set[str] = set()

    def add(term: str, how: str, ents: list[dict[str, Any]], score: float = 1.0) -> None:
        uniq = {e["uid"]: e for e in ents}
        if len(uniq) > MAX_AMBIGUOUS:
            how = "ambiguous"
        ordered = [uniq[u] for u in sorted(uniq)]
        out.append(Match(term, how, [e["uid"] for e in ordered], [e["name"] for e in ordered], source, score))

    # 2. partial: a word of the question is a word of a key
    for t in tokens:
        if t in by_word:
            used.add(t)
            add(t, "partial", by_word[t])

    # 3. fuzzy: close spelling of a whole key (two or three words), then of one key word
    rest = [t for t in tokens if t not in used]
    for n in (3, 2):
        for i in range(len(rest) - n + 1):
            window = rest[i : i + n]
            if any(w in used for w in window):
                continue
            phrase = " ".join(window)
            close = idx.close_keys(phrase)
            if close:
                used.update(window)
                add(phrase, "fuzzy", keys[close[0]], difflib.SequenceMatcher(None, phrase, close[0]).ratio())
    for t in rest:
        if t in used or len(t) < 5:
            continue
        close = idx.close_words(t)
        if close:
            used.add(t)
            add(t, "fuzzy", by_word[close[0]], difflib.SequenceMatcher(None, t, close[0]).ratio())
    return out


class AnchorNames(BaseModel):
    entities: list[str] = Field(default_factory=list, description="names the question is about")


#: Written out, no maxItems (bounded repetitions blow up llama.cpp grammars); cut to MAX_ANCHORS in code.
ANCHOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["entities"],
}


#: The anchor prompt without the ontology's classes; ``local_search`` lists the classes it has.
ANCHOR_PROMPT = anchor_prompt()


def find_anchors(question: str, catalog: list[dict[str, Any]], llm_names: list[str] | None = None,
                 index: MatchIndex | None = None) -> tuple[list[Anchor], list[Match]]:  # fmt: skip
    """Anchors (deduplicated, question matches first) and every match tried, for display."""
    index = index if index is not None else MatchIndex(catalog)
    matches = match_entities(question, catalog, index=index)
    for name in llm_names or []:
        found = [m for m in match_entities(name, catalog, source="llm", index=index) if m.how != "ambiguous"]
        # only a name that is (nearly) a whole key counts: an LLM name's stray word should not anchor
        found = [m for m in found if m.how in {"exact", "fuzzy"} or len(_words(name).split()) == 1]
        if not found:
            matches.append(Match(name, "unresolved", [], [], "llm", 0.0))
        matches.extend(found)
    by_uid = {e["uid"]: e for e in catalog}
    anchors: dict[str, Anchor] = {}
    for m in matches:
        if m.how in {"ambiguous", "unresolved"}:
            continue
        for uid in m.uids:
            if uid not in anchors and len(anchors) < MAX_ANCHORS:
                e = by_uid[uid]
                how = m.how if m.source == "question" else f"llm:{m.how}"
                anchors[uid] = Anchor(uid, e["name"] or e["key"] or uid, e["type"] or "", how, m.term)
    return list(anchors.values()), matches


# ---------------------------------------------------------------------------------------------
# Retrieval
# ---------------------------------------------------------------------------------------------


def _facts(rows: list[dict[str, Any]], via: str) -> list[Fact]:
    return [Fact(r["start"], r["start_name"], r["type"], r["end"], r["end_name"],
                 tuple(sorted((str(k), str(v)) for k, v in (r.get("attributes") or []))),
                 bool(r["symmetric"]), list(r["chunk_ids"] or []), int(r["dist"]), via,
                 [str(e) for e in r.get("evidence") or []]) for r in rows]  # fmt: skip


def _attribute_rows(driver: neo4j.Driver, settings: Settings, names: list[str], limit: int,
                    params: dict[str, Any]) -> list[dict[str, Any]]:
    """Facts whose attribute values name an anchor: through the full-text index ``load`` creates;
    a graph loaded before that index existed falls back to reading every relationship (slow on a big
    graph: load it again to get the index)."""
    try:
        return read_all(driver, settings, cypher.local_attribute_facts_indexed(),
                        terms=cypher.lucene_phrases(names), limit=limit, **params)
    except neo4j.exceptions.ClientError as exc:
        if "relation_attributes" not in str(exc) and "index" not in str(exc).lower():
            raise
        log.warning("no relation attribute index (load the graph again to create it); scanning every "
                       "relationship instead")
        return read_all(driver, settings, cypher.local_attribute_facts(), names=names, limit=limit, **params)


def retrieve_facts(driver: neo4j.Driver, settings: Settings, anchors: list[Anchor], hops: int, types: list[str],
                   max_facts: int, path_limit: int = PATH_LIMIT,
                   attributes: Sequence[str] = ()) -> list[Fact]:  # fmt: skip
    """The ranked, deduplicated facts around ``anchors`` (read-only session).

    ``attributes``: the ontology's relation attribute names, returned with each fact; facts one of
    whose attribute values names an anchor are retrieved too (a fact placed at an event).
    """
    uids = [a.uid for a in anchors]
    params = {"anchors": uids, "types": types, "attributes": list(attributes)}
    found = _facts(read_all(driver, settings, cypher.local_anchor_facts(), limit=max_facts * 2, **params), "path")
    if hops >= 2:
        q = cypher.local_neighborhood(hops)
        found += _facts(read_all(driver, settings, q, path_limit=path_limit, limit=max_facts * 4, **params), "path")
        names = sorted({a.name.lower() for a in anchors if len(a.name) >= 4})
        if names and attributes:
            found += _facts(_attribute_rows(driver, settings, names, max_facts, params), "attribute")
    best: dict[tuple[str, str, str, str], Fact] = {}
    for f in found:
        if f.symmetric and f.end < f.start:  # show a symmetric pair in one fixed direction
            f = Fact(f.end, f.end_name, f.type, f.start, f.start_name, f.attributes, True, f.chunk_ids, f.dist, f.via,
                     f.evidence)
        k = f.key()
        old = best.get(k)
        if old is None:
            best[k] = f
        else:
            old.dist = min(old.dist, f.dist)
            if f.via == "attribute":
                old.via = "attribute"
    anchor_set = set(uids)

    def rank(f: Fact) -> tuple[Any, ...]:
        both = f.start in anchor_set and f.end in anchor_set
        return (f.dist, not both, f.via != "attribute", -f.support, f.line)

    return sorted(best.values(), key=rank)[:max_facts]


_SENTENCE = re.compile(r"(?<=[.!?»])\s+")


def excerpts_for(driver: neo4j.Driver, settings: Settings, facts: list[Fact], anchors: list[Anchor],
                 limit: int = MAX_EXCERPTS) -> list[Excerpt]:  # fmt: skip
    """Short excerpts of the chunks behind the best facts: the sentences naming an anchor."""
    ids: list[str] = []
    for f in facts:
        for cid in f.chunk_ids:
            if cid not in ids:
                ids.append(cid)
        if len(ids) >= limit:
            break
    ids = ids[:limit]
    if not ids:
        return []
    texts = {r["id"]: r["text"] or "" for r in read_all(driver, settings, cypher.chunk_texts(), ids=ids)}
    names = [_words(a.name) for a in anchors]
    out = []
    for cid in ids:
        text = texts.get(cid, "")
        sentences = [s for s in _SENTENCE.split(text) if any(n and n in _words(s) for n in names)]
        body = " ".join(sentences) if sentences else text
        if len(body) > EXCERPT_CHARS:
            body = body[: EXCERPT_CHARS - 1].rsplit(" ", 1)[0] + "…"
        if body:
            out.append(Excerpt(cid, body))
    return out


# ---------------------------------------------------------------------------------------------
# Vector and hybrid retrieval
# ---------------------------------------------------------------------------------------------

Retrieval = Literal["graph", "vector", "hybrid"]
RETRIEVALS: tuple[str, ...] = ("graph", "vector", "hybrid")

#: Reciprocal rank fusion constant: an item at rank r (1-based) of a list scores 1 / (RRF_K + r),
#: summed over the lists that hold it. 60 is the value of Cormack, Clarke and Buettcher (SIGIR
#: 2009): it flattens the head of each list, so an item several lists agree on outranks one that a
#: single list puts first, and no list's raw scores (cosine, path distance, weights) need calibrating.
RRF_K = 60
EXPANSION_MAX_MENTIONS = 50  # an entity mentioned by more chunks is a hub: not used to expand
CHUNK_EXCERPT_CHARS = 700  # a vector/hybrid chunk in the context


def rrf(lists: dict[str, Sequence[Any]], k: int = RRF_K) -> list[tuple[Any, float, dict[str, int]]]:
    """Fuse ranked lists (name -> items, best first; an item at most once per list counts) into one
    ranking ``(item, score, {list name: rank})``, best first; ties keep first-seen order."""
    scores: dict[Any, float] = {}
    ranks: dict[Any, dict[str, int]] = {}
    for name, items in lists.items():
        seen: set[Any] = set()
        for rank, item in enumerate(items, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            ranks.setdefault(item, {})[name] = rank
    order = sorted(scores, key=lambda item: -scores[item])  # sorted() is stable: ties stay in first-seen order
    return [(item, scores[item], ranks[item]) for item in order]


@dataclass
class VectorHits:
    chunks: list[dict[str, Any]] = field(default_factory=list)  # {id, document_id, heading, text, score}
    entities: list[dict[str, Any]] = field(default_factory=list)  # {uid, name, type, score}
    expansion: list[dict[str, Any]] = field(default_factory=list)  # {id, score, shared}


def vector_status(driver: neo4j.Driver, settings: Settings) -> dict[str, int]:
    """The dimensions of the chunk and entity vector indexes that exist (missing ones left out)."""
    dims = vector_index_dimensions(driver, settings)
    return {n: dims[n] for n in (cypher.CHUNK_VECTOR_INDEX, cypher.ENTITY_VECTOR_INDEX) if n in dims}


def vector_hits(driver: neo4j.Driver, settings: Settings, vector: list[float], top_k: int,
                expand: bool = True) -> VectorHits:  # fmt: skip
    """Top-``top_k`` chunks and entities nearest to ``vector``, and (``expand``) the chunks sharing
    entities with those chunks, ranked by shared-entity weight (:func:`cypher.chunk_expansion`)."""
    hits = VectorHits()
    hits.chunks = read_all(driver, settings, cypher.vector_chunks(), index=cypher.CHUNK_VECTOR_INDEX, k=top_k,
                           vector=vector)
    hits.entities = read_all(driver, settings, cypher.vector_entities(), index=cypher.ENTITY_VECTOR_INDEX, k=top_k,
                             vector=vector)
    if expand and hits.chunks:
        hits.expansion = read_all(driver, settings, cypher.chunk_expansion(), chunk_ids=[c["id"] for c in hits.chunks],
                                  max_mentions=EXPANSION_MAX_MENTIONS, limit=top_k * 2)
    return hits


def _excerpt(text: str, names: list[str], limit: int) -> str:
    """The sentences of ``text`` naming one of ``names`` (all of it when none does), cut at ``limit``."""
    sentences = [s for s in _SENTENCE.split(text) if any(n and n in _words(s) for n in names)]
    body = " ".join(sentences) if sentences else text
    body = " ".join(body.split())
    if len(body) > limit:
        body = body[: limit - 1].rsplit(" ", 1)[0] + "…"
    return body


def _fact_rank_by(facts: list[Fact], rank_of: dict[str, int], attr: str) -> list[tuple[Any, ...]]:
    """Fact keys ordered by the best rank (in ``rank_of``) of their ends (``attr="ends"``) or of their
    chunks (``attr="chunks"``); facts with none left out; ties keep the facts' order."""
    scored = []
    for i, f in enumerate(facts):
        keys = [f.start, f.end] if attr == "ends" else f.chunk_ids
        best = min((rank_of[k] for k in keys if k in rank_of), default=None)
        if best is not None:
            scored.append((best, i, f.key()))
    return [key for _, _, key in sorted(scored)]


def _fuse(graph_facts: list[Fact], vector_facts: list[Fact], hits: VectorHits, max_facts: int,
          mode: str) -> tuple[list[Fact], list[RankedChunk]]:  # fmt: skip
    """One RRF ranking over facts and chunks (see module docstring); returns the facts to keep
    (at most ``max_facts``) and every chunk of the fused ranking, best first.

    ``graph_facts``: the neighbourhood of the name-matched anchors (hybrid only), ranked as in
    graph mode; ``vector_facts``: the one-hop facts of the vector anchors.
    """
    unique: dict[tuple[Any, ...], Fact] = {}
    for f in [*graph_facts, *vector_facts]:
        unique.setdefault(f.key(), f)  # a fact both lists hold: the graph one (nearest dist) is kept
    facts = list(unique.values())
    chunk_rank = {c["id"]: i for i, c in enumerate(hits.chunks, start=1)}
    entity_rank = {e["uid"]: i for i, e in enumerate(hits.entities, start=1)}
    lists: dict[str, list[Any]] = {
        "vector_chunks": [("C", c["id"]) for c in hits.chunks],
        "vector_entity_facts": [("F", k) for k in _fact_rank_by(facts, entity_rank, "ends")],
        "vector_chunk_facts": [("F", k) for k in _fact_rank_by(facts, chunk_rank, "chunks")],
    }
    if mode == "hybrid":
        lists["graph_facts"] = [("F", f.key()) for f in graph_facts]
        # One chunk list per retriever, so neither side votes twice in the fusion: the graph side's
        # chunks are those behind its facts, then the chunks the expansion through shared entities found.
        behind: list[Any] = []
        for f in graph_facts:
            behind += [("C", cid) for cid in f.chunk_ids]
        lists["graph_chunks"] = behind + [("C", c["id"]) for c in hits.expansion]
    fused = rrf(lists)
    by_key = {f.key(): f for f in facts}
    kept_facts = [by_key[key] for (kind, key), _, _ in fused if kind == "F"][:max_facts]
    chunks = [RankedChunk(key, score, ranks) for (kind, key), score, ranks in fused if kind == "C"]
    return kept_facts, chunks


def _vector_anchors(hits: VectorHits, taken: set[str]) -> list[Anchor]:
    return [Anchor(e["uid"], e["name"] or e["uid"], e["type"] or "", "vector", "", float(e["score"]))
            for e in hits.entities if e["uid"] not in taken]


# ---------------------------------------------------------------------------------------------
# Sources and citations
# ---------------------------------------------------------------------------------------------


def _chunk_meta(driver: neo4j.Driver, settings: Settings, ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    wanted = sorted(set(ids))
    if not wanted:
        return {}
    return {r["id"]: r for r in read_all(driver, settings, cypher.chunk_sources(), ids=wanted)}


def build_sources(facts: list[Fact], excerpts: list[Excerpt], meta: dict[str, dict[str, Any]],
                  anchors: list[Anchor]) -> list[Citation]:  # fmt: skip
    """The numbered context (facts F1.., then excerpts C1..) with document, chunk and evidence."""
    out: list[Citation] = []
    for f in facts:
        chunk = f.chunk_ids[0] if f.chunk_ids else None
        info = meta.get(chunk or "", {})
        evidence = " ".join(f.evidence[0].split())[:300] if f.evidence else None
        out.append(Citation(id="F0", kind="fact", text=f.line, chunk_id=chunk, document_id=info.get("document_id"),
                            heading=info.get("heading"), evidence=evidence, entities=[f.start_name, f.end_name]))
    names = [a.name for a in anchors]
    for e in excerpts:
        info = meta.get(e.chunk_id, {})
        low = _words(e.text)
        out.append(Citation(id="C0", kind="chunk", text=e.text, chunk_id=e.chunk_id,
                            document_id=e.document_id or info.get("document_id"),
                            heading=e.heading or info.get("heading"),
                            entities=[n for n in names if _words(n) in low]))
    return number_sources(out)


# ---------------------------------------------------------------------------------------------
# Entity catalog
# ---------------------------------------------------------------------------------------------

_CATALOGS: dict[tuple[int, str, str], tuple[float, Any, list[dict[str, Any]], MatchIndex]] = {}
_CATALOGS_LOCK = threading.Lock()


def entity_catalog(driver: neo4j.Driver, settings: Settings) -> tuple[list[dict[str, Any]], MatchIndex]:
    """The entity catalog and its :class:`MatchIndex`.

    Read for every question unless ``settings.local_catalog_cache_s`` > 0: then a process reuses
    the one it read for that many seconds, as long as the graph's entity count and document hashes
    (one cheap query) are unchanged. A graph of 10^5 entities takes seconds to read and index;
    a service answering many questions should set it.
    """
    ttl = settings.local_catalog_cache_s
    if ttl <= 0:
        catalog = read_all(driver, settings, cypher.search_entity_catalog())
        return catalog, MatchIndex(catalog)
    key = (id(driver), settings.neo4j_uri, settings.neo4j_database)
    rows = read_all(driver, settings, cypher.search_catalog_fingerprint())
    stamp = (rows[0]["entities"], repr(rows[0]["documents"])) if rows else None
    now = time.monotonic()
    with _CATALOGS_LOCK:
        cached = _CATALOGS.get(key)
        if cached is not None and cached[1] == stamp and now - cached[0] <= ttl:
            return cached[2], cached[3]
    catalog = read_all(driver, settings, cypher.search_entity_catalog())
    index = MatchIndex(catalog)
    with _CATALOGS_LOCK:
        _CATALOGS[key] = (now, stamp, catalog, index)
    return catalog, index


# ---------------------------------------------------------------------------------------------
# Local search
# ---------------------------------------------------------------------------------------------

#: The answer prompt in its default form (language of the question); see ``prompts.local_answer_prompt``.
ANSWER_PROMPT = local_answer_prompt()


def local_search(
    driver: neo4j.Driver,
    settings: Settings,
    question: str,
    *,
    chat: BaseChatModel | None = None,
    hops: int | None = None,
    max_facts: int | None = None,
    answer: bool = True,
    llm_anchors: bool = True,
    excerpts: bool = True,
    ontology: Any = None,
    path_limit: int = PATH_LIMIT,
    language: str | None = None,
    retrieval: Retrieval | None = None,
    embedder: Embeddings | None = None,
    top_k: int | None = None,
) -> LocalResult:
    """Answer ``question`` from the neighbourhood of the entities it names (see module docstring).

    ``answer=False`` retrieves only (no LLM at all). ``chat`` defaults to ``get_chat_model(settings)``,
    built only when a call is needed. ``language`` forces the answer's language (``"English"``);
    None answers in the language of the question. ``retrieval`` is ``graph``, ``vector`` or
    ``hybrid`` (None: ``settings.local_retrieval``); ``embedder`` embeds the question (default: the
    process-wide :func:`~graphrag_got.llm.embeddings.shared_embedder`); ``top_k`` vector hits per index
    (default ``settings.local_top_k``).
    """
    t_start = time.perf_counter()
    clock = _Clock()
    hops = settings.local_hops if hops is None else hops
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= cypher.MAX_HOPS:
        raise SearchError(f"--hops must be an integer from 1 to {cypher.MAX_HOPS}, got {hops!r}")
    max_facts = settings.local_max_facts if max_facts is None else max_facts
    if max_facts < 1:
        raise SearchError(f"max_facts must be at least 1, got {max_facts}")
    mode = settings.local_retrieval if retrieval is None else retrieval
    if mode not in RETRIEVALS:
        raise SearchError(f"retrieval must be one of {', '.join(RETRIEVALS)}, got {mode!r}")
    top_k = settings.local_top_k if top_k is None else top_k
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= 200:
        raise SearchError(f"top_k must be an integer from 1 to 200, got {top_k!r}")
    if not question.strip():
        raise SearchError("the question is empty")
    onto = _load_ontology(settings, ontology)
    types = relation_types(onto)
    res = LocalResult(question=question, hops=hops, retrieval=mode, timings=clock.timings)
    try:
        return _search(driver, settings, res, onto, types, chat=chat, max_facts=max_facts, answer=answer,
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


def _search(driver: neo4j.Driver, settings: Settings, res: LocalResult, onto: Any, types: list[str], *,
            chat: BaseChatModel | None, max_facts: int, answer: bool, llm_anchors: bool, excerpts: bool,
            path_limit: int, language: str | None, embedder: Embeddings | None, top_k: int,
            clock: _Clock) -> LocalResult:  # fmt: skip
    question, hops, mode = res.question, res.hops, res.retrieval
    catalog, index = entity_catalog(driver, settings)
    if not catalog:
        raise SearchError("the graph has no entities: run `graphrag-got load` first")
    clock.lap("catalog")

    # vector hits first: whether they exist decides the mode actually used
    hits = VectorHits()
    if mode != "graph":
        dims = vector_status(driver, settings)
        problem = None
        if len(dims) < 2:
            problem = ("the graph has no vector index (embeddings off, or never computed): run "
                       "`graphrag-got load` with GRAPHRAG_EMBEDDINGS=1")
        else:
            vector = (embedder or shared_embedder(settings)).embed_query(question)
            clock.lap("embed")
            if any(d != len(vector) for d in dims.values()):
                problem = (f"the vector indexes have {sorted(set(dims.values()))} dimensions but the embedding model "
                           f"gives {len(vector)} (the model changed): run `graphrag-got load` again to re-embed")
            else:
                hits = vector_hits(driver, settings, vector, top_k, expand=mode == "hybrid")
                clock.lap("vector")
        if problem is not None:
            if mode == "vector":
                raise SearchError(f"vector retrieval is not possible: {problem}")
            log.warning("hybrid retrieval falls back to graph: %s", problem)
            res.warnings.append(f"hybrid retrieval fell back to graph: {problem}")
            res.vector_unavailable = True
            res.retrieval = mode = "graph"

    llm_names: list[str] = []
    if answer and llm_anchors and mode != "vector":
        chat = chat or get_chat_model(settings)
        try:
            obj, attempt = complete_json(chat, anchor_prompt(list(onto.classes)), f"QUESTION: {question}",
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
    res.anchors += _vector_anchors(hits, {a.uid for a in res.anchors})
    clock.lap("anchors")
    if not res.anchors and not hits.chunks:
        res.no_anchor = True
        res.answer = NO_ANCHOR_ANSWER
        return res

    attributes = list(onto.relation_attributes)
    if mode == "graph":
        res.facts = retrieve_facts(driver, settings, res.anchors, hops, types, max_facts, path_limit,
                                   attributes=attributes)
        clock.lap("facts")
        if excerpts and res.facts:
            res.excerpts = excerpts_for(driver, settings, res.facts, res.anchors)
        seen: list[str] = []
        for f in res.facts:
            seen += [c for c in f.chunk_ids if c not in seen]
        res.ranked_chunks = [RankedChunk(cid, 0.0, {"fact_chunks": i}) for i, cid in enumerate(seen, start=1)]
    else:
        # name anchors: their neighbourhood as in graph mode; vector anchors (near in meaning, not
        # named): their own facts only, one hop, so a loose hit cannot pull in a whole region
        named = [a for a in res.anchors if a.how != "vector"]
        near = [a for a in res.anchors if a.how == "vector"]
        graph_facts = retrieve_facts(driver, settings, named, hops, types, max_facts * 2, path_limit,
                                     attributes=attributes) if named else []  # fmt: skip
        vector_facts = retrieve_facts(driver, settings, near, 1, types, max_facts * 2, path_limit,
                                      attributes=attributes) if near else []  # fmt: skip
        clock.lap("facts")
        res.facts, res.ranked_chunks = _fuse(graph_facts, vector_facts, hits, max_facts, mode)
        if excerpts and settings.local_max_chunks:
            top = res.ranked_chunks[: settings.local_max_chunks]
            known = {c["id"]: c for c in hits.chunks}
            meta = _chunk_meta(driver, settings, [c.chunk_id for c in top if c.chunk_id not in known])
            names = [_words(a.name) for a in res.anchors if a.how != "vector"]
            for rc in top:
                row = known.get(rc.chunk_id) or meta.get(rc.chunk_id)
                if row and (row.get("text") or "").strip():
                    res.excerpts.append(Excerpt(rc.chunk_id, _excerpt(row["text"], names, CHUNK_EXCERPT_CHARS),
                                                row.get("document_id"), row.get("heading"), round(rc.score, 6),
                                                sorted(rc.ranks)))
    clock.lap("fuse" if mode != "graph" else "excerpts")
    meta = _chunk_meta(driver, settings, [f.chunk_ids[0] for f in res.facts if f.chunk_ids] +
                       [e.chunk_id for e in res.excerpts if e.document_id is None])
    res.sources = build_sources(res.facts, res.excerpts, meta, res.anchors)
    clock.lap("sources")
    if not answer:
        return res
    if not res.facts and not res.excerpts:
        res.answer = NO_FACTS_ANSWER.format(names=", ".join(a.name for a in res.anchors) or "the question")
        return res
    chat = chat or get_chat_model(settings)
    attempt = Attempt()
    user = (f"QUESTION: {question}\n\n{res.context_text()}\n\n"
            "Answer the question from this context only, citing the ids of the sources after each claim.")
    try:
        res.raw_answer = complete_text(chat, local_answer_prompt(language), user, attempt,
                                       max_tokens=ANSWER_MAX_TOKENS)
    finally:
        res.count(attempt, 1)
        clock.lap("answer")
    resolved = resolve_citations(res.raw_answer, res.sources)
    res.answer = resolved.answer
    res.citations = resolved.citations
    res.invented_citations = resolved.invented_count
    if resolved.invented:
        log.info("local answer cited %d id(s) not in its context, removed: %s", resolved.invented_count,
                 ", ".join(resolved.invented))
    return res
