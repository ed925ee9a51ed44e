"""The ontology a user writes, as validated Pydantic models: :class:`Ontology` and its parts.

An ontology is built with :meth:`Ontology.from_file` or :meth:`Ontology.from_dict`, which check it
in passes so every message can point at the offending place (each problem with its JSON path, such
as ``$.relaciones[3].rango[1]``, and its value):

1. reading: the file must be UTF-8 text, valid JSON without duplicate keys
   (:mod:`graphrag_got.ontology.reading`);
2. the file schema ``ontology.schema.json`` and Spanish/English key pairs given twice, then the
   keys made canonical and the property specs parsed (:mod:`graphrag_got.ontology.loading`,
   :mod:`graphrag_got.ontology.keys`, :mod:`graphrag_got.ontology.spec`);
3. semantic checks in the model validator (:mod:`graphrag_got.ontology.checks`): domain/range
   name declared classes, duplicates, reserved names, the class hierarchy, annotated examples.

This module holds the models, the names reserved by the graph model, and the queries the rest of
the package asks an ontology (relations by name, the class hierarchy, the ontology hash).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from graphrag_got.common.normalize import normalize_name
from graphrag_got.common.sanitize import cap_text
from graphrag_got.ontology.describe import describe_ontology, describe_spec
from graphrag_got.ontology.spec import spec_fields

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # always used with fullmatch (``$`` accepts "X\n")
# Labels and types of the graph's own structure (documents, chunks, communities, notes vaults).
#: The class of a key term no class of the ontology fits (the terms strategy, graphrag_got.extract.terms): an
#: entity without properties that takes part in no typed relation; reserved, so it never means anything else.
TERM_CLASS = "Term"
RESERVED_CLASSES = frozenset({"Entity", "Document", "Chunk", "Community", "Folder", "Tag", "MissingNote", "GraphLock",
                              TERM_CLASS})
RESERVED_RELATIONS = frozenset({"HAS_CHUNK", "MENTIONS", "IN_COMMUNITY", "IN_FOLDER", "TAGGED", "LINKS_TO",
                                "CO_OCCURS"})
# Node fields the toolkit writes, and the keys of the answer forms the model fills
# ("confidence"; the compact form's "t", "n", "c").
RESERVED_PROPERTIES = frozenset(
    {"uid", "key", "name", "type", "chunk_ids", "doc_ids", "evidence", "evidence_chunk_ids", "aliases", "communityId",
     "communityLevel", "confidence", "embedding", "embedding_hash", "record_hash", "t", "n", "c"}
)
#: Relation attributes share a map with the fields of a relation in the graph, in ``extraction.json``
#: and in the answer schema the model fills, so those field names are taken too.
RESERVED_RELATION_ATTRIBUTES = RESERVED_PROPERTIES | frozenset(
    {"symmetric", "relation", "subject", "subject_key", "subject_type", "object", "object_key", "object_type",
     "r", "s", "o", "subject_position", "object_position", "weight", "count"}
)

PROBLEM_SEP = "\x1e"  # separates several located problems inside one ValueError message


def json_path(loc: Any) -> str:
    """A location (a tuple of keys and indexes) as a JSON path: ``$.relaciones[3].rango[1]``."""
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif IDENTIFIER.fullmatch(str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def shown_value(value: Any, limit: int = 300) -> str:
    """A value of the file as a message shows it: its JSON text (``null``, ``[{"x": 1}]``, never a
    Python repr), at most ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, TypeError, RecursionError):  # an integer too long to print, a cycle, nesting
        text = f"a {type(value).__name__} value"
    return cap_text(text, limit)


