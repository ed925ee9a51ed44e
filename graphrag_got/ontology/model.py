"""The ontology a user writes: a validated Pydantic model loaded ``from_file``.

Loading happens in passes so every message can point at the offending place:

1. reading: the file must be UTF-8 text (a BOM is accepted), not a folder or a binary file;
2. JSON syntax (line and column from the decoder), nesting depth, duplicate keys (with their line:
   the standard decoder silently keeps the last value, which would drop half an ontology);
3. the file schema ``ontology.schema.json`` with ``jsonschema`` (shape, identifiers, keys) and
   Spanish/English key pairs given twice;
4. property specs (``"string opcional, ej. ..."``, ``"enum: a | b"``, the object form) parsed here,
   so the message says what is wrong in the spec text;
5. semantic checks in Pydantic validators (domain/range name declared classes, duplicates,
   reserved names, non-empty enums).

Every problem found is reported with its JSON path (``$.relaciones[3].rango[1]``) and value.
"""

from __future__ import annotations

import hashlib
import json
import json.decoder
import json.scanner
import re
from functools import cached_property
from importlib import resources
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from graphrag_got.errors import OntologyError
from graphrag_got.extract.evidence import cue_words

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # always used with fullmatch (``$`` accepts "X\n")
# Labels and types of the graph's own structure (documents, chunks, communities, notes vaults).
RESERVED_CLASSES = frozenset({"Entity", "Document", "Chunk", "Community", "Folder", "Tag", "MissingNote"})
RESERVED_RELATIONS = frozenset({"HAS_CHUNK", "MENTIONS", "IN_COMMUNITY", "IN_FOLDER", "TAGGED", "LINKS_TO",
                                "CO_OCCURS"})
# Node fields the toolkit writes, and the keys of the answer forms the model fills
# ("confidence"; the compact form's "t", "n", "c").
RESERVED_PROPERTIES = frozenset(
    {"uid", "key", "name", "type", "chunk_ids", "doc_ids", "evidence", "evidence_chunk_ids", "aliases", "communityId",
     "communityLevel", "confidence", "embedding", "embedding_hash", "t", "n", "c"}
)
#: Relation attributes share a map with the fields of a relation in the graph, in ``extraction.json``
#: and in the answer schema the model fills, so those field names are taken too.
RESERVED_RELATION_ATTRIBUTES = RESERVED_PROPERTIES | frozenset(
    {"symmetric", "relation", "subject", "subject_key", "subject_type", "object", "object_key", "object_type",
     "r", "s", "o", "subject_position", "object_position", "weight", "count"}
)

# English alias -> canonical (Spanish) key, per object kind.
_TOP_ALIASES = {
    "name": "nombre",
    "description": "descripcion",
    "classes": "clases",
    "relations": "relaciones",
    "relation_attributes": "atributos_de_relacion",
    "examples": "ejemplos",
}
_CLASS_ALIASES = {"properties": "propiedades", "subclass_of": "subclase_de"}
_REL_ALIASES = {"name": "nombre", "domain": "dominio", "range": "rango", "symmetric": "simetrica",
                "cues": "indicios", "reverse_cues": "indicios_inversos"}
_SPEC_ALIASES = {
    "type": "tipo",
    "values": "valores",
    "requerido": "obligatorio",
    "required": "obligatorio",
    "identity": "identidad",
}
_EXAMPLE_ALIASES = {"text": "texto", "entities": "entidades", "relations": "relaciones"}
_EXAMPLE_ENTITY_ALIASES = {"class": "clase", "type": "clase", "name": "nombre", "properties": "propiedades"}
_EXAMPLE_RELATION_ALIASES = {"relation": "relacion", "subject": "sujeto", "object": "objeto",
                             "attributes": "atributos"}
_SPEC_KEYS = frozenset({"tipo", "valores", "obligatorio", "comment", "identidad"})

