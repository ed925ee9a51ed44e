"""The ladder: pipeline configurations side by side, scored against the gold extraction.

Every rung runs the real ``run_extraction`` on a corpus with the **replay** provider, i.e. the
recorded answers of an embedded model (``tests/data/recorded/got-qwen2.5-coder-1.5b.json`` for the
GoT corpus: the 1.5B model under the current prompt, verification verdicts included; the first
prompt's answers, the issue's baseline, stay in ``tests/data/got_replay_qwen2.5-coder-1.5b.json``
for ``--replay``): zero model calls, a few seconds per rung, same numbers on every machine. Each rung gets
its own temporary home and output folder, so no cache is shared between rungs.

The ladder runs every rung over every corpus of ``CORPORA`` (a ``GoldCorpus``: corpus, ontology,
gold extraction, recorded answers) and writes one table per corpus,
``results/<corpus name>-recorded.{md,json}``. The GoT corpus (``corpus/``, ``ontology/got.json``)
is the first and the default; ``benchmarks/quality/data/<name>/`` holds the others.

A rung is a name and a function that receives the base Settings (replay provider, temporary
folders) and returns one of:

* new ``Settings`` (e.g. ``settings.with_overrides(...)``),
* a mapping of extra keyword arguments for ``run_extraction``,
* a ``(Settings, mapping)`` pair.

Later rungs (+evidence, +repair, +resolution, +verification) are added by appending to ``RUNGS``.

    python -m benchmarks.quality.ladder [--corpus NAME ...] [--out benchmarks/quality/results] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from graphrag_got.config import Settings
from graphrag_got.errors import CorpusError, GraphragGotError
from graphrag_got.extract.run import run_extraction
from graphrag_got.common.files import write_text_atomic
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback, ProgressEvent, no_progress

from .score import MODES, QualityScore, read_extraction_file, relation_table, score
from .stripped import write_stripped
from .tables import fmt_ratio, markdown_table

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
ONTOLOGY = ROOT / "ontology" / "got.json"
CORPUS = ROOT / "corpus" / "got.txt"
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
REPLAY = ROOT / "tests" / "data" / "recorded" / "got-qwen2.5-coder-1.5b.json"
FIRST_REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"  # prompt extract-v1
RESULTS = HERE / "results"
RESULTS_NAME = "got-recorded"
DATA = HERE / "data"


@dataclass(frozen=True)
class GoldCorpus:
    """A corpus the ladder scores: its ontology, hand-curated gold extraction and recorded answers."""

    name: str  # identifier: `--corpus NAME` and results/<name>-recorded.{md,json}
    title: str  # how the results page names it
    corpus: Path
    ontology: Path
    gold: Path
    replay: Path
    # Settings every rung of this corpus starts from (e.g. a smaller chunk size the recording was made with)
    settings: Mapping[str, Any] = field(default_factory=dict)
    # the ontology stripped of its examples and cues (benchmarks.quality.stripped): what a user writes first
    stripped: bool = False

    @property
    def results_name(self) -> str:
        return f"{self.name}-recorded"

    def with_paths(self, **paths: Path | None) -> "GoldCorpus":
        """The same corpus with some of its files replaced (``None`` keeps a file)."""
        return replace(self, **{k: v for k, v in paths.items() if v is not None})

    def missing(self) -> list[tuple[str, Path]]:
        """(what, path) of every file or folder of this corpus that does not exist."""
        wanted = (("corpus", self.corpus), ("ontology", self.ontology), ("gold extraction", self.gold),
                  ("recorded answers", self.replay))
        return [(what, path) for what, path in wanted if not path.exists()]


GOT = GoldCorpus("got", "the GoT corpus (Spanish)", corpus=CORPUS, ontology=ONTOLOGY, gold=GOLD, replay=REPLAY)
OBSERVATORY = GoldCorpus(
    "observatory", "the observatory corpus (English, invented research history)",
    corpus=DATA / "observatory" / "corpus", ontology=DATA / "observatory" / "ontology.json",
    gold=DATA / "observatory" / "gold.json", replay=DATA / "observatory" / "replay-qwen2.5-coder-1.5b.json")
#: The GoT corpus cut into chunks of at most 300 characters (two or three sentences) instead of whole
#: paragraphs: the same gold, the 1.5B model's answers for those chunks.
GOT_SHORT_CHUNKS = GoldCorpus(
    "got-short-chunks", "the GoT corpus (Spanish) in chunks of at most 300 characters", corpus=CORPUS,
    ontology=ONTOLOGY, gold=GOLD, replay=REPLAY.with_name("got-qwen2.5-coder-1.5b-chunks300.json"),
    settings={"chunk_max_chars": 300})
#: Every corpus again with its ontology stripped of examples and cues (recorded under that ontology's prompt),
#: and the GoT corpus through the classify strategy (GRAPHRAG_EXTRACTION=classify) with the stripped ontology.
GOT_STRIPPED = replace(GOT, name="got-stripped", title="the GoT corpus (Spanish), ontology without examples and cues",
                       replay=REPLAY.with_name("got-qwen2.5-coder-1.5b-stripped.json"), stripped=True)
OBSERVATORY_STRIPPED = replace(
    OBSERVATORY, name="observatory-stripped", title="the observatory corpus (English), ontology without examples",
    replay=OBSERVATORY.replay.with_name("replay-qwen2.5-coder-1.5b-stripped.json"), stripped=True)
GOT_CLASSIFY_STRIPPED = replace(
    GOT_STRIPPED, name="got-classify-stripped",
    title="the GoT corpus (Spanish), classify strategy, ontology without examples and cues",
    replay=REPLAY.with_name("got-qwen2.5-coder-1.5b-classify-stripped.json"), settings={"extraction": "classify"})
#: The classify prompts never carry examples or cues, so one recording serves the ontology as given (its cues
#: checked by the validator) and stripped.
GOT_CLASSIFY = replace(GOT_CLASSIFY_STRIPPED, name="got-classify", stripped=False,
                       title="the GoT corpus (Spanish), classify strategy, ontology as given")
#: The first is the default of every single-corpus call.
CORPORA: tuple[GoldCorpus, ...] = (GOT, OBSERVATORY, GOT_SHORT_CHUNKS, GOT_STRIPPED, OBSERVATORY_STRIPPED,
                                   GOT_CLASSIFY, GOT_CLASSIFY_STRIPPED)

Configured = Settings | Mapping[str, Any] | tuple[Settings, Mapping[str, Any]]


@dataclass(frozen=True)
class Rung:
    """One pipeline configuration: ``configure(base_settings)`` says how it differs from the base."""

    name: str
    configure: Callable[[Settings], Configured]
    description: str = ""


def raw_validation(settings: Settings) -> Settings:
    """Today's pipeline as it is: the recorded answers through today's validation."""
    return settings


RUNGS: list[Rung] = [
    Rung("raw (today's validation)",
         lambda s: raw_validation(s).with_overrides(relation_cues=False, evidence=False, repair=False, resolution=False,
                                                    orphan_entities="keep"),
         "recorded answers validated against the ontology only: no evidence check, no repair, "
         "no entity resolution"),
    Rung("+evidence", lambda s: s.with_overrides(relation_cues=False, evidence=True, repair=False, resolution=False,
                                                 orphan_entities="keep"),
         "as raw, and every entity must be mentioned in its chunk, every relation's ends within "
         "`evidence_window` sentences of each other (refusals `not_in_text`, `ends_not_near`)"),
    Rung("+repair", lambda s: s.with_overrides(relation_cues=False, evidence=True, repair=True, resolution=False,
                                               orphan_entities="keep"),
         "as +evidence, after the audited repair of the answers (inferred end class, majority class, "
         "flipped ends), each repair recorded"),
]


def _then_resolution(previous: Rung) -> Rung:
    """``previous`` (its evidence and repair settings) with entity resolution on; every other rung
    runs with ``resolution=False``."""
    def configure(settings: Settings) -> Configured:
        chosen, kwargs = _split(previous.configure(settings), settings, previous.name)
        return chosen.with_overrides(resolution=True), kwargs

    return Rung("+resolution", configure,
                f"as `{previous.name}`, then entity resolution within a class (alias file, articles and class "
                "words, containment, fuzzy spelling): one entity per real entity, relations re-pointed")


RUNGS.append(_then_resolution(RUNGS[-1]))

def _trusting(**overrides: Any) -> Callable[[Settings], Settings]:
    """Evidence, cues (and their direction), repair and resolution on (the default pipeline), then ``overrides``."""
    chosen = {"relation_cues": True, "cue_direction": True, "evidence": True, "repair": True, "resolution": True,
              **overrides}
    return lambda s: s.with_overrides(**chosen)


RUNGS.append(Rung("+class duplicates", _trusting(relation_cues=False, orphan_entities="duplicates"),
                  "as +resolution, and an entity no kept relation uses refused (`no_fact`) when facts use its "
                  "name under another class"))
RUNGS.append(Rung("+cues", _trusting(cue_direction=False, orphan_entities="duplicates"),
                  "as +class duplicates, and a relation that declares cues (`indicios`) kept only when one occurs "
                  "where its ends meet (refusal `no_cue`)"))
RUNGS.append(Rung("+cue direction", _trusting(orphan_entities="duplicates"),
                  "as +cues, and a fact of a non-symmetric relation whose sentences word it the other way round "
                  "(the cue between object and subject, or a reverse cue `indicios_inversos` between subject and "
                  "object) gets its ends swapped (repair `reversed_by_wording`)"))
RUNGS.append(Rung("+related orphans", _trusting(orphan_entities="related"),
                  "as +cue direction, and an entity no kept relation uses refused (`no_fact`) also when every chunk "
                  "that mentions it has kept facts: the default"))
RUNGS.append(Rung("+no orphans", _trusting(orphan_entities="drop"),
                  "as +cue direction, and every entity no kept relation uses refused (`no_fact`; opt-in: "
                  "GRAPHRAG_ORPHAN_ENTITIES=drop)"))

#: Only on corpora whose recorded answers include verification verdicts (replay keys "verify:...").
VERIFICATION = Rung("+verification", _trusting(verify=True, orphan_entities="related"),
                    "as +related orphans, and every kept triple confirmed by a yes/no question against its evidence "
                    "(refusal `not_confirmed`)")


def has_verdicts(replay: Path) -> bool:
    """Whether a replay file recorded verification calls (so the +verification rung can replay them)."""
    try:
        data = json.loads(replay.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    responses = data.get("responses") if isinstance(data, dict) else None
    return any(isinstance(r, dict) and str(r.get("chunk_hash", "")).startswith("verify:")
               for r in responses or [])


def rungs_for(spec: "GoldCorpus", rungs: Sequence[Rung] = ()) -> list[Rung]:
    """The ladder of one corpus: ``rungs`` (default RUNGS), then +verification when it was recorded."""
    chosen = list(rungs or RUNGS)
    return chosen + [VERIFICATION] if has_verdicts(spec.replay) else chosen


@dataclass(frozen=True)
class RungResult:
    rung: str
    description: str
    score: QualityScore
    entities: int  # entities kept in the extraction
    kept: int  # relations kept
    refused: int  # relations refused by validation
    refused_entities: int
    llm_calls: int  # replayed answers (the replay provider makes no model call)
    extraction_counts: dict[str, Any]  # the extraction file's own "counts"

    def to_dict(self) -> dict[str, Any]:
        return {"rung": self.rung, "description": self.description, "entities": self.entities,
                "kept": self.kept, "refused": self.refused, "refused_entities": self.refused_entities,
                "replayed_calls": self.llm_calls, "scores": self.score.to_dict()}


def _split(configured: Configured, base: Settings, rung: str) -> tuple[Settings, dict[str, Any]]:
    if isinstance(configured, Settings):
        return configured, {}
    if isinstance(configured, tuple) and len(configured) == 2 and isinstance(configured[0], Settings):
        return configured[0], dict(configured[1])
    if isinstance(configured, Mapping):
        return base, dict(configured)
    raise TypeError(f"rung {rung!r}: configure() must return Settings, a mapping of run_extraction "
                    f"keyword arguments, or a (Settings, mapping) pair; got {type(configured).__name__}")


def run_rung(rung: Rung, workdir: Path, *, ontology: Ontology, gold: Mapping[str, Any],
             replay: Path = REPLAY, corpus: Path = CORPUS, settings: Mapping[str, Any] | None = None) -> RungResult:
    """Extract the corpus from the recorded answers under ``rung``'s configuration and score it.

    ``settings``: fields every rung starts from (the corpus's own, e.g. its chunk size)."""
    base = Settings(home=workdir / "home", out_dir=workdir / "out", llm_provider="replay", replay_file=replay,
                    ontology_path=Path(ontology.source), corpus_path=corpus).with_overrides(**(settings or {}))
    chosen, kwargs = _split(rung.configure(base), base, rung.name)
    summary = run_extraction(chosen.extract, ontology, corpus, chosen.files.out_dir / "extraction.json", **kwargs, files=chosen.files, chunking=chosen.chunking, llm=chosen.llm)
    pred = read_extraction_file(summary.out_path)
    result = score(pred, gold, ontology, pred_source=f"{summary.out_path} (rung {rung.name!r})",
                   gold_source="gold extraction")
    return RungResult(rung=rung.name, description=rung.description, score=result, entities=summary.entities,
                      kept=summary.relations, refused=summary.rejected_relations,
                      refused_entities=summary.rejected_entities, llm_calls=summary.llm_calls,
                      extraction_counts=dict(pred.get("counts", {})))


def run_ladder(rungs: Sequence[Rung] = RUNGS, *, ontology_path: Path = ONTOLOGY, gold_path: Path = GOLD,
               replay: Path = REPLAY, corpus: Path = CORPUS, settings: Mapping[str, Any] | None = None,
               progress: ProgressCallback = no_progress) -> list[RungResult]:
    onto = Ontology.from_file(ontology_path)
    gold = read_extraction_file(gold_path)
    results: list[RungResult] = []
    progress(ProgressEvent(step="ladder", done=0, total=len(rungs)))
    with tempfile.TemporaryDirectory(prefix="graphrag-quality-") as tmp:
        for i, rung in enumerate(rungs):
            results.append(run_rung(rung, Path(tmp) / f"rung{i}", ontology=onto, gold=gold, replay=replay,
                                    corpus=corpus, settings=settings))
            progress(ProgressEvent(step="ladder", done=i + 1, total=len(rungs), message=rung.name,
                                   finished=i + 1 == len(rungs)))
    return results


@dataclass(frozen=True)
class CorpusResults:
    """Every rung's result on one corpus, with the label of the model whose answers were replayed."""

    corpus: GoldCorpus
    results: list[RungResult]
    model: str  # the replay file's "model" ("" when it does not say)


def recorded_model(replay: Path) -> str:
    """The model label a replay file was recorded with ("" when the file does not say)."""
    try:
        data = json.loads(replay.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return ""  # run_extraction reports an unreadable replay file with its own clear error
    model = data.get("model") if isinstance(data, dict) else None
    return model if isinstance(model, str) else ""


def check_corpus(spec: GoldCorpus) -> None:
    """Raise one ``CorpusError`` listing every missing file of ``spec``, with how to make each."""
    missing = spec.missing()
    if not missing:
        return
    lines = [f"corpus {spec.name!r}: {what} not found: {_rel(path)}" for what, path in missing]
    if any(what == "recorded answers" for what, _ in missing):
        lines.append(record_hint(spec))
    raise CorpusError("; ".join(lines))


def record_hint(spec: GoldCorpus) -> str:
    """The commands that record a corpus's answers (its stripped ontology written first when it has one)."""
    onto = _rel(spec.ontology)
    first = ""
    if spec.stripped:
        first = f"`python -m benchmarks.quality.stripped {onto} /tmp/stripped`, then "
        onto = f"/tmp/stripped/{spec.ontology.stem}-stripped.json"
    env = "".join(f"GRAPHRAG_{k.upper()}={v} " for k, v in spec.settings.items() if k == "extraction")
    chunk = spec.settings.get("chunk_max_chars")
    env += f"GRAPHRAG_CHUNK_MAX_CHARS={chunk} " if chunk else ""
    return (f"record the answers with {first}`{env}graphrag-got --ontology {onto} --provider llamacpp "
            f"--model qwen2.5-coder-1.5b extract {_rel(spec.corpus)} --export-replay {_rel(spec.replay)}`")


def run_corpus(spec: GoldCorpus, rungs: Sequence[Rung] = RUNGS, *,
               progress: ProgressCallback = no_progress) -> CorpusResults:
    """Every rung on one corpus, from its recorded answers, scored against its gold extraction."""
    check_corpus(spec)

    def tagged(event: ProgressEvent) -> None:
        progress(replace(event, step=f"ladder {spec.name}"))

    with tempfile.TemporaryDirectory(prefix="graphrag-stripped-") as tmp:
        ontology = write_stripped(spec.ontology, Path(tmp)) if spec.stripped else spec.ontology
        results = run_ladder(rungs, ontology_path=ontology, gold_path=spec.gold, replay=spec.replay,
                             corpus=spec.corpus, settings=spec.settings, progress=tagged)
    return CorpusResults(corpus=spec, results=results, model=recorded_model(spec.replay))


def select_corpora(names: Sequence[str] = (), *, corpora: Sequence[GoldCorpus] = CORPORA) -> list[GoldCorpus]:
    """The corpora called ``names`` (every one when empty), in the order given, each once."""
    by_name = {c.name: c for c in corpora}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise CorpusError(f"unknown corpus {unknown[0]!r}; the ladder knows {', '.join(by_name)}")
    return [by_name[n] for n in dict.fromkeys(names)] if names else list(corpora)


# ---------------------------------------------------------------------------- rendering
def ladder_table(results: Sequence[RungResult]) -> str:
    """rung x mode -> entity P/R/F1, relation P/R/F1, relations kept and refused (Markdown)."""
    header = ["rung", "names", "entity P", "entity R", "entity F1", "relation P", "relation R", "relation F1",
              "kept", "refused"]
    rows = []
    for res in results:
        for mode in res.score.modes:
            e, r = mode.entities, mode.relations
            rows.append([res.rung, mode.mode, *(fmt_ratio(v) for v in (e.precision, e.recall, e.f1)),
                         *(fmt_ratio(v) for v in (r.precision, r.recall, r.f1)), str(res.kept), str(res.refused)])
    return markdown_table(header, rows, align="ll" + "r" * (len(header) - 2))


def _rel(path: Path) -> str:
    try:
        return path.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return str(path)


def results_markdown(results: Sequence[RungResult], *, gold_path: Path, replay: Path, ontology_path: Path,
                     title: str = GOT.title, corpus_path: Path | None = None, model: str = "",
                     settings: Mapping[str, Any] | None = None) -> str:
    gold_counts = results[0].score.exact if results else None
    recorded = f" (answers of `{model}`)" if model else ""
    lines = [
        f"# Extraction quality on {title}, from recorded model answers",
        "",
        "Generated by `python -m benchmarks.quality.ladder`; every number is computed by it. "
        "See `benchmarks/quality/README.md` for what each number means.",
        "",
        *([f"- corpus: `{_rel(corpus_path)}`"] if corpus_path is not None else []),
        f"- gold: `{_rel(gold_path)}`"
        + (f" ({gold_counts.entities.gold} entities, {gold_counts.relations.gold} relations)" if gold_counts else ""),
        f"- predictions: `{_rel(replay)}`{recorded} replayed through `run_extraction` "
        "(replay provider, no model call)",
        f"- ontology: `{_rel(ontology_path)}`",
        *([f"- settings of every rung: {', '.join(f'`{k}={v}`' for k, v in settings.items())}"] if settings else []),
        "- names: `exact` = class + normalized name; `tolerant` = also without class-name words and "
        "leading articles, with aliases",
        "",
        "## Ladder",
        "",
        ladder_table(results),
    ]
    for res in results:
        lines += ["", f"## Per relation: {res.rung}", "", res.description, "", relation_table(res.score)]
    return "\n".join(lines) + "\n"


def _results_doc(results: Sequence[RungResult], *, gold_path: Path, replay: Path, ontology_path: Path,
                 **about: Any) -> dict[str, Any]:
    return {**about, "gold": _rel(gold_path), "replay": _rel(replay), "ontology": _rel(ontology_path),
            "modes": list(MODES), "rungs": [r.to_dict() for r in results]}


def results_json(results: Sequence[RungResult], *, gold_path: Path, replay: Path, ontology_path: Path) -> str:
    doc = _results_doc(results, gold_path=gold_path, replay=replay, ontology_path=ontology_path)
    return json.dumps(doc, ensure_ascii=False, indent=2) + "\n"


def corpus_markdown(cr: CorpusResults) -> str:
    """``results/<name>-recorded.md`` of one corpus."""
    c = cr.corpus
    text = results_markdown(cr.results, gold_path=c.gold, replay=c.replay, ontology_path=c.ontology,
                            title=c.title, corpus_path=c.corpus, model=cr.model, settings=c.settings)
    if c.stripped:
        text = text.replace(f"- ontology: `{_rel(c.ontology)}`",
                            f"- ontology: `{_rel(c.ontology)}` stripped of its examples and cues "
                            "(`benchmarks/quality/stripped.py`)", 1)
    return text


def corpus_doc(cr: CorpusResults) -> dict[str, Any]:
    """The content of ``results/<name>-recorded.json`` of one corpus."""
    c = cr.corpus
    return _results_doc(cr.results, gold_path=c.gold, replay=c.replay, ontology_path=c.ontology,
                        corpus=c.name, title=c.title, corpus_path=_rel(c.corpus), model=cr.model,
                        settings=dict(c.settings), stripped=c.stripped)


def write_results(cr: CorpusResults, out_dir: Path) -> tuple[Path, Path]:
    """Write ``<out_dir>/<name>-recorded.md`` and ``.json``; return both paths."""
    name = cr.corpus.results_name
    md = write_text_atomic(out_dir / f"{name}.md", corpus_markdown(cr))
    js = write_text_atomic(out_dir / f"{name}.json", json.dumps(corpus_doc(cr), ensure_ascii=False, indent=2) + "\n")
    return md, js


# ---------------------------------------------------------------------------- CLI
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.quality.ladder",
        description="Run each pipeline configuration on each corpus's recorded model answers (no model call), "
                    "score it against that corpus's gold extraction and write one table per corpus.")
    names = ", ".join(c.name for c in CORPORA)
    p.add_argument("--corpus", action="append", dest="corpora", metavar="NAME", default=[],
                   help=f"run this corpus only (repeatable; one of {names}; default: all)")
    p.add_argument("--out", type=Path, default=RESULTS,
                   help="folder for <corpus>-recorded.md/.json (default %(default)s)")
    p.add_argument("--gold", type=Path, help="replace the gold extraction of the one corpus run")
    p.add_argument("--replay", type=Path, help="replace the recorded answers of the one corpus run")
    p.add_argument("--ontology", type=Path, help="replace the ontology of the one corpus run")
    p.add_argument("--json", action="store_true", help="print the results as JSON instead of the tables")
    args = p.parse_args(argv)
    overrides = {"gold": args.gold, "replay": args.replay, "ontology": args.ontology}
    given = [f"--{k}" for k, v in overrides.items() if v is not None]
    try:
        # a replaced file belongs to one corpus: the one named, else the default (the first)
        selected = select_corpora(args.corpora or ([CORPORA[0].name] if given else []))
        if given and len(selected) > 1:
            raise CorpusError(f"{', '.join(given)}: a replaced file belongs to one corpus, but {len(selected)} "
                              "corpora were chosen; pass a single --corpus NAME")
        selected = [spec.with_paths(**overrides) for spec in selected]
        if not args.corpora and not given:  # every corpus: one whose answers are not recorded yet is skipped, said
            for spec in [s for s in selected if [w for w, _ in s.missing()] == ["recorded answers"]]:
                print(f"skipped corpus {spec.name!r}: no recorded answers at {_rel(spec.replay)}; "
                      f"{record_hint(spec)}", file=sys.stderr)
                selected.remove(spec)
        for spec in selected:  # every missing file is reported before anything runs
            check_corpus(spec)
    except GraphragGotError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1

    def show(event: ProgressEvent) -> None:
        if event.message:
            print(f"[{event.step} {event.done}/{event.total}] {event.message}", file=sys.stderr)

    docs = []
    for i, spec in enumerate(selected):
        try:
            cr = run_corpus(spec, rungs_for(spec), progress=show)  # RUNGS read now, not at definition
        except GraphragGotError as exc:
            print(f"error: corpus {spec.name!r}: {exc}", file=sys.stderr)
            return 1
        md, js = write_results(cr, args.out)
        docs.append(corpus_doc(cr))
        if not args.json:
            model = f", answers of {cr.model}" if cr.model else ""
            print(("\n" if i else "") + f"## {spec.name}: {spec.title}{model}\n")
            print(ladder_table(cr.results))
            print(f"\nwritten: {md}\n         {js}")
    if args.json:
        print(json.dumps({"corpora": docs}, ensure_ascii=False, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