# -------------------------------------------------------------------- property specs
class PropertySpec(BaseModel):
    """One property of a class, or one relation attribute.

    ``hint`` is free text the user wrote after the type and the required/optional word
    (``"string opcional, ej. 'A', 'B'"``): guidance for the model, shown by :meth:`describe`.
    ``identity`` only means something for relation attributes: whether the attribute is part of a
    fact's identity (the same relation between the same ends with two values of it is two facts).
    """

    model_config = ConfigDict(frozen=True)

    kind: Literal["string", "enum"]
    values: tuple[str, ...] = ()
    required: bool = False
    comment: str = ""
    hint: str = ""
    identity: bool = False

    @model_validator(mode="after")
    def _enum_values(self) -> "PropertySpec":
        if self.kind == "enum":
            if not self.values:
                raise ValueError("an enum needs at least one value, e.g. 'enum: a | b'")
            if any(not v for v in self.values):
                raise ValueError(f"enum has an empty value: {' | '.join(self.values)!r}")
            if len(set(self.values)) != len(self.values):
                raise ValueError(f"enum repeats a value: {' | '.join(self.values)!r}")
            # answers are matched to the enum by normalized value (case, accents, spacing ignored):
            # two values equal after that could never both be stored
            seen: dict[str, str] = {}
            for value in self.values:
                key = normalize_name(value)
                if not key:
                    raise ValueError(f"enum value {cap_text(value, 80)!r} is empty once case, accents and invisible "
                                     "characters are ignored; write a visible value")
                if key in seen:
                    raise ValueError(f"enum values {cap_text(seen[key], 80)!r} and {cap_text(value, 80)!r} are the "
                                     "same once case, accents and spacing are ignored (answers are matched that "
                                     "way, so every one would be stored as one of them); keep one")
                seen[key] = value
        elif self.values:
            raise ValueError("only an enum property takes values")
        return self

    @classmethod
    def parse(cls, spec: Any, *, relation_attribute: bool = False) -> "PropertySpec":
        """Read a spec string (``"string, obligatorio"``, ``"enum: a | b | c, opcional"``) or object.

        ``relation_attribute`` selects the defaults and keys of relation attributes: ``identity``
        defaults to true there, and the ``identidad``/``identity`` key is refused elsewhere.
        Raises ``ValueError`` (or pydantic's ``ValidationError``) saying what is wrong
        (the parsing is in :mod:`graphrag_got.ontology.spec`).
        """
        if isinstance(spec, PropertySpec):
            return spec
        return cls(**spec_fields(spec, relation_attribute=relation_attribute))

    def describe(self) -> str:
        return describe_spec(self)


