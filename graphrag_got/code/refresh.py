"""`graphrag-got code refresh`: keep a code graph fresh per commit, re-extracting only what changed.

The graph must equal what a full re-extraction gives, and a call's resolution is global (a function
renamed in one file changes the edges of its callers in others), so a refresh

1. parses again only the files whose bytes changed: every other file's parse is taken from the
   parse cache beside the extraction file (``<extraction>.facts``, written by the previous refresh;
   with ``--since REV`` the files git does not list as changed are not even read);
2. resolves the whole tree again from those parses (a fraction of a second for click's 71 files)
   and builds the extraction exactly as ``extract --extractor code`` does, keeping the coverage
   evidence of the previous extraction as it was recorded (``--coverage FILE`` replaces it with a
   new run's): the result is byte for byte the full extraction's, save its ``created`` time. The
   validation of that evidence is done once and kept beside the extraction file
   (``<extraction>.evidence``, :mod:`graphrag_got.code.evidence_memo`): a refresh keeping it as
   recorded validates only the code's own chunks;
3. writes it and loads it: ``load`` rewrites only the documents whose hash changed (the touched
   files, and the files whose resolved calls changed with them), removes the documents of deleted
   files (a rename is a deletion and an addition) and skips the rest.

The parse cache is a pickle of this tool's own parse results, read only from beside the extraction
file and only when its header names this extractor version; anything else there is ignored and the
tree parsed again (the evidence memo follows the same rules, and its key covers every input of the
work it keeps). ``--no-cache`` uses neither. Without a previous extraction the refresh is a full
extraction and load.
"""

from __future__ import annotations

import logging
import pickle
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from graphrag_got.code import gitdiff
from graphrag_got.code import vocabulary as v
from graphrag_got.code.evidence_memo import SUFFIX as MEMO_SUFFIX, EvidenceMemo
from graphrag_got.code.coverage import (AMBIGUOUS_FILE, DOCUMENT_PREFIX, RECORDED_DOCUMENT, UNMATCHED_CONTEXT,
                                        UNMATCHED_FILE, EvidenceDocument)
from graphrag_got.code.extractor import (EXTRACTOR_VERSION, build_code_extraction, check_ontology, in_tree, parse_tree,
                                         pytest_nodeid)
from graphrag_got.code.parse import FileFacts
from graphrag_got.code.resolve import resolve
from graphrag_got.common.files import write_bytes_atomic
from graphrag_got.common.memory import gc_paused
from graphrag_got.common.progress import ProgressCallback
from graphrag_got.errors import ExtractionFileError
from graphrag_got.extract.extraction import ChunkRecord, Extraction, SkippedFile
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)

CACHE_SUFFIX = ".facts"
_CACHE_HEADER = f"graphrag_got.code.parse-cache/{EXTRACTOR_VERSION}/1\n".encode()
COVERAGE_REASONS = (UNMATCHED_CONTEXT, UNMATCHED_FILE, AMBIGUOUS_FILE)


