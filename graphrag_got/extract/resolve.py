"""Entity resolution within a class: one record per real entity, every merge logged.

Validation merges two mentions only when their normalized names are equal (``entity_uid``). A model
writes the same entity under several names ("Casa X" and "X", "the Y" and "Y", a given name and the
full name), so :func:`resolve_entities` joins, within one ontology class, the records that name one
entity, by these rules in this order:

1. ``pinned``: the user's alias file says so (:class:`AliasFile`, ``<ontology stem>.aliases.json``).
2. ``article_or_class_word``: equal once the words of the class name (split at capitals: class
   ``NobleHouse`` gives "noble" and "house") and the leading articles are dropped (:func:`merge_key`).
3. ``containment``: the words of a name are a contiguous run of the words of exactly one longer
   name of the class ("Ada" and "Ada Lovelace"); never when two names of the class contain them.
4. ``fuzzy``: the same words spelt slightly differently (every word pair at least
   :data:`FUZZY_THRESHOLD` similar, or equal once spaces are removed), when each is the other's only
   close name.

Names the alias file lists as ``distinct`` are never joined, by any rule, even through a third name.
Every join is a :class:`~graphrag_got.extract.extraction.Merge` record (class, canonical uid and name, the
names and uids merged, rule, score, evidence). The fullest name of a group becomes the display name
(a pinned name wins), the other names its ``aliases``; relations are re-pointed to the canonical
entity and aggregated again with :func:`graphrag_got.extract.aggregate.aggregate` (two facts that become one
keep the union of their chunks); a relation whose two ends became one entity is refused as a
``self_relation`` rejection, never dropped silently.

Merges are reversible: edit the alias file and run ``graphrag-got extract --revalidate`` (stored
answers, no model call).
"""

from __future__ import annotations

import difflib
import logging
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple
from graphrag_got.extract.extraction import EntityRecord, Merge, MergeRule, Reason, Rejection, RelationRecord
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import TERM_CLASS, Ontology
from graphrag_got.extract.validate import ChunkValidation
from graphrag_got.extract.aggregate import aggregate, identity_attributes

from graphrag_got.extract.names import (FUZZY_THRESHOLD, class_words, content_tokens, merge_key,
                                      name_similarity, pairs, tokens)
from graphrag_got.extract.alias_file import AliasFile, alias_file_path, load_alias_file

__all__ = ["Resolution", "resolve_entities"]

logger = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------


class Resolution(NamedTuple):
    """What :func:`resolve_entities` returns (unpacks as four lists)."""

    entities: list[EntityRecord]
    relations: list[RelationRecord]
    merges: list[Merge]
    rejections: list[Rejection]  # relations whose ends were merged into one entity (self_relation)


@dataclass
class _Step:
    rule: MergeRule
    members: list[int]  # the entities joined by this step, the absorbing one first
    score: float
    evidence: str


