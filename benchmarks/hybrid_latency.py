"""Latency of local retrieval (``local_search(..., answer=False)``): graph vs hybrid, side by side.

Builds the load benchmark's synthetic graph (``benchmarks.load_benchmark.synthetic_extraction``:
100k entities, 300k relations, 10k chunks by default), loads it with ``load_extraction``, gives
every chunk and entity a RANDOM unit vector (384 dimensions, seeded; the texts are synthetic, so
real embeddings would measure nothing more for latency and would take an hour on 2 cores) and
creates the two vector indexes. Then it asks ~50 questions (half name an entity of the graph,
half name none) in both modes and prints p50/p95 per mode and the median seconds per stage.

The question is embedded with the configured embedding model for real (the embedded e5 model by
default), so the hybrid numbers include that cost; each question is asked once per mode after a
short warm-up (the model load and the first index reads are not counted). The entity catalog is
read once and reused (GRAPHRAG_LOCAL_CATALOG_CACHE, set to 600 s here as a service would), so each
question pays one cheap fingerprint query instead of reading 10^5 entities.

The graph is cleared before loading: point NEO4J_URI at a scratch server, e.g.

    NEO4J_URI=bolt://127.0.0.1:7688 GRAPHRAG_HOME=/tmp/graphrag-bench .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python -m benchmarks.hybrid_latency            # 100k entities
    NEO4J_URI=bolt://127.0.0.1:7688 .venv/bin/python -m benchmarks.hybrid_latency --small    # 5k entities
    ... --reuse    # the graph is already loaded and has vectors: only the questions
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time
from typing import Any

import numpy as np

from benchmarks.load_benchmark import clear, synthetic_extraction
from graphrag_got.graph import cypher as graph_cypher
from graphrag_got.graph import vector_cypher
from graphrag_got.config import Settings
from graphrag_got.llm.embeddings import EMBEDDED_DIMENSIONS, shared_embedder
from graphrag_got.graph.db import connect, read_all, write_query
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.local import local_search
from graphrag_got.graph.vectors import ensure_vector_index

GENERIC_QUESTIONS = [
    "¿Qué pasó después de la batalla?", "Who betrayed whom at the wedding?", "¿Quién gobierna el norte?",
    "What happened during the siege?", "¿Qué alianzas se formaron?", "Which families are at war?",
    "¿Quién viajó al sur?", "What is the story about?", "¿Qué se sabe de los dragones?",
    "Who rules the kingdom now?", "¿Quién traicionó a su familia?", "Which houses are allied?",
    "¿Dónde se celebró la boda?", "What did the council decide?", "¿Quién murió en el asedio?",
    "Who leads the army?", "¿Qué ocurrió en el castillo?", "Which characters meet each other?",
    "¿Quiénes son los aliados del rey?", "What caused the war?", "¿Qué lugares aparecen?",
    "Who are the main enemies?", "¿Qué pactos se rompieron?", "What happened at the river?",
    "¿Quién hereda el trono?",
]


def random_unit_vectors(n: int, dims: int, rng: np.random.Generator) -> np.ndarray:
    v = rng.standard_normal((n, dims)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def write_random_vectors(driver: Any, settings: Settings, label: str, key: str, ids: list[str], seed: int,
                         batch: int = 2000) -> float:  # fmt: skip
    rng = np.random.default_rng(seed)
    t = time.perf_counter()
    for start in range(0, len(ids), batch):
        part = ids[start:start + batch]
        vecs = random_unit_vectors(len(part), EMBEDDED_DIMENSIONS, rng)
        rows = [{"id": i, "embedding": v.tolist(), "hash": "random"} for i, v in zip(part, vecs)]
        write_query(driver, settings.neo4j, vector_cypher.set_embeddings(label, key), {"rows": rows})
    return time.perf_counter() - t


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entities", type=int, default=100_000)
    ap.add_argument("--relations", type=int, default=300_000)
    ap.add_argument("--documents", type=int, default=1000)
    ap.add_argument("--chunks-per-doc", type=int, default=10)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--small", action="store_true", help="5k entities, 15k relations, 100 documents")
    ap.add_argument("--reuse", action="store_true", help="skip building and loading: the graph is there")
    ap.add_argument("--keep", action="store_true", help="do not clear the graph at the end")
    args = ap.parse_args(argv)
    if args.small:
        args.entities, args.relations, args.documents = 5000, 15000, 100

    settings = Settings.load()
    if settings.search.local_catalog_cache_s <= 0:  # a long-running process: read the 10^5-entity catalog once
        settings = settings.with_overrides(local_catalog_cache_s=600.0)
    onto = Ontology.from_file(settings.files.ontology_path)
    driver = connect(settings.neo4j)
    print(f"server {settings.neo4j.uri}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    with driver:
        if not args.reuse:
            ext = synthetic_extraction(onto, args.entities, args.relations, 0.10, args.documents,
                                       args.chunks_per_doc, args.seed)  # fmt: skip
            clear(driver, settings.neo4j.database)
            summary = load_extraction(driver, settings.neo4j, ext, onto, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)  # random vectors below
            print(f"loaded {summary.entities_written} entities, {summary.relations_written} relation rows, "
                  f"{summary.chunks_written} chunks in {summary.seconds:.1f} s")
            for name, label in ((vector_cypher.CHUNK_VECTOR_INDEX, graph_cypher.CHUNK),
                                (vector_cypher.ENTITY_VECTOR_INDEX, graph_cypher.ENTITY)):
                ensure_vector_index(driver, settings.neo4j, name, label, EMBEDDED_DIMENSIONS)
            secs = write_random_vectors(driver, settings, graph_cypher.CHUNK, "id",
                                        [c["id"] for c in ext["chunks"]], args.seed)
            secs += write_random_vectors(driver, settings, graph_cypher.ENTITY, "uid",
                                         [e["uid"] for e in ext["entities"]], args.seed + 1)
            write_query(driver, settings.neo4j, graph_cypher.await_indexes())
            print(f"RANDOM unit vectors ({EMBEDDED_DIMENSIONS} dims) written for {len(ext['chunks'])} chunks and "
                  f"{len(ext['entities'])} entities in {secs:.1f} s (latency only: they carry no meaning)")
        names = [r["name"] for r in read_all(driver, settings.neo4j, "MATCH (e:Entity) RETURN e.name AS name LIMIT 5000")]
        if not names:
            print("the graph is empty: run without --reuse")
            return 1
        rng = random.Random(args.seed)
        half = args.questions // 2
        questions = [f"¿Qué relación tiene {n} con los demás?" for n in rng.sample(names, min(half, len(names)))]
        questions += [GENERIC_QUESTIONS[i % len(GENERIC_QUESTIONS)] + ("" if i < len(GENERIC_QUESTIONS) else f" ({i})")
                      for i in range(args.questions - len(questions))]
        embedder = shared_embedder(settings.embedding, llm=settings.llm, files=settings.files)
        for q in questions[:2] + questions[-2:]:  # warm-up: model load, page cache, query plans
            for mode in ("graph", "hybrid"):
                local_search(driver, settings.neo4j, q, answer=False, ontology=onto, retrieval=mode, embedder=embedder,
                             search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
        times: dict[str, list[float]] = {"graph": [], "hybrid": []}
        stages: dict[str, dict[str, list[float]]] = {"graph": {}, "hybrid": {}}
        slow: dict[str, list[tuple[float, str, dict[str, float]]]] = {"graph": [], "hybrid": []}
        for q in questions:
            for mode in ("graph", "hybrid"):
                t = time.perf_counter()
                res = local_search(driver, settings.neo4j, q, answer=False, ontology=onto, retrieval=mode, embedder=embedder,
                                   search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
                times[mode].append(time.perf_counter() - t)
                if res.retrieval != mode:
                    print(f"WARNING: {mode} ran as {res.retrieval}: {res.warnings}")
                for k, v in res.timings.items():
                    stages[mode].setdefault(k, []).append(v)
                slow[mode].append((times[mode][-1], q, dict(res.timings)))
        print(f"\n{len(questions)} questions ({half} name an entity, {len(questions) - half} name none), "
              f"answer=False, embedder {embedder.model_id} (question embedded for real; cache hits "
              f"{embedder.stats.hits}, model calls {embedder.stats.model_calls})")
        print(f"{'mode':<8} {'p50 ms':>8} {'p95 ms':>8} {'mean ms':>8}")
        for mode in ("graph", "hybrid"):
            ms = [t * 1000 for t in times[mode]]
            print(f"{mode:<8} {percentile(ms, 50):8.1f} {percentile(ms, 95):8.1f} {statistics.fmean(ms):8.1f}")
        for mode in ("graph", "hybrid"):
            parts = ", ".join(f"{k} {statistics.median(v) * 1000:.1f}" for k, v in stages[mode].items() if k != "total")
            print(f"  {mode} median ms per stage: {parts}")
        for mode in ("graph", "hybrid"):  # the tail: where the slowest questions spent their time
            for secs, q, parts in sorted(slow[mode], key=lambda x: -x[0])[:3]:
                shown = ", ".join(f"{k} {v * 1000:.1f}" for k, v in parts.items() if k != "total")
                print(f"  {mode} slow: {secs * 1000:.1f} ms ({shown}): {q[:60]}")
        p50 = percentile([t * 1000 for t in times["hybrid"]], 50)
        print(f"target hybrid p50 < 100 ms: {'met' if p50 < 100 else 'NOT met'} ({p50:.1f} ms); "
              f"load average {os.getloadavg()[0]:.1f}")
        if not args.keep and not args.reuse:
            clear(driver, settings.neo4j.database)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
