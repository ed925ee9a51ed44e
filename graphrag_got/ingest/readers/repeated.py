"""Running headers, footers and page numbers: lines repeated at the top or bottom of most pages.

Hand-written: pypdf gives each page's text but no notion of page furniture, and the rule is short.
A line counts as furniture when, with its digits folded (``Page 3 of 40`` and ``Page 4 of 40`` are
one line) and white space and case ignored, it is among the first or last :data:`EDGE` non-blank
lines of at least :data:`SHARE` of the pages (and of at least :data:`MIN_PAGES` pages). Only such
edge lines are dropped; the same words in the body of a page stay.
"""

from __future__ import annotations

import math
import re
from collections import Counter

EDGE = 3
SHARE = 0.5
MIN_PAGES = 3

_DIGITS = re.compile(r"\d+")


def _key(line: str) -> str:
    return _DIGITS.sub("#", " ".join(line.split())).casefold()


def _edges(lines: list[str]) -> list[int]:
    """Indexes of the first and last EDGE non-blank lines."""
    filled = [i for i, line in enumerate(lines) if line.strip()]
    return sorted(set(filled[:EDGE] + filled[-EDGE:]))


def drop_repeated(pages: list[list[str]]) -> tuple[list[list[str]], int]:
    """``pages`` (each a list of lines) without their running headers and footers, and how many lines
    were dropped in all."""
    if len(pages) < MIN_PAGES:
        return pages, 0
    seen: Counter[str] = Counter()
    for lines in pages:
        seen.update({_key(lines[i]) for i in _edges(lines)})
    need = max(MIN_PAGES, math.ceil(SHARE * len(pages)))
    furniture = {key for key, n in seen.items() if n >= need and key}
    if not furniture:
        return pages, 0
    out: list[list[str]] = []
    dropped = 0
    for lines in pages:
        gone = {i for i in _edges(lines) if _key(lines[i]) in furniture}
        dropped += len(gone)
        out.append([line for i, line in enumerate(lines) if i not in gone])
    return out, dropped
