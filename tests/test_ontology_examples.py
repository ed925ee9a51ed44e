"""Annotated examples in an ontology: checked like answers, located errors, rendered into the prompt."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from graphrag_got import prompts
from graphrag_got.extract.answer_form import expand_answer
from graphrag_got.errors import OntologyError
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parent.parent

BASE = {
    "name": "Library",
    "classes": {
        "Author": {"properties": {"country": "string optional"}},
        "Book": {"properties": {"genre": "enum: novel | essay"}},
    },
    "relations": [{"name": "WROTE", "domain": "Author", "range": "Book"},
                  {"name": "KNOWS", "domain": "Author", "range": "Author", "symmetric": True}],
    "relation_attributes": {"year": "string optional"},
}

EXAMPLE = {
    "text": "The Grey Harbour, a novel, was written by Ann Vale in 1931. Ann Vale knew Tom Reed.",
    "entities": [
        {"class": "Author", "name": "Ann Vale"},
        {"class": "Book", "name": "The Grey Harbour", "properties": {"genre": "novel"}},
        {"class": "Author", "name": "Tom Reed"},
    ],
    "relations": [
        {"relation": "WROTE", "subject": "Ann Vale", "object": "The Grey Harbour", "attributes": {"year": "1931"}},
        {"relation": "KNOWS", "subject": "Ann Vale", "object": "Tom Reed"},
    ],
}


def _onto(*examples: dict) -> Ontology:
    return Ontology.from_dict({**BASE, "examples": list(examples)})


def _problems(example: dict) -> list[tuple[str, str]]:
    with pytest.raises(OntologyError) as info:
        _onto(example)
    return info.value.problems


def test_a_good_example_loads_in_english_and_spanish_keys() -> None:
    onto = _onto(EXAMPLE)
    (ex,) = onto.examples
    assert [e.name for e in ex.entities] == ["Ann Vale", "The Grey Harbour", "Tom Reed"]
    assert ex.relations[0].attributes == {"year": "1931"}
    spanish = {"texto": EXAMPLE["text"],
               "entidades": [{"clase": e["class"], "nombre": e["name"], **({"propiedades": e["properties"]}
                                                                         if "properties" in e else {})}
                             for e in EXAMPLE["entities"]],
               "relaciones": [{"relacion": r["relation"], "sujeto": r["subject"], "objeto": r["object"],
                               **({"atributos": r["attributes"]} if "attributes" in r else {})}
                              for r in EXAMPLE["relations"]]}
    assert Ontology.from_dict({**BASE, "ejemplos": [spanish]}).examples == onto.examples


@pytest.mark.parametrize(
    ("edit", "path", "words"),
    [
        (lambda ex: ex["entities"][0].update({"class": "Publisher"}), "$.ejemplos[0].entidades[0].clase",
         "'Publisher' is not declared"),
        (lambda ex: ex["entities"][1]["properties"].update({"genre": "poem"}),
         "$.ejemplos[0].entidades[1].propiedades.genre", "'poem' is not one of"),
        (lambda ex: ex["entities"][0].update({"properties": {"born": "1900"}}),
         "$.ejemplos[0].entidades[0].propiedades.born", "declares no property 'born'"),
        (lambda ex: ex["entities"][2].update({"name": "Lia Moss"}), "$.ejemplos[0].entidades[2].nombre",
         "does not occur in the example's text"),
        (lambda ex: ex["relations"][0].update({"relation": "EDITED"}), "$.ejemplos[0].relaciones[0].relacion",
         "'EDITED' is not declared"),
        (lambda ex: ex["relations"][1].update({"object": "Nobody"}), "$.ejemplos[0].relaciones[1].objeto",
         "not one of this example's entities"),
        (lambda ex: ex["relations"][0].update({"subject": "The Grey Harbour", "object": "Ann Vale"}),
         "$.ejemplos[0].relaciones[0]", "WROTE takes Author -> Book, not Book -> Author"),
        (lambda ex: ex["relations"][0]["attributes"].update({"place": "x"}),
         "$.ejemplos[0].relaciones[0].atributos.place", "not declared in 'atributos_de_relacion'"),
    ],
)
def test_each_mistake_is_reported_at_its_path(edit, path, words) -> None:  # type: ignore[no-untyped-def]
    example = copy.deepcopy(EXAMPLE)
    edit(example)
    problems = _problems(example)
    assert any(p == path and words in msg for p, msg in problems), problems


def test_shape_errors_come_from_the_file_schema() -> None:
    problems = _problems({"entities": [{"name": "Ann Vale"}], "relations": [{"relation": "WROTE"}], "note": 1})
    paths = {p for p, _ in problems}
    assert "$.examples[0]" in paths  # no text; unknown key "note"
    assert any(p.startswith("$.examples[0].entities[0]") for p in paths)  # no class
    assert any(p.startswith("$.examples[0].relations[0]") for p in paths)  # no subject, no object


def test_key_and_alias_together_is_refused() -> None:
    example = copy.deepcopy(EXAMPLE)
    example["entities"][0]["nombre"] = "Ann Vale"
    problems = _problems(example)
    assert any(p == "$.examples[0].entities[0]" and "'nombre'" in m and "'name'" in m for p, m in problems)


def test_the_full_answer_follows_the_schema_order_and_omits_what_is_not_given() -> None:
    onto = _onto(EXAMPLE)
    answer = prompts.example_answer(onto, onto.examples[0])
    assert list(answer["entities"][1]) == ["type", "name", "confidence", "genre"]
    assert answer["relations"][0] == {"relation": "WROTE", "subject": "Ann Vale", "subject_type": "Author",
                                      "object": "The Grey Harbour", "object_type": "Book", "year": "1931"}
    assert "year" not in answer["relations"][1]


def test_the_compact_answer_expands_to_the_full_one() -> None:
    onto = _onto(EXAMPLE)
    compact = prompts.example_answer(onto, onto.examples[0], "compact")
    assert compact["r"][1] == {"r": "KNOWS", "s": 0, "o": 2}
    full = prompts.example_answer(onto, onto.examples[0])
    expanded = expand_answer(compact)
    assert [(r["relation"], r["subject"], r["object"]) for r in expanded["relations"]] == \
        [(r["relation"], r["subject"], r["object"]) for r in full["relations"]]


@pytest.mark.parametrize("form", ["full", "compact"])
def test_examples_replace_the_format_example_in_the_prompt(form: str) -> None:
    plain = prompts.extraction_system_prompt(Ontology.from_dict(BASE), form)
    onto = _onto(EXAMPLE)
    system = prompts.extraction_system_prompt(onto, form)
    assert "FORMAT EXAMPLE" in plain and "FORMAT EXAMPLE" not in system
    assert EXAMPLE["text"] in system
    assert json.dumps(prompts.example_answer(onto, onto.examples[0], form), ensure_ascii=False) in system
    assert system.startswith(plain.split("FORMAT EXAMPLE")[0])  # ontology and rules unchanged, first


def test_examples_change_the_ontology_hash() -> None:
    assert _onto(EXAMPLE).hash != Ontology.from_dict(BASE).hash


def test_the_got_examples_are_valid_and_name_nothing_of_the_corpus() -> None:
    onto = Ontology.from_file(ROOT / "ontology" / "got.json")
    assert onto.examples
    corpus = (ROOT / "corpus" / "got.txt").read_text(encoding="utf-8")
    for ex in onto.examples:
        assert ex.text not in corpus
        assert not [e.name for e in ex.entities if e.name in corpus]  # the model must not learn corpus answers
