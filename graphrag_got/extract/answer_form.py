"""The compact answer form, expanded to the full one before repair and validation.

A compact answer (``GRAPHRAG_ANSWER_FORM=compact``) is
``{"e": [{"t": class, "n": name, "c": confidence, <property>...}],
"r": [{"r": relation, "s": subject position, "o": object position, <attribute>...}]}``: relation ends
point into ``e`` instead of repeating names and classes, which is most of a full answer's output
tokens. Everything after the model call (cache, repair, validation, revalidation, replay) reads the
full form ``{"entities": [...], "relations": [...]}``; :func:`expand_answer` turns one into the other
and leaves a full answer (or anything else) untouched, so stored answers of either form stay usable.

A position that points at no entity keeps the relation with an empty end and the position under
``subject_position``/``object_position``, so the validator refuses it (``empty_name``) and the audit
shows what the model wrote.
"""

from __future__ import annotations

from pydantic import JsonValue

from typing import Any

_ENTITY_KEYS = {"t": "type", "n": "name", "c": "confidence"}


def is_compact(answer: JsonValue) -> bool:
    return isinstance(answer, dict) and ("e" in answer or "r" in answer) \
        and "entities" not in answer and "relations" not in answer


def expand_answer(answer: JsonValue) -> JsonValue:
    """The full form of a compact answer; any other value is returned as it is."""
    if not is_compact(answer):
        return answer
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
