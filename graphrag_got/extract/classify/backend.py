"""Who answers the classify questions: the in-process llama.cpp model (grammar and log-probabilities)
or any other chat model (a JSON schema, and a choice without a score).

Every answer is returned as the raw text the cache, the audit and the replay files keep:

* a mentions answer: lines ``- name (Class)`` (llama.cpp) or ``{"mentions": [...]}`` (others);
* a choice: ``{"answer": "B", "logprobs": {"A": -2.3, "B": -0.1, ...}}`` (llama.cpp: the log-probability
  of each option label, renormalized over the labels) or ``{"answer": "B"}`` (others). A replayed
  recording returns whatever was recorded, so a recording of the embedded model replays its scores.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from graphrag_got.extract.classify.mentions import MAX_MENTIONS, mention_schema, next_line_grammar, sections_schema
from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import LLAMA_LOCK, Attempt, LLMContextError, constraint_kwargs, invoke_model, is_llamacpp

MENTION_MAX_TOKENS = 320
#: The same list as JSON (a server's schema grammar lets the model indent it): about twice the tokens.
JSON_MENTION_MAX_TOKENS = 2 * MENTION_MAX_TOKENS
CHOICE_MAX_TOKENS = 16


@dataclass
class Answer:
    """One call's raw answer and its cost."""

    raw: str
    input_tokens: int = 0
    output_tokens: int = 0
    reused_tokens: int = 0
    estimated: bool = False
    finish: str | None = None


class ChatBackend:
    """Any LangChain chat model (remote servers, Ollama, the replay provider): schema-constrained answers."""

    scored = False

    def __init__(self, chat: BaseChatModel):
        self.chat = chat

    def _call(self, system: str, user: str, schema: dict[str, Any], key: str, max_tokens: int) -> Answer:
        attempt = Attempt()
        raw = invoke_model(self.chat, [SystemMessage(content=system), HumanMessage(content=user)], attempt,
                           max_tokens, replay_key=key, **constraint_kwargs(self.chat, schema))
        return Answer(raw, attempt.input_tokens, attempt.output_tokens, estimated=attempt.tokens_estimated)

    def mentions(self, system: str, user: str, spans: list[tuple[str, ...]], classes: list[str], key: str) -> Answer:
        return self._call(system, user, mention_schema(spans, classes), key, JSON_MENTION_MAX_TOKENS)

    def mentions_batch(self, system: str, user: str, sections: list[list[tuple[str, ...]]], classes: list[str],
                       key: str) -> Answer:
        """The mentions of several texts in one call (a list per text, names enumerated per text)."""
        return self._call(system, user, sections_schema(sections, classes), key,
                          JSON_MENTION_MAX_TOKENS * len(sections))

    def choose(self, system: str, user: str, labels: Sequence[str], key: str) -> Answer:
        schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": list(labels)}},
                  "required": ["answer"], "additionalProperties": False}
        return self._call(system, user, schema, key, CHOICE_MAX_TOKENS)


