"""The lines answer form: one line per entity and one per fact, names written once, no keys.

::

    subject (Class) -RELATION-> object (Class)
    subject (Class) -RELATION-> object (Class) | attribute=value
    Class: name | property=value
    Class: name

The facts come first; an entity line follows only for an entity with a property the text gives (or in
no fact): a fact's ends are entities of the classes it names. (Entity lines first, as the full form
lists its entities, measured worse: relation F1 0.35 against 0.53 on GoT, ``benchmarks/results/answer_forms.txt``.)

Each fact is written once, with names and classes and no keys: about 20 output tokens where the full
form's JSON object takes about 35. Relation ends stay *names*: small models cannot count positions
(the compact form's lesson). A fact end written without its class takes the class its entity line
gives; with none, the audited repairs and the validator decide, as for the full form.

On llama.cpp the answer is written under a GBNF grammar built from the ontology (:meth:`LinesForm.grammar`):
class and relation names are enumerated, a relation's line takes only its domain's classes before it
and its range's after it (as the full form's schema does), a class's line carries only its own
properties, each at most once (enum values enumerated), facts come first, and there are at most as
many lines as the schema's bounds; each call's names are the candidate names of its own text
(:meth:`LinesForm.for_text`). Other providers get the instructions and examples only.

The stored value is ``{"lines": [...]}``: the model's lines as written. Reading them into the full
form happens every time the answer is read (:meth:`LinesForm.expand`), so a line that does not
parse is never dropped unseen: it goes to the answer's ``unparsed`` list, which the validator turns
into a refusal with reason ``unparsed`` and the line as the model wrote it.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from pydantic import JsonValue

from graphrag_got.extract.forms.base import AnswerForm, Constraint, Fact, full_answer
from graphrag_got.llm.grammar import literal, trie_rules
from graphrag_got.llm.json_answers import MAX_ANSWER_CHARS, parse_json_text
from graphrag_got.ontology.model import Ontology, PropertySpec

#: The longest name (and property value) the grammar lets the model write.
NAME_CHARS = 80
VALUE_CHARS = 120
_FENCE_LINE = re.compile(r"^\s*```")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]\s+|\d{1,3}[.)]\s+)")
# class and relation names are identifiers (the ontology's rule); anything else is a name or unread
_FACT = re.compile(r"^(?P<s>.*?\S)\s*-\s*(?P<r>[A-Za-z_][A-Za-z0-9_]*)\s*->\s*(?P<o>.*)$")
_ENTITY = re.compile(r"^(?P<c>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<n>.*)$")
_TYPED = re.compile(r"^(?P<n>.*?\S)\s*\(\s*(?P<c>[A-Za-z_][A-Za-z0-9_]*)\s*\)$")  # "name (Class)"


def _end(text: str) -> tuple[str, str | None]:
    """A fact's end as written: ``name (Class)`` or a bare name (its class then comes from the entity lines)."""
    typed = _TYPED.match(text.strip())
    return (typed["n"].strip(), typed["c"]) if typed is not None else (text.strip(), None)


def _pairs(parts: list[str], line: str, unparsed: list[dict[str, str]]) -> dict[str, str]:
    """``key=value`` parts after a line's first ``|``; a part that is not one is unparsed (and said)."""
    out: dict[str, str] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not key.strip():
            unparsed.append({"line": line, "why": f"{part.strip()!r} is not a key=value pair"})
            continue
        if value.strip():
            out[key.strip()] = value.strip()
    return out


def read_lines(lines: list[Any]) -> dict[str, Any]:
    """The full form of an answer's lines (``unparsed``: the lines, or parts, that are neither)."""
    entities: list[dict[str, Any]] = []
    facts: list[Fact] = []
    unparsed: list[dict[str, str]] = []
    for raw in lines:
        if not isinstance(raw, str):
            unparsed.append({"line": str(raw), "why": "not a line of text"})
            continue
        line = _BULLET.sub("", raw.strip(), count=1)
        if not line or _FENCE_LINE.match(line):
            continue
        head, *rest = line.split("|")
        fact = _FACT.match(head.strip())
        if fact is not None:
            subject, s_cls = _end(fact["s"])
            prefixed = _ENTITY.match(subject)  # "Class: name -RELATION-> ...": a class written before the subject
            if prefixed is not None and prefixed["n"].strip():
                subject, s_cls = prefixed["n"].strip(), s_cls or prefixed["c"]
            obj, o_cls = _end(fact["o"])
            facts.append((subject, s_cls, fact["r"].strip(), obj, o_cls, _pairs(rest, raw, unparsed)))
            continue
        entity = _ENTITY.match(head.strip())
        if entity is not None and entity["n"].strip():
            entities.append({"type": entity["c"].strip(), "name": entity["n"].strip(),
                             **_pairs(rest, raw, unparsed)})
            continue
        unparsed.append({"line": raw, "why": "neither an entity line (Class: name) nor a fact line "
                                             "(subject -RELATION-> object)"})
    # a fact names its ends' classes: each end is an entity of that class (an entity line adds properties)
    return full_answer(entities, facts, unparsed, ends_are_entities=True)


# no ":" (what ends a class), "(" (what starts one), ">" (what ends a relation) or "|" (what starts an attribute)
# in a name, so a line reads one way only
_FREE_NAME = f"name ::= [^\\n|:>( ] [^\\n|:>(]{{0,{NAME_CHARS - 1}}}"


