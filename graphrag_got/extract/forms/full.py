"""The full answer form: JSON objects that name every relation end and its class.

``{"entities": [{"type", "name", "confidence", <property>...}], "relations": [{"relation", "subject",
"subject_type", "object", "object_type", <attribute>...}]}``: what every step after the call reads,
so its reading is the identity. About 35 output tokens a fact (keys and classes repeated).
"""

from __future__ import annotations

from pydantic import JsonValue

from graphrag_got.extract.forms.base import AnswerForm, Constraint
from graphrag_got.llm.json_answers import parse_json_text
from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import extraction_model, llm_schema

class JsonForm(AnswerForm):
    """A form whose answer is one JSON object (read by the JSON parser, with its repair)."""

    def read(self, text: str) -> tuple[JsonValue, bool]:
        value, repaired = parse_json_text(text)
        if not isinstance(value, dict):
            raise ValueError(f"expected a JSON object, got {type(value).__name__}")
        return value, repaired



class FullForm(JsonForm):
    name = "full"
    cache_tag = ""
    about = "JSON objects naming every relation end and its class (about 35 output tokens a fact)"

    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        return Constraint(schema=llm_schema(extraction_model(onto, max_entities, max_relations)))

    def recognizes(self, value: JsonValue) -> bool:
        return True  # the last resort: whatever no other form recognizes is read as the full form

    def expand(self, value: JsonValue) -> JsonValue:
        return value
