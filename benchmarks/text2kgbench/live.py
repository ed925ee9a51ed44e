"""Run OUR extractor on a fixed sample of Text2KGBench test sentences; score before vs after validation.

Usage (from the repository root)::

    python -m benchmarks.text2kgbench.live                       # embedded qwen2.5-coder-0.5b, 3 ontologies x 5 sentences
    python -m benchmarks.text2kgbench.live --model qwen2.5-coder-1.5b --per-ontology 2
    python -m benchmarks.text2kgbench.live --ontologies 1,9 --per-ontology 10
    python -m benchmarks.text2kgbench.live --all                 # every test sentence of every ontology (slow)
    python -m benchmarks.text2kgbench.live --provider ollama --ollama-model qwen2.5:7b-instruct

The code path is the one users run: the ontology comes from our importer (``Ontology.from_dict``),
each test sentence becomes a :class:`graphrag_got.ingest.chunking.Chunk`, and
``graphrag_got.extract.run.extract_chunk`` makes the call with the system prompt, the JSON schema
(``extraction_schema``) and the chat model of ``get_chat_model(settings.llm, files=settings.files)``.
Answers are cached with ``ExtractionCache`` (same key as ``extract``: model, prompt version, schema bounds, chunk hash,
ontology hash), so a rerun makes no model call. Each answer is scored as the model wrote it
("before": every relation item with string subject/relation/object, our types given to the scorer's
domain/range measure) and after ``Validator`` ("after": the kept relations). Relation types are
mapped back to the benchmark labels with ``scorer.to_benchmark_relations``.

Prompt examples (``--examples K``, default 2): the first K of the benchmark's train sentences in
``train_examples.json`` that pass the ontology's example checks, each about another subject, go into
the ontology as its examples (``--train none``: held-out test sentences instead).

Sample: the first ``N`` ontologies in number order (default 3), and in each, ``--per-ontology``
sentences evenly spaced over the test file (the files are grouped by subject entity, so the first
lines would all be about one entity). Scores are averaged over the sampled sentences only, so they
are *not* comparable one to one with full-benchmark numbers; the sample is small and the error
bars wide. Every run is stored in ``results/live.json``; ``results/live.md`` shows all of them.

Text2KGBench: Mihindukulasooriya, Tiwari, Enguix, Lata (ISWC 2023), data CC BY-SA 4.0.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

if not __package__:  # run as a file: the sibling modules are importable only through the package
    sys.exit("run this from the repository root as a module: python -m benchmarks.text2kgbench.live")

from graphrag_got.ingest.chunking import Chunk  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.errors import GraphragGotError  # noqa: E402
from graphrag_got.common.text_match import ChunkText  # noqa: E402
from graphrag_got.extract.cache import ExtractionCache  # noqa: E402
from graphrag_got.extract.run import PROMPT_VERSION, extract_chunk, make_validator, system_prompt  # noqa: E402
from graphrag_got.extract.classify.backend import backend_for  # noqa: E402
from graphrag_got.extract.classify.cache import ClassifyCache  # noqa: E402
from graphrag_got.extract.classify.chunk import ClassifyParams, answer_items, classify_chunk  # noqa: E402
from graphrag_got.prompts import CLASSIFY_VERSION  # noqa: E402
from graphrag_got.extract.repair import ChunkAnswer  # noqa: E402
from graphrag_got.common.files import write_json_atomic, write_text_atomic  # noqa: E402
from graphrag_got.ontology.text2kgbench import import_text2kgbench  # noqa: E402
from graphrag_got.llm.factory import get_chat_model, model_label  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402
from graphrag_got.ontology.schema import extraction_schema  # noqa: E402
from graphrag_got.extract.validate import Validator  # noqa: E402

from . import replay, reproduce, scorer  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

DEFAULT_ONTOLOGIES = 3
DEFAULT_PER_ONTOLOGY = 5
DEFAULT_MAX_ITEMS = 6
# Train sentences of the benchmark (data/dbpedia_webnlg/train/ont_*_train.jsonl of Text2KGBench, CC BY-SA 4.0;
# the copy of the benchmark on this machine has only the test split), for the prompt's examples.
TRAIN_EXAMPLES = HERE / "train_examples.json"


def sample_ids(ids: list[str], n: int | None) -> list[str]:
    """``n`` ids evenly spaced over the list (all of them when n is None or >= len)."""
    if n is None or n >= len(ids):
        return list(ids)
    if n <= 1:
        return ids[:max(n, 0)]
    step = (len(ids) - 1) / (n - 1)
    return [ids[round(i * step)] for i in range(n)]


def _label(value: str) -> str:
    """A gold entity label as a text writes it: ``Arion_(comicsCharacter)`` -> ``Arion (comicsCharacter)``."""
    return value.strip().strip('"').replace("_", " ").strip()


def example_of(rec: dict[str, Any], gold: list[scorer.Triple], ours: dict[str, Any],
               label_map: dict[str, Any]) -> dict[str, Any] | None:
    """A test sentence and its gold triples as one of our ontology examples, or None when it cannot be one.

    It can when every triple's relation has one class on each side (the gold has no types) and every
    name occurs in the sentence as written (after ``_`` -> space), so the example passes the ontology's
    own example checks.
    """
    text = rec["sent"]
    found = ChunkText(text)
    relations = {r["nombre"]: r for r in ours["relaciones"]}
    entities: dict[str, str] = {}
    facts = []
    for t in gold:
        name = label_map["relations"].get(t.rel)
        decl = relations.get(name or "")
        if decl is None:
            return None
        ends = []
        for value, side in ((t.sub, "dominio"), (t.obj, "rango")):
            classes = decl[side] if isinstance(decl[side], list) else [decl[side]]
            label = _label(value)
            if len(classes) != 1 or not label or not found.mentions(label):
                return None
            if entities.setdefault(label, classes[0]) != classes[0]:
                return None
            ends.append(label)
        if ends[0] == ends[1]:
            return None
        facts.append({"relation": name, "subject": ends[0], "object": ends[1]})
    if not facts:
        return None
    return {"text": text, "entities": [{"class": c, "name": n} for n, c in entities.items()], "relations": facts}


def load_train_examples(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Ontology name -> train sentences (``{"id", "sent", "triples"}``) from a file like TRAIN_EXAMPLES."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GraphragGotError(f"{path}: cannot read the train examples ({exc}); pass --train none to take "
                               "examples from held-out test sentences instead") from exc
    ontologies = data.get("ontologies") if isinstance(data, dict) else None
    if not isinstance(ontologies, dict) or not all(isinstance(v, list) for v in ontologies.values()):
        raise GraphragGotError(f"{path}: expected {{\"ontologies\": {{name: [train sentence, ...]}}}}")
    return ontologies


def pick_train_examples(train: list[dict[str, Any]], ours: dict[str, Any], label_map: dict[str, Any],
                        k: int) -> list[dict[str, Any]]:
    """Up to ``k`` examples from the benchmark's train sentences, in file order, each about another subject.

    The benchmark's prompts put a train sentence and its triples in front of each test sentence; ours
    carries the examples in the ontology, so they are per ontology rather than per sentence. A train
    sentence qualifies when it passes our ontology's example checks (:func:`example_of`)."""
    out: list[dict[str, Any]] = []
    subjects: set[str] = set()
    for rec in train:
        if len(out) >= k:
            break
        gold = [scorer.as_triple(t) for t in rec.get("triples") or []]
        subject = {_label(t.sub) for t in gold}
        if subject & subjects:
            continue
        example = example_of(rec, gold, ours, label_map)
        if example is not None:
            out.append(example)
            subjects |= subject
    return out


