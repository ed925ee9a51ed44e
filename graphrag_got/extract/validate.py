"""Check every extracted entity and triple against the ontology, in code: the one validator.

Constrained decoding already narrows what a model can write, but answers can be replayed from any
model, repaired from broken JSON, or produced by a provider that ignores the schema; and an ontology
may be edited between extraction and load. So ``extract``, ``extract --revalidate`` and ``load``
all pass every item through :class:`Validator`, with the same reason codes
(:class:`~graphrag_got.extract.extraction.Reason`). Results are data: accepted items are the records of
``extraction.json`` (:class:`EntityRecord`, :class:`RelationRecord`) and refusals are
:class:`Rejection` records with structured fields (which end or property, the offending value and
type, what was allowed), so the report never re-derives them.

Evidence (:mod:`graphrag_got.extract.evidence`) is checked when the validator is built with
:class:`EvidenceRules` *and* a call passes the chunk text: an entity its chunk never mentions is
refused (``not_in_text``), and so is a triple whose two ends are never mentioned within the sentence
window (``ends_not_near``); a kept triple carries its evidence spans. Calls without text (``load``
re-checking records of a file) check the ontology rules only.
"""

from __future__ import annotations

from pydantic import JsonValue

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Collection, Iterable, Mapping, Sequence

from graphrag_got.extract.answer import ENTITY_KEYS, RELATION_KEYS, RawAnswer, summarize
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.extraction import End, EntityRecord, Evidence, FactScore, Kind, Reason, Rejection, RelationRecord
from graphrag_got.common.normalize import entity_uid, normalize_name
from graphrag_got.ontology.model import TERM_CLASS, Ontology, OntologyClass, PropertySpec

__all__ = ["NAME_MAX", "VALUE_MAX", "ChunkValidation", "EvidenceRules", "Reason", "Rejection", "Validator",
           "known_entities", "validate_chunk"]

NAME_MAX = 200  # longer "names" are sentences the model pasted, not entity names
VALUE_MAX = 2000  # longest property / attribute value kept
_INT_MAX = 2**53  # integers the model wrote as numbers are kept as text up to here



@dataclass
class ChunkValidation:
    """What one chunk's answer yielded: accepted records (``chunk_ids`` = this chunk) and refusals."""

    chunk_id: str | None
    document_id: str | None
    entities: list[EntityRecord] = field(default_factory=list)
    relations: list[RelationRecord] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        return {
            "entities": len(self.entities),
            "relations": len(self.relations),
            "rejected_relations": sum(r.kind == "relation" for r in self.rejections),
            "rejected_entities": sum(r.kind == "entity" for r in self.rejections),
            "rejected_properties": sum(r.kind == "property" for r in self.rejections),
            "by_reason": dict(Counter(r.reason.value for r in self.rejections)),
        }


class _BadValue(ValueError):
    """A scalar that cannot be stored as text (NaN, a nested object...)."""


def _text(value: Any) -> str | None:
    """A scalar as clean text; None for null/empty. Raises _BadValue for what is not text."""
    if type(value) is str:  # nearly every value: what the general path below does to a str, sooner
        return value.strip() or None
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, (dict, list)):
        raise _BadValue(f"a {type(value).__name__} is not text")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _BadValue(f"{value!r} is not a value")
        value = int(value) if value.is_integer() and abs(value) < _INT_MAX else value
    if isinstance(value, int) and abs(value) >= _INT_MAX:
        raise _BadValue(f"the number {value} is out of range")
    text = str(value).strip()
    return text or None


def _name(value: Any) -> str | None:
    """An entity name: text only. A bare number (or NaN, true...) is a model slip, not a name."""
    if type(value) is str:
        return value.strip() or None
    if value is not None and not isinstance(value, str):
        raise _BadValue(f"a name must be text, got the {type(value).__name__} {str(value)[:40]}")
    return _text(value)


def _soft_text(value: Any) -> str | None:
    if type(value) is str:
        return value.strip() or None
    try:
        return _text(value)
    except _BadValue:
        return None


