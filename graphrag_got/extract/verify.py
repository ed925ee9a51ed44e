"""Verification: one constrained yes/no question per candidate triple, against its evidence.

After validation (and repair), every relation still standing in a chunk is a *claim*: its statement
("<subject> (<class>) <RELATION: comment> <object> (<class>)") and the passage it stands on (its
evidence sentences when the evidence rules found them, else the chunk). The model answers
``{"answer": "yes" | "no"}`` under a JSON schema; "no" refuses the triple as ``not_confirmed``,
with the question in the rejection message so the report shows what was asked.

Verdicts are cached on disk per claim (a hash of the statement, the passage, the prompt version and
the model), so a rerun or a revalidation pays nothing; revalidation never calls the model: a claim
without a stored verdict is kept and counted as unverified. Replay files carry the verdicts under
the claim key, so the quality benchmark replays verification with zero model calls.

Off by default (``GRAPHRAG_VERIFY``); whether it pays for its calls is measured by the quality
ladder's ``+verification`` rung.
"""

from __future__ import annotations

import hashlib
import logging
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable

from langchain_core.language_models import BaseChatModel

from graphrag_got.extract.extraction import Reason, Rejection, RelationRecord
from graphrag_got.common.keyed_cache import KeyedJsonCache
from graphrag_got.llm.calls import LLMOutputError
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.prompts import BUILTIN, VERIFY_PROMPTS, PromptSet, verification_prompt, verification_question
from graphrag_got.extract.validate import ChunkValidation

logger = logging.getLogger(__name__)

VERDICT_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["yes", "no"]}},
                                  "required": ["answer"], "additionalProperties": False}
VERDICT_MAX_TOKENS = 16
PASSAGE_MAX_CHARS = 1200


@dataclass(frozen=True)
class Claim:
    key: str  # the cache and replay key
    chunk_id: str | None
    document_id: str | None
    relation: RelationRecord
    question: str


@dataclass
class VerificationSummary:
    claims: int = 0
    confirmed: int = 0
    refused: int = 0
    unverified: int = 0  # no verdict (revalidation without a stored answer, or the model failed)
    llm_calls: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    verdicts: dict[str, str] = field(default_factory=dict)  # key -> "yes" | "no"
    raw: dict[str, list[str]] = field(default_factory=dict)  # key -> raw answers (for replay export)

    def line(self) -> str:
        return (f"verification: {self.claims} triples asked, {self.confirmed} confirmed, {self.refused} refused "
                f"(not_confirmed), {self.unverified} unverified; {self.llm_calls} LLM calls, {self.cached} cached")


def _passage(rel: RelationRecord, chunk_text: str) -> str:
    if rel.evidence:
        text = " ".join(dict.fromkeys(e.text.strip() for e in rel.evidence if e.text.strip()))
        if text:
            return text[:PASSAGE_MAX_CHARS]
    return chunk_text[:PASSAGE_MAX_CHARS]


def claims_of(validations: Iterable[ChunkValidation], chunk_texts: dict[str, str], onto: Ontology, *,
              prompts: PromptSet | None = None) -> list[Claim]:
    """Every relation of every chunk validation, as a claim with its question and key (``prompts``: the
    prompts in use, whose version is part of the key)."""
    version = (prompts or BUILTIN).version(*VERIFY_PROMPTS)
    out: list[Claim] = []
    for val in validations:
        text = chunk_texts.get(val.chunk_id or "", "")
        for rel in val.relations:
            spec = onto.relation(rel.relation)
            question = verification_question(rel.subject, rel.subject_type, rel.relation,
                                             spec.comment if spec else "", rel.object, rel.object_type,
                                             rel.attributes, _passage(rel, text), prompts=prompts)
            # the model is in the cache folder, not the key: a replay of recorded verdicts finds them by key
            digest = hashlib.sha256(f"{version}\n{question}".encode("utf-8")).hexdigest()
            out.append(Claim(key=f"verify:{digest}", chunk_id=val.chunk_id, document_id=val.document_id,
                             relation=rel, question=question))
    return out


class VerdictCache(KeyedJsonCache):
    """One small JSON file per claim under ``<cache>/verify/<model>/``."""

    kind = "verify"

    def accepts(self, key: str, data: Any) -> bool:
        return isinstance(data, dict) and data.get("answer") in ("yes", "no")


