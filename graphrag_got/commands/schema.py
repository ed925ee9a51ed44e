"""`graphrag-got schema extraction`: the JSON Schemas of the files graphrag_got writes."""

from __future__ import annotations

import argparse
import json

from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction

#: File kind -> function returning its JSON Schema.
SCHEMAS = {"extraction": Extraction.json_schema}


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("schema", help="print the JSON Schema of a file graphrag_got writes (for tools built on it)")
    p.add_argument("kind", choices=sorted(SCHEMAS), help="extraction: out/extraction.json")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    print(json.dumps(SCHEMAS[args.kind](), ensure_ascii=False, indent=2))
    return 0
