"""The alias file beside the ontology (``<ontology stem>.aliases.json``): names the user pins together
(``aliases``) or keeps apart (``distinct``) within a class, read and checked with every problem
located. Entity resolution (:mod:`graphrag_got.extract.resolve`) applies it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, StrictStr, ValidationError

from graphrag_got.errors import OntologyError, format_problems
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.validate import NAME_MAX

from graphrag_got.extract.names import pairs

ALIAS_FILE_SUFFIX = ".aliases.json"


class AliasFileError(OntologyError):
    """The alias file next to the ontology is unreadable or breaks a rule (path and JSON path given)."""


# ---------------------------------------------------------------------------------------------
# The alias file
# ---------------------------------------------------------------------------------------------


class _AliasFileShape(BaseModel):
    model_config = ConfigDict(extra="forbid")

    aliases: dict[str, dict[str, list[StrictStr]]] = {}
    distinct: dict[str, list[list[StrictStr]]] = {}


@dataclass(frozen=True)
class AliasFile:
    """User decisions about entity names, per class.

    ``aliases``: class -> canonical name -> other names of the same entity (always merged, the
    canonical name becomes the display name). ``distinct``: class -> groups of names that are
    different entities (never merged, by any rule). File form::

        {"aliases": {"NobleHouse": {"House Ashford": ["Ashford", "the Ashfords"]}},
         "distinct": {"Person": [["Ann Smith", "Ann Smithe"]]}}
    """

    path: str = ""
    aliases: Mapping[str, Mapping[str, tuple[str, ...]]] = field(default_factory=dict)
    distinct: Mapping[str, tuple[tuple[str, ...], ...]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: str | Path, ontology: Ontology) -> "AliasFile":
        """Parse and check an alias file against ``ontology``; raises :class:`AliasFileError`."""
        p = Path(path)
        if not p.is_file():
            raise AliasFileError(f"{p}: alias file not found (or not a file).", path=str(p))
        try:
            text = p.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise AliasFileError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start}).", path=str(p)) from None
        except OSError as exc:
            raise AliasFileError(f"{p}: cannot be read ({exc.strerror}).", path=str(p)) from None
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise AliasFileError(f"{p}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}. Fix the file, "
                                 "then run `graphrag-got extract --revalidate`.", path=str(p)) from None
        except _DuplicateKey as exc:
            raise _error(str(p), [("$", str(exc))]) from None
        except RecursionError:
            raise AliasFileError(f"{p}: JSON nested too deeply to be an alias file.", path=str(p)) from None
        return cls.from_data(data, ontology, str(p))

    @classmethod
    def from_data(cls, data: Any, ontology: Ontology, source: str = "<aliases>") -> "AliasFile":
        if not isinstance(data, dict):
            raise _error(source, [("$", f"expected a JSON object with 'aliases' and/or 'distinct', "
                                        f"got {type(data).__name__}")])
        try:
            shape = _AliasFileShape.model_validate(data)
        except ValidationError as exc:
            raise _error(source, _shape_problems(exc)) from None
        problems: list[tuple[str, str]] = []
        classes = list(ontology.classes)
        aliases: dict[str, dict[str, tuple[str, ...]]] = {}
        distinct: dict[str, tuple[tuple[str, ...], ...]] = {}
        for cname, pins in shape.aliases.items():
            where = f"$.aliases.{cname}"
            if cname not in ontology.classes:
                problems.append((where, f"{cname!r} is not a class of the ontology ({', '.join(classes)})"))
                continue
            owner: dict[str, tuple[str, str]] = {}  # normalized name -> (canonical, JSON path)
            aliases[cname] = {}
            for canonical, others in pins.items():
                names = [canonical, *others]
                paths = [f"{where}.{canonical}", *(f"{where}.{canonical}[{i}]" for i in range(len(others)))]
                for name, path in zip(names, paths):
                    problem = _name_problem(name)
                    if problem:
                        problems.append((path, problem))
                        continue
                    key = normalize_name(name)
                    seen = owner.get(key)
                    if seen is not None and seen[0] != canonical:
                        problems.append((path, f"{name!r} is already an alias of {seen[0]!r} ({seen[1]}); "
                                               "a name belongs to one entity"))
                    owner.setdefault(key, (canonical, path))
                aliases[cname][canonical.strip()] = tuple(o.strip() for o in others)
        for cname, groups in shape.distinct.items():
            where = f"$.distinct.{cname}"
            if cname not in ontology.classes:
                problems.append((where, f"{cname!r} is not a class of the ontology ({', '.join(classes)})"))
                continue
            kept: list[tuple[str, ...]] = []
            for i, group in enumerate(groups):
                path = f"{where}[{i}]"
                bad = [(f"{path}[{j}]", p) for j, n in enumerate(group) if (p := _name_problem(n))]
                problems += bad
                keys = [normalize_name(n) for n in group]
                if len(group) < 2:
                    problems.append((path, "a distinct group lists at least two names"))
                elif len(set(keys)) < len(keys):
                    problems.append((path, "a name is repeated (names are compared normalized: case and "
                                           "accents ignored)"))
                elif not bad:
                    for a, b in pairs(keys):
                        ca = _pinned_canonical(aliases.get(cname, {}), a)
                        if ca is not None and ca == _pinned_canonical(aliases.get(cname, {}), b):
                            problems.append((path, f"{group[keys.index(a)]!r} and {group[keys.index(b)]!r} "
                                                   f"are both pinned as aliases of {ca!r} under $.aliases.{cname}"))
                    kept.append(tuple(n.strip() for n in group))
            distinct[cname] = tuple(kept)
        if problems:
            raise _error(source, problems)
        return cls(path=source, aliases=aliases, distinct=distinct)

    def pinned(self, class_name: str) -> dict[str, tuple[str, ...]]:
        """Canonical name -> its other names, for one class."""
        return dict(self.aliases.get(class_name, {}))

    def distinct_pairs(self, class_name: str) -> set[frozenset[str]]:
        """Pairs of normalized names of one class that must stay apart."""
        return {frozenset(p) for group in self.distinct.get(class_name, ())
                for p in pairs([normalize_name(n) for n in group])}


class _DuplicateKey(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(f"the key {k!r} appears twice in one object (the second would silently win)")
        out[k] = v
    return out


def _pinned_canonical(pins: Mapping[str, tuple[str, ...]], key: str) -> str | None:
    for canonical, others in pins.items():
        if key in {normalize_name(n) for n in (canonical, *others)}:
            return canonical
    return None


def _name_problem(name: str) -> str | None:
    if not normalize_name(name):
        return f"{name!r} is empty once normalized (no letters or digits)"
    if len(name.strip()) > NAME_MAX:
        return f"a name is {len(name.strip())} characters long (max {NAME_MAX})"
    return None


def _shape_problems(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        path = "$"
        for part in err["loc"]:
            path += f"[{part}]" if isinstance(part, int) else f".{part}"
        if err["type"] == "extra_forbidden":
            problems.append((path, "unknown key (the file has 'aliases' and 'distinct')"))
            continue
        expected = {"dict_type": "an object", "list_type": "a list", "string_type": "a string"}.get(err["type"])
        got = type(err.get("input")).__name__
        problems.append((path, f"expected {expected}, got {got}" if expected else err["msg"]))
    return problems


def _error(source: str, problems: list[tuple[str, str]]) -> AliasFileError:
    advice = ('Expected {"aliases": {"<Class>": {"<name>": ["<other name>", ...]}}, '
              '"distinct": {"<Class>": [["<name>", "<name>"], ...]}}; fix it, then run '
              "`graphrag-got extract --revalidate`.")
    return AliasFileError(format_problems(source, f"{len(problems)} problem(s) in the alias file", problems, advice,
                                          limit=20), problems=problems, path=source)


def alias_file_path(ontology: Ontology) -> Path | None:
    """``<ontology stem>.aliases.json`` beside the ontology file (None for an ontology not read from a file)."""
    source = Path(ontology.source)
    if ontology.source.startswith("<") or not source.name:
        return None
    return source.with_name(source.stem + ALIAS_FILE_SUFFIX)


def load_alias_file(ontology: Ontology, aliases: "AliasFile | str | Path | None") -> AliasFile:
    if isinstance(aliases, AliasFile):
        return aliases
    if aliases is not None:
        return AliasFile.read(aliases, ontology)
    path = alias_file_path(ontology)
    if path is None or not path.exists():
        return AliasFile()
    return AliasFile.read(path, ontology)


