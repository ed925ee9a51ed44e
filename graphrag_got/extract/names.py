"""Names as entity resolution compares them: the words of a class name, merge keys, similarity.

Used by the resolver (:mod:`graphrag_got.extract.resolve`) and the alias file
(:mod:`graphrag_got.extract.alias_file`).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence


from graphrag_got.common.normalize import normalize_name

#: Articles dropped at the start of a name (Spanish and English), like the quality scorer does.
LEADING_ARTICLES = frozenset({"el", "la", "los", "las", "lo", "the", "a", "an"})
#: Lowest similarity (difflib ratio, 0-1) of every word pair for two names to be fuzzy-merged.
FUZZY_THRESHOLD = 0.85

_CLASS_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_WORD = re.compile(r"\w+")


# ---------------------------------------------------------------------------------------------
# Names
# ---------------------------------------------------------------------------------------------


def class_words(class_name: str) -> frozenset[str]:
    """The words of a class name split at capitals, digits and underscores, normalized.

    ``NobleHouse`` -> {"noble", "house"}; ``HTTPServer`` -> {"http", "server"}; ``noble_house`` ->
    {"noble", "house"}.
    """
    return frozenset(normalize_name(w) for w in _CLASS_WORD.findall(class_name))


def tokens(name: str) -> list[str]:
    return _WORD.findall(normalize_name(name))


def content_tokens(name: str) -> list[str]:
    """The words of a name without its leading articles (kept whole when only articles)."""
    words = tokens(name)
    i = 0
    while i < len(words) and words[i] in LEADING_ARTICLES:
        i += 1
    return words[i:] or words


def merge_key(class_name: str, name: str, words: frozenset[str] | None = None) -> str:
    """The name as rule 2 compares it: normalized, without the class's words and leading articles.

    ``merge_key("NobleHouse", "The Noble House Ashford")`` is ``"ashford"``. A name made only of
    such words ("The House") keeps all its words. ``words`` defaults to :func:`class_words`.
    """
    drop = class_words(class_name) if words is None else words
    all_words = tokens(name)
    kept = [w for w in all_words if w not in drop]
    while kept and kept[0] in LEADING_ARTICLES:
        kept.pop(0)
    return " ".join(kept or all_words)


def name_similarity(a: str, b: str) -> float:
    """How alike two merge keys are, 0-1: 1.0 when equal without spaces ("ab cd" / "abcd"); for the
    same number of words, the lowest difflib ratio of the word pairs in order; else 0.0. Comparing
    word by word keeps two people of one family ("Ann Smith" / "Anna Smith" are close, "Tom Smith"
    / "Tim Smith" are not merged unless each word is close)."""
    if a.replace(" ", "") == b.replace(" ", ""):
        return 1.0
    wa, wb = a.split(), b.split()
    if len(wa) != len(wb):
        return 0.0
    score = 1.0
    for x, y in zip(wa, wb):
        if x != y:
            score = min(score, difflib.SequenceMatcher(None, x, y).ratio())
    return score




def pairs(items: Sequence[str]) -> Iterable[tuple[str, str]]:
    """Every unordered pair of ``items``, in order."""
    for i, a in enumerate(items):
        for b in items[i + 1:]:
            yield a, b
