"""Mentions: the spans of a chunk a name may be, the grammar that lets the model write only those,
and the reading of its answer.

Candidate spans are runs of at most :data:`MAX_WORDS` words inside one stretch of text (no
punctuation between the words but apostrophes and hyphens inside a word) that end with a word
starting with a capital letter or a digit; inside, short lower-case words (at most three letters,
the "de", "of", "the" of many names) are allowed; a span may begin with such a short word when a
capitalized word follows ("el Norte"). A single capitalized word found only at the beginning of
sentences (or quotes) is not a candidate on its own. Names in lower case only are not candidates: the choice of
spans trades those (rare among named entities) for a grammar a small model reads fast.

With llama.cpp the answer is generated under a GBNF grammar whose names are exactly these spans and
whose classes are the ontology's (:func:`mention_grammar`); other providers get a JSON schema with the
same two enums (:func:`mention_schema`). Either way a name the text does not contain cannot be
written; the validator's evidence check still runs on every name.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from graphrag_got.llm.grammar import literal, one_of, trie_rules

MAX_WORDS = 6  # words in a candidate span
SHORT_WORD = 3  # lower-case words up to this length may sit inside a name ("de", "of", "the")
MAX_MENTIONS = 20  # lines of a mentions answer
_WORD = re.compile(r"\w+(?:['’\-]\w+)*")
_GAP = re.compile(r"[ \t]+")  # what may stand between two words of one span
_LINE = re.compile(r"^\s*-\s*(?P<name>.+?)\s*\((?P<cls>[^()]+)\)\s*$")


def _capital(word: str) -> bool:
    return word[:1].isupper() or word[:1].isdigit()


def _short(word: str) -> bool:
    return word.islower() and len(word) <= SHORT_WORD


def candidate_spans(text: str) -> list[tuple[str, ...]]:
    """The chunk's candidate names, each as its pieces (first word, then gap + word...), in text order."""
    words = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(text)]
    # a capitalized word seen only where a sentence (or a quote) begins is most often an ordinary word
    starts = {i for i, (a, _, _) in enumerate(words) if not text[:a].strip() or text[:a].rstrip()[-1] in ".!?:;«\"“("}
    inside = {w for i, (_, _, w) in enumerate(words) if i not in starts and _capital(w)}
    seen: set[tuple[str, ...]] = set()
    out: list[tuple[str, ...]] = []
    for i, (_, _, first) in enumerate(words):
        if not _capital(first) and not (_short(first) and i + 1 < len(words) and _capital(words[i + 1][2])):
            continue
        pieces = [first]
        for j in range(i, min(len(words), i + MAX_WORDS)):
            if j > i:
                gap = text[words[j - 1][1]:words[j][0]]
                if not _GAP.fullmatch(gap):
                    break
                word = words[j][2]
                if not (_capital(word) or _short(word)):
                    break
                pieces.append(gap + word)
            if j == i and i in starts and first not in inside:
                continue  # a lone sentence-initial word; longer spans starting with it stay candidates
            if _capital(words[j][2]):
                key = tuple(pieces)
                if key not in seen:
                    seen.add(key)
                    out.append(key)
    return out


def mention_grammar(spans: list[tuple[str, ...]], classes: list[str], max_mentions: int = MAX_MENTIONS) -> str:
    """GBNF: up to ``max_mentions`` lines ``- <span> (<class>)``."""
    rules = [f"root ::= item{{0,{max_mentions}}}",
             f"item ::= {literal('- ')} name {literal(' (')} class {literal(')' + chr(10))}",
             one_of("class", classes)]
    rules += trie_rules("name", spans)
    return "\n".join(rules) + "\n"


def _words(name: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(name) if not _short(w))


def next_line_grammar(spans: list[tuple[str, ...]], classes: list[str], listed: list[str]) -> str | None:
    """GBNF of one more mention line, or nothing (the answer ends); None when the answer is over.

    A listed name's shorter and longer forms ("Venn" once "Orla Venn" is listed, "the Lantern Guild" once
    "Lantern Guild" is) are no longer offered: one entity is listed once. The listed names themselves stay on offer, and
    writing one of them again ends the answer (None): that is how a small model says it has listed
    everything, by starting its list again."""
    names = [m.group("name").strip() for line in listed if (m := _LINE.match(line))]
    if names and names[-1] in names[:-1]:
        return None
    done = [_words(n) for n in names]
    left = [s for s in spans if "".join(s) in names
            or not any(w and (w <= d or d <= w) for d in done for w in (_words("".join(s)),))]
    if not left:
        return None
    rules = [f"root ::= item | {literal('')}",
             f"item ::= {literal('- ')} name {literal(' (')} class {literal(')' + chr(10))}",
             one_of("class", classes)]
    rules += trie_rules("name", left)
    return "\n".join(rules) + "\n"


