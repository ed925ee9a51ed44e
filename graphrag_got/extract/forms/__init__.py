"""Extraction answer forms: how the model writes a chunk's entities and facts (``GRAPHRAG_ANSWER_FORM``).

One :class:`~graphrag_got.extract.forms.base.AnswerForm` per form:

- ``full`` (:mod:`.full`): JSON objects naming every relation end and its class, what every step after
  the call reads;
- ``compact`` (:mod:`.compact`): short keys, relation ends by position (kept as an option);
- ``lines`` (:mod:`.lines`): one line per entity and per fact, under a grammar on llama.cpp;
- ``arrays`` (:mod:`.arrays`): JSON arrays without keys, for providers constrained by a JSON schema.

:func:`expand_answer` turns a stored answer of any form into the full form; stored answers of every
form stay readable whatever form is configured now.
"""

from __future__ import annotations

from pydantic import JsonValue

from graphrag_got.errors import ConfigError
from graphrag_got.extract.forms.arrays import ArraysForm
from graphrag_got.extract.forms.base import AnswerForm, Constraint
from graphrag_got.extract.forms.compact import CompactForm, expand_compact, is_compact
from graphrag_got.extract.forms.full import FullForm
from graphrag_got.extract.forms.lines import LinesForm

#: Every form by name; the full form last, as it reads whatever no other form recognizes.
FORMS: dict[str, AnswerForm] = {f.name: f for f in (CompactForm(), LinesForm(), ArraysForm(), FullForm())}
ANSWER_FORMS = tuple(sorted(FORMS, key=lambda n: n != "full"))


def answer_form(name: str | AnswerForm) -> AnswerForm:
    """The form called ``name`` (a form is returned as it is)."""
    if isinstance(name, AnswerForm):
        return name
    try:
        return FORMS[name]
    except KeyError:
        raise ConfigError(f"unknown answer form {name!r} (GRAPHRAG_ANSWER_FORM); choose from "
                          f"{', '.join(ANSWER_FORMS)}") from None


def expand_answer(value: JsonValue) -> JsonValue:
    """The full form of a stored answer of any form (a full answer, or anything else, as it is)."""
    for form in FORMS.values():
        if form.recognizes(value):
            return form.expand(value)
    return value


__all__ = ["ANSWER_FORMS", "FORMS", "AnswerForm", "Constraint", "answer_form", "expand_answer", "expand_compact",
           "is_compact"]