class Validator:
    """Validates raw model answers (and records of an extraction file) against one ontology.

    ``evidence``: the evidence rules applied to calls that pass the chunk text (None: never).
    """

    def __init__(self, ontology: Ontology, *, max_entities: int | None = None, max_relations: int | None = None,
                 evidence: EvidenceRules | None = None, min_confidence: float = 0.0, min_probability: float = 0.0,
                 terms: bool = False):
        self.onto = ontology
        # terms: the untyped key terms of the terms strategy (TERM_CLASS, no property) are entities too
        self._classes = {**ontology.classes, **({TERM_CLASS: OntologyClass(name=TERM_CLASS)} if terms else {})}
        self.min_confidence = min_confidence
        self.min_probability = min_probability  # classify strategy: a chosen fact's least probability
        self.max_entities = max_entities
        self.max_relations = max_relations
        self.evidence = evidence
        # normalized enum value -> declared value, per (class, property) and per relation attribute
        self._enums: dict[tuple[str | None, str], dict[str, str]] = {}
        for cname, klass in ontology.classes.items():
            for pname, spec in klass.properties.items():
                if spec.kind == "enum":
                    self._enums[(cname, pname)] = {normalize_name(v): v for v in spec.values}
        for aname, spec in ontology.relation_attributes.items():
            if spec.kind == "enum":
                self._enums[(None, aname)] = {normalize_name(v): v for v in spec.values}
        # the required properties of each class and the required relation attributes (checked per item)
        self._required = {cname: [p for p, spec in klass.properties.items() if spec.required]
                          for cname, klass in ontology.classes.items()}
        self._required_attributes = [a for a, spec in ontology.relation_attributes.items() if spec.required]

    # ------------------------------------------------------------------ values
    def _value(self, owner: str | None, pname: str, spec: PropertySpec, value: Any) -> tuple[str | None, str | None]:
        """(clean value, problem): the value as stored, or why it is refused."""
        try:
            text = _text(value)
        except _BadValue as exc:
            return None, str(exc)
        if text is None:
            return None, None
        if len(text) > VALUE_MAX:
            return None, f"{len(text)} characters long (max {VALUE_MAX})"
        if spec.kind == "enum":
            canon = self._enums[(owner, pname)].get(normalize_name(text))
            if canon is None:
                return None, "enum"
            return canon, None
        return text, None

    # ------------------------------------------------------------------ entities
    def _rules(self, text: ChunkText | None) -> EvidenceRules | None:
        """The evidence rules of this call: only with rules and a text."""
        return self.evidence if text is not None else None

    def check_entity(self, raw: JsonValue, chunk_id: str | None = None, document_id: str | None = None, *,
                     text: ChunkText | None = None) -> tuple[EntityRecord | None, list[Rejection]]:
        """One raw entity ``{"name", "type", <property>...}`` -> its record (or None) and refusals.

        With ``text`` (and evidence rules), the name must be mentioned in it."""
        rejections: list[Rejection] = []

        def reject(kind: Kind, reason: Reason, message: str, item: dict[str, Any] | None = None,
                   **fields: Any) -> None:
            rejections.append(Rejection(kind=kind, reason=reason, message=message,
                                        item=item if item is not None else _as_item(raw),
                                        chunk_id=chunk_id, document_id=document_id, **fields))

        if not isinstance(raw, dict):
            reject("entity", Reason.MALFORMED, f"an entity must be an object, got {type(raw).__name__}")
            return None, rejections
        ctype = _soft_text(raw.get("type"))
        try:
            name = _name(raw.get("name"))
        except _BadValue as exc:
            reject("entity", Reason.MALFORMED, f"entity name is not text: {exc}", entity_type=ctype)
            return None, rejections
        if name is None or not normalize_name(name):
            reject("entity", Reason.EMPTY_NAME, "entity without a name" if name is None else
                   f"entity name {name!r} has no letters or digits left once normalized", entity_type=ctype,
                   entity_name=name)
            return None, rejections
        if len(name) > NAME_MAX:
            reject("entity", Reason.NAME_TOO_LONG, f"entity name is {len(name)} characters long (max {NAME_MAX})",
                   entity_name=name[:NAME_MAX], entity_type=ctype)
            return None, rejections
        if ctype is None or ctype not in self._classes:
            reject("entity", Reason.UNKNOWN_CLASS,
                   f"entity {name!r} has type {ctype!r}, which is not a class of the ontology "
                   f"({', '.join(self.onto.classes)})", entity_name=name, entity_type=ctype,
                   allowed=list(self.onto.classes))
            return None, rejections
        confidence, problem = _confidence(raw.get("confidence"))
        if problem:  # like any bad value: dropped, the mention is kept (as if given without one)
            reject("property", Reason.INVALID_VALUE, f"{ctype} {name!r}: confidence {problem} (value dropped)",
                   entity_name=name, entity_type=ctype, property="confidence",
                   value=(_soft_text(raw.get("confidence")) or "")[:NAME_MAX])
        if confidence is not None and confidence < self.min_confidence:
            reject("entity", Reason.LOW_CONFIDENCE,
                   f"{ctype} {name!r}: the model's confidence {confidence:g} is under the threshold "
                   f"{self.min_confidence:g} (GRAPHRAG_MIN_CONFIDENCE)", entity_name=name, entity_type=ctype,
                   property="confidence", value=f"{confidence:g}")
            return None, rejections
        rules = self._rules(text)
        if rules is not None and text is not None and not text.mentions(name, rules.threshold):
            reject("entity", Reason.NOT_IN_TEXT,
                   f"{ctype} {name!r} is not mentioned in the text of its chunk (mention threshold "
                   f"{rules.threshold})", entity_name=name, entity_type=ctype)
            return None, rejections
        klass = self._classes[ctype]
        given: dict[str, Any] = {k: v for k, v in raw.items() if k not in ENTITY_KEYS}
        if isinstance(raw.get("properties"), dict):
            given.update(raw["properties"])
        props: dict[str, str] = {}
        for pname, value in given.items():
            if value is None or value == "":
                continue
            spec = klass.properties.get(pname)
            item = {"name": name, "type": ctype, pname: value}
            shown = _soft_text(value)
            if spec is None:
                reject("property", Reason.UNKNOWN_PROPERTY,
                       f"{ctype} has no property {pname!r} (value {shown!r} dropped; declared: "
                       f"{', '.join(klass.properties) or 'none'})", item, entity_name=name, entity_type=ctype,
                       property=pname, value=shown, allowed=list(klass.properties))
                continue
            text, problem = self._value(ctype, pname, spec, value)
            if problem == "enum":
                reject("property", Reason.INVALID_ENUM_VALUE,
                       f"{ctype}.{pname} = {shown!r} is not one of {', '.join(spec.values)} (value dropped)", item,
                       entity_name=name, entity_type=ctype, property=pname, value=shown, allowed=list(spec.values))
                continue
            if problem:
                reject("property", Reason.INVALID_VALUE, f"{ctype}.{pname}: {problem} (value dropped)", item,
                       entity_name=name, entity_type=ctype, property=pname, value=(shown or "")[:NAME_MAX])
                continue
            if text is not None:
                props[pname] = text
        missing = [p for p in self._required.get(ctype, ()) if p not in props]
        if missing:
            reject("entity", Reason.MISSING_REQUIRED_PROPERTY,
                   f"{ctype} {name!r} lacks required propert{'y' if len(missing) == 1 else 'ies'} "
                   f"{', '.join(missing)}", entity_name=name, entity_type=ctype, property=missing[0],
                   allowed=missing)
            return None, rejections
        key = normalize_name(name)
        record = EntityRecord(uid=f"{ctype}|{key}", key=key, name=name, type=ctype, properties=props,
                              chunk_ids=[chunk_id] if chunk_id else [],
                              mentions={chunk_id: confidence} if chunk_id and confidence is not None else {})
        return record, rejections

    # ------------------------------------------------------------------ relations
    def check_relation(self, raw: JsonValue, known: Mapping[str, set[str]], chunk_id: str | None = None,
                       document_id: str | None = None, *, text: ChunkText | None = None,
                       corpus_names: Collection[str] = ()) -> tuple[RelationRecord | None, list[Rejection]]:
        """One raw triple -> its record (or None) and refusals.

        ``known`` maps the normalized names of the accepted entities (of the chunk, or of the file
        when loading) to their classes: both ends must be among them, with the class the triple gives.
        With ``text`` (and evidence rules), both ends must be mentioned in it, within the sentence
        window of each other; the record then carries the evidence spans.
        """
        rejections: list[Rejection] = []
        item = _as_item(raw)
        base: dict[str, Any] = {}
        if isinstance(raw, dict):
            base = {k: _soft_text(raw.get(k)) for k in ("relation", "subject", "subject_type", "object", "object_type")}

        def reject(reason: Reason, message: str, **fields: Any) -> None:
            rejections.append(Rejection(kind="relation", reason=reason, message=message, item=item,
                                        chunk_id=chunk_id, document_id=document_id, **{**base, **fields}))

        if not isinstance(raw, dict):
            reject(Reason.MALFORMED, f"a relation must be an object, got {type(raw).__name__}")
            return None, rejections
        rname = base["relation"]
        if rname is None:
            reject(Reason.MALFORMED, "relation without a 'relation' name")
            return None, rejections
        try:
            subj, obj = _name(raw.get("subject")), _name(raw.get("object"))
        except _BadValue as exc:
            reject(Reason.MALFORMED, f"{rname}: an end is not text ({exc})")
            return None, rejections
        for end, name in (("subject", subj), ("object", obj)):
            if name is None or not normalize_name(name):
                position = raw.get(f"{end}_position") if isinstance(raw, dict) else None
                if position is not None:  # a compact answer's end pointing at no entity of the answer
                    reject(Reason.EMPTY_NAME, f"{rname}: the {end} position {position!r} is not an entity of "
                           "the answer", end=end, end_name=None, value=str(position)[:NAME_MAX])
                else:
                    reject(Reason.EMPTY_NAME, f"{rname} without a{'n' if end == 'object' else ''} {end} name",
                           end=end, end_name=name)
                return None, rejections
            if len(name) > NAME_MAX:
                reject(Reason.NAME_TOO_LONG, f"{rname}: {end} name is {len(name)} characters long (max {NAME_MAX})",
                       end=end, end_name=name[:NAME_MAX])
                return None, rejections
        assert subj is not None and obj is not None
        rel = self.onto.relation(rname)
        if rel is None:
            reject(Reason.UNKNOWN_RELATION, f"{rname!r} is not a relation of the ontology",
                   allowed=[r.name for r in self.onto.relations])
            return None, rejections
        score = _fact_score(raw)
        if score is not None and score.probability < self.min_probability:
            runner = (f"; runner-up {score.runner_up!r} at {score.runner_up_probability:.3f}"
                      if score.runner_up and score.runner_up_probability is not None else "")
            reject(Reason.LOW_PROBABILITY, f"{rname}: the model chose it with probability {score.probability:.3f}, "
                   f"under the threshold {self.min_probability:g} (GRAPHRAG_MIN_FACT_PROBABILITY){runner}",
                   value=f"{score.probability:.4f}")
            return None, rejections
        stype = base["subject_type"] or _infer_type(subj, known)
        otype = base["object_type"] or _infer_type(obj, known)
        for end, name, typ in (("subject", subj, stype), ("object", obj, otype)):
            if typ is None or typ not in self.onto.classes:
                reject(Reason.UNKNOWN_CLASS, f"{rname}: {end} type {typ!r} is not a class of the ontology",
                       end=end, end_name=name, end_type=typ, allowed=list(self.onto.classes))
                return None, rejections
        assert stype is not None and otype is not None
        base.update(subject_type=stype, object_type=otype)
        if not rel.accepts(stype, otype):  # the one domain/range rule; the message blames the end that is out
            if stype not in rel.domain:
                reject(Reason.DOMAIN_VIOLATION,
                       f"{rname} takes a subject of type {' | '.join(rel.domain)}, not {stype} ({subj!r})",
                       end="subject", end_name=subj, end_type=stype, allowed=list(rel.domain))
            else:
                reject(Reason.RANGE_VIOLATION,
                       f"{rname} takes an object of type {' | '.join(rel.range)}, not {otype} ({obj!r})",
                       end="object", end_name=obj, end_type=otype, allowed=list(rel.range))
            return None, rejections
        ends: tuple[tuple[End, str, str, Reason, Reason], ...] = (
            ("subject", subj, stype, Reason.SUBJECT_TYPE_MISMATCH, Reason.SUBJECT_NOT_EXTRACTED),
            ("object", obj, otype, Reason.OBJECT_TYPE_MISMATCH, Reason.OBJECT_NOT_EXTRACTED),
        )
        rules = self._rules(text)
        if rules is not None and text is not None:
            for end, name, typ, _, _ in ends:
                if not text.mentions(name, rules.threshold):
                    reject(Reason.NOT_IN_TEXT, f"{rname}: {end} {name!r} is not mentioned in the text of this chunk",
                           end=end, end_name=name, end_type=typ)
                    return None, rejections
        for end, name, typ, mismatch, missing in ends:
            types = known.get(normalize_name(name))
            if not types:
                reject(missing, f"{rname}: {end} {name!r} is not among the entities extracted from this chunk",
                       end=end, end_name=name, end_type=typ)
                return None, rejections
            narrower = [t for t in sorted(types) if t != typ and self.onto.is_a(t, typ)] if typ not in types else []
            if len(narrower) == 1:
                # the triple names a parent class of the entity's ("Place" for a City): the fact is about
                # the entity as extracted, and the relation (expanded over subclasses) takes that class
                typ = narrower[0]
                if end == "subject":
                    stype = typ
                else:
                    otype = typ
                base.update(subject_type=stype, object_type=otype)
            if typ not in types:
                reject(mismatch, f"{rname}: {end} {name!r} is typed {typ} here but was extracted as "
                                 f"{' | '.join(sorted(types))}", end=end, end_name=name, end_type=typ,
                       allowed=sorted(types))
                return None, rejections
        if entity_uid(stype, subj) == entity_uid(otype, obj):
            reject(Reason.SELF_RELATION, f"{rname} links {subj!r} to itself", end="object", end_name=obj,
                   end_type=otype)
            return None, rejections
        evidence: list[Evidence] = []
        if rules is not None and text is not None:
            spans = text.evidence(subj, obj, rules.window, rules.threshold, others=known)
            if not spans:
                apart = "in the same sentence" if rules.window == 0 else f"within {rules.window} sentence(s)"
                reject(Reason.ENDS_NOT_NEAR, f"{rname}: the text never mentions {subj!r} and {obj!r} {apart}",
                       value=str(rules.window))
                return None, rejections
            cues = rel.all_cues
            if rules.cues and cues:
                if not any(text.has_cue(sp.start, sp.end, cues, known, rules.threshold, exact_names=corpus_names)
                           for sp in spans):
                    shown = ", ".join(repr(c) for c in cues[:6]) + (", ..." if len(cues) > 6 else "")
                    reject(Reason.NO_CUE, f"{rname}: no cue of the relation ({shown}) occurs where the text "
                                          f"mentions {subj!r} and {obj!r}", allowed=list(cues))
                    return None, rejections
            evidence = [Evidence(chunk_id=chunk_id, start=sp.start, end=sp.end, text=text.text[sp.start:sp.end],
                                 document_start=text.offset + sp.start, document_end=text.offset + sp.end)
                        for sp in spans]
        attrs = self._attributes(raw, rname, subj, stype, obj, otype, rejections, item, chunk_id, document_id,
                                 text=text if rules is not None else None,
                                 threshold=rules.threshold if rules is not None else 1.0)
        if attrs is None:
            return None, rejections
        record = RelationRecord(subject=subj, subject_key=normalize_name(subj), subject_type=stype, relation=rname,
                                object=obj, object_key=normalize_name(obj), object_type=otype, attributes=attrs,
                                symmetric=rel.symmetric, chunk_ids=[chunk_id] if chunk_id else [],
                                evidence=evidence, scores={chunk_id: score} if chunk_id and score else {})
        return record, rejections

    def _attributes(self, raw: dict[str, Any], rname: str, subj: str, stype: str, obj: str, otype: str,
                    rejections: list[Rejection], item: dict[str, Any], chunk_id: str | None,
                    document_id: str | None, *, text: ChunkText | None = None,
                    threshold: float = 1.0) -> dict[str, str] | None:
        """The declared relation attributes of a triple; None when a required one is missing.

        With ``text`` (evidence on), a free-text value must occur in the chunk like a name does, or it
        is dropped (``not_in_text``, the fact itself stays): a small model copies an attribute value
        from the prompt's examples onto facts the text does not place, and since attributes are part
        of a fact's identity, an invented value would also make a false second fact. Enum values are
        the ontology's words, not the text's, and are not checked. (Measured: every time attribute of the
        GoT gold occurs in its chunk; most invented ones do not.)
        """
        def reject(kind: Kind, reason: Reason, message: str, **fields: Any) -> None:
            rejections.append(Rejection(kind=kind, reason=reason, message=message, item=item, chunk_id=chunk_id,
                                        document_id=document_id, relation=rname, subject=subj, subject_type=stype,
                                        object=obj, object_type=otype, **fields))

        declared = self.onto.relation_attributes
        given = {k: v for k, v in raw.items() if k not in RELATION_KEYS}
        if isinstance(raw.get("attributes"), dict):
            given.update(raw["attributes"])
        attrs: dict[str, str] = {}
        for aname, value in given.items():
            if value is None or value == "":
                continue
            shown = _soft_text(value)
            spec = declared.get(aname)
            if spec is None:
                reject("property", Reason.UNKNOWN_ATTRIBUTE,
                       f"{rname} has no attribute {aname!r} (value {shown!r} dropped; declared: "
                       f"{', '.join(declared) or 'none'})", property=aname, value=shown, allowed=list(declared))
                continue
            value_text, problem = self._value(None, aname, spec, value)
            if problem == "enum":
                reject("property", Reason.INVALID_ENUM_VALUE,
                       f"{rname}.{aname} = {shown!r} is not one of {', '.join(spec.values)} (value dropped)",
                       property=aname, value=shown, allowed=list(spec.values))
                continue
            if problem:
                reject("property", Reason.INVALID_VALUE, f"{rname}.{aname}: {problem} (value dropped)",
                       property=aname, value=(shown or "")[:NAME_MAX])
                continue
            if value_text is not None and spec.kind != "enum" and text is not None \
                    and not text.mentions(value_text, threshold):
                reject("property", Reason.NOT_IN_TEXT,
                       f"{rname}.{aname} = {value_text!r} does not occur in the text of its chunk (value dropped; "
                       f"mention threshold {threshold})", property=aname, value=value_text[:NAME_MAX])
                continue
            if value_text is not None:
                attrs[aname] = value_text
        missing = [a for a in self._required_attributes if a not in attrs]
        if missing:
            reject("relation", Reason.MISSING_REQUIRED_ATTRIBUTE,
                   f"{rname} ({subj!r} -> {obj!r}) lacks required attribute{'s' if len(missing) > 1 else ''} "
                   f"{', '.join(missing)}", property=missing[0], allowed=missing)
            return None
        return attrs

    # ------------------------------------------------------------------ entry point
    def validate(self, raw: RawAnswer | JsonValue, chunk_id: str | None = None, document_id: str | None = None,
                 text: str | ChunkText | None = None, *, text_start: int = 0,
                 extra_entities: Sequence[Any] = (), corpus_names: Collection[str] = ()) -> ChunkValidation:
        """Validate one chunk's answer: a :class:`RawAnswer`, or the parsed JSON of either answer form.

        ``text``: the chunk text (evidence is checked when the validator has evidence rules; without
        text it is not); ``text_start``: where the chunk starts in its document. ``extra_entities``:
        entities added by an audited repair, validated after the answer's own (and not counted
        against the schema bound, which applies to what the model wrote). ``corpus_names``: the entity
        names the answers of the whole corpus list; a relation cue inside one of them (written as
        listed) is part of a name, not a statement, even in a chunk whose answer missed that entity.
        """
        out = ChunkValidation(chunk_id=chunk_id, document_id=document_id)
        answer = RawAnswer.read(raw)  # a compact answer reads like a full one from here on
        ctx = chunk_text(text, text_start) if self.evidence is not None else None
        if not answer.is_object:
            problem = answer.problems[0]
            out.rejections.append(Rejection(kind="entity", reason=Reason.MALFORMED, message=problem.message,
                                            item=_as_item(problem.value), chunk_id=chunk_id,
                                            document_id=document_id))  # fmt: skip
            return out
        for bad in answer.unparsed:  # a keyless form's line that is neither an entity nor a fact: said, not dropped
            line = bad.get("line", "")
            out.rejections.append(Rejection(
                kind="relation" if "->" in line or line.lstrip().startswith("[") and line.count('"') >= 6
                else "entity", reason=Reason.UNPARSED,
                message=f"the answer's line {line[:NAME_MAX]!r} could not be read: {bad.get('why') or 'unknown shape'}",
                item={"line": line}, chunk_id=chunk_id, document_id=document_id, value=line[:NAME_MAX]))
        lists: dict[str, list[Any]] = {}
        for name, bound in (("entities", self.max_entities), ("relations", self.max_relations)):
            kind: Kind = "entity" if name == "entities" else "relation"
            value = answer.entities if name == "entities" else answer.relations
            problem = answer.problem(name)  # type: ignore[arg-type]
            if problem is not None:
                out.rejections.append(Rejection(kind=kind, reason=Reason.MALFORMED, message=problem.message,
                                                item={name: problem.value}, chunk_id=chunk_id,
                                                document_id=document_id))  # fmt: skip
            if bound is not None and len(value) > bound:
                out.rejections.append(Rejection(
                    kind=kind, reason=Reason.TOO_MANY_ITEMS,
                    message=f"the answer lists {len(value)} {name}; only the first {bound} (the schema's bound) "
                            f"are read, {len(value) - bound} dropped",
                    item={"count": len(value), "bound": bound}, chunk_id=chunk_id, document_id=document_id,
                    value=str(len(value)), allowed=[str(bound)]))
                value = value[:bound]
            lists[name] = value
        for item in [*lists["entities"], *extra_entities]:
            record, rejections = self.check_entity(item, chunk_id, document_id, text=ctx)
            out.rejections += rejections
            if record is not None:
                out.entities.append(record)
        known = known_entities(out.entities)
        for item in lists["relations"]:
            rel, rejections = self.check_relation(item, known, chunk_id, document_id, text=ctx,
                                                  corpus_names=corpus_names)
            out.rejections += rejections
            if rel is not None:
                out.relations.append(rel)
        return out


