"""`graphrag-got ontology check|show|schema`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_got.errors import OntologyError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings
    from graphrag_got.ontology.model import Ontology


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("ontology", help="check, show or print the schema of an ontology")
    osub = p.add_subparsers(dest="ontology_command", metavar="ACTION", required=True)
    c = osub.add_parser("check", help="validate an ontology file (exit 0 when valid, 1 with every problem)")
    c.add_argument("file", nargs="?", help="ontology file (default: the configured one)")
    c.set_defaults(func=run_check)
    s = osub.add_parser("show", help="readable summary (the same text the extraction prompt uses)")
    s.add_argument("file", nargs="?")
    s.add_argument("--prompt", action="store_true",
                   help="print the exact extraction system prompt built from the ontology, then its version")
    s.set_defaults(func=run_show)
    j = osub.add_parser("schema", help="print the JSON schema the LLM output is constrained by")
    j.add_argument("file", nargs="?")
    j.add_argument("--file-schema", action="store_true", help="print the JSON Schema of ontology files instead")
    j.set_defaults(func=run_schema)
    i = osub.add_parser("import", help="convert another ontology format into ours")
    i.add_argument("--from", dest="source_format", choices=["text2kgbench"], required=True)
    i.add_argument("file", help="the ontology file to convert")
    i.add_argument("-o", "--output", required=True, help="where to write our ontology JSON")
    i.set_defaults(func=run_import)


def _load(args: argparse.Namespace, settings: Settings) -> Ontology:
    from graphrag_got.ontology.model import Ontology

    return Ontology.from_file(Path(args.file) if args.file else settings.files.ontology_path)


def run_check(args: argparse.Namespace, settings: Settings) -> int:
    onto = _load(args, settings)
    print(f"{onto.source}: valid ontology: {len(onto.classes)} classes, {len(onto.relations)} relations "
          f"({sum(r.symmetric for r in onto.relations)} symmetric), "
          f"{len(onto.relation_attributes)} relation attribute(s); hash {onto.hash[:12]}")
    return 0


def run_show(args: argparse.Namespace, settings: Settings) -> int:
    if getattr(args, "prompt", False):
        return run_show_prompt(args, settings)
    print(_load(args, settings).describe())
    return 0


def run_show_prompt(args: argparse.Namespace, settings: Settings) -> int:
    """`ontology show --prompt`: the extraction system prompt, byte for byte, and its version."""
    from graphrag_got.prompts import EXTRACT_PROMPTS, extraction_system_prompt, load_prompts

    prompts = load_prompts(settings.llm.prompts_dir)
    print(extraction_system_prompt(_load(args, settings), settings.extract.answer_form, prompts=prompts))
    print(f"prompt version: {prompts.version(*EXTRACT_PROMPTS)}")
    return 0


def run_schema(args: argparse.Namespace, settings: Settings) -> int:
    if args.file_schema:
        from graphrag_got.ontology.loading import file_schema

        print(json.dumps(file_schema(), indent=2, ensure_ascii=False))
        return 0
    from graphrag_got.extract.forms import answer_form

    onto = _load(args, settings)
    limit = answer_form(settings.extract.answer_form).constraint(onto, settings.extract.max_entities,
                                                                 settings.extract.max_relations)
    if limit.schema is None:  # a form constrained by a grammar (llama.cpp): the grammar is what constrains it
        print(limit.grammar or "", end="")
        return 0
    print(json.dumps(limit.schema, indent=2, ensure_ascii=False))
    return 0


def run_import(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.ontology.text2kgbench import import_text2kgbench, renamed_labels, write_ontology

    data, label_map = import_text2kgbench(args.file)
    try:
        onto = Ontology.from_dict(data, source=args.output)
    except OntologyError as exc:
        raise OntologyError(f"the converted ontology is not valid (a bug in the importer):\n{exc}") from None
    write_ontology(data, args.output)
    renamed = renamed_labels(label_map)
    n_classes, n_relations = len(renamed["classes"]), len(renamed["relations"])
    print(f"wrote {args.output}: {len(onto.classes)} classes, {len(onto.relations)} relations "
          f"({n_classes + n_relations} labels renamed to identifiers: {n_classes} of classes, "
          f"{n_relations} of relations)")
    return 0