# -------------------------------------------------------------------- the model
class OntologyClass(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    comment: str = ""
    properties: dict[str, PropertySpec] = Field(default_factory=dict)
    parents: tuple[str, ...] = ()  # `subclase_de` / `subclass_of`: the classes this one is a kind of


class Relation(BaseModel):
    """A relation. ``domain``/``range`` are the classes it accepts: the declared ones first, then their
    subclasses (an ontology with a class hierarchy expands them once, when it is built), so every
    domain/range check honours the hierarchy; ``declared_domain``/``declared_range`` keep what the file
    says (empty: the same as ``domain``/``range``) for the prompt and ``ontology show``."""

    model_config = ConfigDict(frozen=True)

    name: str
    domain: tuple[str, ...]
    range: tuple[str, ...]
    symmetric: bool = False
    comment: str = ""
    declared_domain: tuple[str, ...] = ()
    declared_range: tuple[str, ...] = ()
    cues: tuple[str, ...] = ()  # `indicios`: words that state the relation (see common.text_match.ChunkText.has_cue)
    # `indicios_inversos`: words that state it object first ("trained under", a passive "betrayed by"); they
    # count as cues, and tell the wording's direction the other way (see common.text_match.ChunkText.stated_order)
    reverse_cues: tuple[str, ...] = ()

    @property
    def all_cues(self) -> tuple[str, ...]:
        """Every wording that states the relation, in either direction."""
        return self.cues + self.reverse_cues

    @property
    def stated_domain(self) -> tuple[str, ...]:
        return self.declared_domain or self.domain

    @property
    def stated_range(self) -> tuple[str, ...]:
        return self.declared_range or self.range

    # The domain/range rule, here only: the validator (extract, and load under a changed ontology),
    # the load's removal of what a new ontology refuses and the classify strategy's options all ask it.
    # Its one other statement is the Cypher of `stats` (graph.load_cypher.ontology_violations), the second
    # line that checks what the graph holds; tests/test_cypher_guard.py keeps the two in agreement.
    def fits(self, subject_type: str, object_type: str) -> bool:
        """The classes fit in this direction: the subject's in the domain, the object's in the range
        (both expanded over subclasses)."""
        return subject_type in self.domain and object_type in self.range

    def accepts(self, subject_type: str, object_type: str) -> bool:
        """A triple with these classes is allowed: they fit, or (a symmetric relation) they fit the
        other way round."""
        return self.fits(subject_type, object_type) or (self.symmetric and self.fits(object_type, subject_type))

    def accepts_any(self, subject_types: Iterable[str], object_types: Iterable[str]) -> bool:
        """:meth:`accepts` for nodes with several labels: some label of each end makes the triple allowed."""
        objects = list(object_types)
        return any(self.accepts(s, o) for s in subject_types for o in objects)


class ExampleEntity(BaseModel):
    """An entity of an annotated example: its class, its name as the example text writes it, properties."""

    model_config = ConfigDict(frozen=True)

    class_name: str
    name: str
    properties: dict[str, str] = Field(default_factory=dict)


class ExampleRelation(BaseModel):
    """A fact of an annotated example; ``subject``/``object`` are names of the example's entities."""

    model_config = ConfigDict(frozen=True)

    relation: str
    subject: str
    object: str
    attributes: dict[str, str] = Field(default_factory=dict)


class ExtractionExample(BaseModel):
    """An annotated example (``ejemplos``): a short text and the answer expected for it.

    Examples go into the extraction prompt (a small model follows an example much better than rules);
    they are checked against the ontology like an answer, and every name must occur in the example's
    text, so an example never teaches the model to write what a text does not say.
    """

    model_config = ConfigDict(frozen=True)

    text: str
    entities: tuple[ExampleEntity, ...] = ()
    relations: tuple[ExampleRelation, ...] = ()


class Ontology(BaseModel):
    """A validated ontology. Build it with :meth:`from_file` or :meth:`from_dict`."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str = ""
    description: str = ""
    classes: dict[str, OntologyClass]
    relations: list[Relation]
    relation_attributes: dict[str, PropertySpec] = Field(default_factory=dict)
    examples: tuple[ExtractionExample, ...] = ()
    source: str = "<dict>"
    raw: dict[str, Any] = Field(default_factory=dict, repr=False)
    # the user's corrected passages among ``examples`` (their last ones) and the ontology without them:
    # set by graphrag_got.ontology.example_store, read by the extraction's example selection
    _stored: tuple[Any, ...] = PrivateAttr(default=())
    _without_stored: "Ontology | None" = PrivateAttr(default=None)

    # ---------------------------------------------------------------- semantic checks
    @model_validator(mode="after")
    def _semantic_checks(self) -> "Ontology":
        """Collect every semantic problem (not just the first) with its JSON path."""
        from graphrag_got.ontology.checks import declaration_problems, usage_problems

        problems = declaration_problems(self)
        if (not problems and any(k.parents for k in self.classes.values())
                and not any(r.declared_domain or r.declared_range for r in self.relations)):
            # frozen model: the relations are expanded once, here, before anything else reads them
            object.__setattr__(self, "relations", [self._expanded(r) for r in self.relations])
            self.__dict__.pop("_relations_by_name", None)
        problems += usage_problems(self)
        if problems:
            raise ValueError(PROBLEM_SEP.join(f"@{json_path(loc)}@ {msg}" for loc, msg in problems))
        return self

    def _expanded(self, rel: Relation) -> Relation:
        def down(classes: tuple[str, ...]) -> tuple[str, ...]:
            out = list(classes)
            for cname in self.classes:
                if cname not in out and any(self.is_a(cname, c) for c in classes):
                    out.append(cname)
            return tuple(out)

        return rel.model_copy(update={"domain": down(rel.domain), "range": down(rel.range),
                                      "declared_domain": rel.domain, "declared_range": rel.range})

    # ---------------------------------------------------------------- hierarchy
    @cached_property
    def _ancestors(self) -> dict[str, frozenset[str]]:
        out: dict[str, frozenset[str]] = {}

        def walk(cname: str, seen: frozenset[str]) -> frozenset[str]:
            if cname in out:
                return out[cname]
            klass = self.classes.get(cname)
            found: set[str] = set()
            for parent in (klass.parents if klass else ()):
                if parent in seen or parent not in self.classes:
                    continue  # a cycle or an unknown class is reported by the semantic checks
                found |= {parent} | walk(parent, seen | {parent})
            out[cname] = frozenset(found)
            return out[cname]

        for cname in self.classes:
            walk(cname, frozenset({cname}))
        return out

    def ancestors(self, class_name: str) -> frozenset[str]:
        """Every class ``class_name`` is a kind of (parents, their parents, ...), itself excluded."""
        return self._ancestors.get(class_name, frozenset())

    def is_a(self, class_name: str, other: str) -> bool:
        """``class_name`` is ``other`` or one of its subclasses (at any depth)."""
        return class_name == other or other in self.ancestors(class_name)

    # ---------------------------------------------------------------- loading
    @classmethod
    def from_file(cls, path: str | Path, *, stored_examples: bool = True) -> "Ontology":
        """The ontology of a file, with the corrected passages stored beside it (``NAME.examples.json``,
        :mod:`graphrag_got.ontology.example_store`) appended to its examples unless ``stored_examples=False``."""
        from graphrag_got.ontology.example_store import with_stored_examples
        from graphrag_got.ontology.reading import read_ontology_json

        p = Path(path)
        onto = cls.from_dict(read_ontology_json(p), source=str(p))
        return with_stored_examples(onto, p) if stored_examples else onto

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "Ontology":
        from graphrag_got.ontology.loading import build_ontology

        return build_ontology(cls, data, source)

    # ---------------------------------------------------------------- queries
    def relation(self, name: str) -> Relation | None:
        return self._relations_by_name.get(name)

    @cached_property
    def _relations_by_name(self) -> dict[str, Relation]:
        return {r.name: r for r in self.relations}

    @property
    def identity_attributes(self) -> tuple[str, ...]:
        """Relation attributes that are part of a fact's identity, in declaration order."""
        return tuple(name for name, spec in self.relation_attributes.items() if spec.identity)

    @cached_property
    def hash(self) -> str:
        """sha256 of the file's canonical JSON: any edit (even a comment) changes it, since comments reach the
        prompt. Relation cues (`indicios`, `indicios_inversos`) are left out: they never reach the model, only
        the validator, so editing them keeps the cached answers (revalidate to apply them, with no LLM call)."""
        blob = json.dumps(_without_cues(self.raw or self.model_dump(exclude={"source", "raw"})), sort_keys=True,
                          ensure_ascii=False, separators=(",", ":"), default=list)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def relations_accepting(self, subject_type: str, object_type: str) -> list[str]:
        return [r.name for r in self.relations if r.accepts(subject_type, object_type)]

    def describe(self) -> str:
        """The readable summary shown by ``ontology show`` and sent in the extraction prompt."""
        return describe_ontology(self)


_CUE_KEYS = frozenset({"indicios", "cues", "indicios_inversos", "reverse_cues"})


def _without_cues(raw: dict[str, Any]) -> dict[str, Any]:
    """The file's data without the relations' cues (what the ontology hash covers)."""
    out = dict(raw)
    for key in ("relaciones", "relations"):
        rels = out.get(key)
        if isinstance(rels, list):
            out[key] = [{k: v for k, v in r.items() if k not in _CUE_KEYS} if isinstance(r, dict) else r
                        for r in rels]
    return out