def chunk_text(text: str | ChunkText | None, text_start: int = 0) -> ChunkText | None:
    """The text prepared for mention search (a :class:`ChunkText` is reused with its cache)."""
    if text is None or isinstance(text, ChunkText):
        return text
    return ChunkText(text, offset=text_start)


def known_entities(entities: Iterable[EntityRecord]) -> dict[str, set[str]]:
    """Normalized name -> classes, the lookup :meth:`Validator.check_relation` resolves ends with."""
    known: dict[str, set[str]] = {}
    for ent in entities:
        known.setdefault(ent.key, set()).add(ent.type)
    return known


def _infer_type(name: str, known: Mapping[str, set[str]]) -> str | None:
    """A triple without a type takes its entity's type when the name has exactly one."""
    types = known.get(normalize_name(name), set())
    return next(iter(types)) if len(types) == 1 else None


def _as_item(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else {"value": summarize(raw)}





def validate_chunk(ontology: Ontology, raw: RawAnswer | JsonValue, chunk_id: str | None = None,
                   document_id: str | None = None, text: str | None = None, *,
                   evidence: EvidenceRules | None = None) -> ChunkValidation:
    return Validator(ontology, evidence=evidence).validate(raw, chunk_id, document_id, text)


def _probability(value: Any) -> float | None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
    return float(value) if ok else None


def _fact_score(raw: dict[str, Any]) -> FactScore | None:
    """The classify strategy's score of a triple (None when the item has no usable probability)."""
    p = _probability(raw.get("probability"))
    if p is None:
        return None
    runner = raw.get("runner_up")
    return FactScore(probability=p, runner_up=str(runner)[:NAME_MAX] if runner is not None else None,
                     runner_up_probability=_probability(raw.get("runner_up_probability")))


def _confidence(value: Any) -> tuple[float | None, str | None]:
    """A mention's confidence: None when absent, else a number in [0, 1] (or the problem)."""
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None, f"must be a number from 0 to 1, got {type(value).__name__}"
    try:
        number = float(value)
    except ValueError:
        return None, f"must be a number from 0 to 1, got {value!r}"
    if not 0.0 <= number <= 1.0:  # also refuses NaN
        return None, f"must be from 0 to 1, got {value!r}"
    return number, None
