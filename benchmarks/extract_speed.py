"""Extraction speed and quality, old and new configurations side by side in one process.

    python -m benchmarks.extract_speed [--model qwen2.5-coder-1.5b] [--configs baseline,adapter,compact]
                                       [--strategy generate,classify] [--stripped] [--limit N] [--record-dir DIR]

Each configuration extracts the GoT corpus (``corpus/got.txt``) with the embedded model from an
empty cache (every call is real), then the extraction is scored against the hand gold
(``tests/data/got_extraction.json``) with the quality benchmark's scorer. Printed per
configuration: chunks, seconds per chunk, prompt and output tokens per chunk, the share of prompt
tokens served from llama.cpp's KV cache (shared system prefix), and entity / relation F1 (exact and
alias-tolerant).

Configurations:

- ``baseline``: LangChain's ``ChatLlamaCpp`` (the previous embedded provider), full answer form,
  the ontology's annotated examples left out (a format example instead);
- ``adapter``: our adapter over llama-cpp-python (``graphrag_got.llm.providers.llamacpp_chat``), full
  form, no loop guard, no annotated examples (the configuration of prompt ``extract-v3``);
- ``guard``: ``adapter`` with the JSON loop guard (``GRAPHRAG_LOOP_GUARD``);
- ``examples``: ``guard`` with the ontology's annotated examples in the prompt (the default);
- ``compact``: ``examples`` in the compact answer form (short keys, relation ends by position);
- ``classify``: the classify strategy (``GRAPHRAG_EXTRACTION=classify``) over our adapter: mentions copied
  from the chunk under a grammar, then one scored choice per pair (``--strategy classify`` is a
  shorthand: ``--strategy generate,classify`` runs ``examples`` then ``classify``);
- ``classify-gold-mentions``: ``classify`` with the mentions step answered by the gold (each gold
  entity of the chunk, name and class; no model call): the ceiling of the pair questions, the part
  of the strategy a better mention step cannot raise. A diagnostic, not a strategy a user can run.

``--stripped`` gives every configuration the GoT ontology stripped of its examples and cues
(``benchmarks.quality.stripped``): the ontology a user writes first.

With ``--limit N`` the gold is cut to the chunks extracted, so F1 is over the same paragraphs.

They run one after another in this process on the same machine, so their ratios are comparable even
when absolute times are not. llama.cpp slows several-fold when anything else uses the cores: run it
on a quiet machine. ``--record-dir`` keeps each configuration's answers as a replay file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.quality.reading import read_extraction_file  # noqa: E402
from benchmarks.quality.score import score  # noqa: E402
from benchmarks.quality.tables import fmt_ratio, markdown_table  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402
from graphrag_got.extract.run import run_extraction  # noqa: E402
from graphrag_got.ontology.model import Ontology  # noqa: E402

CORPUS = ROOT / "corpus" / "got.txt"
ONTOLOGY = ROOT / "ontology" / "got.json"
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
CONFIGS = ("baseline", "adapter", "guard", "examples", "compact", "classify", "classify-gold-mentions")
#: --strategy NAME -> the configuration that runs it
STRATEGY_CONFIGS = {"generate": "examples", "classify": "classify"}
#: configurations that send the ontology's annotated examples; the others send a format example
WITH_EXAMPLES = ("examples", "compact")


@dataclass
class Row:
    config: str
    strategy: str
    chunks: int
    seconds: float
    prompt_tokens: int
    output_tokens: int
    reused_tokens: int | None
    entity_f1: float
    relation_f1_exact: float
    relation_f1_tolerant: float
    relation_p_tolerant: float
    relation_p_exact: float = 0.0
    relation_r_exact: float = 0.0
    relation_r_tolerant: float = 0.0
    calls: int = 0

    def cells(self) -> list[str]:
        n = max(1, self.chunks)
        reuse = "n/a" if self.reused_tokens is None else fmt_ratio(self.reused_tokens / max(1, self.prompt_tokens))
        return [self.config, self.strategy, str(self.chunks), f"{self.seconds / n:.1f}", str(self.calls // n),
                str(self.prompt_tokens // n), str(self.output_tokens // n), reuse, fmt_ratio(self.entity_f1),
                fmt_ratio(self.relation_p_exact), fmt_ratio(self.relation_r_exact), fmt_ratio(self.relation_f1_exact),
                fmt_ratio(self.relation_p_tolerant), fmt_ratio(self.relation_r_tolerant),
                fmt_ratio(self.relation_f1_tolerant)]


def _chat(config: str, settings: Settings) -> Any:
    from graphrag_got.llm.model_store import resolve_model_path

    path = str(resolve_model_path(settings.llm, files=settings.files))
    threads = settings.llm.llamacpp_threads or max(1, os.cpu_count() or 1)
    if config == "baseline":
        from langchain_community.chat_models import ChatLlamaCpp

        # the settings the previous provider used (shared/notes/offline-llm.md)
        return ChatLlamaCpp(model_path=path, n_ctx=settings.llm.llamacpp_n_ctx, n_batch=512, n_threads=threads,
                            temperature=0.0, max_tokens=settings.llm.max_tokens, rope_freq_base=0.0,
                            rope_freq_scale=0.0, repeat_penalty=1.0, verbose=False, seed=0)
    from graphrag_got.llm.providers.llamacpp_chat import LlamaCppChatModel

    return LlamaCppChatModel(model_path=path, n_ctx=settings.llm.llamacpp_n_ctx, n_batch=512, n_threads=threads,
                             max_tokens=settings.llm.max_tokens, seed=0, loop_guard=config != "adapter")


def _ontology(config: str, stripped: bool = False, workdir: Path | None = None) -> Ontology:
    """The GoT ontology, without its annotated examples for the configurations that predate them;
    ``stripped``: without examples and cues for every configuration."""
    if stripped:
        from benchmarks.quality.stripped import write_stripped

        return Ontology.from_file(write_stripped(ONTOLOGY, (workdir or Path(tempfile.mkdtemp())) / "ontology"))
    onto = Ontology.from_file(ONTOLOGY)
    if config in WITH_EXAMPLES or not onto.examples:
        return onto
    raw = {k: v for k, v in json.loads(ONTOLOGY.read_text(encoding="utf-8")).items() if k not in ("ejemplos", "examples")}
    return Ontology.from_dict(raw, source=f"{ONTOLOGY} (without examples)")


def _gold_for(gold: dict[str, Any], chunk_ids: set[str]) -> dict[str, Any]:
    """The gold cut to some chunks: entities and relations stated there, with only those chunk ids."""
    out = dict(gold)
    for key in ("entities", "relations"):
        kept = []
        for item in gold.get(key, []):
            ids = [c for c in item.get("chunk_ids", []) if c in chunk_ids]
            if ids:
                kept.append({**item, "chunk_ids": ids})
        out[key] = kept
    return out


def _corpus(limit: int | None, workdir: Path) -> Path:
    if not limit:
        return CORPUS
    paragraphs = [p for p in CORPUS.read_text(encoding="utf-8").split("\n\n") if p.strip()][:limit]
    out = workdir / "got.txt"
    out.write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
    return out


def run_config(config: str, *, model: str, corpus: Path, gold: dict[str, Any], workdir: Path,
               record_dir: Path | None, stripped: bool = False) -> Row:
    onto = _ontology(config, stripped, workdir)
    base = Settings.load()
    strategy = "classify" if config.startswith("classify") else "generate"
    settings = base.with_overrides(home=workdir / config / "home", out_dir=workdir / config / "out",
                                   llm_provider="llamacpp", llamacpp_model=model, corpus_path=corpus,
                                   models_path=base.models_dir, extraction=strategy,
                                   answer_form="compact" if config == "compact" else "full")
    chat = _chat(config, settings)
    tag = "-stripped" if stripped else ""
    replay = record_dir / f"got-{model}-{config}{tag}.json" if record_dir else None
    t0 = time.monotonic()
    with _gold_mentions(gold if config == "classify-gold-mentions" else None):
        summary = run_extraction(settings.extract, onto, corpus, settings.files.out_dir / "extraction.json", chat=chat,
                                 export_replay=replay, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    seconds = time.monotonic() - t0
    records = _records(settings)
    stats = getattr(chat, "prefix_stats", None)
    pred = read_extraction_file(summary.out_path)
    extracted = {c["id"] for c in json.loads(summary.out_path.read_text(encoding="utf-8")).get("chunks", [])}
    q = score(pred, _gold_for(gold, extracted), onto, pred_source=f"{config} extraction")
    return Row(config=config, strategy=strategy, chunks=summary.chunks, seconds=seconds,
               prompt_tokens=sum(int(r.get("input_tokens") or 0) for r in records),
               output_tokens=sum(int(r.get("output_tokens") or 0) for r in records),
               reused_tokens=None if stats is None else stats.reused_tokens,
               entity_f1=q.exact.entities.f1, relation_f1_exact=q.exact.relations.f1,
               relation_f1_tolerant=q.tolerant.relations.f1, relation_p_tolerant=q.tolerant.relations.precision,
               relation_p_exact=q.exact.relations.precision, relation_r_exact=q.exact.relations.recall,
               relation_r_tolerant=q.tolerant.relations.recall, calls=summary.llm_calls)


class _GoldMentionsBackend:
    """A classify backend whose mentions are the gold entities of the chunk the prompt holds. Its answers
    are cached under the usual mentions keys, in this configuration's own home (a temporary folder), so
    they never reach a real run's cache; its replay file is named after the configuration."""

    def __init__(self, inner: Any, gold: dict[str, Any]):
        self.inner, self.scored = inner, inner.scored
        self.chunks = [(c["text"], c["id"]) for c in gold.get("chunks", [])]
        self.gold = gold

    def mentions(self, system: str, user: str, spans: Any, classes: Any, key: str) -> Any:
        from graphrag_got.extract.classify.backend import Answer

        ids = {cid for text, cid in self.chunks if text.strip() and text.strip() in user}
        lines = [f"- {e['name']} ({e['type']})" for e in self.gold.get("entities", [])
                 if ids & set(e.get("chunk_ids", []))]
        return Answer("\n".join(lines) + "\n" if lines else "", finish="gold")

    def choose(self, system: str, user: str, labels: Any, key: str) -> Any:
        return self.inner.choose(system, user, labels, key)


