"""Anchors of a local question: the graph entities it names, found by a deterministic matcher.

The matcher looks for graph entities in the normalized question: the whole normalized key (or
alias) as words ("ada lovelace"), then one distinctive word of a key ("lovelace" -> Ada Lovelace),
then close spellings (``difflib``'s ratio, prefiltered by ``rapidfuzz``: "lovelase"). A word that
fits more than ``MAX_AMBIGUOUS`` entities (a family name many share) is reported as ambiguous and
not used. Function words of the
shipped languages (:data:`STOPWORDS`) never anchor alone. Names an LLM gives for the question
(:class:`AnchorNames`) are resolved against the graph the same way (:func:`find_anchors`).

The entity catalog the matcher reads (:func:`entity_catalog`) and its :class:`MatchIndex` are
built once per catalog, and optionally cached per process (``GRAPHRAG_LOCAL_CATALOG_CACHE_S``).
"""

from __future__ import annotations

import difflib
import re
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from typing import Any

import neo4j
import numpy as np
from pydantic import BaseModel, Field
from rapidfuzz import fuzz as rf_fuzz
from rapidfuzz import process as rf_process

from graphrag_got.common.normalize import normalize_name
from graphrag_got.config import Neo4jSettings, SearchSettings
from graphrag_got.errors import SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.prompts import anchor_prompt
from graphrag_got.search import cypher

MAX_AMBIGUOUS = 3  # a partial/fuzzy word matching more entities than this is not an anchor
MAX_ANCHORS = 10
FUZZY_CUTOFF = 0.82
ANCHOR_MAX_TOKENS = 150  # a short list of names

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


# ---------------------------------------------------------------------------------------------
# Anchor matching (deterministic)
# ---------------------------------------------------------------------------------------------

_NON_WORD = re.compile(r"[^\w]+")


def normalize_words(text: str) -> str:
    """normalize_name plus punctuation to spaces: '¿Cómo... Lovelace?' -> 'como ... lovelace'."""
    return " ".join(_NON_WORD.sub(" ", normalize_name(text)).split())