# Words of a property spec (compared case-insensitively).
_STRING_TYPES = frozenset({"string", "string_libre", "texto", "text"})
_REQUIRED_WORDS = frozenset({"obligatorio", "obligatoria", "requerido", "requerida", "required"})
_OPTIONAL_WORDS = frozenset({"opcional", "optional"})
_FLAG_WORDS = _REQUIRED_WORDS | _OPTIONAL_WORDS
_SPEC_SYNTAX = (
    "write a type ('string' or 'enum: a | b | c'), optionally a required/optional word "
    "('obligatorio', 'requerido', 'required' / 'opcional', 'optional'), then an optional hint for the "
    "model, e.g. \"string, obligatorio\", \"string opcional, ej. 'A', 'B'\", \"enum: a | b, requerido\""
)
_ENUM_PREFIX = re.compile(r"\s*enum\s*:", re.IGNORECASE)
_LEADING_WORD = re.compile(r"\s*([^\W\d]\w*)")


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
        elif self.values:
            raise ValueError("only an enum property takes values")
        return self

    @classmethod
    def parse(cls, spec: Any, *, relation_attribute: bool = False) -> "PropertySpec":
        """Read a spec string (``"string, obligatorio"``, ``"enum: a | b | c, opcional"``) or object.

        ``relation_attribute`` selects the defaults and keys of relation attributes: ``identity``
        defaults to true there, and the ``identidad``/``identity`` key is refused elsewhere.
        Raises ``ValueError`` (or pydantic's ``ValidationError``) saying what is wrong.
        """
        if isinstance(spec, PropertySpec):
            return spec
        if isinstance(spec, dict):
            return cls._parse_object(spec, relation_attribute=relation_attribute)
        if not isinstance(spec, str):
            raise ValueError(f"a property spec is a string or an object, not {type(spec).__name__}")
        kind, values, required, hint = _parse_spec_text(spec)
        return cls(kind=kind, values=values, required=required, hint=hint, identity=relation_attribute)

    @classmethod
    def _parse_object(cls, spec: dict[str, Any], *, relation_attribute: bool) -> "PropertySpec":
        conflicts = _given_twice(spec, _SPEC_ALIASES)
        if conflicts:
            raise ValueError("; ".join(f"both {a!r} and its alias {b!r} are given; keep one" for a, b in conflicts))
        data = _apply_aliases(spec, _SPEC_ALIASES)
        unknown = sorted(set(data) - _SPEC_KEYS)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(map(repr, unknown))} in a property spec "
                             "(keys: tipo/type, valores/values, obligatorio/requerido/required, comment, "
                             "identidad/identity)")
        if "identidad" in data and not relation_attribute:
            raise ValueError("'identidad' / 'identity' only applies to relation attributes (whether the "
                             "attribute tells two facts apart); remove it from this class property")
        for key in ("obligatorio", "identidad"):
            if key in data and not isinstance(data[key], bool):
                raise ValueError(f"{key!r} must be true or false, not {json.dumps(data[key], ensure_ascii=False)}")
        comment = data.get("comment", "")
        if not isinstance(comment, str):
            raise ValueError("'comment' must be a string")
        values: tuple[str, ...] = ()
        if "valores" in data:
            raw_values = data["valores"]
            if not isinstance(raw_values, list) or not all(isinstance(v, str) for v in raw_values):
                raise ValueError("'valores' must be a list of strings")
            values = tuple(v.strip() for v in raw_values)
        kind: Literal["string", "enum"] = "enum" if "valores" in data else "string"
        if "tipo" in data:
            tipo = data["tipo"]
            if not isinstance(tipo, str):
                raise ValueError("'tipo' must be a string: 'string', 'string_libre', 'texto' or 'enum: a | b'")
            enum_body = _ENUM_PREFIX.match(tipo)
            if enum_body:
                if "valores" in data:
                    raise ValueError("the enum values are given twice ('tipo' and 'valores'): keep one")
                values, flag, hint = _parse_enum_body(tipo[enum_body.end():])
                if flag is not None or hint:
                    raise ValueError("in the object form 'tipo' holds only the type and its values: say "
                                     "required with \"obligatorio\": true and describe it in 'comment'")
                kind = "enum"
            elif tipo.strip().lower() == "enum":
                kind = "enum"
            elif tipo.strip().lower() in _STRING_TYPES:
                kind = "string"
            else:
                raise ValueError(f"unknown type {tipo!r}: use 'string' (or 'string_libre', 'texto') for free "
                                 "text, or 'enum: a | b' / 'enum' with 'valores' for a closed set")
        return cls(kind=kind, values=values, required=data.get("obligatorio", False), comment=comment,
                   identity=data.get("identidad", relation_attribute))

    def describe(self) -> str:
        text = "text" if self.kind == "string" else "one of: " + ", ".join(self.values)
        text += ", required" if self.required else ", optional"
        if self.comment.strip():
            text += f" - {self.comment.strip()}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return text


def _parse_spec_text(spec: str) -> tuple[Literal["string", "enum"], tuple[str, ...], bool, str]:
    """``"<type>[,] [<required/optional word>][, <hint>]"`` -> (kind, values, required, hint)."""
    enum_prefix = _ENUM_PREFIX.match(spec)
    if enum_prefix:
        values, flag, hint = _parse_enum_body(spec[enum_prefix.end():])
        if values == ("",):
            values = ()
        return "enum", values, flag in _REQUIRED_WORDS, hint
    m = _LEADING_WORD.match(spec)
    word = m.group(1) if m else ""
    if word.lower() == "enum":
        raise ValueError("write a colon after 'enum' and separate the values with '|': 'enum: a | b | c'")
    if word.lower() not in _STRING_TYPES:
        raise ValueError(f"cannot read property spec {spec!r}: " + _SPEC_SYNTAX)
    flag, hint = _flag_and_hint(spec[m.end():] if m else "")
    return "string", (), flag in _REQUIRED_WORDS, hint


