"""Types once per term: the distinct terms of a corpus sorted into the ontology's classes, many a call.

A vault of thousands of notes has far fewer distinct key terms than chunks, and a term's class does not
change from note to note, so the model is asked about each term once, in batched calls
(``GRAPHRAG_TERM_TYPING_BATCH`` terms a call, each with the line it is first written in), and the
answer is stored per term (:class:`TermTypeCache`, keyed by the model, the ontology, the prompt version
and the term's normalized name): a rerun, a daily update or another vault with the same ontology asks
nothing for a term already typed. A term no class fits is answered ``none`` and stays an untyped
:data:`~graphrag_got.ontology.model.TERM_CLASS`.

The answer is one line per term, ``<number>. <term> (<class or none>)``: under a GBNF grammar that writes
the batch's numbers and terms, in order, and lets the model choose only among the ontology's classes where
the model runs on llama.cpp; under a JSON schema (``{"1": class, "2": class...}``) for other providers.
Writing the term again costs a few output tokens a term, and is what keeps a small model's answers on the
right line: asked for the classes alone (``1. Tool``), a 1.5B model drifted by a line or answered
``none`` for every term of the batch once it had for the first. Calls
run ``workers`` at once; each call's types are stored as soon as it returns, so an interrupted run keeps
them. A call the provider fails stops the typing with :class:`~graphrag_got.errors.LLMError` (the run
stops; what is stored stays).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

from graphrag_got.common.keyed_cache import KeyedJsonCache
from graphrag_got.extract.terms.find import FoundTerm
from graphrag_got.llm.grammar import literal, one_of
from graphrag_got.llm.json_answers import complete_answer
from graphrag_got.ontology.model import Ontology
from graphrag_got.prompts import BUILTIN, NO_CLASS, TERMS_PROMPTS, PromptSet, terms_system_prompt, terms_user_prompt

__all__ = ["TermTypeCache", "TypingRun", "read_types", "type_grammar", "type_schema", "type_terms"]

logger = logging.getLogger(__name__)

TOKENS_PER_TERM = 8  # the answer's budget past the term itself: "12. " and " (Concept)\n"; JSON about as much
_ANSWER_LINE = re.compile(r"^\s*(\d+)\s*[.):]\s*(?:.*\(\s*(?P<cls>[^()]+?)\s*\)|(?P<bare>[^()]+?))\s*$")


class TermTypeCache(KeyedJsonCache):
    """``{"term", "type"}`` per term, under ``<cache>/term-types/<model>/``: ``type`` None for a term no
    class fits."""

    kind = "term-types"

    def __init__(self, root: Any, model: str, onto: Ontology, prompts: PromptSet | None = None):
        super().__init__(root, model)
        self.prefix = f"{(prompts or BUILTIN).version(*TERMS_PROMPTS)}\n{onto.hash}\n"

    def key(self, term_key: str) -> str:
        return "term:" + hashlib.sha256((self.prefix + term_key).encode("utf-8")).hexdigest()

    def accepts(self, key: str, data: Any) -> bool:
        return isinstance(data, dict) and isinstance(data.get("term"), str) \
            and (data.get("type") is None or isinstance(data.get("type"), str))

    def type_of(self, term_key: str) -> tuple[bool, str | None]:
        """(stored, class or None) of the term with normalized name ``term_key``."""
        data = self.get(self.key(term_key))
        return (False, None) if data is None else (True, data["type"])

    def store(self, term_key: str, name: str, cls: str | None) -> None:
        self.put(self.key(term_key), {"term": name, "type": cls})


def type_grammar(terms: Sequence[str], classes: Sequence[str]) -> str:
    """GBNF: one line ``<k>. <term> (<class or none>)`` per term, in order."""
    rules = ["root ::= " + " ".join(f"l{k}" for k in range(1, len(terms) + 1)),
             one_of("cls", [*classes, NO_CLASS])]
    rules += [f"l{k} ::= {literal(f'{k}. {term} (')} cls {literal(')' + chr(10))}"
              for k, term in enumerate(terms, 1)]
    return "\n".join(rules) + "\n"


def type_schema(n: int, classes: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of the same answer: ``{"1": class, ..., "n": class}``."""
    choice = {"type": "string", "enum": [*classes, NO_CLASS]}
    keys = [str(k) for k in range(1, n + 1)]
    return {"type": "object", "properties": {k: choice for k in keys}, "required": keys, "additionalProperties": False}


