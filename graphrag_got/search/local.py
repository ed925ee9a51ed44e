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
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
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
from ..prompts import anchor_prompt, local_answer_prompt

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
    how: str  # exact | partial | fuzzy (prefixed "llm:" when found through the LLM's names)
    term: str


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
        return [f.context_line for f in self.facts]

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
    """normalize_name plus punctuation to spaces: '¿Cómo... Lovelace?' -> 'como ... lovelace'."""
    return " ".join(_NON_WORD.sub(" ", normalize_name(text)).split())


def match_entities(text: str, catalog: list[dict[str, Any]], source: str = "question") -> list[Match]:
    """Entities named in ``text``: exact keys, then distinctive words, then close spellings.

    ``catalog`` rows are ``{uid, key, name, type}`` with optional ``aliases`` (other names entity
    resolution merged into the entity): an alias anchors its entity like the entity's own key.
    Matches come in the order found; ambiguous words are returned with ``how="ambiguous"`` (not anchors).
    """
    q = _words(text)
    keys: dict[str, list[dict[str, Any]]] = {}
    for e in catalog:
        aliases = e.get("aliases")
        for raw in [e.get("key") or e.get("name"), *(aliases if isinstance(aliases, list) else [])]:
            if not isinstance(raw, str):
                continue
            k = _words(raw)
            if k and all(other["uid"] != e["uid"] for other in keys.get(k, ())):
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


#: The anchor prompt without the ontology's classes; ``local_search`` lists the classes it has.
ANCHOR_PROMPT = anchor_prompt()


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
    return [Fact(r["start"], r["start_name"], r["type"], r["end"], r["end_name"],
                 tuple(sorted((str(k), str(v)) for k, v in (r.get("attributes") or []))),
                 bool(r["symmetric"]), list(r["chunk_ids"] or []), int(r["dist"]), via,
                 [str(e) for e in r.get("evidence") or []]) for r in rows]  # fmt: skip


def retrieve_facts(driver: neo4j.Driver, settings: Settings, anchors: list[Anchor], hops: int, types: list[str],
                   max_facts: int, path_limit: int = PATH_LIMIT,
                   attributes: Sequence[str] = ()) -> list[Fact]:  # fmt: skip
    """The ranked, deduplicated facts around ``anchors`` (read-only session).

    ``attributes``: the ontology's relation attribute names, returned with each fact; facts one of
    whose attribute values names an anchor are retrieved too (a fact placed at an event).
    """
    uids = [a.uid for a in anchors]
    params = {"anchors": uids, "types": types, "attributes": list(attributes)}
    found = _facts(read_all(driver, settings, cypher.local_direct_facts(), limit=max_facts * 2, **params), "path")
    if hops >= 2:
        q = cypher.local_neighborhood(hops)
        found += _facts(read_all(driver, settings, q, path_limit=path_limit, limit=max_facts * 4, **params), "path")
        names = sorted({a.name.lower() for a in anchors if len(a.name) >= 4})
        if names and attributes:
            rows = read_all(driver, settings, cypher.local_attribute_facts(), names=names, limit=max_facts, **params)
            found += _facts(rows, "attribute")
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
) -> LocalResult:
    """Answer ``question`` from the neighbourhood of the entities it names (see module docstring).

    ``answer=False`` retrieves only (no LLM at all). ``chat`` defaults to ``get_chat_model(settings)``,
    built only when a call is needed. ``language`` forces the answer's language (``"English"``);
    None answers in the language of the question.
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
    res.anchors, res.matches = find_anchors(question, catalog, llm_names)
    if not res.anchors:
        res.no_anchor = True
        res.answer = NO_ANCHOR_ANSWER
        return res

    res.facts = retrieve_facts(driver, settings, res.anchors, hops, types, max_facts, path_limit,
                               attributes=list(onto.relation_attributes))
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
        res.answer = complete_text(chat, local_answer_prompt(language), user, attempt, max_tokens=ANSWER_MAX_TOKENS)
    finally:
        res.count(attempt, 1)
    return res


