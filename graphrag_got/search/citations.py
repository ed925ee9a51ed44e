"""Citations shared by every answer mode (local, global, drift, the service).

The context an answering model reads is a numbered list of sources: facts ``[F1]``, chunk excerpts
``[C1]`` and community reports ``[R1]``. The model is asked to put those ids after each claim. Once it
has answered, :func:`resolve_citations` keeps the ids that exist in the context (in order of first
use), removes the ones the model made up from the text and counts them, so a reader never follows a
citation to nothing.

Ids are given per answer, in context order (:func:`number_sources`); they are not stable across
questions. A citation carries where its source came from (document, chunk, heading, the evidence
sentence) so the CLI can print a reference list and the web page can show the evidence on click.
"""

from __future__ import annotations

import re
from typing import Iterable, Literal

from pydantic import BaseModel, Field

CitationKind = Literal["fact", "chunk", "report"]
PREFIX: dict[str, str] = {"fact": "F", "chunk": "C", "report": "R"}

# One bracket may hold one id or several: [F1], [F1, C2], [F1][C2], [F1; F3]. Parentheses holding
# only ids, "(F1, C2)", are read the same way: the embedded 1.5B model writes them often (seen in the
# live answer benchmark) and nothing but an id list fits that pattern.
_BRACKET = re.compile(r"\[\s*([FCR]\d{1,4}(?:\s*[,;]\s*[FCR]\d{1,4})*)\s*\]"
                      r"|\(\s*([FCR]\d{1,4}(?:\s*[,;]\s*[FCR]\d{1,4})*)\s*\)")
_ID = re.compile(r"[FCR]\d{1,4}")


class Finding(BaseModel):
    """One key finding of a community report: a short statement and the members it is about."""

    statement: str
    members: list[str] = Field(default_factory=list)


class Citation(BaseModel):
    """One source of an answer's context, with everything needed to show where it came from."""

    id: str  # "F1", "C2", "R1"
    kind: CitationKind
    text: str  # the fact line, the excerpt, or the report's title and summary
    document_id: str | None = None
    chunk_id: str | None = None
    heading: str | None = None
    location: str | None = None  # where in the document: "p. 12" (PDF), "Installation > Network" (headings)
    evidence: str | None = None  # the sentence a fact was read from, when known
    community_id: str | None = None
    entities: list[str] = Field(default_factory=list)  # entity names the source is about (graph view)
    findings: list[Finding] = Field(default_factory=list)  # a report's key findings (what claims may cite it for)

    def where(self) -> str:
        """The source's document and place in it: ``report.pdf p. 12``, ``manual.docx > Installation >
        Network``, ``notes.md > Heading``; ``""`` without a document."""
        if not self.document_id:
            return ""
        place = self.location or self.heading
        if not place:
            return self.document_id
        return f"{self.document_id} {place}" if place.startswith("p. ") else f"{self.document_id} > {place}"

    def context_line(self) -> str:
        """The line the answering model reads for this source."""
        where = f" ({self.where()})" if self.document_id and self.kind == "chunk" else ""
        line = f"[{self.id}] {self.text}{where}"
        if self.evidence and self.kind == "fact":
            line += f' -- evidence: "{self.evidence}"'
        return line

    def reference_line(self) -> str:
        """The line printed under an answer for this source."""
        parts = [f"[{self.id}] {self.text}"]
        where = self.where() or (self.heading or "")
        if where:
            parts.append(f"    {where}")
        if self.evidence and self.evidence != self.text:
            parts.append(f'    "{self.evidence}"')
        return "\n".join(parts)


class ResolvedAnswer(BaseModel):
    """An answer after its citations were checked against the context it was given."""

    answer: str
    citations: list[Citation] = Field(default_factory=list)  # the ones the answer uses, in first-use order
    invented: list[str] = Field(default_factory=list)  # ids the model wrote that were not in its context

    @property
    def invented_count(self) -> int:
        return len(self.invented)


def number_sources(sources: Iterable[Citation]) -> list[Citation]:
    """Give ``sources`` ids per kind in their order (F1, F2..., C1..., R1...), returning copies."""
    counters: dict[str, int] = {}
    numbered: list[Citation] = []
    for src in sources:
        counters[src.kind] = counters.get(src.kind, 0) + 1
        numbered.append(src.model_copy(update={"id": f"{PREFIX[src.kind]}{counters[src.kind]}"}))
    return numbered


#: The header of a context listed in one order (:func:`context_block` with ``ranked=True``).
RANKED_HEADER = "SOURCES (facts F, source excerpts C), the most relevant to the question first:"


def context_block(citations: Iterable[Citation], *, ranked: bool = False) -> str:
    """The numbered context: one line per source, grouped by kind under a header; ``ranked``: in the
    order given, under one header (sources ranked by question, :mod:`graphrag_got.search.rank`)."""
    if ranked:
        return RANKED_HEADER + "\n" + "\n".join(c.context_line() for c in citations)
    headers = {"fact": "FACTS:", "chunk": "SOURCE EXCERPTS:", "report": "COMMUNITY REPORTS:"}
    by_kind: dict[str, list[str]] = {}
    for c in citations:
        by_kind.setdefault(c.kind, []).append(c.context_line())
    blocks = [headers[k] + "\n" + "\n".join(lines) for k, lines in by_kind.items()]
    return "\n\n".join(blocks)


def split_inline_ids(text: str) -> tuple[str, list[str]]:
    """``text`` without its bracketed ids (``[F1, C2]``, ``(F1)``) and the ids, in order of use."""
    ids: list[str] = []

    def take(match: re.Match[str]) -> str:
        for i in _ID.findall(match.group(1) or match.group(2)):
            if i not in ids:
                ids.append(i)
        return " "

    bare = " ".join(_BRACKET.sub(take, text).split())
    return re.sub(r" ([.,;:!?])", r"\1", bare), ids


def resolve_citations(answer: str, available: Iterable[Citation]) -> ResolvedAnswer:
    """Keep the citations of ``answer`` that exist in ``available``; drop and count the others."""
    known = {c.id: c for c in available}
    used: list[str] = []
    invented: list[str] = []

    def keep(match: re.Match[str]) -> str:
        ids = _ID.findall(match.group(1) or match.group(2))
        good = [i for i in ids if i in known]
        for i in ids:
            if i in known and i not in used:
                used.append(i)
            elif i not in known:
                invented.append(i)
        return "[" + ", ".join(good) + "]" if good else ""

    text = _BRACKET.sub(keep, answer)
    if invented:
        text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)  # "claim [X9]." left "claim ."
        text = re.sub(r"[ \t]{2,}", " ", text).strip()
    return ResolvedAnswer(answer=text, citations=[known[i] for i in used], invented=invented)
