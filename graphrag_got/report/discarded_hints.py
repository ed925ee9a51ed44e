"""Suggestions for the repeated groups of the discarded-relations report: one sentence saying whether
the text, the model or the ontology is at fault and what to change (a relation's domain or range,
an enum's values, a setting), naming existing relations or classes that fit when the ontology is known.
"""

from __future__ import annotations

import difflib
from typing import Iterable, Mapping, Sequence

from graphrag_got.extract.extraction import Rejection
from graphrag_got.ontology.model import Ontology
from graphrag_got.report.discarded_model import WS, EntityGroup, RelationGroup, fold


def _names(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " or " + items[-1]


def _accepting(onto: Ontology, pairs: Iterable[tuple[str, str]], exclude: str, end: str | None,
               offending: str | None) -> list[str]:
    """Relations (ontology order) that accept one of the type pairs; with a missing end, those that
    accept the offending type at its end."""
    wanted: set[str] = set()
    for s, o in pairs:
        if s and o:
            wanted.update(onto.relations_accepting(s, o))
        elif offending and end == "object":
            wanted.update(r.name for r in onto.relations if offending in r.range)
        elif offending and end == "subject":
            wanted.update(r.name for r in onto.relations if offending in r.domain)
    return [r.name for r in onto.relations if r.name in wanted and r.name != exclude]


def relation_suggestion(g: RelationGroup, recs: Sequence[Rejection], onto: Ontology | None,
                         onto_path: str | None, entity_types: Mapping[str, set[str]]) -> str | None:
    where = f"in {onto_path}" if onto_path else "in the ontology"
    n = f"{g.count}x"
    rel = g.relation or "(no relation name)"
    t = g.offending_type or "(no type)"
    pairs_txt = ", ".join(f"{s or '?'} → {o or '?'}" for s, o in g.type_pairs[:4])
    if g.reason in ("range_violation", "domain_violation"):
        which = "range" if g.reason == "range_violation" else "domain"
        end = "object" if which == "range" else "subject"
        text = f"{rel} refused {n} with {end} type {t}: widen its {which} to include {t} {where}"
        if onto is not None:
            others = _accepting(onto, g.type_pairs, rel, g.offending_end, g.offending_type)
            if others:
                text += f", or the text means another relation (e.g. {_names(others[:4])}, which accept {pairs_txt})"
            else:
                text += f"; no existing relation accepts {pairs_txt}, so if the text says this, the ontology lacks it"
        return text + "."
    if g.reason == "unknown_relation":
        text = f"The model used relation {rel} {n}, which the ontology does not define: add it {where} if the text needs it"
        if onto is not None:
            names = [r.name for r in onto.relations]
            close = difflib.get_close_matches(rel.upper(), names, n=2, cutoff=0.7)
            fitting = _accepting(onto, g.type_pairs, rel, None, None)
            hints = []
            if close:
                hints.append(f"the closest existing name is {_names(close)}")
            if fitting:
                hints.append(f"relations that accept {pairs_txt}: {', '.join(fitting[:5])}")
            if hints:
                text += ", or the model meant an existing one (" + "; ".join(hints) + ")"
        return text + "."
    if g.reason == "not_in_text":
        return (f"{rel} refused {n} because an end is not mentioned in its chunk: the model invented or "
                "misremembered the name. If these are spelling variants the text does use, lower "
                "GRAPHRAG_MENTION_THRESHOLD; otherwise nothing to fix in the ontology.")
    if g.reason == "ends_not_near":
        return (f"{rel} refused {n} because the text never mentions both ends within the evidence window: "
                "the model linked names that merely share a chunk. If your text states facts across "
                "several sentences, widen GRAPHRAG_EVIDENCE_WINDOW.")
    if g.reason == "no_cue":
        return (f"{rel} refused {n} because none of its cues (`indicios` {where}) occurs where the text mentions "
                "both ends: the model linked names the sentence relates in another way. If the text does state "
                "these facts in words the cues miss, add those words to the relation's `indicios` and "
                "revalidate (no LLM call); GRAPHRAG_RELATION_CUES=false turns the check off.")
    if g.reason in ("subject_not_extracted", "object_not_extracted"):
        end = "subject" if g.reason.startswith("subject") else "object"
        return (f"{rel} refused {n} because the model named {'a subject' if end == 'subject' else 'an object'} it did not extract as an entity: the text "
                "and the ontology are probably fine; a bigger model or a prompt that insists on extracting "
                "every entity a relation uses should fix it.")
    if g.reason in ("subject_type_mismatch", "object_type_mismatch"):
        end = "subject" if g.reason.startswith("subject") else "object"
        seen: set[str] = set()
        for rec in recs:
            seen |= entity_types.get(fold(WS.sub(" ", rec.end_name or "").strip()), set())
        seen.discard(t)
        extracted = f" while the entity was extracted as {_names(sorted(x for x in seen if x))}" if seen else ""
        return (f"{rel} refused {n}: the triple types its {end} as {t}{extracted}. The model is inconsistent "
                f"about the class; make the class comments {where} tell these classes apart, or use a bigger model.")
    if g.reason == "unknown_class":
        text = f"The model used class {t} {n} in {rel} triples, which the ontology does not have: add it {where} if the text needs it"
        if onto is not None:
            close = difflib.get_close_matches(t, list(onto.classes), n=2, cutoff=0.5)
            if close:
                text += f", or it means {_names(close)}"
        return text + "."
    if g.reason == "self_relation":
        return f"{rel} refused {n} because subject and object are the same entity: a model mistake, not an ontology gap."
    if g.reason in ("malformed", "empty_name"):
        return (f"{n} triples came out incomplete ({g.reason}): the model's output, not the text or the ontology; "
                "try a bigger model or a shorter chunk size.")
    if g.reason == "unparsed":
        return (f"{n} lines of the answers could not be read as a fact (unparsed; each is kept as written): the "
                "model's output, not the text or the ontology; with a provider that takes no grammar, "
                "GRAPHRAG_ANSWER_FORM=arrays or full constrains the answer by a JSON schema.")
    return None


def entity_suggestion(g: EntityGroup, onto: Ontology | None, onto_path: str | None) -> str | None:
    where = f"in {onto_path}" if onto_path else "in the ontology"
    n = f"{g.count}x"
    cls = g.entity_type or g.relation or "(no class)"
    prop = g.property or "(unnamed property)"
    if g.reason == "invalid_enum_value":
        vals = ", ".join(repr(v) for v in g.values) or "(values not recorded)"
        text = f"{cls}.{prop} got {vals} ({n})"
        if g.allowed_values:
            text += f"; allowed: {', '.join(g.allowed_values)}"
            close = {v: difflib.get_close_matches(v, g.allowed_values, n=1, cutoff=0.4) for v in g.values}
            close_txt = ", ".join(f"{v!r} ~ {c[0]}" for v, c in close.items() if c)
            text += f". Add the value(s) to the enum {where} if they are legitimate"
            if close_txt:
                text += f", or they are the model's wording for an allowed one ({close_txt})"
        return text + "."
    if g.reason == "unknown_property":
        return f"The model wrote property {prop} on {cls} {n}: add it to {cls} {where} if you want it kept."
    if g.reason == "missing_required_property":
        return (f"{cls} lacked required property {prop} {n}: if the text often does not say it, make it optional "
                f"{where}; otherwise a bigger model may fill it.")
    if g.reason == "unknown_attribute":
        return f"The model wrote relation attribute {prop} {n}: add it to atributos_de_relacion {where} if you want it kept."
    if g.reason == "unknown_class":
        text = f"The model used class {cls} {n}, which the ontology does not have: add it {where} if the text needs it"
        if onto is not None and g.entity_type:
            close = difflib.get_close_matches(g.entity_type, list(onto.classes), n=2, cutoff=0.5)
            if close:
                text += f", or it means {_names(close)}"
        return text + "."
    if g.reason == "not_in_text":
        return (f"{cls} refused {n} because the name is not mentioned in its chunk (an invented or "
                "remembered name, not read in the text); if the text spells it differently, lower "
                "GRAPHRAG_MENTION_THRESHOLD.")
    if g.reason == "no_fact":
        return (f"{cls} refused {n} because no kept relation uses it: usually a name the model listed as a "
                "thing that is none (a motto, a title); if your corpus names entities that stand alone, "
                "set GRAPHRAG_ORPHAN_ENTITIES=keep.")
    if g.reason in ("malformed", "empty_name"):
        return (f"{n} entities came out incomplete ({g.reason}): the model's output, not the text or the ontology; "
                "try a bigger model.")
    if g.reason == "unparsed":
        return (f"{n} lines of the answers could not be read as an entity (unparsed; each is kept as written): "
                "the model's output, not the text or the ontology.")
    return None
