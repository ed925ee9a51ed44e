"""Reading extraction files for scoring: plain JSON, only the fields the scorer compares.

Accepted: format ``graphrag_got.extraction/1``, ``/2``, or no ``format`` key (hand-made files).
Read: entities' ``name``, ``type`` and optional ``aliases``; relations' ``subject``,
``subject_type``, ``relation``, ``object``, ``object_type``. Everything else is ignored, so a newer
file with more fields scores the same. Bad values raise ``ExtractionFileError`` with the file and
the JSON path.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphrag_got.errors import ExtractionFileError
from graphrag_got.common.normalize import normalize_name

SUPPORTED_FORMATS = ("graphrag_got.extraction/1", "graphrag_got.extraction/2")


@dataclass(frozen=True)
class EntityItem:
    name: str
    type: str
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class RelationItem:
    subject: str
    subject_type: str
    relation: str
    object: str
    object_type: str


@dataclass(frozen=True)
class ExtractionItems:
    """The fields of one extraction file that scoring uses."""

    entities: tuple[EntityItem, ...]
    relations: tuple[RelationItem, ...]


def read_extraction_file(path: str | Path) -> dict[str, Any]:
    """Load an extraction file as plain JSON, with a clear error for a missing or broken file."""
    p = Path(path)
    if not p.is_file():
        raise ExtractionFileError(f"{p}: file not found. Pass the path of an extraction.json file.")
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ExtractionFileError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
    except json.JSONDecodeError as exc:
        raise ExtractionFileError(
            f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}. Fix the file or regenerate it "
            "with `graphrag-got extract`.") from None
    if not isinstance(data, dict):
        raise ExtractionFileError(f"{p}: the top level must be a JSON object, not {type(data).__name__}.")
    return data


def parse_items(doc: Mapping[str, Any], source: str = "<dict>") -> ExtractionItems:
    """Read the scored fields of ``doc``; any other field is ignored.

    Raises :class:`ExtractionFileError` naming ``source`` and the JSON path of the first bad value.
    """
    if not isinstance(doc, Mapping):
        raise ExtractionFileError(f"{source}: an extraction must be a JSON object, not {type(doc).__name__}.")
    fmt = doc.get("format")
    if fmt is not None and fmt not in SUPPORTED_FORMATS:
        raise ExtractionFileError(
            f"{source}: $.format is {fmt!r}; this scorer reads {' and '.join(SUPPORTED_FORMATS)}. "
            "Regenerate the file with `graphrag-got extract` or update the scorer.")
    entities = tuple(
        EntityItem(name=_text(e, "name", source, f"$.entities[{i}]"),
                   type=_text(e, "type", source, f"$.entities[{i}]"),
                   aliases=_aliases(e, source, f"$.entities[{i}]"))
        for i, e in enumerate(_array(doc, "entities", source)))
    relations = tuple(
        RelationItem(**{k: _text(r, k, source, f"$.relations[{i}]")
                        for k in ("subject", "subject_type", "relation", "object", "object_type")})
        for i, r in enumerate(_array(doc, "relations", source)))
    return ExtractionItems(entities, relations)


def _array(doc: Mapping[str, Any], key: str, source: str) -> list[Any]:
    value = doc.get(key, [])
    if not isinstance(value, list):
        raise ExtractionFileError(f"{source}: $.{key} must be a list, not {type(value).__name__}.")
    return value


def _text(obj: Any, key: str, source: str, where: str) -> str:
    if not isinstance(obj, Mapping):
        raise ExtractionFileError(f"{source}: {where} must be an object, not {json.dumps(obj, ensure_ascii=False)}.")
    value = obj.get(key)
    if not isinstance(value, str) or not normalize_name(value):
        shown = "missing" if key not in obj else json.dumps(value, ensure_ascii=False)
        raise ExtractionFileError(
            f"{source}: {where}.{key} must be a string with visible characters, got {shown}.")
    return value


def _aliases(obj: Mapping[str, Any], source: str, where: str) -> tuple[str, ...]:
    value = obj.get("aliases")
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise ExtractionFileError(
            f"{source}: {where}.aliases must be a list of strings, got {json.dumps(value, ensure_ascii=False)}.")
    return tuple(a for a in value if normalize_name(a))
