"""The extraction run: chunks -> one LLM call per chunk -> validation -> ``extraction.json``.

Each chunk's raw answer is cached under (model, prompt version, schema bounds, chunk hash, ontology
hash) as soon as it arrives, so an interrupted run loses nothing and a rerun pays no LLM call twice.
``revalidate`` re-applies the current ontology to stored answers (whatever ontology they were
obtained under) without calling the model.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from langchain_core.language_models import BaseChatModel

from .chunking import Chunk, ChunkedDocument, read_corpus
from .config import Settings
from .errors import ExtractionError, LLMError
from .files import write_json_atomic
from .llm import LLMOutputError, complete_json, get_chat_model, model_label, resolve_provider
from .ontology import Ontology
from .schema import extraction_schema
from .validate import ChunkValidation, Rejection, Validator, aggregate, reason_counts

PROMPT_VERSION = "extract-v1"
FORMAT = "graphrag_got.extraction/1"

RULES = """RULES
1. Use only the entity classes and relations listed above. Never invent a class or a relation.
2. Every relation must respect its types: the subject's class must be one of the relation's subject
   types and the object's class one of its object types. If a fact fits no relation, leave it out.
3. Every subject and object of a relation must also be listed in "entities", with the same name and type.
4. Write names in full as the text gives them ("Jon Snow", not "Jon"), the same way every time.
5. Fill "momento" when the text places the fact in time (for example "tras la Boda Roja");
   otherwise leave it null.