def pick_examples(tests: list[dict[str, Any]], chosen: set[str], ground_truth: dict[str, Any], ours: dict[str, Any],
                  label_map: dict[str, Any], k: int) -> list[dict[str, Any]]:
    """Up to ``k`` examples from the test sentences NOT sampled, about subjects no sampled sentence names.

    For an ontology without train sentences (see TRAIN_EXAMPLES): held-out test sentences stand in for
    them, and a sentence about a sampled sentence's subject is skipped so that no example gives away an
    answer.
    """
    sampled_text = " ".join(r["sent"].lower() for r in tests if r["id"] in chosen)
    out: list[dict[str, Any]] = []
    for rec in tests:
        if len(out) >= k or rec["id"] in chosen:
            continue
        gold = ground_truth.get(rec["id"], {}).get("triples", [])
        subjects = {_label(t.sub).lower() for t in gold}
        if any(sub in sampled_text for sub in subjects):
            continue
        example = example_of(rec, gold, ours, label_map)
        if example is not None:
            out.append(example)
    return out


def run_pipeline(settings: Settings, onto: Ontology, answers: list[ChunkAnswer], before: dict[str, Any],
                 ground_truth: dict[str, Any], label_map: dict[str, Any], bench_onto: dict[str, Any],
                 name: str) -> dict[str, Any]:
    """Audited repair over the answers, then validation with the evidence rules, as ``extract`` runs by default.

    Returns the run's fields as ``live.json`` stores them under ``name``: the scores (``<name>``), the kept
    relations (``relations_<name>``), the refusals by reason and those equal to a gold triple, and the
    repairs by reason (``repairs`` for the pipeline itself, ``<name>_repairs`` for another one). A failed
    answer keeps nothing."""
    validated, repairs = replay.repair_then_validate(make_validator(settings.extract, onto), answers,
                                                     threshold=settings.extract.mention_threshold, with_text=True)
    kept_by_sentence: dict[str, list[scorer.Triple]] = {sid: [] for sid in before}
    n_kept = 0
    refused: Counter[str] = Counter()
    refused_gold: Counter[str] = Counter()
    for answer, result in validated:
        refused.update(r.reason.value for r in result.rejections if r.kind == "relation")
        refused_gold.update(gold_refusals(result.rejections, ground_truth[str(answer.chunk_id)]["triples"], label_map))
        n_kept += len(result.relations)
        kept = [(r.subject, r.relation, r.object, r.subject_type, r.object_type) for r in result.relations]
        kept_by_sentence[str(answer.chunk_id)] = scorer.to_benchmark_relations(kept, label_map)
    score = scorer.score(kept_by_sentence, {sid: ground_truth[sid] for sid in before}, bench_onto)
    return {name: {"averages": score.averages, "domain_range": score.domain_range}, f"relations_{name}": n_kept,
            f"{name}_refused_by_reason": dict(sorted(refused.items())),
            f"{name}_refused_in_gold": dict(sorted(refused_gold.items())),
            "repairs" if name == "pipeline" else f"{name}_repairs": dict(sorted(repairs.items()))}


