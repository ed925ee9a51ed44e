"""The review pages' data: what an extraction kept and refused, passage by passage.

:func:`build_review` turns an :class:`~graphrag_got.extract.extraction.Extraction` into a
:class:`ReviewBook`: one :class:`ReviewDocument` per document, each a list of :class:`ReviewChunk`
(the passage text with every kept entity placed where the text names it, the kept facts beside the
sentence that states them, the refused items with their reason codes). Rendering is
:mod:`graphrag_got.teach.review_render`'s job; nothing here knows about HTML.

Placing names reuses :class:`~graphrag_got.common.text_match.ChunkText` (case, accents, leading
articles and plurals do not matter); where two mentions overlap the longer one wins.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field

from graphrag_got.common.text_match import ChunkText, Mention, Span
from graphrag_got.extract.extraction import ChunkRecord, EntityRecord, Extraction, RelationRecord, Rejection
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)

#: Colours the page has for classes (review.css.j2 defines ``.k0`` .. ``.k11``); more classes reuse them.
PALETTE_SIZE = 12
EXACT, FUZZY = 1.0, 0.85  # mention thresholds: exact names first, a spelling a little off only when none is found
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
SentenceSource = Literal["evidence", "sentence", "passage"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Highlight(_Model):
    """A kept entity named in a passage: ``text[start:end]`` (chunk offsets)."""

    start: int
    end: int
    text: str
    class_name: str
    entity: str  # the entity's own name (the text may write an alias, or another case)
    uid: str
    exact: bool = True


class Segment(_Model):
    """A piece of passage text, highlighted or not (the page prints the segments in order)."""

    text: str
    highlight: Highlight | None = None


class ReviewEntity(_Model):
    """A kept entity of one passage, as the edit mode offers it: ``example_name`` is the name the
    passage writes (an example's names must occur in its text)."""

    uid: str
    name: str
    class_name: str
    example_name: str
    placed: bool  # named somewhere in the passage


class ReviewFact(_Model):
    """A kept fact of a passage and the sentence that states it (``sentence_source`` says how it was found:
    the fact's evidence span, the first sentence naming both ends, or the whole passage)."""

    id: str
    key: str  # the same fact in several passages has one key
    subject: str
    subject_uid: str
    subject_type: str
    relation: str
    object: str
    object_uid: str
    object_type: str
    attributes: dict[str, str] = Field(default_factory=dict)
    symmetric: bool = False
    sentence_source: SentenceSource
    start: int
    end: int


class ReviewRefusal(_Model):
    """A refused item of a passage: what it was, its reason code and the validator's message."""

    kind: str
    reason: str
    message: str
    label: str
    relation: str | None = None
    class_name: str | None = None
    allowed: tuple[str, ...] = ()


class SentenceGroup(_Model):
    """The facts one sentence (or the whole passage) states, in the page's order."""

    source: SentenceSource
    start: int
    end: int
    segments: tuple[Segment, ...]
    facts: tuple[ReviewFact, ...]


class ReviewChunk(_Model):
    id: str
    document_id: str
    index: int
    heading: str | None = None
    location: str = ""  # where in its document: "p. 12" (PDF), "Installation > Network" (headings)
    text: str
    highlights: tuple[Highlight, ...] = ()
    entities: tuple[ReviewEntity, ...] = ()
    facts: tuple[ReviewFact, ...] = ()
    refusals: tuple[ReviewRefusal, ...] = ()
    failure: str | None = None  # the model gave no usable answer for this passage (reason: error)

    @property
    def segments(self) -> list[Segment]:
        return segments(self.text, self.highlights)

    @property
    def unplaced(self) -> list[ReviewEntity]:
        return [e for e in self.entities if not e.placed]

    @property
    def classes(self) -> list[str]:
        return sorted({e.class_name for e in self.entities})

    @property
    def relations(self) -> list[str]:
        return sorted({f.relation for f in self.facts} | {r.relation for r in self.refusals if r.relation})

    @property
    def reasons(self) -> list[str]:
        return sorted({r.reason for r in self.refusals})

    def sentence_groups(self) -> list[SentenceGroup]:
        """The facts grouped by the sentence that states them, in text order; whole-passage facts last."""
        groups: dict[tuple[int, int, str], list[ReviewFact]] = {}
        for fact in self.facts:
            groups.setdefault((fact.start, fact.end, fact.sentence_source), []).append(fact)
        order = sorted(groups, key=lambda k: (k[2] == "passage", k[0], k[1]))
        return [SentenceGroup(source=src, start=a, end=b, facts=tuple(groups[(a, b, src)]),
                              segments=tuple(segments(self.text, self.highlights, a, b) if src != "passage" else ()))
                for a, b, src in order]


class ReviewCounts(_Model):
    passages: int = 0
    entities: int = 0
    facts: int = 0
    refusals: int = 0
    failed: int = 0
    by_class: dict[str, int] = Field(default_factory=dict)
    by_relation: dict[str, int] = Field(default_factory=dict)
    by_reason: dict[str, int] = Field(default_factory=dict)


class ReviewDocument(_Model):
    id: str
    path: str = ""
    page: str  # the file name of its page (``<safe name>.html``)
    chunks: tuple[ReviewChunk, ...] = ()
    loose_refusals: tuple[ReviewRefusal, ...] = ()  # refusals of the document tied to no known passage
    counts: ReviewCounts = Field(default_factory=ReviewCounts)


class OntologyRelation(_Model):
    name: str
    domain: tuple[str, ...]
    range: tuple[str, ...]
    symmetric: bool = False


class ReviewOntology(_Model):
    """What the edit mode needs of the ontology: its classes and relations with domain and range."""

    source: str = ""
    classes: tuple[str, ...] = ()
    relations: tuple[OntologyRelation, ...] = ()


class ReviewBook(_Model):
    """Every page's data: the documents, the colour of each class, and the ontology when it loaded."""

    source: str = ""
    documents: tuple[ReviewDocument, ...] = ()
    colours: dict[str, int] = Field(default_factory=dict)
    ontology: ReviewOntology | None = None
    counts: ReviewCounts = Field(default_factory=ReviewCounts)
    notes: tuple[str, ...] = ()

    def document(self, key: str) -> ReviewDocument | None:
        """The document whose id or page file name (with or without ``.html``) is ``key``."""
        for doc in self.documents:
            if key in (doc.id, doc.page, doc.page.removesuffix(".html")):
                return doc
        return None

    def chunk(self, chunk_id: str) -> ReviewChunk | None:
        return next((c for d in self.documents for c in d.chunks if c.id == chunk_id), None)


# ============================================================================ passage text
def segments(text: str, highlights: Iterable[Highlight], start: int = 0, end: int | None = None) -> list[Segment]:
    """``text[start:end]`` cut into plain and highlighted pieces (highlights clipped to the range)."""
    stop = len(text) if end is None else min(end, len(text))
    out: list[Segment] = []
    pos = start
    for h in sorted(highlights, key=lambda h: h.start):
        if h.end <= pos or h.start >= stop:
            continue
        a, b = max(h.start, pos), min(h.end, stop)
        if a > pos:
            out.append(Segment(text=text[pos:a]))
        out.append(Segment(text=text[a:b], highlight=h))
        pos = b
    if pos < stop:
        out.append(Segment(text=text[pos:stop]))
    return out


def place_entities(chunk: ChunkText, entities: Iterable[EntityRecord]) -> list[Highlight]:
    """Where the passage names each entity (its name or an alias). Overlapping mentions: exact ones
    before near spellings, then the longest, then the first."""
    candidates: list[Highlight] = []
    for ent in entities:
        names = list(dict.fromkeys([ent.name, *ent.aliases]))
        found = _mentions(chunk, ent, names, EXACT)
        candidates += found or _mentions(chunk, ent, names, FUZZY)
    candidates.sort(key=lambda h: (not h.exact, -(h.end - h.start), h.start))
    chosen: list[Highlight] = []
    for h in candidates:
        if all(h.end <= c.start or h.start >= c.end for c in chosen):
            chosen.append(h)
    return sorted(chosen, key=lambda h: h.start)


def _mentions(chunk: ChunkText, ent: EntityRecord, names: list[str], threshold: float) -> list[Highlight]:
    return [Highlight(start=m.start, end=m.end, text=chunk.text[m.start:m.end], class_name=ent.type, entity=ent.name,
                      uid=ent.uid, exact=threshold >= EXACT)
            for name in names for m in chunk.find(name, threshold)]


def _example_name(chunk: ChunkText, ent: EntityRecord, highlights: list[Highlight]) -> str:
    """The name an example of this passage should give the entity: its own name or an alias when the text
    writes it, else the words the text uses where it was placed, else its own name."""
    for name in (ent.name, *ent.aliases):
        if chunk.find(name, EXACT):
            return name
    mine = [h for h in highlights if h.uid == ent.uid]
    return mine[0].text if mine else ent.name


# ============================================================================ facts and refusals
def _fact_span(chunk: ChunkText, chunk_id: str, rel: RelationRecord, others: list[str],
               cues: tuple[str, ...] = ()) -> tuple[SentenceSource, int, int]:
    """Where the passage states ``rel``: its evidence span for this chunk, else the first sentence that
    names both ends (the first one that also holds a cue of the relation, when one does), else the whole passage."""
    for ev in rel.evidence:  # a span without its chunk id is this chunk's when the fact has no other
        mine = ev.chunk_id == chunk_id or (ev.chunk_id is None and rel.chunk_ids == [chunk_id])
        if mine and 0 <= ev.start < ev.end <= len(chunk.text) and chunk.text[ev.start:ev.end] == ev.text:
            return "evidence", ev.start, ev.end
    spans = chunk.evidence(rel.subject, rel.object, window=0, threshold=FUZZY, limit=len(chunk.sentences),
                           others=others)
    if not spans:
        return "passage", 0, len(chunk.text)
    if not cues:
        return "sentence", spans[0].start, spans[0].end
    best = min(spans, key=lambda s: (not _cue_between(chunk, s, rel, cues, others),
                                     not chunk.has_cue(s.start, s.end, cues, others, FUZZY), s.start))
    return "sentence", best.start, best.end


def _cue_between(chunk: ChunkText, span: Span, rel: RelationRecord, cues: tuple[str, ...], others: list[str]) -> bool:
    """Whether a cue of the relation stands between a mention of each end inside ``span``."""
    def inside(name: str) -> list[Mention]:
        return [m for m in chunk.own_mentions(name, FUZZY, others) if span.start <= m.start and m.end <= span.end]

    return any(chunk.has_cue(min(x.end, y.end), max(x.start, y.start), cues, others, FUZZY)
               for x in inside(rel.subject) for y in inside(rel.object) if x.end <= y.start or y.end <= x.start)


def _fact(chunk: ChunkText, chunk_id: str, rel: RelationRecord, number: int, others: list[str],
          cues: tuple[str, ...] = ()) -> ReviewFact:
    source, start, end = _fact_span(chunk, chunk_id, rel, others, cues)
    attributes = sorted(f"{k}={v}" for k, v in rel.attributes.items())
    key = "|".join((rel.subject_uid, rel.relation, rel.object_uid, *attributes))
    return ReviewFact(id=f"{chunk_id}#f{number}", key=key, subject=rel.subject, subject_uid=rel.subject_uid,
                      subject_type=rel.subject_type, relation=rel.relation, object=rel.object,
                      object_uid=rel.object_uid, object_type=rel.object_type, attributes=dict(rel.attributes),
                      symmetric=rel.symmetric, sentence_source=source, start=start, end=end)


def refusal(rec: Rejection) -> ReviewRefusal:
    """A rejection record as the page shows it: a one-line label of the refused item."""
    return ReviewRefusal(kind=rec.kind, reason=rec.reason.value, message=rec.message, label=_refusal_label(rec),
                         relation=rec.relation or _text(rec.item.get("relation")),
                         class_name=rec.entity_type or rec.end_type or _text(rec.item.get("type")),
                         allowed=tuple(rec.allowed))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _refusal_label(rec: Rejection) -> str:
    item = rec.item
    if rec.kind == "relation":
        subject = rec.subject or _text(item.get("subject")) or "?"
        obj = rec.object or _text(item.get("object")) or "?"
        relation = rec.relation or _text(item.get("relation")) or "?"
        s_type = f" ({rec.subject_type})" if rec.subject_type else ""
        o_type = f" ({rec.object_type})" if rec.object_type else ""
        return f"{subject}{s_type} -{relation}-> {obj}{o_type}"
    if rec.kind == "entity":
        name = rec.entity_name or _text(item.get("name")) or "?"
        return f"{name} ({rec.entity_type})" if rec.entity_type else name
    owner = rec.entity_name or (f"-{rec.relation}->" if rec.relation else "")
    value = f" = {rec.value}" if rec.value is not None else ""
    return f"{owner} {rec.property or '?'}{value}".strip()


# ============================================================================ building
def build_chunk(chunk: ChunkRecord, entities: list[EntityRecord], relations: list[RelationRecord],
                rejections: list[Rejection], failure: str | None = None,
                cues: dict[str, tuple[str, ...]] | None = None) -> ReviewChunk:
    """One passage's review: its kept entities placed in the text, its facts and its refusals. ``cues``: the
    wording of each relation (the ontology's), to pick the sentence stating a fact among those naming its ends."""
    text = ChunkText(chunk.text)
    highlights = place_entities(text, entities)
    placed = {h.uid for h in highlights}
    names = [e.name for e in entities]
    people = tuple(ReviewEntity(uid=e.uid, name=e.name, class_name=e.type, placed=e.uid in placed,
                                example_name=_example_name(text, e, highlights)) for e in entities)
    facts = tuple(_fact(text, chunk.id, r, i, names, (cues or {}).get(r.relation, ()))
                  for i, r in enumerate(relations, 1))
    return ReviewChunk(id=chunk.id, document_id=chunk.document_id, index=chunk.index, heading=chunk.heading,
                       location=chunk.location,
                       text=chunk.text, highlights=tuple(highlights), entities=people, facts=facts,
                       refusals=tuple(refusal(r) for r in rejections), failure=failure)


def _index(items: Iterable[Any], key: Any) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in items:
        for cid in key(item):
            out.setdefault(cid, []).append(item)
    return out


def count(chunks: Iterable[ReviewChunk], loose: Iterable[ReviewRefusal] = ()) -> ReviewCounts:
    chunks, loose = list(chunks), list(loose)
    refusals = [r for c in chunks for r in c.refusals] + loose
    uids = {e.uid: e.class_name for c in chunks for e in c.entities}
    facts = list({f.key: f for c in chunks for f in c.facts}.values())  # a fact stated in two passages counts once
    return ReviewCounts(passages=len(chunks), entities=len(uids), facts=len(facts), refusals=len(refusals),
                        failed=sum(c.failure is not None for c in chunks),
                        by_class=dict(sorted(Counter(uids.values()).items())),
                        by_relation=dict(sorted(Counter(f.relation for f in facts).items())),
                        by_reason=dict(sorted(Counter(r.reason for r in refusals).items())))


def page_names(document_ids: Iterable[str]) -> dict[str, str]:
    """A file name per document id (``notes/a b.md`` -> ``notes_a_b.md.html``): only safe characters,
    unique (a short hash of the id is added where two ids give one name), never ``index.html``."""
    ids = list(document_ids)
    bases = {d: _UNSAFE.sub("_", d).strip("._") or "document" for d in ids}
    seen = Counter(b.lower() for b in bases.values())
    out: dict[str, str] = {}
    for d, base in bases.items():
        if seen[base.lower()] > 1 or base.lower() == "index":
            base = f"{base}-{hashlib.sha256(d.encode('utf-8')).hexdigest()[:8]}"
        out[d] = base[:150] + ".html"
    return out


def review_ontology(onto: Ontology) -> ReviewOntology:
    return ReviewOntology(source=onto.source, classes=tuple(onto.classes),
                          relations=tuple(OntologyRelation(name=r.name, domain=r.domain, range=r.range,
                                                           symmetric=r.symmetric) for r in onto.relations))


def class_colours(classes: Iterable[str]) -> dict[str, int]:
    """A palette index per class, in the order given (the ontology's order, then any the file adds)."""
    return {c: i % PALETTE_SIZE for i, c in enumerate(dict.fromkeys(classes))}


def build_review(extraction: Extraction | str | Path, ontology: Ontology | None = None, *,
                 source: str = "") -> ReviewBook:
    """The review of every document of ``extraction`` (an instance or a file path; a bad file raises
    :class:`~graphrag_got.errors.ExtractionFileError`). ``ontology`` adds the edit mode's classes and
    relations and fixes the class colours to its order."""
    ext = Extraction.read(extraction)
    label = source or (str(extraction) if not isinstance(extraction, Extraction) else "")
    ents = _index(ext.entities, lambda e: e.chunk_ids)
    rels = _index(ext.relations, lambda r: dict.fromkeys(r.chunk_ids))
    chunk_ids = {c.id for c in ext.chunks}
    refused = _index(ext.rejections, lambda r: [r.chunk_id] if r.chunk_id in chunk_ids else [])
    failures = {f.chunk_id: f"{f.reason.value}: {f.error}" if f.error else f.reason.value for f in ext.failed_chunks}
    loose = _index((r for r in ext.rejections if r.chunk_id not in chunk_ids), lambda r: [r.document_id or ""])
    by_doc = _index(sorted(ext.chunks, key=lambda c: c.index), lambda c: [c.document_id])
    names = page_names(d.id for d in ext.documents)
    cues = {r.name: r.all_cues for r in ontology.relations} if ontology else {}
    documents = []
    for doc in ext.documents:
        chunks = [build_chunk(c, ents.get(c.id, []), rels.get(c.id, []), refused.get(c.id, []), failures.get(c.id),
                              cues) for c in by_doc.get(doc.id, [])]
        extra = tuple(refusal(r) for r in loose.get(doc.id, []))
        documents.append(ReviewDocument(id=doc.id, path=doc.path, page=names[doc.id], chunks=tuple(chunks),
                                        loose_refusals=extra, counts=count(chunks, extra)))
    notes = [] if ontology is not None else ["No ontology loaded: the classes and relations to choose from in the "
                                             "edit mode are the ones this file uses."]
    colours = class_colours([*(ontology.classes if ontology else ()), *sorted({e.type for e in ext.entities})])
    every = [c for d in documents for c in d.chunks]
    logger.info("review of %s: %d documents, %d passages", label or "an extraction", len(documents), len(every))
    return ReviewBook(source=label, documents=tuple(documents), colours=colours, notes=tuple(notes),
                      ontology=review_ontology(ontology) if ontology else _ontology_of(ext),
                      counts=count(every, [r for d in documents for r in d.loose_refusals]))


def _ontology_of(ext: Extraction) -> ReviewOntology:
    """Without the ontology: the classes and relations the file itself uses (domain and range as seen)."""
    classes = sorted({e.type for e in ext.entities})
    seen: dict[str, tuple[set[str], set[str], bool]] = {}
    for r in ext.relations:
        dom, rng, _ = seen.setdefault(r.relation, (set(), set(), r.symmetric))
        dom.add(r.subject_type)
        rng.add(r.object_type)
    return ReviewOntology(classes=tuple(classes), relations=tuple(
        OntologyRelation(name=n, domain=tuple(sorted(d)), range=tuple(sorted(g)), symmetric=s)
        for n, (d, g, s) in sorted(seen.items())))


__all__ = ["Highlight", "ReviewBook", "ReviewChunk", "ReviewCounts", "ReviewDocument", "ReviewEntity", "ReviewFact",
           "ReviewOntology", "ReviewRefusal", "Segment", "SentenceGroup", "build_chunk", "build_review",
           "class_colours", "page_names", "place_entities", "segments"]
