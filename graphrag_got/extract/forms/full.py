"""The full answer form: JSON objects that name every relation end and its class.

``{"entities": [{"type", "name", "confidence", <property>...}], "relations": [{"relation", "subject",
"subject_type", "object", "object_type", <attribute>...}]}``: what every step after the call reads,
so its reading is the identity. About 35 output tokens a fact (keys and classes repeated).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from graphrag_got.extract.forms.base import AnswerForm, Constraint
from graphrag_got.llm.json_answers import parse_json_text
from graphrag_got.ontology.model import ExtractionExample, Ontology, PropertySpec
from graphrag_got.ontology.schema import extraction_model, llm_schema

NAME_PLACEHOLDER = "<name from the text>"
CONFIDENCE_EXAMPLE = 0.9


def attribute_example(spec: PropertySpec) -> Any:
    """A required attribute's placeholder in a format example (None for an optional one)."""
    if not spec.required:
        return None
    return f"<one of: {' | '.join(spec.values)}>" if spec.kind == "enum" else "<value from the text>"


def ordered_properties(onto: Ontology, class_name: str, given: dict[str, str]) -> dict[str, str]:
    """An example entity's properties in its class's declared order (the order the schema wants)."""
    return {k: given[k] for k in onto.classes[class_name].properties if k in given}


def ordered_attributes(onto: Ontology, given: dict[str, str]) -> dict[str, str]:
    return {k: given[k] for k in onto.relation_attributes if k in given}


class JsonForm(AnswerForm):
    """A form whose answer is one JSON object (read by the JSON parser, with its repair)."""

    def read(self, text: str) -> tuple[JsonValue, bool]:
        value, repaired = parse_json_text(text)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return value, repaired

    def dump(self, value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)


class FullForm(JsonForm):
    name = "full"
    cache_tag = ""
    about = "JSON objects naming every relation end and its class (about 35 output tokens a fact)"

    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        return Constraint(schema=llm_schema(extraction_model(onto, max_entities, max_relations)))

    def format_example(self, onto: Ontology) -> str:
        if not onto.relations:
            first = next(iter(onto.classes))
            return self.dump({"entities": [{"type": first, "name": NAME_PLACEHOLDER,
                                            "confidence": CONFIDENCE_EXAMPLE}], "relations": []})
        rel = onto.relations[0]
        s_cls, o_cls = rel.domain[0], rel.range[0]
        relation: dict[str, Any] = {"relation": rel.name, "subject": NAME_PLACEHOLDER, "subject_type": s_cls,
                                    "object": NAME_PLACEHOLDER, "object_type": o_cls}
        relation.update({name: attribute_example(spec) for name, spec in onto.relation_attributes.items()})
        return self.dump({
            "entities": [{"type": s_cls, "name": NAME_PLACEHOLDER, "confidence": CONFIDENCE_EXAMPLE},
                         {"type": o_cls, "name": NAME_PLACEHOLDER, "confidence": CONFIDENCE_EXAMPLE}],
            "relations": [relation],
        })

    def answer_value(self, onto: Ontology, example: ExtractionExample) -> dict[str, Any]:
        classes: dict[str, str] = {}
        for ent in example.entities:
            classes.setdefault(ent.name, ent.class_name)
        entities = [{"type": e.class_name, "name": e.name, "confidence": CONFIDENCE_EXAMPLE,
                     **ordered_properties(onto, e.class_name, e.properties)} for e in example.entities]
        rels = [{"relation": r.relation, "subject": r.subject, "subject_type": classes[r.subject],
                 "object": r.object, "object_type": classes[r.object], **ordered_attributes(onto, r.attributes)}
                for r in example.relations]
        return {"entities": entities, "relations": rels}

    def example_answer(self, onto: Ontology, example: ExtractionExample) -> str:
        return self.dump(self.answer_value(onto, example))

    def recognizes(self, value: JsonValue) -> bool:
        return True  # the last resort: whatever no other form recognizes is read as the full form

    def expand(self, value: JsonValue) -> JsonValue:
        return value
