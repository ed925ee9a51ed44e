"""The loaded graph compared with the extraction file it was loaded from (``graphrag-got stats --strict``).

:func:`expected_view` says what a clean load of an extraction writes (the load's own plan under the
current ontology: :func:`~graphrag_got.graph.load_plan.build_plan`), :func:`stored_view` reads what the
graph holds, both as a :data:`GraphView` (per :class:`Section`, a key -> the fields the graph stores),
and :func:`compare` lists the :class:`Difference` records between them. Lists whose order carries no
meaning (provenance, aliases, evidence) are compared sorted; the vectors, community ids and other
stages' fields are not compared. The same stored view, taken twice, tells whether two graphs are
equal (the tests load a sequence of extractions and compare with a clean load of the last one).
"""

from __future__ import annotations

import json
from enum import StrEnum
from typing import Any

import neo4j
from pydantic import BaseModel

from graphrag_got.config import ExtractSettings, GraphSettings, Neo4jSettings
from graphrag_got.extract.aggregate import identity_attributes
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph import cypher, load_cypher
from graphrag_got.graph import notes as notes_graph
from graphrag_got.graph import notes_cypher
from graphrag_got.graph.db import read_all
from graphrag_got.graph.load_digest import record_digests
from graphrag_got.extract.stored_answers import make_validator
from graphrag_got.graph.load_plan import build_plan
from graphrag_got.graph.vector_cypher import EMBEDDING, EMBEDDING_HASH
from graphrag_got.ontology.model import RESERVED_PROPERTIES, RESERVED_RELATION_ATTRIBUTES, Ontology


class Section(StrEnum):
    """What a key of the view names."""

    DOCUMENT = "document"
    CHUNK = "chunk"
    ENTITY = "entity"
    RELATION = "relation"
    MENTION = "mention"
    COOCCURRENCE = "co-occurrence"
    NOTE_STRUCTURE = "note structure"  # a note's folder, tags and links
    FOLDER = "folder"


#: Section -> key -> fields.
GraphView = dict[Section, dict[str, dict[str, Any]]]
#: (section, key) -> the element ids of the nodes or relationships of the graph stored under that key
#: (more than one: the graph holds copies of what a load writes once).
ElementIds = dict[tuple[Section, str], list[str]]

#: Fields other stages write on entities (vectors, communities): not the load's, never compared.
_OTHER_STAGES = frozenset({EMBEDDING, EMBEDDING_HASH, "communityId", "communityLevel"})
_ENTITY_FIELDS = frozenset({"uid", "key", "name", "type", "aliases", "chunk_ids", "doc_ids"})
_DIGITS = 9  # confidences and weights are compared rounded (floats summed in another order)


class DifferenceKind(StrEnum):
    MISSING = "missing"  # the extraction has it, the graph does not
    UNEXPECTED = "unexpected"  # the graph has it, the extraction does not
    DIFFERS = "differs"  # both have it, with another value of ``field``
    DUPLICATE = "duplicate"  # the graph holds it more than once (``stored``: how many times)


class Difference(BaseModel):
    """One difference between the graph and its extraction file."""

    kind: DifferenceKind
    section: Section
    key: str
    field: str | None = None
    expected: Any = None
    stored: Any = None

    def line(self, limit: int = 160) -> str:
        def shown(value: Any) -> str:
            text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
            return text if len(text) <= limit else text[: limit - 3] + "..."

        if self.kind is DifferenceKind.MISSING:
            return f"{self.section.value} {self.key}: in the extraction, not in the graph"
        if self.kind is DifferenceKind.UNEXPECTED:
            return f"{self.section.value} {self.key}: in the graph, not in the extraction"
        if self.kind is DifferenceKind.DUPLICATE:
            return f"{self.section.value} {self.key}: {self.stored} copies in the graph, one in the extraction"
        return (f"{self.section.value} {self.key}: {self.field} is {shown(self.stored)} in the graph, "
                f"{shown(self.expected)} in the extraction")


