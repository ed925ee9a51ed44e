"""Communities in Neo4j: writing a detection as ``:Community`` nodes, reading them back, the export.

    write_communities(driver, settings.neo4j, comms, communities=settings.communities,
                      graph_settings=settings.graph)                  # replaces previous communities
    data = export_communities(driver, settings.neo4j, llm=settings.llm)  # communities.json

Every membership is an ``IN_COMMUNITY`` relationship with ``communityLevel``; the Community node has
``level`` and (below level 0) ``parent``. A new detection carries a report (and its embedding) over
to a community whose content hash is unchanged. The report's findings are stored as a JSON string
(:func:`parse_findings` reads them back), and so are the records its check left out (``left_out``,
``unbacked_kept``, :func:`parse_records`; :mod:`graphrag_got.communities.check`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

import neo4j

from graphrag_got.communities import cypher
from graphrag_got.communities.detect import Community, PriorCommunity
from graphrag_got.config import CommunitySettings, GraphSettings, LLMSettings, Neo4jSettings
from graphrag_got.errors import Neo4jError
from graphrag_got.graph.db import read_all, run_schema, session
from graphrag_got.graph.lock import graph_lock
from graphrag_got.prompts import COMMUNITY_REPORT, load_prompts

logger = logging.getLogger(__name__)


def batches(rows: list[dict[str, Any]], size: int) -> Iterable[list[dict[str, Any]]]:
    """``rows`` in consecutive slices of ``size`` (one UNWIND batch each)."""
    for i in range(0, len(rows), size):
        yield rows[i : i + size]


def write_communities(driver: neo4j.Driver, db: Neo4jSettings, comms: list[Community], *,
                      communities: CommunitySettings, graph_settings: GraphSettings) -> dict[str, int]:
    """Replace every ``:Community`` node and ``Entity.communityId`` by ``comms``, in one
    transaction (all or nothing). A report (with its embedding) whose content hash is unchanged is
    carried over. Runs under the graph lock (:mod:`graphrag_got.graph.lock`): never while a load writes."""
    with graph_lock(driver, db, graph_settings, command="community write"):
        return _write_communities(driver, db, comms, communities=communities, graph_settings=graph_settings)


def _write_communities(driver: neo4j.Driver, db: Neo4jSettings, comms: list[Community], *,
                       communities: CommunitySettings, graph_settings: GraphSettings) -> dict[str, int]:
    try:
        with session(driver, db, write=True) as ses:
            run_schema(ses, [cypher.community_constraint()])  # safe when several writers set it up at once
            kept = {r["content_hash"]: r.data() for r in ses.run(cypher.existing_community_summaries())}
            for c in comms:
                old = kept.get(c.content_hash)
                if old and c.size > 1:
                    c.title, c.summary, c.summary_key = old["title"], old["summary"], old["summary_key"]
                    c.findings, c.rating = old.get("findings"), old.get("rating")
                    c.rating_explanation = old.get("rating_explanation")
                    c.left_out, c.unbacked_kept = old.get("left_out"), old.get("unbacked_kept")
                    c.report_check = old.get("report_check")
                    c.embedding, c.embedding_hash = old.get("embedding"), old.get("embedding_hash")
            comm_rows = [
                {"id": c.id, "level": c.level, "parent": c.parent, "algorithm": c.algorithm,
                 "resolution": c.resolution, "seed": communities.seed, "size": c.size,
                 "members_hash": c.members_hash, "content_hash": c.content_hash, "inner_hash": c.inner_hash,
                 "title": c.title, "summary": c.summary, "findings": c.findings,
                 "rating": c.rating, "rating_explanation": c.rating_explanation, "left_out": c.left_out,
                 "unbacked_kept": c.unbacked_kept, "report_check": c.report_check, "summary_key": c.summary_key}
                for c in comms
            ]  # fmt: skip
            member_rows = [{"uid": u, "id": c.id, "level": c.level} for c in comms for u in c.members]
            vector_rows = [{"id": c.id, "embedding": [float(x) for x in c.embedding], "hash": c.embedding_hash}
                           for c in comms if c.embedding and c.summary]  # fmt: skip

            def work(tx: neo4j.ManagedTransaction) -> None:
                tx.run(cypher.delete_communities()).consume()
                tx.run(cypher.clear_entity_communities()).consume()
                for batch in batches(comm_rows, graph_settings.batch_size):
                    tx.run(cypher.create_communities(), rows=batch).consume()
                for batch in batches(member_rows, graph_settings.batch_size):
                    tx.run(cypher.link_community_members(), rows=batch).consume()
                for batch in batches(vector_rows, graph_settings.batch_size):
                    tx.run(cypher.set_community_embeddings(), rows=batch).consume()

            ses.execute_write(work)
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
        raise Neo4jError(f"writing communities failed: {exc}") from exc
    return {"communities": len(comm_rows), "members": len(member_rows),
            "summaries_kept": sum(1 for c in comms if c.summary)}  # fmt: skip


def previous_communities(driver: neo4j.Driver, db: Neo4jSettings, *, communities: CommunitySettings) -> list[PriorCommunity]:
    """The communities an incremental detection may keep: those in the graph when they were
    detected by Leiden with the resolution and seed of ``communities`` (else none: detect from scratch,
    and the log says why)."""
    cs = communities
    if cs.algorithm != "leiden":
        return []
    rows = read_all(driver, db, cypher.previous_communities())
    if not rows:
        return []
    how = {(r["algorithm"], r["resolution"], r["seed"]) for r in rows}
    if how != {("leiden", float(cs.resolution), cs.seed)}:
        logger.info("the communities in the graph were detected with other settings (%s): detecting from scratch",
                    ", ".join(f"{a} resolution {r} seed {s}" for a, r, s in sorted(how, key=str)))
        return []
    return [PriorCommunity(tuple(r["members"]), r["inner_hash"], r["id"], r["level"] or 0,
                           r["parent"]) for r in rows]  # fmt: skip


def parse_findings(value: Any) -> list[dict[str, Any]]:
    """The findings stored on a node (a JSON string) as a list; anything unreadable is no finding."""
    if isinstance(value, list):
        items = value
    elif isinstance(value, str) and value:
        try:
            items = json.loads(value)
        except json.JSONDecodeError:
            return []
    else:
        return []
    return [i for i in items if isinstance(i, dict) and isinstance(i.get("statement"), str)] if isinstance(items, list) else []


def parse_records(value: Any) -> list[dict[str, Any]]:
    """The left-out records of a report as stored on a node (a JSON string) or in a record (a list);
    anything unreadable is no record."""
    if isinstance(value, str) and value:
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return []
    if not isinstance(value, list):
        return []
    return [r for r in value if isinstance(r, dict) and isinstance(r.get("statement"), str)]


def export_communities(driver: neo4j.Driver, db: Neo4jSettings, *, llm: LLMSettings) -> dict[str, Any]:
    """The stored communities as a JSON-ready dict (``communities.json``)."""
    records = read_all(driver, db, cypher.communities_with_members())
    comms = []
    for r in records:
        comms.append({
            "id": r["id"], "level": r["level"], "parent": r["parent"], "algorithm": r["algorithm"],
            "resolution": r["resolution"], "size": r["size"], "title": r["title"], "summary": r["summary"],
            "findings": parse_findings(r["findings"]), "rating": r["rating"],
            "rating_explanation": r["rating_explanation"], "left_out": parse_records(r["left_out"]),
            "unbacked_kept": parse_records(r["unbacked_kept"]), "report_check": r["report_check"],
            "members_hash": r["members_hash"],
            "members": [{"uid": m["uid"], "name": m["name"], "type": m["type"]} for m in r["members"] if m.get("uid")],
        })  # fmt: skip
    version = load_prompts(llm.prompts_dir).version(COMMUNITY_REPORT)
    return {"format": "graphrag_got.communities/2", "prompt_version": version, "communities": comms}


def stored_communities(driver: neo4j.Driver, db: Neo4jSettings, *, llm: LLMSettings) -> list[dict[str, Any]]:
    return export_communities(driver, db, llm=llm)["communities"]


__all__ = [
    "batches", "export_communities", "parse_findings", "parse_records", "previous_communities", "stored_communities",
    "write_communities"
]  # fmt: skip