def gold_refusals(rejections: Any, gold: list[scorer.Triple], label_map: dict[str, Any]) -> Counter[str]:
    """Refused relation triples that equal one of the sentence's gold triples, by reason."""
    keys = {scorer.triple_key(t) for t in gold}
    out: Counter[str] = Counter()
    for r in rejections:
        item = r.item if r.kind == "relation" else None
        if not isinstance(item, dict) or not all(isinstance(item.get(k), str) for k in ("subject", "relation", "object")):
            continue
        (triple,) = scorer.to_benchmark_relations([(item["subject"], item["relation"], item["object"])], label_map)
        if scorer.triple_key(triple) in keys:
            out[r.reason.value] += 1
    return out


def sentence_chunk(onto_name: str, index: int, sid: str, text: str) -> Chunk:
    return Chunk(id=sid, document_id=f"text2kgbench/{onto_name}", index=index, start=0, end=len(text),
                 hash=hashlib.sha256(text.encode("utf-8")).hexdigest(), text=text, heading=None)


def raw_triples(parsed: Any) -> list[scorer.Triple]:
    """The answer's relation items as the model wrote them (items without string ends are skipped)."""
    rels = parsed.get("relations") if isinstance(parsed, dict) else None
    out = []
    for r in rels if isinstance(rels, list) else []:
        if isinstance(r, dict) and all(isinstance(r.get(k), str) for k in ("subject", "relation", "object")):
            st, ot = r.get("subject_type"), r.get("object_type")
            out.append(scorer.Triple(r["subject"], r["relation"], r["object"],
                                     st if isinstance(st, str) else None, ot if isinstance(ot, str) else None))
    return out


