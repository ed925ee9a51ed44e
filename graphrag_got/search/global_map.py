"""What the map step of global search asks of each report, and how the reduce step reads the answers:
one :class:`MapForm` per way (``search.global_map``).

* ``extract`` (:class:`RatedExtract`): one relevance rating (0-10) and a 1-3 sentence extract per
  report; the reduce step reads every kept report's extract and key findings.
* ``points`` (:class:`ScoredPoints`, as Microsoft GraphRAG's global search maps): each report gives
  at most :data:`MAX_POINTS` points about the question, each scored 0-10; a report's relevance is its
  best point. The reduce step reads the best points across the reports, taken in turns (every
  report's best point before any report's second, then by score), at most :data:`MAX_REDUCE_POINTS`,
  each under its report's id, so a corpus-wide question is answered from several reports and not
  from the one rated highest (issue 52: five kept claims, all citing one report about one house).
  After the answer's check, when its kept claims cite fewer than :data:`COVER_REPORTS` reports and
  more reports have points, the best point of each uncited report joins the answer as a claim
  citing that report, through the same support check (:func:`cover_reports`), and is counted.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, Field

from langchain_core.language_models import BaseChatModel

from graphrag_got.common.language import question_language
from graphrag_got.common.prompt_files import PromptSet
from graphrag_got.config import LLMSettings, SearchSettings
from graphrag_got.llm.calls import Attempt
from graphrag_got.prompts import claims_answer_prompt, load_prompts, map_points_prompt, map_prompt
from graphrag_got.search.anchors import MatchIndex
from graphrag_got.search.citations import Citation
from graphrag_got.search.claims import CheckedAnswer, Claim, by_model, checked_answer, shown_answer, use_claims
from graphrag_got.search.extractive import CorePiece, extractive_answer, whole_sentences
from graphrag_got.search.support import SupportReport, check_claims

#: Most points one report gives, points the reduce step reads, reports a global answer should cite,
#: points in an extractive global answer's core.
MAX_POINTS = 3
MAX_REDUCE_POINTS = 12
COVER_REPORTS = 3
CORE_POINTS = 8
REDUCE_MAX_TOKENS = 800


class MapAnswer(BaseModel):
    relevance: int = Field(ge=0, le=10, description="0 = unrelated, 10 = answers the question directly")
    extract: str = Field(description="what this community says that helps answer, in 1-3 sentences; empty if nothing")


class MapPoint(BaseModel):
    description: str = Field(description="one sentence about the question, naming the entities it is about")
    score: int = Field(ge=0, le=10, description="0 = no help, 10 = answers the question directly")


class MapPoints(BaseModel):
    points: list[MapPoint] = Field(default_factory=list)


#: Written out: plain types only, the 0-10 ranges are checked by the models (and retried once).
MAP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"relevance": {"type": "integer"}, "extract": {"type": "string"}},
    "required": ["relevance", "extract"],
}
POINTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"points": {"type": "array", "items": {
        "type": "object", "properties": {"description": {"type": "string"}, "score": {"type": "integer"}},
        "required": ["description", "score"]}}},
    "required": ["points"],
}  # fmt: skip


@dataclass
class MapReading:
    """One map answer as the search keeps it."""

    relevance: int
    extract: str
    points: list[MapPoint] = field(default_factory=list)


class MapForm(Protocol):
    """One way of mapping a report for a question (module docstring)."""

    name: str
    answer_model: type[BaseModel]
    schema: dict[str, Any]
    max_tokens: int

    def system(self, language: str | None, prompts: PromptSet) -> str: ...

    def read(self, answer: Any) -> MapReading: ...

    def reduce_text(self, kept: Sequence[tuple[Citation, Any]]) -> str: ...


class RatedExtract:
    """A relevance rating and an extract per report; the reduce step reads extracts and findings."""

    name = "extract"
    answer_model = MapAnswer
    schema = MAP_SCHEMA
    max_tokens = 300  # a relevance score and a short extract

    def system(self, language: str | None, prompts: PromptSet) -> str:
        return map_prompt(language, prompts=prompts)

    def read(self, answer: MapAnswer) -> MapReading:
        return MapReading(answer.relevance, answer.extract.strip())

    def reduce_text(self, kept: Sequence[tuple[Citation, Any]]) -> str:
        blocks = []
        for src, rating in kept:
            lines = [f"[{src.id}] (community {rating.id}: {rating.title or ''}; relevance {rating.relevance}/10)",
                     rating.extract]
            if src.findings:
                lines.append("KEY FINDINGS:\n" + "\n".join(f"- {f.statement}" for f in src.findings))
            blocks.append("\n".join(line for line in lines if line))
        return "EXTRACTS:\n\n" + "\n\n".join(blocks)


def report_points(rating: Any) -> list[MapPoint]:
    """A mapped report's points: its scored points, or its extract as one point scored by its relevance."""
    if rating.points:
        return list(rating.points)
    return [MapPoint(description=rating.extract, score=rating.relevance or 0)] if rating.extract else []