class Comparison(BaseModel):
    """The differences found (the first ``limit`` of them) and how many there are per section."""

    differences: list[Difference]
    total: int
    by_section: dict[str, int]

    @property
    def equal(self) -> bool:
        return self.total == 0


# ---------------------------------------------------------------------------------------------
# Keys and values (shared by both views so they cannot drift apart)
# ---------------------------------------------------------------------------------------------


def _drop_none(fields: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _relation_key(start: str, rtype: str, end: str, identity: dict[str, Any]) -> str:
    ident = json.dumps(identity, ensure_ascii=False, sort_keys=True) if identity else ""
    return f"({start})-[{rtype}{' ' + ident if ident else ''}]->({end})"


def _relation_value(attributes: dict[str, Any], symmetric: bool, chunk_ids: list[str], doc_ids: list[str],
                    evidence: list[str], evidence_chunk_ids: list[str]) -> dict[str, Any]:  # fmt: skip
    return {"attributes": attributes, "symmetric": symmetric, "chunk_ids": sorted(chunk_ids),
            "doc_ids": sorted(doc_ids), "evidence": sorted(zip(evidence_chunk_ids, evidence))}  # fmt: skip


def _entity_value(labels: list[str], key: str, name: str, etype: str, properties: dict[str, Any],
                  aliases: list[str], chunk_ids: list[str], doc_ids: list[str],
                  record_hash: str | None) -> dict[str, Any]:  # fmt: skip
    return {"labels": sorted(labels), "key": key, "name": name, "type": etype, "properties": properties,
            "aliases": sorted(aliases), "chunk_ids": sorted(chunk_ids), "doc_ids": sorted(doc_ids),
            "record_hash": record_hash}  # fmt: skip


def mention_key(chunk_id: str, uid: str) -> str:
    return f"({chunk_id})->({uid})"


def _note_key(doc_id: str, rtype: str, label: str, target: str, qualifier: str = "") -> str:
    return f"({doc_id})-[{rtype}{' ' + qualifier if qualifier else ''}]->({label} {target})"


def _cooccurrence_value(chunk_ids: list[str], weights: list[float], doc_ids: list[str]) -> dict[str, Any]:
    return {"chunks": sorted((c, round(w, _DIGITS)) for c, w in zip(chunk_ids, weights)),
            "doc_ids": sorted(doc_ids)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# What a clean load of the file writes
# ---------------------------------------------------------------------------------------------


def expected_view(ext: Extraction, onto: Ontology, graph: GraphSettings, extract: ExtractSettings) -> GraphView:
    """The graph a clean load of ``ext`` under ``onto`` (and ``graph``; ``extract``: the validator that
    checks records again) writes (nothing when ``ext`` has no document: even the rows no chunk supports
    are written with a document's group)."""
    view: GraphView = {s: {} for s in Section}
    if not ext.documents:
        return view
    cap = graph.cooccurrence_max_entities if graph.cooccurrence else None
    plan = build_plan(ext, onto, validator=make_validator(extract, onto), cooccurrence_max=cap)
    records = record_digests(ext, plan)
    rows = notes_graph.note_rows(ext.documents)
    note_props = {r["id"]: r for r in rows.properties}
    for d in ext.documents:
        fields = {"id": d.id, "path": d.path, "hash": d.hash, "ontology_hash": onto.hash,
                  "records_hash": records.documents[d.id], "rootless_hash": records.rootless,
                  "metadata": json.dumps(d.metadata, ensure_ascii=False, sort_keys=True)}  # fmt: skip
        fields.update({k: v for k, v in note_props.get(d.id, {}).items() if k != "id"})
        view[Section.DOCUMENT][d.id] = _drop_none(fields)
    for c in ext.chunks:
        view[Section.CHUNK][c.id] = {"fields": _drop_none(c.model_dump()), "documents": [c.document_id]}
    for uid, e in plan.entities.items():
        view[Section.ENTITY][uid] = _entity_value([cypher.ENTITY, e["type"]], e["key"], e["name"], e["type"],
                                                  e["properties"], e["aliases"], e["chunk_ids"], e["doc_ids"],
                                                  records.entities[uid])
        conf = plan.confidence.get(uid, {})
        for cid in e["chunk_ids"]:
            view[Section.MENTION][mention_key(cid, uid)] = {"weight": round(conf.get(cid, 1.0), _DIGITS)}
    for r in plan.relations.values():
        value = _relation_value({**r["identity"], **r["attributes"]}, r["symmetric"], r["chunk_ids"], r["doc_ids"],
                                r["evidence"], r["evidence_chunk_ids"])  # fmt: skip
        view[Section.RELATION][_relation_key(r["start"], r["type"], r["end"], r["identity"])] = value
        if r["symmetric"] and r["start"] != r["end"]:
            view[Section.RELATION][_relation_key(r["end"], r["type"], r["start"], r["identity"])] = value
    for (a, b), co in plan.cooccurrences.items():
        view[Section.COOCCURRENCE][f"({a})~({b})"] = _cooccurrence_value(co["chunk_ids"], co["chunk_weights"],
                                                                         co["doc_ids"])
    structure = view[Section.NOTE_STRUCTURE]
    for f in rows.document_folders:
        structure[_note_key(f["id"], notes_cypher.IN_FOLDER, notes_cypher.FOLDER, f["folder"])] = {}
    for t in rows.tags:
        structure[_note_key(t["id"], notes_cypher.TAGGED, notes_cypher.TAG, t["name"], t["source"])] = {}
    in_graph = {d.id for d in ext.documents}
    for link in rows.links:  # one relationship per (note, kind, target): the last link's text wins
        target = ((cypher.DOCUMENT, link["target_id"]) if link["target_id"] in in_graph
                  else (notes_cypher.MISSING_NOTE, link["missing"]))  # fmt: skip
        structure[_note_key(link["id"], notes_cypher.LINKS_TO, *target, link["kind"])] = _drop_none(
            {"text": link["text"], "heading": link["heading"], "target": link["missing"]})
    for f in rows.folders:
        view[Section.FOLDER][f["path"]] = {"name": f["name"], "parents": [f["parent"]] if f["parent"] else []}
    return view


# ---------------------------------------------------------------------------------------------
# What the graph holds
# ---------------------------------------------------------------------------------------------


def stored_view(driver: neo4j.Driver, db: Neo4jSettings, onto: Ontology,
                element_ids: ElementIds | None = None) -> GraphView:
    """What the graph holds, in the form of :func:`expected_view` (``onto`` names the identity attributes).
    ``element_ids``, when given, is filled with the element ids stored under each key."""
    identity = identity_attributes(onto)
    skip = sorted(_OTHER_STAGES)
    view: GraphView = {s: {} for s in Section}
    ids: ElementIds = element_ids if element_ids is not None else {}

    def put(section: Section, key: str, value: dict[str, Any], eid: str) -> None:
        view[section][key] = value
        ids.setdefault((section, key), []).append(eid)

    for r in read_all(driver, db, load_cypher.view_documents(), skip=skip):
        put(Section.DOCUMENT, r["id"], dict(r["fields"]), r["eid"])
    for r in read_all(driver, db, load_cypher.view_chunks(), skip=skip):
        put(Section.CHUNK, r["id"], {"fields": dict(r["fields"]), "documents": sorted(r["documents"])}, r["eid"])
    for r in read_all(driver, db, load_cypher.view_entities(), skip=skip):
        f = dict(r["fields"])
        props = {k: v for k, v in f.items() if k not in RESERVED_PROPERTIES}
        put(Section.ENTITY, r["uid"], _entity_value(r["labels"], f.get("key"), f.get("name"), f.get("type"), props,
                                                    f.get("aliases") or [], f.get("chunk_ids") or [],
                                                    f.get("doc_ids") or [], f.get("record_hash")), r["eid"])  # fmt: skip
    for r in read_all(driver, db, load_cypher.view_mentions()):
        put(Section.MENTION, mention_key(r["chunk"], r["uid"]), {"weight": round(r["weight"], _DIGITS)}, r["eid"])
    for r in read_all(driver, db, load_cypher.view_relations(), skip=skip):
        f = dict(r["fields"])
        if r["type"] == cypher.CO_OCCURS:
            put(Section.COOCCURRENCE, f"({r['start']})~({r['end']})", _cooccurrence_value(
                f.get("chunk_ids") or [], f.get("chunk_weights") or [], f.get("doc_ids") or []), r["eid"])
            continue
        attributes = {k: v for k, v in f.items() if k not in RESERVED_RELATION_ATTRIBUTES}
        ident = {a: f.get(a) for a in identity}
        put(Section.RELATION, _relation_key(r["start"], r["type"], r["end"], ident), _relation_value(
            attributes, bool(f.get("symmetric")), f.get("chunk_ids") or [], f.get("doc_ids") or [],
            f.get("evidence") or [], f.get("evidence_chunk_ids") or []), r["eid"])
    for r in read_all(driver, db, load_cypher.view_note_structure()):
        f = dict(r["fields"])
        qualifier = f.pop("source", "") if r["type"] == notes_cypher.TAGGED else f.pop("kind", "")
        put(Section.NOTE_STRUCTURE, _note_key(r["id"], r["type"], r["label"], r["target"], qualifier), f, r["eid"])
    for r in read_all(driver, db, load_cypher.view_folders()):
        put(Section.FOLDER, r["path"], {"name": r["name"], "parents": sorted(r["parents"])}, r["eid"])
    return view


# ---------------------------------------------------------------------------------------------
# The differences
# ---------------------------------------------------------------------------------------------


def compare(expected: GraphView, stored: GraphView, *, limit: int = 20,
            element_ids: ElementIds | None = None) -> Comparison:
    """The differences between two views (the first ``limit`` kept, in section and key order);
    ``element_ids`` (of the stored view) adds a ``DUPLICATE`` for each key the graph holds more than once."""
    found: list[Difference] = []
    by_section: dict[str, int] = {}
    total = 0

    def add(diff: Difference) -> None:
        nonlocal total
        total += 1
        by_section[diff.section.value] = by_section.get(diff.section.value, 0) + 1
        if len(found) < limit:
            found.append(diff)

    for section in Section:
        want, have = expected.get(section, {}), stored.get(section, {})
        for key in sorted(want.keys() | have.keys()):
            if key not in have:
                add(Difference(kind=DifferenceKind.MISSING, section=section, key=key))
            elif key not in want:
                add(Difference(kind=DifferenceKind.UNEXPECTED, section=section, key=key))
            elif want[key] != have[key]:
                for name in sorted(want[key].keys() | have[key].keys()):
                    a, b = want[key].get(name), have[key].get(name)
                    if a != b:
                        add(Difference(kind=DifferenceKind.DIFFERS, section=section, key=key, field=name,
                                       expected=a, stored=b))  # fmt: skip
                        break
    for (section, key), eids in sorted((element_ids or {}).items()):
        if len(eids) > 1:
            add(Difference(kind=DifferenceKind.DUPLICATE, section=section, key=key, stored=len(eids)))
    return Comparison(differences=found, total=total, by_section=by_section)


def compare_with_file(driver: neo4j.Driver, db: Neo4jSettings, ext: Extraction, onto: Ontology, *,
                      graph: GraphSettings, extract: ExtractSettings, limit: int = 20) -> Comparison:  # fmt: skip
    """The graph against a clean load of ``ext`` under ``onto`` (see :func:`expected_view`)."""
    ids: ElementIds = {}
    stored = stored_view(driver, db, onto, ids)
    return compare(expected_view(ext, onto, graph, extract), stored, limit=limit, element_ids=ids)
