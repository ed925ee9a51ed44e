"""Whether the communities of the graph are still those a build would detect and report now.

Detection reads the whole entity graph and rewrites every community; on a large notes vault that is
tens of seconds on every build even when nothing changed. The inputs that decide the result are the
loaded documents (id and content hash, with the ontology they were loaded under), the number of
entities and relationships, the community, model and embedding settings and the version of the report
check (a new one checks the stored reports again, without the model); their digest is kept in
``<out>/communities.inputs`` after a build step wrote communities and every report. When a later
build finds the same digest and the communities still in the graph, the step keeps them and says so.
The ``communities detect`` command always detects again.
"""

from __future__ import annotations

import neo4j

from graphrag_got.common.sidecar import Sidecar
from graphrag_got.communities.cypher import community_count, graph_size
from graphrag_got.config import Settings
from graphrag_got.graph.db import read_all
from graphrag_got.pipeline.inputs import graph_documents_digest

SIDECAR = "communities.inputs"
VERSION = "communities-inputs/1"


def sidecar(settings: Settings) -> Sidecar:
    return Sidecar(settings.files.out_dir / SIDECAR)


def graph_digest(driver: neo4j.Driver, settings: Settings, ontology_hash: str) -> str:
    """sha256 of what detection and the reports depend on (two read queries)."""
    from graphrag_got.pipeline.report_check import CHECK_VERSION  # the claim check's modules load when needed

    (size,) = read_all(driver, settings.neo4j, graph_size())
    head = {"v": VERSION, "report_check": CHECK_VERSION, "ontology": ontology_hash, "size": size,
            "communities": settings.communities.model_dump(mode="json"),
            "llm": settings.llm.model_dump(mode="json"), "embedding": settings.embedding.model_dump(mode="json")}
    return graph_documents_digest(driver, settings, head)


def unchanged(driver: neo4j.Driver, settings: Settings, digest: str) -> int:
    """The number of communities kept when the digest matches the last build's and they are still in
    the graph; 0 otherwise (detect again)."""
    if sidecar(settings).kept(digest) is None:
        return 0
    (row,) = read_all(driver, settings.neo4j, community_count())
    return int(row["count"] or 0)


def remember(settings: Settings, digest: str) -> None:
    sidecar(settings).remember(digest)


def forget(settings: Settings) -> None:
    sidecar(settings).forget()
