"""``graphrag-got extract --extractor code REPO``: a Python tree -> ``extraction.json``, without an LLM.

The output is the same contract as the LLM extraction (:class:`graphrag_got.extract.extraction.Extraction`):

* documents are the ``.py`` files (id = path relative to the root, POSIX);
* chunks are the file's top-level definitions and the runs of module-level statements between them
  (character offsets into the file; ``heading`` = the definition's qualified name);
* for every chunk we build the answer an extractor would give (entities with their properties,
  relations with their source lines) and pass it through the one
  :class:`~graphrag_got.extract.validate.Validator` and :func:`~graphrag_got.extract.aggregate.aggregate`, so the
  ontology is enforced and refusals are audited exactly as for model answers.

A document's ``hash`` covers the file's bytes *and* the facts extracted from it: a call in an
unchanged file may resolve differently when another file changes (a callee renamed or moved), and
``load``, which reloads only documents whose hash changed, must then reload that file too. The
plain sha256 of the bytes is kept in the document's metadata and on the File entity.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
import tokenize
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import metadata as importlib_metadata
from io import BytesIO
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from graphrag_got.errors import CorpusError, OntologyError
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, Extraction, LLMRef, OntologyRef, Rejection
from graphrag_got.ontology.model import Ontology
from graphrag_got.common.progress import ProgressCallback, ProgressEvent
from graphrag_got.extract.validate import Validator
from graphrag_got.extract.aggregate import Aggregator, identity_attributes
from graphrag_got.extract.recheck import seal
from graphrag_got.code import vocabulary as v
from graphrag_got.code.parse import Definition, FileFacts, ParseBudgetExceeded, parse_file
from graphrag_got.common.walk import SkippedInput, walk_files
from graphrag_got.extract.extraction import SkippedFile
from graphrag_got.code.resolve import CallCounts, ResolvedFile, entity_class, resolve, unique_module_names
from graphrag_got.code.symbols import RESOLUTIONS
from graphrag_got.code.lines import fingerprint
from graphrag_got.code.evidence_memo import EvidenceMemo, KeptEvidence

logger = logging.getLogger(__name__)

EXTRACTOR_VERSION = "code-python-v1"
LANGUAGE = "python"
#: Folders never walked: hidden ones (.git, .venv), caches, build output, installed packages.
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "site-packages", "build", "dist", "venv"})


@dataclass
class CodeExtractionSummary:
    out_path: Path
    root: Path
    files: int
    skipped_files: list[str]
    files_with_syntax_errors: list[str]
    chunks: int
    entities_by_class: dict[str, int]
    relations_by_type: dict[str, int]
    calls_resolved: int
    calls_external: int
    calls_unresolved: int
    rejected_relations: int
    rejected_entities: int
    by_reason: dict[str, int]
    seconds: float
    parse_seconds: float
    extra: dict[str, Any] = field(default_factory=dict)
    calls_by_resolution: dict[str, int] = field(default_factory=dict)  # resolved call sites per resolution
    dispatch_edges: int = 0
    fixture_links: int = 0

    @property
    def call_sites(self) -> int:
        return self.calls_resolved + self.calls_external + self.calls_unresolved

    def _resolution_shares(self) -> str:
        total = self.call_sites or 1
        return " · ".join(f"{k} {n} ({100 * n / total:.0f}%)" for k, n in self.calls_by_resolution.items()) or "none"

    def lines(self) -> list[str]:
        ents = " · ".join(f"{k} {n}" for k, n in self.entities_by_class.items())
        rels = " · ".join(f"{k} {n}" for k, n in self.relations_by_type.items())
        out = [
            f"extraction written to {self.out_path}",
            f"  root {self.root} · python files {self.files} · chunks {self.chunks} · extractor {EXTRACTOR_VERSION} "
            "(tree-sitter, no LLM call)",
            f"  entities: {ents or 'none'}",
            f"  relations: {rels or 'none'}",
            f"  call sites {self.call_sites}: resolved in the tree {self.calls_resolved} · external (builtins, "
            f"stdlib, third party) {self.calls_external} · unresolved {self.calls_unresolved} (counted on each "
            "Function as unresolved_calls, never guessed)",
            f"  resolved by: {self._resolution_shares()} · may dispatch to overrides (MAY_CALL) {self.dispatch_edges} "
            f"· fixture parameters linked {self.fixture_links}",
            f"  refused by the ontology: relations {self.rejected_relations} · entities {self.rejected_entities}",
        ]
        if self.by_reason:
            out.append("  refusals by reason: " + ", ".join(f"{k} {n}" for k, n in self.by_reason.items()))
        if self.files_with_syntax_errors:
            out.append(f"  files with syntax errors (partly extracted): {len(self.files_with_syntax_errors)}: "
                       + ", ".join(self.files_with_syntax_errors[:5]))
        if self.skipped_files:
            out.append(f"  files skipped (outside the folder, too large, too slow or not Python source; listed under "
                       f"skipped_files in the file): {len(self.skipped_files)}: "
                       + ", ".join(self.skipped_files[:5]))
        out.append(f"  {self.seconds:.2f}s (parsing and resolution {self.parse_seconds:.2f}s)")
        return out


def tree_sitter_label() -> str:
    try:
        return f"tree-sitter-python {importlib_metadata.version('tree-sitter-python')}"
    except importlib_metadata.PackageNotFoundError:  # pragma: no cover - a broken install
        return "tree-sitter-python"


def check_ontology(onto: Ontology) -> None:
    """Refuse an ontology that declares none of the code classes (the usual mistake: the default one)."""
    if not any(c in onto.classes for c in v.CLASSES):
        raise OntologyError(
            f"{onto.source}: the code extractor writes the classes {', '.join(v.CLASSES)} and this ontology "
            f"declares none of them (it has {', '.join(onto.classes)}). Pass --ontology ontology/code.json "
            "(or an ontology derived from it) to extract, load and ask.", path=onto.source)
    missing = [c for c in v.CLASSES if c not in onto.classes] + [r for r in v.RELATIONS if onto.relation(r) is None]
    if missing:
        logger.warning("%s does not declare %s: those facts will be refused and listed in the report",
                       onto.source, ", ".join(missing))


def python_files(root: Path, *, follow_outside_links: bool = False,
                 skipped: list[SkippedInput] | None = None) -> list[Path]:
    """Every ``*.py`` under ``root`` (or ``root`` itself), sorted, skipping :data:`SKIP_DIRS` and hidden folders.

    Nothing outside ``root`` is read: a link leaving it (``pkg/passwd.py -> /etc/passwd``), a broken
    link or a non-regular file is appended to ``skipped`` with a warning
    (:func:`graphrag_got.common.walk.walk_files`) unless ``follow_outside_links``."""
    if root.is_file():
        return [root]
    found = walk_files(root, wanted=lambda name: name.endswith(".py"), prune=pruned,
                       follow_outside_links=follow_outside_links, skipped=skipped)
    return [path for _, path in found]


def pruned(folder: str) -> bool:
    """A folder name the walk does not enter (hidden, :data:`SKIP_DIRS`, ``*.egg-info``)."""
    return folder.startswith(".") or folder in SKIP_DIRS or folder.endswith(".egg-info")


def in_tree(rel: str) -> bool:
    """Whether the walk of :func:`python_files` reads the file at ``rel`` (a POSIX path under the root)."""
    parts = rel.split("/")
    return rel.endswith(".py") and not any(pruned(p) for p in parts[:-1])


def read_source(path: Path) -> tuple[bytes, str]:
    """(UTF-8 bytes, text) of a source file, honouring a PEP 263 coding line; ValueError if unreadable."""
    return decode_source(path.read_bytes())


def decode_source(blob: bytes) -> tuple[bytes, str]:
    """(UTF-8 bytes, text) of a source file's bytes (see :func:`read_source`)."""
    if b"\x00" in blob:
        raise ValueError("binary content (NUL bytes)")
    try:
        text = blob.decode("utf-8-sig")
    except UnicodeDecodeError:
        try:
            encoding, _ = tokenize.detect_encoding(BytesIO(blob).readline)
            text = blob.decode(encoding)
        except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
            raise ValueError(f"not UTF-8 and no usable coding declaration ({exc})") from None
    return text.encode("utf-8"), text