def run_ontology(name: str, onto_path: Path, gt_path: Path, test_path: Path, per: int | None, settings: Settings,
                 provider: str, label: str, chat_holder: dict[str, Any], n_examples: int = 0,
                 train: list[dict[str, Any]] | None = None,
                 hierarchy: dict[str, list[str]] | None = None) -> dict[str, Any]:
    bench_onto = scorer.load_ontology(onto_path)
    ours, label_map = import_text2kgbench(onto_path)
    ground_truth = scorer.load_ground_truth(gt_path)
    tests = [r for r in scorer.read_jsonl(test_path) if r["id"] in ground_truth]
    chosen = set(sample_ids([r["id"] for r in tests], per))
    source = "train" if train else "held-out test"
    if not n_examples:
        examples = []
    elif train:
        examples = pick_train_examples(train, ours, label_map, n_examples)
    else:
        examples = pick_examples(tests, chosen, ground_truth, ours, label_map, n_examples)
    if examples:
        ours = {**ours, "examples": examples}
    onto = Ontology.from_dict(ours, source=str(onto_path))
    schema = extraction_schema(onto, settings.extract.max_entities, settings.extract.max_relations)
    system = system_prompt(onto)
    classify = settings.extract.strategy == "classify"
    # the classify strategy's answers are cached under their own label (the calls also have their own cache)
    cache = ExtractionCache(settings.cache_dir, f"{label}|classify|{CLASSIFY_VERSION}" if classify else label,
                            settings.extract.max_entities, settings.extract.max_relations)
    min_p = settings.extract.min_fact_probability if classify else 0.0
    validator = Validator(onto, min_probability=min_p)
    tests = [r for r in tests if r["id"] in chosen]

    before: dict[str, list[scorer.Triple]] = {}
    after: dict[str, list[scorer.Triple]] = {}
    refused: Counter[str] = Counter()
    refused_gold: Counter[str] = Counter()  # refused triples equal to one of the sentence's gold triples
    seconds: list[float] = []
    fresh = failed = n_raw = n_kept = out_tokens = 0
    answers: list[ChunkAnswer] = []
    for i, rec in enumerate(tests):
        chunk = sentence_chunk(name, i, rec["id"], rec["sent"])
        record = cache.get(chunk.hash, onto.hash)
        if record is None:
            if "chat" not in chat_holder:
                chat_holder["chat"] = get_chat_model(settings.llm, provider, files=settings.files)
            t0 = time.monotonic()
            if classify:
                ex = settings.extract
                record = classify_chunk(backend_for(chat_holder["chat"]), onto, chunk,
                                        ClassifyCache(settings.cache_dir, label),
                                        ClassifyParams(ex.evidence_window, ex.mention_threshold, ex.classify_max_pairs))
            else:
                record = extract_chunk(chat_holder["chat"], onto, chunk, schema, system)
            record.seconds = round(time.monotonic() - t0, 2)
            record.model = label
            cache.put(chunk.hash, onto.hash, record)
            fresh += 1
            print(f"  {name} [{i + 1}/{len(tests)}] {record.status} in {record.seconds:.1f}s",
                  file=sys.stderr, flush=True)
        if record.seconds is not None:
            seconds.append(float(record.seconds))
        out_tokens += record.output_tokens or 0
        if not record.ok:
            failed += 1
            before[rec["id"]] = after[rec["id"]] = []  # the system answered nothing usable
            continue
        parsed = answer_items(record.parsed, min_p) if classify else record.parsed
        answers.append(ChunkAnswer(chunk.id, chunk.document_id, parsed, ChunkText(chunk.text)))
        raw = raw_triples(parsed)
        n_raw += len(raw)
        before[rec["id"]] = scorer.to_benchmark_relations(raw, label_map)
        result = validator.validate(parsed, chunk.id, chunk.document_id)
        refused.update(r.reason.value for r in result.rejections if r.kind == "relation")
        refused_gold.update(gold_refusals(result.rejections, ground_truth[rec["id"]]["triples"], label_map))
        n_kept += len(result.relations)
        kept = [(r.subject, r.relation, r.object, r.subject_type, r.object_type) for r in result.relations]
        after[rec["id"]] = scorer.to_benchmark_relations(kept, label_map)
    # The whole pipeline, as `extract` runs it by default: audited repair over the sample (one corpus),
    # then validation with the evidence rules (every name must occur in its sentence).
    stored = run_pipeline(settings, onto, answers, before, ground_truth, label_map, bench_onto, "pipeline")
    if hierarchy:
        # The same answers revalidated (no new call) against the ontology with the knowledge base's class
        # hierarchy: what a user does after the refusals show the ontology is missing "an Astronaut is a Person".
        with_h, _map = import_text2kgbench(onto_path, hierarchy)
        onto_h = Ontology.from_dict({**with_h, "examples": examples} if examples else with_h, source=str(onto_path))
        stored |= run_pipeline(settings, onto_h, answers, before, ground_truth, label_map, bench_onto, "hierarchy")
    gt = {sid: ground_truth[sid] for sid in before}
    b, a = scorer.score(before, gt, bench_onto), scorer.score(after, gt, bench_onto)
    return {
        "ontology": name, "sentences": len(tests), "sentence_ids": [r["id"] for r in tests],
        "examples": [e["text"] for e in examples], "example_source": source,
        "fresh_calls": fresh, "failed": failed, "seconds": seconds, "output_tokens": out_tokens,
        "relations_raw": n_raw, "relations_kept": n_kept, "refused_by_reason": dict(sorted(refused.items())),
        "before": {"averages": b.averages, "domain_range": b.domain_range},
        "refused_in_gold": dict(sorted(refused_gold.items())), **stored,
        "after": {"averages": a.averages, "domain_range": a.domain_range},
    }


