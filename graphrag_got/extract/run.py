"""The extraction run: chunks -> one LLM call per chunk -> validation -> ``extraction.json``.

Each chunk's raw answer is cached under (model, prompt version, schema bounds, chunk hash, ontology
hash) as soon as it arrives, so an interrupted run loses nothing and a rerun pays no LLM call twice.
``revalidate`` re-applies the current ontology to stored answers (whatever ontology they were
obtained under) without calling the model.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from graphrag_got.extract.cache import CacheRecord, ExtractionCache
# the generate strategy's call, also known by this module's names (benchmarks call extract_chunk)
from graphrag_got.extract.generate import PROMPT_VERSION, extract_chunk, glean, record_base  # noqa: F401
from graphrag_got.ingest.chunking import Chunk, ChunkedDocument, read_corpus
from graphrag_got.config import ChunkingSettings, EmbeddingSettings, ExtractSettings, FilesSettings, LLMSettings
from graphrag_got.errors import ExtractionError, LLMError
from graphrag_got.common.files import write_json_atomic
from graphrag_got.common.memory import gc_paused
from graphrag_got.llm.factory import get_chat_model, model_label, resolve_provider
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback
from graphrag_got.extract.progress import ExtractProgress
from graphrag_got.extract.summary import ExtractionSummary
from graphrag_got.extract.batch import ask_batches, provider_failure
from graphrag_got.extract.extraction import FORMAT as EXTRACTION_FORMAT
from graphrag_got.extract.extraction import (ChunkRecord, DocumentRecord, Extraction, FailureReason,
                                             LLMRef, OntologyRef, SkippedFile)
from graphrag_got.common.walk import SkippedInput
from graphrag_got.prompts import (BUILTIN, EXTRACT_PROMPTS, VERIFY_PROMPTS, PromptSet, extraction_system_prompt,
                                  extraction_user_prompt, load_prompts)
from graphrag_got.extract.forms import answer_form
from graphrag_got.prompts.extraction import EXTRACT_GLEAN, EXTRACT_USER, form_text
from graphrag_got.extract.aggregate import aggregate, identity_attributes
from graphrag_got.extract.orphans import drop_orphans
from graphrag_got.extract.memo import ValidationMemo, memo_path
from graphrag_got.extract.stored_answers import make_validator, validate_answers  # noqa: F401 (make_validator: a name of this module)
from graphrag_got.extract.extraction import Merge, Rejection
from graphrag_got.extract.recheck import seal
from graphrag_got.extract.resolve import resolve_entities
from graphrag_got.ingest.notes import ScanCache, notes_of_documents
from graphrag_got.extract.verify import VerdictCache, Verifier
from graphrag_got.extract import fingerprint
from graphrag_got.extract.estimate import announcement, remember_timing
from graphrag_got.llm.usage import cost_usd, usage_line
from graphrag_got.llm import server as llm_server
from graphrag_got.llm.concurrency import calls_in_flight
from graphrag_got.extract.extraction import Usage
from graphrag_got.extract.strategy import StrategyChoice, choose_strategy, chosen_documents, configured_model
from graphrag_got.extract.example_selection import prompt_ontologies
from graphrag_got.extract.strategies import GENERATE, STRATEGIES, CallSetup, CorpusPass, strategy_for

FORMAT = EXTRACTION_FORMAT

logger = logging.getLogger(__name__)


def system_prompt(onto: Ontology, *, prompts: PromptSet | None = None) -> str:
    """The extraction system prompt (kept as a name of this module; the text lives in :mod:`prompts`)."""
    return extraction_system_prompt(onto, prompts=prompts)


def user_prompt(chunk: Chunk, *, prompts: PromptSet | None = None) -> str:
    return extraction_user_prompt(chunk.text, prompts=prompts)


def strategy_prompts(strategy: str) -> tuple[str, ...]:
    """The prompts a strategy's answers depend on (the extraction file's ``prompt_version`` is theirs);
    ``auto`` (not chosen yet): those of both strategies it picks from."""
    if strategy == "auto":
        return tuple(dict.fromkeys(GENERATE.prompt_names + STRATEGIES["terms"].prompt_names))
    return strategy_for(strategy).prompt_names


def prompt_names(extract: ExtractSettings) -> tuple[str, ...]:
    """The prompts an extraction with ``extract`` sends (its strategy's, and verification's when on)."""
    return strategy_prompts(extract.strategy) + (VERIFY_PROMPTS if extract.verify else ())


def prompt_version(extract: ExtractSettings, prompts: PromptSet) -> str:
    """The version of the extraction's prompts (its strategy's): the file's ``prompt_version``."""
    if extract.strategy == "auto":
        return prompts.version(*strategy_prompts(extract.strategy))
    return strategy_for(extract.strategy).prompt_version(prompts)


