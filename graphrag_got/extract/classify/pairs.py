"""Candidate pairs and their options: which two mentions of a chunk are asked about, and what may be
answered.

A pair is two mentions whose two names meet within the evidence
window (:meth:`graphrag_got.common.text_match.ChunkText.evidence`) and whose classes admit at least one
relation in one direction or the other. Its options are every admissible (relation, direction):
``A REL B`` and ``B REL A`` for a relation that accepts both orders, once for a symmetric one, and
last "none of these". Two mentions of one class whose names differ only by leading articles are
one mention (the first listed is asked about), and two names one of which has all its words in the
other ("Venn" and "Orla Venn") are not a pair: most often one entity named twice, which entity
resolution joins later. Options are labelled with single capital letters (one token each), so a pair
is answered by the first token of the answer.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

from graphrag_got.common.text_match import LEADING_ARTICLES, ChunkText, name_words
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import NO_RELATION

LABELS = string.ascii_uppercase  # one token each for the models we use; the last option is "none"


@dataclass(frozen=True)
class Option:
    """One answer of a pair: ``relation`` with X as subject (``forward``) or Y as subject; or none."""

    label: str
    relation: str | None  # None: no relation
    forward: bool = True



@dataclass(frozen=True)
class Pair:
    first: tuple[str, str]  # (name, class), the one the text names first
    second: tuple[str, str]
    options: tuple[Option, ...]
    passage: str = ""  # the evidence sentence(s) where the two names meet (the closest)

    def option(self, label: str) -> Option | None:
        return next((o for o in self.options if o.label == label), None)

    def statement(self, option: Option) -> str:
        """The option as the question writes it: "<subject> RELATION <object>", or "none of these"."""
        if option.relation is None:
            return NO_RELATION
        a, b = (self.first[0], self.second[0]) if option.forward else (self.second[0], self.first[0])
        return f"{a} {option.relation} {b}"


def options_for(onto: Ontology, first_class: str, second_class: str) -> list[tuple[str, bool]]:
    """(relation, forward) of every relation the two classes admit, in the ontology's order."""
    out: list[tuple[str, bool]] = []
    for rel in onto.relations:
        forward, backward = rel.fits(first_class, second_class), rel.fits(second_class, first_class)
        if rel.symmetric and (forward or backward):
            out.append((rel.name, forward))
            continue
        if forward:
            out.append((rel.name, True))
        if backward:
            out.append((rel.name, False))
    return out


def candidate_pairs(onto: Ontology, mentions: list[tuple[str, str]], text: ChunkText, *, window: int,
                    threshold: float, max_pairs: int) -> tuple[list[Pair], int]:
    """The pairs to ask about (text order of their first mention), and how many more were left out
    by ``max_pairs``."""
    known, seen = [], set()
    for name, cls in mentions:
        key = (cls, tuple(w for w in name_words(name) if w not in LEADING_ARTICLES) or tuple(name_words(name)))
        if cls in onto.classes and key not in seen:
            seen.add(key)
            known.append((name, cls))
    names = [n for n, _ in known]
    first_at = {}
    for name, _ in known:
        found = text.find(name, threshold)
        first_at[name] = found[0].start if found else len(text.text)
    ordered = sorted(dict.fromkeys(known), key=lambda m: first_at[m[0]])
    pairs: list[Pair] = []
    for i, a in enumerate(ordered):
        for b in ordered[i + 1:]:
            wa, wb = set(name_words(a[0])) - LEADING_ARTICLES, set(name_words(b[0])) - LEADING_ARTICLES
            if a[0] == b[0] or wa <= wb or wb <= wa:
                continue
            choices = options_for(onto, a[1], b[1])[:len(LABELS) - 1]
            if not choices:
                continue
            spans = text.evidence(a[0], b[0], window, threshold, limit=1, others=names)
            if not spans:
                continue
            options = [Option(LABELS[k], rel, fwd) for k, (rel, fwd) in enumerate(choices)]
            options.append(Option(LABELS[len(options)], None))
            pairs.append(Pair(a, b, tuple(options), " ".join(text.text[spans[0].start:spans[0].end].split())))
    return pairs[:max_pairs], max(0, len(pairs) - max_pairs)
