"""The ontology a user writes: a validated Pydantic model loaded ``from_file``.

Loading happens in three passes so every message can point at the offending place:

1. JSON syntax (line and column from the decoder);
2. the file schema ``ontology.schema.json`` with ``jsonschema`` (shape, identifiers, spec syntax);
3. semantic checks in Pydantic validators (domain/range name declared classes, duplicates,
   reserved names, non-empty enums).

Every problem found is reported with its JSON path (``$.relaciones[3].rango[1]``) and value.
"""

from __future__ import annotations

import hashlib
import json
import re
from functools import cached_property
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import jsonschema
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from .errors import OntologyError

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
RESERVED_CLASSES = frozenset({"Entity", "Document", "Chunk", "Community"})
RESERVED_RELATIONS = frozenset({"HAS_CHUNK", "MENTIONS", "IN_COMMUNITY"})
RESERVED_PROPERTIES = frozenset(
    {"uid", "key", "name", "type", "chunk_ids", "doc_ids", "communityId", "communityLevel"}
)

# English alias -> canonical (Spanish) key, per object kind.
_TOP_ALIASES = {
    "name": "nombre",
    "description": "descripcion",
    "classes": "clases",
    "relations": "relaciones",
    "relation_attributes": "atributos_de_relacion",
}
_CLASS_ALIASES = {"properties": "propiedades"}
_REL_ALIASES = {"name": "nombre", "domain": "dominio", "range": "rango", "symmetric": "simetrica"}
_SPEC_ALIASES = {"type": "tipo", "values": "valores", "required": "requerido"}

_SPEC = re.compile(
    r"^\s*(?P<kind>string|texto|text|enum\s*:(?P<values>.*?))\s*"
    r"(,\s*(?P<flag>opcional|optional|requerido|required)\s*)?$",
    re.IGNORECASE | re.DOTALL,
)


class PropertySpec(BaseModel):
    """One property of a class (or one relation attribute)."""

    model_config = ConfigDict(frozen=True)

    kind: Literal["string", "enum"]
    values: tuple[str, ...] = ()
    required: bool = False
    comment: str = ""

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
    def parse(cls, spec: Any) -> "PropertySpec":
        """Accept ``"string, opcional"``, ``"enum: a | b | c"`` or the object form."""
        if isinstance(spec, PropertySpec):
            return spec
        if isinstance(spec, dict):
            data = _apply_aliases(spec, _SPEC_ALIASES)
            kind = data.get("tipo", "enum" if data.get("valores") else "string")
            return cls(
                kind=kind,
                values=tuple(str(v).strip() for v in data.get("valores", [])),
                required=bool(data.get("requerido", False)),
                comment=data.get("comment", ""),
            )
        if not isinstance(spec, str):
            raise ValueError(f"a property spec is a string or an object, not {type(spec).__name__}")
        m = _SPEC.match(spec)
        if not m:
            raise ValueError(
                f"cannot read property spec {spec!r}: write 'string', 'enum: a | b | c', "
                "optionally followed by ', opcional' or ', requerido'"
            )
        required = (m.group("flag") or "").lower() in {"requerido", "required"}
        if m.group("values") is not None:
            values = tuple(v.strip() for v in m.group("values").split("|"))
            if values == ("",):
                values = ()
            return cls(kind="enum", values=values, required=required)
        return cls(kind="string", required=required)

    def describe(self) -> str:
        base = "text" if self.kind == "string" else "one of: " + ", ".join(self.values)
        return base + (", required" if self.required else ", optional")