def points_in_turns(kept: Sequence[tuple[Citation, Any]], limit: int = MAX_REDUCE_POINTS) -> list[tuple[str, MapPoint]]:
    """The best points across reports (module docstring): (report id, point), every report's best
    point before any second one, each round by score (ties: report order)."""
    ranked = [(src.id, sorted(report_points(rating), key=lambda p: -p.score)) for src, rating in kept]
    out: list[tuple[str, MapPoint]] = []
    for turn in range(max((len(p) for _, p in ranked), default=0)):
        row = sorted(((rid, pts[turn]) for rid, pts in ranked if turn < len(pts)), key=lambda x: -x[1].score)
        out += row
    return out[:limit]


class ScoredPoints:
    """Scored points per report; the reduce step reads the best points across reports (module docstring)."""

    name = "points"
    answer_model = MapPoints
    schema = POINTS_SCHEMA
    max_tokens = 300

    def system(self, language: str | None, prompts: PromptSet) -> str:
        return map_points_prompt(language, max_points=MAX_POINTS, prompts=prompts)

    def read(self, answer: MapPoints) -> MapReading:
        points = [MapPoint(description=" ".join(p.description.split()), score=p.score)
                  for p in answer.points if p.description.strip()][:MAX_POINTS]  # fmt: skip
        best = max((p.score for p in points), default=0)
        return MapReading(best, " ".join(p.description for p in points), points)

    def reduce_text(self, kept: Sequence[tuple[Citation, Any]]) -> str:
        titles = "\n".join(f"[{src.id}] community {rating.id}: {rating.title or ''}" for src, rating in kept)
        points = "\n".join(f"[{rid}] (score {p.score}/10) {p.description}" for rid, p in points_in_turns(kept))
        return f"REPORTS:\n{titles}\n\nPOINTS (the best of each report first):\n{points}"


#: The forms by name (``search.global_map``).
MAP_FORMS: dict[str, type] = {"extract": RatedExtract, "points": ScoredPoints}


def map_form(search: SearchSettings, chat: BaseChatModel) -> MapForm:
    """The map form ``search.global_map`` names (``auto``: points with the embedded model)."""
    return MAP_FORMS[by_model(search.global_map, chat, embedded="points", other="extract")]()


def cover_reports(support: SupportReport, kept: Sequence[tuple[Citation, Any]], sources: Sequence[Citation],
                  index: MatchIndex, *, max_ids: int) -> tuple[SupportReport, int]:  # fmt: skip
    """The answer's check with the best point of each uncited report added as a claim citing it, while
    fewer than :data:`COVER_REPORTS` reports are cited (module docstring); and how many were added.
    The added points go through the same support check as the model's claims."""
    cited = {i for c in support.kept for i in c.sources}
    want = min(COVER_REPORTS, sum(1 for _, r in kept if r.points))
    if len(cited) >= want:
        return support, 0
    extra = [Claim(statement=max(r.points, key=lambda p: p.score).description, sources=[src.id])
             for src, r in kept if r.points and src.id not in cited][: want - len(cited)]  # fmt: skip
    added = check_claims(extra, sources, index, max_ids=max_ids, required_kind="report")
    out = support.model_copy(deep=True)
    out.kept += added.kept
    out.left_out += added.left_out
    return out, len(added.kept)


