"""The compact answer form: its schema, its prompt, and its expansion to the full form."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from graphrag_got import prompts
from graphrag_got.extract.answer_form import expand_answer, is_compact
from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import extraction_schema
from graphrag_got.extract.validate import Reason, Validator

GOT = Path(__file__).resolve().parents[1] / "ontology" / "got.json"


@pytest.fixture(scope="module")
def onto() -> Ontology:
    return Ontology.from_file(GOT)


def _rel(onto: Ontology):  # type: ignore[no-untyped-def]
    rel = onto.relations[0]
    return rel, rel.domain[0], rel.range[0]


def test_the_compact_example_fits_the_compact_schema_and_is_shorter(onto: Ontology) -> None:
    schema = extraction_schema(onto, 5, 4, form="compact")
    example = prompts.extraction_example(onto, "compact")
    example["r"][0] = {k: v for k, v in example["r"][0].items() if v is not None}
    jsonschema.validate(example, schema)
    full = prompts.extraction_example(onto, "full")
    assert len(json.dumps(example)) < len(json.dumps(full))
    system = prompts.extraction_system_prompt(onto, "compact")
    assert '{"e": [...], "r": [...]}' in system and "positions (0 = first)" in system
    assert system != prompts.extraction_system_prompt(onto)  # the full prompt is unchanged by the option


def test_compact_schema_bounds_positions_and_lists(onto: Ontology) -> None:
    schema = extraction_schema(onto, 5, 4, form="compact")
    rel, s_cls, o_cls = _rel(onto)
    ok = {"e": [{"t": s_cls, "n": "A"}, {"t": o_cls, "n": "B"}], "r": [{"r": rel.name, "s": 0, "o": 1}]}
    jsonschema.validate(ok, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"e": [], "r": [{"r": rel.name, "s": 5, "o": 0}]}, schema)  # position >= max entities
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"e": [{"t": s_cls, "n": "A"}] * 6, "r": []}, schema)


def test_expansion_gives_the_full_form_the_validator_accepts(onto: Ontology) -> None:
    rel, s_cls, o_cls = _rel(onto)
    compact = {"e": [{"t": s_cls, "n": "Alfa Uno", "c": 0.9}, {"t": o_cls, "n": "Beta Dos"}],
               "r": [{"r": rel.name, "s": 0, "o": 1}]}
    full = expand_answer(compact)
    assert full["entities"][0] == {"type": s_cls, "name": "Alfa Uno", "confidence": 0.9}
    assert full["relations"][0] == {"relation": rel.name, "subject": "Alfa Uno", "subject_type": s_cls,
                                    "object": "Beta Dos", "object_type": o_cls}
    out = Validator(onto).validate(compact, "c1", "d1")  # the validator expands on its own too
    assert [(r.subject, r.relation, r.object) for r in out.relations] == [("Alfa Uno", rel.name, "Beta Dos")]
    assert out.entities[0].mentions == {"c1": 0.9}


def test_a_position_pointing_nowhere_is_refused_and_audited(onto: Ontology) -> None:
    rel, s_cls, o_cls = _rel(onto)
    compact = {"e": [{"t": s_cls, "n": "Alfa Uno"}], "r": [{"r": rel.name, "s": 0, "o": 3}]}
    out = Validator(onto).validate(compact, "c1", "d1")
    assert not out.relations
    (rej,) = [r for r in out.rejections if r.kind == "relation"]
    assert rej.reason == Reason.EMPTY_NAME and rej.end == "object" and rej.value == "3"
    assert "position 3 is not an entity of the answer" in rej.message
    assert rej.item["object_position"] == 3


def test_full_answers_and_other_values_pass_through_untouched() -> None:
    full = {"entities": [], "relations": []}
    assert expand_answer(full) is full and not is_compact(full)
    for other in (None, [], "text", {"e": [], "entities": []}):
        assert expand_answer(other) is other
