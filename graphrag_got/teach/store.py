"""Adding and removing corrected passages (the store file beside the ontology).

Both the CLI (``graphrag-got examples add / remove``) and the review page (behind
``serve --allow-examples``) write through these two functions: an example is checked against the
ontology, together with every example already stored, before the file is replaced (atomically), so a
wrong example is refused with its located problems and the file is never left half written.
"""

from __future__ import annotations

import logging
from pathlib import Path

from graphrag_got.errors import OntologyError
from graphrag_got.ontology.example_store import (ExampleFile, StoredExample, example_problems, read_store, store_path,
                                                 with_examples, write_store)
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)


class ExampleNotFound(OntologyError):
    """``examples remove ID`` names no stored example."""


def save_example(ontology_path: str | Path, example: StoredExample) -> ExampleFile:
    """Store ``example`` (replacing a stored one of the same passage) and return the new store.
    Raises OntologyError listing every problem of the example (nothing is written then)."""
    path = store_path(ontology_path)
    store = read_store(path)
    base = Ontology.from_file(ontology_path, stored_examples=False)
    kept = tuple(e for e in store.examples if e.id != example.id)
    replaced = len(kept) != len(store.examples)
    problems = [(loc.replace("$", "$.examples[0]", 1), msg) for loc, msg in example_problems(base, example)]
    if problems:
        raise OntologyError(f"{len(problems)} problem(s) in the example of {example.chunk_id or example.id}: "
                            + "; ".join(f"{loc}: {msg}" for loc, msg in problems), problems=problems)
    new = ExampleFile(examples=(*kept, example))
    with_examples(base, new.examples, source=str(path))  # and the store as a whole reads
    write_store(path, new)
    logger.info("%s example %s (%d entities, %d facts) in %s", "replaced" if replaced else "stored", example.id,
                len(example.entities), len(example.relations), path)
    return new


def remove_example(ontology_path: str | Path, key: str) -> tuple[StoredExample, ExampleFile]:
    """Remove the example whose id (or chunk id) is ``key``; returns it and the new store."""
    path = store_path(ontology_path)
    store = read_store(path)
    found = store.get(key)
    if found is None:
        ids = ", ".join(e.id for e in store.examples) or "none stored"
        raise ExampleNotFound(f"no stored example has the id or chunk id {key!r} (in {path}: {ids}); "
                              "`graphrag-got examples list` shows them", path=str(path))
    new = ExampleFile(examples=tuple(e for e in store.examples if e.id != found.id))
    write_store(path, new)
    logger.info("removed example %s from %s", found.id, path)
    return found, new


__all__ = ["ExampleNotFound", "remove_example", "save_example"]