class MatchIndex:
    """The matcher's view of a catalog, built once per catalog (a graph of 10^5 entities would
    otherwise rebuild it, and scan every key, for each question).

    ``keys``: normalized key or alias -> its entities; ``by_uid``: uid -> catalog row; ``by_word``: a distinctive key word -> the
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
                k = normalize_words(raw)
                if k and all(other["uid"] != e["uid"] for other in keys.get(k, ())):
                    keys.setdefault(k, []).append(e)
        self.keys = keys
        self.by_uid = {e["uid"]: e for e in catalog}
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

    def close_keys(self, phrase: str, n: int = 1) -> list[str]:
        return _close_many([phrase], self._keys_by_len, n)[phrase]

    def close_words(self, word: str) -> list[str]:
        return _close_many([word], self._words_by_len)[word]

    def close_keys_many(self, phrases: Iterable[str]) -> dict[str, list[str]]:
        """:meth:`close_keys` of each phrase (n=1), compared with the keys in one pass."""
        return _close_many(phrases, self._keys_by_len)

    def close_words_many(self, words: Iterable[str]) -> dict[str, list[str]]:
        return _close_many(words, self._words_by_len)


def _by_length(items: Iterable[str]) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for item in items:
        out.setdefault(len(item), []).append(item)
    return out


def _close_many(terms: Iterable[str], by_len: dict[int, list[str]], n: int = 1) -> dict[str, list[str]]:
    """``difflib.get_close_matches(term, vocabulary, n, cutoff=FUZZY_CUTOFF)`` of each term, same answers, fast.

    difflib compares a term with every string in Python (~400 ms per question over 10^5 keys), so two
    filters run first: the length bound (ratio <= 2*min(la, lb) / (la + lb)) and rapidfuzz's ``fuzz.ratio``
    (C, 2*LCS / (la + lb)), which is never below difflib's ratio because difflib's matching blocks form a
    common subsequence. Only the few strings that pass both get difflib's ratio, so the matches, their
    order and the tie-break (larger string first) are difflib's own. The terms of one question are scored
    together, one ``cdist`` per length bucket (a call per term and bucket cost ~50 ms a question over
    10^5 keys; rapidfuzz scores many queries against a list faster than one query at a time).
    """
    wanted = sorted(set(terms))
    survivors: dict[str, list[str]] = {t: [] for t in wanted}
    for lb, xs in by_len.items():
        fits = [t for t in wanted if t and lb and 2 * min(len(t), lb) / (len(t) + lb) >= FUZZY_CUTOFF]
        if not fits:
            continue
        scores = rf_process.cdist(fits, xs, scorer=rf_fuzz.ratio, score_cutoff=FUZZY_CUTOFF * 100 - 1e-6,
                                  dtype=np.float32)  # below the cutoff: 0
        for t, row in zip(fits, scores):
            survivors[t].extend(xs[j] for j in np.flatnonzero(row))
    return {t: difflib.get_close_matches(t, found, n=n, cutoff=FUZZY_CUTOFF) if found else []
            for t, found in survivors.items()}


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
    q = normalize_words(text)
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

    # 3. fuzzy: close spelling of a whole key (two or three words), then of one key word; every phrase and
    # word this may look up is scored against the keys at once (the order of use below decides, as before)
    rest = [t for t in tokens if t not in used]
    windows = [rest[i : i + n] for n in (3, 2) for i in range(len(rest) - n + 1)]
    close_keys = idx.close_keys_many(" ".join(w) for w in windows) if windows else {}
    close_words = idx.close_words_many(t for t in rest if len(t) >= 5)
    for window in windows:
        if any(w in used for w in window):
            continue
        phrase = " ".join(window)
        close = close_keys[phrase]
        if close:
            used.update(window)
            add(phrase, "fuzzy", keys[close[0]], difflib.SequenceMatcher(None, phrase, close[0]).ratio())
    for t in rest:
        if t in used or len(t) < 5:
            continue
        close = close_words[t]
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
        found = [m for m in found if m.how in {"exact", "fuzzy"} or len(normalize_words(name).split()) == 1]
        if not found:
            matches.append(Match(name, "unresolved", [], [], "llm", 0.0))
        matches.extend(found)
    by_uid = index.by_uid  # built with the index: a dict over 10^5 entities per question cost ~10 ms
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
# Entity catalog
# ---------------------------------------------------------------------------------------------

_CATALOGS: dict[tuple[int, str, str], tuple[float, Any, list[dict[str, Any]], MatchIndex]] = {}
_CATALOGS_LOCK = threading.Lock()


def suggest_entities(name: str, catalog: list[dict[str, Any]], index: MatchIndex | None = None,
                     n: int = 5) -> list[str]:
    """Display names of the entities closest to ``name`` (a name that found nothing exactly), by the
    matcher that anchors questions: its matches within ``name`` first, then whole keys and aliases
    spelled closely ("Jon Snoww" -> "Jon Snow", where no single word of it is distinctive)."""
    idx = index if index is not None else MatchIndex(catalog)
    out: list[str] = []
    for match in match_entities(name, catalog, source="lookup", index=idx):
        out.extend(found for found in match.names if found not in out)
    phrase = normalize_words(name)
    if phrase:
        for key in idx.close_keys(phrase, n):
            out.extend(e["name"] for e in idx.keys[key] if e["name"] not in out)
    return out[:n]


def entity_catalog(driver: neo4j.Driver, db: Neo4jSettings, *,
                   search: SearchSettings) -> tuple[list[dict[str, Any]], MatchIndex]:
    """The entity catalog and its :class:`MatchIndex`.

    Read for every question unless ``search.local_catalog_cache_s`` > 0: then a process reuses
    the one it read for that many seconds, as long as the graph's entity count and document hashes
    (one cheap query) are unchanged. A graph of 10^5 entities takes seconds to read and index;
    a service answering many questions should set it.
    """
    ttl = search.local_catalog_cache_s
    if ttl <= 0:
        catalog = read_all(driver, db, cypher.search_entity_catalog())
        return catalog, MatchIndex(catalog)
    key = (id(driver), db.uri, db.database)
    rows = read_all(driver, db, cypher.search_catalog_fingerprint())
    stamp = (rows[0]["entities"], repr(rows[0]["documents"])) if rows else None
    now = time.monotonic()
    with _CATALOGS_LOCK:
        cached = _CATALOGS.get(key)
        if cached is not None and cached[1] == stamp and now - cached[0] <= ttl:
            return cached[2], cached[3]
    catalog = read_all(driver, db, cypher.search_entity_catalog())
    index = MatchIndex(catalog)
    with _CATALOGS_LOCK:
        _CATALOGS[key] = (now, stamp, catalog, index)
    return catalog, index


__all__ = [
    "ANCHOR_PROMPT", "ANCHOR_SCHEMA", "Anchor", "AnchorNames", "Match", "MatchIndex", "STOPWORDS",
    "entity_catalog", "find_anchors", "load_stopwords", "match_entities", "normalize_words", "suggest_entities"
]  # fmt: skip
