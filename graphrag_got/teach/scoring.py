"""Score a predicted extraction.json against a gold one: entities and relations, precision/recall/F1.

Two matching modes, reported side by side:

* **exact**: an entity is its class plus ``normalize_name(name)`` (the pipeline's own merge key:
  case, accents and spaces ignored).
* **tolerant** (alias-tolerant): names are also compared after dropping the words of the entity's
  class name split at capitals (class ``NobleHouse`` -> "noble", "house"), wherever they occur, and
  then the leading articles (Spanish el/la/los/las/lo, English the/a/an); when an entity carries an
  ``aliases`` list (in either file), each alias is another name of the same entity.

A relation matches when its type is equal and both ends match (class and name key), in either
direction when the ontology declares the relation symmetric. Relation attributes (and chunk ids)
are ignored.

Counting: every item listed in a file is judged on its own. Precision = predicted items that match
at least one gold item / predicted items; recall = gold items matched by at least one predicted item
/ gold items. In exact mode on pipeline output (entities unique per uid, relations per triple and
attributes) the two numerators agree; in tolerant mode two predicted names of one gold entity are
both right, and the gold entity is found once. A ratio whose denominator is zero is 1.0 when both
sides are empty (nothing to find, nothing wrong) and 0.0 otherwise, so an empty prediction scores 0.

Input: plain JSON, format ``graphrag_got.extraction/1`` or ``/2`` (or no ``format`` key, for
hand-made files). Only these fields are read: entities' ``name``, ``type`` and optional ``aliases``;
relations' ``subject``, ``subject_type``, ``relation``, ``object``, ``object_type``.

One scorer for ``graphrag-got eval`` (a user's corrected passages) and the benchmarks
(``benchmarks/quality``): the same data gives the same numbers.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology

from graphrag_got.teach.score_items import (EntityItem, ExtractionItems, RelationItem, parse_items,
                                            read_extraction_file)

LEADING_ARTICLES = frozenset({"el", "la", "los", "las", "lo", "the", "a", "an"})
MODES = ("exact", "tolerant")

_CLASS_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


# ---------------------------------------------------------------------------- name keys
def class_words(class_name: str) -> frozenset[str]:
    """The words of a class name split at capitals, digits and underscores, normalized.

    ``NobleHouse`` -> {"noble", "house"}; ``HTTPServer`` -> {"http", "server"}; ``noble_house`` ->
    {"noble", "house"}.
    """
    return frozenset(normalize_name(w) for w in _CLASS_WORD.findall(class_name))


@dataclass
class NameKeys:
    """Turns a (class, name) into the key compared in one matching mode."""

    tolerant: bool
    class_words: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def for_mode(cls, mode: str, ontology: Ontology) -> "NameKeys":
        if mode not in MODES:
            raise ValueError(f"unknown matching mode {mode!r} (expected one of {', '.join(MODES)})")
        return cls(tolerant=mode == "tolerant", class_words={c: class_words(c) for c in ontology.classes})

    def key(self, class_name: str, name: str) -> str:
        exact = normalize_name(name)
        if not self.tolerant:
            return exact
        drop = self.class_words.get(class_name)
        if drop is None:  # a class the ontology does not declare: split its name all the same
            drop = class_words(class_name)
        words = [w for w in exact.split(" ") if w not in drop]
        while words and words[0] in LEADING_ARTICLES:
            words.pop(0)
        # a name made only of class words and articles ("Casa", "The House") stays what it was
        return " ".join(words) or exact


EndKeys = frozenset[tuple[str, str]]  # (class, key) pairs: one entity under all its names


class _Names:
    """Every (class, key) an entity mention can be known by in one file, aliases included."""

    def __init__(self, entities: Iterable[EntityItem], keys: NameKeys, *, use_aliases: bool):
        self._keys = keys
        self._groups: dict[tuple[str, str], set[tuple[str, str]]] = defaultdict(set)
        if use_aliases:
            for e in entities:
                group = {(e.type, keys.key(e.type, n)) for n in (e.name, *e.aliases)}
                for k in group:
                    self._groups[k] |= group

    def of(self, class_name: str, name: str) -> EndKeys:
        own = (class_name, self._keys.key(class_name, name))
        return frozenset({own}).union(self._groups.get(own, ()))


# ---------------------------------------------------------------------------- scores
def _ratio(num: int, den: int, other_den: int) -> float:
    if den:
        return num / den
    return 1.0 if other_den == 0 else 0.0


@dataclass(frozen=True)
class PRF:
    """Counts and precision/recall/F1 of one item kind (entities, relations, one relation type)."""

    predicted: int  # items in the predicted file
    gold: int  # items in the gold file
    correct: int  # predicted items that match at least one gold item
    found: int  # gold items matched by at least one predicted item

    @property
    def precision(self) -> float:
        return _ratio(self.correct, self.predicted, self.gold)

    @property
    def recall(self) -> float:
        return _ratio(self.found, self.gold, self.predicted)

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"predicted": self.predicted, "gold": self.gold, "correct": self.correct, "found": self.found,
                "precision": round(self.precision, 4), "recall": round(self.recall, 4), "f1": round(self.f1, 4)}


@dataclass(frozen=True)
class ModeScore:
    """Every score under one matching mode."""

    mode: str
    entities: PRF
    relations: PRF
    by_relation: dict[str, PRF]

    def to_dict(self) -> dict[str, Any]:
        return {"entities": self.entities.to_dict(), "relations": self.relations.to_dict(),
                "by_relation": {k: v.to_dict() for k, v in self.by_relation.items()}}


@dataclass(frozen=True)
class QualityScore:
    exact: ModeScore
    tolerant: ModeScore

    @property
    def modes(self) -> tuple[ModeScore, ModeScore]:
        return (self.exact, self.tolerant)

    def to_dict(self) -> dict[str, Any]:
        return {m.mode: m.to_dict() for m in self.modes}


# ---------------------------------------------------------------------------- matching
def score(pred: Mapping[str, Any], gold: Mapping[str, Any], ontology: Ontology, *,
          pred_source: str = "predicted extraction", gold_source: str = "gold extraction") -> QualityScore:
    """Score ``pred`` against ``gold`` (both extraction documents as loaded from JSON)."""
    p_items = parse_items(pred, pred_source)
    g_items = parse_items(gold, gold_source)
    symmetric = frozenset(r.name for r in ontology.relations if r.symmetric)
    exact, tolerant = (_score_mode(mode, p_items, g_items, NameKeys.for_mode(mode, ontology), symmetric,
                                   [r.name for r in ontology.relations]) for mode in MODES)
    return QualityScore(exact=exact, tolerant=tolerant)


def _score_mode(mode: str, pred: ExtractionItems, gold: ExtractionItems, keys: NameKeys,
                symmetric: frozenset[str], relation_order: list[str]) -> ModeScore:
    aliases = mode == "tolerant"
    p_names = _Names(pred.entities, keys, use_aliases=aliases)
    g_names = _Names(gold.entities, keys, use_aliases=aliases)

    entities = _match(
        [p_names.of(e.type, e.name) for e in pred.entities],
        [g_names.of(e.type, e.name) for e in gold.entities],
        lambda ends: ends)

    def ends(r: RelationItem, names: _Names) -> tuple[str, EndKeys, EndKeys]:
        return r.relation, names.of(r.subject_type, r.subject), names.of(r.object_type, r.object)

    def relation_keys(rel: tuple[str, EndKeys, EndKeys]) -> Iterable[Any]:
        name, subj, obj = rel
        yield from ((name, s, o) for s, o in product(subj, obj))
        if name in symmetric:
            yield from ((name, o, s) for s, o in product(subj, obj))

    p_rels = [ends(r, p_names) for r in pred.relations]
    g_rels = [ends(r, g_names) for r in gold.relations]
    relations = _match(p_rels, g_rels, relation_keys)

    types = list(relation_order) + sorted({r[0] for r in p_rels + g_rels} - set(relation_order))
    by_relation = {}
    for t in types:
        p_idx = [i for i, r in enumerate(p_rels) if r[0] == t]
        g_idx = [j for j, r in enumerate(g_rels) if r[0] == t]
        by_relation[t] = PRF(predicted=len(p_idx), gold=len(g_idx),
                             correct=sum(i in relations.correct_idx for i in p_idx),
                             found=sum(j in relations.found_idx for j in g_idx))
    return ModeScore(mode=mode, entities=entities.prf, relations=relations.prf, by_relation=by_relation)


@dataclass(frozen=True)
class _Matches:
    prf: PRF
    correct_idx: frozenset[int]
    found_idx: frozenset[int]


def _match(pred: list[Any], gold: list[Any], keys_of: Callable[[Any], Iterable[Any]]) -> _Matches:
    """Index gold items under every key they are known by; a predicted item matches the gold items
    sharing one of its keys."""
    index: dict[Any, set[int]] = defaultdict(set)
    for j, g in enumerate(gold):
        for k in keys_of(g):
            index[k].add(j)
    correct: set[int] = set()
    found: set[int] = set()
    for i, p in enumerate(pred):
        hits = set().union(*(index.get(k, set()) for k in keys_of(p)))
        if hits:
            correct.add(i)
            found |= hits
    prf = PRF(predicted=len(pred), gold=len(gold), correct=len(correct), found=len(found))
    return _Matches(prf, frozenset(correct), frozenset(found))


__all__ = ["MODES", "ModeScore", "NameKeys", "PRF", "QualityScore", "class_words", "read_extraction_file", "score"]
