"""The corpus pass of the extraction: repair and validate every stored answer, in corpus order.

:func:`validate_answers` is what ``extract`` (and ``extract --revalidate``) run over the stored answers
of a corpus before aggregation: the audited repair (:mod:`graphrag_got.extract.repair`, which reads
the class votes of the whole corpus), then :class:`~graphrag_got.extract.validate.Validator` on each
chunk, reusing the last run's result of every chunk whose inputs are unchanged
(:mod:`graphrag_got.extract.memo`).
"""

from __future__ import annotations

import logging

from pydantic import JsonValue

from graphrag_got.config import ExtractSettings
from graphrag_got.extract.answer import RawAnswer
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.classify.chunk import answer_items
from graphrag_got.extract.strategies import STRATEGIES
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.evidence import EvidenceRules
from graphrag_got.extract.extraction import FailedChunk, FailureReason, Repair
from graphrag_got.extract.memo import (MemoEntry, QuotingVotes, ValidationMemo, answer_names, chunk_key, names_key,
                                       votes_key)
from graphrag_got.extract.repair import ChunkAnswer, ClassVotes, RepairedAnswer, answer_entity_names, repair_chunk
from graphrag_got.extract.validate import ChunkValidation, Validator
from graphrag_got.ingest.chunking import Chunk, ChunkedDocument
from graphrag_got.ontology.model import Ontology

__all__ = ["make_validator", "validate_answers"]

logger = logging.getLogger(__name__)


def make_validator(extract: ExtractSettings, onto: Ontology) -> Validator:
    """The extraction's validator: schema bounds, and the evidence rules when ``evidence`` is on."""
    bounds = (STRATEGIES[extract.strategy].bounds(extract) if extract.strategy in STRATEGIES
              else (extract.max_entities, extract.max_relations))  # "auto": not chosen yet
    # untyped key terms: the terms strategy's; "auto" (a load) may read a file it wrote
    terms = STRATEGIES[extract.strategy].untyped_terms if extract.strategy in STRATEGIES else True
    return Validator(onto, max_entities=bounds[0], max_relations=bounds[1], terms=terms,
                     evidence=EvidenceRules.from_settings(extract) if extract.evidence else None,
                     min_confidence=extract.min_confidence,
                     min_probability=extract.min_fact_probability)


def validate_answers(extract: ExtractSettings, onto: Ontology, docs: list[ChunkedDocument],
                     records: dict[str, CacheRecord], memo: ValidationMemo | None = None,
                     ) -> tuple[list[ChunkValidation], list[Repair], list[FailedChunk], int]:
    """Repair (when on) and validate every stored answer, in corpus order.

    With ``memo``, a chunk whose answer, text and corpus inputs are those of the last run reuses that
    run's result (:mod:`graphrag_got.extract.memo`), and the memo is rewritten with this run's chunks.
    Returns the per-chunk validations, the repair records, the failed chunks and the number of
    answers whose JSON had to be repaired.
    """
    validator = make_validator(extract, onto)
    failed: list[FailedChunk] = []
    todo: list[tuple[Chunk, str, RawAnswer, JsonValue]] = []  # chunk, document id, answer, stored JSON
    keys: dict[str, str] = {}  # chunk id -> memo key
    quoted: dict[str, list[str]] = {}  # chunk id -> names whose vote counts its repairs quote
    repaired = 0
    for d in docs:
        for ch in d.chunks:
            rec = records.get(ch.id)
            if rec is None:
                continue
            if not rec.ok:
                failed.append(FailedChunk(chunk_id=ch.id, document_id=d.document.id, error=rec.error or "",
                                          reason=rec.failure_reason or FailureReason.UNUSABLE_ANSWER,
                                          raw_responses=rec.raw_texts()))
                continue
            repaired += int(rec.repaired)
            answer = RawAnswer.read(answer_items(rec.parsed, extract.min_fact_probability))
            todo.append((ch, d.document.id, answer, rec.parsed))
    votes = ClassVotes((a for _, _, a, _ in todo), onto.classes, validator.max_entities) \
        if extract.repair else None
    hits: dict[str, MemoEntry] = {}
    if memo is not None:
        for ch, doc_id, answer, parsed in todo:
            keys[ch.id] = key = chunk_key(chunk_id=ch.id, document_id=doc_id, chunk_hash=ch.hash, start=ch.start,
                                          parsed=parsed, votes=votes, names=answer_names(answer))
            entry = memo.get(ch.id, key, votes)
            if entry is not None:
                hits[ch.id] = entry
    fixed: dict[str, RepairedAnswer] = {}
    texts: dict[str, ChunkText] = {}
    for ch, doc_id, answer, _ in todo:
        if ch.id in hits:
            continue
        texts[ch.id] = ChunkText(ch.text, offset=ch.start)
        if votes is not None:
            quoting = QuotingVotes(votes)
            fixed[ch.id] = repair_chunk(validator, ChunkAnswer(ch.id, doc_id, answer, texts[ch.id]), quoting,
                                        threshold=extract.mention_threshold)
            quoted[ch.id] = sorted(quoting.quoted)
        else:
            fixed[ch.id] = RepairedAnswer(ch.id, doc_id, answer)
    names = frozenset(n for ch, *_ in todo
                      for n in (hits[ch.id].names if ch.id in hits else answer_entity_names(fixed[ch.id],
                                                                                            validator.max_entities)))
    uses_names = validator.evidence is not None and validator.evidence.cues \
        and any(rel.all_cues for rel in onto.relations)
    nkey = names_key(names if uses_names else None)
    validations: list[ChunkValidation] = []
    repairs: list[Repair] = []
    entries: dict[str, MemoEntry] = {}
    for ch, doc_id, answer, _ in todo:
        entry = hits.get(ch.id)
        if entry is not None and entry.names_key == nkey:
            v = ChunkValidation(ch.id, doc_id, list(entry.entities), list(entry.relations), list(entry.rejections))
            repairs.extend(entry.repairs)
            memo.hits += 1
        else:
            if entry is not None:  # repaired as before, but the corpus names the cue check masks changed
                f = RepairedAnswer(ch.id, doc_id, answer.with_items(list(entry.answer_entities),
                                                                    list(entry.answer_relations)),
                                   list(entry.extra_entities), list(entry.repairs))
                text = ChunkText(ch.text, offset=ch.start)
            else:
                f, text = fixed[ch.id], texts[ch.id]
            v = validator.validate(f.answer, ch.id, doc_id, text, extra_entities=f.extra_entities, corpus_names=names)
            repairs.extend(f.repairs)
            if memo is not None:
                said = quoted.get(ch.id, entry.quoted if entry is not None else [])
                entry = MemoEntry(key=keys[ch.id], quoted=said, votes_key=votes_key(votes, said), names_key=nkey,
                                  answer_entities=f.answer.entities, answer_relations=f.answer.relations,
                                  names=sorted(answer_entity_names(f, validator.max_entities)), repairs=f.repairs,
                                  extra_entities=f.extra_entities, entities=v.entities, relations=v.relations,
                                  rejections=v.rejections)
        if memo is not None:  # written below, before aggregation and resolution change the records
            entries[ch.id] = entry
        validations.append(v)
    n = len(repairs)
    if n:
        logger.info("audited repair: %d change(s)", n)
    if memo is not None:
        memo.write(entries)
        logger.info("validation memo: %d of %d chunk(s) reused", memo.hits, len(todo))
    return validations, repairs, failed, repaired
