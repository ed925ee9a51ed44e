"""Which search answers a question best: local, global or drift, with the reason.

Rules first, in this order (the first that fires decides):

1. **connective** -> ``drift``: the question asks how things relate, compare or influence each
   other ("how does X relate to Y", "¿qué relación hay entre...?", "compare", "¿cómo influye...?").
   DRIFT answers those from the broad community reports *and* local searches for the details, so
   it wins even when the question names entities.
2. **names entities** -> ``local``: the question names entities of the graph (the deterministic
   matcher of local search over the entity catalog, no LLM). An exact or partial name decides; a
   merely fuzzy one decides only when no corpus-wide cue is present.
3. **corpus-wide** -> ``global``: "main themes", "principales", "en general", "overall",
   "summarize the corpus"...
4. the optional **LLM classifier** (``settings.search.route_classifier``), a constrained JSON answer
   ``{"mode": ..., "reason": ...}``, for questions no rule decided;
5. otherwise ``global``: a question that names nothing of the graph cannot anchor a local search.

The cue lists are language data in ``graphrag_got/data/routing_<language>.json`` (regular
expressions over the normalized question), not corpus vocabulary; :func:`route_question` takes the
entity catalog as a list, so routing runs and is measured without Neo4j.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from pydantic import BaseModel, Field

from graphrag_got.errors import LLMError, SearchError
from graphrag_got.llm.calls import LLMOutputError
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.common.normalize import normalize_name
from graphrag_got.prompts import PromptSet, route_classifier_prompt
from graphrag_got.search.anchors import find_anchors

logger = logging.getLogger(__name__)

Mode = Literal["local", "global", "drift"]

#: Languages whose routing cues ship in ``graphrag_got/data/routing_<code>.json``.
ROUTING_LANGUAGES = ("es", "en")
CUE_KINDS = ("connective", "global")
CLASSIFIER_MAX_TOKENS = 120
MAX_ENTITIES_SHOWN = 5


class Route(BaseModel):
    """A routing decision: the mode, why (readable), and which rule or classifier decided it."""

    mode: Mode
    reason: str
    rule: str  # "connective.en.compare", "entities", "global.es.principales", "classifier", "default", "explicit"
    decided_by: Literal["rule", "classifier", "default", "explicit"]
    entities: list[str] = Field(default_factory=list)  # names of the graph entities the question names
    cues: list[str] = Field(default_factory=list)  # every cue rule that matched, "kind.lang.name"
    scores: dict[str, float] = Field(default_factory=dict)  # evidence per mode (see route_question)
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False
    warnings: list[str] = Field(default_factory=list)

    def describe(self) -> str:
        """``local (names 2 entities of the graph: X, Y)``: what the CLI prints."""
        return f"{self.mode} ({self.reason})"


@dataclass(frozen=True)
class Cue:
    kind: str  # connective | global
    language: str
    name: str
    pattern: re.Pattern[str]

    @property
    def rule(self) -> str:
        return f"{self.kind}.{self.language}.{self.name}"


@lru_cache(maxsize=8)
def load_cues(languages: tuple[str, ...] = ROUTING_LANGUAGES) -> tuple[Cue, ...]:
    """The routing cues of ``languages`` (every shipped one by default: a question may mix them)."""
    folder = resources.files("graphrag_got").joinpath("data")
    cues: list[Cue] = []
    for code in languages:
        name = f"routing_{code}.json"
        try:
            data = json.loads(folder.joinpath(name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            shipped = sorted(p.name[8:-5] for p in folder.iterdir() if p.name.startswith("routing_"))
            raise SearchError(f"no routing cues for language {code!r}; shipped: {', '.join(shipped)}") from None
        except json.JSONDecodeError as exc:
            raise SearchError(f"graphrag_got/data/{name} is not valid JSON (line {exc.lineno}): {exc.msg}") from None
        for kind in CUE_KINDS:
            for key, regex in (data.get(kind) or {}).items():
                try:
                    cues.append(Cue(kind, code, key, re.compile(regex)))
                except re.error as exc:
                    raise SearchError(f"graphrag_got/data/{name}: {kind}.{key} is not a valid regular "
                                      f"expression ({exc})") from None  # fmt: skip
    return tuple(cues)


_NON_WORD = re.compile(r"[^\w]+")


def normalized(question: str) -> str:
    """What cues are matched against: lower case, no accents, punctuation as spaces."""
    return " ".join(_NON_WORD.sub(" ", normalize_name(question)).split())


def matching_cues(question: str, cues: Iterable[Cue] | None = None) -> list[tuple[Cue, str]]:
    """Every cue that matches ``question``, with the text it matched, in file order."""
    text = normalized(question)
    out = []
    for cue in load_cues() if cues is None else cues:
        m = cue.pattern.search(text)
        if m:
            out.append((cue, m.group(0)))
    return out


class RouteAnswer(BaseModel):
    mode: Mode
    reason: str = ""


ROUTE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"mode": {"type": "string", "enum": ["local", "global", "drift"]}, "reason": {"type": "string"}},
    "required": ["mode", "reason"],
}


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_ENTITIES_SHOWN])
    return shown + (f" and {len(names) - MAX_ENTITIES_SHOWN} more" if len(names) > MAX_ENTITIES_SHOWN else "")


def route_question(
    question: str,
    catalog: list[dict[str, Any]],
    *,
    chat: BaseChatModel | None = None,
    classifier: bool = False,
    languages: Sequence[str] = ROUTING_LANGUAGES,
    prompts: PromptSet | None = None,
) -> Route:
    """Decide the mode of ``question`` (see the module docstring for the rules and their order).

    ``catalog`` rows are the local matcher's ``{uid, key, name, type, aliases}``. ``classifier``
    with a ``chat`` model asks the LLM for questions no rule decides (one call, constrained JSON);
    a classifier that fails falls back to the default with a warning (``prompts``: the prompts in use). ``scores``: ``local`` = the
    number of entities named (fuzzy ones count their match score), ``global`` / ``drift`` = how
    many cues of that kind matched.
    """
    if not question or not question.strip():
        raise SearchError("the question is empty")
    anchors, matches = find_anchors(question, catalog)
    strong = [a for a in anchors if a.how in {"exact", "partial"}]
    score_of = {uid: m.score for m in matches for uid in m.uids}
    found = matching_cues(question, load_cues(tuple(languages)))
    connective = [(c, t) for c, t in found if c.kind == "connective"]
    corpus_wide = [(c, t) for c, t in found if c.kind == "global"]
    names = [a.name for a in anchors]
    base = {
        "entities": names, "cues": [c.rule for c, _ in found],
        "scores": {"local": round(len(strong) + sum(score_of.get(a.uid, 0.0) for a in anchors if a not in strong), 3),
                   "global": float(len(corpus_wide)), "drift": float(len(connective))},
    }  # fmt: skip

    if connective:
        cue, text = connective[0]
        about = f"; names {_names(names)}" if names else ""
        return Route(mode="drift", reason=f"connective question: {text!r}{about}", rule=cue.rule,
                     decided_by="rule", **base)  # fmt: skip
    if strong or (anchors and not corpus_wide):
        n = len(anchors)
        return Route(mode="local", reason=f"names {n} entit{'y' if n == 1 else 'ies'} of the graph: {_names(names)}",
                     rule="entities", decided_by="rule", **base)  # fmt: skip
    if corpus_wide:
        cue, text = corpus_wide[0]
        return Route(mode="global", reason=f"corpus-wide question: {text!r}", rule=cue.rule, decided_by="rule",
                     **base)  # fmt: skip
    warnings: list[str] = []
    calls = 0
    if classifier and chat is not None:
        route, calls = _classify(question, chat, base, prompts)
        if route is not None:
            return route
        warnings.append("route classifier gave no usable answer: routed by the default rule")
    return Route(mode="global", reason="names no entity of the graph and matches no cue: global, the broad mode",
                 rule="default", decided_by="default", warnings=warnings, llm_calls=calls, **base)  # fmt: skip


def _classify(question: str, chat: BaseChatModel, base: dict[str, Any],
              prompts: PromptSet | None = None) -> tuple[Route | None, int]:
    """One constrained JSON call (and its retry): the route, or None (logged) when the model gave no
    valid answer; with the number of calls made."""
    try:
        obj, attempt = complete_json(chat, route_classifier_prompt(prompts=prompts), f"QUESTION: {question}", RouteAnswer,
                                     schema=ROUTE_SCHEMA, max_tokens=CLASSIFIER_MAX_TOKENS)  # fmt: skip
    except LLMOutputError as exc:
        logger.warning("route classifier gave no valid answer: %s", exc)
        return None, len(exc.raw_responses)
    except LLMError as exc:
        logger.warning("route classifier failed: %s", exc)
        return None, 1
    calls = len(attempt.raw_responses)
    usage = {"input_tokens": attempt.input_tokens, "output_tokens": attempt.output_tokens,
             "tokens_estimated": attempt.tokens_estimated}  # fmt: skip
    why = " ".join(obj.reason.split())[:200] or "no reason given"
    route = Route(mode=obj.mode, reason=f"LLM classifier: {why}", rule="classifier", decided_by="classifier",
                  llm_calls=calls, **usage, **base)  # fmt: skip
    return route, calls


__all__ = ["CUE_KINDS", "Cue", "Mode", "ROUTING_LANGUAGES", "Route", "RouteAnswer", "load_cues", "matching_cues",
           "normalized", "route_question"]  # fmt: skip