# ---------------------------------------------------------------------------- the run
def setup_key(llm: LLMSettings, provider: str) -> str:
    """The settings a context overflow or a provider failure depends on (not the chunk: its hash
    names the cache entry). A failed record made under another setup is asked again."""
    return json.dumps({"provider": provider, "n_ctx": llm.llamacpp_n_ctx, "max_tokens": llm.max_tokens,
                       "servers": sorted(llm.openai_base_urls), "ollama": llm.ollama_base_url},
                      sort_keys=True)


def should_retry(rec: CacheRecord, setup: str, retry_failed: bool) -> bool:
    """Whether a stored answer is asked again: never an ok one; a failed one with ``--retry-failed``;
    a provider failure always (the server may be back); a context overflow when the setup changed."""
    if rec.ok:
        return False
    if retry_failed:
        return True
    reason = rec.failure_reason
    if reason is FailureReason.PROVIDER:
        return True
    return reason is FailureReason.CONTEXT_OVERFLOW and rec.setup != setup


def run_extraction(extract: ExtractSettings, onto: Ontology, corpus: str | Path | None = None,
                   out_path: str | Path | None = None, *, files: FilesSettings, chunking: ChunkingSettings,
                   llm: LLMSettings, chat: BaseChatModel | None = None,
                   revalidate: bool = False, retry_failed: bool = False, export_replay: str | Path | None = None,
                   progress: ProgressCallback | None = None, strategy: StrategyChoice | None = None,
                   relations_for: Sequence[str] | None = None,
                   embedding: EmbeddingSettings | None = None) -> ExtractionSummary:
    """Extract ``corpus`` (default ``files.corpus_path``, cut by ``chunking``) into ``out_path`` (default
    ``<files.out_dir>/extraction.json``) with ``llm``'s model under ``extract``'s rules (see the module
    docstring); answers are cached under ``files.cache_dir``. ``strategy``: the strategy the
    caller chose (default: :func:`~graphrag_got.extract.strategy.choose_strategy`); ``relations_for``:
    notes or folders (paths in the corpus, or on disk under it) whose typed relations the mentions
    strategy asks as well (the generate strategy's question, cached like it). The embedded model's
    llama-server, when this run starts it, is stopped at its end (unless an enclosing ``demo`` or
    ``build`` started it). ``embedding``: the model that picks each chunk's corrected passages when more are
    stored than a prompt carries (default: the embedded one)."""
    with llm_server.scope():
        return _run_extraction(extract, onto, corpus, out_path, files=files, chunking=chunking, llm=llm, chat=chat, revalidate=revalidate,
                               retry_failed=retry_failed, export_replay=export_replay, progress=progress,
                               strategy=strategy, relations_for=relations_for, embedding=embedding)


def _chat_for(llm: LLMSettings, provider: str, classify: bool, files: FilesSettings) -> BaseChatModel:
    """The run's chat model. The classify strategy scores its choices with the in-process model's
    log-probabilities, which llama-server does not give: with the embedded model it runs in-process."""
    if classify and provider == "llamacpp" and llm.llamacpp_backend != "in_process":
        logger.info("classify strategy: the embedded model runs in-process (choices are scored by log-probability)")
        llm = llm.model_copy(update={"llamacpp_backend": "in_process"})
    return get_chat_model(llm, provider, files=files)


def extraction_plan(extract: ExtractSettings, onto: Ontology, corpus: str | Path, *, files: FilesSettings,
                    chunking: ChunkingSettings, llm: LLMSettings, chat: BaseChatModel | None = None,
                    embedding: EmbeddingSettings | None = None) -> tuple[int, int]:
    """(chunks, chunks to ask): what :func:`run_extraction` of ``corpus`` would send to the model now (the
    others have a stored answer), found without calling it, so a command can say the calls before making them."""
    plan = _run_extraction(extract, onto, corpus, None, files=files, chunking=chunking, llm=llm, chat=chat,
                           revalidate=False, retry_failed=False, export_replay=None, progress=None, strategy=None,
                           relations_for=None, plan_only=True, embedding=embedding)
    assert isinstance(plan, tuple)
    return plan


