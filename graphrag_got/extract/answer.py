"""One chunk's model answer, as every step after the call reads it (repair, validation, revalidation).

The model writes one of the answer forms (:mod:`graphrag_got.extract.forms`); :meth:`RawAnswer.read` turns
the stored value into the full form (any other form is expanded first) and records what is wrong with
its *shape* (not an object, a list that is not a list) as :class:`ShapeProblem` data, which the
validator turns into refusals. The items themselves stay as the model wrote them (any JSON value):
checking them is the validator's job, and every refusal shows the item as written. Lines (or
arrays) of a keyless form that read as neither an entity nor a fact are kept in ``unparsed``, as
written, for the validator to refuse with their own reason.

The key sets of an item are defined here and nowhere else: an entity item's own keys
(:data:`ENTITY_KEYS`; any other key is a property) and a relation item's (:data:`RELATION_KEYS`; any
other key is a relation attribute).
"""

from __future__ import annotations

from pydantic import JsonValue

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from graphrag_got.extract.forms import expand_answer

#: The keys of an entity item that are not properties.
ENTITY_KEYS = frozenset({"name", "type", "properties", "confidence"})
#: The keys of a relation item that are not relation attributes (positions: compact answers whose
#: end points at no entity, see :mod:`graphrag_got.extract.answer_form`).
RELATION_KEYS = frozenset({"relation", "subject", "subject_type", "object", "object_type", "attributes",
                           "subject_position", "object_position",
                           # classify strategy: the chosen option's probability, the runner-up, whether it won
                           "probability", "runner_up", "runner_up_probability", "chosen"})

ListName = Literal["entities", "relations"]


@dataclass(frozen=True)
class ShapeProblem:
    """What is wrong with the answer's shape: the whole answer (``where`` None) or one of its lists."""

    where: ListName | None
    message: str
    value: JsonValue  # the offending value, summarized when it is a container


@dataclass(frozen=True)
class RawAnswer:
    """The full form of one chunk's answer. ``entities`` and ``relations`` are the items as written
    (unchecked); ``problems`` the shape problems found reading it (a list that was not a list reads as
    empty)."""

    entities: list[JsonValue] = field(default_factory=list)
    relations: list[JsonValue] = field(default_factory=list)
    problems: tuple[ShapeProblem, ...] = ()
    #: what a keyless form's reading could not place: ``{"line": as written, "why": what is wrong}``
    unparsed: tuple[dict[str, str], ...] = ()

    @classmethod
    def read(cls, value: "RawAnswer | JsonValue") -> "RawAnswer":
        """The answer in ``value`` (parsed JSON of either answer form, or a ``RawAnswer``)."""
        if isinstance(value, RawAnswer):
            return value
        value = expand_answer(value)
        if not isinstance(value, dict):
            return cls(problems=(ShapeProblem(None, f"the answer must be a JSON object, got {type(value).__name__}",
                                              value),))  # fmt: skip
        lists: dict[str, list[JsonValue]] = {}
        problems: list[ShapeProblem] = []
        for name in ("entities", "relations"):
            items = value.get(name)
            if items is None:
                items = []
            if not isinstance(items, list):
                problems.append(ShapeProblem(name, f"'{name}' must be a list, got {type(items).__name__}",  # type: ignore[arg-type]
                                             summarize(items)))
                items = []
            lists[name] = items
        unparsed = value.get("unparsed")
        lines = tuple({"line": str(u.get("line", "")), "why": str(u.get("why", ""))} if isinstance(u, dict)
                      else {"line": str(u), "why": ""} for u in unparsed) if isinstance(unparsed, list) else ()
        return cls(entities=lists["entities"], relations=lists["relations"], problems=tuple(problems),
                   unparsed=lines)

    @property
    def is_object(self) -> bool:
        """False when the answer was not a JSON object at all."""
        return not any(p.where is None for p in self.problems)

    def problem(self, where: ListName | None) -> ShapeProblem | None:
        return next((p for p in self.problems if p.where == where), None)

    def with_items(self, entities: list[JsonValue], relations: list[JsonValue]) -> "RawAnswer":
        """The same answer with other items (what an audited repair hands the validator)."""
        return replace(self, entities=entities, relations=relations)

    def as_json(self) -> dict[str, Any]:
        """The full form as JSON (``{"entities": [...], "relations": [...]}``)."""
        return {"entities": list(self.entities), "relations": list(self.relations)}


def summarize(value: JsonValue) -> JsonValue:
    """A non-object item as kept in a refusal record: scalars as they are, containers summarized."""
    if isinstance(value, (dict, list)):
        return f"<{type(value).__name__} of {len(value)} item(s)>"
    return value
