"""`graphrag-got schema extraction`: the JSON Schemas of the files graphrag_got writes."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings

#: The file kinds whose JSON Schema the command prints (see :func:`schema_of`).
SCHEMA_KINDS = ("extraction",)


def schema_of(kind: str) -> dict:
    """The JSON Schema of one file kind (the contract module is imported only here: it is pydantic)."""
    if kind == "extraction":
        from graphrag_got.extract.extraction import Extraction

        return Extraction.json_schema()
    raise ValueError(f"no schema for {kind!r}; choose one of {', '.join(SCHEMA_KINDS)}")


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a file graphrag_got writes (for tools built on it)")
    p.add_argument("kind", choices=sorted(SCHEMA_KINDS), help="extraction: out/extraction.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    print(json.dumps(schema_of(args.kind), ensure_ascii=False, indent=2))
    return 0
