"""The ontology as text: the summary ``ontology show`` prints and the extraction prompt sends.

:meth:`graphrag_got.ontology.model.Ontology.describe` and
:meth:`graphrag_got.ontology.model.PropertySpec.describe` return what these functions write.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from graphrag_got.ontology.model import Ontology, PropertySpec


def describe_spec(spec: PropertySpec) -> str:
    """One property or relation attribute: its type (or values), required or optional, comment and hint."""
    text = "text" if spec.kind == "string" else "one of: " + ", ".join(spec.values)
    text += ", required" if spec.required else ", optional"
    if spec.comment.strip():
        text += f" - {spec.comment.strip()}"
    if spec.hint:
        text += f" (hint: {spec.hint})"
    return text


def describe_ontology(onto: Ontology) -> str:
    """The readable summary shown by ``ontology show`` and sent in the extraction prompt."""
    lines: list[str] = []
    title = onto.name or "Ontology"
    lines.append(f"ONTOLOGY: {title}" + (f" - {onto.description}" if onto.description else ""))
    lines.append("")
    lines.append("ENTITY CLASSES (field \"type\" of an entity):")
    for cname, klass in onto.classes.items():
        kind = f" (a kind of {', '.join(klass.parents)})" if klass.parents else ""
        lines.append(f"- {cname}{kind}: {klass.comment}".rstrip(": "))
        for pname, spec in klass.properties.items():
            lines.append(f"    property {pname}: {describe_spec(spec)}")
    lines.append("")
    lines.append("RELATIONS (subject type -> object type):")
    for rel in onto.relations:
        sym = " [symmetric]" if rel.symmetric else ""
        lines.append(f"- {rel.name}: {' | '.join(rel.stated_domain)} -> {' | '.join(rel.stated_range)}{sym}. "
                     f"{rel.comment}".rstrip())
    if onto.relation_attributes:
        lines.append("")
        lines.append("RELATION ATTRIBUTES:")
        for aname, spec in onto.relation_attributes.items():
            lines.append(f"- {aname}: {describe_spec(spec)}")
    return "\n".join(lines)
