"""Retrieval quality on the GoT corpus: does local search bring back the facts an answer needs?

For a fixed extraction (default: the hand-curated ``tests/data/got_extraction.json``; ``--extraction``
for a model-produced ``extraction.json``) loaded into a scratch Neo4j:

* local questions (``questions.json``, ``type: local``): ``local_search(answer=False)`` - no LLM,
  only the deterministic anchor matcher - at 1 and 2 hops. Per question: which needed facts are
  among the retrieved facts, fact recall, number of facts, context size in tokens.
* global questions (``type: global``): Louvain communities (``settings.communities.resolution`` /
  ``community_seed``). Without ``--llm``: which communities hold the expected entities, and whether
  they are non-singletons (singletons have no summary, so global search never sees them). With
  ``--llm``: the communities are summarized and ``global_search`` runs; the report says which
  communities scored relevant and how many of the expected entities' communities were kept.

A needed fact ``{subject, relation, object}`` matches a retrieved fact when the relation type is
equal and the names are equal after ``normalize_name`` (case, accents, spaces), in either direction
when the ontology declares the relation symmetric. ``momento`` is not compared.

Context tokens: ``LocalResult.context_text()`` (fact lines + source excerpts, what the answer
prompt receives), counted with tiktoken's ``cl100k_base`` when tiktoken is installed, else
estimated as characters / 4; the report says which.

The database is emptied before loading. Point NEO4J_URI (or ``--neo4j-uri``) at a scratch server,
e.g. ``NEO4J_URI=bolt://127.0.0.1:7695 GRAPHRAG_HOME=/tmp/graphrag-qa graphrag-got neo4j start``.
A database that is not empty is wiped only when this script loaded it (a ``:QABenchmarkRun`` marker
node whose fingerprint - document ids/hashes and entity count - still matches) or with ``--force``.

    .venv/bin/python -m benchmarks.qa.run [--extraction out/extraction.json] [--llm] [--force]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import neo4j

from graphrag_got.communities.detect import Community, detect_communities
from graphrag_got.communities.graph import read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.graph import load_cypher
from graphrag_got.search import cypher as search_cypher
from graphrag_got.graph import db as graphdb
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError
from graphrag_got.common.files import write_json_atomic, write_text_atomic
from graphrag_got.graph.db import connect
from graphrag_got.graph.load import LoadSummary, load_extraction
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology
from graphrag_got.search.local import LocalResult, local_search

ROOT = Path(__file__).resolve().parents[2]

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "questions.json"
DEFAULT_EXTRACTION = ROOT / "tests" / "data" / "got_extraction.json"
RESULTS_MD = HERE / "results" / "retrieval.md"
RESULTS_JSON = HERE / "results" / "retrieval.json"
HOPS = (1, 2)

# Benchmark-only Cypher (the package itself never wipes a graph, so these are not in one of the
# package's cypher modules, like the test-only wipe in tests/conftest.py). Constant text, values as
# parameters.
MARKER_LABEL = "QABenchmarkRun"
Q_NODE_COUNT = "MATCH (n) RETURN count(n) AS n"
Q_MARKER = f"MATCH (m:{MARKER_LABEL}) RETURN m.fingerprint AS fingerprint, m.extraction AS extraction"
Q_FINGERPRINT = (
    "OPTIONAL MATCH (d:Document) WITH collect(d.id + '@' + coalesce(d.hash, '')) AS docs\n"
    "OPTIONAL MATCH (e:Entity) RETURN docs, count(e) AS entities"
)
Q_SET_MARKER = (
    f"MERGE (m:{MARKER_LABEL} {{id: 'qa'}})\n"
    "SET m.fingerprint = $fingerprint, m.extraction = $extraction, m.loaded_at = $loaded_at"
)


class QAError(GraphragGotError):
    """A benchmark input or safety problem (bad questions file, refusing to wipe a database)."""


# ---------------------------------------------------------------------------------------------
# Questions
# ---------------------------------------------------------------------------------------------


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    """The questions, structure-checked (ids unique, local ones with facts, global ones with entities)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise QAError(f"cannot read questions from {path}: {exc}") from None
    qs = data.get("questions") if isinstance(data, dict) else None
    if not isinstance(qs, list) or not qs:
        raise QAError(f"{path}: expected an object with a non-empty 'questions' list")
    seen: set[str] = set()
    for i, q in enumerate(qs):
        where = f"{path}: questions[{i}]"
        if not isinstance(q, dict) or not isinstance(q.get("id"), str) or not isinstance(q.get("question"), str):
            raise QAError(f"{where}: needs string 'id' and 'question'")
        if q["id"] in seen:
            raise QAError(f"{where}: duplicate id {q['id']!r}")
        seen.add(q["id"])
        if q.get("type") == "local":
            facts = q.get("facts")
            if not isinstance(facts, list) or not facts or not all(
                isinstance(f, dict) and all(isinstance(f.get(k), str) for k in ("subject", "relation", "object"))
                for f in facts
            ):
                raise QAError(f"{where} ({q['id']}): a local question needs 'facts': [{{subject, relation, object}}]")
        elif q.get("type") == "global":
            ents = q.get("entities")
            if not isinstance(ents, list) or not ents or not all(isinstance(e, str) for e in ents):
                raise QAError(f"{where} ({q['id']}): a global question needs 'entities': [names]")
        else:
            raise QAError(f"{where} ({q['id']}): 'type' must be 'local' or 'global', got {q.get('type')!r}")
    return qs


