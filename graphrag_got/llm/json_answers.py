"""JSON answers: getting a JSON object out of a chat model reliably.

For Ollama, llama.cpp and OpenAI-compatible servers we ask for raw text constrained by a JSON schema
(Ollama's ``format``, ``response_format``) rather than ``with_structured_output``: the raw answer
must be kept for the cache, the audit and ``--revalidate``, and per-item validation happens in
:mod:`graphrag_got.extract.validate`, not in the parser. A LangChain model of any other provider
uses its structured output (:mod:`graphrag_got.llm.providers.langchain_provider`), and the JSON text
of the result is what we keep. :func:`parse_json_text` strips Markdown fences and repairs broken
JSON; :func:`complete_json` validates the answer and asks once more after a bad one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, TypeVar

import json_repair
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from pydantic import BaseModel, ValidationError

from graphrag_got.common.sanitize import MAX_JSON_DEPTH, clean_json
from graphrag_got.llm.calls import Attempt, LLMContextError, LLMOutputError, constraint_kwargs, invoke_model

T = TypeVar("T", bound=BaseModel)


_FENCE = re.compile(r"^\s*```[a-zA-Z0-9_-]*\s*\n?(.*?)\n?```\s*$", re.DOTALL)
#: Longest answer parse_json_text reads (an extraction answer is a few kB; more is a model looping).
MAX_ANSWER_CHARS = 1_000_000
#: Longest broken answer handed to json_repair, whose time grows faster than linearly with
#: hostile input (about 2 s for 300 kB of escaped quotes); valid JSON up to MAX_ANSWER_CHARS parses.
MAX_REPAIR_CHARS = 200_000
# A double-quoted string (an unterminated one runs to the end, so the scan stays linear) or a bracket.
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\Z)|[\[\]{}]', re.DOTALL)


def _bracket_depth(body: str) -> int:
    """Deepest nesting of ``[``/``{`` outside double-quoted strings, counted without parsing.

    Checked before any parser runs: ``json`` and ``json_repair`` recurse once per level, so 1,000
    ``[`` (small models loop like this) would raise RecursionError inside them.
    """
    depth = deepest = 0
    for m in _STRUCTURE.finditer(body):
        token = m.group()
        if token in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif token in "]}":
            depth = max(0, depth - 1)
    return deepest


def parse_json_text(text: str) -> tuple[Any, bool]:
    """Parse a model's JSON answer: strip Markdown fences, then repair if plain parsing fails.

    Returns ``(value, repaired)``; every key and string of ``value`` is cleaned
    (:func:`graphrag_got.common.sanitize.clean_json`). Raises ``ValueError``, and nothing else, when
    nothing usable is there: no JSON, JSON that cannot be repaired, an answer longer than
    ``MAX_ANSWER_CHARS`` or nested more than ``MAX_JSON_DEPTH`` levels.
    """
    if len(text) > MAX_ANSWER_CHARS:
        raise ValueError(f"the answer is {len(text):,} characters long, more than the {MAX_ANSWER_CHARS:,} "
                         "accepted")
    body = text.strip()
    m = _FENCE.match(body)
    if m:
        body = m.group(1).strip()
    if body.count("[") + body.count("{") > MAX_JSON_DEPTH and _bracket_depth(body) > MAX_JSON_DEPTH:
        raise ValueError(f"the answer nests brackets more than {MAX_JSON_DEPTH} levels deep; no answer we ask for "
                         "is that deep (the model was probably looping)")
    try:
        value = json.loads(body)
    except json.JSONDecodeError as exc:
        first_error = f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        first_error = str(exc)
    else:
        return clean_json(value), False
    # json_repair closes truncated arrays/objects and fixes quotes/commas; what it cannot fix
    # comes back as "" or a non-container, which we refuse.
    start = min([i for i in (body.find("{"), body.find("[")) if i >= 0], default=-1)
    if start < 0:
        raise ValueError(f"no JSON object in the answer ({first_error})")
    if len(body) - start > MAX_REPAIR_CHARS:
        raise ValueError(f"invalid JSON ({first_error}), too long to repair ({len(body) - start:,} characters, "
                         f"at most {MAX_REPAIR_CHARS:,} are repaired)")
    try:
        repaired = json_repair.loads(body[start:])
    except Exception as exc:  # a third-party parser on hostile input: any failure means "unusable"
        raise ValueError(f"invalid JSON that could not be repaired ({first_error}; repair failed with "
                         f"{type(exc).__name__})") from None
    if not isinstance(repaired, (dict, list)) or repaired in ({}, []):
        raise ValueError(f"invalid JSON that could not be repaired ({first_error})")
    return clean_json(repaired), True


def complete_json(chat: BaseChatModel, system: str, user: str, model: type[T] | None = None,
                  schema: dict[str, Any] | None = None, replay_key: str | None = None,
                  retries: int = 1, max_tokens: int | None = None) -> tuple[T | Any, Attempt]:
    """A JSON answer validated by ``model`` (any JSON object when None), with repair and retries.

    Decoding is constrained by ``schema`` (or the model's schema) where the provider supports it.
    After a bad answer, the model is asked once more with the error spelled out.
    Raises :class:`LLMOutputError` carrying every raw response when all attempts fail, and its
    subclass :class:`LLMContextError` when the prompt does not fit in the context window; any
    other :class:`LLMError` means the provider itself cannot answer.

    Whatever the model sends, the result is safe: strings and keys are cleaned
    (:mod:`graphrag_got.common.sanitize`), nesting is bounded, and the raw responses kept in the
    :class:`Attempt` (or the error) can be written as UTF-8.
    """
    from graphrag_got.ontology.schema import llm_schema

    if schema is None and model is not None:
        schema = llm_schema(model)

    def read(text: str) -> tuple[Any, bool]:
        value, repaired = parse_json_text(text)
        if model is not None:
            value = model.model_validate(value)
        elif not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return value, repaired

    return complete_answer(chat, system, user, read, schema=schema, replay_key=replay_key, retries=retries,
                           max_tokens=max_tokens, what="JSON", again="Answer again with only the JSON object, "
                                                                     "complete and valid, nothing else.")


def complete_answer(chat: BaseChatModel, system: str, user: str, read: Callable[[str], tuple[Any, bool]], *,
                    schema: dict[str, Any] | None = None, grammar: str | None = None,
                    end_on_repeated_line: bool | str = False,
                    replay_key: str | None = None, retries: int = 1, max_tokens: int | None = None,
                    what: str = "answer",
                    again: str = "Answer again, in the form asked, nothing else.",
                    refuse_cut: bool = False) -> tuple[Any, Attempt]:
    """An answer read by ``read`` (text -> (value, repaired); ``ValueError`` or ``ValidationError`` for a
    bad one), asked once more after a bad answer with the error and ``again`` spelled out. Decoding
    follows ``grammar`` where the provider takes grammars (llama.cpp), else ``schema`` where it takes
    one. Raises as :func:`complete_json`; ``refuse_cut``: also LLMContextError for an answer the context
    window cut short (the server stopped it for length well before the length allowed)."""
    attempt = Attempt()
    messages: list[BaseMessage] = [SystemMessage(content=system), HumanMessage(content=user)]
    kwargs = {**constraint_kwargs(chat, schema, grammar, end_on_repeated_line=end_on_repeated_line),
              "replay_key": replay_key, **({"refuse_cut": True} if refuse_cut else {})}
    for i in range(retries + 1):
        try:
            text = invoke_model(chat, messages, attempt, max_tokens, **kwargs)
        except LLMContextError as exc:  # the retry prompt (with the bad answer) can be the one too long
            exc.raw_responses = list(attempt.raw_responses) + list(exc.raw_responses)  # a cut answer is kept
            raise
        attempt.raw_responses.append(text)
        try:
            value, repaired = read(text)
            attempt.repaired = attempt.repaired or repaired
            return value, attempt
        except (ValueError, ValidationError, RecursionError) as exc:
            error = _short_error(exc)
            attempt.errors.append(error)
            if i < retries:
                attempt.retried = True
                messages = messages + [
                    AIMessage(content=text),
                    HumanMessage(content=f"That answer was not valid: {error}. {again}"),
                ]
    raise LLMOutputError(f"no valid {what} after {retries + 1} attempt(s): {attempt.errors[-1]}",
                         attempt.raw_responses)


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        parts = [f"{'.'.join(str(p) for p in e['loc']) or 'root'}: {e['msg']}" for e in exc.errors()[:5]]
        return "; ".join(parts)
    return str(exc)