def _value_rule(name: str, spec: PropertySpec) -> str:
    if spec.kind == "enum" and spec.values:
        return f"{name} ::= " + " | ".join(literal(v) for v in spec.values)
    return f"{name} ::= value"


class LinesForm(AnswerForm):
    name = "lines"
    cache_tag = "lines-v5"
    json = False
    what = "answer"
    about = ("one line per entity (Class: name) and per fact (subject -RELATION-> object), names written once "
             "(about 13 output tokens a fact)")

    def grammar(self, onto: Ontology, max_entities: int, max_relations: int) -> str:
        """The GBNF grammar of an answer to ``onto`` within the bounds (see the module docstring)."""
        rules = [f"root ::= fact{{0,{max(0, max_relations)}}} entity{{0,{max(0, max_entities)}}}"]
        alternatives = []
        for i, (cname, klass) in enumerate(onto.classes.items()):
            props = list(klass.properties.items())
            # each property at most once, in the class's order (a small model otherwise repeats one)
            tail = "".join(f" ({literal(' | ' + p + '=')} prop-{i}-{j})?" for j, (p, _) in enumerate(props))
            rules.append(f"entity-{i} ::= {literal(cname + ': ')} name{tail} \"\\n\"")
            alternatives.append(f"entity-{i}")
            rules += [_value_rule(f"prop-{i}-{j}", spec) for j, (_, spec) in enumerate(props)]
        rules.append("entity ::= " + " | ".join(alternatives))
        attrs = list(onto.relation_attributes.items())
        tail = "".join(f" ({literal(' | ' + a + '=')} attr-{j})?" for j, (a, _) in enumerate(attrs)) + " \"\\n\""
        # each relation's line takes only its domain's classes before it and its range's after it (exactly
        # domain -> range, as the full form's schema): a fact whose ends the relation refuses cannot be written
        facts = []
        for k, rel in enumerate(onto.relations):
            rules.append(f"fact-{k} ::= name \" (\" (" + " | ".join(literal(c) for c in rel.domain) + ") "
                         + literal(f") -{rel.name}-> ") + " name \" (\" (" + " | ".join(literal(c) for c in rel.range)
                         + ") \")\"" + tail)
            facts.append(f"fact-{k}")
        if facts:
            rules.append("fact ::= " + " | ".join(facts))
        else:
            rules[0] = f"root ::= entity{{0,{max(0, max_entities)}}}"
        rules += [_value_rule(f"attr-{j}", spec) for j, (_, spec) in enumerate(attrs)]
        rules.append(_FREE_NAME)
        rules.append(f"value ::= [^\\n| ] [^\\n|]{{0,{VALUE_CHARS - 1}}}")
        return "\n".join(rules) + "\n"

    def constraint(self, onto: Ontology, max_entities: int, max_relations: int) -> Constraint:
        return Constraint(grammar=self.grammar(onto, max_entities, max_relations), end_on_repeated_line=True)

    def for_text(self, constraint: Constraint, text: str) -> Constraint:
        """Names narrowed to the text's candidate names (the spans the mentions strategy copies from:
        capitalized runs of words, :func:`~graphrag_got.extract.classify.mentions.candidate_spans`), so a
        name is one the text writes, never a sentence or a class written before it. A text without any
        candidate keeps the free name rule."""
        from graphrag_got.extract.classify.mentions import candidate_spans

        spans = candidate_spans(text)
        if constraint.grammar is None or not spans or _FREE_NAME not in constraint.grammar:
            return constraint
        names = "\n".join(trie_rules("name", spans))
        return replace(constraint, grammar=constraint.grammar.replace(_FREE_NAME, names))

    def read(self, text: str) -> tuple[JsonValue, bool]:
        if len(text) > MAX_ANSWER_CHARS:
            raise ValueError(f"the answer is {len(text):,} characters long, more than the {MAX_ANSWER_CHARS:,} "
                             "accepted")
        body = text.strip()
        if body.startswith("{"):  # a model that answered in the full JSON form anyway: read it as that
            try:
                value, _ = parse_json_text(body)
            except ValueError:
                pass
            else:
                if isinstance(value, dict) and ("entities" in value or "relations" in value):
                    return value, False
        lines = [line.rstrip() for line in body.splitlines() if line.strip()]
        full = read_lines(lines)
        if lines and not full["entities"] and not full["relations"]:
            raise ValueError("no line of the answer is an entity line (Class: name) or a fact line "
                             "(subject -RELATION-> object)")
        return {"lines": lines}, False

    def merge(self, first: JsonValue, more: JsonValue) -> JsonValue:
        if self.recognizes(first) and self.recognizes(more):  # both as lines: the lines one after the other
            assert isinstance(first, dict) and isinstance(more, dict)
            return {"lines": [*first["lines"], *more["lines"]]}
        return super().merge(first, more)

    def recognizes(self, value: JsonValue) -> bool:
        return isinstance(value, dict) and isinstance(value.get("lines"), list) \
            and "entities" not in value and "relations" not in value

    def expand(self, value: JsonValue) -> JsonValue:
        assert isinstance(value, dict)
        return read_lines(list(value.get("lines") or []))
