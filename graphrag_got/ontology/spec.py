"""Parsing property specs: the text a user writes for a class property or a relation attribute.

A spec is either a string (``"string, obligatorio"``, ``"string opcional, ej. 'A', 'B'"``,
``"enum: a | b | c, requerido"``) or an object (``{"tipo": "enum", "valores": [...],
"obligatorio": true}``). :func:`spec_fields` reads either form into the fields of
:class:`graphrag_got.ontology.model.PropertySpec`, raising ``ValueError`` with a message that says
what is wrong in the spec text.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal

from graphrag_got.ontology.keys import SPEC_ALIASES, apply_aliases, given_twice

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


def spec_fields(spec: Any, *, relation_attribute: bool = False) -> dict[str, Any]:
    """The ``PropertySpec`` fields a spec string or object gives (see ``PropertySpec.parse``).

    ``relation_attribute`` selects the defaults and keys of relation attributes: ``identity``
    defaults to true there, and the ``identidad``/``identity`` key is refused elsewhere.
    """
    if isinstance(spec, dict):
        return _object_fields(spec, relation_attribute=relation_attribute)
    if not isinstance(spec, str):
        raise ValueError(f"a property spec is a string or an object, not {type(spec).__name__}")
    kind, values, required, hint = _parse_spec_text(spec)
    return {"kind": kind, "values": values, "required": required, "hint": hint, "identity": relation_attribute}


def _object_fields(spec: dict[str, Any], *, relation_attribute: bool) -> dict[str, Any]:
    conflicts = given_twice(spec, SPEC_ALIASES)
    if conflicts:
        raise ValueError("; ".join(f"both {a!r} and its alias {b!r} are given; keep one" for a, b in conflicts))
    data = apply_aliases(spec, SPEC_ALIASES)
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
    return {"kind": kind, "values": values, "required": data.get("obligatorio", False), "comment": comment,
            "identity": data.get("identidad", relation_attribute)}


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
