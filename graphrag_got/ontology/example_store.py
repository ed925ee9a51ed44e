"""The user's corrected passages: annotated examples kept in a file beside the ontology.

``ontology.json`` -> ``ontology.examples.json``. Each stored example is a passage of the user's own
corpus (its text, the chunk it came from) with the entities and facts the user says it states,
written by ``graphrag-got examples add`` (or the review page behind ``serve --allow-examples``).
:meth:`Ontology.from_file` appends them to the ontology's own examples (``ejemplos``), so they reach
the extraction prompt and the ontology hash, which keys the stored answers: adding one re-asks the
chunks, removing it returns to the earlier answers with no model call.

An example is checked like an ontology example (every name occurs in its text, declared classes and
relations, domain and range, enum values); a store with a wrong example is refused with every problem
located in the store file, and nothing is written.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from graphrag_got.common.files import write_json_atomic
from graphrag_got.errors import OntologyError
from graphrag_got.ontology.model import ExampleEntity, ExampleRelation, ExtractionExample

if TYPE_CHECKING:
    from graphrag_got.ontology.model import Ontology

FORMAT = "graphrag_got.examples/1"
SUFFIX = ".examples.json"


class StoredExample(BaseModel):
    """One corrected passage: where it came from and what it states."""

    model_config = ConfigDict(frozen=True, populate_by_name=True)

    id: str = Field(min_length=1)
    chunk_id: str = ""
    document: str = ""
    added: str = ""
    text: str = Field(min_length=1)
    entities: tuple[ExampleEntity, ...] = ()
    relations: tuple[ExampleRelation, ...] = ()

    @classmethod
    def build(cls, text: str, entities: list[ExampleEntity] | tuple[ExampleEntity, ...],
              relations: list[ExampleRelation] | tuple[ExampleRelation, ...], *, chunk_id: str = "",
              document: str = "") -> "StoredExample":
        """A new example; its id is its text's (correcting a passage again replaces the earlier correction)."""
        return cls(id=example_id(text), chunk_id=chunk_id, document=document, text=text,
                   added=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   entities=tuple(entities), relations=tuple(relations))

    def as_example(self) -> ExtractionExample:
        return ExtractionExample(text=self.text, entities=self.entities, relations=self.relations)

    def ontology_data(self) -> dict[str, Any]:
        """The example as an ontology file writes it (``ejemplos``: Spanish keys, as the file schema reads)."""
        return {"texto": self.text,
                "entidades": [{"clase": e.class_name, "nombre": e.name,
                               **({"propiedades": dict(e.properties)} if e.properties else {})}
                              for e in self.entities],
                "relaciones": [{"relacion": r.relation, "sujeto": r.subject, "objeto": r.object,
                                **({"atributos": dict(r.attributes)} if r.attributes else {})}
                               for r in self.relations]}


class ExampleFile(BaseModel):
    """The store file: its format and the examples in the order they were added."""

    model_config = ConfigDict(frozen=True)

    format: Literal["graphrag_got.examples/1"] = FORMAT
    examples: tuple[StoredExample, ...] = ()

    def get(self, example_id_or_chunk: str) -> StoredExample | None:
        return next((e for e in self.examples if example_id_or_chunk in (e.id, e.chunk_id)), None)


def example_id(text: str) -> str:
    return "ex-" + hashlib.sha256(text.strip().encode("utf-8")).hexdigest()[:10]


def store_path(ontology_path: str | Path) -> Path:
    """The store beside an ontology file: ``NAME.json`` -> ``NAME.examples.json``."""
    p = Path(ontology_path)
    return p.with_name(p.stem + SUFFIX)


def read_store(path: str | Path) -> ExampleFile:
    """The examples stored at ``path`` (none when the file does not exist)."""
    p = Path(path)
    if not p.is_file():
        return ExampleFile()
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise OntologyError(f"{p}: the examples file cannot be read ({exc}); fix it, or move it away to start "
                            "again (`graphrag-got examples list` reads it)", path=str(p)) from None
    try:
        return ExampleFile.model_validate(data)
    except ValidationError as exc:
        problems = [(".".join(str(x) for x in err["loc"]) or "$", err["msg"]) for err in exc.errors()]
        raise OntologyError(f"{p}: {len(problems)} problem(s) in the examples file: "
                            + "; ".join(f"{loc}: {msg}" for loc, msg in problems[:10])
                            + ". Fix the file or remove the example with `graphrag-got examples remove ID`.",
                            problems=problems, path=str(p)) from None


def write_store(path: str | Path, store: ExampleFile) -> None:
    write_json_atomic(Path(path), store.model_dump(mode="json"))


def example_problems(onto: "Ontology", example: StoredExample, where: str = "") -> list[tuple[str, str]]:
    """Everything wrong with one example against ``onto``, each at a readable location."""
    from graphrag_got.ontology.checks import example_problems as check
    from graphrag_got.ontology.model import json_path

    return [(json_path(tuple(_STORE_KEYS.get(part, part) if isinstance(part, str) else part for part in loc)), msg)
            for loc, msg in check(onto, example.as_example(), (where,) if where else ())]


#: the ontology file's example keys -> the store file's
_STORE_KEYS = {"entidades": "entities", "relaciones": "relations", "clase": "class", "nombre": "name",
               "propiedades": "properties", "relacion": "relation", "sujeto": "subject", "objeto": "object",
               "atributos": "attributes"}


def with_examples(onto: "Ontology", examples: list[StoredExample] | tuple[StoredExample, ...],
                  *, source: str | None = None) -> "Ontology":
    """``onto`` with ``examples`` appended to its own (a new ontology: its prompt and hash include them).
    Raises OntologyError, every problem located in ``source`` (the store file), when one is wrong."""
    if not examples:
        return onto
    problems: list[tuple[str, str]] = []
    for i, ex in enumerate(examples):
        problems += [(loc.replace("$.", f"$.examples[{i}].", 1) if loc != "$" else f"$.examples[{i}]", msg)
                     for loc, msg in example_problems(onto, ex)]
    if problems:
        where = source or "the examples"
        raise OntologyError(f"{where}: {len(problems)} problem(s) in the stored examples: "
                            + "; ".join(f"{loc}: {msg}" for loc, msg in problems[:10])
                            + ". Correct the example again with `graphrag-got examples add CHUNK_ID`, or remove it "
                              "with `graphrag-got examples remove ID`.", problems=problems, path=where)
    raw = dict(onto.raw)
    key = "examples" if "examples" in raw else "ejemplos"
    raw[key] = [*(raw.get(key) or []), *(ex.ontology_data() for ex in examples)]
    new = type(onto).from_dict(raw, source=onto.source)
    new._stored = (*stored_of(onto), *examples)
    new._without_stored = without_stored(onto)
    return new


def stored_of(onto: "Ontology") -> tuple[StoredExample, ...]:
    """The corrected passages among ``onto``'s examples (its last ones), in the order they were added."""
    return tuple(onto._stored)


def without_stored(onto: "Ontology") -> "Ontology":
    """``onto`` without its corrected passages (itself when it has none): its file's own examples only."""
    return onto._without_stored if onto._without_stored is not None else onto


def with_stored_examples(onto: "Ontology", ontology_path: str | Path) -> "Ontology":
    """``onto`` with the examples stored beside its file."""
    path = store_path(ontology_path)
    store = read_store(path)
    return with_examples(onto, store.examples, source=str(path))


__all__ = ["ExampleFile", "FORMAT", "StoredExample", "example_id", "example_problems", "read_store", "store_path",
           "stored_of", "with_examples", "with_stored_examples", "without_stored", "write_store"]
