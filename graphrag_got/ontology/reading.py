"""Reading an ontology file: its text, and its JSON with every duplicate key reported.

The first passes of loading an ontology (see :mod:`graphrag_got.ontology.model`): the file must be
UTF-8 text (a BOM is accepted), not a folder or a binary file; then JSON syntax (line and column
from the decoder), nesting depth, and duplicate keys with their line (the standard decoder silently
keeps the last value, which would drop half an ontology).
"""

from __future__ import annotations

import json
import json.decoder
import json.scanner
import os
import stat
from pathlib import Path
from typing import Any

from graphrag_got.common.sanitize import cap_text
from graphrag_got.errors import OntologyError, format_problems
from graphrag_got.ontology.model import json_path


def read_ontology_json(path: Path) -> Any:
    """The JSON data of an ontology file, or one located :class:`OntologyError`."""
    return _load_json(path, _read_text(path))


#: What a path that is not a regular file is, by its ``stat`` mode.
_KINDS = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _not_found(p: Path) -> OntologyError:
    link = f" (a link to {os.readlink(p)}, which does not exist)" if p.is_symlink() else ""
    return OntologyError(f"{p}: ontology file not found{link}. Pass a path with --ontology or set GRAPHRAG_ONTOLOGY.",
                         path=str(p))


def _read_text(p: Path) -> str:
    """The file's text, or one clear :class:`OntologyError` (folder, missing, not a regular file,
    unreadable, binary, not UTF-8).

    The file is opened without blocking and judged by what was opened (``fstat``), so a FIFO, a
    device such as ``/dev/zero`` or a link to one is refused at once, never read (a FIFO with no
    writer would block forever, ``/dev/zero`` never ends), even if the path changes under us.
    """
    if p.is_dir():
        raise OntologyError(f"{p}: is a folder, not an ontology file. Pass the JSON file itself "
                            "(e.g. ontology/got.json) with --ontology or GRAPHRAG_ONTOLOGY.", path=str(p))
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise _not_found(p) from None
    except OSError as exc:
        raise OntologyError(f"{p}: cannot read the ontology file: {exc.strerror or exc}", path=str(p)) from None
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a file")
            link = f" (through a link to {os.path.realpath(p)})" if p.is_symlink() else ""
            raise OntologyError(f"{p}: not a regular file: it is {kind}{link}. An ontology is a JSON file; pass "
                                "the file itself with --ontology or GRAPHRAG_ONTOLOGY.",
                                problems=[("file", f"not a regular file ({kind})")], path=str(p))
        try:
            blob = handle.read()
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


class HugeInt(str):
    """An integer literal too long for Python's ``int`` (over ``sys.get_int_max_str_digits()``
    digits), kept as its text so the load can say where it is instead of failing mid-parse."""


def _parse_int(text: str) -> int | HugeInt:
    try:
        return int(text)
    except ValueError:
        return HugeInt(text)


class _DuplicateKeyDecoder(json.JSONDecoder):
    """A JSON decoder that records duplicate keys with the line of each repeat.

    It uses the pure-Python scanner so each object's text span is known; ontology files are small.
    """

    def __init__(self) -> None:
        super().__init__(object_pairs_hook=self._pairs, parse_int=_parse_int)
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
    huge = [(loc, value) for loc, value in _leaves(data) if isinstance(value, HugeInt)]
    if huge:
        raise ontology_error(str(p), [
            (json_path(loc), f"an integer of {len(value.lstrip('-')):,} digits at {_position(text, text.find(value))}: "
                             "no value of an ontology is a number this long; write the value this key takes")
            for loc, value in huge])
    if decoder.duplicates:
        paths = _object_paths(data, decoder.dropped)
        problems = []
        for obj, found in decoder.duplicates:
            base = paths.get(id(obj), ())
            for key, where, first in found:
                problems.append((json_path((*base, key)), f"duplicate key {key!r} at {where} (first at {first}): "
                                                           "JSON keeps only the last one; keep one of them"))
        raise ontology_error(str(p), problems)
    return data


def _leaves(data: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """(location, value) of every value in ``data`` that is not an object or an array (iterative)."""
    out: list[tuple[tuple[Any, ...], Any]] = []
    stack: list[tuple[Any, tuple[Any, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        if isinstance(node, dict):
            stack += [(v, (*loc, k)) for k, v in node.items()]
        elif isinstance(node, list):
            stack += [(v, (*loc, i)) for i, v in enumerate(node)]
        else:
            out.append((loc, node))
    return out


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


def ontology_error(source: str, problems: list[tuple[str, str]]) -> OntologyError:
    """The error listing every located problem of an ontology, with the command that checks it again."""
    shown = [(cap_text(path, 200), cap_text(msg)) for path, msg in problems]  # never a 4 MB line
    message = format_problems(source, f"{len(problems)} problem(s) in the ontology", shown,
                              "Fix the file and run `graphrag-got ontology check` again.", limit=len(problems))
    return OntologyError(message, problems=problems, path=source)
