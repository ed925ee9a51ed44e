"""Load speed: the batched loader against the one-statement-per-row approach of most tutorials.

Builds a synthetic extraction that passes the ontology (entities of every class, relations whose
ends respect domain/range, a share of symmetric relations), then, on the running Neo4j server:

1. naive: one ``session.run`` (auto-commit transaction) per entity and per relation direction.
   It is far too slow to run on the full data, so it runs on a sample (the first ``--naive-sample``
   relations and their end entities) and its rows/s is extrapolated; the output says so.
2. ours: ``graphrag_got.graph.load.load_extraction`` on the full data.

The graph is cleared before each run and at the end: point NEO4J_URI at a scratch server, not at
a graph you keep, e.g. a second embedded server:

    NEO4J_URI=bolt://127.0.0.1:7688 GRAPHRAG_HOME=/tmp/graphrag-bench .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python -m benchmarks.load_benchmark --small
    NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python -m benchmarks.load_benchmark   # 100k entities, 300k relations

The Bolt driver's packing is pure Python unless ``neo4j-rust-ext`` (same version as ``neo4j``) is
installed; the output says which one ran.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import os
import random
import time
from typing import Any

import neo4j

from graphrag_got.graph import load_cypher
from graphrag_got.config import Settings
from graphrag_got.graph.load import ensure_schema, load_extraction
from graphrag_got.ontology.model import Ontology

MOMENTOS = [None, None, None, "en la boda", "tras la batalla", "en el asedio", "en Invernalia"]
# The synthetic data below has the shape of extraction.json format /1 (top-level "momento", two
# rejection lists); the loader reads that format and upgrades it.
SYNTHETIC_FORMAT = "graphrag_got.extraction/1"


def synthetic_extraction(
    onto: Ontology, n_entities: int, n_relations: int, symmetric_share: float, n_docs: int,
    chunks_per_doc: int, seed: int,
) -> dict[str, Any]:  # fmt: skip
    """A validated-looking extraction: every entity, relation and chunk id is consistent."""
    rng = random.Random(seed)
    documents, chunks = [], []
    for d in range(n_docs):
        doc_id = f"doc{d:05d}.txt"
        documents.append({"id": doc_id, "path": f"corpus/{doc_id}", "hash": hashlib.sha256(doc_id.encode()).hexdigest(),
                          "metadata": {}})  # fmt: skip
        for i in range(chunks_per_doc):
            text = f"Texto del fragmento {i} del documento {d}. " * 4
            h = hashlib.sha256(text.encode()).hexdigest()
            chunks.append({"id": f"{doc_id}:{h[:12]}", "document_id": doc_id, "index": i, "start": i * 200,
                           "end": i * 200 + len(text), "hash": h, "text": text, "heading": None})  # fmt: skip
    chunk_ids = [c["id"] for c in chunks]

    classes = list(onto.classes)
    by_class: dict[str, list[dict[str, Any]]] = {c: [] for c in classes}
    entities = []
    for i in range(n_entities):
        cls = classes[i % len(classes)]
        name = f"{cls} Número {i}"
        key = name.lower().replace("ú", "u")
        props = {}
        for pname, spec in onto.classes[cls].properties.items():
            props[pname] = rng.choice(list(spec.values)) if spec.kind == "enum" else f"valor {i}"
        ent = {"uid": f"{cls}|{key}", "key": key, "name": name, "type": cls, "properties": props,
               "chunk_ids": sorted(set(rng.sample(chunk_ids, k=min(2, len(chunk_ids)))))}  # fmt: skip
        entities.append(ent)
        by_class[cls].append(ent)

    sym = [r for r in onto.relations if r.symmetric]
    asym = [r for r in onto.relations if not r.symmetric]
    relations, seen = [], set()
    attempts = 0
    while len(relations) < n_relations and attempts < n_relations * 5:
        attempts += 1
        rel = rng.choice(sym if rng.random() < symmetric_share else asym)
        s = rng.choice(by_class[rng.choice(rel.domain)])
        o = rng.choice(by_class[rng.choice(rel.range)])
        if s is o:
            continue
        if rel.symmetric and o["uid"] < s["uid"]:
            s, o = o, s
        momento = rng.choice(MOMENTOS)
        key = (s["uid"], rel.name, o["uid"], momento or "")
        if key in seen:
            continue
        seen.add(key)
        relations.append({
            "subject": s["name"], "subject_key": s["key"], "subject_type": s["type"], "relation": rel.name,
            "object": o["name"], "object_key": o["key"], "object_type": o["type"], "momento": momento,
            "symmetric": rel.symmetric, "chunk_ids": [rng.choice(chunk_ids)],
        })  # fmt: skip
    return {
        "format": SYNTHETIC_FORMAT, "ontology": {"path": "ontology/got.json", "hash": onto.hash},
        "llm": {"provider": "synthetic", "model": "none"}, "prompt_version": "benchmark",
        "documents": documents, "chunks": chunks, "entities": entities, "relations": relations,
        "relaciones_descartadas": [], "entidades_descartadas": [], "failed_chunks": [],
        "counts": {"chunks": len(chunks), "entities": len(entities), "relations": len(relations)},
    }  # fmt: skip


def clear(driver: neo4j.Driver, database: str) -> None:
    with driver.session(database=database) as s:
        s.run(load_cypher.delete_relationships_in_batches()).consume()  # first: co-occurrences are dense
        s.run(load_cypher.delete_all_in_batches(5000)).consume()


def naive_load(driver: neo4j.Driver, database: str, onto: Ontology, ext: dict[str, Any], n_rel: int) -> tuple[int, int, float]:
    """Tutorial style: one auto-commit statement per row, label/type formatted into the text.

    Runs on the first ``n_rel`` relations and their end entities. Returns (entity rows,
    relation rows, seconds).
    """
    rels = ext["relations"][:n_rel]
    needed = {f"{r['subject_type']}|{r['subject_key']}" for r in rels} | {f"{r['object_type']}|{r['object_key']}" for r in rels}
    ents = [e for e in ext["entities"] if e["uid"] in needed]
    chunk_doc = {c["id"]: c["document_id"] for c in ext["chunks"]}
    n_rel_rows = 0
    t0 = time.perf_counter()
    with driver.session(database=database) as s:
        for e in ents:
            s.run(
                f"MERGE (e:Entity {{uid: $uid}}) SET e:{e['type']}, e += $props, e.name = $name, e.key = $key, "
                "e.type = $type, e.chunk_ids = $chunk_ids, e.doc_ids = $doc_ids",
                uid=e["uid"], props=e["properties"], name=e["name"], key=e["key"], type=e["type"],
                chunk_ids=e["chunk_ids"], doc_ids=sorted({chunk_doc[c] for c in e["chunk_ids"]}),
            ).consume()  # fmt: skip
        for r in rels:
            a, b = f"{r['subject_type']}|{r['subject_key']}", f"{r['object_type']}|{r['object_key']}"
            pairs = [(a, b), (b, a)] if r["symmetric"] else [(a, b)]
            for x, y in pairs:
                s.run(
                    f"MATCH (a:Entity {{uid: $a}}) MATCH (b:Entity {{uid: $b}}) "
                    f"MERGE (a)-[r:{r['relation']} {{momento: $momento}}]->(b) "
                    "SET r.chunk_ids = $chunk_ids, r.doc_ids = $doc_ids, r.symmetric = $symmetric",
                    a=x, b=y, momento=r["momento"] or "", chunk_ids=r["chunk_ids"],
                    doc_ids=sorted({chunk_doc[c] for c in r["chunk_ids"]}), symmetric=r["symmetric"],
                ).consume()  # fmt: skip
                n_rel_rows += 1
    return len(ents), n_rel_rows, time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--relations", type=int, default=300_000)
    ap.add_argument("--symmetric-share", type=float, default=0.10)
    ap.add_argument("--documents", type=int, default=1000)
    ap.add_argument("--chunks-per-doc", type=int, default=10)
    ap.add_argument("--naive-sample", type=int, default=2000, help="relations the naive path runs on")
    ap.add_argument("--batch-size", type=int, default=None, help="loader batch size (default: settings)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--small", action="store_true", help="quick preset: 5k entities, 15k relations, 100 documents")
    ap.add_argument("--skip-naive", action="store_true")
    args = ap.parse_args(argv)
    if args.small:
        args.entities, args.relations, args.documents, args.naive_sample = 5000, 15000, 100, 1000

    settings = Settings.load()
    if args.batch_size:
        settings = settings.with_overrides(batch_size=args.batch_size)
    onto = Ontology.from_file(settings.files.ontology_path)
    t = time.perf_counter()
    ext = synthetic_extraction(onto, args.entities, args.relations, args.symmetric_share, args.documents,
                               args.chunks_per_doc, args.seed)  # fmt: skip
    n_sym = sum(1 for r in ext["relations"] if r["symmetric"])
    print(f"synthetic extraction: {len(ext['documents'])} documents, {len(ext['chunks'])} chunks, "
          f"{len(ext['entities'])} entities, {len(ext['relations'])} relations ({n_sym} symmetric) "
          f"built in {time.perf_counter() - t:.1f} s")  # fmt: skip

    packer = "neo4j-rust-ext" if importlib.util.find_spec("neo4j._rust") else "pure Python"
    print(f"server {settings.neo4j.uri}, driver {neo4j.__version__} ({packer} packstream), "
          f"{os.cpu_count()} CPUs, load average before: {os.getloadavg()[0]:.1f}")  # fmt: skip
    driver = neo4j.GraphDatabase.driver(settings.neo4j.uri, auth=(settings.neo4j.username, settings.neo4j.password))
    db = settings.neo4j.database
    with driver:
        driver.verify_connectivity()
        naive_rate = None
        if not args.skip_naive:
            clear(driver, db)
            with driver.session(database=db) as s:
                ensure_schema(s, list(onto.classes))  # same indexes for both: a fair comparison
            ne, nr, secs = naive_load(driver, db, onto, ext, args.naive_sample)
            naive_rate = (ne + nr) / secs
            print(f"naive (one auto-commit statement per row), SAMPLE of {ne} entities + {nr} relation rows: "
                  f"{secs:.1f} s = {naive_rate:,.0f} rows/s (extrapolated to the full data: "
                  f"{(len(ext['entities']) + len(ext['relations']) + n_sym) / naive_rate / 60:.1f} min)")  # fmt: skip

        clear(driver, db)
        summary = load_extraction(driver, settings.neo4j, ext, onto, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)  # loading only
        rows = summary.entities_written + summary.relations_written
        rate = rows / summary.seconds
        rel_secs = summary.phase_seconds.get("relations", 0.0)
        print(f"loader (UNWIND batches of {settings.graph.batch_size}): {summary.entities_written} entities + "
              f"{summary.relations_written} relation rows (+ {summary.chunks_written} chunks, "
              f"{summary.mentions_written} mentions) in {summary.seconds:.1f} s end to end = {rate:,.0f} rows/s")  # fmt: skip
        print("  phases (s): " + ", ".join(f"{k} {v:.1f}" for k, v in summary.phase_seconds.items()))
        if rel_secs:
            print(f"  relations phase alone: {summary.relations_written / rel_secs:,.0f} relations/s")
        if summary.relations_unmatched or summary.relations_refused or summary.entities_refused:
            print(f"  WARNING: unmatched={summary.relations_unmatched} refused={summary.refused_by_reason}")
        if naive_rate:
            print(f"speed-up (end-to-end loader rows/s over naive rows/s): {rate / naive_rate:,.0f}x")
            same_work = summary.phase_seconds.get("entities", 0.0) + rel_secs
            if same_work:
                print(f"speed-up on the same work (entity + relation phases only, as naive does): "
                      f"{rows / same_work / naive_rate:,.0f}x ({rows / same_work:,.0f} rows/s)")  # fmt: skip

        t = time.perf_counter()
        again = load_extraction(driver, settings.neo4j, ext, onto, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
        print(f"reload of the same extraction: {again.documents_unchanged} documents unchanged, "
              f"{again.batches} write batches, {time.perf_counter() - t:.1f} s")  # fmt: skip
        clear(driver, db)
    print(f"load average after: {os.getloadavg()[0]:.1f} (other processes on the machine slow both paths)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
