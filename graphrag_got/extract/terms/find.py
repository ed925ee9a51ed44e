"""The key terms of a chunk, found without a model.

A chunk's terms are the names its text gives, taken from what the text already marks, in this order:

1. ``link``: the notes a wikilink or a Markdown link points to (``[[Daily notes]]`` -> "Daily notes";
   an embedded image or another file is not a term);
2. ``heading``: the chunk's own heading, when it is short (a title, not a sentence);
3. ``alias``: the note's aliases from its front matter, where the chunk writes one;
4. ``code``: short inline code spans (``systemctl restart``, ``/etc/fstab``): commands, paths, settings;
5. ``name``: capitalized names of the prose (:func:`~graphrag_got.extract.classify.mentions.candidate_spans`,
   the same spans the mentions strategy offers a model, cut at a lower-case word inside), the longest only
   ("Obsidian Sync", not "Sync" inside it), the most repeated first; a line, a list item or a table cell
   begins like a sentence.

This is the regular-expression kind of noun-phrase extraction Microsoft GraphRAG's FastGraphRAG offers
beside NLTK/spaCy: it needs no language model, no download and works in any language that capitalizes
names. Names written in lower case only ("thin provisioning") are found where the text marks them (a
link, a heading, code) and missed elsewhere; that is the trade for reading a vault at the speed of its
disk. Every term is a name its chunk's text contains, so the validator's evidence check holds for it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from graphrag_got.common.normalize import normalize_name
from graphrag_got.extract.classify.mentions import candidate_spans

__all__ = ["FoundTerm", "TermSource", "find_terms"]

MAX_WORDS = 6  # words of a heading or code span kept as a term
MAX_CHARS = 60
CONTEXT_CHARS = 160  # the line shown beside a term when it is typed

_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
_MD_LINK = re.compile(r"(!?)\[([^\]\n]+)\]\(\s*<?([^)>\s]+)>?[^)]*\)")
_INLINE_CODE = re.compile(r"(`+)([^`\n]+?)\1")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,}).*?^ {0,3}\1[ \t]*$", re.MULTILINE | re.DOTALL)
_HEADING_MARKS = re.compile(r"^\s*#+\s*|\s*#+\s*$|[*_`]+")
_FILE_SUFFIX = re.compile(r"\.(?!md$)[A-Za-z0-9]{2,5}$")
_LETTER = re.compile(r"[^\W\d_]")
_CODE_TERM = re.compile(r"[^\W\d_][\w.:/+-]*(?: [\w.:/+=-]+){0,2}|/[\w.-]+(?:/[\w.-]+)*/?")  # a command, setting or path
_LINE_START = re.compile(r"(?:^|\n|\|)[ \t]*(?:[-*+>]|#+|\d+[.)]|\[[ xX]\])?[ \t]*")
_LEADING_SHORT = re.compile(r"^(?:[^\W\d_]{1,3}\s+)+(?=\w)")  # "the General" -> "General", "for 12" -> "12"
_POSSESSIVE = re.compile(r"['’]s$")
HEADING_WORDS = 4  # a longer heading is most often a sentence ("Move a vault to another folder")


class TermSource(StrEnum):
    """Where a term was found (the order of preference, first wins)."""

    LINK = "link"
    HEADING = "heading"
    ALIAS = "alias"
    CODE = "code"
    NAME = "name"


@dataclass(frozen=True)
class FoundTerm:
    """One key term of a chunk."""

    name: str  # as the chunk writes it
    source: TermSource
    context: str  # the line it is first written in, shortened (what the typing call shows beside it)

    @property
    def key(self) -> str:
        return normalize_name(self.name)


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with every match of ``pattern`` replaced by spaces (offsets kept)."""
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