@contextlib.contextmanager
def _gold_mentions(gold: dict[str, Any] | None) -> Any:
    """While active, the extraction's classify backend answers mentions from ``gold`` (if given)."""
    if gold is None:
        yield
        return
    import graphrag_got.extract.strategies as strategies  # where the strategies build their backend

    original = strategies.backend_for
    strategies.backend_for = lambda chat: _GoldMentionsBackend(original(chat), gold)
    try:
        yield
    finally:
        strategies.backend_for = original


def _records(settings: Settings) -> list[dict[str, Any]]:
    root = settings.cache_dir / "extract"
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.rglob("*.json"))]


def gold_answer_tokens(model_path: str, gold: dict[str, Any], onto: Ontology,
                       chunk_ids: set[str] | None = None, forms: tuple[str, ...] = ("full", "compact")) -> dict[str, float]:
    """Mean tokens per chunk of the gold itself written as an answer, in each of ``forms``.

    The floor of any configuration: a model that wrote exactly the gold (with the confidence the schema
    asks, no property) would still generate this many tokens. Tokenized with the model's own vocabulary
    (``vocab_only``: no weights loaded).
    """
    import llama_cpp

    from graphrag_got.extract.forms import answer_form
    from graphrag_got.ontology.model import ExampleEntity, ExampleRelation, ExtractionExample

    vocab = llama_cpp.Llama(model_path=model_path, vocab_only=True, verbose=False)
    counts: dict[str, list[int]] = {form: [] for form in forms}
    for chunk in gold.get("chunks", []):
        if chunk_ids is not None and chunk["id"] not in chunk_ids:
            continue
        ents = [e for e in gold["entities"] if chunk["id"] in e.get("chunk_ids", [])]
        names = {e["key"]: e["name"] for e in ents}
        rels = [r for r in gold["relations"] if chunk["id"] in r.get("chunk_ids", [])
                and r["subject_key"] in names and r["object_key"] in names]
        example = ExtractionExample(
            text=chunk["text"],
            entities=tuple(ExampleEntity(class_name=e["type"], name=e["name"]) for e in ents),
            relations=tuple(ExampleRelation(relation=r["relation"], subject=names[r["subject_key"]],
                                            object=names[r["object_key"]],
                                            attributes={k: str(v) for k, v in (r.get("attributes") or {}).items()
                                                        if v is not None})
                            for r in rels))
        for form in counts:
            text = answer_form(form).example_answer(onto, example)
            counts[form].append(len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)))
    return {form: sum(v) / len(v) for form, v in counts.items() if v}


