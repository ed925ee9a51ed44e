"""The ``mentions`` extraction strategy: each chunk's entity mentions with their class, and nothing else.

No typed relation is asked. On a notes vault the graph's edges come from what the vault states
(wikilinks, tags, folders, front matter: :mod:`graphrag_got.ingest.notes`) and from co-occurrence in
a chunk (``CO_OCCURS``, written by the load), so the one question per chunk is the short one a small
model answers fast. It is the classify strategy's first question (:mod:`graphrag_got.extract.classify`)
with its machinery: the candidate spans of the chunk, names copied under the per-chunk grammar (or
a JSON schema whose names are the spans, for other providers), so no name the text does not contain
can be written; the validator's evidence check still runs on every name.

Several short chunks may share one call (``GRAPHRAG_MENTIONS_BATCH_CHARS``): the texts come one after
another in the question and the answer lists the mentions of each under its own header, each text's
names under the grammar of that text's spans. Each chunk still gets its own stored answer (the
extraction cache is per chunk), so an edited note is asked again alone and a rerun asks nothing. A
chunk without any candidate span (no capitalized word) needs no call at all.

A stored answer (``CacheRecord.parsed``)::

    {"entities": [{"name", "type"}...], "relations": [],
     "mentions": {"strategy", "spans", "mentions", "texts_in_call", "repeated", "unread_lines", "finish"}}
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.classify.backend import Answer, ChatBackend, LlamaBackend
from graphrag_got.extract.classify.mentions import candidate_spans, read_sections
from graphrag_got.extract.extraction import FailureReason
from graphrag_got.ingest.chunking import Chunk
from graphrag_got.llm.calls import LLMContextError
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import (BUILTIN, MENTIONS_PROMPTS, MENTIONS_VERSION, PromptSet, mentions_system_prompt,
                                  mentions_user_prompt)

STRATEGY = "mentions"


def prompt_version(prompts: PromptSet | None = None) -> str:
    """The version of the strategy's prompts: ``mentions-v<n>``, plus the digest of each custom one."""
    prompts = prompts or BUILTIN
    return MENTIONS_VERSION + prompts.version(*MENTIONS_PROMPTS)[len(BUILTIN.version(*MENTIONS_PROMPTS)):]


def answer_form(prompts: PromptSet | None = None) -> str:
    """The extraction cache's form tag of this strategy (its answers live apart from the others')."""
    return f"{STRATEGY}|{prompt_version(prompts)}"


def call_key(system: str, user: str, version: str = MENTIONS_VERSION) -> str:
    """``mentions:<sha256>`` of the prompt version and the prompt: the replay key of one call."""
    return "mentions:" + hashlib.sha256(f"{version}\n{system}\n\n{user}".encode("utf-8")).hexdigest()


def plan_batches(chunks: Sequence[Chunk], batch_chars: int) -> list[list[Chunk]]:
    """The calls for ``chunks``, in their order: chunks that follow one another share a call while
    their texts add up to at most ``batch_chars`` characters; a longer chunk is asked alone; 0 asks
    every chunk alone."""
    batches: list[list[Chunk]] = []
    size = 0
    for ch in chunks:
        n = len(ch.text)
        if batches and batch_chars and size + n <= batch_chars:
            batches[-1].append(ch)
            size += n
        else:
            batches.append([ch])
            size = n
    return batches