def _run_extraction(extract: ExtractSettings, onto: Ontology, corpus: str | Path | None, out_path: str | Path | None, *,
                    files: FilesSettings, chunking: ChunkingSettings, llm: LLMSettings, chat: BaseChatModel | None, revalidate: bool, retry_failed: bool,
                    export_replay: str | Path | None, progress: ProgressCallback | None,
                    strategy: StrategyChoice | None, relations_for: Sequence[str] | None,
                    plan_only: bool = False, embedding: EmbeddingSettings | None = None) -> Any:
    t0 = time.monotonic()
    corpus = Path(corpus or files.corpus_path)
    out = Path(out_path or files.out_dir / "extraction.json")
    prompts = load_prompts(llm.prompts_dir)  # a bad prompt file stops the run before any call
    skipped: list[SkippedInput] = []
    with gc_paused():  # bulk parsing and record building: see common.memory
        cs = chunking
        docs: list[ChunkedDocument] = read_corpus(corpus, kind=cs.chunker, min_chars=cs.min_chars, max_chars=cs.max_chars,
                                                  strict=cs.strict_inputs, follow_outside_links=cs.follow_outside_links,
                                                  skipped=skipped, max_bytes=cs.max_document_bytes)
        chunks = [c for d in docs for c in d.chunks]
        if chat is not None:
            provider, label = "custom", f"custom:{type(chat).__name__}"
        else:
            provider = resolve_provider(llm)
            label = model_label(llm, provider)
        choice = strategy or choose_strategy(extract, corpus, provider,
                                             configured_model(llm, provider) if chat is None else None,
                                             chunking=chunking)
        if choice.strategy != extract.strategy:  # every later step reads the strategy that runs
            extract = extract.model_copy(update={"strategy": choice.strategy})
        kind = choice.strategy
        strat = strategy_for(kind)
        shape = answer_form(extract.answer_form)
        # the full form keeps the cache tag it always had; recall passes make other answers
        passes = f"|gleanings={extract.gleanings}|{prompts.version(EXTRACT_GLEAN)}" if extract.gleanings else ""
        user = form_text(shape.name).user  # another form's own per-chunk prompt keys its answers too
        gen_form = (shape.cache_tag or "full") + (f"|{prompts.version(user)}" if user != EXTRACT_USER else "") + passes
        form = strat.answer_tag(extract, prompts, gen_form)
        bounds = (extract.max_entities, extract.max_relations)
        version = prompts.version(*EXTRACT_PROMPTS)
        cache = ExtractionCache(files.cache_dir, label, *bounds, form, prompt_version=version)
        # mentions: the generate answers of chunks whose typed relations were asked (--relations-for) stand
        typed = (ExtractionCache(files.cache_dir, label, *bounds, gen_form, prompt_version=version)
                 if strat.asks_typed else None)
        chosen = chosen_documents(relations_for, corpus, docs, kind) if relations_for else set()
        schema = shape.constraint(onto, *bounds)
        system = extraction_system_prompt(onto, shape.name, prompts=prompts)
        # the ontology each chunk's prompt is built from: onto, or onto with the corrected passages picked for it
        prompt_onto = (prompt_ontologies(onto, chunks, extract, embedding=embedding or EmbeddingSettings(), llm=llm,
                                         files=files, prompts=prompts) if strat.carries_examples else {})

        def onto_of(ch: Chunk) -> Ontology:
            return prompt_onto.get(ch.id, onto)

        setup = setup_key(llm, provider)
        records: dict[str, CacheRecord] = {}
        todo: list[Chunk] = []
        todo_typed: list[Chunk] = []  # mentions strategy: chunks whose typed relations are asked now
        missing = retried = 0
        for ch in chunks:
            if typed is not None:
                rec = typed.latest(ch.hash) if revalidate else typed.get(ch.hash, onto.hash)
                if rec is not None and (rec.ok or (ch.document_id in chosen and not should_retry(rec, setup, retry_failed))):
                    records[ch.id] = rec
                    continue
                if ch.document_id in chosen and not revalidate:  # revalidation never asks
                    todo_typed.append(ch)
                    continue
            rec = cache.latest(ch.hash) if revalidate else cache.get(ch.hash, onto_of(ch).hash)
            if rec is not None and (revalidate or not should_retry(rec, setup, retry_failed)):
                records[ch.id] = rec
            elif revalidate:
                missing += 1
            else:
                retried += int(rec is not None and not retry_failed)
                todo.append(ch)

    if plan_only:
        return len(chunks), (0 if strat.model_free else len(todo)) + len(todo_typed)
    tracker = ExtractProgress(docs, progress)
    tracker.cached({ch.id: not records[ch.id].ok for ch in chunks if ch.id in records})
    found_here = 0  # answers a model-free strategy gave without a call
    if strat.model_free and todo:
        metadata = {d.document.id: d.document.metadata for d in docs}
        for ch, rec in zip(todo, strat.local_records(onto, todo, extract, metadata, form)):
            rec.model = label
            cache.put(ch.hash, onto.hash, rec)  # as for an answer of the model: a rerun reads the chunk no more
            records[ch.id] = rec
        tracker.note(f"{kind}: {len(todo)} chunk(s) read without a model call")
        found_here, todo = len(todo), []
    calls = 0
    runner = ""
    stream_stats: Any = None
    stalls_before: dict[str, float] | None = None
    timings: list[float] = []  # seconds of each call of this run, per chunk (the next run's estimate)
    if todo or todo_typed:
        if chat is None:
            chat = _chat_for(llm, provider, strat.needs_scores, files)
        flight = calls_in_flight(llm, chat)  # what the server takes (its slots), or GRAPHRAG_CONCURRENCY
        runner = runner_line(llm, provider, chat, flight.calls, flight.why)
        logger.info("extraction: %s", runner)
        stream_stats = getattr(chat, "stream_stats", None)  # streamed calls: what stalls cost this run
        stalls_before = stream_stats.as_dict() if stream_stats is not None else None
        line = announcement(extract, label, provider, chunks=len(todo) + len(todo_typed), workers=flight.calls,
                            files=files)
        if line:
            logger.warning(line)
        groups: dict[int, list[Chunk]] = {}  # chunks whose prompts carry the same examples
        for ch in todo:
            groups.setdefault(id(onto_of(ch)), []).append(ch)
        calls_setup = CallSetup(chat=chat, extract=extract, files=files, label=label, setup=setup, schema=schema,
                                prompts=prompts)
        jobs = [job for group in groups.values() for job in strat.jobs(
            calls_setup, onto_of(group[0]), group,
            system if onto_of(group[0]) is onto else extraction_system_prompt(onto_of(group[0]), shape.name,
                                                                                prompts=prompts))]
        jobs += GENERATE.jobs(calls_setup, onto, todo_typed, system)  # mentions: typed relations of chosen documents
        asked_typed = {ch.id for ch in todo_typed}
        stores = {ch.id: (typed if ch.id in asked_typed and typed is not None else cache) for ch in todo + todo_typed}
        job_of = {id(batch): job for job, batch in jobs}

        def ask(batch: list[Chunk]) -> list[CacheRecord]:
            tracker.begin(batch[0].id)
            try:
                return job_of[id(batch)]()
            finally:
                tracker.end()

        def keep(batch: list[Chunk], recs: list[CacheRecord]) -> None:
            nonlocal calls
            fresh = [(ch, rec) for ch, rec in zip(batch, recs) if records.get(ch.id) is not rec]
            for ch, rec in zip(batch, recs):
                rec.model = label
                # as soon as it arrives: an interrupted run loses nothing
                stores[ch.id].put(ch.hash, (onto if stores[ch.id] is typed else onto_of(ch)).hash, rec)
            for ch, rec in fresh:  # a batch handed again after a Ctrl-C (see ask_batches) counts once
                timings.append(rec.seconds or 0.0)
                records[ch.id] = rec
                calls += rec.calls
            if fresh:
                tracker.asked([(ch.id, not rec.ok, rec.calls) for ch, rec in fresh])

        if strat.shares_prefix and len(todo) + len(todo_typed) > 1 and hasattr(chat, "share_prefix"):
            # the instructions and ontology every prompt starts with: evaluated once, copied into every slot; with
            # corrected passages picked per chunk, each set's prompt once (the server keeps the others in its
            # prompt cache and restores the one a call starts with), the largest group's last
            prefixes = [system] if len(groups) <= 1 else [
                extraction_system_prompt(onto_of(g[0]), shape.name, prompts=prompts)
                for g in sorted(groups.values(), key=len) if len(g) > 1]
            tracker.note(f"evaluating the shared prompt prefix{'es' if len(prefixes) > 1 else ''} once for the "
                         "server's slots")
            for prefix in prefixes:
                chat.share_prefix([SystemMessage(content=prefix), HumanMessage(content="")])
        tracker.start(todo + todo_typed)
        try:
            stopped = ask_batches([batch for _, batch in jobs], ask, flight.calls, keep,
                                  lambda ch, exc: provider_failure(exc, record_base(ch, onto), setup))
        finally:
            remember_timing(files, label, timings)
        if stopped is not None:
            answered = sum(1 for r in records.values() if r.ok)
            raise ExtractionError(stopped.message(answered, len(chunks)))
    todo += todo_typed  # this run's calls, whichever cache holds them

    def pass_chat() -> tuple[BaseChatModel, int]:  # the corpus pass's model, made when it has a call to make
        nonlocal chat
        if chat is None:
            chat = _chat_for(llm, provider, strat.needs_scores, files)
        return chat, calls_in_flight(llm, chat).calls

    passed = strat.corpus_pass(CorpusPass(onto=onto, extract=extract, files=files, label=label, prompts=prompts, docs=docs,
                                          records=records, chat=None if revalidate else pass_chat, note=tracker.note))
    records, calls = passed.records, calls + passed.calls  # the answers as validated (the stored ones unchanged)

    with gc_paused():  # bulk parsing and record building: see common.memory
        context = fingerprint.validation_context(extract, chunking, onto)  # what every chunk's validation depends on
        names = prompt_names(extract)  # custom prompts are inputs too (built-in ones: the code's version)
        custom = "" if prompts.version(*names) == BUILTIN.version(*names) else f"|{prompts.version(*names)}"
        digest = fingerprint.inputs_digest(
            settings=context["settings"], ontology_hash=onto.hash, model=label, form=form + custom,
            chunks=[(ch.id, ch.hash, records[ch.id].created if ch.id in records else None, ch.location)
                    for ch in chunks] + ([("corpus pass", passed.digest, None, "")] if passed.digest else []),
            skipped=[json.dumps(s.as_dict(), sort_keys=True) for s in skipped], code_version=context["code"],
            side_files={"aliases": context["aliases"]})
        if not todo and not found_here and not passed.calls and not revalidate and not export_replay and not extract.verify \
                and fingerprint.unchanged(out, digest):
            return _unchanged_summary(out, docs, chunks, label, missing, t0,
                                      usage_line(0, 0, 0, cost_usd(llm, provider, 0, 0)), choice.lines()[0])
        fingerprint.forget(out)  # the file is about to be rewritten: its old digest no longer vouches for it
        verifier = None
        if extract.verify:
            if chat is None and not revalidate:
                chat = get_chat_model(llm, provider, files=files)
            verifier = Verifier(onto, VerdictCache(files.cache_dir, label), None if revalidate else chat,
                                workers=calls_in_flight(llm, chat).calls if chat is not None else 1,
                                progress=progress, prompts=prompts)
        try:
            memo_file = memo_path(files.cache_dir, out)
            memo = ValidationMemo(memo_file, context)
            scans = ScanCache(files.cache_dir / "notes" / memo_file.name)  # one per output file, like the memo
            ext = build_extraction(extract, onto, docs, records, llm=llm, provider=provider, model=label, verifier=verifier,
                                   skipped=skipped, memo=memo, scans=scans, prompts=prompts)
        except LLMError as exc:  # the provider broke during verification: verdicts so far are cached
            raise ExtractionError(f"{exc}\nverification stopped; rerun the same command to resume.") from None
        # this run's calls, and (in the file) the calls behind every stored answer of the corpus
        fresh = [records[ch.id] for ch in todo if ch.id in records]
        run_in = sum(r.input_tokens or 0 for r in fresh) + passed.input_tokens
        run_out = sum(r.output_tokens or 0 for r in fresh) + passed.output_tokens
        estimated = any(r.tokens_estimated for r in fresh) or passed.estimated
        stored = [records[ch.id] for ch in chunks if ch.id in records]
        total_in = sum(r.input_tokens or 0 for r in stored) + passed.input_tokens  # the corpus pass: this run's
        total_out = sum(r.output_tokens or 0 for r in stored) + passed.output_tokens
        if verifier is not None:
            calls += verifier.summary.llm_calls
            run_in += verifier.summary.input_tokens
            run_out += verifier.summary.output_tokens
        ext.usage = Usage(calls=sum(r.calls for r in stored) + passed.calls, input_tokens=total_in,
                          output_tokens=total_out,
                          tokens_estimated=any(r.tokens_estimated for r in stored) or passed.estimated,
                          cost_usd=cost_usd(llm, provider, total_in, total_out))
        ext.write(out)
    if not extract.verify and not revalidate:  # verdicts and revalidation have inputs the digest omits
        fingerprint.remember(out, digest)
    run_usage = usage_line(calls, run_in, run_out, cost_usd(llm, provider, run_in, run_out),
                           estimated=estimated)
    replay_path = None
    if export_replay:
        replay_path = Path(export_replay)
        extra = verifier.summary.raw if verifier is not None else {}
        write_json_atomic(replay_path, replay_document(chunks, records, label, extra,
                                                       prompts.version(*EXTRACT_PROMPTS)))
    c = ext.counts
    return ExtractionSummary(
        out_path=out, documents=len(docs), chunks=len(chunks), dropped_chunks=sum(d.dropped for d in docs),
        llm_calls=calls, cache_hits=len(chunks) - len(todo) - found_here - missing, failed_chunks=c.chunks_failed,
        missing_chunks=missing, entities=c.entities, relations=c.relations,
        rejected_relations=c.rejected_relations, rejected_entities=c.rejected_entities,
        by_reason=c.by_reason, seconds=time.monotonic() - t0, model=label, revalidated=revalidate,
        merges=len(ext.merges), verification=verifier.summary.line() if verifier is not None else None,
        **strat.summary_fields([records[c.id] for c in chunks if c.id in records]), strategy=choice.lines()[0],
        usage=run_usage, input_tokens=run_in, output_tokens=run_out,
        replay_path=replay_path, repairs=c.repairs, repairs_by_reason=dict(c.repairs_by_reason),
        failed_by_reason=dict(c.failed_by_reason), skipped_files=skipped, retried_failures=retried,
        document_notes=document_notes(docs), validations_reused=memo.hits, extraction=ext, runner=runner,
        stalls=stream_stats.stall_line(stalls_before) if stream_stats is not None else "",
    )


