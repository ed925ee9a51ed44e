"""A real vault built with the embedded model: a first build, a daily update of 20 edited notes, and retrieval.

    NEO4J_URI=bolt://127.0.0.1:7699 GRAPHRAG_HOME=/tmp/vault-live .venv/bin/graphrag-got neo4j start
    NEO4J_URI=bolt://127.0.0.1:7699 .venv/bin/python -m benchmarks.vault_live                  # the whole vault
    NEO4J_URI=bolt://127.0.0.1:7699 .venv/bin/python -m benchmarks.vault_live --sample 5 \\
        --model qwen2.5-coder-0.5b --f1-limit 3                                               # a check in minutes

The vault is one nobody here wrote: the English part of Obsidian's own help vault (173 notes with
wikilinks, embeds, tags, front matter and folders), cloned once into the benchmark cache and never
into the repository::

    git clone https://github.com/obsidianmd/obsidian-help ~/.cache/graphrag_got/vault-bench/obsidian-help
    git -C ~/.cache/graphrag_got/vault-bench/obsidian-help checkout fa179e91e86eaff5859226cc045c81000d64e3cd

Its source and commit are read from that clone and printed with the results. The notes (``.md`` only)
are copied into a work folder, so the daily edits never touch the clone. The ontology is
``ontology/notes.json``; the model the embedded llama.cpp one (``--model``, default the project's
default); the strategy ``--strategy`` (default ``auto``: ``terms`` for a vault with a small model;
``--typing``: the terms layer with its typing calls, ``--no-typing`` without; the default is the setting's).

Steps, each timed, with the build's own lines kept:

1. **first build** (``graphrag_got.pipeline.build.run_build``: extract, load, embeddings; communities with
   ``--communities``, whose reports cost one model call per community) of the empty database. With
   ``--sample N`` only N notes are built (the notes the questions need first, then a seeded draw) and
   the time of the whole vault is extrapolated from the extraction's pace per character of note
   text, and said to be an extrapolation. The build's progress events are kept: the ETA it showed at
   10, 25, 50 and 75% of the chunks is compared with when the extraction really ended.
2. **daily update**: ``--daily`` notes (20) edited deterministically, in turn: a sentence appended,
   a paragraph changed (a sentence put before it), a wikilink renamed to point at another note of the
   vault; then a build again (only the edited notes' chunks cost calls).
3. **retrieval**: the questions of ``benchmarks/vault_live_questions.json`` (written from the notes
   before any build) whose note is in the built vault, through ``local_search(answer=False)`` in
   hybrid and in vector-only retrieval: "needed note found at 10" = the note owns one of the first 10
   chunks retrieved (as ``benchmarks/notes_vault.py`` scores recall).
4. **term typing precision** (terms strategy with typing): the stored class of each of the 100 terms of
   ``benchmarks/vault_terms_labels.json`` (labelled by hand before any typing run of the whole vault)
   against the classes its label accepts; a labelled term the build did not type is typed then, apart.
5. **entity F1 on the ladder corpora** (``--f1``; ``benchmarks/quality``): the mentions strategy with the
   same model on each corpus, scored against the gold, beside the generate strategy's entity F1 from
   its recording (replayed, no model call; recorded with qwen2.5-coder-1.5b). ``--f1-limit N`` keeps
   the first N chunks of each corpus (the gold cut to them).

Printed per step: seconds (wall), notes per second, LLM calls, tokens in/out, seconds per build step,
the load average before and after (the machine may be shared: other jobs slow every step).
The database is emptied first: point NEO4J_URI at a scratch server, not at a graph you keep.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.load_benchmark import clear  # noqa: E402
from benchmarks.notes_vault import document_of  # noqa: E402
from graphrag_got.common.files import write_text_atomic  # noqa: E402
from graphrag_got.common.progress import ProgressEvent  # noqa: E402
from graphrag_got.config import Settings  # noqa: E402

VAULT = Path.home() / ".cache" / "graphrag_got" / "vault-bench" / "obsidian-help" / "en"
ONTOLOGY = ROOT / "ontology" / "notes.json"
QUESTIONS = ROOT / "benchmarks" / "vault_live_questions.json"
LABELS = ROOT / "benchmarks" / "vault_terms_labels.json"
K = 10
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)([^\[\]\n]*)\]\]")
_CODE_FENCE = re.compile(r"^\s*(```|~~~)")


# ----------------------------------------------------------------------------- the vault
def vault_source(vault: Path, declared: dict[str, str]) -> str:
    """Where the vault comes from (the questions file's record) and what the clone at ``vault`` holds:
    its remote, its commit, and whether its notes differ from that commit (other files, such as
    attachments left out of the clone, are not read)."""
    def git(*args: str, stdin: str | None = None) -> str:
        try:
            return subprocess.run(["git", "-C", str(vault), *args], capture_output=True, text=True, timeout=60,
                                  check=True, input=stdin).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""

    commit, remote = git("rev-parse", "HEAD"), git("config", "--get", "remote.origin.url")
    said = f"{declared.get('source', '?')} folder {declared.get('folder', '?')} at commit {declared.get('commit', '?')}"
    if not commit:
        return f"{said} (the questions file); {vault} is not a git clone: its commit is unknown"
    # the notes' blobs against the commit's (the index of a partial clone may say otherwise)
    prefix = git("rev-parse", "--show-prefix")
    committed = {line.split("\t", 1)[1][len(prefix):]: line.split()[2]
                 for line in git("ls-tree", "-r", "--full-tree", "HEAD", "--", prefix or ".").splitlines()
                 if "\t" in line and line.endswith(".md")}
    notes = notes_of(vault)
    blobs = git("hash-object", "--stdin-paths", stdin="\n".join(str((vault / n).resolve()) for n in notes)).split()
    same = len(blobs) == len(notes) and all(committed.get(n) == b for n, b in zip(notes, blobs))
    notes = "its notes as committed" if same else "ITS NOTES DIFFER from that commit"
    match = "" if commit == declared.get("commit") else " (NOT the commit the questions were written for)"
    return f"{said} (the questions file); the clone: {remote or 'no remote'} at {commit}{match}, {notes}"


def notes_of(vault: Path) -> list[str]:
    """The vault's notes, relative POSIX paths, sorted (hidden folders left out, as the corpus reader does)."""
    return sorted(p.relative_to(vault).as_posix() for p in vault.rglob("*.md")
                  if not any(part.startswith(".") for part in p.relative_to(vault).parts))


def sample_notes(notes: list[str], needed: list[str], n: int | None, seed: int) -> list[str]:
    """``n`` notes (all when None): the notes the questions need first (in question order), then a seeded draw."""
    if n is None or n >= len(notes):
        return list(notes)
    first = [x for x in dict.fromkeys(needed) if x in notes]
    rest = [x for x in notes if x not in first]
    random.Random(seed).shuffle(rest)
    return sorted((first + rest)[:n])


def copy_notes(vault: Path, notes: list[str], dest: Path) -> int:
    """Copy the notes into ``dest``; their characters."""
    size = 0
    for rel in notes:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(vault / rel, target)
        size += len(target.read_text(encoding="utf-8"))
    return size


# ----------------------------------------------------------------------------- the daily edits
APPENDED = "Reviewed in the daily update: the steps above were checked against the current version."
PREFACE = "In short, this part changed in the daily update."


def _prose_paragraph(lines: list[str]) -> int | None:
    """The first line of the first prose paragraph after the front matter (no heading, list, quote, code)."""
    i, fence = 0, False
    if lines and lines[0].strip() == "---":
        i = next((k + 1 for k in range(1, len(lines)) if lines[k].strip() == "---"), 0)
    for k in range(i, len(lines)):
        line = lines[k]
        if _CODE_FENCE.match(line):
            fence = not fence
            continue
        text = line.strip()
        if fence or not text or text[0] in "#>-*|!<0123456789":
            continue
        return k
    return None


def edit_note(path: Path, kind: int, other: str) -> str:
    """Edit one note in place (``kind`` 0: append a sentence; 1: change a paragraph; 2: rename a link to
    ``other``; a note without a prose paragraph or a link gets the append); what was done."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    if kind == 1 and (k := _prose_paragraph(lines)) is not None:
        lines[k] = f"{PREFACE} {lines[k]}"
        path.write_text("\n".join(lines), encoding="utf-8")
        return "paragraph changed"
    if kind == 2 and (m := _WIKILINK.search(text)):
        target = Path(other).stem
        path.write_text(text[:m.start()] + f"[[{target}{m.group(2)}]]" + text[m.end():], encoding="utf-8")
        return f"link [[{m.group(1)}]] renamed to [[{target}]]"
    path.write_text(text.rstrip("\n") + f"\n\n{APPENDED}\n", encoding="utf-8")
    return "sentence appended"


def daily_edits(vault: Path, notes: list[str], count: int, seed: int) -> list[str]:
    """Edit ``count`` notes (a seeded choice), the three kinds in turn; one line per edit."""
    chosen = sorted(random.Random(seed + 1).sample(notes, min(count, len(notes))))
    done = []
    for i, rel in enumerate(chosen):
        other = notes[(notes.index(rel) + 1) % len(notes)]
        done.append(f"{rel}: {edit_note(vault / rel, i % 3, other)}")
    return done


# ----------------------------------------------------------------------------- progress and ETA
class EtaLog:
    """The extraction's progress events of a build (time, done, total, eta), and its ETA checked afterwards."""

    def __init__(self, echo: Any = None) -> None:
        self.events: list[tuple[float, int, int, float | None]] = []
        self.echo = echo

    def __call__(self, event: ProgressEvent | str) -> None:
        if self.echo is not None:
            self.echo(event)
        if isinstance(event, ProgressEvent) and event.step == "extract" and event.total:
            self.events.append((time.monotonic(), event.done, event.total, event.eta_s))

    def check(self) -> list[str]:
        """At 10, 25, 50, 75% of the chunks this build asked (those found cached come at once, first): the
        ETA shown, and how far it was from when the extraction really ended."""
        asked = [e for e in self.events if e[3] is not None]
        if not asked:
            return ["no ETA shown (nothing asked, or too little to estimate)"]
        end, base = self.events[-1][0], self.events[0][1] if self.events[0][3] is None else 0
        out, seen = [], set()
        for share in (0.10, 0.25, 0.50, 0.75):
            hit = next((e for e in asked if e[1] - base >= share * (e[2] - base)), None)
            if hit is None or hit[1] in seen or hit[1] >= hit[2]:
                continue
            seen.add(hit[1])
            t, done, total, eta = hit
            actual = end - t
            error = (eta - actual) / actual if actual > 0 else 0.0
            out.append(f"at {done}/{total} chunks: ETA {eta:.0f}s, the extraction ended {actual:.0f}s later "
                       f"({error:+.0%})")
        return out or ["no ETA shown before the end"]


# ----------------------------------------------------------------------------- retrieval
def retrieval(settings: Settings, questions: list[dict[str, Any]], built: set[str]) -> tuple[list[str], dict[str, float]]:
    from graphrag_got.graph.db import connect
    from graphrag_got.search.local import local_search

    asked = [q for q in questions if all(n in built for n in q["needs"])]
    found: dict[str, list[float]] = {"hybrid": [], "vector": []}
    rows = []
    driver = connect(settings.neo4j)
    try:
        for q in asked:
            cells = []
            for mode in found:
                res = local_search(driver, settings.neo4j, q["question"], answer=False, llm_anchors=False, retrieval=mode,
                                   search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
                docs = {document_of(c) for c in res.chunk_ids[:K]}
                hit = float(all(n in docs for n in q["needs"]))
                found[mode].append(hit)
                cells.append(f"{mode} {'yes' if hit else 'no'}")
            rows.append(f"  {q['id']} ({q['class']}): " + ", ".join(cells) + f" · {q['needs'][0]}")
    finally:
        driver.close()
    means = {m: (sum(v) / len(v) if v else 0.0) for m, v in found.items()}
    head = [f"retrieval: {len(asked)} of {len(questions)} questions have their note in the built vault; needed note "
            f"found at {K}: hybrid {means['hybrid']:.2f}, vector only {means['vector']:.2f}"
            + (" (hybrid >= vector)" if means["hybrid"] >= means["vector"] else " (HYBRID BELOW VECTOR)")]
    return head + rows, means


# ----------------------------------------------------------------------------- term typing
def typing_precision(settings: Settings, labels: Path) -> list[str]:
    """Precision of the build's stored term types on the labelled terms: of the terms given a class, those whose
    class the label accepts. A labelled term the build did not type (no longer a candidate of the finder, or of
    notes left out of a sample) is typed now, with the same prompt and batch size, and counted apart."""
    from graphrag_got.extract.terms.find import FoundTerm, TermSource
    from graphrag_got.extract.terms.type_terms import TermTypeCache, type_terms
    from graphrag_got.llm.factory import get_chat_model, model_label
    from graphrag_got.llm.server import scope
    from graphrag_got.ontology.model import Ontology

    doc = json.loads(labels.read_text(encoding="utf-8"))
    onto = Ontology.from_file(ROOT / doc["ontology"])
    cache = TermTypeCache(settings.files.cache_dir, model_label(settings.llm, "llamacpp"), onto)
    items = [(FoundTerm(t["term"], TermSource(t["source"]), t["context"]), set(t["accept"])) for t in doc["terms"]]
    missing = [term for term, _ in items if not cache.type_of(term.key)[0]]
    extra = ""
    if missing:
        with scope():
            t0 = time.monotonic()
            run = type_terms(get_chat_model(settings.llm, "llamacpp", files=settings.files), onto, missing, cache,
                             batch=settings.extract.term_typing_batch, workers=1)
            extra = (f"; {len(missing)} labelled term(s) the build did not type were typed now ({run.calls} call(s), "
                     f"{time.monotonic() - t0:.0f}s)")
    rows, typed, right, none_right = [], 0, 0, 0
    for term, accept in items:
        cls = cache.type_of(term.key)[1] or "none"
        ok = cls in accept
        typed += cls != "none"
        right += ok and cls != "none"
        none_right += ok and cls == "none"
        rows.append(f"  {'ok ' if ok else 'BAD'} {term.name!r} -> {cls} (accepts {'|'.join(sorted(accept))})")
    head = [f"typed {typed} of {len(items)} labelled terms; precision {right}/{typed} = {right / max(1, typed):.2f} "
            f"(target >= 0.80); answered none {len(items) - typed}, of which right {none_right}; all answers right "
            f"{right + none_right}/{len(items)}{extra}"]
    return head + rows


# ----------------------------------------------------------------------------- entity F1
def entity_f1(model_settings: Settings, names: list[str], limit: int | None, work: Path) -> list[str]:
    """Entity F1 of the mentions strategy (the model) and of the generate strategy (its recording) per corpus."""
    from benchmarks.extract_speed import _gold_for
    from benchmarks.quality.ladder import CORPORA
    from benchmarks.quality.score import read_extraction_file, score
    from graphrag_got.extract.run import run_extraction
    from graphrag_got.ingest.chunking import read_corpus
    from graphrag_got.ontology.model import Ontology

    lines = ["| corpus | chunks | mentions entity F1 exact | tolerant | generate entity F1 exact | tolerant | "
             "mentions s/chunk |", "| --- | --- | --- | --- | --- | --- | --- |"]
    by_name = {c.name: c for c in CORPORA}
    for name in names:
        spec = by_name.get(name)
        if spec is None:
            raise SystemExit(f"--f1: unknown corpus {name!r}; known: {', '.join(by_name)}")
        corpus = spec.corpus
        if limit:
            corpus = _first_chunks(spec.corpus, limit, work / name / "corpus", spec.settings)
        onto = Ontology.from_file(spec.ontology)
        gold_all = read_extraction_file(spec.gold)
        scores = {}
        seconds = 0.0
        for strategy in ("mentions", "generate"):
            folder = work / name / strategy
            if strategy == "mentions":
                settings = model_settings.with_overrides(home=folder / "home", out_dir=folder / "out",
                                                         extraction="mentions", **spec.settings)
            else:
                settings = Settings(home=folder / "home", out_dir=folder / "out", llm_provider="replay",
                                    replay_file=spec.replay, extraction="generate").with_overrides(**spec.settings)
            t = time.monotonic()
            summary = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
            if strategy == "mentions":
                seconds = (time.monotonic() - t) / max(1, summary.chunks)
            pred = read_extraction_file(summary.out_path)
            ids = {c["id"] for c in pred.get("chunks", [])}
            gold = _gold_for(gold_all, ids) if limit else gold_all
            q = score(pred, gold, onto)
            scores[strategy] = (q.exact.entities.f1, q.tolerant.entities.f1)
        chunks = len([c for d in read_corpus(corpus, min_chars=40, max_chars=spec.settings.get("chunk_max_chars", 1500))
                      for c in d.chunks])
        lines.append(f"| {name} | {chunks} | {scores['mentions'][0]:.2f} | {scores['mentions'][1]:.2f} | "
                     f"{scores['generate'][0]:.2f} | {scores['generate'][1]:.2f} | {seconds:.1f} |")
    return lines


def _first_chunks(corpus: Path, limit: int, dest: Path, settings: dict[str, Any]) -> Path:
    """A copy of ``corpus`` holding its first ``limit`` chunks (paragraphs of its files, in file order)."""
    from graphrag_got.ingest.chunking import read_corpus

    docs = read_corpus(corpus, min_chars=40, max_chars=settings.get("chunk_max_chars", 1500))
    dest.mkdir(parents=True, exist_ok=True)
    left = limit
    for d in docs:
        if left <= 0:
            break
        kept = d.chunks[:left]
        left -= len(kept)
        (dest / d.document.id).write_text("\n\n".join(c.text for c in kept) + "\n", encoding="utf-8")
    return dest if corpus.is_dir() else dest / docs[0].document.id


# ----------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", type=Path, default=VAULT, help=f"the vault folder (default {VAULT})")
    ap.add_argument("--sample", type=int, help="build only N notes (the time of all is extrapolated)")
    ap.add_argument("--model", default=None, help="embedded model (default: GRAPHRAG_LLAMACPP_MODEL)")
    ap.add_argument("--strategy", default="auto", choices=["auto", "mentions", "generate", "classify", "terms"])
    typing_flags = ap.add_mutually_exclusive_group()
    typing_flags.add_argument("--typing", action="store_true", help="terms: type the shared terms (GRAPHRAG_TERM_TYPING=true)")
    typing_flags.add_argument("--no-typing", action="store_true", help="terms: type no term (GRAPHRAG_TERM_TYPING=false)")
    ap.add_argument("--labels", type=Path, default=LABELS,
                    help=f"terms with typing: the labelled terms whose typing precision is scored (default {LABELS.name})")
    ap.add_argument("--batch-chars", type=int, help="GRAPHRAG_MENTIONS_BATCH_CHARS for this run")
    ap.add_argument("--daily", type=int, default=20, help="notes edited by the daily update (default 20)")
    ap.add_argument("--communities", action="store_true", help="also detect communities and write their reports")
    ap.add_argument("--f1", default="got,observatory", help="ladder corpora for the entity F1 comparison ('' skips it)")
    ap.add_argument("--f1-limit", type=int, help="first N chunks of each F1 corpus (the gold cut to them)")
    ap.add_argument("--seed", type=int, default=39)
    ap.add_argument("--workdir", type=Path, help="keep the copy, caches and outputs here (a new folder)")
    ap.add_argument("--out", type=Path, help="also write the report to this file")
    args = ap.parse_args(argv)
    if not args.vault.is_dir():
        ap.error(f"no vault at {args.vault}: clone it first (see the module docstring)")
    if args.workdir is not None and args.workdir.exists():
        ap.error(f"--workdir {args.workdir} exists already: give a new folder")
    from graphrag_got.commands.render import LineRenderer
    from graphrag_got.graph.db import connect
    from graphrag_got.pipeline.build import run_build

    lines: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        lines.append(line)

    qdoc = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    questions = qdoc["questions"]
    all_notes = notes_of(args.vault)
    chosen = sample_notes(all_notes, [n for q in questions for n in q["needs"]], args.sample, args.seed)
    base = Settings.load()
    model = args.model or base.llm.llamacpp_model
    say(f"vault: {args.vault}: {vault_source(args.vault, qdoc.get('vault', {}))}")
    say(f"machine: {os.cpu_count()} CPUs, load average at start {os.getloadavg()[0]:.1f}; server "
        f"{os.environ.get('NEO4J_URI', 'default')}; model {model} (embedded llama.cpp); strategy {args.strategy}")
    with (contextlib.nullcontext(str(args.workdir)) if args.workdir else
          tempfile.TemporaryDirectory(prefix="vault-live-")) as tmp:
        work = Path(tmp)
        vault = work / "vault"
        vault.mkdir(parents=True)
        chars = copy_notes(args.vault, chosen, vault)
        all_chars = sum(len((args.vault / n).read_text(encoding="utf-8")) for n in all_notes)
        say(f"notes: {len(chosen)} of {len(all_notes)} built ({chars:,} of {all_chars:,} characters)"
            + (f", a sample (--sample {args.sample}: the questions' notes first, then seed {args.seed})"
               if len(chosen) < len(all_notes) else ""))
        overrides: dict[str, Any] = {"home": work / "home", "out_dir": work / "out", "ontology_path": ONTOLOGY,
                                     "corpus_path": vault, "llm_provider": "llamacpp", "llamacpp_model": model,
                                     "models_path": base.models_dir.resolve(), "extraction": args.strategy}
        if args.batch_chars is not None:
            overrides["mentions_batch_chars"] = args.batch_chars
        if args.typing or args.no_typing:
            overrides["term_typing"] = bool(args.typing)
        settings = base.with_overrides(**overrides)
        driver = connect(settings.neo4j)
        clear(driver, settings.neo4j.database)
        driver.close()
        echo = LineRenderer(lambda s: print("   " + s, flush=True), min_interval=30.0)
        steps: dict[str, dict[str, Any]] = {}
        for step in ("first build", "daily update"):
            if step == "daily update":
                edits = daily_edits(vault, chosen, args.daily, args.seed)
                say(f"\n## daily update: {len(edits)} notes edited")
                for e in edits:
                    say(f"  edit {e}")
            else:
                say("\n## first build")
            eta = EtaLog(echo)
            load0, t0 = os.getloadavg()[0], time.monotonic()
            res = run_build(settings, vault, communities=args.communities, say=lambda line: say("  " + line),
                            progress=eta)
            wall = time.monotonic() - t0
            echo.close()
            n = len(chosen) if step == "first build" else len(edits)
            calls = res.total_llm_calls
            steps[step] = {"wall": wall, "extract": res.timings.get("extract", 0.0), "notes": n}
            say(f"{step}: {wall:.1f}s wall for {n} notes ({n / wall:.3f} notes/s); LLM calls {calls} "
                f"({', '.join(f'{k} {v}' for k, v in res.llm_calls.items())}); tokens in/out {res.tokens[0]}/"
                f"{res.tokens[1]} (extraction); load average {load0:.1f} -> {os.getloadavg()[0]:.1f}")
            say("  per step (s): " + ", ".join(f"{k} {v:.1f}" for k, v in res.timings.items()))
            for line in eta.check():
                say(f"  ETA check: {line}")
        first = steps["first build"]
        if len(chosen) < len(all_notes):
            scale = all_chars / max(1, chars)
            est = first["extract"] * scale + (first["wall"] - first["extract"]) * len(all_notes) / len(chosen)
            say(f"\nall {len(all_notes)} notes, EXTRAPOLATED from the sample (extraction at the sample's pace per "
                f"character, the other steps per note), not measured: first build ~{est:.0f}s "
                f"({len(all_notes) / est:.3f} notes/s)")
        if args.strategy in ("terms", "auto") and settings.extract.term_typing and args.labels:
            say(f"\n## term typing precision on the labelled sample ({args.labels.name})")
            for line in typing_precision(settings, args.labels):
                say(line)
        say("")
        rows, _ = retrieval(settings, questions, set(chosen))
        for line in rows:
            say(line)
        names = [x.strip() for x in args.f1.split(",") if x.strip()]
        if names:
            say(f"\n## entity F1 on the ladder corpora: mentions with {model} against generate (recorded answers "
                f"of qwen2.5-coder-1.5b, replayed){f'; first {args.f1_limit} chunks of each' if args.f1_limit else ''}\n")
            for line in entity_f1(settings, names, args.f1_limit, work / "f1"):
                say(line)
    say(f"\nload average at the end {os.getloadavg()[0]:.1f} (a shared machine slows every step)")
    if args.out:
        write_text_atomic(args.out, "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
