"""DRIFT search: the broad picture from community reports, the details from local searches.

Steps of :func:`drift_search` (after Microsoft GraphRAG's DRIFT, simplified and bounded):

1. **Reports.** The community reports most similar to the question (``search.drift_reports``):
   by cosine similarity of the question's embedding to the report embeddings when the graph holds
   them (``Community.embedding``, :func:`graphrag_got.llm.embeddings.get_embedder`), else by a lexical
   score (question words found in the title, summary, findings and member names, weighted by how
   rare they are across reports). No LLM.
2. **Question retrieval.** A local search of the question itself, retrieval only (anchors matched
   deterministically, no LLM): a connective question often names what it connects.
3. **Primer** (one ``complete_json`` call per round, ``depth`` rounds): from the reports and the
   facts so far, a draft answer and at most ``followups`` follow-up questions.
4. **Follow-ups**: a local search per follow-up, **retrieval only** (``answer=False``). We chose
   retrieval only over "retrieval plus one small answer each" for the calls: a small answer costs
   one LLM call per follow-up (3 more calls by default, each ~a minute on a CPU model) and would
   only paraphrase facts that the final answer reads directly, with their citations; retrieval
   costs none. So one round is exactly one primer call (plus its one retry when the JSON is bad).
5. **Final answer** (one call, :func:`graphrag_got.search.claims.checked_answer`): reports [R..],
   facts [F..] and excerpts [C..] of every sub-search, numbered once with
   :func:`citations.number_sources` (sources only ever appended, so the ids the draft used stay
   valid), and the draft; claims (the embedded model) checked against the sources they cite, the
   language checked (asked again once), citations resolved and invented ones removed and counted.

Bounds: ``depth`` rounds, ``followups`` per round, ``max_calls`` LLM calls in all (retries
included; a round starts only when it and the final answer still fit). All are in the result.
``answer=False``: steps 1-2 only, zero LLM calls.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j
from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graphrag_got.search import cypher
from graphrag_got.config import EmbeddingSettings, FilesSettings, LLMSettings, Neo4jSettings, SearchSettings
from graphrag_got.errors import GraphragGotError, SearchError
from graphrag_got.graph.db import read_all
from graphrag_got.llm.calls import Attempt, LLMOutputError
from graphrag_got.llm.factory import get_chat_model
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.llm.usage import LLMUsage
from graphrag_got.ontology.loading import load_ontology
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.normalize import normalize_name
from graphrag_got.prompts import PromptSet, claims_answer_prompt, drift_answer_prompt, drift_primer_prompt, load_prompts
from graphrag_got.communities.store import parse_findings
from graphrag_got.search.anchors import STOPWORDS, entity_catalog
from graphrag_got.search.budget import fit_sources
from graphrag_got.search.claims import AnswerChecks, checked_answer, use_claims
from graphrag_got.search.citations import Citation, Finding, context_block, number_sources, resolve_citations
from graphrag_got.search.local import local_search, local_sources

logger = logging.getLogger(__name__)

MAX_MEMBERS = 15  # member names read per report
REPORT_CHARS = 600  # of a report's summary and findings shown to the model
MAX_FACTS = 24  # facts in the final context, all sub-searches together, shared evenly between them
MAX_CHUNKS = 4
MIN_FACTS_PER_SEARCH = 3
CHUNKS_PER_SEARCH = 1
MAX_DEPTH = 3  # the bounds settings allow, enforced for direct callers too
MAX_FOLLOWUPS = 10
PRIMER_MAX_TOKENS = 400
ANSWER_MAX_TOKENS = 700
FOLLOWUP_CHARS = 300

NO_REPORTS = ("no community has a report: run `graphrag-got communities detect` and "
              "`graphrag-got communities summarize` first")  # fmt: skip


@dataclass
class Report:
    """One community report as drift reads it."""

    id: int
    title: str
    summary: str
    findings: list[str] = field(default_factory=list)  # the statements of its key findings
    members: list[str] = field(default_factory=list)
    finding_members: list[list[str]] = field(default_factory=list)  # the members each finding is about
    rating: float | None = None
    embedding: list[float] | None = None
    score: float = 0.0  # similarity to the question (cosine, or the lexical score)
    ranking: str = "lexical"  # how ``score`` was computed: embedding | lexical

    def text(self) -> str:
        body = self.summary
        if self.findings:
            body += " " + " ".join(self.findings)
        body = " ".join(body.split())
        if len(body) > REPORT_CHARS:
            body = body[: REPORT_CHARS - 1].rsplit(" ", 1)[0] + "…"
        return f"{self.title}: {body}" if self.title else body


@dataclass
class FollowUp:
    question: str
    round: int  # 0: the question itself; 1..depth: the primer's follow-ups
    anchors: list[str] = field(default_factory=list)
    facts: int = 0
    chunks: int = 0
    error: str | None = None


@dataclass
class DriftResult(LLMUsage, AnswerChecks):
    question: str = ""
    depth: int = 1
    max_followups: int = 3
    max_calls: int = 6
    reports: list[Report] = field(default_factory=list)  # read by the primer, most similar first
    ranking: str = "lexical"  # how reports were ranked: embedding | lexical
    drafts: list[str] = field(default_factory=list)  # the primer's draft answer of each round
    followups: list[FollowUp] = field(default_factory=list)
    sources: list[Citation] = field(default_factory=list)  # the final context, numbered
    citations: list[Citation] = field(default_factory=list)
    invented_citations: int = 0
    answer: str | None = None
    rounds: int = 0  # primer rounds actually run
    stopped: str | None = None  # why fewer rounds than depth ran: "no follow-ups", "max calls"...
    warnings: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def communities(self) -> list[int]:
        return [r.id for r in self.reports]

    @property
    def anchors(self) -> list[str]:
        seen: list[str] = []
        for f in self.followups:
            seen += [a for a in f.anchors if a not in seen]
        return seen

    @property
    def bounds(self) -> dict[str, int]:
        return {"depth": self.depth, "followups": self.max_followups, "max_calls": self.max_calls,
                "reports": len(self.reports), "rounds": self.rounds}  # fmt: skip


class PrimerAnswer(BaseModel):
    answer: str = ""
    follow_ups: list[str] = Field(default_factory=list)


PRIMER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "follow_ups": {"type": "array", "items": {"type": "string"}}},
    "required": ["answer", "follow_ups"],
}


# ---------------------------------------------------------------------------------------------
# Reports and their ranking
# ---------------------------------------------------------------------------------------------


def _as_text_list(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [str(v) for v in value if isinstance(v, (str, int, float)) and str(v).strip()]
    return []


def community_reports(driver: neo4j.Driver, db: Neo4jSettings) -> list[Report]:
    """Every community with a summary, as a :class:`Report` (read-only)."""
    rows = read_all(driver, db, cypher.drift_community_reports(), members=MAX_MEMBERS)
    out = []
    for r in rows:
        props = r.get("props") or {}
        emb = props.get("embedding")
        rating = props.get("rating")
        parsed = parse_findings(props.get("findings"))  # stored as a JSON string (communities/store)
        findings = [f["statement"] for f in parsed] or _as_text_list(props.get("findings"))
        out.append(Report(
            id=int(r["id"]), title=str(props.get("title") or ""), summary=str(props.get("summary") or ""),
            findings=findings, members=[m for m in r.get("members") or [] if m],
            finding_members=[[str(m) for m in f.get("members") or []] for f in parsed],
            rating=float(rating) if isinstance(rating, (int, float)) else None,
            embedding=[float(x) for x in emb] if isinstance(emb, list) and emb else None,
        ))  # fmt: skip
    return out


_WORD = re.compile(r"\w+")


def _terms(text: str) -> list[str]:
    return [w for w in _WORD.findall(normalize_name(text)) if len(w) >= 3 and w not in STOPWORDS]


def _stem(word: str) -> str:
    """A crude stem (first 6 letters) so inflections meet: "alianzas" ~ "alianza"."""
    return word[:6]


def lexical_scores(question: str, reports: Sequence[Report]) -> list[float]:
    """Question words found in each report (title counts twice), weighted by rarity across reports."""
    q = {_stem(w) for w in _terms(question)}
    if not q or not reports:
        return [0.0] * len(reports)
    bags = []
    for r in reports:
        words = [_stem(w) for w in _terms(" ".join([r.title, r.title, r.summary, *r.findings, *r.members]))]
        bag: dict[str, int] = {}
        for w in words:
            bag[w] = bag.get(w, 0) + 1
        bags.append(bag)
    n = len(reports)
    idf = {w: math.log(1 + n / (1 + sum(1 for b in bags if w in b))) for w in q}
    return [round(sum(idf[w] * (1 + math.log(b[w])) for w in q if w in b), 4) for b in bags]


def _embedding_scores(embedding: EmbeddingSettings, question: str, reports: Sequence[Report], *, llm: LLMSettings,
                      files: FilesSettings) -> list[float] | None:
    """Cosine of the question to each report embedding, or None when that cannot be done."""
    if not reports or any(r.embedding is None for r in reports):
        return None
    try:
        from graphrag_got.llm.embeddings import get_embedder

        q = get_embedder(embedding, llm=llm, files=files).embed_query(question)
    except (GraphragGotError, ImportError, OSError) as exc:
        logger.info("drift: question not embedded (%s); ranking reports lexically", exc)
        return None
    qn = math.sqrt(sum(x * x for x in q)) or 1.0
    out = []
    for r in reports:
        e = r.embedding or []
        if len(e) != len(q):
            logger.info("drift: report embeddings have %d dimensions, the embedder %d; ranking lexically",
                        len(e), len(q))  # fmt: skip
            return None
        en = math.sqrt(sum(x * x for x in e)) or 1.0
        out.append(round(sum(a * b for a, b in zip(q, e)) / (qn * en), 4))
    return out


def rank_reports(embedding: EmbeddingSettings, question: str, reports: Sequence[Report], *, llm: LLMSettings,
                 files: FilesSettings) -> list[Report]:
    """``reports`` most similar first (ties by id), each with its ``score``; see the module docstring."""
    scores = _embedding_scores(embedding, question, reports, llm=llm, files=files)
    method = "embedding"
    if scores is None:
        scores, method = lexical_scores(question, reports), "lexical"
    for r, s in zip(reports, scores):
        r.score, r.ranking = s, method
    return sorted(reports, key=lambda r: (-r.score, -(r.rating or 0.0), r.id))


def report_citations(reports: Sequence[Report]) -> list[Citation]:
    """Reports as citations ``R1``.. in the order given."""
    return number_sources(Citation(
        id="R0", kind="report", text=r.text(), community_id=str(r.id), entities=list(r.members),
        findings=[Finding(statement=f, members=r.finding_members[i] if i < len(r.finding_members) else [])
                  for i, f in enumerate(r.findings)]) for r in reports)  # fmt: skip


# ---------------------------------------------------------------------------------------------
# The search
# ---------------------------------------------------------------------------------------------


def _source_key(c: Citation) -> tuple[str, str, str]:
    return (c.kind, " ".join(c.text.split()).lower(), c.chunk_id or "")


class _Context:
    """The sources gathered so far, in a fixed order: reports, then facts and chunks as found."""

    def __init__(self, reports: list[Citation], facts_per_search: int) -> None:
        self.items: list[Citation] = list(reports)
        self.keys = {_source_key(c) for c in reports}
        self.facts_per_search = facts_per_search

    def add(self, sources: Sequence[Citation]) -> tuple[int, int]:
        facts = chunks = 0
        have_f = sum(1 for c in self.items if c.kind == "fact")
        have_c = sum(1 for c in self.items if c.kind == "chunk")
        for c in sources:
            k = _source_key(c)
            if k in self.keys:
                continue
            if c.kind == "fact" and facts < self.facts_per_search and have_f + facts < MAX_FACTS:
                facts += 1
            elif c.kind == "chunk" and chunks < CHUNKS_PER_SEARCH and have_c + chunks < MAX_CHUNKS:
                chunks += 1
            else:
                continue
            self.keys.add(k)
            self.items.append(c)
        return facts, chunks

    def numbered(self) -> list[Citation]:
        return number_sources(self.items)


def drift_search(
    driver: neo4j.Driver,
    db: Neo4jSettings,
    question: str,
    *,
    search: SearchSettings,
    llm: LLMSettings,
    files: FilesSettings,
    embedding: EmbeddingSettings,
    chat: BaseChatModel | None = None,
    answer: bool = True,
    depth: int | None = None,
    followups: int | None = None,
    max_calls: int | None = None,
    reports: int | None = None,
    retrieval: str | None = None,
    hops: int | None = None,
    max_facts: int | None = None,
    ontology: Ontology | str | Path | None = None,
    language: str | None = None,
) -> DriftResult:
    """Answer ``question`` from community reports and local searches of follow-ups (module docstring).

    ``depth``, ``followups``, ``max_calls``, ``reports`` default to ``search.drift_*``;
    ``retrieval``, ``hops``, ``max_facts`` go to every local sub-search.
    """
    depth = search.drift_depth if depth is None else depth
    followups = search.drift_followups if followups is None else followups
    max_calls = search.drift_max_calls if max_calls is None else max_calls
    top_k = search.drift_reports if reports is None else reports
    for name, value, low, high in (("depth", depth, 1, MAX_DEPTH), ("followups", followups, 0, MAX_FOLLOWUPS),
                                   ("max_calls", max_calls, 2, 100), ("reports", top_k, 1, 50)):  # fmt: skip
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise SearchError(f"drift {name} must be an integer from {low} to {high}, got {value!r}")
    if not question.strip():
        raise SearchError("the question is empty")
    onto = load_ontology(ontology, files)
    res = DriftResult(question=question, depth=depth, max_followups=followups, max_calls=max_calls)
    t = time.perf_counter()
    ranked = rank_reports(embedding, question, community_reports(driver, db), llm=llm, files=files)
    if not ranked:
        raise SearchError(NO_REPORTS)
    res.reports = ranked[:top_k]
    res.ranking = res.reports[0].ranking
    searches = 1 + followups * depth  # the question's own search and every follow-up
    per_search = max(MIN_FACTS_PER_SEARCH, MAX_FACTS // searches)
    ctx = _Context(report_citations(res.reports), per_search)
    res.timings["reports"] = round(time.perf_counter() - t, 4)

    local_kw: dict[str, Any] = {"hops": hops, "ontology": onto, "max_facts": max_facts or per_search * 2,
                                "search": search, "llm": llm, "files": files, "embedding": embedding}
    if retrieval is not None:
        local_kw["retrieval"] = retrieval

    t = time.perf_counter()
    _follow(driver, db, res, ctx, question, 0, local_kw)
    res.timings["retrieval"] = round(time.perf_counter() - t, 4)
    if not answer:
        res.sources = ctx.numbered()
        return res

    chat = chat or get_chat_model(llm, files=files)
    prompts = load_prompts(llm.prompts_dir)
    asked = {normalize_name(question)}
    t = time.perf_counter()
    for level in range(1, depth + 1):
        remaining = max_calls - res.llm_calls
        if remaining < 2:  # a primer call and the final answer must both fit
            res.stopped = f"max calls ({max_calls}) reached before round {level}"
            break
        draft, questions = _primer(chat, res, ctx, question, followups, language, retries=min(1, remaining - 2),
                                   prompts=prompts)
        res.rounds = level
        if draft:
            res.drafts.append(draft)
        new = []
        for q in questions:
            q = " ".join(q.split())[:FOLLOWUP_CHARS]
            if q and normalize_name(q) not in asked and len(new) < followups:
                asked.add(normalize_name(q))
                new.append(q)
        if not new:
            res.stopped = f"round {level} gave no new follow-up question"
            break
        for q in new:
            _follow(driver, db, res, ctx, q, level, local_kw)
    res.timings["rounds"] = round(time.perf_counter() - t, 4)

    t = time.perf_counter()
    draft = f"\n\nDRAFT ANSWER (from the reports; correct and complete it):\n{res.drafts[-1]}" if res.drafts else ""
    as_claims = use_claims(search, chat)  # the embedded model fills cited claims (search/claims.py)
    max_ids = search.claim_max_sources
    system = (claims_answer_prompt(language, max_ids=max_ids, prompts=prompts) if as_claims
              else drift_answer_prompt(language, prompts=prompts))

    def prompt(sources: Sequence[Citation]) -> str:
        return (f"QUESTION: {question}\n\n{context_block(sources)}{draft}\n\n"
                "Answer the question from these sources only, citing their ids.")  # fmt: skip

    res.sources, dropped = fit_sources(chat, system, prompt, ctx.numbered(), ANSWER_MAX_TOKENS)
    if dropped:  # the last-ranked sources go first; the ids of the others stay
        res.warnings.append(f"{dropped} of {dropped + len(res.sources)} sources left out to fit the model's "
                            "context window")  # fmt: skip
    index = entity_catalog(driver, db, search=search)[1] if as_claims else None  # the names claims are checked by
    attempt = Attempt()
    try:
        checked = checked_answer(chat, search, llm=llm, claims=as_claims, system=system,
                                 prose_system=drift_answer_prompt(language, prompts=prompts), user=prompt(res.sources),
                                 sources=res.sources, attempt=attempt, max_tokens=ANSWER_MAX_TOKENS, question=question,
                                 language=language, index=index)  # fmt: skip
    finally:
        res.count(attempt, max(1, len(attempt.raw_responses)))
    res.answer, res.citations, res.invented_citations = checked.text, checked.citations, len(checked.invented)
    res.warnings.extend(checked.warnings)
    res.record(checked)
    if checked.invented:
        res.warnings.append(f"removed {len(checked.invented)} citation(s) not in the context: "
                            + ", ".join(checked.invented[:10]))  # fmt: skip
    res.timings["answer"] = round(time.perf_counter() - t, 4)
    return res


def _primer(chat: BaseChatModel, res: DriftResult, ctx: _Context, question: str, followups: int,
            language: str | None, retries: int, prompts: PromptSet) -> tuple[str, list[str]]:  # fmt: skip
    """One primer/refine call: (draft, follow-up questions); an unusable answer gives ("", [])."""
    prior = f"\n\nDRAFT SO FAR:\n{res.drafts[-1]}" if res.drafts else ""
    user = (f"QUESTION: {question}\n\n{context_block(ctx.numbered())}{prior}\n\n"
            f"Draft an answer and write at most {followups} follow-up questions.")  # fmt: skip
    try:
        obj, attempt = complete_json(chat, drift_primer_prompt(followups, language, prompts=prompts), user, PrimerAnswer,
                                     schema=PRIMER_SCHEMA, retries=retries, max_tokens=PRIMER_MAX_TOKENS)  # fmt: skip
    except LLMOutputError as exc:
        res.llm_calls += len(exc.raw_responses)
        res.warnings.append(f"drift primer gave no valid answer, no follow-ups searched: {exc}")
        return "", []
    res.count(attempt, len(attempt.raw_responses))
    draft = resolve_citations(obj.answer, ctx.numbered()).answer
    return draft, [q for q in obj.follow_ups if isinstance(q, str)]


def _follow(driver: neo4j.Driver, db: Neo4jSettings, res: DriftResult, ctx: _Context, q: str, level: int,
            local_kw: dict[str, Any]) -> None:  # fmt: skip
    """A retrieval-only local search of ``q``; its new facts and excerpts join the context."""
    step = FollowUp(q, level)
    try:
        lr = local_search(driver, db, q, answer=False, **{k: v for k, v in local_kw.items() if v is not None})
    except SearchError as exc:
        step.error = str(exc)
        if level:  # the question itself naming nothing is normal for a broad question
            res.warnings.append(f"follow-up {q!r}: {exc}")
    else:
        step.anchors = [a.name for a in lr.anchors]
        step.facts, step.chunks = ctx.add(local_sources(lr))
        res.warnings.extend(w for w in getattr(lr, "warnings", None) or [] if w not in res.warnings)
    res.followups.append(step)


__all__ = ["DriftResult", "FollowUp", "PrimerAnswer", "Report", "community_reports", "drift_search",
           "lexical_scores", "rank_reports", "report_citations"]  # fmt: skip