def _parse_enum_body(body: str) -> tuple[tuple[str, ...], str | None, str]:
    """``"a | b | c, opcional, <hint>"`` -> (values, flag word or None, hint)."""
    values_text, comma, tail = body.partition(",")
    values = tuple(v.strip() for v in values_text.split("|"))
    flag, hint = None, ""
    if comma:
        first = _LEADING_WORD.match(tail)
        if not first or first.group(1).lower() not in _FLAG_WORDS:
            raise ValueError("enum values are separated by '|', not by commas: write 'enum: a | b | c' "
                             "(after the last value only ', opcional' or ', requerido' and a hint may follow)")
        flag, hint = _flag_and_hint(tail)
    for value in values:
        words = value.split()
        if len(words) > 1 and words[-1].lower() in _FLAG_WORDS:
            raise ValueError(f"enum value {value!r} ends with {words[-1]!r}: put a comma before it "
                             f"('... | {' '.join(words[:-1])}, {words[-1]}')")
    return values, flag, hint


def _flag_and_hint(rest: str) -> tuple[str | None, str]:
    """What follows the type: ``[,] [flag [(,|;|:|space) hint]]`` -> (lower-case flag or None, hint).

    A hint needs the required/optional word before it, so a misspelt word ("obligatoro") is an
    error instead of a hint that silently leaves the property optional.
    """
    rest = rest.strip()
    if rest.startswith(","):
        rest = rest[1:].strip()
    if not rest:
        return None, ""
    m = _LEADING_WORD.match(rest)
    if not m or m.group(1).lower() not in _FLAG_WORDS:
        raise ValueError(f"after the type write a required/optional word before any hint "
                         f"(read {rest!r}); " + _SPEC_SYNTAX)
    flag = m.group(1).lower()
    hint = rest[m.end():].strip()  # the word regex is greedy: what follows is not a letter or digit
    if hint[:1] in {",", ";", ":", ".", "-"}:
        hint = hint[1:].strip()
    second = _LEADING_WORD.match(hint)
    if second and second.group(1).lower() in _FLAG_WORDS:
        raise ValueError(f"two required/optional words ({flag!r} and {second.group(1)!r}): keep one")
    return flag, hint


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
    cues: tuple[str, ...] = ()  # `indicios`: words that state the relation (see evidence.ChunkText.has_cue)
    # `indicios_inversos`: words that state it object first ("trained under", a passive "betrayed by"); they
    # count as cues, and tell the wording's direction the other way (see evidence.ChunkText.stated_order)
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

    def accepts(self, subject_type: str, object_type: str) -> bool:
        ok = subject_type in self.domain and object_type in self.range
        if not ok and self.symmetric:
            ok = object_type in self.domain and subject_type in self.range
        return ok


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

    # ---------------------------------------------------------------- semantic checks
    @model_validator(mode="after")
    def _semantic_checks(self) -> "Ontology":
        """Collect every semantic problem (not just the first) with its JSON path."""
        problems: list[tuple[tuple[Any, ...], str]] = []
        if not self.classes:
            problems.append((("clases",), "an ontology needs at least one class: add one under 'clases'"))
        for name, klass in self.classes.items():
            problems += _identifier_problems(name, ("clases", name), reserved=RESERVED_CLASSES, what="class")
            for prop, spec in klass.properties.items():
                loc = ("clases", name, "propiedades", prop)
                problems += _property_name_problems(prop, loc, RESERVED_PROPERTIES, "property")
                if spec.identity:
                    problems.append((loc, "identity only applies to relation attributes; remove it here"))
            for j, parent in enumerate(klass.parents):
                loc = ("clases", name, "subclase_de", j)
                if parent not in self.classes:
                    problems.append((loc, f"class {name} is a subclass of {parent!r}, which is not declared in "
                                          f"'clases' (declared: {', '.join(self.classes)})"))
                elif parent == name:
                    problems.append((loc, f"class {name} cannot be a subclass of itself"))
        problems += _cycle_problems(self.classes)
        if not self.relations:
            problems.append((("relaciones",), _NO_RELATION))
        seen: dict[str, int] = {}
        for i, rel in enumerate(self.relations):
            problems += _identifier_problems(rel.name, ("relaciones", i, "nombre"), reserved=RESERVED_RELATIONS,
                                             what="relation")
            if rel.name in seen:
                problems.append((("relaciones", i, "nombre"),
                                 f"duplicate relation {rel.name!r} (first declared at $.relaciones[{seen[rel.name]}])"))
            seen.setdefault(rel.name, i)
            for key, cues in (("indicios", rel.cues), ("indicios_inversos", rel.reverse_cues)):
                for j, cue in enumerate(cues):
                    if not cue_words(cue):
                        problems.append((("relaciones", i, key, j),
                                         f"cue {cue!r} of relation {rel.name} has no word: write the words that "
                                         "state the relation in a text, e.g. 'married to'"))
            if rel.reverse_cues and rel.symmetric:
                problems.append((("relaciones", i, "indicios_inversos"),
                                 f"relation {rel.name} is symmetric, so no wording states it in reverse: move these "
                                 "words to 'indicios' or remove 'indicios_inversos'"))
            for field, key in (("domain", "dominio"), ("range", "rango")):
                for j, cname in enumerate(getattr(rel, field)):
                    if cname not in self.classes:
                        problems.append((("relaciones", i, key, j),
                                         f"relation {rel.name} names class {cname!r}, which is not declared in "
                                         f"'clases' (declared: {', '.join(self.classes)})"))
        if (not problems and any(k.parents for k in self.classes.values())
                and not any(r.declared_domain or r.declared_range for r in self.relations)):
            # frozen model: the relations are expanded once, here, before anything else reads them
            object.__setattr__(self, "relations", [self._expanded(r) for r in self.relations])
            self.__dict__.pop("_relations_by_name", None)
        for attr in self.relation_attributes:
            problems += _property_name_problems(attr, ("atributos_de_relacion", attr), RESERVED_RELATION_ATTRIBUTES,
                                                "attribute")
        for i, example in enumerate(self.examples):
            problems += _example_problems(self, example, ("ejemplos", i))
        if problems:
            raise ValueError(_PROBLEM_SEP.join(f"@{_json_path(loc)}@ {msg}" for loc, msg in problems))
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
    def from_file(cls, path: str | Path) -> "Ontology":
        p = Path(path)
        data = _load_json(p, _read_text(p))
        return cls.from_dict(data, source=str(p))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "Ontology":
        try:
            problems = file_schema_problems(data)
            if problems:
                raise _error(source, problems)
            canon, problems = _canonical(data)
            onto: Ontology | None = None
            try:
                onto = cls(**canon, source=source, raw=data)
            except ValidationError as exc:  # reported together with the spec problems, if any
                problems += _pydantic_problems(exc, canon)
            if problems or onto is None:
                raise _error(source, problems or [("$", "invalid ontology")])
            return onto
        except RecursionError:
            raise OntologyError(f"{source}: the ontology is nested too deeply (an ontology is a few levels deep); "
                                "check the file's brackets", problems=[("$", "nested too deeply")],
                                path=source) from None

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
        lines: list[str] = []
        title = self.name or "Ontology"
        lines.append(f"ONTOLOGY: {title}" + (f" - {self.description}" if self.description else ""))
        lines.append("")
        lines.append("ENTITY CLASSES (field \"type\" of an entity):")
        for cname, klass in self.classes.items():
            kind = f" (a kind of {', '.join(klass.parents)})" if klass.parents else ""
            lines.append(f"- {cname}{kind}: {klass.comment}".rstrip(": "))
            for pname, spec in klass.properties.items():
                lines.append(f"    property {pname}: {spec.describe()}")
        lines.append("")
        lines.append("RELATIONS (subject type -> object type):")
        for rel in self.relations:
            sym = " [symmetric]" if rel.symmetric else ""
            lines.append(f"- {rel.name}: {' | '.join(rel.stated_domain)} -> {' | '.join(rel.stated_range)}{sym}. "
                         f"{rel.comment}".rstrip())
        if self.relation_attributes:
            lines.append("")
            lines.append("RELATION ATTRIBUTES:")
            for aname, spec in self.relation_attributes.items():
                lines.append(f"- {aname}: {spec.describe()}")
        return "\n".join(lines)


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


