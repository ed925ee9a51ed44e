"""The read-only graph lookups behind ``/entities``, ``/communities`` and ``/health`` (and the MCP
tools of the same names). Every query comes from :mod:`graphrag_got.service.cypher` (the entity
catalog from :mod:`graphrag_got.search.cypher`) and runs in a READ-mode session
(:func:`graphrag_got.graph.db.read_all`); names arrive only as parameters.
"""

from __future__ import annotations

from typing import Any

import neo4j

from graphrag_got.service import cypher
from graphrag_got.config import Neo4jSettings, SearchSettings
from graphrag_got.errors import SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.common.normalize import is_empty_key, normalize_name, swap_ends
from graphrag_got.ontology.model import Ontology
from graphrag_got.service.models import CommunityOut, CommunityPage, EntityOut, EvidenceOut, Neighbourhood, RelationOut

MAX_NAME_CHARS = 300  # longer than any entity name the extraction accepts
MAX_ENTITIES_PER_NAME = 10  # one name may denote an entity in several classes
MAX_RELATIONS = 200
MAX_COMMUNITIES = 200
MAX_MEMBERS = 50
SUGGESTIONS = 5


class EntityNotFound(SearchError):
    """No entity has this name or alias; ``suggestions`` holds close names the graph has."""

    def __init__(self, message: str, suggestions: list[str]):
        super().__init__(message)
        self.suggestions = suggestions


class BadLookup(SearchError):
    """A lookup argument is out of range or empty (a client error)."""


