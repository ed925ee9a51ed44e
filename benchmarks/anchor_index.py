"""Anchor matching on a large graph: the in-process matcher against a Neo4j full-text index.

Run on a graph that is already loaded (``benchmarks.hybrid_latency --keep`` leaves its 100k-entity
graph), same questions as ``benchmarks.hybrid_latency``:

    NEO4J_URI=bolt://127.0.0.1:7699 .venv/bin/python -m benchmarks.anchor_index

1. ``matcher``: :func:`graphrag_got.search.anchors.match_entities` over the cached catalog (exact
   n-grams, distinctive words, then close spellings: rapidfuzz prefilter, difflib decides);
2. ``fulltext``: a Lucene full-text index over entity names and keys (created here, dropped at the
   end), one query per question: every word of 4+ letters as an exact term OR a fuzzy term
   (``word~1``). This is only the candidate lookup: the exact/partial/fuzzy rules and the ambiguity
   check would still run in Python on its hits, so its time is a lower bound of that design.
Both are timed per question after a warm-up; p50/p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import random
import re
import time

import numpy as np

from benchmarks.hybrid_latency import GENERIC_QUESTIONS, percentile
from graphrag_got.config import Settings
from graphrag_got.graph.db import connect, read_all, write_query
from graphrag_got.search.anchors import STOPWORDS, entity_catalog, match_entities, normalize_words

INDEX = "bench_entity_names"


def create_name_index() -> str:
    return f"CREATE FULLTEXT INDEX {INDEX} IF NOT EXISTS FOR (e:Entity) ON EACH [e.name, e.key]"


def drop_name_index() -> str:
    return f"DROP INDEX {INDEX} IF EXISTS"


def await_index() -> str:
    return "CALL db.awaitIndexes(600)"


def query_names() -> str:
    return (f"CALL db.index.fulltext.queryNodes('{INDEX}', $q) YIELD node, score "
            "RETURN node.uid AS uid, score LIMIT 20")


def lucene_query(question: str) -> str:
    words = [w for w in normalize_words(question).split() if len(w) >= 4 and w not in STOPWORDS]
    return " OR ".join(f"{w} OR {w}~1" for w in words if re.fullmatch(r"\w+", w))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=50)
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    settings = Settings.load().with_overrides(local_catalog_cache_s=600.0)
    driver = connect(settings.neo4j)
    with driver:
        names = [r["name"] for r in read_all(driver, settings.neo4j, "MATCH (e:Entity) RETURN e.name AS name LIMIT 5000")]
        if not names:
            print("the graph is empty: run benchmarks.hybrid_latency --keep first")
            return 1
        rng = random.Random(args.seed)
        half = args.questions // 2
        questions = [f"¿Qué relación tiene {n} con los demás?" for n in rng.sample(names, min(half, len(names)))]
        questions += [GENERIC_QUESTIONS[i % len(GENERIC_QUESTIONS)] for i in range(args.questions - len(questions))]
        t = time.perf_counter()
        catalog, index = entity_catalog(driver, settings.neo4j, search=settings.search)
        print(f"catalog of {len(catalog)} entities read and indexed in {time.perf_counter() - t:.1f} s "
              f"(once per process, cached)")
        write_query(driver, settings.neo4j, create_name_index())
        write_query(driver, settings.neo4j, await_index())
        times: dict[str, list[float]] = {"matcher": [], "fulltext": []}
        found: dict[str, int] = {"matcher": 0, "fulltext": 0}
        for q in questions[:3]:  # warm-up
            match_entities(q, catalog, index=index)
            if lucene_query(q):
                read_all(driver, settings.neo4j, query_names(), q=lucene_query(q))
        for q in questions:
            t = time.perf_counter()
            matches = match_entities(q, catalog, index=index)
            times["matcher"].append((time.perf_counter() - t) * 1000)
            found["matcher"] += any(m.how != "ambiguous" for m in matches)
            t = time.perf_counter()
            hits = read_all(driver, settings.neo4j, query_names(), q=lucene_query(q)) if lucene_query(q) else []
            times["fulltext"].append((time.perf_counter() - t) * 1000)
            found["fulltext"] += bool(hits)
        write_query(driver, settings.neo4j, drop_name_index())
    print(f"{len(questions)} questions ({half} name an entity), load average {__import__('os').getloadavg()[0]:.1f}")
    print(f"{'method':<9} {'p50 ms':>7} {'p95 ms':>7} {'mean ms':>8} {'questions with a hit':>21}")
    for k, v in times.items():
        print(f"{k:<9} {percentile(v, 50):7.1f} {percentile(v, 95):7.1f} {float(np.mean(v)):8.1f} {found[k]:>21}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