class OntologyClass(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    comment: str = ""
    properties: dict[str, PropertySpec] = Field(default_factory=dict)


class Relation(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    domain: tuple[str, ...]
    range: tuple[str, ...]
    symmetric: bool = False
    comment: str = ""

    def accepts(self, subject_type: str, object_type: str) -> bool:
        ok = subject_type in self.domain and object_type in self.range
        if not ok and self.symmetric:
            ok = object_type in self.domain and subject_type in self.range
        return ok


class Ontology(BaseModel):
    """A validated ontology. Build it with :meth:`from_file` or :meth:`from_dict`."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    name: str = ""
    description: str = ""
    classes: dict[str, OntologyClass]
    relations: list[Relation]
    relation_attributes: dict[str, PropertySpec] = Field(default_factory=dict)
    source: str = "<dict>"
    raw: dict[str, Any] = Field(default_factory=dict, repr=False)

    # ---------------------------------------------------------------- semantic checks
    @model_validator(mode="after")
    def _semantic_checks(self) -> "Ontology":
        """Collect every semantic problem (not just the first) with its JSON path."""
        problems: list[tuple[tuple[Any, ...], str]] = []
        for name, klass in self.classes.items():
            problems += _identifier_problems(name, ("clases", name), reserved=RESERVED_CLASSES, what="class")
            for prop in klass.properties:
                if prop in RESERVED_PROPERTIES:
                    problems.append((("clases", name, "propiedades", prop),
                                     f"property name {prop!r} is reserved by the graph model "
                                     f"({', '.join(sorted(RESERVED_PROPERTIES))}); rename it"))
        seen: dict[str, int] = {}
        for i, rel in enumerate(self.relations):
            problems += _identifier_problems(rel.name, ("relaciones", i, "nombre"), reserved=RESERVED_RELATIONS,
                                             what="relation")
            if rel.name in seen:
                problems.append((("relaciones", i, "nombre"),
                                 f"duplicate relation {rel.name!r} (first declared at $.relaciones[{seen[rel.name]}])"))
            seen.setdefault(rel.name, i)
            for field, key in (("domain", "dominio"), ("range", "rango")):
                for j, cname in enumerate(getattr(rel, field)):
                    if cname not in self.classes:
                        problems.append((("relaciones", i, key, j),
                                         f"relation {rel.name} names class {cname!r}, which is not declared in "
                                         f"'clases' (declared: {', '.join(self.classes)})"))
        for attr in self.relation_attributes:
            if attr in RESERVED_PROPERTIES or attr in {"symmetric"}:
                problems.append((("atributos_de_relacion", attr), f"attribute name {attr!r} is reserved"))
        if problems:
            raise ValueError(_PROBLEM_SEP.join(f"@{_json_path(loc)}@ {msg}" for loc, msg in problems))
        return self

    # ---------------------------------------------------------------- loading
    @classmethod
    def from_file(cls, path: str | Path) -> "Ontology":
        p = Path(path)
        if not p.is_file():
            raise OntologyError(
                f"{p}: ontology file not found. Pass a path with --ontology or set GRAPHRAG_ONTOLOGY.",
                path=str(p),
            )
        text = p.read_text(encoding="utf-8")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise OntologyError(
                f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}",
                problems=[(f"line {exc.lineno}, column {exc.colno}", exc.msg)],
                path=str(p),
            ) from None
        return cls.from_dict(data, source=str(p))

    @classmethod
    def from_dict(cls, data: Any, source: str = "<dict>") -> "Ontology":
        problems = file_schema_problems(data)
        if problems:
            raise _error(source, problems)
        try:
            canon = _canonical(data)
        except _Located as exc:
            raise _error(source, [(exc.path, exc.message)]) from None
        try:
            return cls(**canon, source=source, raw=data)
        except ValidationError as exc:
            raise _error(source, _pydantic_problems(exc, canon)) from None

    # ---------------------------------------------------------------- queries
    def relation(self, name: str) -> Relation | None:
        return self._relations_by_name.get(name)

    @cached_property
    def _relations_by_name(self) -> dict[str, Relation]:
        return {r.name: r for r in self.relations}

    @cached_property
    def hash(self) -> str:
        """sha256 of the file's canonical JSON: any edit (even a comment) changes it, since comments reach the prompt."""
        blob = json.dumps(self.raw or self.model_dump(exclude={"source", "raw"}), sort_keys=True,
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
            lines.append(f"- {cname}: {klass.comment}".rstrip(": "))
            for pname, spec in klass.properties.items():
                lines.append(f"    property {pname}: {spec.describe()}")
        lines.append("")
        lines.append("RELATIONS (subject type -> object type):")
        for rel in self.relations:
            sym = " [symmetric]" if rel.symmetric else ""
            lines.append(f"- {rel.name}: {' | '.join(rel.domain)} -> {' | '.join(rel.range)}{sym}. {rel.comment}".rstrip())
        if self.relation_attributes:
            lines.append("")
            lines.append("RELATION ATTRIBUTES:")
            for aname, spec in self.relation_attributes.items():
                lines.append(f"- {aname}: {spec.describe()}")
        return "\n".join(lines)


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
        return f"{shown} is not valid here: {'names must be identifiers (letters, digits, _; not starting with a digit)' if 'A-Za-z_' in str(err.validator_value) else 'see the spec syntax in the schema'}"
    if err.validator == "oneOf" and isinstance(inst, str):
        return f"cannot read property spec {shown}: write 'string' or 'enum: a | b | c', optionally followed by ', opcional' or ', requerido'"
    if err.validator == "oneOf":
        return f"{shown} does not match any allowed form ({err.message})"
    if err.validator == "additionalProperties":
        return err.message.replace("Additional properties are not allowed", "unknown key(s)")
    if err.validator == "anyOf" and err.validator_value and "required" in err.validator_value[0]:
        return "missing 'clases' (or 'classes'): an ontology needs at least one class"
    if err.validator == "propertyNames":
        return f"name {shown} is not a valid identifier (letters, digits, _; not starting with a digit)"
    return f"{err.message}"


def _alias_conflicts(data: Any) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    if not isinstance(data, dict):
        return out
    for en, es in _TOP_ALIASES.items():
        if en in data and es in data:
            out.append(("$", es, en))
    return out


# -------------------------------------------------------------------- canonical form
class _Located(Exception):
    def __init__(self, path: str, message: str):
        super().__init__(message)
        self.path = path
        self.message = message


_PROBLEM_SEP = "\x1e"  # separates several located problems inside one ValueError message


def _apply_aliases(data: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    return {aliases.get(k, k): v for k, v in data.items()}


def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _canonical(data: dict[str, Any]) -> dict[str, Any]:
    """Spanish/English keys -> the model's field names; property specs parsed."""
    top = _apply_aliases(data, _TOP_ALIASES)
    classes: dict[str, Any] = {}
    for cname, cdata in top.get("clases", {}).items():
        cdata = _apply_aliases(cdata, _CLASS_ALIASES)
        props = {}
        for pname, spec in cdata.get("propiedades", {}).items():
            props[pname] = _parse_spec(spec, ("clases", cname, "propiedades", pname))
        classes[cname] = {"name": cname, "comment": cdata.get("comment", ""), "properties": props}
    relations = []
    for i, rdata in enumerate(top.get("relaciones", [])):
        rdata = _apply_aliases(rdata, _REL_ALIASES)
        for key in ("nombre", "dominio", "rango"):
            if key not in rdata:
                raise _Located(_json_path(("relaciones", i)), f"relation is missing {key!r}")
        relations.append(
            {
                "name": rdata["nombre"],
                "domain": tuple(_as_list(rdata["dominio"])),
                "range": tuple(_as_list(rdata["rango"])),
                "symmetric": bool(rdata.get("simetrica", False)),
                "comment": rdata.get("comment", ""),
            }
        )
    attrs = {
        a: _parse_spec(s, ("atributos_de_relacion", a)) for a, s in top.get("atributos_de_relacion", {}).items()
    }
    return {
        "name": top.get("nombre", ""),
        "description": top.get("descripcion", ""),
        "classes": classes,
        "relations": relations,
        "relation_attributes": attrs,
    }


def _parse_spec(spec: Any, loc: tuple[Any, ...]) -> PropertySpec:
    try:
        return PropertySpec.parse(spec)
    except (ValueError, ValidationError) as exc:
        msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        raise _Located(_json_path(loc), f"{msg.removeprefix('Value error, ')} (value: {json.dumps(spec, ensure_ascii=False)})") from None


def _identifier_problems(name: str, loc: tuple[Any, ...], *, reserved: frozenset[str],
                         what: str) -> list[tuple[tuple[Any, ...], str]]:
    if not IDENTIFIER.match(name):
        return [(loc, f"{what} name {name!r} is not a valid identifier (it becomes a Neo4j "
                      f"{'label' if what == 'class' else 'relationship type'}): use letters, digits and _")]
    if name in reserved:
        return [(loc, f"{what} name {name!r} is reserved by the graph model; rename it")]
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
        elif IDENTIFIER.match(str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part), ensure_ascii=False)}]"
    return out


def _error(source: str, problems: list[tuple[str, str]]) -> OntologyError:
    lines = [f"{source}: {len(problems)} problem(s) in the ontology:"]
    lines += [f"  {path}: {msg}" for path, msg in problems]
    lines.append("Fix the file and run `graphrag-got ontology check` again.")
    return OntologyError("\n".join(lines), problems=problems, path=source)