@dataclass
class ReduceInputs:
    """What the reduce step reads: the question, the kept reports (source, rating) and the settings."""

    question: str
    pairs: list[tuple[Citation, Any]]
    sources: list[Citation]
    index: MatchIndex | None
    chat: BaseChatModel
    search: SearchSettings
    llm: LLMSettings
    language: str | None
    map_form: MapForm
    reduce_system: str  # the prose reduce prompt
    facts_of: Callable[[str], list[dict[str, Any]]] | None = None  # a community's facts with evidence (by id)


class ReduceForm(Protocol):
    """One way of writing a global answer from the mapped reports (module docstring)."""

    name: str
    least_calls: int  # calls counted when the step fails before any response

    def needs_index(self, search: SearchSettings, chat: BaseChatModel) -> bool: ...

    def answer(self, inp: ReduceInputs, attempt: Attempt) -> CheckedAnswer: ...


class WrittenReduce:
    """The model writes the answer from the kept reports (claims or prose); a claims answer citing
    fewer than :data:`COVER_REPORTS` reports gets the best points of the others (:func:`cover_reports`)."""

    name = "written"
    least_calls = 1

    def needs_index(self, search: SearchSettings, chat: BaseChatModel) -> bool:
        return use_claims(search, chat)

    def answer(self, inp: ReduceInputs, attempt: Attempt) -> CheckedAnswer:
        as_claims = use_claims(inp.search, inp.chat)
        system = (claims_answer_prompt(inp.language, max_ids=inp.search.claim_max_sources,
                                       prompts=load_prompts(inp.llm.prompts_dir)) if as_claims else inp.reduce_system)
        user = (f"QUESTION: {inp.question}\n\n{inp.map_form.reduce_text(inp.pairs)}"
                "\n\nAnswer from these extracts only, citing their ids.")
        checked = checked_answer(inp.chat, inp.search, llm=inp.llm, claims=as_claims, system=system,
                                 prose_system=inp.reduce_system, user=user, sources=inp.sources, attempt=attempt,
                                 max_tokens=REDUCE_MAX_TOKENS, question=inp.question, language=inp.language,
                                 index=inp.index, required_kind="report")  # fmt: skip
        if checked.support is not None and inp.index is not None and any(r.points for _, r in inp.pairs):
            checked.support, checked.covered = cover_reports(checked.support, inp.pairs, inp.sources, inp.index,
                                                             max_ids=inp.search.claim_max_sources)  # fmt: skip
            if checked.covered:
                resolved = shown_answer(checked.support, inp.sources, checked.question_language)
                checked.text, checked.citations = resolved.answer, resolved.citations
        checked.form = self.name
        return checked


def _community_sentences(rows: Sequence[dict[str, Any]]) -> list[Citation]:
    """A community's facts as one source per evidence sentence (whole sentences only: a cut span is none)."""
    out: list[Citation] = []
    for row in rows:
        line = f"{row['start_name']} {row['type']} {row['end_name']}"
        for span in row.get("evidence") or []:
            out += [Citation(id="F0", kind="fact", text=line, evidence=sentence, entities=[row["start_name"], row["end_name"]])
                    for sentence in whole_sentences(str(span))]  # fmt: skip
    return out


