"""Identifiers and helpers shared by every module that builds Cypher.

Rules shared by every ``cypher`` module of the package (see docs/contributing.md):

* Labels and relationship types are the only things spliced into the text. They come from the
  validated ontology (or are fixed names of the graph model) and always pass through
  :func:`escape_name`, which accepts plain identifiers only and backtick-quotes them.
* Every other value (names, keys, properties, ids, texts) is a query parameter.
* Every write takes its data as ``UNWIND $rows AS row`` so callers send batches, never one
  statement per row.

Each feature keeps its query builders next to its code: :mod:`graphrag_got.graph.load_cypher`
(schema, documents, entities and relations, incremental updates, statistics, maintenance),
:mod:`graphrag_got.graph.vector_cypher` (vector indexes and embedding writes),
:mod:`graphrag_got.graph.notes_cypher` (notes vault structure), and the ``cypher`` module of
:mod:`graphrag_got.communities`, :mod:`graphrag_got.search`, :mod:`graphrag_got.code`,
:mod:`graphrag_got.service` and :mod:`graphrag_got.report`. This module holds what several of
them use: :func:`escape_name`, the labels and relationship types of the graph model itself, and
small query fragments.
"""

from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------------
# Identifiers
# ---------------------------------------------------------------------------------------------

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

#: Labels and relationship types of the graph model itself (not from the ontology).
ENTITY = "Entity"
DOCUMENT = "Document"
CHUNK = "Chunk"
HAS_CHUNK = "HAS_CHUNK"
MENTIONS = "MENTIONS"

#: Entities mentioned in one chunk; not an ontology relation (stats, viz, search leave it out).
CO_OCCURS = "CO_OCCURS"


def escape_name(name: str) -> str:
    """Return ``name`` backtick-quoted for use as a label or relationship type.

    Only plain identifiers (``^[A-Za-z_][A-Za-z0-9_]*$``) are accepted, so a label can never
    carry Cypher syntax; anything else raises ``ValueError``. The backtick doubling is a second
    line of defence and keeps the function correct if the rule above is ever relaxed.
    """
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name):
        raise ValueError(
            f"{name!r} is not a valid label or relationship type: "
            "use letters, digits and '_' only, not starting with a digit"
        )
    return "`" + name.replace("`", "``") + "`"


# ---------------------------------------------------------------------------------------------
# Shared statements and fragments
# ---------------------------------------------------------------------------------------------


def await_indexes() -> str:
    """Wait until freshly created indexes are online (procedure call, no data)."""
    return "CALL db.awaitIndexes(300)"


def attribute_pairs(var: str, alias: str | None = "attributes") -> str:
    """``[[name, value], ...]`` of the relation attributes ``$attributes`` that ``var`` holds (read),
    returned as ``alias`` (None: the bare expression, e.g. inside a list)."""
    return (f"[k IN $attributes WHERE {var}[k] IS NOT NULL AND toString({var}[k]) <> '' "
            f"| [k, toString({var}[k])]]" + (f" AS {alias}" if alias else ""))
