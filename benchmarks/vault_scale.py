"""A notes vault at scale: first build, a no-change rebuild and a daily update of a synthetic vault.

    NEO4J_URI=bolt://127.0.0.1:7699 GRAPHRAG_HOME=/tmp/vault-bench .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7699 .venv/bin/python -m benchmarks.vault_scale              # 6,000 notes
    NEO4J_URI=bolt://127.0.0.1:7699 .venv/bin/python -m benchmarks.vault_scale --notes 500  # a quick run

The vault is generated (seeded): folders two levels deep, YAML front matter (title, date, tags),
headings, prose, inline tags, wikilinks and Markdown links to other notes (some to notes that do not
exist), fenced code blocks; 1-6 KB a note. The prose names entities of a synthetic vocabulary of
``ontology/notes.json`` classes in sentences that state a relation ("Varnok uses Quellprot ...").

No model runs. The vault is chunked with the build's own chunker, and every chunk gets a
deterministic answer (the entities whose names its text holds, the relations whose sentence it
holds) written to a replay file, served by the replay provider (``graphrag_got.llm.replay``); the
community reports get one fixed stand-in report (``benchmarks.notes_vault.stand_in_chat``). So the
wall times are the pipeline without the LLM: chunking, validation, load, notes structure, embeddings
(the embedded e5 model, for real; ``--no-embeddings`` leaves them out) and communities.

Steps, each a ``run_build`` of the whole vault:
1. first build of the empty database;
2. a rebuild with no change (nothing should be asked, embedded or written);
3. a daily update: ``--daily`` notes touched (70% edited, 20% new, 10% deleted; 80 by default).

Printed per step: wall seconds, seconds per build step, peak memory of this process (RSS high-water
mark, which never goes down, so it is the peak up to that step), Neo4j writes (nodes and
relationships created and deleted, properties set: the server's own counters, summed over every
write transaction of the step), embeddings computed, LLM calls, and the per-note overhead. The
database is emptied first: point NEO4J_URI at a scratch server.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_benchmark import clear  # noqa: E402
from benchmarks.notes_vault import ONTOLOGY, stand_in_chat  # noqa: E402
from benchmarks.vault_writes import WriteCounter  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.graph.db import connect  # noqa: E402
from graphrag_got.ingest.chunking import read_corpus  # noqa: E402

SYLLABLES = ["var", "nok", "quel", "prot", "zen", "dri", "mab", "tul", "ors", "kev", "lin", "dax", "pem", "rou",
             "sif", "gal", "bri", "ton", "wex", "yar", "cul", "hob", "niv", "tra"]  # fmt: skip
CLASSES = ("Tool", "Service", "Protocol", "Command", "Concept")
# relation -> (subject classes, object classes, sentence); every pair respects ontology/notes.json
RELATIONS = {
    "USES": (("Tool", "Service"), ("Protocol", "Concept"), "{s} uses {o} for most of its work."),
    "IMPLEMENTS": (("Tool", "Service"), ("Protocol", "Concept"), "{s} implements {o} in a small daemon."),
    "PART_OF": (("Command",), ("Tool",), "The command {s} is part of {o}."),
    "ALTERNATIVE_TO": (("Tool",), ("Tool",), "{s} is an alternative to {o} on older hosts."),
    "RUNS_ON": (("Service",), ("Tool",), "{s} runs on {o} in the lab."),
}
FILLER = [
    "The first attempt failed because the disk was full, so check the free space before anything else.",
    "Keep the change small and write down what was done, the date and the reason.",
    "After a restart the logs show the new settings; compare them with the previous run.",
    "This is a note for later: the defaults are fine for a laptop but not for a busy server.",
    "Measure twice, then change one thing at a time and measure again.",
    "The backup ran at night and took about twenty minutes on the small machine.",
    "Nothing here is urgent, but the old way was slower and harder to read.",
]
CODE = ["ls -la /var/log\njournalctl -u app --since today\n", "[section]\nkey = value\nretries = 3\n",
        "for f in *.log; do gzip \"$f\"; done\n", "def main():\n    return 0\n"]  # fmt: skip


def vocabulary(n: int, rng: random.Random) -> dict[str, list[str]]:
    """``n`` distinct made-up names per class (words of no language, so no name hides in another)."""
    seen: set[str] = set()
    out: dict[str, list[str]] = {c: [] for c in CLASSES}
    for cls in CLASSES:
        while len(out[cls]) < n:
            word = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))
            name = word.lower() if cls == "Command" else word.capitalize()
            if word.lower() not in seen:
                seen.add(word.lower())
                out[cls].append(name)
    return out


#: Topic folders of the vault (note i lies in topic-<i % TOPICS>).
TOPICS = 97
#: Topical vaults (--topical): the share of a note's names drawn from its topic folder's own pool.
TOPICAL_SHARE = 0.9
TOPIC_POOL = 30  # names per class in a topic's pool


def topical(vocab: dict[str, list[str]], topics: int = TOPICS, seed: int = 5) -> dict[str, list[str]]:
    """``vocab`` with a pool of names per topic folder (key ``"<class>@<topic>"``): notes of a topic
    mostly name the same things, as notes of one subject do; the pools overlap at random."""
    rng = random.Random(seed)
    out = dict(vocab)
    for t in range(topics):
        for cls, names in vocab.items():
            out[f"{cls}@{t}"] = rng.sample(names, min(TOPIC_POOL, len(names)))
    return out


def _pick(rng: random.Random, vocab: dict[str, list[str]], cls: str, i: int) -> str:
    pool = vocab.get(f"{cls}@{i % TOPICS}")
    return rng.choice(pool if pool is not None and rng.random() < TOPICAL_SHARE else vocab[cls])


def note_path(i: int) -> str:
    return f"area-{i % 12:02d}/topic-{i % TOPICS:02d}/note-{i:05d}.md"


def note_text(i: int, n_notes: int, vocab: dict[str, list[str]], version: int = 0) -> tuple[str, list[tuple]]:
    """The Markdown of note ``i`` (``version`` > 0: an edited version) and the facts its prose states."""
    rng = random.Random(i * 7919 + version)
    facts: list[tuple[str, str, str, str, str]] = []
    tags = sorted({f"t{rng.randrange(60)}" for _ in range(rng.randint(1, 4))})
    lines = ["---", f"title: Note {i}", f"date: 2024-{1 + i % 12:02d}-{1 + i % 28:02d}", f"tags: [{', '.join(tags)}]",
             "---", f"# Note {i}", ""]  # fmt: skip
    for section in range(rng.randint(1, 4)):
        lines += [f"## Part {section + 1}", ""]
        for _ in range(rng.randint(1, 3)):
            sentences = []
            for _ in range(rng.randint(1, 3)):
                rel = rng.choice(list(RELATIONS))
                subj_classes, obj_classes, template = RELATIONS[rel]
                sc, oc = rng.choice(subj_classes), rng.choice(obj_classes)
                s, o = _pick(rng, vocab, sc, i), _pick(rng, vocab, oc, i)
                if s == o:
                    continue
                sentences.append(template.format(s=s, o=o))
                facts.append((rel, s, sc, o, oc))
            sentences += rng.sample(FILLER, rng.randint(1, 3))
            if rng.random() < 0.4:
                other = rng.randrange(n_notes + 50)  # a few links to notes that do not exist
                sentences.append(f"See [[note-{other:05d}]] and #{rng.choice(tags)}.")
            if rng.random() < 0.2:
                sentences.append(f"More in [that note](../../{note_path(rng.randrange(n_notes))}).")
            lines += [" ".join(sentences), ""]
        if rng.random() < 0.5:
            lines += ["```", rng.choice(CODE).rstrip("\n"), "```", ""]
    if version:
        lines += ["## Update", "", f"Edited on day {version}. " + rng.choice(FILLER), ""]
    return "\n".join(lines), facts


def write_vault(root: Path, notes: dict[int, int], n_total: int, vocab: dict[str, list[str]]) -> dict[str, list[tuple]]:
    """Write ``notes`` (note index -> version) under ``root``; the facts per note path."""
    facts: dict[str, list[tuple]] = {}
    for i, version in notes.items():
        text, fs = note_text(i, n_total, vocab, version)
        path = root / note_path(i)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        facts[note_path(i)] = fs
    return facts


def chunk_answers(settings: Settings, vault: Path, facts: dict[str, list[tuple]], answers: dict[str, str]) -> int:
    """Add a replay answer for every chunk of ``vault`` not answered yet; the number of chunks."""
    docs = read_corpus(vault, kind=settings.chunking.chunker, min_chars=settings.chunking.min_chars,
                       max_chars=settings.chunking.max_chars)  # fmt: skip
    n = 0
    for doc in docs:
        for chunk in doc.chunks:
            n += 1
            if chunk.hash in answers:
                continue
            ents: dict[str, str] = {}
            rels = []
            for rel, s, sc, o, oc in facts.get(doc.document.id, []):
                if s in chunk.text and o in chunk.text:
                    ents[s], ents[o] = sc, oc
                    rels.append({"relation": rel, "subject": s, "subject_type": sc, "object": o, "object_type": oc})
            answers[chunk.hash] = json.dumps({"entities": [{"type": t, "name": nm} for nm, t in sorted(ents.items())],
                                              "relations": rels})  # fmt: skip
    return n


def write_replay(path: Path, answers: dict[str, str]) -> None:
    payload = {"format": "graphrag_got.replay/1", "model": "synthetic (benchmarks/vault_scale.py)",
               "responses": [{"chunk_hash": h, "responses": [a]} for h, a in answers.items()]}  # fmt: skip
    path.write_text(json.dumps(payload), encoding="utf-8")


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kilobytes on Linux


def compare_fresh(driver, settings: Settings) -> str:  # type: ignore[no-untyped-def]
    """The stored communities (after the daily update) against a detection from scratch of the same graph
    (not written): level-0 modularity, and how many reports the fresh detection could reuse."""
    import networkx as nx

    from graphrag_got.communities.detect import detect_communities
    from graphrag_got.communities.graph import read_entity_graph
    from graphrag_got.graph.db import read_all

    eg = read_entity_graph(driver, settings.neo4j, ONTOLOGY, communities=settings.communities, files=settings.files)
    rows = read_all(driver, settings.neo4j, "MATCH (e:Entity)-[:IN_COMMUNITY]->(c:Community) WHERE c.level = 0 "
                                      "RETURN c.id AS id, collect(e.uid) AS members")  # fmt: skip
    reported = {r["h"] for r in read_all(driver, settings.neo4j, "MATCH (c:Community) WHERE c.summary IS NOT NULL "
                                                           "RETURN c.content_hash AS h")}  # fmt: skip
    cs = settings.communities
    fresh = detect_communities(eg, cs.resolution, cs.seed, max_size=cs.max_size, max_levels=cs.max_levels)
    sized = [c for c in fresh if c.size > 1]

    def q(parts: list) -> float:
        return nx.community.modularity(eg.graph, parts, weight="weight")

    return (f"\n## stored communities vs a detection from scratch of the final graph\n"
            f"  level-0 modularity: stored {q([set(r['members']) for r in rows]):.4f}, from scratch "
            f"{q([set(c.members) for c in fresh if c.level == 0]):.4f}\n"
            f"  from scratch: {len(fresh)} communities, {len(sized)} of 2+ members, of which "
            f"{sum(1 for c in sized if c.content_hash not in reported)} without a stored report for their content")


def vocabulary_typing(settings: Settings, vocab: dict[str, list[str]]) -> str:
    """How the stored term types match the vocabulary's classes (the generator's labels, made before the run)."""
    from graphrag_got.common.normalize import normalize_name
    from graphrag_got.extract.terms.type_terms import TermTypeCache
    from graphrag_got.llm.factory import model_label
    from graphrag_got.ontology.model import Ontology

    cache = TermTypeCache(settings.files.cache_dir, model_label(settings.llm, "llamacpp"), Ontology.from_file(ONTOLOGY))
    asked = typed = right = 0
    wrong: dict[str, int] = {}
    for cls, names in ((k, v) for k, v in vocab.items() if "@" not in k):
        for name in names:
            stored, got = cache.type_of(normalize_name(name))
            asked += stored
            typed += stored and got is not None
            right += got == cls
            if stored and got is not None and got != cls:
                wrong[f"{cls}->{got}"] = wrong.get(f"{cls}->{got}", 0) + 1
    top = ", ".join(f"{k} {v}" for k, v in sorted(wrong.items(), key=lambda kv: -kv[1])[:6])
    total = sum(len(v) for k, v in vocab.items() if "@" not in k)
    return (f"\nterm typing against the vocabulary's classes: {asked} of {total} names typed by the build, {typed} "
            f"given a class, precision {right}/{typed} = {right / max(1, typed):.2f}; most frequent errors: "
            f"{top or 'none'}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", type=int, default=6000)
    ap.add_argument("--daily", type=int, default=80, help="notes touched by the daily update")
    ap.add_argument("--names", type=int, default=0, help="names per class (default: notes / 10, at least 50)")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--topical", action="store_true",
                    help="notes of a topic folder mostly name the same things (default: names drawn from the whole "
                         "vocabulary, a graph without community structure)")  # fmt: skip
    ap.add_argument("--no-embeddings", action="store_true", help="leave the embeddings step out")
    ap.add_argument("--no-communities", action="store_true", help="leave the communities step out")
    ap.add_argument("--terms", action="store_true", help="the terms strategy (no model call) instead of replayed answers")
    ap.add_argument("--typing", action="store_true",
                    help="with --terms: the embedded model (GRAPHRAG_LLAMACPP_MODEL) types the shared terms for real; "
                         "the typing precision against the vocabulary's classes is printed (needs --no-communities: "
                         "the reports would be real model calls too)")
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    ap.add_argument("--profile", type=Path, help="write a cProfile file per step into this folder (slower)")
    ap.add_argument("--workdir", type=Path, help="build the vault, caches and outputs here and keep them (default: a "
                                                "temporary folder, removed at the end); it must not exist yet")
    args = ap.parse_args(argv)
    if args.typing and not (args.terms and args.no_communities):
        ap.error("--typing needs --terms and --no-communities (a report per community would be a real model call)")
    from graphrag_got.pipeline.build import run_build

    rng = random.Random(args.seed)
    vocab = vocabulary(args.names or max(50, args.notes // 10), rng)
    if args.topical:
        vocab = topical(vocab)
    lines = [f"server {os.environ.get('NEO4J_URI', 'default')}, {os.cpu_count()} CPUs, "
             f"load average at start {os.getloadavg()[0]:.1f}"]  # fmt: skip

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    say(lines.pop())
    if args.workdir is not None and args.workdir.exists():
        ap.error(f"--workdir {args.workdir} exists already: give a new folder")
    with (contextlib.nullcontext(str(args.workdir)) if args.workdir else tempfile.TemporaryDirectory(
            prefix="vault-scale-")) as tmp:
        work = Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        vault, replay = work / "vault", work / "answers.json"
        settings = Settings.load().with_overrides(
            home=work / "home", out_dir=work / "out", ontology_path=ONTOLOGY, corpus_path=vault,
            llm_provider="replay", replay_file=replay, embeddings=not args.no_embeddings)
        if args.terms:
            settings = settings.with_overrides(extraction="terms", term_typing=False)
        if args.typing:
            base = Settings.load()
            settings = settings.with_overrides(term_typing=True, llm_provider="llamacpp",
                                               models_path=base.models_dir.resolve())
        t = time.perf_counter()
        versions = {i: 0 for i in range(args.notes)}
        facts = write_vault(vault, versions, args.notes, vocab)
        answers: dict[str, str] = {}
        n_chunks = chunk_answers(settings, vault, facts, answers)
        size = sum(p.stat().st_size for p in vault.rglob("*.md"))
        say(f"vault: {args.notes} notes, {size / 1e6:.1f} MB ({size / args.notes / 1000:.1f} KB a note), "
            f"{n_chunks} chunks, {sum(len(v) for k, v in vocab.items() if '@' not in k)} names"
            f"{' (topical)' if args.topical else ''}; generated and answered in "
            f"{time.perf_counter() - t:.1f} s (not counted below)")

        # the daily update, prepared now so that its answers are in the replay file from the start
        touched = rng.sample(range(args.notes), args.daily - args.daily // 5)
        n_edit = round(args.daily * 0.7)
        edited, deleted = touched[:n_edit], touched[n_edit:]
        added = list(range(args.notes, args.notes + args.daily // 5))
        with tempfile.TemporaryDirectory(prefix="vault-next-") as nxt:
            after = {**{i: 0 for i in range(args.notes) if i not in deleted}, **{i: 1 for i in edited},
                     **{i: 0 for i in added}}  # fmt: skip
            next_facts = write_vault(Path(nxt), after, args.notes, vocab)
            chunk_answers(settings, Path(nxt), next_facts, answers)
        write_replay(replay, answers)

        driver = connect(settings.neo4j)
        clear(driver, settings.neo4j.database)  # relationships first: a 6,000-note graph is dense
        chat = None if args.typing else stand_in_chat(replay)
        counter = WriteCounter()
        rows = []
        for step in ("first build", "no-change rebuild", "daily update"):
            if step == "daily update":
                for i in deleted:
                    (vault / note_path(i)).unlink()
                write_vault(vault, {i: 1 for i in edited} | {i: 0 for i in added}, args.notes, vocab)
            counter.reset()
            load_before = os.getloadavg()[0]
            t0 = time.perf_counter()
            profiler = cProfile.Profile() if args.profile else None
            with counter.counting():
                if profiler is not None:
                    profiler.enable()
                res = run_build(settings, vault, chat=chat, communities=not args.no_communities,
                                say=lambda line: None)  # fmt: skip
                if profiler is not None:
                    profiler.disable()
            wall = time.perf_counter() - t0
            if profiler is not None:
                args.profile.mkdir(parents=True, exist_ok=True)
                profiler.dump_stats(args.profile / (step.replace(" ", "-") + ".prof"))
            llm = res.total_llm_calls
            rows.append(step)
            notes_now = len(after) if step == "daily update" else args.notes
            say(f"\n## {step}: {wall:.1f} s wall ({wall / notes_now * 1000:.1f} ms a note), peak RSS "
                f"{peak_rss_mb():.0f} MB, load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
            say("  build steps (s): " + ", ".join(f"{k} {v:.1f}" for k, v in res.timings.items()))
            say(f"  Neo4j writes: {counter.describe()}")
            say(f"  embeddings computed: {res.total_embedding_calls}; LLM calls: {llm} "
                f"({', '.join(f'{k} {v}' for k, v in res.llm_calls.items()) or 'none'}, "
                + (f"the embedded model, tokens in/out {res.tokens[0]}/{res.tokens[1]})" if args.typing
                   else "no model time)" if args.terms else "replayed: no model time)"))
            for line in res.lines.get("extract", []) if args.terms else []:
                if line.strip().startswith(("terms:", "this run:")):
                    say(f"  extract: {line.strip()}")
            for name in ("load", "embeddings", "communities"):
                for line in res.lines.get(name, [])[:3]:
                    say(f"  {name}: {line}")
        if not args.no_communities:
            say(compare_fresh(driver, settings))
        if args.typing:
            say(vocabulary_typing(settings, vocab))
        driver.close()
    say(f"\nload average at the end {os.getloadavg()[0]:.1f} (the machine is shared: other jobs slow every step)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