def mention_schema(spans: list[tuple[str, ...]], classes: list[str], max_mentions: int = MAX_MENTIONS) -> dict[str, Any]:
    """The JSON schema of a mentions answer for providers without grammars (names and classes as enums)."""
    names = sorted({"".join(s) for s in spans})
    item = {"type": "object", "properties": {"name": {"type": "string", "enum": names},
                                             "class": {"type": "string", "enum": sorted(classes)}},
            "required": ["name", "class"], "additionalProperties": False}
    return {"type": "object", "properties": {"mentions": {"type": "array", "items": item, "maxItems": max_mentions}},
            "required": ["mentions"], "additionalProperties": False}


def sections_schema(sections: list[list[tuple[str, ...]]], classes: list[str],
                    max_mentions: int = MAX_MENTIONS) -> dict[str, Any]:
    """The JSON schema of one answer for several texts: a mentions list per text (``"TEXT 1"``, ...),
    each with the names of its own text only."""
    props: dict[str, Any] = {}
    for n, spans in enumerate(sections, 1):
        props[section_key(n)] = (mention_schema(spans, classes, max_mentions)["properties"]["mentions"] if spans
                                 else {"type": "array", "maxItems": 0})
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def section_key(n: int) -> str:
    """The key of text ``n`` in a JSON answer for several texts."""
    return f"TEXT {n}"


_SECTION = re.compile(r"^\s*#+\s*TEXT\s+(\d+)\s*:?\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class MentionAnswer:
    """A mentions answer read: (name, class) pairs in order, first occurrence kept, and the lines that
    were not a mention (kept for the audit)."""

    mentions: tuple[tuple[str, str], ...]
    unread: tuple[str, ...] = ()


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` as a JSON object, or None (not JSON, or not an object)."""
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


_ITEM = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"class"\s*:\s*"((?:[^"\\]|\\.)*)"\s*\}')
_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"\s*:\s*\[')


def _salvage(text: str) -> dict[str, Any] | None:
    """The complete ``{"name", "class"}`` items of a JSON answer cut short (the model ran out of
    tokens: a server's JSON-schema grammar lets it indent, which costs about twice the tokens of the
    line form), under the list key each one follows; None when ``text`` is not such an answer. What
    the cut left unfinished is lost; the record's ``finish`` says the answer was cut."""
    if not text.startswith("{"):
        return None
    keys = list(_KEY.finditer(text))
    if not keys:
        return None
    out: dict[str, Any] = {}
    for k, key in enumerate(keys):
        end = keys[k + 1].start() if k + 1 < len(keys) else len(text)
        items = [{"name": json.loads(f'"{m.group(1)}"'), "class": json.loads(f'"{m.group(2)}"')}
                 for m in _ITEM.finditer(text, key.end(), end)]
        out[json.loads(f'"{key.group(1)}"')] = items
    return out


def read_mentions(raw: str) -> MentionAnswer:
    """Lines ``- name (Class)`` or a JSON object ``{"mentions": [{"name", "class"}]}``."""
    items: list[tuple[str, str]] = []
    unread: list[str] = []
    text = raw.strip()
    data = _json_object(text)
    if data is None:
        data = _salvage(text)
    if data is not None:
        for item in data.get("mentions") or []:
            if isinstance(item, dict) and isinstance(item.get("name"), str) and isinstance(item.get("class"), str):
                items.append((item["name"].strip(), item["class"].strip()))
            else:
                unread.append(json.dumps(item, ensure_ascii=False)[:200])
    else:
        for line in text.splitlines():
            if not line.strip():
                continue
            m = _LINE.match(line)
            if m:
                items.append((m.group("name").strip(), m.group("cls").strip()))
            else:
                unread.append(line[:200])
    return MentionAnswer(tuple(dict.fromkeys(i for i in items if i[0] and i[1])), tuple(unread))


def read_sections(raw: str, n: int) -> list[MentionAnswer]:
    """The mentions of each of ``n`` texts in one answer: lines under ``## TEXT <k>`` headers, or a JSON
    object with a list per ``"TEXT <k>"`` key (:func:`sections_schema`). A text the answer does not
    reach reads as no mention; lines outside any section (or under a number out of range) are kept as
    unread lines of the first text."""
    text = (raw or "").strip()
    if n == 1 and not _SECTION.match(text.split("\n", 1)[0] if text else ""):
        return [read_mentions(raw)]
    data = _json_object(text)
    if data is None:
        data = _salvage(text)
    if data is not None:
        return [read_mentions(json.dumps({"mentions": data.get(section_key(k)) or []}, ensure_ascii=False))
                for k in range(1, n + 1)]
    parts: list[list[str]] = [[] for _ in range(n)]
    stray: list[str] = []
    current: int | None = None
    for line in text.splitlines():
        m = _SECTION.match(line)
        if m:
            k = int(m.group(1))
            current = k - 1 if 1 <= k <= n else None
            continue
        (parts[current] if current is not None else stray).append(line)
    out = [read_mentions("\n".join(p)) for p in parts]
    if stray and any(s.strip() for s in stray):
        first = out[0]
        out[0] = MentionAnswer(first.mentions, first.unread + tuple(s[:200] for s in stray if s.strip()))
    return out