def _cycle_problems(classes: Mapping[str, OntologyClass]) -> list[tuple[tuple[Any, ...], str]]:
    """One problem per class hierarchy cycle (``A`` a subclass of ``B``, ``B`` of ``A``), at its first class."""
    problems: list[tuple[tuple[Any, ...], str]] = []
    reported: set[str] = set()
    for start in classes:
        path, stack = [start], [(start, iter(classes[start].parents))]
        while stack:
            cname, parents = stack[-1]
            nxt = next(parents, None)
            if nxt is None:
                stack.pop()
                path.pop()
                continue
            if nxt == start and len(path) > 1 and not reported & set(path):
                reported |= set(path)
                problems.append((("clases", start, "subclase_de"),
                                 f"the class hierarchy has a cycle: {' -> '.join([*path, start])}; "
                                 "remove one of these 'subclase_de'"))
            elif nxt in classes and nxt not in path:
                path.append(nxt)
                stack.append((nxt, iter(classes[nxt].parents)))
    return problems


_NO_RELATION = ("an ontology needs at least one relation (extraction and its answer schema are built from "
                "the relations): add one under 'relaciones'")


# -------------------------------------------------------------------- reading the file
def _read_text(p: Path) -> str:
    """The file's text, or one clear :class:`OntologyError` (folder, missing, unreadable, binary, not UTF-8)."""
    if p.is_dir():
        raise OntologyError(f"{p}: is a folder, not an ontology file. Pass the JSON file itself "
                            "(e.g. ontology/got.json) with --ontology or GRAPHRAG_ONTOLOGY.", path=str(p))
    if not p.is_file():
        raise OntologyError(
            f"{p}: ontology file not found. Pass a path with --ontology or set GRAPHRAG_ONTOLOGY.",
            path=str(p),
        )
    try:
        blob = p.read_bytes()
    except OSError as exc:
        raise OntologyError(f"{p}: cannot read the ontology file: {exc.strerror or exc}", path=str(p)) from None
    if b"\x00" in blob:
        raise OntologyError(f"{p}: not a text file (it contains NUL bytes): an ontology is a JSON text file "
                            "saved as UTF-8", problems=[("file", "binary content")], path=str(p))
    try:
        return blob.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = blob.count(b"\n", 0, exc.start) + 1
        raise OntologyError(
            f"{p}:{line}: not UTF-8 text (byte 0x{blob[exc.start]:02x} at offset {exc.start}): save the file "
            "as UTF-8 and run `graphrag-got ontology check` again",
            problems=[(f"line {line}", "not UTF-8")], path=str(p),
        ) from None


