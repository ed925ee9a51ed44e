"""Local questions: find the entities a question is about, read their neighbourhood, answer from it.

Steps of :func:`local_search`:

1. Anchors. A deterministic matcher (always) looks for graph entities in the normalized question:
   the whole normalized key as words ("jon snow"), then one distinctive word of a key
   ("daenerys" -> Daenerys Targaryen), then close spellings (``difflib``: "daeneris"). A word that
   fits more than ``MAX_AMBIGUOUS`` entities ("stark") is reported as ambiguous and not used.
   When an answer is wanted, the LLM is also asked for the names the question is about
   (``complete_json``, a list of names) and each name is resolved against the graph the same way,
   which catches aliases the matcher cannot see. With ``answer=False`` (CLI ``--no-answer``) only
   the deterministic matcher runs, so retrieval works and is testable without any model.
2. Facts. Ontology relations on paths of 1..hops from the anchors (read-only session,
   variable-length Cypher path whose relationship types are restricted to the ontology's, the hop
   bound a validated integer literal, at most ``path_limit`` paths); plus, from 2 hops on,
   relations whose ``momento`` names an anchor ("en la Boda Roja" for the event Boda Roja).
   A symmetric relation (stored both ways) appears once. Ranking: nearest first, then facts
   joining two anchors, then momento hits, then most supported (number of chunks).
3. Context: one line per fact, plus short excerpts of the chunks behind the best facts.
4. Answer (``complete_text``) from that context only. No anchor, or no fact: a fixed answer
   saying so, and the LLM is not asked.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

import neo4j
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from .. import cypher
from ..communities import _load_ontology, fact_line, relation_types
from ..graphdb import read_all
from ..config import Settings
from ..errors import LLMError, SearchError
from ..llm import Attempt, LLMOutputError, LLMUsage, complete_json, complete_text, get_chat_model
from ..normalize import normalize_name

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
    "Use the name of a character, house, place, organization or event as the corpus writes it."
)
NO_FACTS_ANSWER = "The graph has no relation around {names}: not enough context to answer."

# Function words and question words (Spanish and English) never used as partial/fuzzy anchors.
STOPWORDS = frozenset("""
como cuando donde quien quienes cual cuales cuanto cuantos porque para sobre entre desde hasta tras
durante contra segun sino pero este esta estos estas ese esa esos esas eso esto aquel aquella
tiene tienen tenia hizo hace hacen hacia paso pasa pasaron fueron fue era eran estan estaba sido
son ser hay habia conocieron conocio conoce conocen relacion relaciona relacionan quien
todos todas cada otro otra otros otras mismo misma algo alguien nada nunca siempre tambien
what when where which whom whose about from that this there their they have does did were with
into after before between
""".split())


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
    how: str  # exact | partial | fuzzy (prefixed "llm:" when found through the LLM's names)
    term: str


@dataclass
class Fact:
    start: str
    start_name: str
    type: str
    end: str
    end_name: str
    momento: str
    symmetric: bool
    chunk_ids: list[str]
    dist: int
    via: str  # "path" or "momento"

    @property
    def support(self) -> int:
        return len(self.chunk_ids)

    @property
    def line(self) -> str:
        return fact_line(self.start_name, self.type, self.end_name, self.momento)

    def key(self) -> tuple[str, str, str, str]:
        a, b = (self.start, self.end)
        if self.symmetric and b < a:
            a, b = b, a
        return (a, self.type, b, self.momento)


@dataclass
class Excerpt:
    chunk_id: str
    text: str


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

    @property
    def context_lines(self) -> list[str]:
        return [f.line for f in self.facts]

    def context_text(self) -> str:
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
    """normalize_name plus punctuation to spaces: '¿Cómo... Daenerys?' -> 'como ... daenerys'."""
    return " ".join(_NON_WORD.sub(" ", normalize_name(text)).split())


def match_entities(text: str, catalog: list[dict[str, Any]], source: str = "question") -> list[Match]:
    """Entities named in ``text``: exact keys, then distinctive words, then close spellings.

    ``catalog`` rows are ``{uid, key, name, type}``. Matches come in the order found; ambiguous
    words are returned with ``how="ambiguous"`` (not anchors).
    """
    q = _words(text)
    keys: dict[str, list[dict[str, Any]]] = {}
    for e in catalog:
        raw = e.get("key") or e.get("name")
        if not isinstance(raw, str):
            continue
        k = _words(raw)
        if k:
            keys.setdefault(k, []).append(e)
    out: list[Match] = []
    consumed = [False] * len(q)

    # 1. exact: whole keys, longest first, as whole words, not overlapping an earlier match
    for k in sorted(keys, key=lambda k: (-len(k), k)):
        for m in re.finditer(rf"(?<!\w){re.escape(k)}(?!\w)", q):
            if any(consumed[m.start() : m.end()]):
                continue
            for i in range(m.start(), m.end()):
                consumed[i] = True
            ents = keys[k]
            out.append(Match(k, "exact", [e["uid"] for e in ents], [e["name"] for e in ents], source))
            break

    # the words left over
    tokens: list[str] = []
    for m in re.finditer(r"\w+", q):
        if not any(consumed[m.start() : m.end()]) and len(m.group()) >= 4 and m.group() not in STOPWORDS:
            tokens.append(m.group())
    # A key word can be matched alone when it is distinctive: 5+ letters, or the first word of the
    # key (a given name like "robb"); a short later word ("gris" of "gusano gris") is too common.
    by_word: dict[str, list[dict[str, Any]]] = {}
    for k, ents in keys.items():
        for i, w in enumerate(k.split()):
            if (len(w) >= 5 or (i == 0 and len(w) >= 4)) and w not in STOPWORDS:
                by_word.setdefault(w, []).extend(ents)
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
    vocab_keys = list(keys)
    for n in (3, 2):
        for i in range(len(rest) - n + 1):
            window = rest[i : i + n]
            if any(w in used for w in window):
                continue
            phrase = " ".join(window)
            close = difflib.get_close_matches(phrase, vocab_keys, n=1, cutoff=FUZZY_CUTOFF)
            if close:
                used.update(window)
                add(phrase, "fuzzy", keys[close[0]], difflib.SequenceMatcher(None, phrase, close[0]).ratio())
    vocab_words = sorted(by_word)
    for t in rest:
        if t in used or len(t) < 5:
            continue
        close = difflib.get_close_matches(t, vocab_words, n=1, cutoff=FUZZY_CUTOFF)
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


ANCHOR_PROMPT = (
    "You read a question about a knowledge graph and list the named things it is about: characters, "
    "houses, places, organizations, events. Write each name in full as a text would (e.g. 'Jon Snow', "
    "'Casa Stark', 'Boda Roja'); resolve nicknames when you know them. No generic words. "
    'Answer with only a JSON object: {"entities": ["...", "..."]}.'
)


def find_anchors(question: str, catalog: list[dict[str, Any]], llm_names: list[str] | None = None
                 ) -> tuple[list[Anchor], list[Match]]:  # fmt: skip
    """Anchors (deduplicated, question matches first) and every match tried, for display."""
    matches = match_entities(question, catalog)
    for name in llm_names or []:
        found = [m for m in match_entities(name, catalog, source="llm") if m.how != "ambiguous"]
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
    return [Fact(r["start"], r["start_name"], r["type"], r["end"], r["end_name"], r["momento"] or "",
                 bool(r["symmetric"]), list(r["chunk_ids"] or []), int(r["dist"]), via) for r in rows]  # fmt: skip


def retrieve_facts(driver: neo4j.Driver, settings: Settings, anchors: list[Anchor], hops: int, types: list[str],
                   max_facts: int, path_limit: int = PATH_LIMIT) -> list[Fact]:  # fmt: skip
    """The ranked, deduplicated facts around ``anchors`` (read-only session)."""
    uids = [a.uid for a in anchors]
    params = {"anchors": uids, "types": types}
    found = _facts(read_all(driver, settings, cypher.local_direct_facts(), limit=max_facts * 2, **params), "path")
    if hops >= 2:
        q = cypher.local_neighborhood(hops)
        found += _facts(read_all(driver, settings, q, path_limit=path_limit, limit=max_facts * 4, **params), "path")
        names = sorted({a.name.lower() for a in anchors if len(a.name) >= 4})
        if names:
            rows = read_all(driver, settings, cypher.local_momento_facts(), types=types, names=names, limit=max_facts)
            found += _facts(rows, "momento")
    best: dict[tuple[str, str, str, str], Fact] = {}
    for f in found:
        if f.symmetric and f.end < f.start:  # show a symmetric pair in one fixed direction
            f = Fact(f.end, f.end_name, f.type, f.start, f.start_name, f.momento, True, f.chunk_ids, f.dist, f.via)
        k = f.key()
        old = best.get(k)
        if old is None:
            best[k] = f
        else:
            old.dist = min(old.dist, f.dist)
            if f.via == "momento":
                old.via = "momento"
    anchor_set = set(uids)

    def rank(f: Fact) -> tuple[Any, ...]:
        both = f.start in anchor_set and f.end in anchor_set
        return (f.dist, not both, f.via != "momento", -f.support, f.line)

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


ANSWER_PROMPT = (
    "You answer questions about a story using ONLY the facts and source excerpts given (taken from a "
    "knowledge graph). Do not use outside knowledge. If they are not enough to answer, say plainly "
    "that the graph does not contain enough information, and say what it does contain. "
    "Answer in the language of the question, in a few sentences."
)


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
) -> LocalResult:
    """Answer ``question`` from the neighbourhood of the entities it names (see module docstring).

    ``answer=False`` retrieves only (no LLM at all). ``chat`` defaults to ``get_chat_model(settings)``,
    built only when a call is needed.
    """
    hops = settings.local_hops if hops is None else hops
    if isinstance(hops, bool) or not isinstance(hops, int) or not 1 <= hops <= cypher.MAX_HOPS:
        raise SearchError(f"--hops must be an integer from 1 to {cypher.MAX_HOPS}, got {hops!r}")
    max_facts = settings.local_max_facts if max_facts is None else max_facts
    if max_facts < 1:
        raise SearchError(f"max_facts must be at least 1, got {max_facts}")
    if not question.strip():
        raise SearchError("the question is empty")
    onto = _load_ontology(settings, ontology)
    types = relation_types(onto)
    res = LocalResult(question=question, hops=hops)
    catalog = read_all(driver, settings, cypher.search_entity_catalog())
    if not catalog:
        raise SearchError("the graph has no entities: run `graphrag-got load` first")

    llm_names: list[str] = []
    if answer and llm_anchors:
        chat = chat or get_chat_model(settings)
        try:
            obj, attempt = complete_json(chat, ANCHOR_PROMPT, f"QUESTION: {question}", AnchorNames, schema=ANCHOR_SCHEMA,
                                         max_tokens=ANCHOR_MAX_TOKENS)
            res.count(attempt, len(attempt.raw_responses))
            llm_names = [n for n in obj.entities if isinstance(n, str) and n.strip()][:MAX_ANCHORS]
        except LLMOutputError as exc:
            res.llm_calls += len(exc.raw_responses)
            res.llm_errors.append(f"anchor extraction: {exc}")
        except LLMError as exc:
            res.llm_calls += 1
            res.llm_errors.append(f"anchor extraction: {exc}")
    res.anchors, res.matches = find_anchors(question, catalog, llm_names)
    if not res.anchors:
        res.no_anchor = True
        res.answer = NO_ANCHOR_ANSWER
        return res

    res.facts = retrieve_facts(driver, settings, res.anchors, hops, types, max_facts, path_limit)
    if excerpts and res.facts:
        res.excerpts = excerpts_for(driver, settings, res.facts, res.anchors)
    if not answer:
        return res
    if not res.facts:
        res.answer = NO_FACTS_ANSWER.format(names=", ".join(a.name for a in res.anchors))
        return res
    chat = chat or get_chat_model(settings)
    attempt = Attempt()
    user = f"QUESTION: {question}\n\n{res.context_text()}\n\nAnswer the question from this context only."
    try:
        res.answer = complete_text(chat, ANSWER_PROMPT, user, attempt, max_tokens=ANSWER_MAX_TOKENS)
    finally:
        res.count(attempt, 1)
    return res


