"""Scoring and constrained copying with the in-process llama.cpp model (the ``classify`` extraction).

Two operations a small model is good at, without free generation:

* :meth:`LlamaScorer.generate`: a completion constrained by a GBNF grammar
  (``llama_cpp.LlamaGrammar``), e.g. a grammar whose names are exactly the spans of one chunk;
* :meth:`LlamaScorer.label_logprobs`: one forward pass over a prompt, then the log-probability of
  each option label (single tokens such as ``A``, ``B``...) as the first token of the answer. No
  token is generated.

Both evaluate only what differs from the tokens already in the KV cache: the longest common prefix
with the previous prompt is kept (the ontology and the chunk come first, the question last), so a
question costs its own short suffix. llama-cpp-python's ``Llama.generate`` does this for
completions; for scoring we do it here, because ``Llama.eval`` keeps no logits unless the model was
built with ``logits_all`` (which costs a vocabulary-sized row per prompt token): we read the last
token's logits from the context right after ``eval``.

Callers hold :data:`graphrag_got.llm.calls.LLAMA_LOCK` around every call (one ``Llama`` is not
thread-safe); the adapter in :mod:`graphrag_got.llm.providers.llamacpp_chat` owns the ``Llama``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence


@dataclass
class Evaluated:
    """Token counts of one call: prompt tokens, how many were reused from the KV cache, output tokens."""

    prompt_tokens: int = 0
    reused_tokens: int = 0
    output_tokens: int = 0


class LlamaScorer:
    """Constrained generation and label scoring over one ``llama_cpp.Llama`` (see the module docstring)."""

    def __init__(self, llama: Any):
        self.llama = llama
        self._formatter: Any = None
        self._label_ids: dict[str, int] = {}

    # ------------------------------------------------------------------ prompts
    def chat_prompt(self, system: str, user: str) -> str:
        """The model's own chat template applied to a system and a user message, ready for the answer."""
        if self._formatter is None:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            model = self.llama._model
            template = self.llama.metadata.get("tokenizer.chat_template")
            if not template:
                raise ValueError("the model file has no chat template (tokenizer.chat_template)")
            eos, bos = model.token_eos(), model.token_bos()
            self._formatter = Jinja2ChatFormatter(template=template,
                                                  eos_token=model.token_get_text(eos) if eos != -1 else "",
                                                  bos_token=model.token_get_text(bos) if bos != -1 else "")
        out = self._formatter(messages=[{"role": "system", "content": system}, {"role": "user", "content": user}])
        return str(out.prompt)

    def tokens(self, prompt: str) -> list[int]:
        """The prompt's tokens as ``Llama.create_completion`` makes them (special tokens parsed)."""
        return list(self.llama.tokenize(prompt.encode("utf-8"), special=True))

    def label_id(self, label: str) -> int:
        """The token id of a one-token label; ValueError when the label is not a single token."""
        hit = self._label_ids.get(label)
        if hit is None:
            ids = self.llama.tokenize(label.encode("utf-8"), add_bos=False, special=False)
            if len(ids) != 1:
                raise ValueError(f"option label {label!r} is {len(ids)} tokens for this model, not one")
            hit = self._label_ids[label] = int(ids[0])
        return hit

    # ------------------------------------------------------------------ calls
    def _evaluate(self, tokens: list[int]) -> Evaluated:
        """Bring the KV cache to ``tokens``: keep the common prefix, evaluate the rest (at least one
        token, so that the context's logits are the last prompt token's)."""
        llama = self.llama
        held = llama.n_tokens
        cached = llama._input_ids[:held]
        common = 0
        limit = min(held, len(tokens) - 1)
        while common < limit and int(cached[common]) == tokens[common]:
            common += 1
        llama.n_tokens = common
        llama.eval(tokens[common:])
        return Evaluated(prompt_tokens=len(tokens), reused_tokens=common)

    def label_logprobs(self, prompt: str, labels: Sequence[str]) -> tuple[dict[str, float], Evaluated]:
        """Log-probability of each label as the answer's first token, renormalized over the labels
        (so they sum to one as probabilities); one forward pass, nothing generated."""
        import numpy as np

        tokens = self.tokens(prompt)
        if len(tokens) >= self.llama.n_ctx():
            raise ValueError(f"Requested tokens ({len(tokens)}) exceed context window of {self.llama.n_ctx()}")
        stats = self._evaluate(tokens)
        logits = np.ctypeslib.as_array(self.llama._ctx.get_logits(), shape=(self.llama.n_vocab(),))
        raw = np.array([float(logits[self.label_id(lab)]) for lab in labels], dtype=np.float64)
        top = raw.max()
        log_norm = top + math.log(float(np.exp(raw - top).sum()))
        return {lab: float(v - log_norm) for lab, v in zip(labels, raw)}, stats

    def generate(self, prompt: str, grammar: str, max_tokens: int) -> tuple[str, Evaluated, str | None]:
        """A greedy completion of ``prompt`` under the GBNF ``grammar``; (text, counts, finish reason)."""
        from llama_cpp import LlamaGrammar

        compiled = LlamaGrammar.from_string(grammar, verbose=False)
        held = [int(t) for t in self.llama._input_ids[:self.llama.n_tokens]]
        out = self.llama.create_completion(prompt=prompt, grammar=compiled, max_tokens=max_tokens, temperature=0.0,
                                           repeat_penalty=1.0, seed=0)
        usage = out.get("usage") or {}
        prompt_tokens = int(usage.get("prompt_tokens") or 0)
        after = [int(t) for t in self.llama._input_ids[:prompt_tokens]]
        reused = 0
        for a, b in zip(held, after):
            if a != b:
                break
            reused += 1
        stats = Evaluated(prompt_tokens=prompt_tokens, reused_tokens=reused,
                          output_tokens=int(usage.get("completion_tokens") or 0))
        choice = out["choices"][0]
        return str(choice.get("text") or ""), stats, choice.get("finish_reason")

    def generate_lines(self, prompt: str, grammar_for: Callable[[list[str]], str | None], max_lines: int,
                       max_tokens: int) -> tuple[str, Evaluated, str]:
        """Lines generated one at a time, each under the grammar ``grammar_for(lines so far)`` returns
        (None: stop), so a line's choices can depend on the earlier ones (a name listed once is no
        longer offered). Each call continues the previous one, so only the new line's tokens are
        evaluated. Stops at an empty line (the grammar's end), ``max_lines`` or ``max_tokens`` in all."""
        lines: list[str] = []
        total = Evaluated()
        finish = "end"
        while True:
            if len(lines) >= max_lines:
                finish = "max_lines"
                break
            if total.output_tokens >= max_tokens:
                finish = "max_tokens"
                break
            grammar = grammar_for(lines)
            if grammar is None:
                finish = "nothing left"
                break
            text, stats, _ = self.generate(prompt + "".join(lines), grammar, max(8, max_tokens - total.output_tokens))
            total.prompt_tokens = stats.prompt_tokens
            total.reused_tokens += stats.reused_tokens if not lines else 0
            total.output_tokens += stats.output_tokens
            if not text.strip():
                break
            lines.append(text if text.endswith("\n") else text + "\n")
        return "".join(lines), total, finish


def probabilities(logprobs: dict[str, float]) -> dict[str, float]:
    """Log-probabilities -> probabilities that sum to one (over the given labels)."""
    if not logprobs:
        return {}
    top = max(logprobs.values())
    weights = {k: math.exp(v - top) for k, v in logprobs.items()}
    total = sum(weights.values())
    return {k: w / total for k, w in weights.items()}