class _DuplicateKeyDecoder(json.JSONDecoder):
    """A JSON decoder that records duplicate keys with the line of each repeat.

    It uses the pure-Python scanner so each object's text span is known; ontology files are small.
    """

    def __init__(self) -> None:
        super().__init__(object_pairs_hook=self._pairs)
        self.parse_object = self._parse_object
        self.scan_once = json.scanner.py_make_scanner(self)
        #: (object, [(key, position of the repeat, position of the first)]) for objects with repeated keys
        self.duplicates: list[tuple[dict[str, Any], list[tuple[str, str, str]]]] = []
        #: id(object) -> [(key, value the repeat replaced)], so objects inside dropped values get a path too
        self.dropped: dict[int, list[tuple[str, Any]]] = {}
        self._repeated: list[str] = []

    def _pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj: dict[str, Any] = {}
        repeated: list[str] = []
        for key, value in pairs:
            if key in obj:
                if key not in repeated:
                    repeated.append(key)
                self.dropped.setdefault(id(obj), []).append((key, obj[key]))
            obj[key] = value
        self._repeated = repeated
        return obj

    def _parse_object(self, s_and_end: tuple[str, int], *args: Any) -> tuple[dict[str, Any], int]:
        text, start = s_and_end
        obj, end = json.decoder.JSONObject(s_and_end, *args)
        repeated, self._repeated = self._repeated, []
        if repeated:
            found = []
            for key in repeated:
                offsets = [pos for k, pos in _key_offsets(text, start - 1, end) if k == key]
                first = _position(text, offsets[0])
                found += [(key, _position(text, pos), first) for pos in offsets[1:]]
            self.duplicates.append((obj, found))
        return obj, end


def _key_offsets(text: str, start: int, end: int) -> list[tuple[str, int]]:
    """(key, offset) of each key of the object ``text[start:end]`` (``text[start]`` is ``{``), not of nested ones."""
    out: list[tuple[str, int]] = []
    depth = 0
    i = start
    while i < end:
        char = text[i]
        if char == '"':
            value, after = json.decoder.scanstring(text, i + 1)
            if depth == 1:
                j = after
                while j < end and text[j] in " \t\r\n":
                    j += 1
                if j < end and text[j] == ":":
                    out.append((value, i))
            i = after
            continue
        if char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
        i += 1
    return out


def _position(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}, column {offset - text.rfind(chr(10), 0, offset)}"


def _load_json(p: Path, text: str) -> Any:
    decoder = _DuplicateKeyDecoder()
    try:
        data = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise OntologyError(
            f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}",
            problems=[(f"line {exc.lineno}, column {exc.colno}", exc.msg)],
            path=str(p),
        ) from None
    except RecursionError:
        raise OntologyError(f"{p}: the JSON is nested too deeply to read (an ontology is a few levels deep): check the "
                            "file's brackets", problems=[("$", "nested too deeply")], path=str(p)) from None
    except ValueError as exc:  # e.g. an integer literal with thousands of digits
        raise OntologyError(f"{p}: not valid JSON: {exc}", problems=[("$", str(exc))], path=str(p)) from None
    if decoder.duplicates:
        paths = _object_paths(data, decoder.dropped)
        problems = []
        for obj, found in decoder.duplicates:
            base = paths.get(id(obj), ())
            for key, where, first in found:
                problems.append((_json_path((*base, key)), f"duplicate key {key!r} at {where} (first at {first}): "
                                                           "JSON keeps only the last one; keep one of them"))
        raise _error(str(p), problems)
    return data


