"""Check every extracted entity and triple against the ontology, in code.

Constrained decoding already narrows what a model can write, but answers can be replayed from any
model, repaired from broken JSON, or produced by a provider that ignores the schema. So nothing
reaches the graph without passing here. Results are data: a :class:`Reason`, a :class:`Rejection`
record with the offending item and a message, and counts. The audit report is built from these.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Literal

from .normalize import entity_uid, normalize_name
from .ontology import Ontology, PropertySpec

NAME_MAX = 200  # longer "names" are sentences the model pasted, not entity names


class Reason(StrEnum):
    MALFORMED = "malformed"
    EMPTY_NAME = "empty_name"
    UNKNOWN_RELATION = "unknown_relation"
    UNKNOWN_CLASS = "unknown_class"
    DOMAIN_VIOLATION = "domain_violation"
    RANGE_VIOLATION = "range_violation"
    SUBJECT_TYPE_MISMATCH = "subject_type_mismatch"
    OBJECT_TYPE_MISMATCH = "object_type_mismatch"
    SUBJECT_NOT_EXTRACTED = "subject_not_extracted"
    OBJECT_NOT_EXTRACTED = "object_not_extracted"
    SELF_RELATION = "self_relation"
    UNKNOWN_PROPERTY = "unknown_property"
    INVALID_ENUM_VALUE = "invalid_enum_value"
    MISSING_REQUIRED_PROPERTY = "missing_required_property"
    UNKNOWN_ATTRIBUTE = "unknown_attribute"


Kind = Literal["relation", "entity", "property"]


@dataclass
class Rejection:
    """One refused item. ``kind`` says what was dropped: a whole relation, a whole entity, or one property."""

    kind: Kind
    reason: Reason
    message: str
    item: dict[str, Any]
    chunk_id: str | None = None
    document_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["reason"] = self.reason.value
        return d


@dataclass
class ValidEntity:
    name: str
    type: str
    properties: dict[str, str]

    @property
    def key(self) -> str:
        return normalize_name(self.name)

    @property
    def uid(self) -> str:
        return entity_uid(self.type, self.name)


@dataclass
class ValidRelation:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str
    attributes: dict[str, str] = field(default_factory=dict)
    symmetric: bool = False

    @property
    def momento(self) -> str | None:
        return self.attributes.get("momento")


@dataclass
class ChunkValidation:
    chunk_id: str | None
    document_id: str | None
    entities: list[ValidEntity] = field(default_factory=list)
    relations: list[ValidRelation] = field(default_factory=list)
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


def _text(value: Any) -> str | None:
    """A scalar as clean text; None for null/empty; lists and objects are not text."""
    if value is None or isinstance(value, (dict, list, bool)):
        return None
    text = str(value).strip()
    return text or None


class Validator:
    """Validates raw model answers against one ontology."""

    def __init__(self, ontology: Ontology):
        self.onto = ontology
        # normalized enum value -> declared value, per (class, property)
        self._enum_index: dict[tuple[str, str], dict[str, str]] = {}
        for cname, klass in ontology.classes.items():
            for pname, spec in klass.properties.items():
                if spec.kind == "enum":
                    self._enum_index[(cname, pname)] = {normalize_name(v): v for v in spec.values}

    # ------------------------------------------------------------------ entities
    def _entity(self, raw: Any, out: ChunkValidation) -> None:
        def reject(kind: Kind, reason: Reason, message: str, item: dict[str, Any] | None = None) -> None:
            out.rejections.append(Rejection(kind, reason, message, item if item is not None else _as_item(raw),
                                            out.chunk_id, out.document_id))

        if not isinstance(raw, dict):
            reject("entity", Reason.MALFORMED, f"an entity must be an object, got {type(raw).__name__}")
            return
        name, ctype = _text(raw.get("name")), _text(raw.get("type"))
        if name is None:
            reject("entity", Reason.EMPTY_NAME, "entity without a name")
            return
        if len(name) > NAME_MAX:
            reject("entity", Reason.MALFORMED, f"entity name is {len(name)} characters long (max {NAME_MAX})")
            return
        if ctype is None or ctype not in self.onto.classes:
            reject("entity", Reason.UNKNOWN_CLASS,
                   f"entity {name!r} has type {ctype!r}, which is not a class of the ontology "
                   f"({', '.join(self.onto.classes)})")
            return
        klass = self.onto.classes[ctype]
        given: dict[str, Any] = {k: v for k, v in raw.items() if k not in {"name", "type", "properties"}}
        if isinstance(raw.get("properties"), dict):
            given.update(raw["properties"])
        props: dict[str, str] = {}
        for pname, value in given.items():
            text = _text(value)
            if text is None:
                continue
            spec = klass.properties.get(pname)
            if spec is None:
                reject("property", Reason.UNKNOWN_PROPERTY,
                       f"{ctype} has no property {pname!r} (value {text!r} dropped; declared: "
                       f"{', '.join(klass.properties) or 'none'})", {"name": name, "type": ctype, pname: value})
                continue
            if spec.kind == "enum":
                canon = self._enum_index[(ctype, pname)].get(normalize_name(text))
                if canon is None:
                    reject("property", Reason.INVALID_ENUM_VALUE,
                           f"{ctype}.{pname} = {text!r} is not one of {', '.join(spec.values)} (value dropped)",
                           {"name": name, "type": ctype, pname: value})
                    continue
                text = canon
            props[pname] = text
        missing = [p for p, s in klass.properties.items() if s.required and p not in props]
        if missing:
            reject("entity", Reason.MISSING_REQUIRED_PROPERTY,
                   f"{ctype} {name!r} lacks required propert{'y' if len(missing) == 1 else 'ies'} "
                   f"{', '.join(missing)}")
            return
        out.entities.append(ValidEntity(name=name, type=ctype, properties=props))

    # ------------------------------------------------------------------ relations
    def _relation(self, raw: Any, out: ChunkValidation, by_key: dict[str, set[str]]) -> None:
        def reject(reason: Reason, message: str) -> None:
            out.rejections.append(Rejection("relation", reason, message, _as_item(raw), out.chunk_id, out.document_id))

        if not isinstance(raw, dict):
            reject(Reason.MALFORMED, f"a relation must be an object, got {type(raw).__name__}")
            return
        rname = _text(raw.get("relation"))
        subj, obj = _text(raw.get("subject")), _text(raw.get("object"))
        if rname is None:
            reject(Reason.MALFORMED, "relation without a 'relation' name")
            return
        if subj is None or obj is None:
            reject(Reason.EMPTY_NAME, f"{rname} without a {'subject' if subj is None else 'object'}")
            return
        rel = self.onto.relation(rname)
        if rel is None:
            reject(Reason.UNKNOWN_RELATION, f"{rname!r} is not a relation of the ontology")
            return
        stype = _text(raw.get("subject_type")) or _infer_type(subj, by_key)
        otype = _text(raw.get("object_type")) or _infer_type(obj, by_key)
        for end, typ in (("subject", stype), ("object", otype)):
            if typ is None or typ not in self.onto.classes:
                reject(Reason.UNKNOWN_CLASS,
                       f"{rname}: {end} type {typ!r} is not a class of the ontology")
                return
        assert stype is not None and otype is not None
        symmetric_ok = rel.symmetric and rel.accepts(stype, otype)
        if stype not in rel.domain and not symmetric_ok:
            reject(Reason.DOMAIN_VIOLATION,
                   f"{rname} takes a subject of type {' | '.join(rel.domain)}, not {stype} ({subj!r})")
            return
        if otype not in rel.range and not symmetric_ok:
            reject(Reason.RANGE_VIOLATION,
                   f"{rname} takes an object of type {' | '.join(rel.range)}, not {otype} ({obj!r})")
            return
        for end, name, typ, mismatch, missing in (
            ("subject", subj, stype, Reason.SUBJECT_TYPE_MISMATCH, Reason.SUBJECT_NOT_EXTRACTED),
            ("object", obj, otype, Reason.OBJECT_TYPE_MISMATCH, Reason.OBJECT_NOT_EXTRACTED),
        ):
            types = by_key.get(normalize_name(name))
            if not types:
                reject(missing, f"{rname}: {end} {name!r} is not among the entities extracted from this chunk")
                return
            if typ not in types:
                reject(mismatch, f"{rname}: {end} {name!r} is typed {typ} here but was extracted as "
                                 f"{' | '.join(sorted(types))}")
                return
        if entity_uid(stype, subj) == entity_uid(otype, obj):
            reject(Reason.SELF_RELATION, f"{rname} links {subj!r} to itself")
            return
        attrs: dict[str, str] = {}
        extra = {k: v for k, v in raw.items()
                 if k not in {"relation", "subject", "subject_type", "object", "object_type", "attributes"}}
        if isinstance(raw.get("attributes"), dict):
            extra.update(raw["attributes"])
        for aname, value in extra.items():
            text = _text(value)
            if text is None:
                continue
            spec: PropertySpec | None = self.onto.relation_attributes.get(aname)
            if spec is None:
                out.rejections.append(Rejection(
                    "property", Reason.UNKNOWN_ATTRIBUTE,
                    f"{rname} has no attribute {aname!r} (value {text!r} dropped; declared: "
                    f"{', '.join(self.onto.relation_attributes) or 'none'})",
                    _as_item(raw), out.chunk_id, out.document_id))
                continue
            if spec.kind == "enum" and text not in spec.values:
                out.rejections.append(Rejection(
                    "property", Reason.INVALID_ENUM_VALUE,
                    f"{rname}.{aname} = {text!r} is not one of {', '.join(spec.values)} (value dropped)",
                    _as_item(raw), out.chunk_id, out.document_id))
                continue
            attrs[aname] = text
        out.relations.append(ValidRelation(subject=subj, subject_type=stype, relation=rname, object=obj,
                                           object_type=otype, attributes=attrs, symmetric=rel.symmetric))

    # ------------------------------------------------------------------ entry point
    def validate(self, raw: Any, chunk_id: str | None = None, document_id: str | None = None) -> ChunkValidation:
        """Validate one chunk's answer ``{"entities": [...], "relations": [...]}`` (already parsed JSON)."""
        out = ChunkValidation(chunk_id=chunk_id, document_id=document_id)
        if not isinstance(raw, dict):
            out.rejections.append(Rejection("entity", Reason.MALFORMED,
                                            f"the answer must be a JSON object, got {type(raw).__name__}",
                                            _as_item(raw), chunk_id, document_id))
            return out
        entities = raw.get("entities")
        relations = raw.get("relations")
        entities = [] if entities is None else entities
        relations = [] if relations is None else relations
        for name, value in (("entities", entities), ("relations", relations)):
            if not isinstance(value, list):
                out.rejections.append(Rejection("entity" if name == "entities" else "relation", Reason.MALFORMED,
                                                f"'{name}' must be a list, got {type(value).__name__}",
                                                {name: value}, chunk_id, document_id))
        if isinstance(entities, list):
            for item in entities:
                self._entity(item, out)
        by_key: dict[str, set[str]] = {}
        for ent in out.entities:
            by_key.setdefault(ent.key, set()).add(ent.type)
        if isinstance(relations, list):
            for item in relations:
                self._relation(item, out, by_key)
        return out


