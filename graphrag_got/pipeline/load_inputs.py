"""Whether a build's load step would write anything: the extraction file, ontology, settings and graph as
the last build left them.

Loading an extraction whose documents are all in the graph writes nothing, but finding that out reads
and plans the whole file first (seconds on a large notes vault: the 65 MB extraction of a 6,000-note
vault). The inputs that decide it are the extraction file's bytes, the ontology, the graph settings and
the graph's documents with their content and ontology hashes (what the loader itself compares to find the
documents to write); their digest is kept in ``<out>/load.inputs`` after a build's load, with that load's summary
line. When a later build finds the same digest, the step writes nothing and repeats the line. The
``load`` command always loads.
"""

from __future__ import annotations

import neo4j

from graphrag_got.common.sidecar import Sidecar
from graphrag_got.config import Settings
from graphrag_got.pipeline.inputs import graph_documents_digest

SIDECAR = "load.inputs"
VERSION = "load-inputs/2"


def sidecar(settings: Settings) -> Sidecar:
    return Sidecar(settings.files.out_dir / SIDECAR)


def digest(driver: neo4j.Driver, settings: Settings, file_digest: str, ontology_hash: str) -> str:
    """sha256 of the extraction file's digest, the ontology, the graph settings and the graph's documents."""
    head = {"v": VERSION, "file": file_digest, "ontology": ontology_hash,
            "graph": settings.graph.model_dump(mode="json"), "neo4j": [settings.neo4j.uri, settings.neo4j.database]}
    return graph_documents_digest(driver, settings, head)


def unchanged(settings: Settings, value: str) -> str | None:
    """The last load's line when its digest is ``value``; None otherwise (load)."""
    kept = sidecar(settings).kept(value)
    return kept.line if kept is not None else None


def remember(settings: Settings, value: str, line: str) -> None:
    sidecar(settings).remember(value, line)


def forget(settings: Settings) -> None:
    sidecar(settings).forget()