def _object_paths(data: Any, dropped: dict[int, list[tuple[str, Any]]]) -> dict[int, tuple[Any, ...]]:
    """id(dict) -> its location, for every object in ``data`` or in a value a repeated key replaced.

    Iterative, so no recursion limit; ``dropped`` holds the replaced values alive, so ids are unique.
    """
    out: dict[int, tuple[Any, ...]] = {}
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, dict):
            out[id(node)] = loc
            stack += [(v, (*loc, k)) for k, v in node.items()]
            stack += [(v, (*loc, k)) for k, v in dropped.get(id(node), [])]
        elif isinstance(node, list):
            stack += [(v, (*loc, i)) for i, v in enumerate(node)]
    return out


# -------------------------------------------------------------------- file schema
def file_schema() -> dict[str, Any]:
    """The JSON Schema of ontology files (also in ``ontology/ontology.schema.json`` for editors)."""
    text = resources.files("graphrag_got").joinpath("data/ontology.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def file_schema_problems(data: Any) -> list[tuple[str, str]]:
    validator = jsonschema.Draft202012Validator(file_schema())
    problems: list[tuple[str, str]] = []
    for err in sorted(validator.iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path]):
        loc = list(err.absolute_path)
        if "propertyNames" in err.absolute_schema_path:
            loc.append(err.instance)
        problems.append((_json_path(loc), _schema_message(err)))
    for path, key_a, key_b in _alias_conflicts(data):
        problems.append((path, f"both {key_a!r} and its alias {key_b!r} are given; keep one"))
    return problems


def _schema_message(err: jsonschema.ValidationError) -> str:
    inst = err.instance
    shown = json.dumps(inst, ensure_ascii=False) if not isinstance(inst, (dict, list)) else type(inst).__name__
    if err.validator == "pattern":
        return f"{shown} is not valid here: names must be identifiers (letters, digits, _; not starting with a digit)"
    if err.validator == "oneOf" and isinstance(inst, str):  # a class reference (dominio/rango)
        return f"{shown} is not valid here: class names must be identifiers (letters, digits, _; not starting " \
               "with a digit)"
    if err.validator == "oneOf":
        return f"{shown} does not match any allowed form ({err.message})"
    if err.validator == "additionalProperties":
        return err.message.replace("Additional properties are not allowed", "unknown key(s)")
    if err.validator == "anyOf" and err.validator_value and "required" in err.validator_value[0]:
        if err.validator_value[0]["required"] == ["relaciones"]:
            return "missing 'relaciones' (or 'relations'): " + _NO_RELATION
        return "missing 'clases' (or 'classes'): an ontology needs at least one class"
    if err.validator == "minItems" and err.absolute_path and err.absolute_path[-1] in {"relaciones", "relations"}:
        return _NO_RELATION
    if err.validator == "minProperties" and err.absolute_path and err.absolute_path[-1] in {"clases", "classes"}:
        return "an ontology needs at least one class: add one under 'clases'"
    if err.validator == "propertyNames":
        return f"name {shown} is not a valid identifier (letters, digits, _; not starting with a digit)"
    return f"{err.message}"


def _given_twice(obj: dict[str, Any], aliases: dict[str, str]) -> list[tuple[str, str]]:
    """Pairs (canonical or first key, other key) naming the same setting, both present in ``obj``."""
    groups: dict[str, list[str]] = {}
    for key in obj:
        groups.setdefault(aliases.get(key, key), []).append(key)
    out = []
    for canonical, keys in groups.items():
        keys.sort(key=lambda k: (k != canonical, k))
        out += [(keys[0], other) for other in keys[1:]]
    return out


def _alias_conflicts(data: Any) -> list[tuple[str, str, str]]:
    """Every object (top level, class, relation, spec object) giving a key and its alias."""
    out: list[tuple[str, str, str]] = []

    def check(obj: Any, loc: tuple[Any, ...], aliases: dict[str, str]) -> bool:
        if not isinstance(obj, dict):
            return False
        out.extend((_json_path(loc), a, b) for a, b in _given_twice(obj, aliases))
        return True

    def specs(obj: Any, loc: tuple[Any, ...]) -> None:
        if isinstance(obj, dict):
            for pname, spec in obj.items():
                check(spec, (*loc, pname), _SPEC_ALIASES)

    if not check(data, (), _TOP_ALIASES):
        return out
    for ckey in ("clases", "classes"):
        if isinstance(data.get(ckey), dict):
            for cname, cdata in data[ckey].items():
                if check(cdata, (ckey, cname), _CLASS_ALIASES):
                    for pkey in ("propiedades", "properties"):
                        specs(cdata.get(pkey), (ckey, cname, pkey))
    for rkey in ("relaciones", "relations"):
        if isinstance(data.get(rkey), list):
            for i, rdata in enumerate(data[rkey]):
                check(rdata, (rkey, i), _REL_ALIASES)
    for akey in ("atributos_de_relacion", "relation_attributes"):
        specs(data.get(akey), (akey,))
    for xkey in ("ejemplos", "examples"):
        if isinstance(data.get(xkey), list):
            for i, ex in enumerate(data[xkey]):
                if not check(ex, (xkey, i), _EXAMPLE_ALIASES):
                    continue
                for part, aliases in (("entidades", _EXAMPLE_ENTITY_ALIASES), ("relaciones", _EXAMPLE_RELATION_ALIASES)):
                    for key in (part, next(k for k, v in _EXAMPLE_ALIASES.items() if v == part)):
                        if isinstance(ex.get(key), list):
                            for j, item in enumerate(ex[key]):
                                check(item, (xkey, i, key, j), aliases)
    return out