def _line_of(text: str, at: int) -> str:
    start = text.rfind("\n", 0, at) + 1
    end = text.find("\n", at)
    line = " ".join(text[start:end if end >= 0 else len(text)].split())
    if len(line) <= CONTEXT_CHARS:
        return line
    middle = at - start
    lo = max(0, min(middle - CONTEXT_CHARS // 2, len(line) - CONTEXT_CHARS))
    return line[lo:lo + CONTEXT_CHARS]


def _usable(name: str) -> bool:
    """A name of at most MAX_WORDS words and MAX_CHARS characters with a letter in it."""
    name = name.strip()
    return bool(name) and len(name) <= MAX_CHARS and len(name.split()) <= MAX_WORDS \
        and _LETTER.search(name) is not None and bool(normalize_name(name))


def _link_targets(text: str) -> list[tuple[str, int]]:
    """(name, offset) of each link to a note: the note's own name (its path's last part, no heading)."""
    out: list[tuple[str, int]] = []
    for m in _WIKILINK.finditer(text):
        target = m.group(2).split("|", 1)[0].split("#", 1)[0].strip().rstrip("\\").strip()  # "\|" in a table
        if m.group(1) or not target or _FILE_SUFFIX.search(target):
            continue  # an embed, a link to a heading of the same note, or to a file that is not a note
        name = target.rsplit("/", 1)[-1].removesuffix(".md")
        out.append((name, m.start() + m.group(0).find(name)))
    for m in _MD_LINK.finditer(text):
        label, target = m.group(2).strip(), m.group(3)
        if m.group(1) or "://" in target or not target.endswith(".md"):
            continue  # an image, a web page or a file that is not a note
        out.append((label, m.start() + 1))
    return out


def find_terms(text: str, heading: str | None = None, metadata: Mapping[str, Any] | None = None, *,
               max_terms: int = 12) -> list[FoundTerm]:
    """The key terms of the chunk ``text`` (see the module docstring), each once (by normalized name), at
    most ``max_terms`` of them in order of preference. ``heading``: the chunk's heading; ``metadata``: its
    note's front matter (for ``aliases``)."""
    found: dict[str, FoundTerm] = {}

    def add(name: str, source: TermSource, at: int) -> None:
        name = " ".join(name.split())
        if _usable(name) and name.lower() in lowered:  # every term is written in the chunk
            found.setdefault(normalize_name(name), FoundTerm(name, source, _line_of(text, max(at, 0))))

    lowered = text.lower()
    for name, at in _link_targets(text):
        add(name, TermSource.LINK, at)
    if heading:
        title = _HEADING_MARKS.sub("", heading).strip()
        if len(title.split()) <= HEADING_WORDS:
            add(title, TermSource.HEADING, text.find(title))
    aliases = (metadata or {}).get("aliases") or []
    for alias in [aliases] if isinstance(aliases, str) else aliases if isinstance(aliases, list) else []:
        if isinstance(alias, str) and alias.strip():
            add(alias, TermSource.ALIAS, lowered.find(alias.strip().lower()))
    prose = _blank(text, _FENCE)
    for m in _INLINE_CODE.finditer(prose):
        code = m.group(2).strip().rstrip(":")
        if _CODE_TERM.fullmatch(code) and len(code) > 2:
            add(code, TermSource.CODE, m.start(2))
    prose = _blank(_blank(_blank(prose, _INLINE_CODE), _WIKILINK), _MD_LINK)
    # a line (a list item, a table cell) begins like a sentence: its first capital is no sign of a name
    prose = _LINE_START.sub(lambda m: "." * len(m.group(0)), prose)
    # runs of capitalized words only: a short word inside ("Tassow and Orla Venn") joins two names as often as
    # it belongs to one ("Bank of England"), and a term layer would rather split the second than merge the first
    spans = ["".join(s) for s in candidate_spans(prose) if not any(p.strip()[:1].islower() for p in s[1:])]
    longest = [s for s in spans if not any(s != o and re.search(rf"(?<!\w){re.escape(s)}(?!\w)", o) for o in spans)]
    counts = Counter({s: len(re.findall(rf"(?<!\w){re.escape(s)}(?!\w)", prose)) for s in longest})
    for name in sorted(longest, key=lambda s: (-counts[s], prose.find(s))):
        at = prose.find(name)
        if name[:1].islower():  # a short word before the name ("the", "de"): not part of it
            name = _LEADING_SHORT.sub("", name)
        name = _POSSESSIVE.sub("", name)
        if len(name) > 2 and not name.replace(" ", "").isdigit() and len(name.rsplit(" ", 1)[-1]) > 1:
            add(name, TermSource.NAME, at)
    return list(found.values())[:max_terms]
