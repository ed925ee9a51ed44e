"""A passage's current answer as an example to correct, and the editable file ``examples add`` opens.

:func:`draft_example` reads one chunk's kept entities and facts out of an extraction (the model's
answer after validation and entity resolution; or a gold file's, in the benchmark) as a
:class:`StoredExample`, each name as the passage writes it (an entity merged under a name the passage
does not use is shown by the alias it does use; one the passage never names is left out and said).

:func:`example_text` / :func:`read_example_text` write and read the editable file: the passage on
top as ``#`` comment lines, then one line per fact and per entity, in the lines answer form the
extractor already reads (``name (Class) -RELATION-> name (Class) | attribute=value``,
``Class: name | property=value``). A line that is neither is reported with its line number.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphrag_got.common.text_match import ChunkText
from graphrag_got.errors import OntologyError
from graphrag_got.extract.extraction import ChunkRecord, Extraction
from graphrag_got.extract.forms.lines import read_lines
from graphrag_got.ontology.example_store import StoredExample
from graphrag_got.ontology.model import ExampleEntity, ExampleRelation, Ontology

logger = logging.getLogger(__name__)

HELP = """\
# Correct what the passage above states, then save and close the editor.
#   one fact per line:   name (Class) -RELATION-> name (Class) | attribute=value
#   one entity per line: Class: name | property=value   (needed only for properties or an entity in no fact)
# Delete a wrong line, fix a class or a direction, add what is missing. Names must be written as the
# passage writes them. Lines starting with # are ignored; an empty file cancels.
"""


class Draft(BaseModel):
    """A chunk's answer as an example, and the names it could not show as the passage writes them."""

    model_config = ConfigDict(frozen=True)

    example: StoredExample
    left_out: tuple[str, ...] = ()


def find_chunk(extraction: Extraction, chunk_id: str) -> ChunkRecord:
    chunk = next((c for c in extraction.chunks if c.id == chunk_id), None)
    if chunk is None:
        near = ", ".join(c.id for c in extraction.chunks[:5])
        raise OntologyError(f"no chunk {chunk_id!r} in the extraction (its chunks: {near}"
                            f"{', ...' if len(extraction.chunks) > 5 else ''}); `graphrag-got examples suggest` "
                            "prints chunk ids to correct")
    return chunk


def draft_example(extraction: Extraction, chunk_id: str) -> Draft:
    """The kept answer of chunk ``chunk_id`` as an example (see the module docstring)."""
    chunk = find_chunk(extraction, chunk_id)
    text = ChunkText(chunk.text)
    shown: dict[str, str] = {}  # entity uid -> the name written in the passage
    entities: list[ExampleEntity] = []
    left_out: list[str] = []
    for ent in extraction.entities:
        if chunk_id not in ent.chunk_ids:
            continue
        name = next((n for n in (ent.name, *ent.aliases) if text.mentions(n)), None)
        if name is None:
            left_out.append(f"{ent.name} ({ent.type})")
            continue
        shown[ent.uid] = name
        entities.append(ExampleEntity(class_name=ent.type, name=name, properties=dict(ent.properties)))
    relations: list[ExampleRelation] = []
    for rel in extraction.relations:
        if chunk_id not in rel.chunk_ids:
            continue
        subject = shown.get(f"{rel.subject_type}|{rel.subject_key}")
        obj = shown.get(f"{rel.object_type}|{rel.object_key}")
        if subject is None or obj is None:
            left_out.append(f"{rel.subject} -{rel.relation}-> {rel.object}")
            continue
        relations.append(ExampleRelation(relation=rel.relation, subject=subject, object=obj,
                                         attributes=dict(rel.attributes)))
    example = StoredExample.build(chunk.text, _unique(entities), _unique(relations), chunk_id=chunk.id,
                                  document=chunk.document_id)
    return Draft(example=example, left_out=tuple(left_out))


def _unique(items: list[Any]) -> list[Any]:
    """Items in order, each once (a symmetric fact may be listed once per direction)."""
    seen: set[str] = set()
    out = []
    for item in items:
        key = item.model_dump_json()
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _pairs(values: dict[str, str]) -> str:
    return "".join(f" | {k}={v}" for k, v in values.items())


