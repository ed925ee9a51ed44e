"""Cutting text into spans of at most ``max_chars``: the line model and the splitting rules of every
chunker (:mod:`graphrag_got.ingest.chunking` states the rules). Spans are ``(start, end)`` offsets
into the text, trimmed of surrounding white space."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

SENTENCE_END = re.compile(r"[.!?…][\"'»”’)\]]*(?=\s)")


@dataclass(frozen=True)
class Line:
    number: int  # 1-based line number in the document
    start: int  # offset of the first character
    end: int  # offset after the last character, line break excluded
    text: str  # without the line break

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def lines_of(text: str) -> list[Line]:
    out: list[Line] = []
    pos = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        body = raw.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        out.append(Line(number, pos, pos + len(body), body))
        pos += len(raw)
    return out


@dataclass
class Block:
    """A run of lines that is a paragraph, a heading line or a fenced code block."""

    start: int
    end: int
    splittable: bool  # prose that may be cut at sentence ends


def trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --------------------------------------------------------------------------------------------
# Splitting
# --------------------------------------------------------------------------------------------


def paragraph_blocks(lines: list[Line]) -> list[Block]:
    """Blank-line separated paragraphs, no Markdown awareness."""
    blocks: list[Block] = []
    current: list[Line] = []
    for line in lines + [None]:  # type: ignore[list-item]
        if line is None or line.blank:
            if current:
                blocks.append(Block(current[0].start, current[-1].end, splittable=True))
                current = []
        else:
            current.append(line)
    return blocks



# Preferred cut points, strongest first. A cut is made after the match; white space around a cut
# is trimmed from both pieces.
_CLAUSE_END = re.compile(r"[;:,](?=\s)")
_LINE_END = re.compile(r"\n")
_WORD_END = re.compile(r"\s+")
_PROSE_LEVELS: tuple[re.Pattern[str], ...] = (SENTENCE_END, _CLAUSE_END, _LINE_END, _WORD_END)
_CODE_LEVELS: tuple[re.Pattern[str], ...] = (_LINE_END, _WORD_END)


def fit(text: str, start: int, end: int, max_chars: int,
         levels: tuple[re.Pattern[str], ...]) -> list[tuple[int, int]]:
    """Trimmed spans of text[start:end], each at most max_chars, covering all its non-blank text.

    The span is cut at matches of ``levels[0]`` and the pieces are packed (consecutive pieces
    joined while they fit). A piece that is still too long is cut by the next level, and its
    sub-pieces are packed among themselves only, so a long sentence never pulls its neighbours'
    boundaries around. When no level is left the text is cut every max_chars characters.
    """
    s, e = trimmed(text, start, end)
    if s >= e:
        return []
    if e - s <= max_chars:
        return [(s, e)]
    if not levels:
        return hard_split(text, s, e, max_chars)
    cuts = [m.end() for m in levels[0].finditer(text, s, e) if s < m.end() < e]
    if not cuts:
        return fit(text, s, e, max_chars, levels[1:])
    spans: list[tuple[int, int]] = []
    open_span = False  # whether spans[-1] may still grow
    prev = s
    for cut in cuts + [e]:
        ps, pe = trimmed(text, prev, cut)
        prev = cut
        if ps >= pe:
            continue
        if pe - ps > max_chars:
            spans.extend(fit(text, ps, pe, max_chars, levels[1:]))
            open_span = False
        elif open_span and pe - spans[-1][0] <= max_chars:
            spans[-1] = (spans[-1][0], pe)
        else:
            spans.append((ps, pe))
            open_span = True
    return spans


def hard_split(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut text[start:end] every max_chars characters, moving a cut back so that it does not
    separate a character from the combining marks that follow it."""
    spans: list[tuple[int, int]] = []
    s = start
    while s < end:
        cut = min(s + max_chars, end)
        if cut < end:
            back = cut
            while back > s + 1 and unicodedata.combining(text[back]):
                back -= 1
            if not unicodedata.combining(text[back]):  # else: only marks, no better place to cut
                cut = back
        ps, pe = trimmed(text, s, cut)
        if ps < pe:
            spans.append((ps, pe))
        s = cut
    return spans


def pack(text: str, blocks: list[Block], max_chars: int) -> list[tuple[int, int]]:
    """Group consecutive blocks into spans of at most max_chars. A block longer than that is cut
    first: prose at sentence ends, then clauses, lines and words; a code fence or a heading line
    at lines, then words; as a last resort every max_chars characters."""
    spans: list[tuple[int, int]] = []
    for block in blocks:
        pieces = fit(text, block.start, block.end, max_chars,
                      _PROSE_LEVELS if block.splittable else _CODE_LEVELS)
        for i, (s, e) in enumerate(pieces):
            # only a block's first piece may join the span before it: the pieces of one block
            # are already packed by fit
            if i == 0 and spans and e - spans[-1][0] <= max_chars:
                spans[-1] = (spans[-1][0], e)
            else:
                spans.append((s, e))
    return spans


# --------------------------------------------------------------------------------------------


def pack_each(text: str, blocks: list[Block], max_chars: int) -> list[tuple[int, int]]:
    """Paragraph chunker: every paragraph is its own chunk (never merged with its neighbours)."""
    return [span for block in blocks for span in pack(text, [block], max_chars)]