def _unchanged_summary(out: Path, docs: list[ChunkedDocument], chunks: list[Chunk], label: str, missing: int,
                       t0: float, usage: str, strategy: str = "") -> ExtractionSummary:
    """The summary of a run whose inputs match the file's: read from the file, nothing rebuilt."""
    ext = Extraction.read(out)
    c = ext.counts
    logger.info("extraction inputs unchanged: kept %s", out)
    return ExtractionSummary(
        out_path=out, documents=len(docs), chunks=len(chunks), dropped_chunks=sum(d.dropped for d in docs),
        llm_calls=0, cache_hits=len(chunks) - missing, failed_chunks=c.chunks_failed, missing_chunks=missing,
        entities=c.entities, relations=c.relations, rejected_relations=c.rejected_relations,
        rejected_entities=c.rejected_entities, by_reason=c.by_reason, seconds=time.monotonic() - t0, model=label,
        merges=len(ext.merges), usage=usage, repairs=c.repairs,
        repairs_by_reason=dict(c.repairs_by_reason), failed_by_reason=dict(c.failed_by_reason),
        skipped_files=[SkippedInput(s.path, s.reason, s.message) for s in ext.skipped_files], unchanged=True,
        strategy=strategy, document_notes=document_notes(docs))


def document_notes(docs: list[ChunkedDocument]) -> list[str]:
    """``document id: note`` for what the readers reported (headers dropped, pages without text, a wrong name)."""
    return [f"{d.document.id}: {note}" for d in docs for note in d.document.notes]


