"""LLM reports of communities: the report model and prompt, its cache, :func:`summarize_communities`.

    run = summarize_communities(driver, settings.neo4j, chat, llm=settings.llm, files=settings.files,
                                embedding=settings.embedding, graph_settings=settings.graph)  # one LLM call per changed report

Reports (title, summary, key findings citing members, importance rating 0-10 with its reason) are
written from the members with their properties, the relations among them
(:func:`graphrag_got.communities.graph.community_content`) and a few chunk excerpts (the chunks
mentioning most members, bounded in characters). A report is keyed by that prompt text, the model
label and the prompt version; a rerun on an unchanged graph makes no LLM call: the node already
holds a report for that key, or the answer is in ``<cache_dir>/communities/<key>.json``. With a
``check`` (:mod:`graphrag_got.communities.check`), every report stored is checked against its
community's facts first, the cached ones too; a report stored before that check (or by another version
of it) is checked again from the cache or the node, never asked again. After the reports,
:func:`graphrag_got.communities.embed.embed_reports` embeds them, and ``communities.json`` is exported.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Mapping

import neo4j
from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field, field_validator

from graphrag_got.common.normalize import normalize_name
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.communities import cypher
from graphrag_got.communities.check import ReportCheck, apply_check, stored_answer
from graphrag_got.communities.embed import SummarizeResult, embed_reports
from graphrag_got.communities.graph import (EntityGraph, Rel, community_content, read_entity_graph, relations_inside,
                                            sha)
from graphrag_got.communities.store import batches, export_communities
from graphrag_got.config import EmbeddingSettings, FilesSettings, GraphSettings, LLMSettings, Neo4jSettings
from graphrag_got.errors import GraphragGotError, LLMError, Neo4jError
from graphrag_got.graph.db import read_all, session
from graphrag_got.llm.calls import LLMOutputError, drop_repeated_sentences
from graphrag_got.llm.concurrency import calls_in_flight
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import (COMMUNITY_REPORT, COMMUNITY_SUMMARY_VERSION, community_summary_prompt, language_tag,
                                  load_prompts)

logger = logging.getLogger(__name__)

PROMPT_VERSION = COMMUNITY_SUMMARY_VERSION  # in every report key: a new wording never reuses old reports
SUMMARY_MAX_TOKENS = 700  # title, summary, a few findings and a rating fit; a model stuck repeating is cut off
#: Bounds of the source excerpts of one report prompt.
MAX_EXCERPTS = 3  # chunks quoted in a report prompt
MAX_EXCERPT_CHARS = 400  # characters of one chunk excerpt
MAX_EXCERPTS_CHARS = 1000  # characters of all excerpts of one prompt
#: Bounds of a report as stored.
MAX_TITLE_CHARS = 120
MAX_SUMMARY_CHARS = 2000
MAX_FINDINGS = 6
MAX_FINDING_CHARS = 300
MAX_FINDING_MEMBERS = 8
MAX_RATING_EXPLANATION_CHARS = 300


class Finding(BaseModel):
    statement: str = Field(min_length=1, description="one short statement about the group")
    members: list[str] = Field(default_factory=list, description="names of the members the statement is about")


class CommunityReport(BaseModel):
    """One community report as the model writes it. Only title and summary are required: a small
    model that leaves out the findings or the rating still gives a usable report."""

    title: str = Field(min_length=1, description="a short name for the group")
    summary: str = Field(min_length=1, description="3-6 sentences on who they are and what links them")
    findings: list[Finding] = Field(default_factory=list)
    rating: float | None = Field(default=None, description="importance of the group to the corpus, 0-10")
    rating_explanation: str = ""

    @field_validator("rating", mode="before")
    @classmethod
    def _clamp_rating(cls, value: Any) -> Any:
        """Out-of-range ratings are clamped to 0-10 (a retry for that would waste a call)."""
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return min(10.0, max(0.0, float(value)))
        return value


#: Kept for callers of the one-summary era: a report is a summary with findings and a rating.
CommunitySummary = CommunityReport

#: The decoding constraint, written out: ``schema.llm_schema`` drops every key named "title" (it
#: also removes the *property* called title), and length bounds make llama.cpp's grammar
#: explode (it segfaulted on maxLength 1500), so the lengths are checked in code instead. Arrays
#: are bounded (small models otherwise repeat items until max_tokens).
SUMMARY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "summary": {"type": "string"},
        "findings": {"type": "array", "maxItems": MAX_FINDINGS, "items": {
            "type": "object",
            "properties": {"statement": {"type": "string"},
                           "members": {"type": "array", "maxItems": MAX_FINDING_MEMBERS, "items": {"type": "string"}}},
            "required": ["statement", "members"]}},
        "rating": {"type": "number"},
        "rating_explanation": {"type": "string"},
    },
    "required": ["title", "summary", "findings", "rating", "rating_explanation"],
}  # fmt: skip
REPORT_SCHEMA = SUMMARY_SCHEMA

#: The report prompt in its default form (language of the content); see ``prompts.community_summary_prompt``.
SYSTEM_PROMPT = community_summary_prompt()


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if limit <= 1:
        return ""
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def summary_key(content_hash: str, label: str, language: str | None = None, version: str = PROMPT_VERSION) -> str:
    """Cache key of a report: its prompt content, model, prompt version (of the prompt in use: a custom
    one's has its digest) and (when forced) the language."""
    return sha(f"{content_hash}|{label}|{version}{language_tag(language)}")


def excerpts_block(chunks: Sequence[Mapping[str, Any]]) -> str:
    """The ``SOURCE EXCERPTS`` part of a report prompt: at most MAX_EXCERPTS chunks (as given: the ones
    mentioning most members first), each cut to MAX_EXCERPT_CHARS, all within MAX_EXCERPTS_CHARS."""
    lines: list[str] = []
    budget = MAX_EXCERPTS_CHARS
    for ch in list(chunks)[:MAX_EXCERPTS]:
        text = _clip(str(ch.get("text") or ""), min(MAX_EXCERPT_CHARS, budget))
        if not text or budget <= 0:
            break
        budget -= len(text)
        lines.append(f"- [{ch.get('id')}] {text}")
    return ("SOURCE EXCERPTS:\n" + "\n".join(lines)) if lines else ""


def clean_findings(findings: Sequence[Finding], member_names: Sequence[str]) -> list[dict[str, Any]]:
    """Findings as stored: statements clipped, at most MAX_FINDINGS, each citing only real members.

    A cited name is kept when it is a member's name (compared normalized) and written as the member
    is named; members named in the statement itself are cited too. Invented names are dropped.
    """
    by_key = {normalize_name(n): n for n in member_names}
    out: list[dict[str, Any]] = []
    for f in list(findings)[:MAX_FINDINGS]:
        statement = _clip(drop_repeated_sentences(f.statement), MAX_FINDING_CHARS)
        if not statement:
            continue
        cited: list[str] = []
        for name in f.members:
            real = by_key.get(normalize_name(name))
            if real and real not in cited:
                cited.append(real)
        text_words = f" {_words(statement)} "
        for key, real in sorted(by_key.items()):
            if _words(key) and f" {_words(key)} " in text_words and real not in cited:
                cited.append(real)
        out.append({"statement": statement, "members": cited[:MAX_FINDING_MEMBERS]})
    return out


def _words(text: str) -> str:
    """``text`` normalized to its words separated by single spaces (punctuation dropped)."""
    return " ".join(re.findall(r"\w+", normalize_name(text)))


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # torn or missing: a miss, never an error
    return data if isinstance(data, dict) and data.get("title") and data.get("summary") else None


def _excerpts(driver: neo4j.Driver, db: Neo4jSettings, batch_size: int, groups: list[tuple[int, list[str]]]) -> dict[int, str]:
    """Community id -> its SOURCE EXCERPTS block (the chunks mentioning most of its members)."""
    out: dict[int, str] = {}
    rows = [{"id": cid, "uids": uids} for cid, uids in groups]
    for batch in batches(rows, max(1, min(batch_size, 500))):
        for r in read_all(driver, db, cypher.community_chunk_excerpts(), rows=batch, limit=MAX_EXCERPTS):
            out[r["id"]] = excerpts_block(r["chunks"] or [])
    return out


def report_record(obj: CommunityReport, member_names: Sequence[str]) -> dict[str, Any]:
    """What is cached and stored of one model report (clipped, findings checked against the members)."""
    return {
        "title": _clip(obj.title, MAX_TITLE_CHARS),
        "summary": _clip(drop_repeated_sentences(obj.summary), MAX_SUMMARY_CHARS),
        "findings": clean_findings(obj.findings, member_names),
        "rating": None if obj.rating is None else round(float(obj.rating), 1),
        "rating_explanation": _clip(obj.rating_explanation, MAX_RATING_EXPLANATION_CHARS),
    }


def _json_list(items: Any) -> str | None:
    return json.dumps(items, ensure_ascii=False) if items else None


def _node_row(cid: int, record: Mapping[str, Any], key: str) -> dict[str, Any]:
    return {"id": cid, "title": record["title"], "summary": record["summary"],
            "findings": _json_list(record.get("findings")),
            "rating": record.get("rating"), "rating_explanation": record.get("rating_explanation") or None,
            "left_out": _json_list(record.get("left_out")), "unbacked_kept": _json_list(record.get("unbacked_kept")),
            "report_check": record.get("report_check"), "summary_key": key}  # fmt: skip


def summarize_communities(
    driver: neo4j.Driver,
    db: Neo4jSettings,
    chat: BaseChatModel | None = None,
    *,
    ontology: Ontology | str | Path | None = None,
    label: str | None = None,
    force: bool = False,
    export: bool = True,
    progress: ProgressCallback | None = None,
    language: str | None = None,
    embedder: Embeddings | None = None,
    embed: bool | None = None,
    graph: EntityGraph | None = None,
    check: ReportCheck | None = None,
    llm: LLMSettings,
    files: FilesSettings,
    embedding: EmbeddingSettings,
    graph_settings: GraphSettings,
) -> SummarizeResult:
    """One LLM call per non-singleton community whose report is missing or out of date, then the
    report embeddings.

    ``label`` names the model in the cache key (default: ``llm.factory.model_label(llm)``).
    ``force`` ignores the reports on the nodes (the disk cache still answers).
    A community whose answer stays invalid is reported in ``failed`` and left without a report.
    ``language`` forces the reports' language (``"English"``); None writes them in the language of
    each community's content. ``embed`` (default ``embedding.enabled``) embeds the reports with
    ``embedder`` (default ``embeddings.get_embedder(embedding, llm=llm, files=files)``);
    an embedding failure is recorded in ``embedding_error``, never fatal (the reports are written).
    ``graph``: the entity graph when the caller has just read it (detection), instead of reading it again.
    ``check``: what checks each report against its community's facts before it is stored
    (:mod:`graphrag_got.communities.check`; ``graphrag_got.pipeline.report_check.FactsCheck``); None
    stores reports as the model wrote them.
    The sections: ``db`` the database, ``llm`` the chat model and prompts, ``files`` the cache and
    export folders, ``embedding`` the report embeddings, ``graph_settings`` the write batch size.
    """
    from graphrag_got.common.files import write_json_atomic

    t0 = time.perf_counter()
    prompts = load_prompts(llm.prompts_dir)
    version = prompts.version(COMMUNITY_REPORT)
    eg = graph if graph is not None else read_entity_graph(driver, db, ontology, cooccurrence=False, files=files)
    stored = read_all(driver, db, cypher.communities_with_members())
    if not stored:
        raise GraphragGotError("the graph has no communities: run `graphrag-got communities detect` first")
    if label is None:
        from graphrag_got.llm.factory import model_label

        label = model_label(llm)
    res = SummarizeResult(communities=len(stored), report_check=check.version if check is not None else None)
    cache_dir = files.cache_dir / "communities"
    rows: list[dict[str, Any]] = []
    todo: list[tuple[dict[str, Any], str, str, list[str]]] = []
    community: dict[int, tuple[list[str], list[Rel]]] = {}  # id -> (members, relations among them): the check's input

    def checked(cid: int, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The record stored for a report: checked when there is a check, counted either way."""
        record = apply_check(check, eg, answer, *community[cid]) if check is not None else dict(answer)
        res.count_check(record.get("left_out"), record.get("unbacked_kept"))
        return record

    eligible: list[tuple[dict[str, Any], list[str]]] = []
    for rec in stored:
        members = [m["uid"] for m in rec["members"] if m.get("uid") in eg.entities]
        if len(members) < 2:
            res.singletons_skipped += 1
            continue
        eligible.append((rec, members))
    res.eligible = len(eligible)
    excerpts = _excerpts(driver, db, graph_settings.batch_size, [(rec["id"], members) for rec, members in eligible])
    inner = relations_inside(eg, [members for _, members in eligible])
    for (rec, members), among in zip(eligible, inner):
        content, _ = community_content(eg, members, among)
        text = content + ("\n" + excerpts[rec["id"]] if excerpts.get(rec["id"]) else "")
        key = summary_key(sha(text), label, language, version)
        names = [eg.entities[u]["name"] for u in members]
        community[rec["id"]] = (members, among)
        if not force and rec["summary_key"] == key and rec["summary"]:
            if check is None or rec.get("report_check") == check.version:
                res.unchanged += 1
                res.count_check(rec.get("left_out"), rec.get("unbacked_kept"))
                continue
            # stored before this check (or by another version of it): checked again, never asked again
            answer = _read_json(cache_dir / f"{key}.json") or stored_answer(rec)
            res.rechecked += 1
            rows.append(_node_row(rec["id"], checked(rec["id"], answer), key))
            continue
        hit = _read_json(cache_dir / f"{key}.json")
        if hit is not None:
            res.cached += 1
            rows.append(_node_row(rec["id"], checked(rec["id"], hit), key))
            continue
        todo.append((dict(rec), text, key, names))

    total = len(todo)
    system = community_summary_prompt(language, prompts=prompts)
    if total:
        if chat is None:
            from graphrag_got.llm.factory import get_chat_model

            chat = get_chat_model(llm, files=files)
        lock = threading.Lock()
        done = 0

        def one(rec: dict[str, Any], text: str, key: str, names: list[str]) -> tuple[Any, ...]:
            """(rec, key, names, report or None, attempt or None, error or None, calls made)"""
            try:
                obj, attempt = complete_json(chat, system, f"COMMUNITY {rec['id']}\n{text}",
                                             CommunityReport, schema=SUMMARY_SCHEMA,
                                             max_tokens=SUMMARY_MAX_TOKENS)
                return rec, key, names, obj, attempt, None, len(attempt.raw_responses)
            except LLMOutputError as exc:
                return rec, key, names, None, None, str(exc), len(exc.raw_responses)
            except LLMError as exc:
                return rec, key, names, None, None, str(exc), 1

        with ThreadPoolExecutor(max_workers=calls_in_flight(llm, chat).calls) as pool:
            futures = [pool.submit(one, *t) for t in todo]
            for fut in as_completed(futures):
                rec, key, names, obj, attempt, error, calls = fut.result()
                with lock:
                    done += 1
                    res.count(attempt, calls)
                    if obj is None:
                        res.failed.append({"id": rec["id"], "error": error})
                    else:
                        res.generated += 1
                        record = report_record(obj, names)
                        record.update({"model": label, "prompt_version": version, "community": rec["id"],
                                       "raw_responses": attempt.raw_responses if attempt else []})  # fmt: skip
                        stored_record = checked(rec["id"], record)
                        if check is not None:  # the model's report as parsed, and what the check left out of it
                            record.update({k: stored_record[k] for k in ("left_out", "unbacked_kept", "report_check")})
                        write_json_atomic(cache_dir / f"{key}.json", record)
                        rows.append(_node_row(rec["id"], stored_record, key))
                    if progress is not None:
                        progress(ProgressEvent(step="summaries", done=done, total=total, message=str(rec["id"]),
                                               stats={"LLM calls": res.llm_calls, "failed": len(res.failed)},
                                               finished=done >= total))
    if rows:
        try:
            with session(driver, db, write=True) as ses:
                for batch in batches(sorted(rows, key=lambda r: r["id"]), graph_settings.batch_size):
                    ses.execute_write(lambda tx, b=batch: tx.run(cypher.set_community_summaries(), rows=b).consume())
        except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError) as exc:
            raise Neo4jError(f"writing community reports failed: {exc}") from exc
    if embedding.enabled if embed is None else embed:
        t1 = time.perf_counter()
        try:
            embed_reports(driver, db, embedder, res, embedding=embedding, llm=llm, files=files, progress=progress)
        except GraphragGotError as exc:
            if isinstance(exc, Neo4jError):
                raise
            res.embedding_error = str(exc)
            logger.warning("community reports were not embedded (global search will rank by rating): %s", exc)
        res.embedding_seconds = round(time.perf_counter() - t1, 3)
    if export:
        path = Path(files.out_dir) / "communities.json"
        write_json_atomic(path, export_communities(driver, db, llm=llm))
        res.export_path = str(path)
    res.failed.sort(key=lambda f: f["id"])
    res.seconds = round(time.perf_counter() - t0, 3)
    return res


__all__ = [
    "CommunityReport", "CommunitySummary", "Finding", "PROMPT_VERSION", "SUMMARY_SCHEMA", "clean_findings",
    "excerpts_block", "report_record", "summarize_communities", "summary_key"
]  # fmt: skip
