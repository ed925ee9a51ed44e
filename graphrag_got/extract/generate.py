"""The generate strategy's call: one chunk -> one LLM answer (plus recall passes) -> a stored record.

The model writes the chunk's entities and facts in the configured answer form under its constraint;
:func:`extract_chunk` never raises for a bad answer or a prompt too long for the context: the record
is then a failed one with its reason. Used by :class:`graphrag_got.extract.strategies.Generate` (and
the mentions strategy's typed relations of chosen documents).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.extraction import FailureReason
from graphrag_got.extract.forms import AnswerForm, Constraint, answer_form
from graphrag_got.ingest.chunking import Chunk
from graphrag_got.errors import LLMError
from graphrag_got.llm.calls import Attempt, LLMContextError, LLMOutputError, constraint_kwargs, invoke_model
from graphrag_got.llm.json_answers import complete_answer
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import EXTRACT_PROMPTS, EXTRACTION_VERSION, PromptSet, extraction_user_prompt
from graphrag_got.prompts.extraction import form_text, gleaning_prompt

PROMPT_VERSION = EXTRACTION_VERSION  # the built-in prompts' (a custom prompt adds its digest: PromptSet.version)


def record_base(chunk: Chunk, onto: Ontology, version: str = PROMPT_VERSION) -> dict[str, Any]:
    """The fields every stored record of ``chunk`` starts with."""
    return dict(chunk_id=chunk.id, chunk_hash=chunk.hash, ontology_hash=onto.hash, prompt_version=version,
                created=datetime.now(timezone.utc).isoformat(timespec="seconds"))


def extract_chunk(chat: BaseChatModel, onto: Ontology, chunk: Chunk, schema: dict[str, Any] | Constraint | None,
                  system: str, setup: str | None = None, *, prompts: PromptSet | None = None,
                  form: str | AnswerForm = "full", gleanings: int = 0) -> CacheRecord:
    """One LLM call (plus at most one retry) for one chunk; never raises for a bad answer or a prompt
    too long for the context (a failed record with its :class:`FailureReason`). ``prompts``: the
    prompts in use (``system`` is already their system prompt); ``form``: the answer form asked, whose
    constraint ``schema`` is (a JSON schema, or the form's :class:`Constraint`); ``gleanings``: recall
    passes after the answer (:func:`glean`)."""
    base = record_base(chunk, onto, prompts.version(*EXTRACT_PROMPTS) if prompts is not None else PROMPT_VERSION)
    shape = answer_form(form)
    limit = shape.for_text(schema if isinstance(schema, Constraint) else Constraint(schema=schema), chunk.text)

    user = extraction_user_prompt(chunk.text, prompts=prompts, form=shape.name)
    try:
        value, attempt = complete_answer(
            chat, system, user, shape.read,
            schema=limit.schema, grammar=limit.grammar, end_on_repeated_line=limit.end_on_repeated_line,
            replay_key=chunk.hash,
            what=shape.what, again=form_text(shape.name).again, refuse_cut=True)
    except LLMContextError as exc:
        return CacheRecord(**base, status="failed", error=str(exc), raw_responses=exc.raw_responses, parsed=None,
                           calls=len(exc.raw_responses) + (0 if exc.cut else 1),  # a cut answer is one of them
                           reason=FailureReason.CONTEXT_OVERFLOW.value, setup=setup)
    except LLMOutputError as exc:
        return CacheRecord(**base, status="failed", error=str(exc), raw_responses=exc.raw_responses, parsed=None,
                           calls=len(exc.raw_responses), reason=FailureReason.UNUSABLE_ANSWER.value, setup=setup)
    if gleanings:
        value = glean(chat, shape, system, user, value, attempt, gleanings, limit, replay_key=chunk.hash,
                      prompts=prompts)
    return CacheRecord(**base, status="ok", parsed=value, raw_responses=attempt.raw_responses,
                       repaired=attempt.repaired, retried=attempt.retried, errors=attempt.errors,
                       calls=len(attempt.raw_responses), input_tokens=attempt.input_tokens,
                       output_tokens=attempt.output_tokens, tokens_estimated=attempt.tokens_estimated)


def glean(chat: BaseChatModel, form: AnswerForm, system: str, user: str, value: Any, attempt: Attempt,
          passes: int, limit: Constraint, *, replay_key: str, prompts: PromptSet | None = None) -> Any:
    """Recall passes (Microsoft GraphRAG's "gleanings"): after the answer, the model is asked in the same
    conversation for what it missed, ``passes`` times; each answer is read like the first and merged into
    it (:meth:`AnswerForm.merge`; repeats are merged later, like any repeated item). The conversation's
    start is the first call's prompt, so a server's prompt cache serves it. A pass whose answer does not
    read, or whose call fails, ends the passes: the answer so far is kept, the error in ``attempt.errors``."""
    messages: list[Any] = [SystemMessage(content=system), HumanMessage(content=user)]
    kwargs = {**constraint_kwargs(chat, limit.schema, limit.grammar, end_on_repeated_line=limit.end_on_repeated_line),
              "replay_key": replay_key}
    last = attempt.raw_responses[-1]
    for i in range(passes):
        messages += [AIMessage(content=last), HumanMessage(content=gleaning_prompt(prompts=prompts))]
        try:
            last = invoke_model(chat, messages, attempt, None, **kwargs)
        except LLMError as exc:  # the first answer stands; a provider that stops is seen at the next chunk
            attempt.errors.append(f"recall pass {i + 1}: {exc}")
            break
        attempt.raw_responses.append(last)
        if not last.strip():
            break  # nothing missing, by the model's word
        try:
            more, _ = form.read(last)
        except ValueError as exc:
            attempt.errors.append(f"recall pass {i + 1}: {exc}")
            break
        value = form.merge(value, more)
    return value


def one_call(ask: Callable[..., CacheRecord], *args: Any, **kwargs: Any) -> list[CacheRecord]:
    """``ask``'s record of one chunk, in a list, with its wall time in ``seconds`` when it set none."""
    start = time.monotonic()
    rec = ask(*args, **kwargs)
    if rec.seconds is None:
        rec.seconds = round(time.monotonic() - start, 3)
    return [rec]


__all__ = ["PROMPT_VERSION", "extract_chunk", "glean", "one_call", "record_base"]