def _split(total: int, weights: list[int]) -> list[int]:
    """``total`` shared out in proportion to ``weights`` (integers summing to ``total``)."""
    whole = sum(weights) or 1
    parts = [total * w // whole for w in weights]
    if parts:
        parts[0] += total - sum(parts)
    return parts


def first_class(mentions: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The mentions with each name once, under the class it was listed with first, and the lines left out.

    The grammar lets a model end its list by writing a listed name again
    (:func:`~graphrag_got.extract.classify.mentions.next_line_grammar`); a small model often does so
    under another class ("- Borg (Tool)", later "- Borg (Service)"). That line ends the list: it is no
    second entity. The lines left out are kept in the answer's audit."""
    seen: set[str] = set()
    kept, repeated = [], []
    for name, cls in mentions:
        (repeated if name in seen else kept).append((name, cls))
        seen.add(name)
    return kept, repeated


def ask_mentions(backend: ChatBackend | LlamaBackend, onto: Ontology, chunks: Sequence[Chunk],
                 setup: str | None = None, *, prompts: PromptSet | None = None) -> list[CacheRecord]:
    """The stored answers of ``chunks`` (asked in one call), in their order. A prompt too long for the
    context is asked again one chunk at a time, and a single chunk that does not fit is a failed
    record (``context_overflow``); any other provider failure raises (the run stops, the cache keeps
    what is done)."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    system, classes = mentions_system_prompt(onto, prompts=prompts), list(onto.classes)
    version = prompt_version(prompts)
    spans = [candidate_spans(ch.text) for ch in chunks]
    asked = [i for i, s in enumerate(spans) if s]  # a chunk without a candidate name needs no call

    def record(i: int, **kw: Any) -> CacheRecord:
        ch = chunks[i]
        return CacheRecord(chunk_id=ch.id, chunk_hash=ch.hash, ontology_hash=onto.hash, prompt_version=version,
                           created=created, strategy=STRATEGY, **kw)

    out: dict[int, CacheRecord] = {}
    for i in (i for i in range(len(chunks)) if i not in asked):
        audit = {"strategy": STRATEGY, "spans": 0, "mentions": 0, "texts_in_call": 0, "repeated": [],
                 "unread_lines": [], "finish": "no candidate span"}
        out[i] = record(i, status="ok", parsed={"entities": [], "relations": [], "mentions": audit},
                        raw_responses=[""], calls=0, input_tokens=0, output_tokens=0)
    if asked:
        user = mentions_user_prompt([chunks[i].text for i in asked], prompts=prompts)
        key = call_key(system, user, version)
        try:
            if len(asked) == 1:
                answer: Answer = backend.mentions(system, user, spans[asked[0]], classes, key)
            else:
                answer = backend.mentions_batch(system, user, [spans[i] for i in asked], classes, key)
        except LLMContextError as exc:
            if len(asked) > 1:
                for i in asked:
                    (out[i],) = ask_mentions(backend, onto, [chunks[i]], setup, prompts=prompts)
                return [out[i] for i in range(len(chunks))]
            (i,) = asked
            out[i] = record(i, status="failed", error=str(exc), raw_responses=list(exc.raw_responses), parsed=None,
                            calls=1, reason=FailureReason.CONTEXT_OVERFLOW.value, setup=setup)
            return [out[i] for i in range(len(chunks))]
        reads = read_sections(answer.raw, len(asked))
        weights = [len(chunks[i].text) for i in asked]
        ins, outs = _split(answer.input_tokens, weights), _split(answer.output_tokens, weights)
        reused = _split(answer.reused_tokens, weights)
        for n, (i, read) in enumerate(zip(asked, reads)):
            kept, repeated = first_class(read.mentions)
            audit = {"strategy": STRATEGY, "spans": len(spans[i]), "mentions": len(kept), "texts_in_call": len(asked),
                     "repeated": [f"{name} ({cls})" for name, cls in repeated], "unread_lines": list(read.unread),
                     "finish": answer.finish}
            parsed = {"entities": [{"name": name, "type": cls} for name, cls in kept], "relations": [],
                      "mentions": audit}
            out[i] = record(i, status="ok", parsed=parsed, raw_responses=[answer.raw], calls=int(n == 0),
                            input_tokens=ins[n], output_tokens=outs[n], reused_tokens=reused[n],
                            tokens_estimated=answer.estimated, call_answers={key: answer.raw})
    return [out[i] for i in range(len(chunks))]


def mentions_line(records: Sequence[CacheRecord]) -> str:
    """Totals of the mentions audits of the stored answers: mentions, calls, texts per call."""
    audits = [r.parsed["mentions"] for r in records if r.ok and isinstance(r.parsed, dict)
              and isinstance(r.parsed.get("mentions"), dict)]
    mentions = sum(int(a.get("mentions") or 0) for a in audits)
    no_span = sum(1 for a in audits if not a.get("spans"))
    widest = max((int(a.get("texts_in_call") or 0) for a in audits), default=0)
    typed = sum(1 for r in records if r.ok and isinstance(r.parsed, dict) and "mentions" not in r.parsed)
    repeated = sum(len(a.get("repeated") or []) for a in audits)
    line = (f"mentions: {mentions} mentions in {len(audits)} chunk(s) ({no_span} without a candidate name, asked "
            f"nothing; at most {widest} chunk(s) per call; {repeated} name(s) written again to end a list, left out)")
    return line + (f"; typed relations asked for {typed} chunk(s) (--relations-for)" if typed else "")
