"""`graphrag-got examples suggest | add CHUNK_ID | list | remove ID | export`: the corrected passages.

A corrected passage is a chunk of the user's own corpus with the entities and facts it states, kept
beside the ontology (``NAME.examples.json``) and given to the model as an example (see
``graphrag_got.ontology.example_store``). ``add`` writes the model's current answer for the chunk as an
editable file, opens ``$EDITOR`` (or reads ``--file``), checks the result like an ontology example and
stores it; a wrong file is kept, with its problems, to be fixed and given again with ``--file``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_got.errors import GraphragGotError

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings

logger = logging.getLogger(__name__)


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("examples", help="correct passages of your corpus and use them as examples",
                       description="Pick passages worth correcting, correct the model's answer for one, keep it "
                                   "beside the ontology as an example (it reaches the extraction prompt), list, "
                                   "remove and export them. `graphrag-got eval` scores the model on them.")
    esub = p.add_subparsers(dest="examples_command", metavar="{suggest,add,list,remove,export}", required=True)
    ps = esub.add_parser("suggest", help="the passages whose correction should teach most")
    ps.add_argument("-n", type=int, default=3, metavar="N", help="how many (default: 3)")
    ps.add_argument("--extraction", metavar="FILE", help="extraction file (default: <out>/extraction.json)")
    pa = esub.add_parser("add", help="correct the model's answer for a chunk and store it as an example")
    pa.add_argument("chunk_id", metavar="CHUNK_ID", help="a chunk id (`examples suggest` prints some)")
    pa.add_argument("--extraction", metavar="FILE", help="extraction file (default: <out>/extraction.json)")
    pa.add_argument("--file", metavar="FILE", help="read the corrected lines from FILE instead of opening $EDITOR")
    pa.add_argument("--draft", metavar="FILE", help="only write the editable file to FILE (edit it, then --file)")
    pl = esub.add_parser("list", help="the stored examples")
    pr = esub.add_parser("remove", help="remove a stored example (its earlier answers come back from the cache)")
    pr.add_argument("id", metavar="ID", help="example id or chunk id (`examples list`)")
    pe = esub.add_parser("export", help="print the stored examples as an ontology's `ejemplos` (JSON)")
    pe.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    for parser in (p, ps, pa, pl, pr, pe):
        parser.set_defaults(func=run)


def _extraction_path(args: argparse.Namespace, settings: "Settings") -> Path:
    given = getattr(args, "extraction", None)
    path = Path(given) if given else settings.files.out_dir / "extraction.json"
    if not path.is_file():
        raise GraphragGotError(f"no extraction file at {path}: run `graphrag-got extract` first (or pass "
                               "--extraction FILE)")
    return path


def run(args: argparse.Namespace, settings: "Settings") -> int:
    cmd = args.examples_command
    return {"suggest": _suggest, "add": _add, "list": _list, "remove": _remove, "export": _export}[cmd](args, settings)


def _suggest(args: argparse.Namespace, settings: "Settings") -> int:
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.ontology.example_store import read_store, store_path
    from graphrag_got.teach.suggest import suggest_passages

    extraction = Extraction.read(_extraction_path(args, settings))
    done = {e.chunk_id for e in read_store(store_path(settings.files.ontology_path)).examples}
    picks = suggest_passages(extraction, args.n, exclude=done)
    if not picks:
        print("no passage to suggest (every chunk is corrected, failed or too long)")
        return 0
    texts = {c.id: c.text for c in extraction.chunks}
    for s in picks:
        preview = " ".join(texts[s.chunk_id].split())
        print(f"{s.chunk_id}  ({s.chars} chars, {s.facts} facts, {s.entities} entities, {s.refusals} refusals)")
        print(f"    {preview[:160]}{'...' if len(preview) > 160 else ''}")
        print(f"    teaches: {', '.join(s.teaches) or 'nothing new'}")
    print(f"\ncorrect one with: graphrag-got examples add {picks[0].chunk_id}")
    return 0


def _edit(path: Path) -> None:
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if not editor:
        raise GraphragGotError(f"no editor: set $EDITOR, or edit {path} yourself and run the same command with "
                               f"--file {path}")
    result = subprocess.run([*shlex.split(editor), str(path)], check=False)
    if result.returncode != 0:
        raise GraphragGotError(f"the editor ({editor}) exited with {result.returncode}; the draft is kept in {path}")


def _add(args: argparse.Namespace, settings: "Settings") -> int:
    from graphrag_got.errors import OntologyError
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.teach.draft import draft_example, example_text, find_chunk, locate_problems, read_example_text
    from graphrag_got.teach.store import save_example

    extraction = Extraction.read(_extraction_path(args, settings))
    chunk = find_chunk(extraction, args.chunk_id)
    draft_dir = settings.files.out_dir / "examples"
    draft_path = Path(args.draft) if args.draft else draft_dir / f"{chunk.id.replace('/', '_').replace(':', '_')}.txt"
    if args.file:
        edited = Path(args.file).read_text(encoding="utf-8")
    else:
        draft = draft_example(extraction, chunk.id)
        draft_path.parent.mkdir(parents=True, exist_ok=True)
        draft_path.write_text(example_text(draft.example, draft.left_out), encoding="utf-8")
        if args.draft:
            print(f"wrote {draft_path} ({len(draft.example.relations)} facts, {len(draft.example.entities)} entities "
                  f"the model found); correct it, then: graphrag-got examples add {chunk.id} --file {draft_path}")
            return 0
        _edit(draft_path)
        edited = draft_path.read_text(encoding="utf-8")
    onto = Ontology.from_file(settings.files.ontology_path, stored_examples=False)
    source = args.file or str(draft_path)
    example = None
    try:
        example = read_example_text(edited, chunk.text, onto, chunk_id=chunk.id, document=chunk.document_id)
        if example is None:
            print("the file has no line left: nothing stored")
            return 1
        store = save_example(settings.files.ontology_path, example)
    except OntologyError as exc:
        problems = locate_problems(exc.problems, example, edited) if example is not None else exc.problems
        shown = "\n".join(f"  {source}: {loc}: {msg}" for loc, msg in problems) or f"  {exc}"
        raise OntologyError(f"{len(problems) or 1} problem(s) in the corrected passage, nothing stored:\n{shown}\n"
                            f"Fix the file and run: graphrag-got examples add {chunk.id} --file {source}",
                            problems=problems, path=source) from None
    print(f"stored example {example.id} for {chunk.id}: {len(example.relations)} facts, {len(example.entities)} "
          f"entities ({len(store.examples)} example(s) in {_store(settings)}); the next `graphrag-got extract` asks "
          "the chunks again with it, `graphrag-got eval` scores the model on your passages")
    return 0


def _store(settings: "Settings") -> Path:
    from graphrag_got.ontology.example_store import store_path

    return store_path(settings.files.ontology_path)


def _list(args: argparse.Namespace, settings: "Settings") -> int:
    from graphrag_got.ontology.example_store import read_store

    store = read_store(_store(settings))
    if not store.examples:
        print(f"no stored example ({_store(settings)}); `graphrag-got examples suggest` picks passages to correct")
        return 0
    for e in store.examples:
        preview = " ".join(e.text.split())
        print(f"{e.id}  {e.chunk_id or '-'}  {len(e.relations)} facts, {len(e.entities)} entities  added {e.added}")
        print(f"    {preview[:120]}{'...' if len(preview) > 120 else ''}")
    print(f"{len(store.examples)} example(s) in {_store(settings)}")
    return 0


def _remove(args: argparse.Namespace, settings: "Settings") -> int:
    from graphrag_got.teach.store import remove_example

    removed, store = remove_example(settings.files.ontology_path, args.id)
    print(f"removed example {removed.id} ({removed.chunk_id or 'no chunk'}); {len(store.examples)} left; answers "
          "made before it was added come back from the cache with no model call")
    return 0


def _export(args: argparse.Namespace, settings: "Settings") -> int:
    import json

    from graphrag_got.ontology.example_store import read_store

    data = {"ejemplos": [e.ontology_data() for e in read_store(_store(settings)).examples]}
    text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {len(data['ejemplos'])} example(s) to {args.output}")
    else:
        print(text, end="")
    return 0
