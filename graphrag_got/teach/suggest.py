"""Which passages to correct first (``graphrag-got examples suggest``).

A corrected passage teaches the model what it shows: its classes, its relations, and the mistakes the
audit refused on it. The suggestion is a greedy cover over the chunks of an extraction: each chunk
offers the ontology relations and classes its kept answer uses, the relations the validator refused
on it and its refusal reasons; a feature not yet covered by an earlier pick is worth 1 (a relation
or a refused relation 2: facts are what the examples teach best, and what the model misses most),
and a chunk's worth is divided by how long it is past a passage one corrects in a couple of minutes
(``target_chars``). Chunks already stored as examples, failed chunks and passages longer than
``max_chars`` are not offered. Nothing here calls a model: it reads the extraction file.
"""

from __future__ import annotations

from collections import Counter

from pydantic import BaseModel, ConfigDict

from graphrag_got.extract.extraction import Extraction

#: a passage of about this many characters is corrected in a couple of minutes
TARGET_CHARS = 600
MAX_CHARS = 2000


class Suggestion(BaseModel):
    """A passage worth correcting, and what it would teach that earlier picks do not."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    document_id: str
    chars: int
    facts: int
    entities: int
    refusals: int
    teaches: tuple[str, ...]  # "relation:R", "class:C", "refused:R", "reason:CODE"
    score: float


def _features(extraction: Extraction) -> dict[str, Counter[str]]:
    out: dict[str, Counter[str]] = {c.id: Counter() for c in extraction.chunks}
    for ent in extraction.entities:
        for cid in ent.chunk_ids:
            if cid in out:
                out[cid][f"class:{ent.type}"] += 1
    for rel in extraction.relations:
        for cid in rel.chunk_ids:
            if cid in out:
                out[cid][f"relation:{rel.relation}"] += 1
    for rej in extraction.rejections:
        if rej.chunk_id in out:
            out[rej.chunk_id][f"reason:{rej.reason.value}"] += 1
            if rej.kind == "relation" and rej.relation:
                out[rej.chunk_id][f"refused:{rej.relation}"] += 1
    return out


def _weight(feature: str) -> float:
    return 2.0 if feature.startswith(("relation:", "refused:")) else 1.0


def suggest_passages(extraction: Extraction, n: int = 3, *, exclude: set[str] | frozenset[str] = frozenset(),
                     target_chars: int = TARGET_CHARS, max_chars: int = MAX_CHARS) -> list[Suggestion]:
    """Up to ``n`` chunks of ``extraction`` whose corrections together teach most (see the module docstring);
    ``exclude``: chunk ids not to offer (those already corrected)."""
    failed = {f.chunk_id for f in extraction.failed_chunks}
    features = _features(extraction)
    counts = {cid: (sum(v for k, v in f.items() if k.startswith("class:")),
                    sum(v for k, v in f.items() if k.startswith("relation:")),
                    sum(v for k, v in f.items() if k.startswith("reason:"))) for cid, f in features.items()}
    candidates = [c for c in extraction.chunks
                  if c.id not in exclude and c.id not in failed and c.text.strip() and len(c.text) <= max_chars]
    covered: set[str] = set()
    picks: list[Suggestion] = []
    while candidates and len(picks) < n:
        def worth(chunk_id: str, chars: int) -> float:
            new = sum(_weight(f) for f in features[chunk_id] if f not in covered)
            return new / max(1.0, chars / target_chars)

        best = max(candidates, key=lambda c: (worth(c.id, len(c.text)), sum(features[c.id].values()), -c.index))
        new = tuple(sorted(f for f in features[best.id] if f not in covered))
        entities, facts, refusals = counts[best.id]
        picks.append(Suggestion(chunk_id=best.id, document_id=best.document_id, chars=len(best.text), facts=facts,
                                entities=entities, refusals=refusals, teaches=new,
                                score=round(worth(best.id, len(best.text)), 3)))
        covered |= set(new)
        candidates = [c for c in candidates if c.id != best.id]
    return picks


__all__ = ["MAX_CHARS", "Suggestion", "TARGET_CHARS", "suggest_passages"]