def _check_range(what: str, value: int, low: int, high: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadLookup(f"{what} must be an integer from {low} to {high}, got {value!r}")


def _entity(row: dict[str, Any], ontology: Ontology) -> EntityOut:
    klass = ontology.classes.get(row["type"] or "")
    declared = klass.properties if klass is not None else {}
    props = row.get("properties") or {}
    return EntityOut(uid=row["uid"], name=row["name"] or row["key"] or row["uid"], type=row["type"] or "",
                     aliases=[str(a) for a in row.get("aliases") or []],
                     properties={k: props[k] for k in declared if props.get(k) not in (None, "")})


def find_entities(driver: neo4j.Driver, db: Neo4jSettings, name: str, ontology: Ontology, *, search: SearchSettings,
                  type_: str | None = None) -> list[EntityOut]:
    """The entities ``name`` denotes: its normalized form as a key, else as an alias (at most
    MAX_ENTITIES_PER_NAME, one per class it exists in). Raises EntityNotFound with suggestions."""
    if len(name) > MAX_NAME_CHARS:
        raise BadLookup(f"the entity name is {len(name)} characters long; at most {MAX_NAME_CHARS} are accepted")
    if is_empty_key(name):
        raise BadLookup("the entity name is empty (nothing visible left once normalized)")
    if type_ is not None and type_ not in ontology.classes:
        raise BadLookup(f"type {type_!r} is not a class of the ontology; use one of: {', '.join(ontology.classes)}")
    key = normalize_name(name)
    rows = read_all(driver, db, cypher.service_entities_by_key(), keys=[key], type=type_,
                    limit=MAX_ENTITIES_PER_NAME)
    if not rows:
        uids = [r["uid"] for r in read_all(driver, db, cypher.service_entity_aliases())
                if any(isinstance(a, str) and normalize_name(a) == key for a in r["aliases"] or [])]
        if uids:
            rows = read_all(driver, db, cypher.service_entities_by_uid(), uids=uids[:MAX_ENTITIES_PER_NAME],
                            type=type_)
    if not rows:
        suggestions = suggest_names(driver, db, name, search=search)
        raise EntityNotFound(_not_found_message(name, type_, suggestions), suggestions)
    return [_entity(r, ontology) for r in rows]


def _not_found_message(name: str, type_: str | None, suggestions: list[str]) -> str:
    where = f" of class {type_}" if type_ else ""
    close = f"close names in the graph: {', '.join(suggestions)}" if suggestions else "no close name either"
    return f"no entity{where} is named {name!r} (nor has it as an alias); {close}. Use a name as the corpus writes it"


def suggest_names(driver: neo4j.Driver, db: Neo4jSettings, name: str, n: int = SUGGESTIONS, *,
                  search: SearchSettings) -> list[str]:
    """Names of the graph close to ``name``, from the matcher that anchors questions
    (:func:`graphrag_got.search.anchors.suggest_entities`, on the same cached catalog)."""
    from graphrag_got.search.anchors import entity_catalog, suggest_entities

    catalog, index = entity_catalog(driver, db, search=search)
    return suggest_entities(name, catalog, index, n)


def _relation(row: dict[str, Any], ontology: Ontology) -> RelationOut:
    props = row.get("properties") or {}
    sentences = [str(s) for s in props.get("evidence") or []]
    chunk_ids = list(props.get("evidence_chunk_ids") or [])  # aligned with the sentences
    documents = {c["id"]: c["document_id"] for c in row.get("evidence_chunks") or []}
    evidence = []
    for i, sentence in enumerate(sentences):
        chunk = str(chunk_ids[i]) if i < len(chunk_ids) and chunk_ids[i] is not None else None
        evidence.append(EvidenceOut(text=sentence, chunk_id=chunk, document_id=documents.get(chunk)))
    return RelationOut(
        start=row["start"], start_name=row["start_name"] or row["start"], start_type=row["start_type"] or "",
        type=row["type"], end=row["end"], end_name=row["end_name"] or row["end"], end_type=row["end_type"] or "",
        attributes={k: props[k] for k in ontology.relation_attributes if props.get(k) not in (None, "")},
        symmetric=bool(props.get("symmetric")), support=len(props.get("chunk_ids") or []), evidence=evidence,
    )


def neighbourhood(driver: neo4j.Driver, db: Neo4jSettings, name: str, ontology: Ontology, *, search: SearchSettings,
                  type_: str | None = None, limit: int = 50) -> Neighbourhood:
    """The entities ``name`` denotes and their ontology relations, most supported first.

    A symmetric relation is stored in both directions; it is returned once (ends in uid order).
    """
    _check_range("limit", limit, 1, MAX_RELATIONS)
    entities = find_entities(driver, db, name, ontology, search=search, type_=type_)
    fetch = limit * 2 + 1  # symmetric relations come back twice; one more row tells "truncated"
    rows = read_all(driver, db, cypher.service_neighbourhood(), uids=[e.uid for e in entities],
                    types=sorted(r.name for r in ontology.relations), limit=fetch)
    relations: list[RelationOut] = []
    seen: set[tuple[Any, ...]] = set()
    for row in rows:
        rel = _relation(row, ontology)
        ends = (rel.start, rel.end)
        if swap_ends(rel.start, rel.end, rel.symmetric):
            ends = (rel.end, rel.start)
        key = (ends, rel.type, tuple(sorted((k, str(v)) for k, v in rel.attributes.items())))
        if key in seen:
            continue
        seen.add(key)
        if rel.symmetric and ends[0] != rel.start:  # one fixed direction for the pair
            rel = rel.model_copy(update={"start": rel.end, "start_name": rel.end_name, "start_type": rel.end_type,
                                         "end": rel.start, "end_name": rel.start_name, "end_type": rel.start_type})
        relations.append(rel)
    truncated = len(relations) > limit or len(rows) == fetch
    return Neighbourhood(query=name, entities=entities, relations=relations[:limit], limit=limit, truncated=truncated)


def communities_page(driver: neo4j.Driver, db: Neo4jSettings, *, level: int | None = None, limit: int = 50,
                     offset: int = 0, members: int = 10) -> CommunityPage:
    """One page of communities with their reports (title, summary) and first member names."""
    if level is not None:
        _check_range("level", level, 0, 1000)
    _check_range("limit", limit, 1, MAX_COMMUNITIES)
    _check_range("offset", offset, 0, 10_000_000)
    _check_range("members", members, 0, MAX_MEMBERS)
    counts = read_all(driver, db, cypher.service_community_counts(), level=level)
    total = int(counts[0]["total"]) if counts else 0
    levels = sorted(int(x) for x in (counts[0]["levels"] if counts else []))
    rows = read_all(driver, db, cypher.service_communities(), level=level, limit=limit, offset=offset,
                    members=members)
    items = [CommunityOut(id=r["id"], level=r["level"], size=r["size"], title=r["title"], summary=r["summary"],
                          members=[str(m) for m in r["members"] or []]) for r in rows]
    return CommunityPage(total=total, levels=levels, offset=offset, limit=limit, items=items)


def graph_counts(driver: neo4j.Driver, db: Neo4jSettings) -> tuple[int, int]:
    """(entities, communities) of the graph."""
    rows = read_all(driver, db, cypher.service_health())
    return (int(rows[0]["entities"]), int(rows[0]["communities"])) if rows else (0, 0)
