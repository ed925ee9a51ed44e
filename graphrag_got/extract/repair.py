"""Audited repair: fix the model's bookkeeping mistakes before refusing, and record every fix.

A small model often states a fact correctly but gets the bookkeeping around it wrong: it names an
event as a relation's object without listing the event among the entities, lists a name with a
class that every other chunk contradicts, or writes the two ends of a triple in reverse. Refusing
such a triple loses a fact the text states; keeping it silently hides what was changed. So before
the validator refuses, :func:`repair_answers` tries four repairs, in two passes over all chunks'
answers (the first collects, per normalized name, the classes the model listed it with across the
corpus: :class:`ClassVotes`):

* ``majority_class``: an entity listed with a class that is not the one most of the corpus's
  answers give its name is corrected to that class when the majority is strict (more than half the
  answers), or when it is only the most frequent class and the correction makes a relation of the
  chunk valid. A triple end typed otherwise than its entity in the chunk is retyped to the entity's
  class when that class is the name's majority.
* ``inferred_class``: a relation end the model never listed is added as an entity when its class is
  certain (the class the triple gives it is allowed there, or the domain/range allows exactly one
  class), the corpus does not give the name another class, and the name is found in the chunk text,
  unless it is a common noun phrase ("the throne": an article, and only lower case in the text).
  When two classes are possible and none is given, nothing is guessed.
* ``flipped_ends``: subject and object are swapped when only the reverse fits domain and range.
* ``reversed_by_wording``: subject and object are swapped when both orders fit, the relation is not
  symmetric and declares cues, and every sentence with a cue between the two names words the fact
  the other way round ("B is loyal to A" given as A LOYAL_TO B; a reverse cue such as "trained under"
  turns the reading around). A small model tends to make the passage's first name the subject.

A triple is repaired only when the repaired triple passes the whole validator (evidence included
when it is on); otherwise it stays as the model wrote it and is refused with the model's own
mistake as the reason. Every change is a :class:`~graphrag_got.extract.extraction.Repair` record with the
item before and after, so the report shows them and ``--no-repair`` (setting ``repair``) turns them
off. Repairs work from the stored answers only, so ``extract --revalidate`` re-applies them without
calling the model.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from pydantic import JsonValue

from graphrag_got.extract.answer import ENTITY_KEYS, RawAnswer
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.extraction import End, Repair, RepairReason
from graphrag_got.common.normalize import normalize_name
from graphrag_got.extract.validate import Validator, known_entities

__all__ = ["ChunkAnswer", "ClassVotes", "RepairedAnswer", "answer_entity_names", "majority_of", "repair_answers",
           "repair_chunk"]

_log = logging.getLogger(__name__)


@dataclass
class ChunkAnswer:
    """One chunk's parsed answer, with the chunk's text (for name look-ups)."""

    chunk_id: str | None
    document_id: str | None
    answer: RawAnswer  # parsed JSON of either answer form is read into one
    text: ChunkText

    def __post_init__(self) -> None:
        self.answer = RawAnswer.read(self.answer)


@dataclass
class RepairedAnswer:
    """What the validator gets for one chunk: the answer with its repaired items, the entities
    added by inference (validated after the answer's own) and the records of every change."""

    chunk_id: str | None
    document_id: str | None
    answer: RawAnswer
    extra_entities: list[dict[str, Any]] = field(default_factory=list)
    repairs: list[Repair] = field(default_factory=list)


class ClassVotes:
    """Per normalized name, how many chunk answers list it with each class (one vote per answer
    and class, so a chunk repeating a name does not outvote the corpus)."""

    def __init__(self, answers: Iterable[RawAnswer | JsonValue], classes: Iterable[str],
                 max_entities: int | None = None):  # fmt: skip
        self.classes = frozenset(classes)
        self.votes: dict[str, Counter[str]] = {}
        for answer in answers:
            seen: set[tuple[str, str]] = set()
            for item in _entities(RawAnswer.read(answer), max_entities):
                name, ctype = _name_and_type(item)
                if name is None or ctype not in self.classes:
                    continue
                key = normalize_name(name)
                if key:
                    seen.add((key, ctype))
            for key, ctype in seen:
                self.votes.setdefault(key, Counter())[ctype] += 1

    def of(self, name: str) -> Counter[str]:
        return self.votes.get(normalize_name(name), Counter())

    def majority(self, name: str) -> tuple[str | None, bool]:
        """(the single most frequent class, whether it has more than half the votes); (None, False)
        when the name has no vote or two classes tie."""
        return majority_of(self.of(name))

    def describe(self, name: str) -> str:
        counts = self.of(name)
        if not counts:
            return "no listing"
        return ", ".join(f"{c} in {n}" for c, n in counts.most_common()) + " chunk answer(s)"


def majority_of(counts: Counter[str]) -> tuple[str | None, bool]:
    """(the single most frequent class of ``counts``, whether it has more than half); (None, False) when
    there is no vote or two classes tie."""
    if not counts:
        return None, False
    (top, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:
        return None, False
    return top, n * 2 > sum(counts.values())


def repair_answers(validator: Validator, answers: Sequence[ChunkAnswer], *,
                   threshold: float = 0.85) -> list[RepairedAnswer]:
    """Both passes over the corpus: class votes of every answer, then each chunk's repairs.

    ``validator`` decides whether a repaired item is valid (its evidence rules apply);
    ``threshold`` is the mention threshold a name needs to count as found in its chunk text.
    """
    votes = ClassVotes((a.answer for a in answers), validator.onto.classes, validator.max_entities)
    out = [repair_chunk(validator, a, votes, threshold=threshold) for a in answers]
    n = sum(len(r.repairs) for r in out)
    if n:
        _log.info("audited repair: %d change(s) in %d chunk answer(s)", n, sum(bool(r.repairs) for r in out))
    return out


def repair_chunk(validator: Validator, chunk: ChunkAnswer, votes: ClassVotes, *,
                 threshold: float = 0.85) -> RepairedAnswer:
    """The repairs of one chunk's answer, given the corpus's class votes."""
    return _ChunkRepair(validator, chunk, votes, threshold).run()


def answer_entity_names(fixed: RepairedAnswer, bound: int | None = None) -> set[str]:
    """The entity names one repaired answer lists (its own, then those the repair added), as written."""
    names: set[str] = set()
    for item in [*_entities(fixed.answer, bound), *fixed.extra_entities]:
        name, _ = _name_and_type(item)
        if name is not None:
            names.add(name)
    return names


# ---------------------------------------------------------------------------- one chunk
def _entities(answer: RawAnswer, bound: int | None) -> list[Any]:
    return answer.entities[:bound] if bound is not None else answer.entities


def _name_and_type(item: Any) -> tuple[str | None, str | None]:
    if not isinstance(item, dict):
        return None, None
    name, ctype = item.get("name"), item.get("type")
    name = name.strip() if isinstance(name, str) and name.strip() else None
    return name, ctype if isinstance(ctype, str) else None


@dataclass
class _Resolved:
    """A relation end's class as repaired: ``how`` is None (as given), ``retyped`` or ``inferred``."""

    name: str
    given: str | None
    cls: str
    how: str | None = None
    why: str = ""


class _ChunkRepair:
    def __init__(self, validator: Validator, chunk: ChunkAnswer, votes: ClassVotes, threshold: float):
        self.v, self.chunk, self.votes, self.threshold = validator, chunk, votes, threshold
        self.onto = validator.onto
        self.repairs: list[Repair] = []
        self.extra: list[dict[str, Any]] = []

    def run(self) -> RepairedAnswer:
        answer = self.chunk.answer
        result = RepairedAnswer(self.chunk.chunk_id, self.chunk.document_id, answer)
        if not answer.is_object or answer.problem("relations") is not None:
            return result
        entities = list(answer.entities)
        relations = list(answer.relations)
        bound_e = len(entities) if self.v.max_entities is None else min(len(entities), self.v.max_entities)
        bound_r = len(relations) if self.v.max_relations is None else min(len(relations), self.v.max_relations)
        self._entities_pass(entities, bound_e, relations[:bound_r])
        self._narrowing_pass(entities, bound_e, relations[:bound_r])
        known = self._known(entities[:bound_e])
        for i in range(bound_r):
            fixed = self._repair_triple(relations[i], known)
            if fixed is not None:
                relations[i] = fixed
        if self.repairs:
            result.answer = answer.with_items(entities, relations)
            result.extra_entities, result.repairs = self.extra, self.repairs
        return result

    # ------------------------------------------------------------------ helpers
    def _record(self, reason: RepairReason, kind: str, message: str, before: Any, after: Any) -> None:
        self.repairs.append(Repair(reason=reason, kind=kind, message=message,  # type: ignore[arg-type]
                                   before=dict(before) if isinstance(before, dict) else {"value": before},
                                   after=dict(after), chunk_id=self.chunk.chunk_id,
                                   document_id=self.chunk.document_id))

    def _accepted(self, item: Any) -> bool:
        record, _ = self.v.check_entity(item, self.chunk.chunk_id, self.chunk.document_id, text=self.chunk.text)
        return record is not None

    def _known(self, entities: Iterable[Any]) -> dict[str, set[str]]:
        records = []
        for item in [*entities, *self.extra]:
            record, _ = self.v.check_entity(item, self.chunk.chunk_id, self.chunk.document_id, text=self.chunk.text)
            if record is not None:
                records.append(record)
        return known_entities(records)

    def _valid(self, triple: Any, known: Mapping[str, set[str]]) -> bool:
        record, _ = self.v.check_relation(triple, known, self.chunk.chunk_id, self.chunk.document_id,
                                          text=self.chunk.text)
        return record is not None

    # ------------------------------------------------------------------ majority class of listings
    def _entities_pass(self, entities: list[Any], bound: int, relations: list[Any]) -> None:
        for i in range(bound):
            item = entities[i]
            name, ctype = _name_and_type(item)
            if name is None or ctype not in self.onto.classes:
                continue
            top, strict = self.votes.majority(name)
            if top is None or top == ctype:
                continue
            corrected = self._retyped_entity(item, top)
            if not self._accepted(corrected):
                continue
            if not strict:
                trial = [*entities[:i], corrected, *entities[i + 1:]]
                now, then = self._known(entities[:bound]), self._known(trial[:bound])
                if sum(self._valid(t, then) for t in relations) <= sum(self._valid(t, now) for t in relations):
                    continue
            why = "a strict majority" if strict else "the most frequent class, and it makes a relation valid"
            dropped = sorted(set(_property_names(item)) - set(_property_names(corrected)))
            msg = (f"{name!r} listed as {ctype}, corrected to {top}: {why} ({self.votes.describe(name)})"
                   + (f"; properties {', '.join(dropped)} dropped ({top} does not declare them)" if dropped else ""))
            self._record(RepairReason.MAJORITY_CLASS, "entity", msg, item, corrected)
            entities[i] = corrected

    # ------------------------------------------------------------------ subclass the facts entail
    def _narrowing_pass(self, entities: list[Any], bound: int, relations: list[Any]) -> None:
        """Retype a listed entity to the subclass its facts take, when its own class fits none of them.

        With a class hierarchy a small model often lists the general class ("Person") while every
        relation about the name takes a subclass ("Astronaut", a kind of Person). A relation's domain
        and range say what its ends are (RDFS reads them so), so the entity is retyped when one
        subclass of its listed class is taken by every triple about it in the chunk, at least one of
        them refuses the listed class, and the retyped entity passes the validator."""
        for i in range(bound):
            item = entities[i]
            name, ctype = _name_and_type(item)
            if name is None or ctype not in self.onto.classes:
                continue
            sides = self._sides_of(name, relations)
            if not sides or all(ctype in allowed for _rel, allowed in sides):
                continue
            candidates = [c for c in self.onto.classes if c != ctype and self.onto.is_a(c, ctype)
                          and all(c in allowed for _rel, allowed in sides)]
            general = [c for c in candidates if not any(o != c and self.onto.is_a(c, o) for o in candidates)]
            if len(general) != 1:
                continue  # no subclass fits every fact, or two unrelated ones do: no guess
            narrowed = self._retyped_entity(item, general[0])
            if not self._accepted(narrowed):
                continue
            refusing = sorted({rel for rel, allowed in sides if ctype not in allowed})
            dropped = sorted(set(_property_names(item)) - set(_property_names(narrowed)))
            self._record(RepairReason.NARROWED_CLASS, "entity",
                         f"{name!r} listed as {ctype}; {', '.join(refusing)} take(s) a {general[0]}, a kind of "
                         f"{ctype}, and every relation about it in this chunk does: retyped to {general[0]}"
                         + (f"; properties {', '.join(dropped)} dropped ({general[0]} does not declare them)"
                            if dropped else ""),
                         item, narrowed)
            entities[i] = narrowed

    def _sides_of(self, name: str, relations: list[Any]) -> list[tuple[str, tuple[str, ...]]]:
        """(relation, classes it takes there) for each triple of the chunk that names ``name`` as an end."""
        key = normalize_name(name)
        out = []
        for triple in relations:
            if not isinstance(triple, dict) or not isinstance(triple.get("relation"), str):
                continue
            rel = self.onto.relation(triple["relation"])
            if rel is None:
                continue
            for end, allowed in (("subject", rel.domain), ("object", rel.range)):
                value = triple.get(end)
                if isinstance(value, str) and normalize_name(value) == key:
                    out.append((rel.name, tuple(allowed)))
        return out

    def _retyped_entity(self, item: dict[str, Any], cls: str) -> dict[str, Any]:
        """``item`` as class ``cls``, keeping only the properties ``cls`` declares."""
        declared = self.onto.classes[cls].properties
        out: dict[str, Any] = {"name": item["name"], "type": cls}
        for k, v in item.items():
            if k not in ENTITY_KEYS and k in declared:
                out[k] = v
        if isinstance(item.get("properties"), dict):
            props = {k: v for k, v in item["properties"].items() if k in declared}
            if props:
                out["properties"] = props
        return out

    # ------------------------------------------------------------------ triples
    def _repair_triple(self, triple: Any, known: dict[str, set[str]]) -> dict[str, Any] | None:
        """The repaired triple (and its records) when one repair makes it valid, or when the text words
        it the other way round; else None."""
        if not isinstance(triple, dict):
            return None
        if self._valid(triple, known):
            return self._reworded(triple, known)
        rel = self.onto.relation(triple.get("relation")) if isinstance(triple.get("relation"), str) else None
        subj, obj = triple.get("subject"), triple.get("object")
        if rel is None or not isinstance(subj, str) or not isinstance(obj, str) or not subj.strip() or not obj.strip():
            return None
        stype, otype = _opt_str(triple.get("subject_type")), _opt_str(triple.get("object_type"))
        orders = [False] if rel.symmetric else [False, True]  # a symmetric relation accepts either order
        for flipped in orders:
            s_name, s_type, o_name, o_type = (obj, otype, subj, stype) if flipped else (subj, stype, obj, otype)
            s = self._resolve(s_name, s_type, rel.domain, known, "subject", rel.name, rel.stated_domain)
            o = self._resolve(o_name, o_type, rel.range, known, "object", rel.name, rel.stated_range)
            if s is None or o is None or (not flipped and s.how is None and o.how is None):
                continue
            added = [{"name": r.name, "type": r.cls} for r in (s, o) if r.how == "inferred"]
            if not all(self._accepted(e) for e in added):
                continue
            trial_known = {k: set(v) for k, v in known.items()}
            for e in added:
                trial_known.setdefault(normalize_name(e["name"]), set()).add(e["type"])
            candidate = {**triple, "subject": s.name, "subject_type": s.cls, "object": o.name, "object_type": o.cls}
            if not self._valid(candidate, trial_known):
                continue
            self._apply(triple, candidate, rel.name, flipped, (s, o), added)
            known.clear()
            known.update(trial_known)
            return self._reworded(candidate, known) or candidate
        return None

    def _reworded(self, triple: dict[str, Any], known: Mapping[str, set[str]]) -> dict[str, Any] | None:
        """``triple`` with its ends swapped when its sentences word the fact the other way round
        (:meth:`ChunkText.stated_order` with the relation's cues), the relation is not symmetric and
        the swapped triple passes the validator; else None. Only with evidence, cues and
        ``cue_direction`` on: without cues the text says nothing about direction."""
        rules = self.v.evidence
        rel = self.onto.relation(triple.get("relation")) if isinstance(triple.get("relation"), str) else None
        if rules is None or not (rules.cues and rules.direction) or rel is None or rel.symmetric or not rel.all_cues:
            return None
        subj, obj = str(triple.get("subject")), str(triple.get("object"))
        text = self.chunk.text
        wording = text.stated_order(subj, obj, rel.cues, rel.reverse_cues, known, rules.threshold)
        if wording is None or wording.direction != "reverse":
            return None
        swapped = {**triple, "subject": obj, "subject_type": triple.get("object_type"), "object": subj,
                   "object_type": triple.get("subject_type")}
        if not self._valid(swapped, known):
            return None  # the reverse breaks domain, range or the entities' classes: the order is the ontology's
        quote = " ".join(text.text[wording.start:wording.end].split())
        self._record(RepairReason.REVERSED_BY_WORDING, "relation",
                     f"{rel.name}: the text words it from {obj!r} to {subj!r} (\"{quote}\"), so subject and "
                     "object were swapped", triple, swapped)
        return swapped

    def _resolve(self, name: str, given: str | None, allowed: Sequence[str], known: Mapping[str, set[str]],
                 end: End, relation: str, stated: Sequence[str] = ()) -> _Resolved | None:
        """The class an end can take: as given, retyped to its listed (majority) class, or inferred.

        ``allowed``: every class the relation takes there (subclasses included); ``stated``: the ones the
        ontology names (a single stated class is the one to infer, not one of its subclasses)."""
        listed = known.get(normalize_name(name), set())
        top, _ = self.votes.majority(name)
        if listed:
            if given in listed:
                return _Resolved(name, given, given)
            choice = next(iter(listed)) if len(listed) == 1 else (top if top in listed else None)
            if choice is None or choice != top:
                return None
            return _Resolved(name, given, choice, "retyped",
                             f"{choice} is its class in this chunk's entities and in most of the name's listings "
                             f"({self.votes.describe(name)})")
        stated = tuple(stated) or tuple(allowed)
        if len(stated) == 1 and given in (None, stated[0]):
            side = "domain" if end == "subject" else "range"
            cls, because = stated[0], f"the only class the {side} of {relation} allows"
        elif given in allowed:
            cls, because = given, f"the class the triple gives it, which {relation} allows there"
        else:
            return None  # no class given and two or more possible, or a class the relation refuses: no guess
        counts = self.votes.of(name)
        if counts and top != cls:
            return None  # the corpus lists the name with another class (or cannot decide)
        if not self.chunk.text.mentions(name, self.threshold):
            return None
        if self.chunk.text.common_noun(name, self.threshold):
            return None  # "occupies the throne": a common noun the model made an end, not a named thing to add
        return _Resolved(name, given, cls, "inferred",
                         f"{end} {name!r} was not among the chunk's entities; added as {cls}, {because}, "
                         "and the name is in the chunk text")

    def _apply(self, before: dict[str, Any], after: dict[str, Any], relation: str, flipped: bool,
               ends: tuple[_Resolved, _Resolved], added: list[dict[str, Any]]) -> None:
        """One record per change: each inferred entity, each end whose type changed in its position
        (a flip alone keeps the positional types the model wrote), the flip itself."""
        for r in ends:
            if r.how == "inferred":
                entity = next(e for e in added if e["name"] == r.name)
                self._record(RepairReason.INFERRED_CLASS, "entity", f"{relation}: {r.why}", before, entity)
                self.extra.append(entity)
        for r, position in zip(ends, ("subject", "object")):
            old = _opt_str(before.get(f"{position}_type"))
            if r.how == "retyped" and old != r.cls:
                swap = " (after the swap)" if flipped else ""
                self._record(RepairReason.MAJORITY_CLASS, "relation",
                             f"{relation}: {position}{swap} {r.name!r} was typed {old}, retyped to {r.cls}: {r.why}",
                             before, after)
        if flipped:
            self._record(RepairReason.FLIPPED_ENDS, "relation",
                         f"{relation}: ({before.get('subject')!r}, {before.get('object')!r}) fits neither domain "
                         f"and range in this order; the reverse does, so subject and object were swapped",
                         before, after)


def _property_names(item: Mapping[str, Any]) -> list[str]:
    """Property names an entity item carries (flat or under ``properties``)."""
    names = [k for k in item if k not in ENTITY_KEYS]
    if isinstance(item.get("properties"), dict):
        names += list(item["properties"])
    return names


def _opt_str(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