def example_text(example: StoredExample, left_out: tuple[str, ...] = ()) -> str:
    """The editable file of an example (see the module docstring)."""
    classes = {e.name: e.class_name for e in example.entities}
    lines = [f"# PASSAGE {example.chunk_id or example.id}" + (f" ({example.document})" if example.document else "")]
    lines += [f"#   {line}" for line in example.text.splitlines()]
    lines += [HELP.rstrip("\n")]
    if left_out:
        lines.append("# Not shown (the passage does not write these names): " + "; ".join(left_out))
    lines.append("")
    lines += [f"{r.subject} ({classes.get(r.subject, '?')}) -{r.relation}-> {r.object} ({classes.get(r.object, '?')})"
              f"{_pairs(r.attributes)}" for r in example.relations]
    in_facts = {n for r in example.relations for n in (r.subject, r.object)}
    lines += [f"{e.class_name}: {e.name}{_pairs(e.properties)}" for e in example.entities
              if e.properties or e.name not in in_facts]
    return "\n".join(lines) + "\n"


def read_example_text(edited: str, text: str, onto: Ontology, *, chunk_id: str = "",
                      document: str = "") -> StoredExample | None:
    """The example an edited file states for passage ``text`` (None when the file has no line left).
    Raises OntologyError listing each unreadable line by its number, and each property or attribute
    the ontology does not declare."""
    numbered = [(i, line) for i, line in enumerate(edited.splitlines(), 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        return None
    problems: list[tuple[str, str]] = []
    for i, line in numbered:
        answer = read_lines([line])
        for bad in answer.get("unparsed", []):
            problems.append((f"line {i}", f"{bad.get('why', 'not readable')}: {line.strip()!r}"))
    answer = read_lines([line for _, line in numbered])
    entities: dict[str, ExampleEntity] = {}
    for ent in answer.get("entities", []):
        props = {k: str(v) for k, v in ent.items() if k not in ("type", "name") and v not in (None, "")}
        known = entities.get(ent["name"])
        if known is not None and known.class_name == ent["type"]:
            props = {**known.properties, **props}
        entities[ent["name"]] = ExampleEntity(class_name=ent["type"], name=ent["name"], properties=props)
    relations = []
    for rel in answer.get("relations", []):
        attrs = {k: str(v) for k, v in rel.items()
                 if k not in ("subject", "subject_type", "relation", "object", "object_type") and v not in (None, "")}
        relations.append(ExampleRelation(relation=rel["relation"], subject=rel["subject"], object=rel["object"],
                                         attributes=attrs))
    if problems:
        raise OntologyError(f"{len(problems)} line(s) cannot be read: "
                            + "; ".join(f"{loc}: {msg}" for loc, msg in problems), problems=problems)
    return StoredExample.build(text, list(entities.values()), _unique(relations), chunk_id=chunk_id,
                               document=document)


_WHERE = re.compile(r"^\$\.examples\[0\]\.(entities|relations)\[(\d+)\]")


def locate_problems(problems: list[tuple[str, str]], example: StoredExample, edited: str) -> list[tuple[str, str]]:
    """Problems of an example read from an edited file, located at the file's lines: a fact's at its line,
    an entity's at the first line naming it (the JSON path otherwise)."""
    lines = [(i, line) for i, line in enumerate(edited.splitlines(), 1)
             if line.strip() and not line.lstrip().startswith("#")]
    fact_lines = [i for i, line in lines if "->" in line]
    out = []
    for loc, msg in problems:
        m = _WHERE.match(loc)
        where = loc
        if m and m[1] == "relations" and int(m[2]) < len(example.relations):
            rel = example.relations[int(m[2])]
            line = next((i for i in fact_lines if rel.subject in edited.splitlines()[i - 1]
                         and rel.relation in edited.splitlines()[i - 1]), None)
            where = f"line {line}" if line else loc
        elif m and m[1] == "entities" and int(m[2]) < len(example.entities):
            name = example.entities[int(m[2])].name
            line = next((i for i, text in lines if name in text), None)
            where = f"line {line}" if line else loc
        out.append((where, msg))
    return out


__all__ = ["Draft", "locate_problems", "HELP", "draft_example", "example_text", "find_chunk", "read_example_text"]
