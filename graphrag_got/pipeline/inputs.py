"""The digest of a build step's inputs that live in the graph: its documents, as the loader sees them.

The communities step (:mod:`graphrag_got.pipeline.community_inputs`) and the load step
(:mod:`graphrag_got.pipeline.load_inputs`) keep a step's result when its inputs are as the last build left
them; both hash the same list of the graph's documents (id, content, ontology and records hashes) after their own
head (files, settings, sizes).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import neo4j

from graphrag_got.config import Settings
from graphrag_got.graph.db import read_all
from graphrag_got.graph.load_cypher import existing_documents


def graph_documents_digest(driver: neo4j.Driver, settings: Settings, head: dict[str, Any]) -> str:
    """sha256 of ``head`` (JSON) followed by every document of the graph (one read query)."""
    docs = sorted((r["id"], r["hash"] or "", r["ontology_hash"] or "", r["records_hash"] or "")
                  for r in read_all(driver, settings.neo4j, existing_documents()))
    h = hashlib.sha256(json.dumps(head, sort_keys=True, default=str).encode("utf-8"))
    for doc in docs:
        h.update("\n".join(("", *doc)).encode("utf-8"))
    return h.hexdigest()