def verify_claims(claims: list[Claim], cache: VerdictCache, chat: BaseChatModel | None, *, workers: int = 1,
                  progress: ProgressCallback | None = None, prompts: PromptSet | None = None) -> VerificationSummary:
    """Verdicts for ``claims``: from the cache, else from ``chat`` (None: never call the model)."""
    summary = VerificationSummary(claims=len(claims))
    todo: list[Claim] = []
    for c in claims:
        hit = cache.get(c.key)
        if hit is not None:
            summary.verdicts[c.key] = hit["answer"]
            summary.raw[c.key] = [str(r) for r in hit.get("raw_responses", [])]
            summary.cached += 1
        elif c.key not in {t.key for t in todo}:
            todo.append(c)
    if chat is not None and todo:
        system = verification_prompt(prompts=prompts)

        def ask(claim: Claim) -> tuple[Claim, dict[str, Any] | None, int, int, int]:
            try:
                value, attempt = complete_json(chat, system, claim.question, None, schema=VERDICT_SCHEMA,
                                               replay_key=claim.key, max_tokens=VERDICT_MAX_TOKENS)
            except LLMOutputError as exc:
                logger.warning("verification of %s %s %s failed: %s", claim.relation.subject, claim.relation.relation,
                               claim.relation.object, exc)
                return claim, None, len(exc.raw_responses), 0, 0
            answer = value.get("answer") if isinstance(value, dict) else None
            if answer not in ("yes", "no"):
                return claim, None, len(attempt.raw_responses), attempt.input_tokens, attempt.output_tokens
            record = {"answer": answer, "raw_responses": attempt.raw_responses, "question": claim.question}
            return claim, record, len(attempt.raw_responses), attempt.input_tokens, attempt.output_tokens

        done = 0
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            for claim, record, calls, tin, tout in pool.map(ask, todo):
                done += 1
                summary.llm_calls += calls
                summary.input_tokens += tin
                summary.output_tokens += tout
                if record is not None:
                    cache.put(claim.key, record)
                    summary.verdicts[claim.key] = record["answer"]
                    summary.raw[claim.key] = record["raw_responses"]
                if progress is not None:
                    progress(ProgressEvent(step="verify", done=done, total=len(todo), message=claim.chunk_id or ""))
    return summary


def apply_verdicts(validations: list[ChunkValidation], claims: list[Claim], summary: VerificationSummary) -> None:
    """Move the relations the model did not confirm into their chunk's rejections (in place)."""
    by_chunk: dict[str | None, list[Claim]] = {}
    for c in claims:
        by_chunk.setdefault(c.chunk_id, []).append(c)
    for val in validations:
        kept: list[RelationRecord] = []
        chunk_claims = {id(c.relation): c for c in by_chunk.get(val.chunk_id, [])}
        for rel in val.relations:
            claim = chunk_claims.get(id(rel))
            verdict = summary.verdicts.get(claim.key) if claim else None
            if verdict == "no" and claim is not None:
                summary.refused += 1
                val.rejections.append(Rejection(
                    kind="relation", reason=Reason.NOT_CONFIRMED,
                    message=f"{rel.relation}: the model did not confirm it against its evidence. {claim.question}",
                    item={"relation": rel.relation, "subject": rel.subject, "subject_type": rel.subject_type,
                          "object": rel.object, "object_type": rel.object_type, **rel.attributes},
                    chunk_id=val.chunk_id, document_id=val.document_id, relation=rel.relation, subject=rel.subject,
                    subject_type=rel.subject_type, object=rel.object, object_type=rel.object_type))
                continue
            if verdict == "yes":
                summary.confirmed += 1
            else:
                summary.unverified += 1
            kept.append(rel)
        val.relations = kept



class Verifier:
    """Verification as one step of an extraction: claims -> verdicts -> refusals, summary kept."""

    def __init__(self, onto: Ontology, cache: VerdictCache, chat: BaseChatModel | None, *, workers: int = 1,
                 progress: ProgressCallback | None = None, prompts: PromptSet | None = None):
        self.onto, self.cache, self.chat, self.workers, self.progress = onto, cache, chat, workers, progress
        self.prompts = prompts
        self.summary = VerificationSummary()

    def run(self, validations: list[ChunkValidation], chunk_texts: dict[str, str]) -> VerificationSummary:
        claims = claims_of(validations, chunk_texts, self.onto, prompts=self.prompts)
        self.summary = verify_claims(claims, self.cache, self.chat, workers=self.workers, progress=self.progress,
                                     prompts=self.prompts)
        apply_verdicts(validations, claims, self.summary)
        if self.summary.unverified:
            logger.warning("%d triples kept without a verification verdict (%s)", self.summary.unverified,
                           "revalidation never calls the model" if self.chat is None else "the model's answer was unusable")
        return self.summary