# ----------------------------------------------------------------------------- report
class _Score:
    """The part of scorer.OntologyScore the replay tables read, rebuilt from stored JSON."""

    def __init__(self, d: dict[str, Any]):
        self.averages, self.domain_range = d["averages"], d["domain_range"]


def _gold(row: dict[str, Any], key: str) -> Counter[str] | None:
    """A row's refused-and-in-gold counts; None for runs stored before they were counted."""
    return Counter(row[key]) if isinstance(row.get(key), dict) else None


def _pipeline_tables(rows: list[dict[str, Any]], name: str) -> list[str]:
    """Scores and refusals of the pipeline run stored under ``name`` (see :func:`run_pipeline`)."""
    return [
        *replay.metrics_table([(r["ontology"], r["sentences"], _Score(r["before"]), _Score(r[name])) for r in rows]),
        "",
        *replay.refusal_table([(r["ontology"], r["relations_raw"], r[f"relations_{name}"],
                                Counter(r[f"{name}_refused_by_reason"]), _gold(r, f"{name}_refused_in_gold"))
                               for r in rows]),
        "",
    ]


def run_markdown(run: dict[str, Any]) -> list[str]:
    rows = run["ontologies"]
    secs = [s for r in rows for s in r["seconds"]]
    timing = (f"{statistics.mean(secs):.1f}s mean, {statistics.median(secs):.1f}s median, {max(secs):.1f}s max "
              f"per call over {len(secs)} calls" if secs else "no timing recorded")
    lines = [
        f"## {run['model']} — {run['sample']}",
        "",
        f"Run {run['created']}; provider `{run['provider']}`; prompt `{run['prompt_version']}`; schema bounds "
        f"max_entities={run['max_entities']}, max_relations={run['max_relations']}; "
        f"{sum(r['sentences'] for r in rows)} sentences, {sum(r['fresh_calls'] for r in rows)} new model calls "
        f"(the rest from the cache), {sum(r['failed'] for r in rows)} unusable answers. Timing (as recorded when "
        f"each answer was made, machine shared): {timing}; {sum(r['output_tokens'] for r in rows)} output tokens.",
        "",
        *replay.metrics_table([(r["ontology"], r["sentences"], _Score(r["before"]), _Score(r["after"])) for r in rows]),
        "",
        *(["Refused relation triples by reason; a cell reads `refused (of which equal to one of the sentence's "
           "gold triples)`.", ""] if all(_gold(r, "refused_in_gold") is not None for r in rows) else []),
        *replay.refusal_table([(r["ontology"], r["relations_raw"], r["relations_kept"], Counter(r["refused_by_reason"]),
                                _gold(r, "refused_in_gold")) for r in rows]),
        "",
    ]
    if all("pipeline" in r for r in rows):
        kinds = sorted({k for r in rows for k in r.get("repairs", {})})
        lines += [
            "The whole pipeline, as `extract` runs by default (audited repair over the sample, then validation",
            "with the evidence rules): `before → after`.",
            "",
            *_pipeline_tables(rows, "pipeline"),
        ]
        if kinds:
            lines += ["| ontology | " + " | ".join(f"repairs: {k}" for k in kinds) + " |",
                      "|---|" + "---:|" * len(kinds),
                      *[f"| {r['ontology']} | " + " | ".join(str(r.get("repairs", {}).get(k, 0)) for k in kinds) + " |"
                        for r in rows], ""]
        if all("hierarchy" in r for r in rows):
            lines += [
                "The same answers revalidated, with no new model call, against the ontology with DBpedia's class",
                "hierarchy (`--hierarchy`; an Astronaut is a Person, a City a Place), then the whole pipeline again:",
                "what a user does when the refusals show that the ontology, not the text, is wrong.",
                "",
                *_pipeline_tables(rows, "hierarchy"),
            ]
        if any(r.get("examples") for r in rows):
            counts = ", ".join(f"{r['ontology']} {len(r.get('examples', []))}"
                               f" ({r.get('example_source', 'held-out test')})" for r in rows)
            lines += [f"Examples in the prompt (from the benchmark's train sentences, or held-out test sentences"
                      f" where an ontology has none): {counts}.", ""]
    return lines


