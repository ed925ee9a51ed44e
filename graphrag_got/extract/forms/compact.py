"""The compact answer form: short keys, relation ends given by their position in the entity list.

``{"e": [{"t": class, "n": name, "c": confidence, <property>...}], "r": [{"r": relation, "s": subject
position, "o": object position, <attribute>...}]}``. Fewer tokens than the full form, but small
models cannot count positions (relation F1 0.53 -> 0.07 on GoT, ``benchmarks/results/extract_speed.txt``):
kept as an option, and so that stored answers of it stay readable.

A position that points at no entity keeps the relation with an empty end and the position under
``subject_position``/``object_position``, so the validator refuses it (``empty_name``) and the audit
shows what the model wrote.
"""

from __future__ import annotations

from typing import Any

from pydantic import JsonValue

from graphrag_got.extract.forms.base import Constraint
from graphrag_got.extract.forms.full import JsonForm
from graphrag_got.ontology.model import Ontology
from graphrag_got.ontology.schema import compact_extraction_model, llm_schema

_ENTITY_KEYS = {"t": "type", "n": "name", "c": "confidence"}


def is_compact(answer: JsonValue) -> bool:
    return isinstance(answer, dict) and ("e" in answer or "r" in answer) \
        and "entities" not in answer and "relations" not in answer


def expand_compact(answer: JsonValue) -> JsonValue:
    """The full form of a compact answer; any other value is returned as it is."""
    if not is_compact(answer):
        return answer
    assert isinstance(answer, dict)
    raw_entities = answer.get("e")
    raw_relations = answer.get("r")
    entities: list[Any] = []
    for item in raw_entities if isinstance(raw_entities, list) else []:
        entities.append({_ENTITY_KEYS.get(k, k): v for k, v in item.items()} if isinstance(item, dict) else item)
    relations: list[Any] = []
    for item in raw_relations if isinstance(raw_relations, list) else []:
        if not isinstance(item, dict):
            relations.append(item)
            continue
        full: dict[str, Any] = {"relation": item.get("r")}
        for key, end in (("s", "subject"), ("o", "object")):
            target = _entity_at(entities, item.get(key))
            full[end] = target.get("name") if target else None
            full[f"{end}_type"] = target.get("type") if target else None
            if target is None:
                full[f"{end}_position"] = item.get(key)
        full.update({k: v for k, v in item.items() if k not in ("r", "s", "o")})
        relations.append(full)
    out: dict[str, Any] = {"entities": entities if isinstance(raw_entities, list) or raw_entities is None
                           else raw_entities,
                           "relations": relations if isinstance(raw_relations, list) or raw_relations is None
                           else raw_relations}
    return out


def _entity_at(entities: list[Any], position: Any) -> dict[str, Any] | None:
    if isinstance(position, bool) or not isinstance(position, int) or not 0 <= position < len(entities):
        return None
    target = entities[position]
    return target if isinstance(target, dict) else None


class CompactForm(JsonForm):
    name = "compact"
    cache_tag = "compact"
    about = "short JSON keys, relation ends by position (fewer tokens; small models lose most relations)"

    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        return Constraint(schema=llm_schema(compact_extraction_model(onto, max_entities, max_relations)))

    def recognizes(self, value: JsonValue) -> bool:
        return is_compact(value)

    def expand(self, value: JsonValue) -> JsonValue:
        return expand_compact(value)
