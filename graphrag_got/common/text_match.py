"""Text matching: is a name mentioned in a text, and where do two names meet?

Used by extraction's evidence rules (:mod:`graphrag_got.extract.evidence`), the ontology's checks of its
own examples and the classify strategy. A small model names entities its chunk never mentions and
links names that merely appear in the same paragraph; two questions catch that:

* :meth:`ChunkText.find`: where is ``name`` mentioned? Matching is on word tokens of the text,
  compared after folding case and accents; leading articles of the name (Spanish el/la/los/las,
  English the/a/an) are not required, a plural -s/-es on either side is tolerated, and otherwise a
  window of text words counts when its similarity ratio (:class:`difflib.SequenceMatcher` on the
  joined words) reaches the mention threshold.
* :meth:`ChunkText.evidence`: the sentence spans where both ends are mentioned, at most ``window``
  sentences apart (``0`` = the same sentence). A fact with no such span is not stated by the text.

Offsets always index the original chunk text: folding keeps one character per character.

Sentences end at ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets included) followed by
white space, at blank lines and at line breaks after a Markdown heading. Abbreviations such as
"Dr." split a sentence too: a window of one sentence absorbs that.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Iterable, Literal

__all__ = ["LEADING_ARTICLES", "ChunkText", "Mention", "Span", "Wording", "cue_words", "fold", "name_words"]

LEADING_ARTICLES = frozenset({"el", "la", "los", "las", "the", "a", "an"})
MAX_SPANS_PER_CHUNK = 3  # evidence spans kept per fact and chunk (closest first)

_WORD = re.compile(r"\w+")
_HEADING_LINE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t].*$", re.MULTILINE)
_BLANK = re.compile(r"\n[ \t]*\n")
_END_MARK = re.compile(r"[.!?…][\"'»”’)\]]*(?=\s)")
_PLURAL_SUFFIXES = ("es", "s")
_MIN_STEM = 3  # "as" is not the plural of "a"


@lru_cache(maxsize=1 << 16)
def _fold_char(ch: str) -> str:
    base = "".join(c for c in unicodedata.normalize("NFKD", ch) if not unicodedata.combining(c)).casefold()
    if len(base) == 1:
        return base
    low = ch.casefold()
    return low if len(low) == 1 else ch


def fold(text: str) -> str:
    """Lower case and accents stripped, exactly one output character per input character."""
    if text.isascii():  # what the per-character rule gives ASCII (no accents, casefold == lower), fast
        return text.lower()
    return "".join(map(_fold_char, text))


@dataclass(frozen=True)
class Mention:
    """A mention of a name: ``[start, end)`` in the chunk text, its sentence and match score."""

    start: int
    end: int
    sentence: int
    score: float  # 1.0 for a match up to case, accents, articles and plural; else the fuzzy ratio


@dataclass(frozen=True)
class Wording:
    """How one sentence words a relation between two names: ``direction`` is ``forward`` when it
    states the subject first (or the object first with a reverse cue), else ``reverse``; ``start``
    and ``end`` span the two mentions and the cue between them."""

    direction: Literal["forward", "reverse"]
    start: int
    end: int


@dataclass(frozen=True)
class Span:
    """Sentences ``first..last`` of a chunk, as ``[start, end)`` character offsets."""

    start: int
    end: int
    first: int
    last: int


@dataclass(frozen=True)
class _Token:
    start: int
    end: int
    key: str


def _same_word(a: str, b: str) -> bool:
    """Equal, or equal up to a plural -s/-es on one side."""
    if a == b:
        return True
    longer, shorter = (a, b) if len(a) > len(b) else (b, a)
    return len(shorter) >= _MIN_STEM and any(longer == shorter + s for s in _PLURAL_SUFFIXES)


def _spellings(word: str) -> set[str]:
    """Every token that :func:`_same_word` can find equal to ``word`` (and maybe a few it does not)."""
    out = {word}
    out.update(word + s for s in _PLURAL_SUFFIXES)
    out.update(word[: -len(s)] for s in _PLURAL_SUFFIXES if word.endswith(s) and len(word) - len(s) >= _MIN_STEM)
    return out


def cue_words(cue: str) -> list[str]:
    """The folded words of a relation cue ("Casado con" -> ["casado", "con"])."""
    return _WORD.findall(fold(cue))


def name_words(name: str) -> list[str]:
    """The folded words of a name, without its leading articles (unless nothing else is left)."""
    words = _WORD.findall(fold(name))
    kept = list(words)
    while kept and kept[0] in LEADING_ARTICLES:
        kept.pop(0)
    return kept or words


@dataclass
class ChunkText:
    """One chunk's text, tokenized once; mention searches are cached per (name, threshold).

    ``offset`` is where the chunk starts in its document (``Chunk.start``), for document offsets.
    """

    text: str
    offset: int = 0
    tokens: list[_Token] = field(init=False, repr=False)
    sentences: list[tuple[int, int]] = field(init=False, repr=False)
    _cache: dict[tuple[str, float], list[Mention]] = field(init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        folded = fold(self.text)
        self.tokens = [_Token(m.start(), m.end(), m.group()) for m in _WORD.finditer(folded)]
        self.sentences = _sentences(self.text)
        self._sentence_starts = [s for s, _ in self.sentences]
        self._positions: dict[str, list[int]] = {}  # token key -> its token indexes, for _find
        for i, tok in enumerate(self.tokens):
            self._positions.setdefault(tok.key, []).append(i)

    # ------------------------------------------------------------------ mentions
    def sentence_of(self, pos: int) -> int:
        """Index of the sentence holding character ``pos``."""
        lo, hi = 0, len(self._sentence_starts) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self._sentence_starts[mid] <= pos:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def find(self, name: str, threshold: float = 0.85) -> list[Mention]:
        """Every mention of ``name`` in the text, in text order (empty when it is not mentioned)."""
        key = (name, threshold)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._cache[key] = self._find(name_words(name), threshold)
        return hit

    def mentions(self, name: str, threshold: float = 0.85) -> bool:
        return bool(self.find(name, threshold))

    def common_noun(self, name: str, threshold: float = 0.85) -> bool:
        """Whether ``name`` is a definite common noun phrase here, not a name: it begins with a leading
        article ("the throne", "el trono") and the text writes every mention of it in lower case only.
        (Lower case alone is not enough: "rock music" or "hip hop" name things in many ontologies. A
        script without case is never lower case.)"""
        words = _WORD.findall(fold(name))
        if len(words) < 2 or words[0] not in LEADING_ARTICLES:
            return False
        found = self.find(name, threshold)
        return bool(found) and all(
            any(c.islower() for c in part) and not any(c.isupper() for c in part)
            for part in (self.text[m.start:m.end] for m in found))

    def _find(self, words: list[str], threshold: float) -> list[Mention]:
        n, toks = len(words), self.tokens
        if n == 0 or not toks:
            return []
        found: list[Mention] = []
        # Only the tokens that can be the first word (itself, or with/without a plural ending) are
        # tried, found through the token index: scanning every token for every name made evidence
        # checks the slowest part of a vault's (cached) rebuild. _same_word still decides.
        starts = sorted({i for key in _spellings(words[0]) for i in self._positions.get(key, ())})
        for i in starts:
            if i + n <= len(toks) and all(_same_word(toks[i + k].key, words[k]) for k in range(n)):
                found.append(self._mention(i, i + n, 1.0))
        if found or threshold >= 1.0:
            return found
        return self._fuzzy(" ".join(words), n, threshold)

    def _fuzzy(self, target: str, n: int, threshold: float) -> list[Mention]:
        """Windows of n-1..n+1 text words whose joined form is similar enough to the name."""
        toks = self.tokens
        matcher = SequenceMatcher(autojunk=False)
        matcher.set_seq2(target)
        best: dict[int, Mention] = {}  # best-scoring window per starting word
        for size in sorted({max(1, n - 1), n, n + 1}):
            for i in range(len(toks) - size + 1):
                matcher.set_seq1(" ".join(t.key for t in toks[i:i + size]))
                if matcher.real_quick_ratio() < threshold or matcher.quick_ratio() < threshold:
                    continue
                score = matcher.ratio()
                if score >= threshold and (i not in best or score > best[i].score):
                    best[i] = self._mention(i, i + size, score)
        chosen: list[Mention] = []
        for m in sorted(best.values(), key=lambda m: (-m.score, m.start)):
            if all(m.end <= c.start or m.start >= c.end for c in chosen):
                chosen.append(m)
        return sorted(chosen, key=lambda m: m.start)

    def _mention(self, first: int, stop: int, score: float) -> Mention:
        start, end = self.tokens[first].start, self.tokens[stop - 1].end
        return Mention(start, end, self.sentence_of(start), round(score, 4))

    # ------------------------------------------------------------------ evidence
    def own_mentions(self, name: str, threshold: float = 0.85, others: Iterable[str] = ()) -> list[Mention]:
        """Mentions of ``name`` that are not part of a longer mention of one of ``others`` (the other
        entity names of the chunk): in "Sansa Stark", "Stark" names Sansa, not a house "Stark"."""
        mine = self.find(name, threshold)
        if not mine:
            return mine
        longer = [m for other in others if other != name
                  for m in self.find(other, threshold)]
        return [m for m in mine
                if not any(o.start <= m.start and m.end <= o.end and (o.end - o.start) > (m.end - m.start)
                           for o in longer)]

    def has_cue(self, start: int, end: int, cues: Iterable[str], names: Iterable[str] = (),
                threshold: float = 0.85, *, exact_names: Iterable[str] = ()) -> bool:
        """Whether a cue occurs in ``[start, end)`` outside the mentions of ``names``.

        A cue is one or more words, compared folded (case, accents); its last word may be the
        beginning of a text word ("marri" matches "married", "marriage"; "wed to" matches "wed
        to"), the others match whole words. Words inside a mention of one of ``names`` (the chunk's
        entities) do not count: "wedding" in the name "The Crimson Wedding" says nobody married; nor
        do capitalized words inside a sentence (parts of a name no entity lists), unless the cue itself
        is written capitalized.
        ``exact_names`` are masked too, found without fuzzy matching (names listed elsewhere in the corpus)."""
        masked = [(m.start, m.end) for n in names for m in self.find(n, threshold)]
        masked += [(m.start, m.end) for n in exact_names for m in self.find(n, 1.0)]
        starts = {s for s, _ in self.sentences}
        free = [t for t in self.tokens
                if start <= t.start and t.end <= end and not any(a <= t.start and t.end <= b for a, b in masked)]
        every = [t.key for t in free]
        # a capitalized word inside a sentence is part of a name ("the Crimson Wedding") even when no entity
        # lists that name; a cue written capitalized (a language that capitalizes nouns) may match it
        lower = [t.key for t in free if not (self.text[t.start].isupper() and t.start not in starts)]
        for cue in cues:
            want = cue_words(cue)
            if not want:
                continue
            words = every if cue.strip()[:1].isupper() else lower
            head, last = want[:-1], want[-1]
            for i in range(len(words) - len(want) + 1):
                if words[i:i + len(head)] == head and words[i + len(head)].startswith(last):
                    return True
        return False

    def stated_order(self, subject: str, obj: str, cues: Iterable[str], reverse_cues: Iterable[str] = (),
                     names: Iterable[str] = (), threshold: float = 0.85, *,
                     exact_names: Iterable[str] = ()) -> Wording | None:
        """The direction in which the text words a relation from ``subject`` to ``obj``, when it is clear.

        Looks at every sentence that mentions both names with a cue between two neighbouring mentions
        (no other mention of either name between them). "A <cue> B" states A first: forward when A is
        the subject. A reverse cue (the relation worded object first: "trained under", a passive
        "betrayed by") says the opposite, and where one occurs between the two mentions the plain cues
        there do not count. The answer is the one direction every such sentence agrees on, else None
        (no cue between the mentions anywhere, or sentences that disagree). ``names`` and
        ``exact_names`` are masked as in :meth:`has_cue`; ``names`` also decides which mentions are
        the names' own (:meth:`own_mentions`).
        """
        names, exact_names, cues, reverse_cues = tuple(names), tuple(exact_names), tuple(cues), tuple(reverse_cues)
        marks = sorted([(m, "s") for m in self.own_mentions(subject, threshold, names)]
                       + [(m, "o") for m in self.own_mentions(obj, threshold, names)],
                       key=lambda x: (x[0].start, x[0].end))
        found: list[Wording] = []
        for (a, ea), (b, eb) in zip(marks, marks[1:]):
            if ea == eb or a.sentence != b.sentence or b.start < a.end:
                continue
            if reverse_cues and self.has_cue(a.end, b.start, reverse_cues, names, threshold, exact_names=exact_names):
                subject_first = ea == "o"
            elif self.has_cue(a.end, b.start, cues, names, threshold, exact_names=exact_names):
                subject_first = ea == "s"
            else:
                continue
            found.append(Wording("forward" if subject_first else "reverse", a.start, b.end))
        if not found or len({w.direction for w in found}) > 1:
            return None
        return found[0]

    def evidence(self, subject: str, obj: str, window: int = 1, threshold: float = 0.85,
                 limit: int = MAX_SPANS_PER_CHUNK, others: Iterable[str] = ()) -> list[Span]:
        """Sentence spans where ``subject`` and ``obj`` are both mentioned (by distinct, non-overlapping
        words) at most ``window`` sentences apart; closest pairs first, at most ``limit``.

        ``others``: the other entity names of the chunk; a mention inside a longer one of them does
        not count (see :meth:`own_mentions`)."""
        others = tuple(others)
        pairs: set[tuple[int, int]] = set()
        for a in self.own_mentions(subject, threshold, others):
            for b in self.own_mentions(obj, threshold, others):
                if abs(a.sentence - b.sentence) > window or not (a.end <= b.start or b.end <= a.start):
                    continue
                pairs.add((min(a.sentence, b.sentence), max(a.sentence, b.sentence)))
        ordered = sorted(pairs, key=lambda p: (p[1] - p[0], p[0]))[:limit]
        return [Span(self.sentences[f][0], self.sentences[l][1], f, l) for f, l in sorted(ordered)]


def _sentences(text: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each sentence, white space trimmed; at least one span (maybe empty)."""
    cuts = {0, len(text)}
    cuts.update(m.end() for m in _END_MARK.finditer(text))
    cuts.update(m.start() for m in _BLANK.finditer(text))
    cuts.update(m.end() for m in _HEADING_LINE.finditer(text))
    spans: list[tuple[int, int]] = []
    bounds = sorted(cuts)
    for a, b in zip(bounds, bounds[1:]):
        seg = text[a:b]
        stripped = seg.strip()
        if not stripped:
            continue
        lead = len(seg) - len(seg.lstrip())
        spans.append((a + lead, a + lead + len(stripped)))
    return spans or [(0, 0)]