def read_types(raw: str, n: int, classes: Sequence[str]) -> list[str | None]:
    """The class of each of the ``n`` terms in ``raw`` (lines or JSON); None for ``none``. A term the
    answer skips or gives an unknown class is None too, and counted by the caller; an answer that
    gives none of the ``n`` is a ValueError (asked once more)."""
    known = {c.lower(): c for c in classes}
    found: dict[int, str | None] = {}
    text = raw.strip()
    if text.startswith("{"):
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        items = [(k, v) for k, v in data.items() if isinstance(v, str)]
    else:
        items = [(m.group(1), m.group("cls") or m.group("bare")) for line in text.splitlines()
                 if (m := _ANSWER_LINE.match(line))]
    for k, value in items:
        if str(k).isdigit() and 1 <= int(k) <= n and int(k) not in found:
            found[int(k)] = known.get(value.strip().strip(".").lower())
    if not found:
        raise ValueError(f"no line '<number>. <class>' for any of the {n} terms")
    return [found.get(k) for k in range(1, n + 1)]


@dataclass
class TypingRun:
    """What one typing pass did."""

    asked: int = 0  # terms sent to the model
    typed: int = 0  # of those, given a class
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    types: dict[str, str | None] = field(default_factory=dict)  # term key -> class (None: no class fits)


def type_terms(chat: BaseChatModel, onto: Ontology, terms: Sequence[FoundTerm], cache: TermTypeCache, *,
               batch: int, workers: int = 1, prompts: PromptSet | None = None,
               progress: Callable[[int, int], None] | None = None) -> TypingRun:
    """Ask the model the class of each of ``terms`` (distinct, not stored yet), ``batch`` a call and
    ``workers`` calls at once; every answer is stored in ``cache`` as it arrives. ``progress(done, total)``
    after each call."""
    run = TypingRun()
    classes = list(onto.classes)
    system = terms_system_prompt(onto, prompts=prompts)
    batches = [list(terms[i:i + batch]) for i in range(0, len(terms), max(1, batch))]

    def ask(items: list[FoundTerm]) -> tuple[list[FoundTerm], list[str | None], Any]:
        user = terms_user_prompt([(t.name, t.context) for t in items], prompts=prompts)
        key = "terms:" + hashlib.sha256(f"{system}\n\n{user}".encode("utf-8")).hexdigest()
        types, attempt = complete_answer(
            chat, system, user, lambda raw: (read_types(raw, len(items), classes), False),
            schema=type_schema(len(items), classes), grammar=type_grammar([t.name for t in items], classes),
            replay_key=key, max_tokens=sum(TOKENS_PER_TERM + len(t.name) // 2 for t in items) + 16,
            what="term classes")
        return items, types, attempt

    done = 0
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for items, types, attempt in pool.map(ask, batches):
            for term, cls in zip(items, types):
                cache.store(term.key, term.name, cls)
                run.types[term.key] = cls
            run.asked += len(items)
            run.typed += sum(1 for c in types if c is not None)
            run.calls += len(attempt.raw_responses) or 1
            run.input_tokens += attempt.input_tokens
            run.output_tokens += attempt.output_tokens
            run.estimated = run.estimated or attempt.tokens_estimated
            done += len(items)
            if progress is not None:
                progress(done, len(terms))
    logger.info("term typing: %d term(s) asked in %d call(s), %d given a class", run.asked, run.calls, run.typed)
    return run
