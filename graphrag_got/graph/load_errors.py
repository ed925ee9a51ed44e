"""The loader's messages: values the graph cannot hold and one clear line for a write that failed
(:mod:`graphrag_got.graph.load`)."""

from __future__ import annotations

import json

import neo4j

from graphrag_got.errors import ExtractionFileError, GraphragGotError, Neo4jError, format_problems
from graphrag_got.extract.extraction import Extraction
from graphrag_got.graph.load_plan import Group

#: Integers Neo4j stores (64-bit signed).
_INT64 = (-(2**63), 2**63 - 1)


# ---------------------------------------------------------------------------------------------
# Values the graph cannot hold
# ---------------------------------------------------------------------------------------------


def unstorable_values(ext: Extraction, doc_ids: set[str]) -> list[tuple[str, str, str]]:
    """``(json path, document id, problem)`` for each value of the documents ``doc_ids`` that
    Neo4j cannot store: an integer beyond 64 bits, metadata that is not JSON or not valid Unicode.

    Entity and relation records hold text only, which the file contract checks (valid Unicode).
    """
    problems: list[tuple[str, str, str]] = []
    for i, d in enumerate(ext.documents):
        if d.id not in doc_ids:
            continue
        try:
            json.dumps(d.metadata, ensure_ascii=False, sort_keys=True).encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append((f"$.documents[{i}].metadata", d.id, f"holds text that is not valid Unicode ({exc.reason})"))
        except (TypeError, ValueError) as exc:
            problems.append((f"$.documents[{i}].metadata", d.id, f"is not JSON data ({exc})"))
    lo, hi = _INT64
    for i, c in enumerate(ext.chunks):
        if c.document_id not in doc_ids:
            continue
        for name in ("index", "start", "end"):
            value = getattr(c, name)
            if not lo <= value <= hi:
                shown = str(value) if len(str(value)) <= 30 else f"{str(value)[:27]}..."
                problems.append((f"$.chunks[{i}].{name}", c.document_id,
                                 f"{shown} is beyond the 64-bit integers Neo4j stores"))  # fmt: skip
    return problems


def unstorable_error(source: str, problems: list[tuple[str, str, str]]) -> ExtractionFileError:
    located = [(f"{where} (document {shown_id(doc)})", what) for where, doc, what in problems]
    return ExtractionFileError(format_problems(
        source, f"{len(problems)} value(s) cannot be stored in Neo4j; nothing was written", located,
        "Fix the file or produce it again with `graphrag-got extract`, then load again."))


# ---------------------------------------------------------------------------------------------
# Messages and errors
# ---------------------------------------------------------------------------------------------


def one_line(text: object, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def shown_id(doc_id: str) -> str:
    """A document id for a message (a hostile one can be kilobytes long)."""
    return repr(doc_id) if len(doc_id) <= 80 else f"{doc_id[:60]!r}... ({len(doc_id)} characters)"


def write_error(source: str, g: Group, exc: BaseException, phase: str) -> GraphragGotError:
    """One clear line for a group of one document whose transaction failed."""
    doc = shown_id(g.documents[0]) if g.documents else "?"
    doing = "removing it" if g.delete else f"writing its {phase}" if phase else "writing it"
    resume = ("Documents before it are loaded and nothing of this one was written (its transaction was "
              "rolled back)")  # fmt: skip
    if isinstance(exc, neo4j.exceptions.Neo4jError):
        return Neo4jError(
            f"{source}: document {doc}: Neo4j refused {doing} ({exc.code}: {one_line(exc.message or exc)}). "
            f"{resume}. Fix that document (a shorter id, name or value) and run the load again to resume."
        )
    if isinstance(exc, neo4j.exceptions.DriverError):
        return Neo4jError(f"{source}: document {doc}: {doing} failed ({type(exc).__name__}: {one_line(exc)}). "
                          f"{resume}. Run the load again to resume.")  # fmt: skip
    return ExtractionFileError(
        f"{source}: document {doc}: a value of its {phase or 'rows'} cannot be sent to Neo4j "
        f"({type(exc).__name__}: {one_line(exc)}). {resume}. Fix that value in the file (or produce the file "
        "again with `graphrag-got extract`) and load again."
    )