class ParseCache:
    """rel path -> (sha256, module, is_package, facts) of the last refresh (see the module docstring)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.entries: dict[str, tuple[str, str, bool, FileFacts]] = {}
        self.reused = self.parsed = 0
        if path is None or not path.is_file():
            return
        try:
            blob = path.read_bytes()
            if blob.startswith(_CACHE_HEADER):
                self.entries = pickle.loads(blob[len(_CACHE_HEADER):])
        except Exception as exc:  # a truncated or foreign file: parse again
            logger.warning("%s: parse cache unreadable (%s): every file is parsed again", path, exc)
            self.entries = {}

    def get(self, rel: str, module: str, is_package: bool, sha256: str | None) -> FileFacts | None:
        entry = self.entries.get(rel)
        if entry is None or entry[1] != module or entry[2] != is_package or (sha256 is not None and entry[0] != sha256):
            return None
        self.reused += 1
        return entry[3]

    def put(self, rel: str, sha256: str, facts: FileFacts) -> None:
        self.parsed += 1
        self.entries[rel] = (sha256, facts.module, facts.is_package, facts)

    def save(self, files: list[FileFacts]) -> None:
        if self.path is None:
            return
        keep = {f.path for f in files}
        entries = {rel: e for rel, e in self.entries.items() if rel in keep}
        write_bytes_atomic(self.path, _CACHE_HEADER + pickle.dumps(entries, protocol=pickle.HIGHEST_PROTOCOL))


@dataclass
class RefreshSummary:
    out_path: Path
    root: Path
    full: bool  # no previous extraction: a full extraction
    since: str | None
    touched: list[str] = field(default_factory=list)  # files git lists (with --since)
    parsed: int = 0
    reused: int = 0
    files: int = 0
    documents_changed: list[str] = field(default_factory=list)  # code documents whose hash changed
    documents_removed: list[str] = field(default_factory=list)
    coverage: str = "none"  # kept | replaced | none
    seconds: float = 0.0
    load: Any = None  # LoadSummary, when loaded

    def lines(self) -> list[str]:
        how = "full extraction (no previous one)" if self.full else (
            f"since {self.since}: git lists {len(self.touched)} changed file(s)" if self.since else
            "files compared by content")
        out = [f"refreshed {self.out_path} from {self.root}: {how}",
               f"  python files {self.files}: parsed {self.parsed}, taken from the parse cache {self.reused}",
               f"  documents changed {len(self.documents_changed)}"
               + (f" ({', '.join(self.documents_changed[:6])}{' ...' if len(self.documents_changed) > 6 else ''})"
                  if self.documents_changed else "")
               + f", removed {len(self.documents_removed)}"
               + (f" ({', '.join(self.documents_removed[:6])})" if self.documents_removed else ""),
               f"  coverage evidence: {self.coverage}"]
        if self.load is not None:
            s = self.load
            out.append(f"  load: {s.documents_added} added, {s.documents_updated} updated, {s.documents_unchanged} "
                       f"unchanged, {s.documents_pruned} removed; {s.relations_written} relations written, "
                       f"{s.relations_pruned} pruned, {s.entities_pruned} entities pruned ({s.seconds:.2f} s)")
        out.append(f"  {self.seconds:.2f} s")
        return out


def kept_evidence(prev: Extraction) -> tuple[list[EvidenceDocument], list[SkippedFile]]:
    """The coverage documents of an earlier extraction, each chunk with the answer it was built from
    (rebuilt from the records: the EXECUTES facts of the chunk and, for the recorded state, the
    entities it lists with their ``recorded_*`` properties, in the order its text lists them)."""
    docs = [d for d in prev.documents if d.id.startswith(DOCUMENT_PREFIX)]
    if not docs:
        return [], []
    wanted = {d.id for d in docs}
    chunks: dict[str, list[ChunkRecord]] = {d: [] for d in wanted}
    for c in prev.chunks:
        if c.document_id in wanted:
            chunks[c.document_id].append(c)
    rels: dict[str, list[dict[str, Any]]] = {}
    for r in prev.relations:
        for cid in r.chunk_ids:
            rels.setdefault(cid, []).append({"relation": r.relation, "subject": r.subject, "subject_type": r.subject_type,
                                             "object": r.object, "object_type": r.object_type,
                                             "attributes": dict(r.attributes)})
    recorded: dict[str, dict[str, dict[str, Any]]] = {}
    for e in prev.entities:
        if "recorded_fingerprint" not in e.properties:
            continue
        props = {k: e.properties[k] for k in ("recorded_fingerprint", "recorded_start_line") if k in e.properties}
        for cid in e.chunk_ids:
            recorded.setdefault(cid, {})[e.name] = {"name": e.name, "type": e.type, "properties": props}
    out: list[EvidenceDocument] = []
    for d in docs:
        pairs: list[tuple[ChunkRecord, dict[str, Any]]] = []
        for c in sorted(chunks[d.id], key=lambda c: c.index):
            if d.id == RECORDED_DOCUMENT:
                listed = recorded.get(c.id, {})
                order = [line.strip().rsplit(" line ", 1)[0] for line in c.text.splitlines()[1:]]
                ents = [listed[n] for n in order if n in listed]
                pairs.append((c, {"entities": ents, "relations": []}))
                continue
            rows = rels.get(c.id, [])
            ents: list[dict[str, Any]] = []
            seen: set[tuple[str, str]] = set()
            for r in rows:
                for name, typ in ((r["subject"], r["subject_type"]), (r["object"], r["object_type"])):
                    if (typ, name) not in seen:
                        seen.add((typ, name))
                        ents.append({"name": name, "type": typ, "properties": {}})
            pairs.append((c, {"entities": ents, "relations": rows}))
        out.append((d, pairs))
    return out, [s for s in prev.skipped_files if s.reason in COVERAGE_REASONS]


def refresh(onto: Ontology, root: str | Path, out_path: str | Path, *, since: str | None = None,
            coverage: Sequence[str | Path] = (), use_cache: bool = True, progress: ProgressCallback | None = None,
            max_file_bytes: int = 2_000_000, max_file_seconds: float = 20.0,
            follow_outside_links: bool = False) -> tuple[Extraction, RefreshSummary]:
    """Re-extract the tree ``root`` into ``out_path`` reusing what did not change (module docstring);
    returns the written extraction and what was done (the caller loads it)."""
    with gc_paused():  # ~10^5 records read, validated and aggregated: see common.memory (halves the CPU time)
        return _refresh(onto, Path(root), Path(out_path), since=since, coverage=coverage, use_cache=use_cache,
                        progress=progress, max_file_bytes=max_file_bytes, max_file_seconds=max_file_seconds,
                        follow_outside_links=follow_outside_links)


def _refresh(onto: Ontology, root: Path, out_path: Path, *, since: str | None, coverage: Sequence[str | Path],
             use_cache: bool, progress: ProgressCallback | None, max_file_bytes: int, max_file_seconds: float,
             follow_outside_links: bool) -> tuple[Extraction, RefreshSummary]:
    t0 = time.perf_counter()
    check_ontology(onto)
    prev = _previous(out_path)
    summary = RefreshSummary(out_path=out_path, root=root, full=prev is None, since=since)
    trusted = None
    if since is not None:
        old = gitdiff.commit(root, since)
        gitdiff.prefix(root)
        changed = gitdiff.changed_files(root, old, None)
        summary.touched = sorted({p for f in changed for p in (f.old_path, f.new_path) if p and in_tree(p)})
        touched = set(summary.touched)
        trusted = lambda rel: rel not in touched  # noqa: E731 - a one-line predicate
    cache = ParseCache(out_path.with_name(out_path.name + CACHE_SUFFIX) if use_cache else None)
    files, skipped = parse_tree(root, progress, max_bytes=max_file_bytes, max_seconds=max_file_seconds,
                                follow_outside_links=follow_outside_links, cache=cache, trusted=trusted)
    summary.files, summary.parsed, summary.reused = len(files), cache.parsed, cache.reused
    resolved = resolve(files)
    if coverage:
        from graphrag_got.code.coverage import coverage_evidence

        evidence = coverage_evidence(root, resolved, coverage, pytest_nodeid)
        docs, records, summary.coverage = evidence.documents, evidence.records, "replaced by " + ", ".join(map(str, coverage))
    elif prev is not None:
        docs, records = kept_evidence(prev)
        summary.coverage = f"kept as recorded ({len(docs)} document(s))" if docs else "none"
    else:
        docs, records = [], []
    memo = EvidenceMemo(out_path.with_name(out_path.name + MEMO_SUFFIX) if use_cache else None)
    ext = build_code_extraction(onto, root, resolved, docs, memo)
    if docs:
        summary.coverage += ("; validated at an earlier refresh (memo)" if memo.reused else
                             "; validated (memo written)" if use_cache else "; validated")
    ext.skipped_files = [SkippedFile(path=x.path, reason=x.reason, message=x.message) for x in skipped] + records
    ext.recount()
    before = {d.id: d.hash for d in prev.documents} if prev is not None else {}
    summary.documents_changed = [d.id for d in ext.documents if before.get(d.id) != d.hash]
    now = {d.id for d in ext.documents}
    summary.documents_removed = sorted(d for d in before if d not in now)
    ext.write(out_path)
    cache.save(files)
    memo.save()
    summary.seconds = time.perf_counter() - t0
    logger.info("refresh of %s: %d parsed, %d reused, %d documents changed, %d removed", root, summary.parsed,
                summary.reused, len(summary.documents_changed), len(summary.documents_removed))
    return ext, summary


def _previous(out_path: Path) -> Extraction | None:
    if not out_path.is_file():
        return None
    prev = Extraction.read(out_path)
    if prev.llm.provider != "code":
        raise ExtractionFileError(f"{out_path}: not a code extraction (written by the {prev.llm.provider!r} "
                                  "extractor); give `code refresh -o` the file `extract --extractor code` wrote, or "
                                  "a new path for a first full extraction.")
    if any(e.type not in v.CLASSES for e in prev.entities[:100]):
        logger.warning("%s holds entities of classes the code extractor does not write", out_path)
    return prev