6. Only facts stated in the text. No outside knowledge. Property values only when the text says them.
7. Answer with a single JSON object {"entities": [...], "relations": [...]} and nothing else."""


def system_prompt(onto: Ontology) -> str:
    """The ontology description, the rules and a format example built from the ontology itself."""
    rel = onto.relations[0]
    s_cls, o_cls = rel.domain[0], rel.range[0]
    example = {
        "entities": [{"type": s_cls, "name": "<name from the text>"}, {"type": o_cls, "name": "<name from the text>"}],
        "relations": [{"relation": rel.name, "subject": "<name from the text>", "subject_type": s_cls,
                       "object": "<name from the text>", "object_type": o_cls, "momento": None}],
    }
    return (
        "You build a knowledge graph from a text, following an ontology strictly.\n\n"
        f"{onto.describe()}\n\n{RULES}\n\nFORMAT EXAMPLE (shape only, not content):\n"
        f"{json.dumps(example, ensure_ascii=False)}"
    )


def user_prompt(chunk: Chunk) -> str:
    return f"TEXT:\n{chunk.text}\n\nExtract the entities and relations of this text as JSON."


# ---------------------------------------------------------------------------- cache
class ExtractionCache:
    """One JSON file per (chunk, ontology) under a folder per (model, prompt, schema bounds)."""

    def __init__(self, root: Path, model: str, max_entities: int, max_relations: int):
        tag = f"{model}|{PROMPT_VERSION}|{max_entities}|{max_relations}"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", model)[:60]
        self.dir = root / "extract" / f"{slug}-{hashlib.sha256(tag.encode()).hexdigest()[:10]}"

    def path(self, chunk_hash: str, onto_hash: str) -> Path:
        return self.dir / chunk_hash[:2] / chunk_hash / f"{onto_hash[:16]}.json"

    def get(self, chunk_hash: str, onto_hash: str) -> dict[str, Any] | None:
        return _read_json(self.path(chunk_hash, onto_hash))

    def latest(self, chunk_hash: str) -> dict[str, Any] | None:
        """The newest stored answer for a chunk under any ontology (for revalidation)."""
        folder = self.dir / chunk_hash[:2] / chunk_hash
        files = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True) if folder.is_dir() else []
        for f in files:
            rec = _read_json(f)
            if rec is not None:
                return rec
        return None

    def put(self, chunk_hash: str, onto_hash: str, record: dict[str, Any]) -> None:
        write_json_atomic(self.path(chunk_hash, onto_hash), record)


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None  # a torn or missing entry is a cache miss, never an error
    return data if isinstance(data, dict) else None


# ---------------------------------------------------------------------------- progress
class Progress:
    """One status line per finished chunk: done/total, LLM calls, cache hits, ETA."""

    def __init__(self, total: int, out: Callable[[str], None] | None = None):
        self.total, self.done, self.calls, self.hits, self.failed = total, 0, 0, 0, 0
        self.start = time.monotonic()
        self.out = out or (lambda s: print(s, file=sys.stderr, flush=True))
        self._lock = threading.Lock()

    def step(self, *, cached: bool, failed: bool, calls: int) -> None:
        with self._lock:
            self.done += 1
            self.hits += int(cached)
            self.failed += int(failed)
            self.calls += calls
            elapsed = time.monotonic() - self.start
            fresh = self.done - self.hits
            eta = ""
            if fresh and self.done < self.total:
                eta = f" · ETA {_fmt_s(elapsed / fresh * (self.total - self.done))}"
            self.out(f"  [{self.done}/{self.total}] chunks · {self.calls} LLM calls · {self.hits} cached"
                     f" · {self.failed} failed · {_fmt_s(elapsed)}{eta}")


def _fmt_s(seconds: float) -> str:
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


# ---------------------------------------------------------------------------- the run
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
    extra: dict[str, Any] = field(default_factory=dict)

    def lines(self) -> list[str]:
        out = [
            f"extraction written to {self.out_path}",
            f"  documents {self.documents} · chunks {self.chunks} (dropped as too short: {self.dropped_chunks})",
            f"  model {self.model} · LLM calls {self.llm_calls} · cached {self.cache_hits}"
            + (" · zero LLM calls (all cached)" if self.llm_calls == 0 and not self.revalidated else "")
            + (" · revalidated stored answers, no LLM call" if self.revalidated else ""),
            f"  entities {self.entities} · relations kept {self.relations} · relations refused "
            f"{self.rejected_relations} · entities refused {self.rejected_entities}",
        ]
        if self.by_reason:
            out.append("  refusals by reason: " + ", ".join(f"{k} {v}" for k, v in self.by_reason.items()))
        if self.failed_chunks:
            out.append(f"  chunks whose answer was unusable: {self.failed_chunks} (raw answers kept in the file)")
        if self.missing_chunks:
            out.append(f"  chunks with no stored answer (not revalidated): {self.missing_chunks}")
        if self.replay_path:
            out.append(f"  replay file written to {self.replay_path}")
        out.append(f"  {self.seconds:.1f}s")
        return out


def extract_chunk(chat: BaseChatModel, onto: Ontology, chunk: Chunk, schema: dict[str, Any],
                  system: str) -> dict[str, Any]:
    """One LLM call (plus at most one retry) for one chunk; never raises for a bad answer."""
    record: dict[str, Any] = {"chunk_id": chunk.id, "chunk_hash": chunk.hash, "ontology_hash": onto.hash,
                              "prompt_version": PROMPT_VERSION,
                              "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    try:
        value, attempt = complete_json(chat, system, user_prompt(chunk), None, schema=schema, replay_key=chunk.hash)
    except LLMOutputError as exc:
        record.update(status="failed", error=str(exc), raw_responses=exc.raw_responses, parsed=None)
        record["calls"] = len(exc.raw_responses)
        return record
    record.update(status="ok", parsed=value, raw_responses=attempt.raw_responses, repaired=attempt.repaired,
                  retried=attempt.retried, errors=attempt.errors, calls=len(attempt.raw_responses),
                  input_tokens=attempt.input_tokens, output_tokens=attempt.output_tokens)
    return record


def run_extraction(settings: Settings, onto: Ontology, corpus: str | Path | None = None,
                   out_path: str | Path | None = None, *, chat: BaseChatModel | None = None,
                   revalidate: bool = False, retry_failed: bool = False, export_replay: str | Path | None = None,
                   progress_out: Callable[[str], None] | None = None) -> ExtractionSummary:
    t0 = time.monotonic()
    corpus = Path(corpus or settings.corpus_path)
    out = Path(out_path or settings.out_dir / "extraction.json")
    docs: list[ChunkedDocument] = read_corpus(corpus, kind=settings.chunker, min_chars=settings.chunk_min_chars,
                                              max_chars=settings.chunk_max_chars)
    chunks = [c for d in docs for c in d.chunks]
    if chat is not None:
        provider, label = "custom", f"custom:{type(chat).__name__}"
    else:
        provider = resolve_provider(settings)
        label = model_label(settings, provider)
    cache = ExtractionCache(settings.cache_dir, label, settings.max_entities, settings.max_relations)
    schema = extraction_schema(onto, settings.max_entities, settings.max_relations)
    system = system_prompt(onto)

    records: dict[str, dict[str, Any]] = {}
    todo: list[Chunk] = []
    missing = 0
    for ch in chunks:
        rec = cache.latest(ch.hash) if revalidate else cache.get(ch.hash, onto.hash)
        if rec is not None and (rec.get("status") == "ok" or not retry_failed):
            records[ch.id] = rec
        elif revalidate:
            missing += 1
        else:
            todo.append(ch)

    progress = Progress(len(chunks), progress_out)
    for ch in chunks:
        if ch.id in records:
            progress.step(cached=True, failed=records[ch.id].get("status") != "ok", calls=0)
    calls = 0
    if todo:
        if chat is None:
            chat = get_chat_model(settings, provider)
        workers = 1 if provider == "llamacpp" else settings.concurrency
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = {pool.submit(extract_chunk, chat, onto, ch, schema, system): ch for ch in todo}
            try:
                for fut in as_completed(futures):
                    ch = futures[fut]
                    try:
                        rec = fut.result()
                    except LLMError as exc:
                        # the provider itself is broken (unreachable, no model): stop, keep what is cached
                        for f in futures:
                            f.cancel()
                        raise ExtractionError(f"{exc}\n{len(records)} of {len(chunks)} chunks are cached; "
                                              "rerun the same command to resume.") from None
                    rec["model"] = label
                    cache.put(ch.hash, onto.hash, rec)
                    records[ch.id] = rec
                    calls += int(rec.get("calls", 1))
                    progress.step(cached=False, failed=rec["status"] != "ok", calls=int(rec.get("calls", 1)))
            except KeyboardInterrupt:
                for f in futures:
                    f.cancel()
                raise ExtractionError(f"interrupted: {len(records)} of {len(chunks)} chunks are cached; "
                                      "rerun the same command to resume.") from None

    data = build_extraction(settings, onto, docs, records, provider=provider, model=label)
    write_json_atomic(out, data)
    replay_path = None
    if export_replay:
        replay_path = Path(export_replay)
        write_json_atomic(replay_path, replay_document(chunks, records, label))
    c = data["counts"]
    return ExtractionSummary(
        out_path=out, documents=len(docs), chunks=len(chunks), dropped_chunks=sum(d.dropped for d in docs),
        llm_calls=calls, cache_hits=len(chunks) - len(todo) - missing, failed_chunks=len(data["failed_chunks"]),
        missing_chunks=missing, entities=c["entities"], relations=c["relations"],
        rejected_relations=c["rejected_relations"], rejected_entities=c["rejected_entities"],
        by_reason=c["by_reason"], seconds=time.monotonic() - t0, model=label, revalidated=revalidate,
        replay_path=replay_path,
    )


def build_extraction(settings: Settings, onto: Ontology, docs: list[ChunkedDocument],
                     records: dict[str, dict[str, Any]], *, provider: str, model: str) -> dict[str, Any]:
    """Validate every stored answer against ``onto`` and assemble the extraction.json document."""
    validator = Validator(onto)
    validations: list[ChunkValidation] = []
    failed: list[dict[str, Any]] = []
    repaired = 0
    for d in docs:
        for ch in d.chunks:
            rec = records.get(ch.id)
            if rec is None:
                continue
            if rec.get("status") != "ok":
                failed.append({"chunk_id": ch.id, "document_id": d.document.id, "error": rec.get("error", ""),
                               "raw_responses": rec.get("raw_responses", [])})
                continue
            repaired += int(bool(rec.get("repaired")))
            validations.append(validator.validate(rec.get("parsed"), ch.id, d.document.id))
    entities, relations = aggregate(validations)
    rejections: list[Rejection] = [r for v in validations for r in v.rejections]
    rel_rej = [r.to_dict() for r in rejections if r.kind == "relation"]
    ent_rej = [r.to_dict() for r in rejections if r.kind != "relation"]
    return {
        "format": FORMAT,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "ontology": {"path": onto.source, "hash": onto.hash},
        "llm": {"provider": provider, "model": model},
        "prompt_version": PROMPT_VERSION,
        "documents": [{"id": d.document.id, "path": d.document.path, "hash": d.document.hash,
                       "metadata": d.document.metadata} for d in docs],
        "chunks": [{"id": c.id, "document_id": c.document_id, "index": c.index, "start": c.start, "end": c.end,
                    "hash": c.hash, "text": c.text, "heading": c.heading} for d in docs for c in d.chunks],
        "entities": entities,
        "relations": relations,
        "relaciones_descartadas": rel_rej,
        "entidades_descartadas": ent_rej,
        "failed_chunks": failed,
        "counts": {
            "documents": len(docs),
            "chunks": sum(len(d.chunks) for d in docs),
            "chunks_extracted": len(validations),
            "chunks_failed": len(failed),
            "chunks_repaired": repaired,
            "entities": len(entities),
            "relations": len(relations),
            "rejected_relations": len(rel_rej),
            "rejected_entities": sum(r.kind == "entity" for r in rejections),
            "rejected_properties": sum(r.kind == "property" for r in rejections),
            "by_reason": reason_counts(rejections),
        },
    }


def replay_document(chunks: list[Chunk], records: dict[str, dict[str, Any]], model: str) -> dict[str, Any]:
    """Raw answers in the replay provider's format, so a run can be replayed without the model."""
    return {
        "format": "graphrag_got.replay/1",
        "model": model,
        "prompt_version": PROMPT_VERSION,
        "responses": [{"chunk_id": c.id, "chunk_hash": c.hash, "responses": records[c.id].get("raw_responses", [])}
                      for c in chunks if c.id in records],
    }