class FactsCache(Protocol):
    """Parsed files kept from an earlier run (:class:`graphrag_got.code.refresh.ParseCache`)."""

    def get(self, rel: str, module: str, is_package: bool, sha256: str | None) -> FileFacts | None: ...

    def put(self, rel: str, sha256: str, facts: FileFacts) -> None: ...


def parse_tree(root: Path, progress: ProgressCallback | None = None, *, max_bytes: int = 2_000_000,
               max_seconds: float = 20.0, follow_outside_links: bool = False, cache: FactsCache | None = None,
               trusted: Callable[[str], bool] | None = None) -> tuple[list[FileFacts], list[SkippedInput]]:
    """Parse every Python file under ``root``; returns the facts and the files skipped (with why).

    A file larger than ``max_bytes`` (generated code) is skipped before it is read, and one whose
    parse takes more than ``max_seconds`` is abandoned, each with a record: memory and time per file
    stay bounded whatever the tree holds. With ``cache``, a file whose bytes (sha256) and module name
    are those of a cached parse is not parsed again, and one ``trusted`` says is unchanged (git says
    so) is taken from the cache without being read."""
    if not root.exists():
        raise CorpusError(f"{root}: not found; pass the folder (or .py file) of the code to extract.")
    skipped: list[SkippedInput] = []
    paths = python_files(root, follow_outside_links=follow_outside_links, skipped=skipped)
    if not paths:
        refused = f" ({len(skipped)} refused, first: {skipped[0].path}: {skipped[0].message})" if skipped else ""
        raise CorpusError(f"{root}: no .py file found (hidden folders and {', '.join(sorted(SKIP_DIRS))} are "
                          f"skipped){refused}; pass the root of a Python code base.")
    base = root if root.is_dir() else root.parent
    rels = [p.relative_to(base).as_posix() for p in paths]
    root_name = base.resolve().name
    names = unique_module_names(rels, root_name)
    files: list[FileFacts] = []

    def skip(rel: str, reason: str, message: str) -> None:
        logger.warning("%s: skipped: %s", rel, message)
        skipped.append(SkippedInput(rel, reason, message))

    for i, (p, rel) in enumerate(zip(paths, rels), 1):
        module, is_package = names[rel]
        kept = cache.get(rel, module, is_package, None) if cache is not None and trusted and trusted(rel) else None
        if kept is not None:
            files.append(kept)
            continue
        try:
            size = p.stat().st_size
            if size > max_bytes:
                skip(rel, "too_large", f"{size:,} bytes, more than the {max_bytes:,} read per file (generated code? "
                                       "raise GRAPHRAG_CODE_MAX_FILE_BYTES to read it)")
                continue
            source, text = read_source(p)
        except (OSError, ValueError) as exc:
            skip(rel, "unreadable", str(exc))
            continue
        digest = hashlib.sha256(source).hexdigest()
        kept = cache.get(rel, module, is_package, digest) if cache is not None else None
        if kept is not None:
            files.append(kept)
            continue
        try:
            facts = parse_file(rel, module, source, text, is_package=is_package, max_seconds=max_seconds)
        except ParseBudgetExceeded as exc:
            skip(rel, "too_slow", f"{exc} (raise GRAPHRAG_CODE_MAX_FILE_SECONDS to wait longer)")
            continue
        if facts.syntax_errors:
            logger.warning("%s: %d syntax error(s): extracted what parses", p, facts.syntax_errors)
        files.append(facts)
        if cache is not None:
            cache.put(rel, digest, facts)
        if progress is not None:
            progress(ProgressEvent(step="parse", done=i, total=len(paths), message=rel,
                                   stats={"definitions": sum(len(f.definitions) for f in files)},
                                   finished=i == len(paths)))
    return files, skipped


