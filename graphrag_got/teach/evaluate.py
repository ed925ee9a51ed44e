"""How good the extraction is on the user's own text (``graphrag-got eval``).

The corrected passages stored beside the ontology are the gold. Each passage is scored
**leave-one-out**: it is extracted by the configuration under test with every *other* stored passage
among the examples (its own correction never in the prompt that reads it), and its answer is scored
against its correction with the benchmarks' scorer (:mod:`graphrag_got.teach.scoring`: entities and
relations, exact and tolerant, per relation). The counts of all passages add up (micro average).

Each passage is extracted by the ordinary run (:func:`graphrag_got.extract.run.run_extraction`), so
its answers are cached like any other: a second ``eval`` of the same configuration and passages makes
no call, and :func:`plan` says how many calls a run will make before it makes them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict

from graphrag_got.config import Settings
from graphrag_got.errors import OntologyError
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import extraction_plan, run_extraction
from graphrag_got.ontology.example_store import StoredExample, read_store, store_path, with_examples
from graphrag_got.ontology.model import Ontology
from graphrag_got.teach.scoring import MODES, PRF, ModeScore, QualityScore, score

logger = logging.getLogger(__name__)


class PassageResult(BaseModel):
    """One passage scored while it was not among the examples."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    example_id: str
    chunk_id: str
    calls: int
    extraction: str  # the passage's extraction file
    score: QualityScore


class EvalResult(BaseModel):
    """A configuration scored on every stored passage."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    label: str
    model: str
    passages: tuple[PassageResult, ...]
    total: QualityScore

    @property
    def calls(self) -> int:
        return sum(p.calls for p in self.passages)


def stored_passages(settings: Settings) -> tuple[Ontology, tuple[StoredExample, ...]]:
    """The ontology without its stored passages, and the passages (an error when there is none)."""
    path = settings.files.ontology_path
    store = read_store(store_path(path))
    if not store.examples:
        raise OntologyError(f"no corrected passage is stored for {path} (in {store_path(path)}): run "
                            "`graphrag-got examples suggest` and `graphrag-got examples add CHUNK_ID` first",
                            path=str(store_path(path)))
    return Ontology.from_file(path, stored_examples=False), store.examples


def gold_of(example: StoredExample) -> dict[str, Any]:
    """A corrected passage as an extraction document the scorer reads."""
    classes = {e.name: e.class_name for e in example.entities}
    return {"entities": [{"name": e.name, "type": e.class_name} for e in example.entities],
            "relations": [{"subject": r.subject, "subject_type": classes.get(r.subject, ""), "relation": r.relation,
                           "object": r.object, "object_type": classes.get(r.object, "")} for r in example.relations]}


def _passage_corpus(folder: Path, example: StoredExample) -> Path:
    """The passage alone, as a one-file corpus (its text is what keys its cached answers)."""
    target = folder / "passages" / example.id
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{example.id}.txt").write_text(example.text.strip() + "\n", encoding="utf-8")
    return target


def _loo_ontology(base: Ontology, examples: tuple[StoredExample, ...], left_out: StoredExample) -> Ontology:
    return with_examples(base, [e for e in examples if e.id != left_out.id])


class Plan(BaseModel):
    """What an evaluation will cost, said before it runs."""

    model_config = ConfigDict(frozen=True)

    passages: int
    chunks: int  # a passage longer than a chunk is read in several
    to_ask: int  # chunks with no stored answer for this configuration
    calls: int  # extraction calls: to_ask, times one plus the recall passes


def plan(settings: Settings, folder: Path) -> Plan:
    """The passages and the extraction calls this configuration would make now (stored answers are reused)."""
    base, examples = stored_passages(settings)
    chunks = to_ask = 0
    for ex in examples:
        n, todo = extraction_plan(settings.extract, _loo_ontology(base, examples, ex), _passage_corpus(folder, ex),
                                  files=settings.files, chunking=settings.chunking, llm=settings.llm,
                                  embedding=settings.embedding)
        chunks, to_ask = chunks + n, to_ask + todo
    return Plan(passages=len(examples), chunks=chunks, to_ask=to_ask, calls=to_ask * (1 + settings.extract.gleanings))


def evaluate(settings: Settings, folder: Path, *, label: str = "configuration",
             progress: Callable[[str], None] | None = None) -> EvalResult:
    """Score ``settings``' configuration on every stored passage, leave-one-out (module docstring);
    each passage's extraction file is written under ``folder``."""
    base, examples = stored_passages(settings)
    results: list[PassageResult] = []
    for i, ex in enumerate(examples, 1):
        if progress:
            progress(f"{label}: passage {i}/{len(examples)} ({ex.chunk_id or ex.id})")
        out = folder / label / f"{ex.id}.json"
        summary = run_extraction(settings.extract, _loo_ontology(base, examples, ex), _passage_corpus(folder, ex), out,
                                 files=settings.files, chunking=settings.chunking, llm=settings.llm,
                                 embedding=settings.embedding)
        pred = Extraction.read(summary.out_path).model_dump(mode="json")
        results.append(PassageResult(example_id=ex.id, chunk_id=ex.chunk_id, calls=summary.llm_calls,
                                     extraction=str(summary.out_path),
                                     score=score(pred, gold_of(ex), base, pred_source=str(out),
                                                 gold_source=f"the corrected passage {ex.id}")))
        logger.info("eval %s: %s scored (%d calls)", label, ex.id, summary.llm_calls)
    model = _model_label(settings)
    return EvalResult(label=label, model=model, passages=tuple(results), total=add_scores([r.score for r in results]))


def _model_label(settings: Settings) -> str:
    from graphrag_got.llm.factory import model_label

    try:
        return model_label(settings.llm)
    except Exception:  # noqa: BLE001 - a label only: the run itself said what was wrong
        return settings.llm.provider


def _add(prfs: list[PRF]) -> PRF:
    return PRF(predicted=sum(p.predicted for p in prfs), gold=sum(p.gold for p in prfs),
               correct=sum(p.correct for p in prfs), found=sum(p.found for p in prfs))


def add_scores(scores: list[QualityScore]) -> QualityScore:
    """The micro average of several passages' scores: their counts added, mode by mode and relation by relation."""
    modes = []
    for mode in MODES:
        per = [getattr(s, mode) for s in scores]
        names = list(dict.fromkeys(n for m in per for n in m.by_relation))
        modes.append(ModeScore(mode=mode, entities=_add([m.entities for m in per]),
                               relations=_add([m.relations for m in per]),
                               by_relation={n: _add([m.by_relation[n] for m in per if n in m.by_relation])
                                            for n in names}))
    return QualityScore(exact=modes[0], tolerant=modes[1])


__all__ = ["EvalResult", "Plan", "PassageResult", "add_scores", "evaluate", "gold_of", "plan", "stored_passages"]