def runner_line(llm: LLMSettings, provider: str, chat: BaseChatModel, calls: int, why: str) -> str:
    """Where the calls run and how many at once, for the summary (which backend runs the embedded model)."""
    at_once = f"{calls} call(s) in flight ({why})"
    if getattr(chat, "embedded", False):
        urls = ", ".join(getattr(chat, "base_urls", []))
        return f"embedded model served by llama-server at {urls}, {at_once}"
    if provider == "llamacpp":
        from graphrag_got.llm.server import choose_backend

        try:
            backend = choose_backend(llm)
            reason = "the classify strategy scores choices in-process" if backend.server else backend.why
        except LLMError as exc:
            reason = str(exc)
        return f"embedded model in this process (llama-cpp-python: {reason}), one call at a time"
    return f"{provider}, {at_once}"


def build_extraction(extract: ExtractSettings, onto: Ontology, docs: list[ChunkedDocument],
                     records: dict[str, CacheRecord], *, llm: LLMSettings, provider: str, model: str,
                     verifier: Verifier | None = None, skipped: list[SkippedInput] | None = None,
                     memo: ValidationMemo | None = None, scans: ScanCache | None = None,
                     prompts: PromptSet | None = None) -> Extraction:
    """Validate every stored answer against ``onto`` and assemble the :class:`Extraction`.

    With ``extract.repair``, the answers first go through the audited repair (two passes over the
    corpus, :mod:`graphrag_got.extract.repair`); with ``extract.evidence``, the validator checks each
    answer against its chunk text. Both work from the stored answers alone (no model call). ``memo`` and
    ``scans`` hold the last run's per-chunk validations and note scans (only changed inputs are redone);
    ``prompts``: the prompts in use (default: ``llm.prompts_dir``'s), whose version the file records.
    """
    validations, repairs, failed, repaired = validate_answers(extract, onto, docs, records, memo)
    if verifier is not None:  # extract.verify: a yes/no check per triple against its evidence
        verifier.run(validations, {c.id: c.text for d in docs for c in d.chunks})
    entities, relations = aggregate(validations, identity_attributes(onto))
    merges: list[Merge] = []
    merged_away: list[Rejection] = []  # relations whose two ends resolution merged into one entity
    if extract.resolution:
        entities, relations, merges, merged_away = resolve_entities(entities, relations, onto)
    orphans: list[Rejection] = []
    if extract.orphan_entities != "keep":
        entities, orphans = drop_orphans(entities, relations, extract.orphan_entities)
    notes = notes_of_documents(docs, scans)  # vault structure of Markdown notes (title, tags, folders, links)
    ext = Extraction(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ontology=OntologyRef(path=onto.source, hash=onto.hash),
        llm=LLMRef(provider=provider, model=model),
        prompt_version=prompt_version(extract, prompts or load_prompts(llm.prompts_dir)),
        documents=[DocumentRecord(id=d.document.id, path=d.document.path, hash=d.document.hash,
                                  metadata=d.document.metadata, note=notes.get(d.document.id),
                                  format=d.document.format, pages=d.document.pages,
                                  lines_dropped=d.document.lines_dropped, notes=list(d.document.notes)) for d in docs],
        chunks=[ChunkRecord(id=c.id, document_id=c.document_id, index=c.index, start=c.start, end=c.end,
                            hash=c.hash, text=c.text, heading=c.heading, page=c.page, section=list(c.section))
                for d in docs for c in d.chunks],
        entities=entities,
        relations=relations,
        rejections=[r for v in validations for r in v.rejections] + merged_away + orphans,
        merges=merges,
        repairs=repairs,
        failed_chunks=failed,
        skipped_files=[SkippedFile(path=x.path, reason=x.reason, message=x.message) for x in skipped or []],
    )
    ext.recount()
    ext.counts.chunks_extracted = len(validations)
    ext.counts.chunks_repaired = repaired
    return seal(ext)  # every record is the validator's: load trusts them under this ontology


def replay_document(chunks: list[Chunk], records: dict[str, CacheRecord], model: str,
                    extra: dict[str, list[str]] | None = None, version: str = PROMPT_VERSION) -> dict[str, Any]:
    """Raw answers in the replay provider's format, so a run can be replayed without the model.

    ``extra``: other calls of the run by replay key (verification verdicts), replayed the same way."""
    calls = {k: [v] for c in chunks if c.id in records
             for k, v in ((records[c.id].model_extra or {}).get("call_answers") or {}).items()}  # classify
    return {
        "format": "graphrag_got.replay/1",
        "model": model,
        "prompt_version": version,
        "responses": [{"chunk_id": c.id, "chunk_hash": c.hash, "responses": records[c.id].raw_responses}
                      for c in chunks if c.id in records]
        + [{"chunk_hash": key, "responses": raws} for key, raws in sorted(calls.items())]
        + [{"chunk_hash": key, "responses": list(raws)} for key, raws in sorted((extra or {}).items())],
    }