HEADER = ["config", "strategy", "chunks", "s/chunk", "calls/chunk", "prompt tok/chunk", "output tok/chunk",
          "prompt reused", "entity F1", "relation P exact", "relation R exact", "relation F1 exact",
          "relation P tolerant", "relation R tolerant", "relation F1 tolerant"]


def floor_text(model: str, rows: list[Row]) -> str:
    """The least time per chunk any answer as complete as the gold needs, at the measured token rate."""
    from graphrag_got.llm.model_store import resolve_model_path

    gold = json.loads(GOLD.read_text(encoding="utf-8"))
    settings = Settings.load().with_overrides(llamacpp_model=model)
    onto = Ontology.from_file(ONTOLOGY)
    ids = None
    if rows and rows[0].chunks < len(gold.get("chunks", [])):
        ids = {c["id"] for c in gold.get("chunks", [])[:rows[0].chunks]}
    tokens = gold_answer_tokens(str(resolve_model_path(settings.llm, files=settings.files)), gold, onto, ids)
    rate = max((r.output_tokens / r.seconds for r in rows if r.seconds), default=0.0)
    lines = [f"Floor: the gold answer itself is {tokens.get('full', 0):.0f} tokens per chunk in the full form and "
             f"{tokens.get('compact', 0):.0f} in the compact form (a confidence per entity, as the schema asks; no "
             "property)."]
    if rate:
        lines.append(f"At the best measured rate ({rate:.1f} output tokens/s, prompt time included) writing it "
                     f"takes {tokens.get('full', 0) / rate:.0f} s (full) and {tokens.get('compact', 0) / rate:.0f} s "
                     "(compact) per chunk.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--configs", default=",".join(c for c in CONFIGS if c != "classify"))
    ap.add_argument("--strategy", help="comma-separated strategies (generate, classify); replaces --configs: "
                    "generate runs `examples`, classify runs `classify`")
    ap.add_argument("--stripped", action="store_true", help="the GoT ontology without its examples and cues")
    ap.add_argument("--limit", type=int, default=0, help="only the first N paragraphs of the corpus")
    ap.add_argument("--record-dir", type=Path, help="write each configuration's answers as a replay file here")
    ap.add_argument("--out", type=Path, help="also write the table to this file")
    args = ap.parse_args(argv)
    configs = [c.strip() for c in args.configs.split(",") if c.strip()]
    if args.strategy:
        names = [c.strip() for c in args.strategy.split(",") if c.strip()]
        bad = [n for n in names if n not in STRATEGY_CONFIGS]
        if bad:
            ap.error(f"unknown strategy {', '.join(bad)}; choose from {', '.join(STRATEGY_CONFIGS)}")
        configs = [STRATEGY_CONFIGS[n] for n in names]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        ap.error(f"unknown configuration(s) {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    gold = read_extraction_file(GOLD)
    if args.record_dir:
        args.record_dir.mkdir(parents=True, exist_ok=True)
    rows: list[Row] = []
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="extract-speed-") as tmp:
        corpus = _corpus(args.limit, Path(tmp))
        for config in configs:
            print(f"== {config} ...", flush=True)
            rows.append(run_config(config, model=args.model, corpus=corpus, gold=gold, workdir=Path(tmp),
                                   record_dir=args.record_dir, stripped=args.stripped))
            print("   " + " | ".join(rows[-1].cells()), flush=True)
    table = markdown_table(HEADER, [r.cells() for r in rows])
    base = rows[0]
    ratios = [f"{r.config}: {base.seconds / r.seconds:.2f}x the speed of {base.config}, output tokens "
              f"{r.output_tokens / max(1, base.output_tokens):.2f}x" for r in rows[1:]]
    onto_note = "GoT ontology stripped of examples and cues" if args.stripped else "GoT ontology as given"
    text = (f"Extraction speed, model {args.model}, {onto_note}, {len(rows[0:1]) and rows[0].chunks} chunks, "
            f"{os.cpu_count()} cores, load average at start {load:.2f}, at end {os.getloadavg()[0]:.2f}\n"
            f"command: python -m benchmarks.extract_speed {' '.join(argv if argv is not None else sys.argv[1:])}\n\n"
            f"{table}\n\n" + "\n".join(ratios) + "\n")
    text += "\n" + floor_text(args.model, rows) + "\n"
    print("\n" + text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