class LlamaBackend:
    """The embedded llama.cpp adapter: names copied under a per-chunk grammar, choices scored by the
    log-probability of each label token (one forward pass over the question, nothing generated)."""

    scored = True

    def __init__(self, chat: Any):
        from graphrag_got.llm.scoring import LlamaScorer

        self.chat = chat
        self.scorer = LlamaScorer(chat._llama)

    def _run(self, call: Any) -> Any:
        """One llama.cpp call under the lock; a prompt too long for the context becomes LLMContextError,
        any other failure LLMError (the provider is broken: the run stops, the cache keeps what is done)."""
        with LLAMA_LOCK:
            self._prepare()
            try:
                return call()
            except ValueError as exc:
                if "context window" in str(exc):
                    raise LLMContextError(f"the prompt does not fit in the model's context window ({exc}); this "
                                          "input is skipped. Use smaller chunks (GRAPHRAG_CHUNK_MAX_CHARS) or a larger "
                                          "context (GRAPHRAG_LLAMACPP_N_CTX)", raw_responses=[]) from exc
                raise LLMError(f"the model call failed: {type(exc).__name__}: {exc}") from exc
            except RuntimeError as exc:
                raise LLMError(f"the model call failed: {type(exc).__name__}: {exc}") from exc

    def _prepare(self) -> None:
        threads = getattr(self.chat, "_threads_for_call", None)
        if callable(threads):  # the adapter's adaptive threads (fewer when the cores are busy)
            threads()

    def mentions(self, system: str, user: str, spans: list[tuple[str, ...]], classes: list[str], key: str) -> Answer:
        if not spans:
            return Answer("", finish="no candidate span")
        prompt = self.scorer.chat_prompt(system, user)
        text, stats, finish = self._run(lambda: self.scorer.generate_lines(
            prompt, lambda lines: next_line_grammar(spans, classes, lines), MAX_MENTIONS, MENTION_MAX_TOKENS))
        self._count(stats.prompt_tokens, stats.reused_tokens)
        return Answer(text, stats.prompt_tokens, stats.output_tokens, stats.reused_tokens, finish=finish)

    def mentions_batch(self, system: str, user: str, sections: list[list[tuple[str, ...]]], classes: list[str],
                       key: str) -> Answer:
        """The mentions of several texts in one call: the answer of text ``n`` follows the header
        :func:`~graphrag_got.prompts.mentions_section` (written for the model, not generated), its lines
        under the grammar of that text's own spans; each continues the one before, so the texts are
        evaluated once."""
        from graphrag_got.prompts import mentions_section

        prompt = self.scorer.chat_prompt(system, user)
        answer, total, finishes = "", Answer(""), []
        for n, spans in enumerate(sections, 1):
            answer += mentions_section(n)
            if not spans:
                continue
            text, stats, finish = self._run(lambda: self.scorer.generate_lines(
                prompt + answer, lambda lines: next_line_grammar(spans, classes, lines), MAX_MENTIONS,
                MENTION_MAX_TOKENS))
            answer += text
            if not finishes:  # the question's own tokens: later texts continue the same prompt
                total.input_tokens, total.reused_tokens = stats.prompt_tokens, stats.reused_tokens
            total.output_tokens += stats.output_tokens
            finishes.append(finish)
            self._count(stats.prompt_tokens, stats.reused_tokens)
        total.raw, total.finish = answer, ",".join(dict.fromkeys(finishes)) or "no candidate span"
        return total

    def choose(self, system: str, user: str, labels: Sequence[str], key: str) -> Answer:
        prompt = self.scorer.chat_prompt(system, user)
        logprobs, stats = self._run(lambda: self.scorer.label_logprobs(prompt, labels))
        self._count(stats.prompt_tokens, stats.reused_tokens)
        best = max(logprobs, key=lambda k: logprobs[k])
        raw = json.dumps({"answer": best, "logprobs": {k: round(v, 4) for k, v in logprobs.items()}})
        return Answer(raw, stats.prompt_tokens, 0, stats.reused_tokens)

    def _count(self, prompt: int, reused: int) -> None:
        stats = getattr(self.chat, "prefix_stats", None)
        if stats is not None:
            stats.add(prompt, reused)


def backend_for(chat: BaseChatModel) -> ChatBackend | LlamaBackend:
    """The llama.cpp backend for our embedded adapter, the chat backend for everything else."""
    if is_llamacpp(chat) and getattr(chat, "_llama", None) is not None:
        return LlamaBackend(chat)
    return ChatBackend(chat)


def read_choice(raw: str, labels: Sequence[str]) -> tuple[str | None, dict[str, float] | None]:
    """(chosen label or None, probabilities per label or None) of a raw choice answer."""
    from graphrag_got.llm.scoring import probabilities

    try:
        data = json.loads(raw)
    except (TypeError, ValueError):
        text = (raw or "").strip()
        return (text if text in labels else None), None
    if not isinstance(data, dict):
        return None, None
    probs = None
    logprobs = data.get("logprobs")
    if isinstance(logprobs, dict):
        values = {k: float(v) for k, v in logprobs.items()
                  if k in labels and isinstance(v, (int, float)) and not isinstance(v, bool)}
        if len(values) == len(labels):
            probs = probabilities(values)
    answer = data.get("answer")
    if probs is not None:
        answer = max(probs, key=lambda k: probs[k])
    return (answer if answer in labels else None), probs
