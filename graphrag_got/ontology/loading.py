"""From JSON data to a validated :class:`Ontology`, and the one way to get the ontology a step uses.

:func:`build_ontology` (behind :meth:`Ontology.from_dict`) checks the data against the file schema
``ontology.schema.json`` with ``jsonschema`` (shape, identifiers, keys) and for Spanish/English key
pairs given twice, turns aliased keys into the model's field names, parses the property specs, and
builds the model, whose validator runs the semantic checks; every problem found on the way is
reported together, each with its JSON path. :func:`load_ontology` turns what callers accept (an
ontology, a path, or nothing: the configured file) into an :class:`Ontology`.
"""

from __future__ import annotations

import json
import os
import re
from importlib import resources
from typing import TYPE_CHECKING, Any

import jsonschema
from pydantic import ValidationError

from graphrag_got.common.sanitize import cap_text
from graphrag_got.errors import OntologyError
from graphrag_got.ontology.keys import (
    CLASS_ALIASES,
    EXAMPLE_ALIASES,
    EXAMPLE_ENTITY_ALIASES,
    EXAMPLE_RELATION_ALIASES,
    REL_ALIASES,
    TOP_ALIASES,
    alias_conflicts,
    apply_aliases,
)
from graphrag_got.ontology.checks import NO_RELATION
from graphrag_got.ontology.model import PROBLEM_SEP, Ontology, PropertySpec, json_path, shown_value
from graphrag_got.ontology.reading import ontology_error

if TYPE_CHECKING:
    from graphrag_got.config import FilesSettings


def load_ontology(ontology: Ontology | str | os.PathLike[str] | None = None,
                  files: FilesSettings | None = None) -> Ontology:
    """The ontology a step works with: ``ontology`` itself when it is one, else the file it names,
    else (None or an empty path) the configured file ``files.ontology_path``."""
    if ontology is not None and not isinstance(ontology, (str, os.PathLike)):
        return ontology
    path = ontology if ontology or files is None else files.ontology_path
    if path is None:
        raise OntologyError("no ontology given: pass an ontology, a path to its file, or the files settings")
    return Ontology.from_file(path)


def build_ontology(cls: type[Ontology], data: Any, source: str = "<dict>") -> Ontology:
    """An ontology of class ``cls`` from a file's JSON data, or one :class:`OntologyError` listing every
    problem (file schema, property specs, semantic checks) with its JSON path."""
    try:
        problems = file_schema_problems(data)
        if problems:
            raise ontology_error(source, problems)
        canon, problems = _canonical(data)
        onto: Ontology | None = None
        try:
            onto = cls(**canon, source=source, raw=data)
        except ValidationError as exc:  # reported together with the spec problems, if any
            found = _pydantic_problems(exc, canon)
            if len(canon["relations"]) < len(apply_aliases(data, TOP_ALIASES).get("relaciones") or ()):
                # relations were declared but refused above (a missing name): "none" would be untrue
                found = [p for p in found if p[1] != NO_RELATION]
            problems += found
        if problems or onto is None:
            raise ontology_error(source, problems or [("$", "invalid ontology")])
        return onto
    except RecursionError:
        raise OntologyError(f"{source}: the ontology is nested too deeply (an ontology is a few levels deep); "
                            "check the file's brackets", problems=[("$", "nested too deeply")],
                            path=source) from None


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
        problems.append((json_path(loc), _schema_message(err)))
    for loc, key_a, key_b in alias_conflicts(data):
        problems.append((json_path(loc), f"both {key_a!r} and its alias {key_b!r} are given; keep one"))
    return problems


def _schema_message(err: jsonschema.ValidationError) -> str:
    """The problem in the user's terms, echoing at most a few hundred characters of the value."""
    return cap_text(_schema_message_text(err))