class _ClassResolver:
    """Union-find over the entities of one class, with the distinct pairs as a veto."""

    def __init__(self, class_name: str, entities: list[EntityRecord], files: AliasFile):
        self.cls = class_name
        self.ents = entities
        self.words = class_words(class_name)
        self.keys = [merge_key(class_name, e.name, self.words) for e in entities]
        self.parent = list(range(len(entities)))
        self.names: dict[int, set[str]] = {i: {e.key} for i, e in enumerate(entities)}  # per root
        self.forbidden = files.distinct_pairs(class_name)
        self.pins = files.pinned(class_name)
        self.pinned_name: dict[int, str] = {}  # root -> canonical name given by the alias file
        self.steps: list[_Step] = []

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def allowed(self, a: int, b: int) -> bool:
        """Whether the groups of ``a`` and ``b`` may join: no distinct pair across them, and not two
        different names pinned by the user (two pinned entries are two entities)."""
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return True
        pa, pb = self.pinned_name.get(ra), self.pinned_name.get(rb)
        if pa is not None and pb is not None and pa != pb:
            return False
        if not self.forbidden:
            return True
        return not any(frozenset((x, y)) in self.forbidden for x in self.names[ra] for y in self.names[rb])

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return
        self.parent[rb] = ra
        self.names[ra] |= self.names.pop(rb)
        if rb in self.pinned_name:
            self.pinned_name.setdefault(ra, self.pinned_name.pop(rb))

    def groups(self) -> dict[int, list[int]]:
        out: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self.ents)):
            out[self.find(i)].append(i)
        return out

    # ------------------------------------------------------------------ rules
    def pinned(self) -> None:
        by_key: dict[str, list[int]] = defaultdict(list)
        for i, e in enumerate(self.ents):
            by_key[e.key].append(i)
        for canonical, others in self.pins.items():
            members = list(dict.fromkeys(i for n in (canonical, *others) for i in by_key.get(normalize_name(n), [])))
            if not members:
                continue
            for i in members[1:]:
                self.union(members[0], i)
            self.pinned_name[self.find(members[0])] = canonical
            if len(members) > 1 or self.ents[members[0]].key != normalize_name(canonical):
                self.steps.append(_Step("pinned", members, 1.0, f"pinned under {canonical!r} in the alias file"))

    def article_or_class_word(self) -> None:
        buckets: dict[str, list[int]] = defaultdict(list)
        for i, k in enumerate(self.keys):
            buckets[k].append(i)
        for key, members in buckets.items():
            if len(members) < 2:
                continue
            joined = [members[0]]
            for i in members[1:]:
                if self.find(i) == self.find(members[0]):
                    continue
                if self.allowed(members[0], i):
                    self.union(members[0], i)
                    joined.append(i)
            if len(joined) > 1:
                names = ", ".join(repr(self.ents[i].name) for i in joined)
                self.steps.append(_Step("article_or_class_word", joined, 1.0,
                                        f"{names} {'both' if len(joined) == 2 else 'all'} read {key!r} without "
                                        f"leading articles and the words of the class name "
                                        f"({', '.join(sorted(self.words))})"))

    def containment(self) -> None:
        toks = [k.split() for k in self.keys]
        index: dict[str, set[int]] = defaultdict(set)
        for i, ws in enumerate(toks):
            for w in ws:
                index[w].add(i)

        def fullest(root_members: list[int]) -> int:
            return max(root_members, key=lambda i: (len(toks[i]), len(self.keys[i]), -i))

        # longest first, so a chain (a < a b < a b c) collapses before its shortest name is placed
        reps = sorted((fullest(m) for m in self.groups().values()), key=lambda i: (len(toks[i]), i), reverse=True)
        for rep in reps:
            words = toks[rep]
            if not words:
                continue
            holders = set.intersection(*(index[w] for w in words))
            holders = {j for j in holders if len(toks[j]) > len(words) and _contains(toks[j], words)}
            groups = {self.find(j) for j in holders} - {self.find(rep)}
            if len(groups) != 1:
                if len(groups) > 1:
                    logger.debug("%s %r: not merged, %d names contain it", self.cls, self.ents[rep].name, len(groups))
                continue
            target = min((j for j in holders if self.find(j) in groups), key=lambda j: (len(toks[j]), j))
            if not self.allowed(target, rep):
                continue
            self.union(target, rep)
            self.steps.append(_Step("containment", [target, rep], round(len(words) / len(toks[target]), 3),
                                    f"the words of {self.keys[rep]!r} are in {self.keys[target]!r}, the only "
                                    f"{self.cls} name that contains them"))

    def fuzzy(self, threshold: float) -> None:
        groups = self.groups()
        root_of = {i: r for r, members in groups.items() for i in members}
        squashed: dict[str, list[int]] = defaultdict(list)
        for i, k in enumerate(self.keys):
            squashed[k.replace(" ", "")].append(i)
        close: dict[int, dict[int, tuple[float, int, int]]] = defaultdict(dict)  # root -> root -> best

        def note(i: int, j: int, s: float) -> None:
            ri, rj = root_of[i], root_of[j]
            if ri == rj or s < threshold:
                return
            for a, b, x, y in ((ri, rj, i, j), (rj, ri, j, i)):
                if s > close[a].get(b, (0.0, 0, 0))[0]:
                    close[a][b] = (s, x, y)

        for members in squashed.values():
            for i, j in _pairs_int(members):
                note(i, j, 1.0)
        words = [k.split() for k in self.keys]
        near = _close_words((w for ws in words for w in ws), threshold)
        by_head: dict[tuple[int, str], list[int]] = defaultdict(list)  # (word count, first word) -> names
        for i, ws in enumerate(words):
            if ws:
                by_head[(len(ws), ws[0])].append(i)
        for i, ws in enumerate(words):
            if not ws:
                continue
            for head in (ws[0], *near.get(ws[0], ())):
                for j in by_head.get((len(ws), head), ()):
                    if j <= i or self.keys[i] == self.keys[j]:
                        continue
                    if all(x == y or y in near.get(x, ()) for x, y in zip(ws, words[j])):
                        note(i, j, name_similarity(self.keys[i], self.keys[j]))
        for a in sorted(close):
            if len(close[a]) != 1:
                continue
            (b, (s, x, y)), = close[a].items()
            if a > b or len(close[b]) != 1 or not self.allowed(x, y):
                continue  # each pair once; only each other's only close name
            self.union(x, y)
            self.steps.append(_Step("fuzzy", [x, y], round(s, 3),
                                    f"{self.keys[x]!r} and {self.keys[y]!r} are spelt alike (similarity "
                                    f"{s:.2f}, threshold {threshold:.2f}) and each is the other's only close name"))