def grounded_core(inp: ReduceInputs, limit: int = CORE_POINTS) -> tuple[list[CorePiece], list[Citation]]:
    """The core of an extractive global answer and the fact sources it adds (module docstring of
    :class:`ExtractiveReduce`): the kept reports in turns, each giving its next best sentence."""
    from graphrag_got.search.rank import question_scores  # noqa: PLC0415 - bm25s on first use

    queues: list[tuple[Citation, list[Citation | MapPoint]]] = []
    for src, rating in inp.pairs:
        cands: list[Citation | MapPoint] = []
        if inp.facts_of is not None and src.community_id is not None:
            sentences = _community_sentences(inp.facts_of(src.community_id))
            query = " ".join([inp.question, *(p.description for p in report_points(rating))])
            scores = question_scores(query, sentences)
            order = sorted(range(len(sentences)), key=lambda i: -scores[i])
            cands = [sentences[i] for i in order if scores[i] > 0]
        # the report's best point its report backs (what the map step found in it for the question; one
        # naming no entity states nothing), then its facts' sentences
        backed = [p for p in sorted(report_points(rating), key=lambda p: -p.score)
                  if inp.index is not None and check_claims([Claim(statement=p.description, sources=[src.id])], [src],
                                                            inp.index, required_kind="report", require_entity=True).kept]
        queues.append((src, [*backed[:1], *cands]))
    core: list[CorePiece] = []
    facts: list[Citation] = []
    seen: set[str] = set()
    for turn in range(max((len(c) for _, c in queues), default=0)):
        for src, cands in queues:
            if turn >= len(cands) or len(core) == limit:
                continue
            cand = cands[turn]
            text = cand.evidence if isinstance(cand, Citation) else cand.description
            if not text or text in seen:
                continue
            seen.add(text)
            if isinstance(cand, Citation):
                fact = cand.model_copy(update={"id": f"F{len(facts) + 1}"})
                facts.append(fact)
                core.append(CorePiece(text, [src.id, fact.id]))
            else:
                core.append(CorePiece(text, [src.id]))
    return core, facts


class ExtractiveReduce:
    """The answer's core is what the kept reports say about the question and what their communities
    state, in turns: for each report (most relevant first), its best point, then the evidence
    sentences of its community's facts sharing the most with the question and the report's points
    (BM25), at most :data:`CORE_POINTS` in all, a point citing its report, a sentence its report and
    its fact (the facts join the answer's sources). The model states the answer from the core
    (:func:`graphrag_got.search.extractive.extractive_answer`). The small model's points and reports
    speak of a group's importance in general terms; its facts' sentences name who did what."""

    name = "extractive"
    least_calls = 0

    def needs_index(self, search: SearchSettings, chat: BaseChatModel) -> bool:
        return True

    def answer(self, inp: ReduceInputs, attempt: Attempt) -> CheckedAnswer:
        if inp.index is None:
            raise ValueError("an extractive global answer is checked against the graph: pass its match index")
        core, facts = grounded_core(inp)
        inp.sources.extend(facts)  # the facts whose sentences the answer uses are its sources too
        expected = inp.language or question_language(inp.question)
        return extractive_answer(inp.chat, inp.question, core, inp.sources, inp.index, attempt, search=inp.search,
                                 llm=inp.llm, language=inp.language, expected=expected, form=self.name,
                                 required_kind="report")  # fmt: skip


#: The reduce forms by name (``search.global_answer``; ``auto``: extractive with the embedded model).
REDUCE_FORMS: dict[str, type] = {"written": WrittenReduce, "extractive": ExtractiveReduce}


def reduce_form(search: SearchSettings, chat: BaseChatModel) -> ReduceForm:
    """The reduce form ``search.global_answer`` names (``auto``: extractive with the embedded model)."""
    return REDUCE_FORMS[by_model(search.global_answer, chat, embedded="extractive", other="written")]()


__all__ = ["CORE_POINTS", "REDUCE_FORMS", "REDUCE_MAX_TOKENS", "ExtractiveReduce", "ReduceForm", "ReduceInputs",
           "WrittenReduce", "grounded_core", "reduce_form", "report_points","COVER_REPORTS", "MAP_FORMS", "MAP_SCHEMA", "MAX_POINTS", "MAX_REDUCE_POINTS", "POINTS_SCHEMA", "MapAnswer",
           "MapForm", "MapPoint", "MapPoints", "MapReading", "RatedExtract", "ScoredPoints", "cover_reports", "map_form",
           "points_in_turns"]  # fmt: skip
