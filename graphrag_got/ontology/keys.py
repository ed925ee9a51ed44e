"""Spanish and English keys of an ontology file.

Every key of an ontology file has a canonical (Spanish) spelling and may be written with an English
alias (``clases``/``classes``, ``dominio``/``domain``, ...). This module holds the alias tables per
kind of object, turns aliased keys into canonical ones, and finds objects that give the same
setting twice (a key and its alias), which the file checks report as a problem.
"""

from __future__ import annotations

from typing import Any

# English alias -> canonical (Spanish) key, per object kind.
TOP_ALIASES = {
    "name": "nombre",
    "description": "descripcion",
    "classes": "clases",
    "relations": "relaciones",
    "relation_attributes": "atributos_de_relacion",
    "examples": "ejemplos",
}
CLASS_ALIASES = {"properties": "propiedades", "subclass_of": "subclase_de"}
REL_ALIASES = {"name": "nombre", "domain": "dominio", "range": "rango", "symmetric": "simetrica",
               "cues": "indicios", "reverse_cues": "indicios_inversos"}
SPEC_ALIASES = {
    "type": "tipo",
    "values": "valores",
    "requerido": "obligatorio",
    "required": "obligatorio",
    "identity": "identidad",
}
EXAMPLE_ALIASES = {"text": "texto", "entities": "entidades", "relations": "relaciones"}
EXAMPLE_ENTITY_ALIASES = {"class": "clase", "type": "clase", "name": "nombre", "properties": "propiedades"}
EXAMPLE_RELATION_ALIASES = {"relation": "relacion", "subject": "sujeto", "object": "objeto",
                            "attributes": "atributos"}


def apply_aliases(data: dict[str, Any], aliases: dict[str, str]) -> dict[str, Any]:
    """``data`` with every aliased key replaced by its canonical spelling."""
    return {aliases.get(k, k): v for k, v in data.items()}


def given_twice(obj: dict[str, Any], aliases: dict[str, str]) -> list[tuple[str, str]]:
    """Pairs (canonical or first key, other key) naming the same setting, both present in ``obj``."""
    groups: dict[str, list[str]] = {}
    for key in obj:
        groups.setdefault(aliases.get(key, key), []).append(key)
    out = []
    for canonical, keys in groups.items():
        keys.sort(key=lambda k: (k != canonical, k))
        out += [(keys[0], other) for other in keys[1:]]
    return out


def alias_conflicts(data: Any) -> list[tuple[tuple[Any, ...], str, str]]:
    """Every object (top level, class, relation, spec object, example) giving a key and its alias,
    as (location of the object, key, alias)."""
    out: list[tuple[tuple[Any, ...], str, str]] = []

    def check(obj: Any, loc: tuple[Any, ...], aliases: dict[str, str]) -> bool:
        if not isinstance(obj, dict):
            return False
        out.extend((loc, a, b) for a, b in given_twice(obj, aliases))
        return True

    def specs(obj: Any, loc: tuple[Any, ...]) -> None:
        if isinstance(obj, dict):
            for pname, spec in obj.items():
                check(spec, (*loc, pname), SPEC_ALIASES)

    if not check(data, (), TOP_ALIASES):
        return out
    for ckey in ("clases", "classes"):
        if isinstance(data.get(ckey), dict):
            for cname, cdata in data[ckey].items():
                if check(cdata, (ckey, cname), CLASS_ALIASES):
                    for pkey in ("propiedades", "properties"):
                        specs(cdata.get(pkey), (ckey, cname, pkey))
    for rkey in ("relaciones", "relations"):
        if isinstance(data.get(rkey), list):
            for i, rdata in enumerate(data[rkey]):
                check(rdata, (rkey, i), REL_ALIASES)
    for akey in ("atributos_de_relacion", "relation_attributes"):
        specs(data.get(akey), (akey,))
    for xkey in ("ejemplos", "examples"):
        if isinstance(data.get(xkey), list):
            for i, ex in enumerate(data[xkey]):
                if not check(ex, (xkey, i), EXAMPLE_ALIASES):
                    continue
                for part, aliases in (("entidades", EXAMPLE_ENTITY_ALIASES), ("relaciones", EXAMPLE_RELATION_ALIASES)):
                    for key in (part, next(k for k, v in EXAMPLE_ALIASES.items() if v == part)):
                        if isinstance(ex.get(key), list):
                            for j, item in enumerate(ex[key]):
                                check(item, (xkey, i, key, j), aliases)
    return out