def _schema_message_text(err: jsonschema.ValidationError) -> str:
    inst = err.instance
    shown = shown_value(inst, 120)
    if err.validator == "type":  # jsonschema's own message quotes the whole value (a 4 MB file)
        expected = err.validator_value if isinstance(err.validator_value, str) else " or ".join(err.validator_value)
        article = "an" if str(expected)[:1] in "aeiou" else "a"
        where = "the top level of an ontology" if not err.absolute_path else "this value"
        what = ("an object ({...})" if isinstance(inst, dict) else f"an array of {len(inst)} item(s)"
                if isinstance(inst, list) else shown)
        return f"{where} must be {article} {expected}, got {what}"
    if err.validator == "pattern":
        return f"{shown} is not valid here: names must be identifiers (letters, digits, _; not starting with a digit)"
    if err.validator == "oneOf" and isinstance(inst, str):  # a class reference (dominio/rango)
        return f"{shown} is not valid here: class names must be identifiers (letters, digits, _; not starting " \
               "with a digit)"
    if err.validator == "oneOf":  # the only oneOf of the schema: a class reference (dominio/rango)
        return f"{shown} is not valid here: write a class name or a list of class names"
    if err.validator == "additionalProperties" and isinstance(inst, dict):
        known = set(err.schema.get("properties", {})) if isinstance(err.schema, dict) else set()
        unknown = [k for k in inst if k not in known]
        return (f"unknown key(s): {', '.join(shown_value(k, 80) for k in unknown[:10])}"
                + (f" and {len(unknown) - 10} more" if len(unknown) > 10 else "")
                + (f" (allowed: {', '.join(sorted(known))})" if known else ""))
    if err.validator == "anyOf" and err.validator_value and "required" in err.validator_value[0]:
        if err.validator_value[0]["required"] == ["relaciones"]:
            return "missing 'relaciones' (or 'relations'): " + NO_RELATION
        if err.validator_value[0]["required"] == ["clases"]:
            return "missing 'clases' (or 'classes'): an ontology needs at least one class"
        keys = [k for alt in err.validator_value if isinstance(alt, dict) for k in alt.get("required", ())]
        return "missing " + " (or ".join(repr(k) for k in keys) + ")" * (len(keys) - 1)
    if err.validator == "minItems" and err.absolute_path and err.absolute_path[-1] in {"relaciones", "relations"}:
        return NO_RELATION
    if err.validator == "minProperties" and err.absolute_path and err.absolute_path[-1] in {"clases", "classes"}:
        return "an ontology needs at least one class: add one under 'clases'"
    if err.validator == "propertyNames":
        return f"name {shown} is not a valid identifier (letters, digits, _; not starting with a digit)"
    if err.validator == "required":
        missing = [k for k in err.validator_value if isinstance(inst, dict) and k not in inst]
        return f"missing key(s): {', '.join(shown_value(k) for k in missing) or shown_value(err.validator_value)}"
    if err.validator in ("minLength", "minItems", "minProperties") and not inst:
        return "must not be empty"
    if err.validator == "maxLength":
        return f"is longer than {err.validator_value} characters"
    # anything else: jsonschema's words, with the value written as JSON (never a Python repr)
    try:
        text = err.message.replace(repr(inst), shown)
    except ValueError:  # repr of an integer too long to print
        text = err.message
    return text


# -------------------------------------------------------------------- canonical form
def _as_list(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _canonical(data: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Spanish/English keys -> the model's field names; property specs parsed; problems collected."""
    problems: list[tuple[str, str]] = []
    top = apply_aliases(data, TOP_ALIASES)
    classes: dict[str, Any] = {}
    for cname, cdata in top.get("clases", {}).items():
        cdata = apply_aliases(cdata, CLASS_ALIASES)
        props = {}
        for pname, spec in cdata.get("propiedades", {}).items():
            parsed = _parse_spec(spec, ("clases", cname, "propiedades", pname), False, problems)
            if parsed is not None:
                props[pname] = parsed
        classes[cname] = {"name": cname, "comment": cdata.get("comment", ""), "properties": props,
                          "parents": tuple(_as_list(cdata.get("subclase_de", ())))}
    relations = []
    for i, rdata in enumerate(top.get("relaciones", [])):
        rdata = apply_aliases(rdata, REL_ALIASES)
        missing = [key for key in ("nombre", "dominio", "rango") if key not in rdata]
        if missing:
            problems.append((json_path(("relaciones", i)), f"relation is missing {', '.join(map(repr, missing))}"))
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
    ex = apply_aliases(data, EXAMPLE_ALIASES)
    entities = []
    for edata in ex.get("entidades", []):
        e = apply_aliases(edata, EXAMPLE_ENTITY_ALIASES)
        entities.append({"class_name": e.get("clase", ""), "name": e.get("nombre", ""),
                         "properties": e.get("propiedades", {})})
    relations = []
    for rdata in ex.get("relaciones", []):
        r = apply_aliases(rdata, EXAMPLE_RELATION_ALIASES)
        relations.append({"relation": r.get("relacion", ""), "subject": r.get("sujeto", ""),
                          "object": r.get("objeto", ""), "attributes": r.get("atributos", {})})
    return {"text": ex.get("texto", ""), "entities": entities, "relations": relations}


def _parse_spec(spec: Any, loc: tuple[Any, ...], relation_attribute: bool,
                problems: list[tuple[str, str]]) -> PropertySpec | None:
    try:
        return PropertySpec.parse(spec, relation_attribute=relation_attribute)
    except (ValueError, ValidationError) as exc:
        msg = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        problems.append((json_path(loc),
                         f"{msg.removeprefix('Value error, ')} (value: {json.dumps(spec, ensure_ascii=False)})"))
        return None


def _pydantic_problems(exc: ValidationError, canon: dict[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        msg = err["msg"].removeprefix("Value error, ")
        if msg.startswith("@"):
            for part in msg.split(PROBLEM_SEP):
                m = re.match(r"^@(.*?)@ (.*)$", part, re.DOTALL)
                if m:
                    problems.append((m.group(1), m.group(2)))
        else:
            problems.append((json_path(tuple(err["loc"])), f"{msg} (value: {shown_value(err.get('input'))})"))
    return problems

