"""The interface every extraction answer form implements, and the constraint a form puts on decoding.

An answer form is how the model is asked to write one chunk's entities and facts: the instructions
and examples of the prompt that are about writing (not about the ontology), what constrains decoding
(a JSON schema, or a GBNF grammar on llama.cpp), how the model's text is read, and how the stored
value is turned into the *full form* (``{"entities": [...], "relations": [...]}``) that every step
after the call reads (repair, validation, revalidation, the extraction file). A new form is a new
subclass registered in :mod:`graphrag_got.extract.forms`; nothing else branches on a form's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from pydantic import JsonValue

from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import ExtractionExample, Ontology
from graphrag_got.prompts.answer_forms import writer

#: A fact of a keyless form as read: subject, its class as written (None: not written), relation, object,
#: its class, attributes.
Fact = tuple[str, "str | None", str, str, "str | None", dict[str, Any]]


def full_answer(entities: list[dict[str, Any]], facts: Sequence[Fact], unparsed: list[dict[str, str]], *,
                ends_are_entities: bool = False) -> dict[str, Any]:
    """The full form of a keyless answer: a fact's end without a written class takes the one class its
    entity items give the name (none when they give none or several: the repairs and the validator
    decide, as for a full answer). ``ends_are_entities``: every end with a class is an entity of it (a
    form whose facts name their ends' classes), listed before the entity items."""
    classes: dict[str, set[str]] = defaultdict(set)
    for ent in entities:
        classes[normalize_name(ent["name"])].add(ent["type"])

    def class_of(name: str) -> str | None:
        found = classes.get(normalize_name(name), set())
        return next(iter(found)) if len(found) == 1 else None

    relations = [{"relation": r, "subject": s, "subject_type": s_cls or class_of(s), "object": o,
                  "object_type": o_cls or class_of(o), **attrs} for s, s_cls, r, o, o_cls, attrs in facts]
    ends: list[dict[str, Any]] = []
    if ends_are_entities:
        listed = {(normalize_name(e["name"]), e["type"]) for e in entities}
        for rel in relations:
            for end in ("subject", "object"):
                name, cls = rel[end], rel[f"{end}_type"]
                if cls and name and (normalize_name(name), cls) not in listed:
                    listed.add((normalize_name(name), cls))
                    ends.append({"type": cls, "name": name})
    return {"entities": ends + entities, "relations": relations, "unparsed": unparsed}


@dataclass(frozen=True)
class Constraint:
    """What constrains one call's decoding: a JSON schema (every provider that takes one) and/or a GBNF
    grammar (llama.cpp only; a provider without grammars gets the schema, or nothing)."""

    schema: dict[str, Any] | None = None
    grammar: str | None = None
    #: an answer of one item a line ends at its first repeated line (streamed calls: the rest is not written);
    #: a string: only lines holding it count
    end_on_repeated_line: bool | str = False


class AnswerForm(ABC):
    """One way of writing an extraction answer (see the module docstring)."""

    #: the value of ``GRAPHRAG_ANSWER_FORM``
    name: ClassVar[str]
    #: the part of the cache key that tells this form's stored answers apart ("" for the full form,
    #: whose stored answers predate forms); a new version when the form's prompt text or reading changes
    cache_tag: ClassVar[str]
    #: whether the answer is a JSON value (read by the JSON parser)
    json: ClassVar[bool] = True
    #: what an unusable answer is said not to be ("no valid JSON after 2 attempts")
    what: ClassVar[str] = "JSON"
    #: one line for ``--help`` and the settings page
    about: ClassVar[str]

    @abstractmethod
    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        """What decoding follows for an ontology, within the schema bounds."""

    def for_text(self, constraint: Constraint, text: str) -> Constraint:
        """The constraint of one call about ``text`` (a form may narrow the ontology's to the text's words)."""
        return constraint

    def format_example(self, onto: Ontology) -> str:
        """A shape-only example answer built from the ontology's first relation (no content)."""
        return writer(self.name).format_example(onto)

    def example_answer(self, onto: Ontology, example: ExtractionExample) -> str:
        """An annotated example's expected answer, written in this form."""
        return writer(self.name).example_answer(onto, example)

    @abstractmethod
    def read(self, text: str) -> tuple[JsonValue, bool]:
        """The value stored for the model's text (what the cache keeps as ``parsed``) and whether it was
        repaired to be read. Raises ``ValueError`` when the text holds no answer at all (the call is asked
        once more)."""

    @abstractmethod
    def recognizes(self, value: JsonValue) -> bool:
        """Whether a stored value was written in this form."""

    @abstractmethod
    def expand(self, value: JsonValue) -> JsonValue:
        """The full form of a stored value this form recognizes."""

    def merge(self, first: JsonValue, more: JsonValue) -> JsonValue:
        """One stored value holding both answers (a recall pass's answer after the first): their full
        forms' items one after the other (repeats are merged later, like any repeated item)."""
        a, b = self.expand(first), self.expand(more)
        out: dict[str, Any] = {}
        for key in ("entities", "relations", "unparsed"):
            items = [*(_list(a, key)), *(_list(b, key))]
            if items or key != "unparsed":
                out[key] = items
        return out


def _list(value: JsonValue, key: str) -> list[Any]:
    items = value.get(key) if isinstance(value, dict) else None
    return list(items) if isinstance(items, list) else []