def _infer_type(name: str, by_key: dict[str, set[str]]) -> str | None:
    """A triple without a type takes its entity's type when the name has exactly one."""
    types = by_key.get(normalize_name(name), set())
    return next(iter(types)) if len(types) == 1 else None


def _as_item(raw: Any) -> dict[str, Any]:
    return raw if isinstance(raw, dict) else {"value": raw}


def validate_chunk(ontology: Ontology, raw: Any, chunk_id: str | None = None,
                   document_id: str | None = None) -> ChunkValidation:
    return Validator(ontology).validate(raw, chunk_id, document_id)


# ---------------------------------------------------------------------- aggregation
def aggregate(validations: list[ChunkValidation]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Merge per-chunk results into the entity and relation lists of extraction.json.

    Entities merge per uid (the first display name and first value of each property win; chunk ids
    accumulate). Relations merge per (subject uid, relation, object uid, momento); a symmetric relation
    is stored once with its ends in sorted-uid order.
    """
    entities: dict[str, dict[str, Any]] = {}
    relations: dict[tuple[str, str, str, str | None], dict[str, Any]] = {}
    for val in validations:
        cid = val.chunk_id
        for ent in val.entities:
            rec = entities.get(ent.uid)
            if rec is None:
                rec = entities[ent.uid] = {"uid": ent.uid, "key": ent.key, "name": ent.name, "type": ent.type,
                                           "properties": {}, "chunk_ids": []}
            for k, v in ent.properties.items():
                rec["properties"].setdefault(k, v)
            if cid is not None and cid not in rec["chunk_ids"]:
                rec["chunk_ids"].append(cid)
        for rel in val.relations:
            s = (entity_uid(rel.subject_type, rel.subject), rel.subject, rel.subject_type)
            o = (entity_uid(rel.object_type, rel.object), rel.object, rel.object_type)
            if rel.symmetric and o[0] < s[0]:
                s, o = o, s
            momento = rel.momento
            key = (s[0], rel.relation, o[0], momento)
            rec = relations.get(key)
            if rec is None:
                rec = relations[key] = {
                    "subject": entities[s[0]]["name"] if s[0] in entities else s[1],
                    "subject_key": normalize_name(s[1]), "subject_type": s[2],
                    "relation": rel.relation,
                    "object": entities[o[0]]["name"] if o[0] in entities else o[1],
                    "object_key": normalize_name(o[1]), "object_type": o[2],
                    "momento": momento, "symmetric": rel.symmetric, "chunk_ids": [],
                }
                extra = {k: v for k, v in rel.attributes.items() if k != "momento"}
                if extra:
                    rec["attributes"] = extra
            if cid is not None and cid not in rec["chunk_ids"]:
                rec["chunk_ids"].append(cid)
    return list(entities.values()), list(relations.values())


def reason_counts(rejections: list[Rejection]) -> dict[str, int]:
    return dict(sorted(Counter(r.reason.value for r in rejections).items()))
