"""What an extraction run did, as its summary (:class:`ExtractionSummary`) and the lines the CLI prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graphrag_got.common.walk import SkippedInput
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.extraction import Extraction, FailureReason


#: skipped files and reading notes listed one a line in the summary; the rest are in the file
_SHOWN = 20


@dataclass
class ExtractionSummary:
    out_path: Path
    documents: int
    chunks: int
    dropped_chunks: int
    llm_calls: int
    cache_hits: int
    failed_chunks: int
    missing_chunks: int
    entities: int
    relations: int
    rejected_relations: int
    rejected_entities: int
    by_reason: dict[str, int]
    seconds: float
    model: str
    revalidated: bool = False
    replay_path: Path | None = None
    merges: int = 0  # entity resolution records (names joined within a class)
    extra: dict[str, Any] = field(default_factory=dict)
    repairs: int = 0  # audited repairs applied before validation (graphrag_got.extract.repair)
    repairs_by_reason: dict[str, int] = field(default_factory=dict)
    verification: str | None = None  # the verification step's line, when it ran
    classify: str | None = None  # the classify strategy's line: mentions, pairs asked, answered "none"
    mentions: str | None = None  # the mentions strategy's line: mentions, chunks per call, typed relations asked
    terms: str | None = None  # the terms strategy's line: terms found, distinct, typed
    strategy: str = ""  # which strategy ran, and why
    usage: str = ""  # calls, tokens and cost of this run's model calls
    input_tokens: int = 0  # this run's model calls: prompt tokens
    output_tokens: int = 0  # this run's model calls: answer tokens
    failed_by_reason: dict[str, int] = field(default_factory=dict)  # FailureReason value -> chunks
    skipped_files: list[SkippedInput] = field(default_factory=list)  # inputs not read, with why
    document_notes: list[str] = field(default_factory=list)  # what the readers reported, "document id: note"
    retried_failures: int = 0  # cached failures asked again because their cause may be gone
    unchanged: bool = False  # inputs as when the file was written: the file was kept, not rebuilt
    validations_reused: int = 0  # chunks whose repair and validation came from the last run's memo
    runner: str = ""  # where this run's calls ran and how many at once (empty: no call)
    stalls: str = ""  # streamed calls cut by a stall this run, resumed or thrown away (empty: none)
    # what was written to out_path, for a step that uses it next in the same process (load): reading
    # it back costs a second per 6,000 notes. None when the file was kept as it was.
    extraction: Extraction | None = field(default=None, repr=False, compare=False)

    def lines(self) -> list[str]:
        out = [
            (f"extraction unchanged (same documents, stored answers, ontology and settings): kept {self.out_path}"
             if self.unchanged else f"extraction written to {self.out_path}"),
            f"  documents {self.documents} · chunks {self.chunks} (dropped as too short: {self.dropped_chunks})",
            *([f"  {self.strategy}"] if self.strategy else []),
            f"  model {self.model} · LLM calls {self.llm_calls} · cached {self.cache_hits}"
            + ((" · zero LLM calls (all cached" + (f", {self.failed_chunks} of them failures, see below)"
                                                    if self.failed_chunks else ")"))
               if self.llm_calls == 0 and not self.revalidated and not self.terms else "")
            + (" · revalidated stored answers, no LLM call" if self.revalidated else ""),
            *([f"  calls: {self.runner}"] if self.runner else []),
            *([f"  {self.stalls}"] if self.stalls else []),
            f"  entities {self.entities} · relations kept {self.relations} · relations refused "
            f"{self.rejected_relations} · entities refused {self.rejected_entities}",
        ]
        if self.validations_reused:
            out.append(f"  validation reused for {self.validations_reused} chunk(s) whose answer, text and "
                       "corpus inputs are unchanged since the last run")
        if self.merges:
            out.append(f"  entity resolution: {self.merges} merge(s) of names within a class (\"merges\" in the "
                       "file; pin or split names in <ontology stem>.aliases.json beside the ontology)")
        if self.by_reason:
            out.append("  refusals by reason: " + ", ".join(f"{k} {v}" for k, v in self.by_reason.items()))
        if self.repairs:
            out.append(f"  audited repairs {self.repairs}: "
                       + ", ".join(f"{k} {v}" for k, v in self.repairs_by_reason.items())
                       + " (\"repairs\" in the file; --no-repair turns them off)")
        if self.classify:
            out.append(f"  {self.classify}")
        if self.mentions:
            out.append(f"  {self.mentions}")
        if self.terms:
            out.append(f"  {self.terms}")
        if self.verification:
            out.append(f"  {self.verification}")
        if self.skipped_files:
            out.append(f"  files skipped: {len(self.skipped_files)} (listed under skipped_files in the file; "
                       "--strict stops instead): "
                       + "; ".join(f"{s.path} ({s.reason})" for s in self.skipped_files[:5])
                       + (f"; ... and {len(self.skipped_files) - 5} more" if len(self.skipped_files) > 5 else ""))
            out.extend(f"    skipped {s.path}: {s.message}" for s in self.skipped_files[:_SHOWN])
            if len(self.skipped_files) > _SHOWN:
                out.append(f"    ... and {len(self.skipped_files) - _SHOWN} more skipped (skipped_files in the file)")
        if self.document_notes:
            out.append(f"  reading notes: {len(self.document_notes)} (notes of each document in the file)")
            out.extend(f"    {note}" for note in self.document_notes[:_SHOWN])
            if len(self.document_notes) > _SHOWN:
                out.append(f"    ... and {len(self.document_notes) - _SHOWN} more")
        if self.failed_chunks:
            out.extend(failure_lines(self.failed_by_reason or {FailureReason.UNUSABLE_ANSWER.value: self.failed_chunks},
                                     self.retried_failures))
        if self.missing_chunks:
            out.append(f"  chunks with no stored answer (not revalidated): {self.missing_chunks}")
        if self.usage:
            out.append(f"  this run: {self.usage}")
        if self.replay_path:
            out.append(f"  replay file written to {self.replay_path}")
        out.append(f"  {self.seconds:.1f}s")
        return out


_FAILURE_ADVICE = {
    FailureReason.CONTEXT_OVERFLOW: (
        "context overflow", "the prompt did not fit in the model's context window. Use smaller chunks "
        "(GRAPHRAG_CHUNK_MAX_CHARS) or a larger context (GRAPHRAG_LLAMACPP_N_CTX, or the server's own setting): "
        "a plain rerun asks these chunks again once GRAPHRAG_LLAMACPP_N_CTX, GRAPHRAG_LLM_MAX_TOKENS or the "
        "servers change; after enlarging a server's context, rerun with --retry-failed"),
    FailureReason.PROVIDER: (
        "provider down", "the provider did not answer for these chunks; a plain rerun asks them again"),
    FailureReason.UNUSABLE_ANSWER: (
        "unusable answer", "no valid JSON after repair and one retry (raw answers kept in the file under "
        "failed_chunks); rerun with --retry-failed to ask again, or try another model"),
}


def failure_lines(by_reason: dict[str, int], retried: int = 0) -> list[str]:
    """The summary lines of failed chunks: one headline naming each reason, one advice line per reason."""
    reasons = [FailureReason(r) for r in FailureReason if by_reason.get(r.value)]
    total = sum(by_reason.values())
    head = f"  chunks without a usable answer: {total} (" + ", ".join(
        f"{_FAILURE_ADVICE[r][0]} {by_reason[r.value]}" for r in reasons) + ")"
    if retried:
        head += f" · {retried} earlier failure(s) asked again this run"
    return [head] + [f"    {_FAILURE_ADVICE[r][0]}: {_FAILURE_ADVICE[r][1]}" for r in reasons]


def classify_line(records: list[CacheRecord]) -> str:
    """Totals of the classify audits of the stored answers (mentions, pairs asked, their answers)."""
    audits = [r.parsed["classify"] for r in records if r.ok and isinstance(r.parsed, dict)
              and isinstance(r.parsed.get("classify"), dict)]
    total = {k: sum(int(a.get(k) or 0) for a in audits)
             for k in ("mentions", "pairs", "pairs_left_out", "answered_none", "unusable", "unscored")}
    line = (f"classify: {total['mentions']} mentions, {total['pairs']} pairs asked ({total['answered_none']} answered "
            f"none, {total['unusable']} unusable, {total['unscored']} without a score)")
    return line + (f", {total['pairs_left_out']} pairs over GRAPHRAG_CLASSIFY_MAX_PAIRS not asked"
                   if total["pairs_left_out"] else "")