def _contains(longer: list[str], shorter: list[str]) -> bool:
    n = len(shorter)
    return any(longer[k:k + n] == shorter for k in range(len(longer) - n + 1))


def _pairs_int(items: list[int]) -> Iterable[tuple[int, int]]:
    for k, a in enumerate(items):
        for b in items[k + 1:]:
            yield a, b


def _close_words(words: Iterable[str], threshold: float) -> dict[str, set[str]]:
    """Word -> the other words at least ``threshold`` similar (difflib ratio), over the distinct words.

    Candidates come from a deletion index (a word and its variants with one or two characters
    removed, as many as the threshold allows for its length, at most two): two words a ratio apart
    share a variant, so only those few pairs are compared, not every pair of the vocabulary.
    """
    vocab = sorted(set(words))
    index: dict[str, set[str]] = defaultdict(set)
    for w in vocab:
        for variant in _deletions(w, _edits_allowed(len(w), threshold)):
            index[variant].add(w)
    near: dict[str, set[str]] = defaultdict(set)
    for bucket in index.values():
        for a, b in pairs(sorted(bucket)):
            if b in near[a]:
                continue
            m = difflib.SequenceMatcher(None, a, b)
            if m.real_quick_ratio() >= threshold and m.quick_ratio() >= threshold and m.ratio() >= threshold:
                near[a].add(b)
                near[b].add(a)
    return near


def _edits_allowed(length: int, threshold: float) -> int:
    return min(2, max(1, int((1 - threshold) * length + 1e-9)))


def _deletions(word: str, edits: int) -> set[str]:
    out, frontier = {word}, {word}
    for _ in range(edits):
        frontier = {w[:k] + w[k + 1:] for w in frontier for k in range(len(w))}
        out |= frontier
    return out


def _fullness(e: EntityRecord) -> tuple[Any, ...]:
    """Sort key, fullest name first: more words (leading articles not counted), no leading article,
    more chunks, longer, then alphabetical."""
    words = tokens(e.name)
    content = content_tokens(e.name)
    return (-len(content), len(content) < len(words), -len(e.chunk_ids), -len(e.name), e.name)


def resolve_entities(entities: Sequence[EntityRecord], relations: Sequence[RelationRecord], onto: Ontology, *,
                     aliases: AliasFile | str | Path | None = None,
                     fuzzy_threshold: float = FUZZY_THRESHOLD) -> Resolution:
    """Join the records that name one entity within each class (see the module docstring).

    ``entities`` and ``relations`` are aggregated records (one per uid / fact), as
    :func:`graphrag_got.extract.aggregate.aggregate` returns them. ``aliases`` is the alias file (an
    :class:`AliasFile` or a path); None reads ``<ontology stem>.aliases.json`` beside the ontology
    when it exists (the caller reads ``extract.resolution``, whether to resolve at all). Raises
    :class:`AliasFileError` for a bad alias file. The inputs are not modified.
    """
    files = load_alias_file(onto, aliases)
    by_class: dict[str, list[EntityRecord]] = defaultdict(list)
    for e in entities:
        by_class[e.type].append(e)

    canonical_of: dict[str, EntityRecord] = {}  # old uid -> the record it became
    first_seen: dict[str, int] = {}  # canonical uid -> position of its first member in the input
    position = {e.uid: n for n, e in enumerate(entities)}
    merges: list[Merge] = []
    for cname, ents in by_class.items():
        r = _ClassResolver(cname, ents, files)
        r.pinned()
        if cname != TERM_CLASS:  # untyped key terms are the words of the notes: "Templates" is not "Insert template"
            r.article_or_class_word()
            r.containment()
            r.fuzzy(fuzzy_threshold)
        records: dict[int, EntityRecord] = {}
        for root, members in r.groups().items():
            rec = _merged_record([ents[i] for i in members], r.pinned_name.get(root), files.pinned(cname))
            records[root] = rec
            for i in members:
                canonical_of[ents[i].uid] = rec
            first_seen[rec.uid] = min(position[ents[i].uid] for i in members)
        for step in r.steps:
            rec = records[r.find(step.members[0])]
            merged = [ents[i] for i in step.members if ents[i].uid != rec.uid]
            if not merged:
                continue
            merges.append(Merge(type=cname, canonical_uid=rec.uid, canonical_name=rec.name,
                                merged_names=[e.name for e in merged], merged_uids=[e.uid for e in merged],
                                rule=step.rule, score=step.score, evidence=step.evidence))

    merged_entities = sorted({id(rec): rec for rec in canonical_of.values()}.values(),
                             key=lambda rec: first_seen[rec.uid])
    repointed: list[RelationRecord] = []
    rejections: list[Rejection] = []
    for rel in relations:
        s = canonical_of.get(rel.subject_uid)
        o = canonical_of.get(rel.object_uid)
        # aggregate() below builds new records and never changes these, so an end that stays is not copied
        moved: dict[str, str] = {}
        if s is not None and (s.name, s.key) != (rel.subject, rel.subject_key):
            moved.update(subject=s.name, subject_key=s.key)
        if o is not None and (o.name, o.key) != (rel.object, rel.object_key):
            moved.update(object=o.name, object_key=o.key)
        new = rel.model_copy(update=moved) if moved else rel
        if new.subject_uid == new.object_uid:
            rejections += _self_relation(rel, new, files, onto)
            continue
        repointed.append(new)
    validation = ChunkValidation(chunk_id=None, document_id=None, entities=merged_entities, relations=repointed)
    out_entities, out_relations = aggregate([validation], identity_attributes(onto))
    if merges or rejections:
        logger.info("entity resolution: %d merge(s), %d entities -> %d, %d relation(s) refused as self-relations",
                    len(merges), len(entities), len(out_entities), len(rejections))
    return Resolution(out_entities, out_relations, merges, rejections)