def check_questions(questions: list[dict[str, Any]], extraction: dict[str, Any], onto: Ontology) -> list[str]:
    """Names and facts of the questions that the extraction lacks (empty for the gold extraction).

    For a model extraction these are expected: they are facts the model did not extract.
    """
    names = {normalize_name(e["name"]) for e in extraction.get("entities", [])}
    rel_index = {_fact_key(r["subject"], r["relation"], r["object"], onto) for r in extraction.get("relations", [])}
    problems = []
    for q in questions:
        if q["type"] == "local":
            for f in q["facts"]:
                if onto.relation(f["relation"]) is None:
                    problems.append(f"{q['id']}: relation {f['relation']!r} is not in the ontology")
                for end in (f["subject"], f["object"]):
                    if normalize_name(end) not in names:
                        problems.append(f"{q['id']}: entity {end!r} not in the extraction")
                if _fact_key(f["subject"], f["relation"], f["object"], onto) not in rel_index:
                    problems.append(f"{q['id']}: fact {fact_text(f)} not in the extraction")
        else:
            problems += [f"{q['id']}: entity {e!r} not in the extraction" for e in q["entities"]
                         if normalize_name(e) not in names]  # fmt: skip
    return problems


# ---------------------------------------------------------------------------------------------
# Matching and token counting
# ---------------------------------------------------------------------------------------------


def _fact_key(subject: str, relation: str, obj: str, onto: Ontology) -> tuple[str, str, str]:
    """Normalized (subject, relation, object); the two ends sorted for a symmetric relation."""
    s, o = normalize_name(subject), normalize_name(obj)
    rel = onto.relation(relation)
    if rel is not None and rel.symmetric and o < s:
        s, o = o, s
    return (s, relation, o)


def fact_text(f: dict[str, str]) -> str:
    return f"{f['subject']} {f['relation']} {f['object']}"


def matched_facts(needed: list[dict[str, str]], result: LocalResult, onto: Ontology) -> list[bool]:
    """For each needed fact, whether it is among ``result.facts`` (names normalized, momento ignored)."""
    got = {_fact_key(f.start_name, f.type, f.end_name, onto) for f in result.facts}
    return [_fact_key(f["subject"], f["relation"], f["object"], onto) in got for f in needed]


