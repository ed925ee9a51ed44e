"""Semantic checks of an ontology: what the file schema cannot see.

Run by the :class:`graphrag_got.ontology.model.Ontology` validator once the file's shape is known
to be right: names are identifiers and not reserved by the graph model, ``domain``/``range`` and
``subclase_de`` name declared classes, the class hierarchy has no cycle, relations are declared
once, cues have words, and every annotated example fits the ontology and its own text. Each
problem is returned as ``(location, message)``, the location a JSON path as a tuple of keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphrag_got.common.text_match import ChunkText, cue_words
from graphrag_got.ontology.model import (
    IDENTIFIER,
    RESERVED_CLASSES,
    RESERVED_PROPERTIES,
    RESERVED_RELATION_ATTRIBUTES,
    RESERVED_RELATIONS,
    ExtractionExample,
    Ontology,
    OntologyClass,
    PropertySpec,
)

Problems = list[tuple[tuple[Any, ...], str]]

NO_RELATION = ("an ontology needs at least one relation (extraction and its answer schema are built from "
               "the relations): add one under 'relaciones'")


def declaration_problems(onto: Ontology) -> Problems:
    """Problems of the declared classes (names, properties, hierarchy) and relations."""
    problems: Problems = []
    if not onto.classes:
        problems.append((("clases",), "an ontology needs at least one class: add one under 'clases'"))
    for name, klass in onto.classes.items():
        problems += identifier_problems(name, ("clases", name), reserved=RESERVED_CLASSES, what="class")
        for prop, spec in klass.properties.items():
            loc = ("clases", name, "propiedades", prop)
            problems += property_name_problems(prop, loc, RESERVED_PROPERTIES, "property")
            if spec.identity:
                problems.append((loc, "identity only applies to relation attributes; remove it here"))
        for j, parent in enumerate(klass.parents):
            loc = ("clases", name, "subclase_de", j)
            if parent not in onto.classes:
                problems.append((loc, f"class {name} is a subclass of {parent!r}, which is not declared in "
                                      f"'clases' (declared: {', '.join(onto.classes)})"))
            elif parent == name:
                problems.append((loc, f"class {name} cannot be a subclass of itself"))
    problems += cycle_problems(onto.classes)
    if not onto.relations:
        problems.append((("relaciones",), NO_RELATION))
    seen: dict[str, int] = {}
    for i, rel in enumerate(onto.relations):
        problems += identifier_problems(rel.name, ("relaciones", i, "nombre"), reserved=RESERVED_RELATIONS,
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
                if cname not in onto.classes:
                    problems.append((("relaciones", i, key, j),
                                     f"relation {rel.name} names class {cname!r}, which is not declared in "
                                     f"'clases' (declared: {', '.join(onto.classes)})"))
    return problems


def usage_problems(onto: Ontology) -> Problems:
    """Problems of the relation attributes and the annotated examples (run after the relations are
    expanded to the subclasses, so an example's ends are checked against the class hierarchy)."""
    problems: Problems = []
    for attr in onto.relation_attributes:
        problems += property_name_problems(attr, ("atributos_de_relacion", attr), RESERVED_RELATION_ATTRIBUTES,
                                           "attribute")
    for i, example in enumerate(onto.examples):
        problems += example_problems(onto, example, ("ejemplos", i))
    return problems


def cycle_problems(classes: Mapping[str, OntologyClass]) -> Problems:
    """One problem per class hierarchy cycle (``A`` a subclass of ``B``, ``B`` of ``A``), at its first class."""
    problems: Problems = []
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


def _value_problem(spec: PropertySpec, value: str, loc: tuple[Any, ...]) -> Problems:
    if spec.kind == "enum" and value not in spec.values:
        return [(loc, f"{value!r} is not one of the declared values ({', '.join(spec.values)})")]
    return []


def example_problems(onto: Ontology, ex: ExtractionExample,
                     loc: tuple[Any, ...]) -> Problems:
    """Everything wrong with one annotated example, each problem at its JSON path."""
    problems: Problems = []
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


def identifier_problems(name: str, loc: tuple[Any, ...], *, reserved: frozenset[str],
                        what: str) -> Problems:
    if not IDENTIFIER.fullmatch(name):
        return [(loc, f"{what} name {name!r} is not a valid identifier (it becomes a Neo4j "
                      f"{'label' if what == 'class' else 'relationship type'}): use letters, digits and _")]
    if name in reserved:
        return [(loc, f"{what} name {name!r} is reserved by the graph model; rename it")]
    return []


def property_name_problems(name: str, loc: tuple[Any, ...], reserved: frozenset[str],
                           what: str) -> Problems:
    if not IDENTIFIER.fullmatch(name):
        return [(loc, f"{what} name {name!r} is not a valid identifier (it becomes a Neo4j property name): "
                      "use ASCII letters, digits and _, not starting with a digit")]
    if name in reserved:
        return [(loc, f"{what} name {name!r} is reserved by the graph model "
                      f"({', '.join(sorted(reserved))}); rename it")]
    return []