def markdown(runs: list[dict[str, Any]]) -> str:
    lines = [
        "# Text2KGBench live runs: graphrag_got extraction with small local models",
        "",
        "Data: Text2KGBench, DBpedia-WebNLG (Mihindukulasooriya, Tiwari, Enguix, Lata; ISWC 2023), CC BY-SA 4.0.",
        "Generated by `benchmarks/text2kgbench/live.py` from `results/live.json`. Same prompt, schema,",
        "constrained decoding and validation as `graphrag_got extract`, one sentence per chunk. Cells are",
        "`before → after` validation, averaged over the *sampled* sentences (not the full test sets: small",
        "samples, wide error bars, not comparable with the published full-set numbers). Before validation,",
        "the scorer's domain/range measure uses the types the model wrote; after, the validated ones.",
        "Constrained decoding already restricts relation names and per-relation types, so conformance is",
        "usually 1.00 before validation too; what validation adds here is refusing triples whose ends are",
        "not extracted entities, or are extracted with another type, and self-loops.",
        "",
    ]
    for run in runs:
        lines += run_markdown(run)
    return "\n".join(lines).rstrip() + "\n"


def load_runs(path: Path) -> list[dict[str, Any]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return data.get("runs", []) if isinstance(data, dict) else []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=reproduce.default_data_dir(), help="Text2KGBench data folder")
    ap.add_argument("--ontologies", help="comma-separated names or numbers, e.g. 1,3 or 9_astronaut "
                                         f"(default: the first {DEFAULT_ONTOLOGIES} in number order; all with --all)")
    ap.add_argument("--per-ontology", type=int, default=DEFAULT_PER_ONTOLOGY, metavar="N",
                    help=f"sentences per ontology, evenly spaced (default {DEFAULT_PER_ONTOLOGY})")
    ap.add_argument("--all", action="store_true", help="every test sentence (of every ontology unless --ontologies)")
    ap.add_argument("--provider", choices=["llamacpp", "ollama"], default="llamacpp")
    ap.add_argument("--model", default="qwen2.5-coder-0.5b", help="embedded model name (llamacpp provider)")
    ap.add_argument("--ollama-model", help="Ollama model (with --provider ollama)")
    ap.add_argument("--max-items", type=int, default=DEFAULT_MAX_ITEMS,
                    help=f"max_entities and max_relations of the schema (default {DEFAULT_MAX_ITEMS})")
    ap.add_argument("--examples", type=int, default=2, metavar="K",
                    help="annotated examples in the prompt per ontology (default 2)")
    ap.add_argument("--train", default=str(TRAIN_EXAMPLES),
                    help="the benchmark's train sentences the examples come from (default %(default)s); "
                         "'none' takes them from held-out test sentences")
    ap.add_argument("--hierarchy", default=str(replay.HIERARCHY),
                    help="class hierarchy the answers are also revalidated against, with no new model call "
                         "(default %(default)s; 'none' leaves that out)")
    ap.add_argument("--home", type=Path, help="graphrag_got state folder (models, cache); default GRAPHRAG_HOME "
                                              "or <repo>/.graphrag_got")
    ap.add_argument("--strategy", choices=["generate", "classify"], default="generate",
                    help="extraction strategy (GRAPHRAG_EXTRACTION): the model writes the answer, or spans then a "
                         "scored choice per pair")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "live.md")
    args = ap.parse_args(argv)
    if args.per_ontology < 1:
        ap.error("--per-ontology must be at least 1")
    root = args.data / "dbpedia_webnlg"
    if not root.is_dir():
        print(f"error: no dbpedia_webnlg folder under {args.data}; pass --data or set TEXT2KGBENCH_DIR",
              file=sys.stderr)
        return 1
    found = reproduce.local_ontologies(root)
    if args.ontologies:
        wanted = [w.strip() for w in args.ontologies.split(",") if w.strip()]
        found = [f for f in found if replay.matches(f[0], wanted)]
    elif not args.all:
        found = found[:DEFAULT_ONTOLOGIES]
    if not found:
        print(f"error: no ontology under {root} matches {args.ontologies!r}", file=sys.stderr)
        return 1
    per = None if args.all else args.per_ontology

    home = args.home or (Path(os.environ["GRAPHRAG_HOME"]) if os.environ.get("GRAPHRAG_HOME") else REPO / ".graphrag_got")
    try:
        settings = Settings.load(home=home, llm_provider=args.provider, llamacpp_model=args.model,
                                 ollama_model=args.ollama_model, max_entities=args.max_items,
                                 max_relations=args.max_items, extraction=args.strategy)
        label = model_label(settings.llm, args.provider)
        train = {} if args.train == "none" else load_train_examples(Path(args.train))
        try:
            hierarchy = None if args.hierarchy == "none" else replay.load_hierarchy(Path(args.hierarchy))
        except ValueError as exc:
            raise GraphragGotError(str(exc)) from exc
        chat_holder: dict[str, Any] = {}
        rows = []
        for name, onto_path, gt_path, _resp in found:
            test_path = root / "test" / f"ont_{name}_test.jsonl"
            print(f"{name}: extracting with {label}", file=sys.stderr, flush=True)
            rows.append(run_ontology(name, onto_path, gt_path, test_path, per, settings, args.provider, label,
                                     chat_holder, args.examples, train.get(name), hierarchy))
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    sample = ("all sentences" if per is None else f"{per} per ontology") + f" of {', '.join(r['ontology'] for r in rows)}"
    if args.strategy == "classify":
        sample += ", classify strategy"
    if args.examples:
        source = "train" if train else "held-out"
        sample += f", {args.examples} {source} examples in the prompt"
    run = {"model": label, "provider": args.provider, "sample": sample, "strategy": args.strategy,
           "prompt_version": CLASSIFY_VERSION if args.strategy == "classify" else PROMPT_VERSION,
           "max_entities": settings.extract.max_entities, "max_relations": settings.extract.max_relations,
           "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "ontologies": rows}
    store = args.out.with_suffix(".json")
    runs = [r for r in load_runs(store) if (r.get("model"), r.get("sample"), r.get("max_entities")) !=
            (run["model"], run["sample"], run["max_entities"])] + [run]
    write_json_atomic(store, {"runs": runs}, indent=1)
    write_text_atomic(args.out, markdown(runs))
    print("\n".join(run_markdown(run)))
    print(f"wrote {args.out} and {store}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