# -------------------------------------------------------------------- canonical form
_PROBLEM_SEP = "\x1e"  # separates several located problems inside one ValueError message


def _apply_aliases(data: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    return {aliases.get(k, k): v for k, v in data.items()}


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _canonical(data: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Spanish/English keys -> the model's field names; property specs parsed; problems collected."""
    problems: list[tuple[str, str]] = []
    top = _apply_aliases(data, _TOP_ALIASES)
    classes: dict[str, Any] = {}
    for cname, cdata in top.get("clases", {}).items():
        cdata = _apply_aliases(cdata, _CLASS_ALIASES)
        props = {}
        for pname, spec in cdata.get("propiedades", {}).items():
            parsed = _parse_spec(spec, ("clases", cname, "propiedades", pname), False, problems)
            if parsed is not None:
                props[pname] = parsed
        classes[cname] = {"name": cname, "comment": cdata.get("comment", ""), "properties": props,
                          "parents": tuple(_as_list(cdata.get("subclase_de", ())))}
    relations = []
    for i, rdata in enumerate(top.get("relaciones", [])):
        rdata = _apply_aliases(rdata, _REL_ALIASES)
        missing = [key for key in ("nombre", "dominio", "rango") if key not in rdata]
        if missing:
            problems.append((_json_path(("relaciones", i)), f"relation is missing {', '.join(map(repr, missing))}"))
            continue
        relations.append(
            {
                "name": rdata["nombre"],
                "domain": tuple(_as_list(rdata["dominio"])),
                "range": tuple(_as_list(rdata["rango"])),
                "symmetric": bool(rdata.get("simetrica", False)),
                "comment": rdata.get("comment", ""),
                "cues": tuple(str(c).strip() for c in rdata.get("indicios", ())),
                "reverse_cues": tuple(str(c).strip() for c in rdata.get("indicios_inversos", ())),
            }
        )
    attrs = {}
    for aname, spec in top.get("atributos_de_relacion", {}).items():
        parsed = _parse_spec(spec, ("atributos_de_relacion", aname), True, problems)
        if parsed is not None:
            attrs[aname] = parsed
    examples = [_canonical_example(ex) for ex in top.get("ejemplos", [])]
    canon = {
        "name": top.get("nombre", ""),
        "description": top.get("descripcion", ""),
        "classes": classes,
        "relations": relations,
        "relation_attributes": attrs,
        "examples": examples,
    }
    return canon, problems


def _canonical_example(data: dict[str, Any]) -> dict[str, Any]:
    """An example's Spanish/English keys -> the model's fields (the file schema checked the shape)."""
    ex = _apply_aliases(data, _EXAMPLE_ALIASES)
    entities = []
    for edata in ex.get("entidades", []):
        e = _apply_aliases(edata, _EXAMPLE_ENTITY_ALIASES)
        entities.append({"class_name": e.get("clase", ""), "name": e.get("nombre", ""),
                         "properties": e.get("propiedades", {})})
    relations = []
    for rdata in ex.get("relaciones", []):
        r = _apply_aliases(rdata, _EXAMPLE_RELATION_ALIASES)
        relations.append({"relation": r.get("relacion", ""), "subject": r.get("sujeto", ""),
                          "object": r.get("objeto", ""), "attributes": r.get("atributos", {})})
    return {"text": ex.get("texto", ""), "entities": entities, "relations": relations}


def _value_problem(spec: PropertySpec, value: str, loc: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    if spec.kind == "enum" and value not in spec.values:
        return [(loc, f"{value!r} is not one of the declared values ({', '.join(spec.values)})")]
    return []


def _example_problems(onto: "Ontology", ex: ExtractionExample,
                      loc: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], str]]:
    """Everything wrong with one annotated example, each problem at its JSON path."""
    from graphrag_got.extract.evidence import ChunkText  # evidence needs nothing from here at import time

    problems: list[tuple[tuple[Any, ...], str]] = []
    text = ChunkText(ex.text)
    classes_of: dict[str, set[str]] = {}
    for j, ent in enumerate(ex.entities):
        eloc = (*loc, "entidades", j)
        klass = onto.classes.get(ent.class_name)
        if klass is None:
            problems.append(((*eloc, "clase"), f"class {ent.class_name!r} is not declared in 'clases' "
                                               f"(declared: {', '.join(onto.classes)})"))
        else:
            for pname, value in ent.properties.items():
                spec = klass.properties.get(pname)
                if spec is None:
                    problems.append(((*eloc, "propiedades", pname), f"class {ent.class_name} declares no property "
                                                                    f"{pname!r}"))
                else:
                    problems += _value_problem(spec, value, (*eloc, "propiedades", pname))
        if not text.mentions(ent.name):
            problems.append(((*eloc, "nombre"), f"{ent.name!r} does not occur in the example's text: an example "
                                                "must only name what its text says"))
        classes_of.setdefault(ent.name, set()).add(ent.class_name)
    for j, rel in enumerate(ex.relations):
        rloc = (*loc, "relaciones", j)
        decl = onto.relation(rel.relation)
        if decl is None:
            problems.append(((*rloc, "relacion"), f"relation {rel.relation!r} is not declared in 'relaciones'"))
            continue
        ends = []
        for key, name in (("sujeto", rel.subject), ("objeto", rel.object)):
            if name not in classes_of:
                problems.append(((*rloc, key), f"{name!r} is not one of this example's entities: list it under "
                                               "'entidades' with its class"))
            ends.append(classes_of.get(name, set()))
        if all(ends) and not any(decl.accepts(s, o) for s in ends[0] for o in ends[1]):
            problems.append((rloc, f"{rel.relation} takes {' | '.join(decl.domain)} -> {' | '.join(decl.range)}, "
                                   f"not {' | '.join(sorted(ends[0]))} -> {' | '.join(sorted(ends[1]))}"))
        for aname, value in rel.attributes.items():
            spec = onto.relation_attributes.get(aname)
            if spec is None:
                problems.append(((*rloc, "atributos", aname), f"{aname!r} is not declared in 'atributos_de_relacion'"))
            else:
                problems += _value_problem(spec, value, (*rloc, "atributos", aname))
    return problems


def _parse_spec(spec: Any, loc: tuple[Any, ...], relation_attribute: bool,
                problems: list[tuple[str, str]]) -> PropertySpec | None:
    try:
        return PropertySpec.parse(spec, relation_attribute=relation_attribute)
    except (ValueError, ValidationError) as exc:
        msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        problems.append((_json_path(loc),
                         f"{msg.removeprefix('Value error, ')} (value: {json.dumps(spec, ensure_ascii=False)})"))
        return None


def _identifier_problems(name: str, loc: tuple[Any, ...], *, reserved: frozenset[str],
                         what: str) -> list[tuple[tuple[Any, ...], str]]:
    if not IDENTIFIER.fullmatch(name):
        return [(loc, f"{what} name {name!r} is not a valid identifier (it becomes a Neo4j "
                      f"{'label' if what == 'class' else 'relationship type'}): use letters, digits and _")]
    if name in reserved:
        return [(loc, f"{what} name {name!r} is reserved by the graph model; rename it")]
    return []


def _property_name_problems(name: str, loc: tuple[Any, ...], reserved: frozenset[str],
                            what: str) -> list[tuple[tuple[Any, ...], str]]:
    if not IDENTIFIER.fullmatch(name):
        return [(loc, f"{what} name {name!r} is not a valid identifier (it becomes a Neo4j property name): "
                      "use ASCII letters, digits and _, not starting with a digit")]
    if name in reserved:
        return [(loc, f"{what} name {name!r} is reserved by the graph model "
                      f"({', '.join(sorted(reserved))}); rename it")]
    return []


def _pydantic_problems(exc: ValidationError, canon: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if msg.startswith("@"):
            for part in msg.split(_PROBLEM_SEP):
                m = re.match(r"^@(.*?)@ (.*)$", part, re.DOTALL)
                if m:
                    problems.append((m.group(1), m.group(2)))
        else:
            problems.append((_json_path(tuple(err["loc"])), f"{msg} (value: {err.get('input')!r})"))
    return problems


def _json_path(loc: Any) -> str:
    out = "$"
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif IDENTIFIER.fullmatch(str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def _error(source: str, problems: list[tuple[str, str]]) -> OntologyError:
    lines = [f"{source}: {len(problems)} problem(s) in the ontology:"]
    lines += [f"  {path}: {msg}" for path, msg in problems]
    lines.append("Fix the file and run `graphrag-got ontology check` again.")
    return OntologyError("\n".join(lines), problems=problems, path=source)
