"""One chunk through the classify strategy: mentions, candidate pairs, one scored choice per pair,
assembled into the stored answer every later step reads.

The stored answer (``CacheRecord.parsed``) is the full answer form plus the audit::

    {"entities": [{"name", "type"}...],
     "relations": [{"relation", "subject", "subject_type", "object", "object_type",
                    "probability", "runner_up", "runner_up_probability", "chosen"}...],
     "classify": {"spans", "mentions", "pairs", "pairs_left_out", "answered_none", "unusable", ...}}

For each pair the relation item is its best option other than "none", with that option's
probability among the pair's options and the runner-up (the best other option, "none" included);
``chosen`` says whether it beat every option, "none" included. :func:`answer_items` turns this into
what the validator reads under a probability threshold, with zero model calls (revalidation).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.classify.backend import Answer, ChatBackend, LlamaBackend, read_choice
from graphrag_got.extract.classify.cache import ClassifyCache, call_key
from graphrag_got.extract.classify.mentions import candidate_spans, read_mentions
from graphrag_got.extract.classify.pairs import Pair, candidate_pairs
from graphrag_got.common.text_match import ChunkText
from graphrag_got.extract.extraction import FailureReason
from graphrag_got.ingest.chunking import Chunk
from graphrag_got.llm.calls import LLMContextError
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import (BUILTIN, CLASSIFY_PROMPTS, PromptSet, classify_choice_question,
                                  classify_mentions_task, classify_system_prompt, classify_text_block)

STRATEGY = "classify"
KEEP_FLOOR = 0.02  # a pair's best relation under this probability is not stored (the model said none)


@dataclass
class ClassifyParams:
    window: int = 1  # GRAPHRAG_EVIDENCE_WINDOW: sentences apart the two names of a pair may be
    threshold: float = 0.85  # GRAPHRAG_MENTION_THRESHOLD: how a name is found in the chunk
    max_pairs: int = 60  # GRAPHRAG_CLASSIFY_MAX_PAIRS: questions per chunk at most
    prompts: PromptSet = BUILTIN  # GRAPHRAG_PROMPTS_DIR: the prompts in use (their version keys every call)


@dataclass
class _Calls:
    """The calls of one chunk: raw answers by key (for the replay export) and their cost."""

    raw: dict[str, str] = field(default_factory=dict)
    asked: int = 0
    cached: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    reused_tokens: int = 0
    estimated: bool = False

    def add(self, key: str, answer: Answer | None, stored: dict[str, Any] | None) -> str:
        if stored is not None:
            self.cached += 1
            self.raw[key] = stored["raw"]
            return stored["raw"]
        assert answer is not None
        self.asked += 1
        self.input_tokens += answer.input_tokens
        self.output_tokens += answer.output_tokens
        self.reused_tokens += answer.reused_tokens
        self.estimated |= answer.estimated
        self.raw[key] = answer.raw
        return answer.raw


def _ask(cache: ClassifyCache, calls: _Calls, key: str, ask: Any) -> str:
    stored = cache.get(key)
    if stored is not None:
        return calls.add(key, None, stored)
    answer = ask()
    cache.put(key, {"raw": answer.raw, "input_tokens": answer.input_tokens, "output_tokens": answer.output_tokens,
                    "reused_tokens": answer.reused_tokens, "finish": answer.finish,
                    "created": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    return calls.add(key, answer, None)


def _fact(pair: Pair, label: str | None, probs: dict[str, float] | None) -> dict[str, Any] | None:
    """The relation item of one answered pair (None when the answer was "none" and unscored)."""
    relations = [o for o in pair.options if o.relation is not None]
    if probs is not None:
        best = max(relations, key=lambda o: probs[o.label])
        p = probs[best.label]
        others = sorted((o for o in pair.options if o.label != best.label), key=lambda o: -probs[o.label])
        runner = others[0] if others else None
        if p < KEEP_FLOOR:
            return None
        chosen = all(p >= probs[o.label] for o in pair.options)
    else:
        best = pair.option(label) if label else None
        if best is None or best.relation is None:
            return None
        p, runner, chosen = None, None, True
    (s, sc), (o, oc) = (pair.first, pair.second) if best.forward else (pair.second, pair.first)
    item: dict[str, Any] = {"relation": best.relation, "subject": s, "subject_type": sc, "object": o,
                            "object_type": oc, "chosen": chosen}
    if p is not None:
        item["probability"] = round(p, 4)
        if runner is not None and probs is not None:
            item["runner_up"] = pair.statement(runner)
            item["runner_up_probability"] = round(probs[runner.label], 4)
    return item


def classify_chunk(backend: ChatBackend | LlamaBackend, onto: Ontology, chunk: Chunk, cache: ClassifyCache,
                   params: ClassifyParams, setup: str | None = None) -> CacheRecord:
    """Mentions, pairs and choices of one chunk (cached per call); never raises for a prompt too long
    for the context (a failed record, like the generative strategy)."""
    prompts = params.prompts
    version = prompts.version(*CLASSIFY_PROMPTS)
    base = dict(chunk_id=chunk.id, chunk_hash=chunk.hash, ontology_hash=onto.hash, prompt_version=version,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"))
    system = classify_system_prompt(onto, prompts=prompts)
    block = classify_text_block(chunk.text, prompts=prompts)
    spans = candidate_spans(chunk.text)
    classes = list(onto.classes)
    calls = _Calls()
    try:
        user = block + classify_mentions_task(prompts=prompts)
        key = call_key("mentions", system, user, version)
        raw = _ask(cache, calls, key, lambda: backend.mentions(system, user, spans, classes, key))
        read = read_mentions(raw)
        text = ChunkText(chunk.text, offset=chunk.start)
        pairs, left_out = candidate_pairs(onto, list(read.mentions), text, window=params.window,
                                          threshold=params.threshold, max_pairs=params.max_pairs)
        relations: list[dict[str, Any]] = []
        none = unusable = unscored = 0
        for pair in pairs:
            labels = [o.label for o in pair.options]
            question = classify_choice_question(pair.passage, [(o.label, pair.statement(o)) for o in pair.options],
                                                prompts=prompts)
            user = block + question
            key = call_key("choice", system, user, version)
            raw = _ask(cache, calls, key, lambda: backend.choose(system, user, labels, key))
            label, probs = read_choice(raw, labels)
            if label is None:
                unusable += 1
                continue
            unscored += int(probs is None)
            none += int(pair.option(label).relation is None)  # type: ignore[union-attr]
            fact = _fact(pair, label, probs)
            if fact is not None:
                relations.append(fact)
    except LLMContextError as exc:
        return CacheRecord(**base, status="failed", error=str(exc), raw_responses=list(calls.raw.values()),
                           parsed=None, calls=calls.asked, reason=FailureReason.CONTEXT_OVERFLOW.value, setup=setup,
                           strategy=STRATEGY)
    audit = {"strategy": STRATEGY, "spans": len(spans), "mentions": len(read.mentions), "pairs": len(pairs),
             "pairs_left_out": left_out, "answered_none": none, "unusable": unusable, "unscored": unscored,
             "unread_lines": list(read.unread), "asked": calls.asked, "cached": calls.cached}
    parsed = {"entities": [{"name": n, "type": c} for n, c in read.mentions], "relations": relations,
              "classify": audit}
    return CacheRecord(**base, status="ok", parsed=parsed, raw_responses=[calls.raw[k] for k in calls.raw][:1],
                       calls=calls.asked, input_tokens=calls.input_tokens, output_tokens=calls.output_tokens,
                       tokens_estimated=calls.estimated, strategy=STRATEGY, reused_tokens=calls.reused_tokens,
                       call_answers=calls.raw)


def answer_items(parsed: Any, min_probability: float) -> Any:
    """A stored classify answer as the validator reads it under ``min_probability``: facts the model
    did not choose ("none" or another relation won) and under the threshold are left out (the model's
    answer for that pair); a chosen fact under it stays, for the validator to refuse as
    ``low_probability``. Anything else is returned as it is."""
    if not isinstance(parsed, dict) or not isinstance(parsed.get("classify"), dict):
        return parsed
    relations = parsed.get("relations")
    if not isinstance(relations, list):
        return {"entities": parsed.get("entities"), "relations": relations}
    kept = []
    for item in relations:
        if isinstance(item, dict) and item.get("chosen") is False:
            p = item.get("probability")
            if not isinstance(p, (int, float)) or p < min_probability:
                continue
        kept.append(item)
    return {"entities": parsed.get("entities"), "relations": kept}
