"""Reading ``extraction.json`` files of format /1 (``graphrag_got.extraction/1``): a ``momento``
field on relations and two Spanish-named rejection lists, upgraded in memory to the current format."""

from __future__ import annotations

from typing import Any


def upgrade_v1(data: dict[str, Any], new_format: str) -> dict[str, Any]:
    """A format /1 file's data in the current shape (``momento`` -> attributes, one rejection list)."""
    data = dict(data)
    data["format"] = new_format
    relations = []
    if not isinstance(data.get("relations") or [], list):
        return data  # reported by the model at $.relations
    for rel in data.get("relations") or []:
        if isinstance(rel, dict) and isinstance(rel.get("attributes") or {}, dict):
            rel = dict(rel)
            attrs = dict(rel.get("attributes") or {})
            if rel.get("momento") is not None:
                attrs["momento"] = rel.pop("momento")
            rel.pop("momento", None)
            rel["attributes"] = attrs
        relations.append(rel)
    data["relations"] = relations
    legacy = [v if v is not None else [] for v in (data.pop("relaciones_descartadas", None),
                                                   data.pop("entidades_descartadas", None))]
    bad = next((v for v in legacy if not isinstance(v, list)), None)
    # a list that is not a list is left for the model to report (at $.rejections)
    data["rejections"] = bad if bad is not None else [_legacy_rejection(r) for part in legacy for r in part]
    return data


# ---------------------------------------------------------------------------- format /1
# Which end of a triple a relation reason blames (format /1 records did not say).
_SUBJECT_REASONS = {"domain_violation", "subject_type_mismatch", "subject_not_extracted"}
_OBJECT_REASONS = {"range_violation", "object_type_mismatch", "object_not_extracted"}
_ENTITY_KEYS = {"name", "type", "properties"}
_TRIPLE_KEYS = {"relation", "subject", "subject_type", "object", "object_type", "attributes", "momento"}


def _legacy_rejection(rec: Any) -> Any:
    """A format /1 rejection (message and raw item only) with its structured fields filled in."""
    if not isinstance(rec, dict):
        return {"kind": "relation", "reason": "malformed", "message": "rejection record is not an object",
                "item": {"value": str(rec)}}
    rec = dict(rec)
    item = rec.get("item")
    if not isinstance(item, dict):
        rec["item"] = item = {"value": item}
    text = {k: (None if v is None else str(v)) for k, v in item.items() if not isinstance(v, (dict, list))}
    reason = rec.get("reason")
    if "relation" in item:
        for k in ("relation", "subject", "subject_type", "object", "object_type"):
            rec.setdefault(k, text.get(k))
        end = "subject" if reason in _SUBJECT_REASONS else "object" if reason in _OBJECT_REASONS else None
        if end:
            rec.setdefault("end", end)
            rec.setdefault("end_name", text.get(end))
            rec.setdefault("end_type", text.get(f"{end}_type"))
        skip = _TRIPLE_KEYS
    else:
        rec.setdefault("entity_name", text.get("name"))
        rec.setdefault("entity_type", text.get("type"))
        skip = _ENTITY_KEYS
    if rec.get("kind") == "property":
        given = {k: v for k, v in item.items() if k not in skip}
        nested = item.get("properties") if "relation" not in item else item.get("attributes")
        if isinstance(nested, dict):
            given.update(nested)
        if "relation" in item and item.get("momento") is not None and reason != "unknown_attribute":
            given.setdefault("momento", item["momento"])
        if given:
            prop, value = next(iter(given.items()))
            rec.setdefault("property", str(prop))
            rec.setdefault("value", None if value is None else str(value))
    rec.setdefault("kind", "relation" if "relation" in item else "entity")
    return rec