# ---------------------------------------------------------------------------- answers per chunk
def _entity_properties(rf: ResolvedFile, d: Definition) -> dict[str, str]:
    f = rf.facts
    props = {"path": f.path, "start_line": str(d.start_line), "end_line": str(d.end_line), "language": LANGUAGE,
             "signature": d.signature, "docstring": d.docstring,
             "fingerprint": fingerprint(f.text, d.start_line, d.end_line)}
    cls = entity_class(d)
    if cls == v.FUNCTION:
        props["kind"] = d.kind
    if cls == v.TEST:
        props["nodeid"] = pytest_nodeid(f.path, f.module, d.qualname)
    if cls in (v.FUNCTION, v.TEST):
        c = rf.calls.get(d.qualname)
        if c is not None:
            props.update(resolved_calls=str(c.resolved), external_calls=str(c.external),
                         unresolved_calls=str(c.unresolved))
    return {k: val for k, val in props.items() if val != ""}


def pytest_nodeid(path: str, module: str, qualname: str) -> str:
    local = qualname[len(module) + 1:] if module and qualname.startswith(module + ".") else qualname
    return "::".join([path, *local.split(".")])


def chunk_answers(rf: ResolvedFile) -> list[dict[str, Any]]:
    """The answer of each chunk of one file: ``{"entities": [...], "relations": [...]}``.

    Each definition is described (with its properties) in the chunk that holds it; the File in every
    chunk of the file; the other end of a relation appears by name and class in the chunk of the fact,
    so the validator finds both ends among the chunk's entities.
    """
    f = rf.facts
    file_props = {"path": f.path, "language": LANGUAGE, "module": f.module, "lines": str(f.lines),
                  "sha256": hashlib.sha256(f.source).hexdigest()}
    answers: list[dict[str, dict[tuple[str, str], dict[str, Any]] | list[dict[str, Any]]]] = [
        {"entities": {(v.FILE, f.path): {"name": f.path, "type": v.FILE, "properties": file_props}},
         "relations": []}
        for _ in f.segments]

    def mention(segment: int, end: tuple[str, str], properties: dict[str, str] | None = None) -> None:
        ents = answers[segment]["entities"]
        assert isinstance(ents, dict)
        if end not in ents or properties:
            ents[end] = {"name": end[1], "type": end[0], "properties": properties or {}}

    for d in f.definitions:
        mention(d.segment, (entity_class(d), d.qualname), _entity_properties(rf, d))
    for edge in rf.edges:
        mention(edge.segment, edge.subject)
        if edge.object[0] == v.MODULE:
            origin = rf.module_origins.get(edge.object[1])
            mention(edge.segment, edge.object, {"origin": origin} if origin else None)
        else:
            mention(edge.segment, edge.object)
        rels = answers[edge.segment]["relations"]
        assert isinstance(rels, list)
        rels.append({"relation": edge.relation, "subject": edge.subject[1], "subject_type": edge.subject[0],
                     "object": edge.object[1], "object_type": edge.object[0],
                     "attributes": {v.LINES: ", ".join(str(n) for n in sorted(edge.lines)),
                                    **({v.RESOLUTION: edge.resolution} if edge.resolution else {})}})
    out = []
    for a in answers:
        ents = a["entities"]
        assert isinstance(ents, dict)
        out.append({"entities": list(ents.values()), "relations": a["relations"]})
    return out


