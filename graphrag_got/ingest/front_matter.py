"""YAML front matter of a Markdown note: read safely, made JSON-friendly, errors located.

Front matter is the YAML between a leading ``---`` line and the next ``---`` or ``...`` line. It
becomes ``Document.metadata``. YAML that cannot be read at all (syntax error, no closing line, not a
mapping) is a :class:`CorpusError` (reason ``front_matter``) naming the file and line; values JSON
cannot hold are made JSON-friendly with a logged warning (see :func:`_json_safe`).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
from typing import Any, Protocol, Sequence

import yaml

from graphrag_got.common.sanitize import replace_surrogates
from graphrag_got.errors import CorpusError

_log = logging.getLogger(__name__)


class _LineLike(Protocol):
    text: str


# --------------------------------------------------------------------------------------------


class _Unsupported:
    """A YAML value under a tag safe loading does not know (``!!python/object``, ``!local``...)."""

    def __init__(self, tag: str):
        self.tag = tag


class _FrontMatterLoader(yaml.SafeLoader):
    """``yaml.safe_load`` semantics, except that an unknown tag yields an :class:`_Unsupported`
    marker (dropped later with a warning) instead of failing the whole document."""


class _FastFrontMatterLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same on libyaml's parser, where PyYAML has it: several times faster on a vault's notes (front
    matter was a tenth of a daily update's extract step). libyaml refuses some text the pure-Python
    parser reads (a lone surrogate escape), so a refusal is read again with :class:`_FrontMatterLoader`,
    whose answer, or error, is the one given."""


for _loader in (_FrontMatterLoader, _FastFrontMatterLoader):
    _loader.add_constructor(None, lambda loader, node: _Unsupported(node.tag))  # type: ignore[no-untyped-call]

_MAX_METADATA_DEPTH = 16
_MAX_METADATA_VALUES = 10_000  # aliases can make a tiny YAML text expand to billions of values


class _TooManyValues(Exception):
    pass


_DROP = object()  # what _json_safe returns for a value it leaves out


def _json_safe(value: Any, name: str, where: str = "", depth: int = 0,
               budget: list[int] | None = None) -> Any:
    """A YAML value made something JSON (extraction.json) and Neo4j can store, or ``_DROP``.

    Dates become ISO strings, sets sorted lists, tuples lists, non-string keys strings, lone
    surrogates (from ``"\\ud83d"`` escapes) U+FFFD; bytes, unknown tags, NaN/infinity and values
    nested deeper than ``_MAX_METADATA_DEPTH`` are dropped with a logged warning.
    """
    budget = budget if budget is not None else [_MAX_METADATA_VALUES]
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooManyValues
    shown = where or "(top level)"
    if isinstance(value, str):
        return replace_surrogates(value)
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        _log.warning("%s: front matter %s: %r is not a JSON number; dropped", name, shown, value)
        return _DROP
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth >= _MAX_METADATA_DEPTH:
            _log.warning("%s: front matter %s: nested more than %d levels; dropped", name, shown,
                         _MAX_METADATA_DEPTH)
            return _DROP
        if isinstance(value, dict):
            out: dict[str, Any] = {}
            for k, v in value.items():
                if isinstance(k, _Unsupported) or isinstance(k, (bytes, tuple, frozenset)):
                    _log.warning("%s: front matter %s: a key of type %s is not supported; entry dropped",
                                 name, shown, type(k).__name__ if not isinstance(k, _Unsupported) else k.tag)
                    continue
                key = replace_surrogates(k.isoformat() if isinstance(k, (_dt.date, _dt.datetime)) else str(k))
                item = _json_safe(v, name, f"{where}.{key}" if where else key, depth + 1, budget)
                if item is not _DROP:
                    out[key] = item
            return out
        items = [_json_safe(v, name, f"{where}[{i}]", depth + 1, budget) for i, v in enumerate(value)]
        items = [v for v in items if v is not _DROP]
        if isinstance(value, (set, frozenset)):
            try:
                items.sort()
            except TypeError:  # mixed types: any stable order will do
                items.sort(key=lambda v: (type(v).__name__, json.dumps(v, sort_keys=True)))
        return items
    what = value.tag if isinstance(value, _Unsupported) else type(value).__name__
    _log.warning("%s: front matter %s: a value of type %s cannot be stored; dropped", name, shown, what)
    return _DROP


def front_matter(lines: Sequence[_LineLike], name: str) -> tuple[dict, int]:
    """(metadata, index of the first body line). No front matter: ({}, 0)."""
    if not lines or lines[0].text.lstrip("\ufeff").rstrip() != "---":
        return {}, 0
    for i in range(1, len(lines)):
        if lines[i].text.rstrip() in ("---", "..."):
            break
    else:
        raise CorpusError(
            f"{name}, line 1: the YAML front matter opened by '---' is never closed; "
            "add a '---' line after it, or remove the opening line", "front_matter"
        )
    source = "\n".join(line.text for line in lines[1:i])
    try:
        try:
            data = yaml.load(source, Loader=_FastFrontMatterLoader)  # noqa: S506 (a SafeLoader subclass)
        except yaml.YAMLError:
            data = yaml.load(source, Loader=_FrontMatterLoader)  # noqa: S506 (a SafeLoader subclass)
    except RecursionError:
        raise CorpusError(f"{name}, line 2: the YAML front matter is nested too deeply to read; "
                          "simplify it", "front_matter") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line_no = mark.line + 2 if mark is not None else 2  # YAML starts on file line 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorpusError(
            f"{name}, line {line_no}: malformed YAML front matter ({problem}); fix the YAML "
            "between the '---' lines", "front_matter"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CorpusError(
            f"{name}, line 2: the YAML front matter must be a mapping (key: value lines), "
            f"got {data.tag if isinstance(data, _Unsupported) else type(data).__name__}", "front_matter"
        )
    try:
        metadata = _json_safe(data, name)
    except _TooManyValues:
        _log.warning("%s: the YAML front matter expands to more than %d values (aliases?); "
                     "metadata ignored", name, _MAX_METADATA_VALUES)
        metadata = {}
    return metadata, i + 1
