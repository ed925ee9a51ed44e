"""Communities of the entity graph: Louvain detection, ``:Community`` nodes, LLM summaries.

    eg = read_entity_graph(driver, settings, ontology)        # read only
    comms = detect_communities(eg, resolution=1.0, seed=42)   # deterministic for a seed
    write_communities(driver, settings, comms)                # replaces previous communities
    rows = sweep(eg, [0.5, 1, 1.5, 2], seed=42)               # no writes
    run = summarize_communities(driver, settings, chat)       # one LLM call per changed community

Design choices:

* The graph is undirected. A link's weight is the sum, over the distinct relations joining the two
  entities, of the number of chunks supporting each (at least 1). A symmetric relation (stored in
  both directions) counts once. Only the ontology's relation types are read, so HAS_CHUNK,
  MENTIONS and IN_COMMUNITY never take part.
* One level: ``networkx.community.louvain_communities`` (level 0). The Louvain hierarchy
  (``louvain_partitions``) is not kept: on graphs of this size it has one or two levels that add
  nothing for questions, and one level keeps ``Entity.communityId`` unambiguous.
* Isolated entities (no relation) become singleton communities, so every entity has a
  ``communityId``. Singletons are not summarized by the LLM (their title is the entity's name,
  their summary stays null) and global search therefore skips them.
* Ids are stable: communities are sorted by size (descending), then by smallest member uid, and
  numbered from 0. Nodes are inserted in uid order so Louvain sees the same input for a seed.
* Summaries are keyed by the community's content (members with properties + relations among
  them), the model label and the prompt version. A rerun on an unchanged graph makes no LLM call:
  the node already holds a summary for that key, or the answer is in
  ``<cache_dir>/communities/<key>.json``. ``detect`` carries summaries over to a new community
  with the same content.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Any

import neo4j
import networkx as nx
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from . import cypher
from .config import Settings
from .errors import GraphragGotError, LLMError, Neo4jError
from .graphdb import read_all, session
from .llm import LLMOutputError, LLMUsage, complete_json, drop_repeated_sentences
from .ontology import RESERVED_PROPERTIES
from .progress import ProgressCallback, ProgressEvent
from .prompts import COMMUNITY_SUMMARY_VERSION, community_summary_prompt, language_tag

PROMPT_VERSION = COMMUNITY_SUMMARY_VERSION  # in every summary key: a new wording never reuses old summaries
SUMMARY_MAX_TOKENS = 450  # a 3-6 sentence summary fits; a model stuck repeating itself is cut off
LEVEL = 0
#: Fields of an entity node that are graph bookkeeping, not ontology properties.
#: Node properties of the graph model itself (the ontology refuses them as property names).
BOOKKEEPING = RESERVED_PROPERTIES
#: Bounds of one summary prompt (the embedded model has a 4k context).
MAX_PROMPT_MEMBERS = 60
MAX_PROMPT_RELATIONS = 80



# ---------------------------------------------------------------------------------------------
# Reading the entity graph
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Rel:
    start: str
    end: str
    type: str
    attributes: tuple[tuple[str, str], ...]  # the ontology's relation attributes the fact holds
    symmetric: bool
    support: int


@dataclass
class EntityGraph:
    entities: dict[str, dict[str, Any]]  # uid -> {uid, name, type, properties}
    relations: list[Rel]  # deduplicated: a symmetric relation appears once, ends in uid order
    graph: nx.Graph  # undirected, weighted (see module docstring)


def relation_types(ontology: Any) -> list[str]:
    return sorted(r.name for r in ontology.relations)


def _load_ontology(settings: Settings, ontology: Any) -> Any:
    if ontology is None or isinstance(ontology, (str, Path)):
        from .ontology import Ontology

        return Ontology.from_file(ontology or settings.ontology_path)
    return ontology


def dedupe_relations(rows: Iterable[dict[str, Any]]) -> list[Rel]:
    """One Rel per relation: both stored directions of a symmetric relation give one, ends sorted."""
    seen: dict[tuple[Any, ...], Rel] = {}
    for r in rows:
        start, end, sym = r["start"], r["end"], bool(r["symmetric"])
        if sym and end < start:
            start, end = end, start
        attrs = tuple(sorted((str(k), str(v)) for k, v in (r.get("attributes") or [])))
        key = (start, r["type"], end, attrs)
        support = int(r.get("support", 0) or 0)
        old = seen.get(key)
        if old is None or support > old.support:
            seen[key] = Rel(start, end, r["type"], attrs, sym, support)
    return [seen[k] for k in sorted(seen)]


def read_entity_graph(driver: neo4j.Driver, settings: Settings, ontology: Any = None) -> EntityGraph:
    """The entity graph from Neo4j, read only."""
    onto = _load_ontology(settings, ontology)
    ents = read_all(driver, settings, cypher.community_entities())
    rels = read_all(driver, settings, cypher.community_relations(), types=relation_types(onto),
                    attributes=list(onto.relation_attributes))
    entities = {
        r["uid"]: {"uid": r["uid"], "name": r["name"], "type": r["type"],
                   "properties": {k: v for k, v in sorted((r["properties"] or {}).items()) if k not in BOOKKEEPING}}
        for r in ents
    }  # fmt: skip
    relations = [x for x in dedupe_relations(rels) if x.start in entities and x.end in entities]
    g = nx.Graph()
    g.add_nodes_from(sorted(entities))
    for rel in relations:
        if rel.start == rel.end:
            continue
        w = max(1, rel.support)
        if g.has_edge(rel.start, rel.end):
            g[rel.start][rel.end]["weight"] += w
        else:
            g.add_edge(rel.start, rel.end, weight=w)
    return EntityGraph(entities, relations, g)


# ---------------------------------------------------------------------------------------------
# Detection
# ---------------------------------------------------------------------------------------------


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class Community:
    id: int
    level: int
    resolution: float
    members: list[str]  # sorted uids
    members_hash: str
    content_hash: str
    title: str | None = None
    summary: str | None = None
    summary_key: str | None = None

    @property
    def size(self) -> int:
        return len(self.members)


def community_content(eg: EntityGraph, members: Sequence[str]) -> tuple[str, str]:
    """The text an LLM summary of these members is written from, and its hash.

    Members with type and properties, and the relations among them (with their attributes), bounded by
    MAX_PROMPT_MEMBERS / MAX_PROMPT_RELATIONS (most connected members, best supported relations).
    """
    member_set = set(members)
    inner = [r for r in eg.relations if r.start in member_set and r.end in member_set]
    degree = {u: 0 for u in members}
    for r in inner:
        degree[r.start] += 1
        degree[r.end] += 1
    shown = sorted(members, key=lambda u: (-degree[u], u))[:MAX_PROMPT_MEMBERS]
    lines = [f"MEMBERS ({len(members)}):"]
    for uid in sorted(shown, key=lambda u: (eg.entities[u]["type"], eg.entities[u]["name"])):
        e = eg.entities[uid]
        props = "; ".join(f"{k}: {v}" for k, v in e["properties"].items())
        lines.append(f"- {e['name']} ({e['type']}{'; ' + props if props else ''})")
    if len(members) > len(shown):
        lines.append(f"- ... and {len(members) - len(shown)} more")
    best = sorted(inner, key=lambda r: (-r.support, r.start, r.type, r.end, r.attributes))[:MAX_PROMPT_RELATIONS]
    lines.append(f"RELATIONS AMONG THEM ({len(inner)}):")
    for r in sorted(best, key=lambda r: (r.start, r.type, r.end, r.attributes)):
        lines.append("- " + fact_line(eg.entities[r.start]["name"], r.type, eg.entities[r.end]["name"],
                                      dict(r.attributes)))
    if len(inner) > len(best):
        lines.append(f"- ... and {len(inner) - len(best)} more")
    text = "\n".join(lines)
    return text, _sha(text)


def fact_line(subject: str, rel_type: str, obj: str, attributes: Mapping[str, str] | None = None) -> str:
    """``Ada Lovelace WORKS_WITH Charles Babbage (since: 1833)``: a fact with its relation attributes."""
    shown = "; ".join(f"{k}: {v}" for k, v in (attributes or {}).items() if v)
    return f"{subject} {rel_type} {obj}" + (f" ({shown})" if shown else "")


def detect_communities(eg: EntityGraph, resolution: float = 1.0, seed: int = 42) -> list[Community]:
    """Louvain communities, numbered by size (descending) then smallest member uid."""
    if resolution <= 0:
        raise GraphragGotError(f"resolution must be > 0, got {resolution}")
    parts = _louvain(eg.graph, resolution, seed)
    ordered = sorted((sorted(p) for p in parts), key=lambda m: (-len(m), m[0]))
    out = []
    for i, members in enumerate(ordered):
        _, content_hash = community_content(eg, members)
        c = Community(i, LEVEL, float(resolution), members, _sha("\n".join(members)), content_hash)
        if len(members) == 1:
            c.title = eg.entities[members[0]]["name"]
        out.append(c)
    return out


def _louvain(g: nx.Graph, resolution: float, seed: int) -> list[set[str]]:
    if g.number_of_nodes() == 0:
        return []
    if g.number_of_edges() == 0:
        return [{n} for n in g.nodes]
    return list(nx.community.louvain_communities(g, weight="weight", resolution=resolution, seed=seed))


@dataclass
class SweepRow:
    resolution: float
    communities: int
    singletons: int
    largest: int
    modularity: float  # standard modularity (resolution 1) so rows compare


def sweep(eg: EntityGraph, resolutions: Sequence[float], seed: int = 42) -> list[SweepRow]:
    """Community counts per resolution; nothing is written."""
    rows = []
    for res in resolutions:
        parts = _louvain(eg.graph, res, seed) if res > 0 else None
        if parts is None:
            raise GraphragGotError(f"resolution must be > 0, got {res}")
        mod = (nx.community.modularity(eg.graph, parts, weight="weight")
               if eg.graph.number_of_edges() else 0.0)  # fmt: skip
        rows.append(SweepRow(float(res), len(parts), sum(1 for p in parts if len(p) == 1),
                             max((len(p) for p in parts), default=0), round(float(mod), 4)))  # fmt: skip
    return rows


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _batches(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def write_communities(driver: neo4j.Driver, settings: Settings, communities: list[Community]) -> dict[str, int]:
    """Replace every ``:Community`` node and ``Entity.communityId`` by ``communities``, in one
    transaction (all or nothing). A summary whose content hash is unchanged is carried over."""
    try:
        with session(driver, settings, write=True) as ses:
            ses.run(cypher.community_constraint()).consume()
            kept = {r["content_hash"]: r.data() for r in ses.run(cypher.existing_community_summaries())}
            for c in communities:
                old = kept.get(c.content_hash)
                if old and c.size > 1:
                    c.title, c.summary, c.summary_key = old["title"], old["summary"], old["summary_key"]
            comm_rows = [
                {"id": c.id, "level": c.level, "resolution": c.resolution, "size": c.size,
                 "members_hash": c.members_hash, "content_hash": c.content_hash, "title": c.title,
                 "summary": c.summary, "summary_key": c.summary_key}
                for c in communities
            ]  # fmt: skip
            member_rows = [{"uid": u, "id": c.id, "level": c.level} for c in communities for u in c.members]

            def work(tx: neo4j.ManagedTransaction) -> None:
                tx.run(cypher.delete_communities()).consume()
                tx.run(cypher.clear_entity_communities()).consume()
                for batch in _batches(comm_rows, settings.batch_size):
                    tx.run(cypher.create_communities(), rows=batch).consume()
                for batch in _batches(member_rows, settings.batch_size):
                    tx.run(cypher.link_community_members(), rows=batch).consume()

            ses.execute_write(work)
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"writing communities failed: {exc}") from exc
    return {"communities": len(comm_rows), "members": len(member_rows),
            "summaries_kept": sum(1 for c in communities if c.summary)}  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Summaries
# ---------------------------------------------------------------------------------------------


class CommunitySummary(BaseModel):
    title: str = Field(min_length=1, description="a short name for the group")
    summary: str = Field(min_length=1, description="3-6 sentences on who they are and what links them")


#: The decoding constraint, written out: ``schema.llm_schema`` drops every key named "title" (it
#: also removes the *property* called title), and length bounds make llama.cpp's grammar
#: explode (it segfaulted on maxLength 1500), so the lengths are checked in code instead.
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"title": {"type": "string"}, "summary": {"type": "string"}},
    "required": ["title", "summary"],
}
MAX_TITLE_CHARS = 120
MAX_SUMMARY_CHARS = 2000


#: The summary prompt in its default form (language of the content); see ``prompts.community_summary_prompt``.
SYSTEM_PROMPT = community_summary_prompt()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def summary_key(content_hash: str, label: str, language: str | None = None) -> str:
    """Cache key of a summary: content, model, prompt version and (when forced) the language."""
    return _sha(f"{content_hash}|{label}|{PROMPT_VERSION}{language_tag(language)}")


@dataclass
class SummarizeResult(LLMUsage):
    communities: int = 0
    eligible: int = 0  # non-singletons
    generated: int = 0
    cached: int = 0
    unchanged: int = 0
    singletons_skipped: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    export_path: str | None = None
    seconds: float = 0.0


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # torn or missing: a miss, never an error
    return data if isinstance(data, dict) and data.get("title") and data.get("summary") else None


def summarize_communities(
    driver: neo4j.Driver,
    settings: Settings,
    chat: BaseChatModel | None = None,
    *,
    ontology: Any = None,
    label: str | None = None,
    force: bool = False,
    export: bool = True,
    progress: ProgressCallback | None = None,
    language: str | None = None,
) -> SummarizeResult:
    """One LLM call per non-singleton community whose summary is missing or out of date.

    ``label`` names the model in the cache key (default: ``llm.model_label(settings)``).
    ``force`` ignores the summaries on the nodes (the disk cache still answers).
    A community whose answer stays invalid is reported in ``failed`` and left without a summary.
    ``language`` forces the summaries' language (``"English"``); None writes them in the language of
    each community's content.
    """
    from .files import write_json_atomic

    t0 = time.perf_counter()
    eg = read_entity_graph(driver, settings, ontology)
    stored = read_all(driver, settings, cypher.communities_with_members())
    if not stored:
        raise GraphragGotError("the graph has no communities: run `graphrag-got communities detect` first")
    if label is None:
        from .llm import model_label

        label = model_label(settings)
    res = SummarizeResult(communities=len(stored))
    cache_dir = settings.cache_dir / "communities"
    rows: list[dict[str, Any]] = []
    todo: list[tuple[dict[str, Any], str, str]] = []
    for rec in stored:
        members = [m["uid"] for m in rec["members"] if m.get("uid") in eg.entities]
        if len(members) < 2:
            res.singletons_skipped += 1
            continue
        res.eligible += 1
        text, content_hash = community_content(eg, members)
        key = summary_key(content_hash, label, language)
        if not force and rec["summary_key"] == key and rec["summary"]:
            res.unchanged += 1
            continue
        hit = _read_json(cache_dir / f"{key}.json")
        if hit is not None:
            res.cached += 1
            rows.append({"id": rec["id"], "title": hit["title"], "summary": hit["summary"], "summary_key": key})
            continue
        todo.append((dict(rec), text, key))

    total = len(todo)
    system = community_summary_prompt(language)
    if total:
        if chat is None:
            from .llm import get_chat_model

            chat = get_chat_model(settings)
        lock = threading.Lock()
        done = 0

        def one(rec: dict[str, Any], text: str, key: str) -> tuple[Any, ...]:
            """(rec, key, summary or None, attempt or None, error or None, calls made)"""
            try:
                obj, attempt = complete_json(chat, system, f"COMMUNITY {rec['id']}\n{text}",
                                             CommunitySummary, schema=SUMMARY_SCHEMA,
                                             max_tokens=SUMMARY_MAX_TOKENS)
                return rec, key, obj, attempt, None, len(attempt.raw_responses)
            except LLMOutputError as exc:
                return rec, key, None, None, str(exc), len(exc.raw_responses)
            except LLMError as exc:
                return rec, key, None, None, str(exc), 1

        with ThreadPoolExecutor(max_workers=max(1, settings.concurrency)) as pool:
            futures = [pool.submit(one, *t) for t in todo]
            for fut in as_completed(futures):
                rec, key, obj, attempt, error, calls = fut.result()
                with lock:
                    done += 1
                    res.count(attempt, calls)
                    if obj is None:
                        res.failed.append({"id": rec["id"], "error": error})
                    else:
                        res.generated += 1
                        record = {"title": _clip(obj.title, MAX_TITLE_CHARS),
                                  "summary": _clip(drop_repeated_sentences(obj.summary), MAX_SUMMARY_CHARS), "model": label,
                                  "prompt_version": PROMPT_VERSION, "community": rec["id"],
                                  "raw_responses": attempt.raw_responses if attempt else []}  # fmt: skip
                        write_json_atomic(cache_dir / f"{key}.json", record)
                        rows.append({"id": rec["id"], "title": record["title"], "summary": record["summary"],
                                     "summary_key": key})  # fmt: skip
                    if progress is not None:
                        progress(ProgressEvent(step="summaries", done=done, total=total, message=str(rec["id"]),
                                               stats={"LLM calls": res.llm_calls, "failed": len(res.failed)},
                                               finished=done >= total))
    if rows:
        try:
            with session(driver, settings, write=True) as ses:
                for batch in _batches(sorted(rows, key=lambda r: r["id"]), settings.batch_size):
                    ses.execute_write(lambda tx, b=batch: tx.run(cypher.set_community_summaries(), rows=b).consume())
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"writing community summaries failed: {exc}") from exc
    if export:
        path = Path(settings.out_dir) / "communities.json"
        write_json_atomic(path, export_communities(driver, settings))
        res.export_path = str(path)
    res.failed.sort(key=lambda f: f["id"])
    res.seconds = round(time.perf_counter() - t0, 3)
    return res


def export_communities(driver: neo4j.Driver, settings: Settings) -> dict[str, Any]:
    """The stored communities as a JSON-ready dict (``communities.json``)."""
    records = read_all(driver, settings, cypher.communities_with_members())
    comms = []
    for r in records:
        comms.append({
            "id": r["id"], "level": r["level"], "resolution": r["resolution"], "size": r["size"],
            "title": r["title"], "summary": r["summary"], "members_hash": r["members_hash"],
            "members": [{"uid": m["uid"], "name": m["name"], "type": m["type"]} for m in r["members"] if m.get("uid")],
        })  # fmt: skip
    return {"format": "graphrag_got.communities/1", "prompt_version": PROMPT_VERSION, "communities": comms}


def stored_communities(driver: neo4j.Driver, settings: Settings) -> list[dict[str, Any]]:
    return export_communities(driver, settings)["communities"]


__all__ = [
    "Community", "CommunitySummary", "EntityGraph", "Rel", "SummarizeResult", "SweepRow",
    "community_content", "dedupe_relations", "detect_communities", "export_communities", "fact_line",
    "read_entity_graph", "relation_types", "stored_communities", "summarize_communities", "sweep",
    "write_communities",
]  # fmt: skip
