"""Convert a Text2KGBench ontology file into our ontology JSON format.

Text2KGBench (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023 resource track; data licensed
CC BY-SA 4.0) ships one JSON file per ontology::

    {"title": ..., "id": ..., "concepts": [{"qid", "label"}],
     "relations": [{"pid", "label", "domain", "range"}]}

``domain`` and ``range`` name a concept (by label in DBpedia-WebNLG, by qid in Wikidata-TekGen), a
datatype (``string``, ``number``, ``Date``, ``Year`` ...), or are empty.

Choices made here (the output must be a valid graphrag_got ontology *and* let the benchmark's
``(subject, relation, object)`` triples be scored):

* **Relations** become UPPER_SNAKE relationship types: camelCase and spaces are split into words
  (``birthDate`` / ``birth date`` -> ``BIRTH_DATE``, ``isPartOf`` -> ``IS_PART_OF``). The original
  label is kept in the relation's ``comment`` (``original label: "birthDate"``) and in the returned
  label map, so a triple written with our type can be turned back into the benchmark's label.
* **Classes** become PascalCase identifiers (``ethnic group`` -> ``EthnicGroup``).
* **Literal-valued relations** (range is a datatype) are modelled as relations to a *literal node
  class* per datatype: ``LiteralDate``, ``LiteralNumber``, ``LiteralString``, ``LiteralYear`` ...
  (datatype names compared case-insensitively, so ``date`` and ``Date`` share one class). We chose
  nodes over properties because the benchmark scores every fact as a triple: with literal nodes an
  extraction of ``(AWH_Engineering_College, established, 2001)`` is one relation of our graph, goes
  through the same validation (domain/range, rejection records) as entity relations, and maps back to
  the benchmark triple one to one. Properties would split the facts into two code paths and need a
  separate property-to-triple conversion for scoring.
* **Undeclared domains/ranges**: a name that is neither a declared concept nor a datatype (the
  DBpedia-WebNLG files have a few, e.g. ``Organisation`` or ``writer``) becomes an extra class whose
  comment says where it came from, unless it differs from a declared concept only in case or spacing
  (``ethnicGroup`` -> the concept ``EthnicGroup``). An **empty** domain or range means "not specified": the relation
  accepts every class of the ontology there.
* **Reserved names** (classes Entity, Document, Chunk, Community; relations HAS_CHUNK, MENTIONS,
  IN_COMMUNITY) get a suffix (``DocumentConcept``, ``MENTIONS_REL``); a name that would start with a
  digit gets a prefix (``Class1stRunwaySurfaceType``, ``REL_1ST_RUNWAY_NUMBER``); two labels that
  collapse to the same identifier are told apart with ``_2``, ``_3`` (``2``, ``3`` for classes).
* The benchmark has no symmetry information, so every relation has ``simetrica: false``; no
  properties, so every class has ``propiedades: {}``; and no relation attributes, so the ontology
  declares none (no ``atributos_de_relacion`` key), and the extraction schema offers no attribute
  field.

The label map returned with the ontology is ``{"relations": {label: TYPE}, "classes": {label: Class},
"datatypes": {datatype: LiteralClass}}``; every key is the benchmark's original spelling.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from graphrag_got.errors import OntologyError
from graphrag_got.common.files import write_json_atomic

RESERVED_CLASSES = frozenset({"Entity", "Document", "Chunk", "Community", "Term"})
RESERVED_RELATIONS = frozenset({"HAS_CHUNK", "MENTIONS", "IN_COMMUNITY"})

# Datatype names seen as ranges in Text2KGBench (and common XSD ones), lower case, without "xsd:".
DATATYPES = frozenset({
    "string", "langstring", "text", "number", "integer", "int", "nonnegativeinteger",
    "positiveinteger", "float", "double", "decimal", "quantity", "date", "datetime", "time",
    "year", "gyear", "gyearmonth", "boolean", "url", "anyuri",
})

LITERAL_PREFIX = "Literal"
ATTRIBUTION = (
    "Imported from Text2KGBench (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023), "
    "licensed CC BY-SA 4.0."
)


def _ascii_words(text: str) -> list[str]:
    """Split a label into words: spaces/punctuation, camelCase and acronym boundaries."""
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)       # birthDate -> birth Date
    text = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1 \2", text)    # ISBNNumber -> ISBN Number
    return [w for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def relation_identifier(label: str) -> str:
    """UPPER_SNAKE relationship type for a relation label (no uniqueness or reserved-name handling)."""
    words = _ascii_words(label)
    if not words:
        raise ValueError(f"relation label {label!r} has no letters or digits")
    name = "_".join(w.upper() for w in words)
    return f"REL_{name}" if name[0].isdigit() else name


def class_identifier(label: str) -> str:
    """PascalCase class name for a concept label (no uniqueness or reserved-name handling)."""
    words = _ascii_words(label)
    if not words:
        raise ValueError(f"class label {label!r} has no letters or digits")
    # Keep inner capitals (EthnicGroup stays EthnicGroup); only the first letter is raised.
    name = "".join(w[0].upper() + w[1:] for w in words)
    return f"Class{name}" if name[0].isdigit() else name


def _is_datatype(name: str) -> bool:
    return name.strip().lower().removeprefix("xsd:") in DATATYPES


def _literal_class(datatype: str) -> str:
    base = datatype.strip().removeprefix("xsd:")
    return LITERAL_PREFIX + class_identifier(base[:1].upper() + base[1:])


def _unique(name: str, taken: set[str], sep: str) -> str:
    if name not in taken:
        return name
    n = 2
    while f"{name}{sep}{n}" in taken:
        n += 1
    return f"{name}{sep}{n}"


def _load(path: Path) -> dict[str, Any]:
    if not path.is_file():
        raise OntologyError(f"Text2KGBench ontology file not found: {path}. Check the path.", path=str(path))
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OntologyError(f"{path} is not valid JSON ({exc}); expected a Text2KGBench ontology file.",
                            path=str(path)) from exc
    problems: list[tuple[str, str]] = []
    if not isinstance(data, dict):
        problems.append(("$", "expected a JSON object with 'concepts' and 'relations'"))
    else:
        for key in ("concepts", "relations"):
            if not isinstance(data.get(key), list):
                problems.append((f"$.{key}", "missing or not a list"))
        for i, c in enumerate(data.get("concepts") or []):
            if not isinstance(c, dict) or not isinstance(c.get("label", c.get("qid")), str):
                problems.append((f"$.concepts[{i}]", "expected an object with a string 'label' (or 'qid')"))
        for i, r in enumerate(data.get("relations") or []):
            label = r.get("label", r.get("pid")) if isinstance(r, dict) else None
            if not isinstance(label, str):
                problems.append((f"$.relations[{i}]", "expected an object with a string 'label' (or 'pid')"))
            elif not _ascii_words(label):
                problems.append((f"$.relations[{i}].label", f"{label!r} is empty or has no letters/digits"))
    if problems:
        details = "; ".join(f"{p}: {m}" for p, m in problems)
        raise OntologyError(f"{path} is not a Text2KGBench ontology: {details}", problems=problems, path=str(path))
    return data


def import_text2kgbench(path: str | os.PathLike[str], hierarchy: Mapping[str, Sequence[str]] | None = None,
                        ) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """Read a Text2KGBench ontology file; return ``(ontology_dict, label_map)`` (see module docstring).

    ``hierarchy``: class label -> its parent labels, from the knowledge base the benchmark comes from
    (the files carry no hierarchy). Each class of the file gets as ``subclase_de`` its nearest
    ancestors that are classes of the file too (``City`` -> ``Settlement`` -> ... -> ``Place``
    gives ``City`` a kind of ``Place`` when only those two are declared)."""
    path = Path(path)
    data = _load(path)

    classes: dict[str, dict[str, Any]] = {}
    class_map: dict[str, str] = {}           # benchmark label -> our class
    ref_map: dict[str, str] = {}             # any way a relation may refer to a concept -> our class
    datatype_map: dict[str, str] = {}        # datatype as written -> literal class

    def add_class(label: str, comment: str) -> str:
        name = class_identifier(label)
        if name in RESERVED_CLASSES:
            name += "Concept"
        name = _unique(name, set(classes), "")
        classes[name] = {"comment": comment, "propiedades": {}}
        return name

    for c in data["concepts"]:
        label = str(c.get("label") or c.get("qid"))
        if label in class_map:
            continue
        qid = c.get("qid")
        extra = f" (id {qid})" if qid and qid != label else ""
        name = add_class(label, f'Text2KGBench concept; original label: "{label}"{extra}.')
        class_map[label] = name
        ref_map.setdefault(label, name)
        if qid:
            ref_map.setdefault(str(qid), name)

    # First pass: resolve every domain/range name so undeclared ones become classes before the
    # "any class" lists of empty domains/ranges are built.
    def resolve(ref: Any, rel_label: str, role: str) -> str | None:
        ref = "" if ref is None else str(ref).strip()
        if not ref:
            return None
        if ref in ref_map:
            return ref_map[ref]
        if _is_datatype(ref):
            if ref not in datatype_map:
                lit = _literal_class(ref)
                if lit not in classes:
                    dt = ref.removeprefix("xsd:")
                    classes[lit] = {"comment": f"A literal value of datatype {dt} (the node's name is the value); "
                                               "stands for the benchmark's datatype ranges.",
                                    "propiedades": {}}
                datatype_map[ref] = lit
            return datatype_map[ref]
        same = class_identifier(ref)
        if same in classes and same not in datatype_map.values():
            name = same  # differs from a declared concept only in case/spacing (ethnicGroup vs EthnicGroup)
        else:
            name = add_class(ref, f'Not declared among the benchmark\'s concepts; added because relation '
                                  f'"{rel_label}" uses "{ref}" as its {role}.')
        class_map[ref] = name
        ref_map[ref] = name
        return name

    resolved: list[tuple[str, list[str | None], list[str | None]]] = []
    order: list[str] = []
    for r in data["relations"]:
        label = str(r.get("label") or r.get("pid"))
        d = resolve(r.get("domain"), label, "domain")
        g = resolve(r.get("range"), label, "range")
        if label not in order:
            order.append(label)
            resolved.append((label, [d], [g]))
        else:  # the same label twice: merge domains and ranges
            i = order.index(label)
            resolved[i][1].append(d)
            resolved[i][2].append(g)

    all_classes = list(classes)
    relations: list[dict[str, Any]] = []
    rel_map: dict[str, str] = {}
    taken: set[str] = set()
    for label, domains, ranges in resolved:
        name = relation_identifier(label)
        if name in RESERVED_RELATIONS:
            name += "_REL"
        name = _unique(name, taken, "_")
        taken.add(name)
        rel_map[label] = name

        def merged(values: list[str | None]) -> list[str]:
            if any(v is None for v in values):
                return list(all_classes)
            return list(dict.fromkeys(v for v in values if v is not None))

        dom, rng = merged(domains), merged(ranges)
        notes = [f'original label: "{label}"']
        if None in domains:
            notes.append("domain not given by the benchmark: any class")
        if None in ranges:
            notes.append("range not given by the benchmark: any class")
        if any(v in datatype_map.values() for v in rng) and None not in ranges:
            notes.append("literal-valued: the object is a literal node")
        relations.append({
            "nombre": name,
            "dominio": dom[0] if len(dom) == 1 else dom,
            "rango": rng,
            "simetrica": False,
            "comment": "; ".join(notes) + ".",
        })

    if hierarchy:
        _add_hierarchy(classes, class_map, hierarchy)
    title = str(data.get("title") or data.get("id") or path.stem)
    ontology = {
        "nombre": title,
        "descripcion": f"Text2KGBench ontology {data.get('id', path.stem)}. {ATTRIBUTION}",
        "clases": classes,
        "relaciones": relations,
    }
    label_map = {"relations": rel_map, "classes": class_map, "datatypes": datatype_map}
    return ontology, label_map


def _add_hierarchy(classes: dict[str, dict[str, Any]], class_map: Mapping[str, str],
                   hierarchy: Mapping[str, Sequence[str]]) -> None:
    """Set ``subclase_de`` of every class of ``class_map`` to its nearest ancestors in ``classes``."""
    def nearest(label: str, seen: set[str]) -> list[str]:
        found: list[str] = []
        for parent in hierarchy.get(label, ()):
            if parent in seen:
                continue  # a cycle in the given hierarchy: ignore the edge back
            seen.add(parent)
            ours = class_map.get(parent)
            found += [ours] if ours is not None else nearest(parent, seen)
        return found

    for label, name in class_map.items():
        if name not in classes or "subclase_de" in classes[name]:
            continue
        parents = [p for p in dict.fromkeys(nearest(label, {label})) if p != name]
        if parents:
            classes[name]["subclase_de"] = parents


def renamed_labels(label_map: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
    """The class and relation labels whose identifier differs from the benchmark's spelling.

    ``{"classes": {label: Class}, "relations": {label: TYPE}}``, keeping only the renamed entries
    (``birthDate`` -> ``BIRTH_DATE`` is one, ``City`` -> ``City`` is not). Datatypes are left out:
    they become literal classes by design, not because their spelling is not an identifier.
    """
    return {kind: {label: name for label, name in label_map[kind].items() if label != name}
            for kind in ("classes", "relations")}


def write_ontology(ontology: dict[str, Any], out_path: str | os.PathLike[str]) -> Path:
    """Write ``ontology`` as pretty JSON, atomically (temp file in the same folder, then rename)."""
    try:
        return write_json_atomic(out_path, ontology, indent=2)
    except OSError as exc:
        raise OntologyError(f"cannot write the converted ontology to {out_path}: {exc.strerror or exc}. "
                            "Choose an --output path in a folder you can write to.", path=str(out_path)) from exc