def _merged_record(members: list[EntityRecord], pinned: str | None,
                   pins: Mapping[str, tuple[str, ...]]) -> EntityRecord:
    """One record for a group: the fullest (or pinned) name, the others as aliases, properties of the
    display record first, chunk ids unioned in input order."""
    ordered = sorted(members, key=_fullness)
    head = ordered[0]
    name = pinned.strip() if pinned else head.name
    key = normalize_name(name)
    props: dict[str, str] = {}
    chunk_ids: list[str] = []
    for e in ([head] + [m for m in members if m is not head]):
        for k, v in e.properties.items():
            props.setdefault(k, v)
    mentions: dict[str, float] = {}
    for e in members:
        for cid in e.chunk_ids:
            if cid not in chunk_ids:
                chunk_ids.append(cid)
        for cid, conf in e.mentions.items():
            mentions[cid] = max(conf, mentions.get(cid, conf))
    seen = {key}
    aliases: list[str] = []
    for alias in [a for e in ordered for a in (e.name, *e.aliases)] + list(pins.get(pinned or "", ())):
        k = normalize_name(alias)
        if k and k not in seen:
            seen.add(k)
            aliases.append(alias)
    return EntityRecord(uid=f"{head.type}|{key}", key=key, name=name, type=head.type, properties=props,
                        chunk_ids=chunk_ids, aliases=aliases, mentions=mentions)


def _document_of(chunk_id: str | None) -> str | None:
    """Chunk ids are ``<document id>:<hash prefix>`` (see :mod:`graphrag_got.ingest.chunking`)."""
    return chunk_id.rpartition(":")[0] or None if chunk_id else None


def _self_relation(old: RelationRecord, new: RelationRecord, files: AliasFile, onto: Ontology) -> list[Rejection]:
    """One ``self_relation`` rejection per chunk of a fact whose two ends were merged into one."""
    where = alias_file_path(onto)
    hint = (f"If they are different entities, list them under \"distinct\" in {files.path or where or 'the alias file'}"
            " and run `graphrag-got extract --revalidate`.")
    message = (f"{old.relation} links {old.subject!r} to {old.object!r}, which entity resolution merged into "
               f"one entity {new.subject!r}: a relation from an entity to itself is refused. {hint}")
    item = {"relation": old.relation, "subject": old.subject, "subject_type": old.subject_type,
            "object": old.object, "object_type": old.object_type, "attributes": dict(old.attributes)}
    return [Rejection(kind="relation", reason=Reason.SELF_RELATION, message=message, item=item, chunk_id=cid,
                      document_id=_document_of(cid), relation=old.relation, subject=old.subject,
                      subject_type=old.subject_type, object=old.object, object_type=old.object_type,
                      end="object", end_name=old.object, end_type=old.object_type)
            for cid in (old.chunk_ids or [None])]