def _chunks(f: FileFacts) -> list[ChunkRecord]:
    records: list[ChunkRecord] = []
    seen: dict[str, int] = {}
    for index, seg in enumerate(f.segments):
        start, end = f.char_offset(seg.start_byte), f.char_offset(seg.end_byte)
        text = f.text[start:end]
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        cid = f"{f.path}:{digest[:12]}"
        seen[cid] = seen.get(cid, 0) + 1
        if seen[cid] > 1:
            cid = f"{cid}-{seen[cid]}"
        records.append(ChunkRecord(id=cid, document_id=f.path, index=index, start=start, end=end, hash=digest,
                                   text=text, heading=seg.heading))
    return records


def build_code_extraction(onto: Ontology, root: Path, resolved: list[ResolvedFile],
                          extra: Sequence[tuple[DocumentRecord, list[tuple[ChunkRecord, dict[str, Any]]]]] = (),
                          memo: EvidenceMemo | None = None) -> Extraction:
    """``extra``: further documents whose chunks come with their answers (coverage evidence), validated
    and merged first; ``memo``: where that work is kept between refreshes
    (:mod:`graphrag_got.code.evidence_memo`: reused when its inputs are the same, else done and kept)."""
    validator = Validator(onto)
    agg = Aggregator(identity_attributes(onto))
    rejections: list[Rejection] = []
    validated = 0
    documents: list[DocumentRecord] = []
    chunks: list[ChunkRecord] = []
    for doc, pairs in extra:
        documents.append(doc)
        chunks += [rec for rec, _ in pairs]
    kept = memo.get(onto, agg.identity, extra) if memo is not None and extra else None
    if kept is not None:
        agg, rejections, validated = kept.aggregator, kept.rejections, kept.chunks
    else:
        for doc, pairs in extra:
            for rec, answer in pairs:
                val = validator.validate(answer, rec.id, doc.id)
                agg.add(val)
                rejections += val.rejections
                validated += 1
        if memo is not None and extra:
            memo.keep(KeptEvidence(agg, rejections, validated))
    for rf in resolved:
        f = rf.facts
        answers = chunk_answers(rf)
        records = _chunks(f)
        file_hash = hashlib.sha256(f.source).hexdigest()
        facts_blob = json.dumps(answers, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        doc_hash = hashlib.sha256(f"{file_hash}\n{EXTRACTOR_VERSION}\n{facts_blob}".encode("utf-8")).hexdigest()
        documents.append(DocumentRecord(id=f.path, path=str(root / f.path) if root.is_dir() else str(root),
                                        hash=doc_hash, metadata={"sha256": file_hash, "language": LANGUAGE,
                                                                 "module": f.module}))
        chunks += records
        for rec, answer in zip(records, answers):
            val = validator.validate(answer, rec.id, f.path)
            agg.add(val)
            rejections += val.rejections
            validated += 1
    entities, relations = agg.result()
    ext = Extraction(
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        ontology=OntologyRef(path=onto.source, hash=onto.hash),
        llm=LLMRef(provider="code", model=tree_sitter_label()),
        prompt_version=EXTRACTOR_VERSION,
        documents=documents, chunks=chunks, entities=entities, relations=relations,
        rejections=rejections,
    )
    ext.recount()
    ext.counts.chunks_extracted = validated
    return seal(ext)  # every record is the validator's: load trusts them under this ontology


def run_code_extraction(onto: Ontology, root: str | Path, out_path: str | Path, *,
                        progress: ProgressCallback | None = None, max_file_bytes: int = 2_000_000,
                        max_file_seconds: float = 20.0, follow_outside_links: bool = False,
                        coverage: Sequence[str | Path] = ()) -> CodeExtractionSummary:
    """Parse, resolve, validate and write ``out_path``; returns what was found (and what was skipped:
    see :func:`parse_tree`). ``coverage``: data files whose per-test contexts become EXECUTES facts
    (:mod:`graphrag_got.code.coverage`; its report is ``extra["coverage"]`` of the summary)."""
    t0 = time.perf_counter()
    check_ontology(onto)
    root = Path(root)
    files, skipped = parse_tree(root, progress, max_bytes=max_file_bytes, max_seconds=max_file_seconds,
                                follow_outside_links=follow_outside_links)
    resolved = resolve(files)
    parse_seconds = time.perf_counter() - t0
    evidence = None
    if coverage:
        from graphrag_got.code.coverage import coverage_evidence

        evidence = coverage_evidence(root, resolved, coverage, pytest_nodeid)
    ext = build_code_extraction(onto, root, resolved, evidence.documents if evidence else ())
    ext.skipped_files = [SkippedFile(path=x.path, reason=x.reason, message=x.message) for x in skipped]
    ext.skipped_files += evidence.records if evidence else []
    ext.recount()
    out = ext.write(Path(out_path))
    by_class: dict[str, int] = {}
    for e in ext.entities:
        by_class[e.type] = by_class.get(e.type, 0) + 1
    by_type: dict[str, int] = {}
    for r in ext.relations:
        by_type[r.relation] = by_type.get(r.relation, 0) + 1
    counts = [c for rf in resolved for c in rf.calls.values()]
    c = ext.counts
    return CodeExtractionSummary(
        out_path=out, root=root, files=len(files), skipped_files=[f"{x.path} ({x.message})" for x in skipped],
        files_with_syntax_errors=[f.path for f in files if f.syntax_errors], chunks=c.chunks,
        entities_by_class={k: by_class[k] for k in sorted(by_class, key=_class_order)},
        relations_by_type={k: by_type[k] for k in sorted(by_type, key=_relation_order)},
        calls_resolved=sum(x.resolved for x in counts), calls_external=sum(x.external for x in counts),
        calls_unresolved=sum(x.unresolved for x in counts), rejected_relations=c.rejected_relations,
        rejected_entities=c.rejected_entities, by_reason=c.by_reason, seconds=time.perf_counter() - t0,
        parse_seconds=parse_seconds, calls_by_resolution=_by_resolution(counts),
        dispatch_edges=sum(x.dispatch_edges for x in counts), fixture_links=sum(x.fixture_links for x in counts),
        extra={"coverage": evidence.report} if evidence else {},
    )


def _by_resolution(counts: list[CallCounts]) -> dict[str, int]:
    out = {k: sum(c.by_resolution.get(k, 0) for c in counts) for k in RESOLUTIONS}
    return {k: n for k, n in out.items() if n}


def _class_order(name: str) -> tuple[int, str]:
    return (v.CLASSES.index(name) if name in v.CLASSES else len(v.CLASSES), name)


def _relation_order(name: str) -> tuple[int, str]:
    return (v.RELATIONS.index(name) if name in v.RELATIONS else len(v.RELATIONS), name)