def token_counter() -> tuple[Callable[[str], int], str]:
    """(count function, description): tiktoken cl100k_base when usable, else characters / 4."""
    try:
        import tiktoken

        enc = tiktoken.get_encoding("cl100k_base")
        return (lambda text: len(enc.encode(text))), "tiktoken cl100k_base"
    except Exception:  # not installed, or its vocabulary file cannot be fetched: estimate instead
        return (lambda text: (len(text) + 3) // 4), "estimate: characters / 4 (tiktoken not installed)"


# ---------------------------------------------------------------------------------------------
# Database: safety check, wipe, load
# ---------------------------------------------------------------------------------------------


def _fingerprint(driver: neo4j.Driver, settings: Settings) -> str:
    recs, _, _ = driver.execute_query(Q_FINGERPRINT, database_=settings.neo4j.database, routing_="r")
    docs = sorted(recs[0]["docs"]) if recs else []
    ents = recs[0]["entities"] if recs else 0
    return hashlib.sha256(json.dumps([docs, ents]).encode()).hexdigest()


def prepare_database(driver: neo4j.Driver, settings: Settings, *, force: bool = False) -> str:
    """Empty the database if it is empty already, was loaded by this script and is unchanged since,
    or ``force``; else raise QAError. Returns what was found ("empty", "previous run", "forced")."""
    db = settings.neo4j.database
    recs, _, _ = driver.execute_query(Q_NODE_COUNT, database_=db, routing_="r")
    if recs[0]["n"] == 0:
        return "empty"
    marker, _, _ = driver.execute_query(Q_MARKER, database_=db, routing_="r")
    ours = bool(marker) and marker[0]["fingerprint"] == _fingerprint(driver, settings)
    if not ours and not force:
        raise QAError(
            f"the database {db!r} at {settings.neo4j.uri} holds {recs[0]['n']} nodes that this benchmark did not "
            "load; it empties the database first. Point NEO4J_URI (or --neo4j-uri) at a scratch server, e.g. "
            "`NEO4J_URI=bolt://127.0.0.1:7695 GRAPHRAG_HOME=/tmp/graphrag-qa graphrag-got neo4j start`, "
            "or pass --force to wipe it anyway."
        )
    with driver.session(database=db) as s:  # CALL ... IN TRANSACTIONS needs an auto-commit transaction
        s.run(load_cypher.delete_all_in_batches(10000)).consume()
    return "previous run" if ours else "forced"


def load_fixed(driver: neo4j.Driver, settings: Settings, extraction: Path | dict[str, Any], onto: Ontology
               ) -> LoadSummary:  # fmt: skip
    """Load ``extraction`` into an empty database and leave the benchmark's marker node."""
    summary = load_extraction(driver, settings.neo4j, extraction, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    driver.execute_query(
        Q_SET_MARKER, database_=settings.neo4j.database, fingerprint=_fingerprint(driver, settings),
        extraction=str(extraction) if not isinstance(extraction, dict) else "<dict>",
        loaded_at=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
    )  # fmt: skip
    return summary


# ---------------------------------------------------------------------------------------------
# Local questions
# ---------------------------------------------------------------------------------------------


@dataclass
class HopResult:
    hops: int
    found: list[bool]
    facts: int
    tokens: int
    anchors: list[str]
    seconds: float

    @property
    def recall(self) -> float:
        return sum(self.found) / len(self.found) if self.found else 0.0


@dataclass
class LocalRow:
    id: str
    question: str
    needed: list[dict[str, str]]
    by_hops: dict[int, HopResult] = field(default_factory=dict)


def run_local(driver: neo4j.Driver, settings: Settings, questions: Iterable[dict[str, Any]], onto: Ontology,
              hops: Iterable[int] = HOPS, count_tokens: Callable[[str], int] | None = None) -> list[LocalRow]:  # fmt: skip
    """Local retrieval (answer=False: no LLM) for every local question at every hop count."""
    count = count_tokens or token_counter()[0]
    rows = []
    for q in questions:
        if q["type"] != "local":
            continue
        row = LocalRow(q["id"], q["question"], q["facts"])
        for h in hops:
            t0 = time.perf_counter()
            res = local_search(driver, settings.neo4j, q["question"], hops=h, answer=False, ontology=onto,
                               search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
            secs = time.perf_counter() - t0
            row.by_hops[h] = HopResult(h, matched_facts(q["facts"], res, onto), len(res.facts),
                                       count(res.context_text()), [a.name for a in res.anchors], secs)  # fmt: skip
        rows.append(row)
    return rows


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals) if vals else 0.0


# ---------------------------------------------------------------------------------------------
# Global questions
# ---------------------------------------------------------------------------------------------


@dataclass
class GlobalRow:
    id: str
    question: str
    entities: list[str]
    community_of: dict[str, int | None]  # expected entity -> community id (None: not in the graph)
    sizes: dict[int, int]
    kept: list[dict[str, Any]] | None = None  # with --llm: communities scored relevant
    llm_error: str | None = None

    @property
    def expected_communities(self) -> list[int]:
        return sorted({c for c in self.community_of.values() if c is not None})

    @property
    def summarizable(self) -> list[int]:
        """Expected communities global search can see (non-singletons have a summary)."""
        return [c for c in self.expected_communities if self.sizes.get(c, 0) > 1]

    @property
    def coverage(self) -> float:
        """Share of expected entities in a non-singleton community: answerable in principle."""
        ok = [c for c in self.community_of.values() if c is not None and self.sizes.get(c, 0) > 1]
        return len(ok) / len(self.entities) if self.entities else 0.0

    @property
    def kept_recall(self) -> float | None:
        if self.kept is None:
            return None
        exp = self.summarizable
        kept = {k["id"] for k in self.kept}
        return sum(1 for c in exp if c in kept) / len(exp) if exp else 0.0


def detect_and_write(driver: neo4j.Driver, settings: Settings, onto: Ontology) -> list[Community]:
    eg = read_entity_graph(driver, settings.neo4j, onto, communities=settings.communities, files=settings.files)
    comms = detect_communities(eg, settings.communities.resolution, settings.communities.seed)
    write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    return comms


def run_global(driver: neo4j.Driver, settings: Settings, questions: Iterable[dict[str, Any]],
               comms: list[Community], entity_names: dict[str, str], *, chat: Any = None) -> list[GlobalRow]:  # fmt: skip
    """Community membership of each global question's entities; with ``chat``, global_search too.

    ``entity_names`` maps uid -> name (normalized names are compared).
    """
    by_name: dict[str, int] = {}
    for c in comms:
        for uid in c.members:
            by_name[normalize_name(entity_names.get(uid, uid.split("|", 1)[-1]))] = c.id
    sizes = {c.id: c.size for c in comms}
    rows = []
    for q in questions:
        if q["type"] != "global":
            continue
        row = GlobalRow(q["id"], q["question"], q["entities"],
                        {e: by_name.get(normalize_name(e)) for e in q["entities"]}, sizes)  # fmt: skip
        if chat is not None:
            from graphrag_got.search.global_ import global_search

            try:
                res = global_search(driver, settings.neo4j, q["question"], chat=chat,
                                    search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
                row.kept = [{"id": r.id, "title": r.title, "relevance": r.relevance} for r in res.kept]
            except GraphragGotError as exc:
                row.llm_error = str(exc)
        rows.append(row)
    return rows


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def totals(local: list[LocalRow], hops: Iterable[int] = HOPS) -> dict[str, Any]:
    out: dict[str, Any] = {"local_questions": len(local)}
    for h in hops:
        res = [r.by_hops[h] for r in local if h in r.by_hops]
        out[f"mean_recall_{h}"] = round(mean(x.recall for x in res), 4)
        out[f"micro_recall_{h}"] = round(sum(sum(x.found) for x in res) / max(1, sum(len(x.found) for x in res)), 4)
        out[f"mean_tokens_{h}"] = round(mean(x.tokens for x in res), 1)
        out[f"mean_facts_{h}"] = round(mean(x.facts for x in res), 1)
        out[f"full_recall_{h}"] = sum(1 for x in res if x.recall == 1.0)
    return out


def markdown(local: list[LocalRow], glob: list[GlobalRow], meta: dict[str, Any], tot: dict[str, Any],
             comms: list[Community], entity_names: dict[str, str]) -> str:  # fmt: skip
    h1, h2 = HOPS
    lines = [
        "# Retrieval on the GoT corpus",
        "",
        "Generated by `benchmarks/qa/run.py`; every number is computed by it. See `benchmarks/qa/README.md`.",
        "",
        f"- extraction: `{meta['extraction']}` ({meta['entities']} entities, {meta['relations']} relations in the "
        f"file; loaded {meta['loaded_entities']} entities, {meta['loaded_relationships']} relationships)",
        f"- questions: `{meta['questions']}` ({tot['local_questions']} local, {len(glob)} global); "
        f"question names/facts missing from this extraction: {meta['missing_in_extraction']}",
        f"- local search: `answer=False` (deterministic anchors, no LLM), max facts {meta['max_facts']}",
        f"- context tokens: {meta['token_method']}, counted on `LocalResult.context_text()` (facts + excerpts)",
        f"- communities: Louvain, resolution {meta['resolution']}, seed {meta['seed']}: {len(comms)} communities, "
        f"{sum(1 for c in comms if c.size > 1)} non-singletons",
        f"- global search: {'run with ' + meta['llm'] if meta['llm'] else 'not run (no --llm): community membership only'}",
        f"- Neo4j: `{meta['neo4j_uri']}`; generated {meta['generated']}",
        "",
        "## Totals (local questions)",
        "",
        f"| measure | {h1} hop | {h2} hops |",
        "|---|---:|---:|",
        f"| mean fact recall (per question) | {tot[f'mean_recall_{h1}']:.3f} | {tot[f'mean_recall_{h2}']:.3f} |",
        f"| micro fact recall (all needed facts) | {tot[f'micro_recall_{h1}']:.3f} | {tot[f'micro_recall_{h2}']:.3f} |",
        f"| questions with every needed fact | {tot[f'full_recall_{h1}']}/{tot['local_questions']} | "
        f"{tot[f'full_recall_{h2}']}/{tot['local_questions']} |",
        f"| mean facts retrieved | {tot[f'mean_facts_{h1}']} | {tot[f'mean_facts_{h2}']} |",
        f"| mean context tokens | {tot[f'mean_tokens_{h1}']} | {tot[f'mean_tokens_{h2}']} |",
        "",
        "## Local questions",
        "",
        f"| id | question | anchors | needed | recall {h1}h | recall {h2}h | facts {h1}h / {h2}h | tokens {h1}h / {h2}h "
        f"| missing at {h2} hops |",
        "|---|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for r in local:
        a, b = r.by_hops[h1], r.by_hops[h2]
        missing = [fact_text(f) for f, ok in zip(r.needed, b.found) if not ok]
        lines.append(
            f"| {r.id} | {_cell(r.question)} | {_cell(', '.join(b.anchors) or '—')} | {len(r.needed)} | {a.recall:.2f} "
            f"| {b.recall:.2f} | {a.facts} / {b.facts} | {a.tokens} / {b.tokens} | {_cell('; '.join(missing) or '—')} |"
        )
    lines += ["", "Facts found only at 2 hops:", ""]
    for r in local:
        only2 = [fact_text(f) for f, x, y in zip(r.needed, r.by_hops[h1].found, r.by_hops[h2].found) if y and not x]
        if only2:
            lines.append(f"- {r.id}: {'; '.join(only2)}")
    lines += ["", "## Global questions", ""]
    if meta["llm"]:
        lines += ["| id | question | expected entities -> community | coverage | kept communities (relevance) "
                  "| expected kept |", "|---|---|---|---:|---|---:|"]  # fmt: skip
    else:
        lines += ["| id | question | expected entities -> community | coverage | communities to keep |",
                  "|---|---|---|---:|---|"]  # fmt: skip
    for g in glob:
        ents = ", ".join(f"{e} -> {c if c is not None else 'absent'}" for e, c in g.community_of.items())
        row = f"| {g.id} | {_cell(g.question)} | {_cell(ents)} | {g.coverage:.2f} |"
        if meta["llm"]:
            kept = g.llm_error and f"error: {g.llm_error}" or ", ".join(f"{k['id']} ({k['relevance']})" for k in g.kept or [])
            kr = g.kept_recall
            row += f" {_cell(kept or '—')} | {'' if kr is None else f'{kr:.2f}'} |"
        else:
            row += f" {', '.join(map(str, g.summarizable)) or '—'} |"
        lines.append(row)
    lines += ["", "Coverage = share of the expected entities that sit in a non-singleton community (only those get a "
              "summary that global search can read).", "", "## Communities", "", "| id | size | members |", "|---:|---:|---|"]  # fmt: skip
    for c in comms:
        if c.size > 1:
            names = sorted(entity_names.get(u, u) for u in c.members)
            lines.append(f"| {c.id} | {c.size} | {_cell(', '.join(names))} |")
    singles = [entity_names.get(c.members[0], c.members[0]) for c in comms if c.size == 1]
    if singles:
        lines.append(f"\nSingletons ({len(singles)}): {', '.join(sorted(singles))}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------


def _resolve(p: Path) -> Path:
    return p if p.is_absolute() or p.exists() else ROOT / p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--extraction", type=Path, default=DEFAULT_EXTRACTION, help="extraction.json to load")
    ap.add_argument("--questions", type=Path, default=QUESTIONS)
    ap.add_argument("--out", type=Path, default=RESULTS_MD, help="Markdown report (a .json is written beside it)")
    ap.add_argument("--neo4j-uri", help="overrides NEO4J_URI")
    ap.add_argument("--force", action="store_true", help="wipe the database even if this script did not load it")
    ap.add_argument("--llm", action="store_true", help="summarize communities and run global_search (needs a model)")
    args = ap.parse_args(argv)

    try:
        settings = Settings.load(neo4j_uri=args.neo4j_uri)
        onto = Ontology.from_file(_resolve(settings.files.ontology_path))
        ext_path = _resolve(args.extraction)
        questions = load_questions(_resolve(args.questions))
        try:
            extraction = json.loads(ext_path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise QAError(f"cannot read the extraction {ext_path}: {exc}") from None
        missing = check_questions(questions, extraction, onto)
        if missing:
            print(f"{len(missing)} question names/facts are not in {ext_path.name} (they will count as misses):",
                  file=sys.stderr)  # fmt: skip
            for m in missing[:20]:
                print(f"  {m}", file=sys.stderr)
        count, token_method = token_counter()

        driver = connect(settings.neo4j)
        try:
            found = prepare_database(driver, settings, force=args.force)
            print(f"database at {settings.neo4j.uri}: {found}, emptied")
            summary = load_fixed(driver, settings, ext_path, onto)
            print(f"loaded {ext_path}: {summary.entities_written} entities, {summary.relations_written} "
                  f"relationships ({summary.relations_refused} relations refused) in {summary.seconds:.2f} s")  # fmt: skip

            t0 = time.perf_counter()
            local = run_local(driver, settings, questions, onto, HOPS, count)
            local_s = time.perf_counter() - t0
            comms = detect_and_write(driver, settings, onto)
            catalog = graphdb.read_all(driver, settings.neo4j, search_cypher.search_entity_catalog())
            names = {e["uid"]: e["name"] for e in catalog}
            chat, llm_label = None, None
            if args.llm:
                from graphrag_got.llm.factory import get_chat_model, model_label

                chat, llm_label = get_chat_model(settings.llm, files=settings.files), model_label(settings.llm)
                sres = summarize_communities(driver, settings.neo4j, chat, ontology=onto, export=False,
                                             llm=settings.llm, files=settings.files, embedding=settings.embedding, graph_settings=settings.graph)
                print(f"summaries: {sres.generated} generated, {sres.cached} cached, {sres.unchanged} unchanged, "
                      f"{len(sres.failed)} failed")  # fmt: skip
            glob = run_global(driver, settings, questions, comms, names, chat=chat)
        finally:
            driver.close()
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    tot = totals(local)
    meta = {
        "extraction": os.path.relpath(ext_path, ROOT), "questions": os.path.relpath(_resolve(args.questions), ROOT),
        "entities": len(extraction.get("entities", [])), "relations": len(extraction.get("relations", [])),
        "loaded_entities": summary.entities_written, "loaded_relationships": summary.relations_written,
        "missing_in_extraction": len(missing), "max_facts": settings.search.local_max_facts, "token_method": token_method,
        "resolution": settings.communities.resolution, "seed": settings.communities.seed, "llm": llm_label,
        "neo4j_uri": settings.neo4j.uri, "generated": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "local_seconds": round(local_s, 2),
    }  # fmt: skip
    out = _resolve(args.out) if not args.out.is_absolute() else args.out
    write_text_atomic(out, markdown(local, glob, meta, tot, comms, names))
    write_json_atomic(out.with_suffix(".json"), {
        "meta": meta, "totals": tot,
        "local": [{"id": r.id, "question": r.question, "needed": r.needed,
                   "hops": {h: {"found": x.found, "recall": x.recall, "facts": x.facts, "tokens": x.tokens,
                                "anchors": x.anchors} for h, x in r.by_hops.items()}} for r in local],
        "global": [{"id": g.id, "question": g.question, "community_of": g.community_of, "coverage": g.coverage,
                    "summarizable": g.summarizable, "kept": g.kept, "kept_recall": g.kept_recall,
                    "error": g.llm_error} for g in glob],
    })  # fmt: skip

    h1, h2 = HOPS
    print(f"\nlocal questions: {tot['local_questions']} ({local_s:.1f} s for {tot['local_questions'] * len(HOPS)} searches)")
    for r in local:
        print(f"  {r.id}  recall {h1}h {r.by_hops[h1].recall:.2f}  {h2}h {r.by_hops[h2].recall:.2f}  "
              f"tokens {r.by_hops[h1].tokens}/{r.by_hops[h2].tokens}  {r.question}")  # fmt: skip
    print(f"mean fact recall: {tot[f'mean_recall_{h1}']:.3f} at {h1} hop, {tot[f'mean_recall_{h2}']:.3f} at {h2} hops; "
          f"mean context tokens {tot[f'mean_tokens_{h1}']} / {tot[f'mean_tokens_{h2}']} ({token_method})")  # fmt: skip
    print(f"global questions: {len(glob)}; mean coverage {mean(g.coverage for g in glob):.2f}"
          + (f"; mean expected-kept {mean(g.kept_recall or 0 for g in glob):.2f}" if args.llm else ""))
    print(f"report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
