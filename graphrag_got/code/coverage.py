"""Dynamic evidence: a coverage.py data file with per-test contexts -> ``Test -EXECUTES-> Function``.

``extract --extractor code REPO --coverage .coverage`` reads the data file a test run wrote with
per-test contexts (``pytest --cov=PKG --cov-context=test``, or coverage's ``dynamic_context =
test_function``) through coverage.py's own API (:class:`coverage.CoverageData`), and turns it into
facts of the extraction:

* a context names a test: ``tests/test_x.py::TestA::test_b|run`` (pytest-cov; the ``|setup``,
  ``|run`` and ``|teardown`` phases of one test are one test, and the parametrized ``test_b[1]``,
  ``test_b[2]`` are the one function ``test_b``) or a dotted ``test_x.TestA.test_b`` (coverage's
  ``test_function``). It is matched to a Test node by its pytest node id, then by qualified name;
  a context naming a test inherited from another class (``TestSub::test_a`` defined in
  ``TestBase``) is matched by the lines it ran in its own file when they lie in exactly one test;
* a measured file is matched to a document of the tree by its path under the analysed root, or
  else by the longest unique tail of its path (the tests ran from another checkout or an
  installed copy);
* an executed line belongs to the innermost function or test whose *body* holds it: the lines of
  a ``def`` statement itself (decorators, signature, defaults) run when the function is defined,
  not when it is called, and count for the enclosing function (or for nothing at module level).

The evidence of the tests of one test file is one document (``coverage:tests/test_x.py``), one
chunk per test listing what it ran, so ``load`` (incremental per document hash) replaces a test
file's evidence when a newer data file changes it, keeps it untouched when it did not, and prunes
it when the data file no longer holds that file's tests. Every relation carries ``source =
coverage`` and the lines it ran. Contexts and files that match nothing are counted and listed
(:class:`CoverageReport`, and ``skipped_files`` records in the extraction), never dropped silently.
"""

from __future__ import annotations

import ast
import hashlib
import json
import logging
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Sequence

from graphrag_got.code import vocabulary as v
from graphrag_got.code.lines import fingerprint
from graphrag_got.code.parse import FileFacts
from graphrag_got.code.resolve import ResolvedFile, entity_class
from graphrag_got.errors import ConfigError, CorpusError
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, SkippedFile

logger = logging.getLogger(__name__)

DOCUMENT_PREFIX = "coverage:"
#: The document recording the state of the code the run measured (:func:`_recorded`).
RECORDED_DOCUMENT = DOCUMENT_PREFIX + "<recorded>"
#: Phases pytest-cov appends to a test's context.
PHASES = ("setup", "run", "teardown")
#: Reasons a context or measured file gives no evidence (counted in the report, one record each).
UNMATCHED_CONTEXT = "coverage_context_unmatched"
UNMATCHED_FILE = "coverage_file_unmatched"
AMBIGUOUS_FILE = "coverage_file_ambiguous"
EXAMPLES = 10

#: One extra document: its record and its chunks, each with the answer the validator checks.
EvidenceDocument = tuple[DocumentRecord, list[tuple[ChunkRecord, dict[str, Any]]]]


@dataclass(frozen=True)
class Span:
    """A function or test of the tree: the lines of its body (``body_start``..``end``)."""

    path: str
    name: str
    type: str
    start: int
    body_start: int
    end: int
    nodeid: str | None = None
    fingerprint: str = ""
    overload: bool = False  # a @typing.overload stub: never the definition its name stands for


@dataclass
class CoverageReport:
    """What a coverage import read, matched and could not match (printed by ``extract``)."""

    sources: list[str]
    contexts: int = 0  # test contexts read (the empty context, code run outside any test, excluded)
    contexts_matched: int = 0
    contexts_matched_by_lines: int = 0
    contexts_unmatched: list[str] = field(default_factory=list)
    files_measured: int = 0
    files_matched: int = 0
    files_unmatched: list[str] = field(default_factory=list)
    files_ambiguous: list[str] = field(default_factory=list)
    lines_outside_functions: int = 0  # (context, file, line) run by a test at module or class level
    tests: int = 0  # Test nodes with evidence
    functions: int = 0  # functions executed by at least one test
    relations: int = 0  # EXECUTES facts
    documents: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        out = [f"  coverage ({', '.join(self.sources)}): {self.contexts} test context(s), {self.contexts_matched} "
               f"matched to a test ({self.contexts_matched_by_lines} by the lines they ran), "
               f"{len(self.contexts_unmatched)} unmatched · files measured {self.files_measured}, matched "
               f"{self.files_matched}, unmatched {len(self.files_unmatched) + len(self.files_ambiguous)}",
               f"  coverage evidence: {self.relations} EXECUTES fact(s) from {self.tests} test(s) to {self.functions} "
               f"function(s) in {self.documents} document(s); {self.lines_outside_functions} executed line(s) lie "
               "outside any function (module or class level)"]
        if self.contexts_unmatched:
            out.append(f"  contexts matching no test ({len(self.contexts_unmatched)}; all under skipped_files in the "
                       "file): " + ", ".join(self.contexts_unmatched[:EXAMPLES]))
        if self.files_unmatched or self.files_ambiguous:
            shown = [*self.files_unmatched, *(f"{f} (ambiguous)" for f in self.files_ambiguous)]
            out.append(f"  measured files matching no file of the tree ({len(shown)}): " + ", ".join(shown[:EXAMPLES]))
        return out


# ---------------------------------------------------------------------------------- reading
def read_contexts(path: Path) -> dict[str, dict[str, set[int]]]:
    """``{context: {measured file: executed lines}}`` of one data file (coverage.py's API)."""
    try:
        import coverage  # imported here: only this command needs it
    except ImportError:
        raise ConfigError("--coverage reads coverage.py data files with coverage.py itself: "
                          "pip install 'graphrag_got[coverage]' (or coverage>=7.4).") from None

    if not path.is_file():
        raise CorpusError(f"{path}: coverage data file not found; run the tests with per-test contexts first, "
                          "e.g. `pytest --cov=PKG --cov-context=test` (it writes .coverage).")
    data = coverage.CoverageData(basename=str(path))
    try:
        data.read()
        files = sorted(data.measured_files())
        contexts = data.measured_contexts()
    except Exception as exc:  # coverage raises its DataError / sqlite errors for a file that is not its own
        raise CorpusError(f"{path}: not a coverage.py data file ({exc})") from exc
    if not files:
        raise CorpusError(f"{path}: the coverage data file measured no file.")
    if not contexts - {""}:
        raise CorpusError(f"{path}: the coverage data holds no per-test context; run the tests with "
                          "`pytest --cov=PKG --cov-context=test` (or coverage's dynamic_context = test_function).")
    out: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for f in files:
        for line, names in data.contexts_by_lineno(f).items():
            if line <= 0:
                continue
            for ctx in names:
                out[ctx][f].add(line)
    return out


# ---------------------------------------------------------------------------------- spans
def _body_starts(text: str) -> dict[int, int]:
    """First line (decorators included) -> first body line, of every def in ``text`` (stdlib ast)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    out: dict[int, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            out[first] = node.body[0].lineno
    return out


def spans_of(resolved: Sequence[ResolvedFile], nodeid: Callable[[str, str, str], str]) -> list[Span]:
    """The functions and tests of the tree with their body lines; ``nodeid(path, module, qualname)``."""
    spans: list[Span] = []
    for rf in resolved:
        f: FileFacts = rf.facts
        bodies = _body_starts(f.text)
        for d in f.definitions:
            cls = entity_class(d)
            if cls not in (v.FUNCTION, v.TEST):
                continue
            body = bodies.get(d.start_line, d.start_line)  # unknown (syntax error): the whole def
            spans.append(Span(f.path, d.qualname, cls, d.start_line, body, d.end_line,
                              nodeid(f.path, f.module, d.qualname) if cls == v.TEST else None,
                              fingerprint(f.text, d.start_line, d.end_line), d.overload))
    return spans


class _LineMap:
    """Line -> innermost function or test whose body holds it, for one file."""

    def __init__(self, spans: list[Span]) -> None:
        owner: dict[int, Span] = {}
        for s in sorted(spans, key=lambda s: (s.start, -s.end)):  # outer first: inner ones paint over
            for line in range(s.body_start, s.end + 1):
                owner[line] = s
        self.owner = owner

    def get(self, line: int) -> Span | None:
        return self.owner.get(line)


# ---------------------------------------------------------------------------------- matching
def _match_files(measured: Iterable[str], root: Path, documents: set[str], report: CoverageReport) -> dict[str, str]:
    """Measured file -> document path: under ``root``, else the longest tail of its path that is
    the tail of exactly one document."""
    base = (root if root.is_dir() else root.parent).resolve()
    tails: dict[tuple[str, ...], set[str]] = defaultdict(set)
    for doc in documents:
        parts = PurePosixPath(doc).parts
        for i in range(len(parts)):
            tails[parts[i:]].add(doc)
    out: dict[str, str] = {}
    for m in sorted(measured):
        report.files_measured += 1
        try:
            rel = Path(m).resolve().relative_to(base).as_posix()
        except ValueError:
            rel = ""
        if rel in documents:
            out[m] = rel
            continue
        parts = PurePosixPath(Path(m).as_posix()).parts
        found: set[str] = set()
        for i in range(len(parts)):
            found = tails.get(parts[i:], set())
            if found:
                break
        if len(found) == 1:
            out[m] = next(iter(found))
        elif found:
            report.files_ambiguous.append(m)
        else:
            report.files_unmatched.append(m)
    report.files_matched = len(out)
    return out


def _test_key(context: str) -> str:
    """A context without its pytest-cov phase and parametrization: ``a.py::T::t[1]|run`` -> ``a.py::T::t``."""
    base, sep, phase = context.rpartition("|")
    if sep and phase in PHASES:
        context = base
    head, sep, tail = context.partition("::")
    if sep:
        tail = tail.split("[", 1)[0]
        return f"{head}{sep}{tail}"
    return context.split("[", 1)[0]


def _context_tests(contexts: Iterable[str], spans: list[Span], lines_in_file: Callable[[str, str], list[Span]],
                   report: CoverageReport) -> dict[str, Span]:
    """Context -> Test span (by node id, qualified name or tail, then by the lines it ran)."""
    tests = [s for s in spans if s.type == v.TEST]
    by_nodeid = {s.nodeid: s for s in tests if s.nodeid}
    by_name = {s.name: s for s in tests}
    by_tail: dict[str, list[Span]] = defaultdict(list)
    for s in tests:
        parts = s.name.split(".")
        for i in range(1, len(parts)):
            by_tail[".".join(parts[i:])].append(s)
    out: dict[str, Span] = {}
    for ctx in sorted(contexts):
        key = _test_key(ctx)
        span = by_nodeid.get(key) or by_name.get(key)
        if span is None and "::" not in key and len(by_tail.get(key, ())) == 1:
            span = by_tail[key][0]
        if span is None and "::" in key:
            ran = lines_in_file(ctx, key.partition("::")[0])
            if len(ran) == 1:
                span = ran[0]
                report.contexts_matched_by_lines += 1
        if span is None:
            report.contexts_unmatched.append(ctx)
        else:
            out[ctx] = span
    return out


# ---------------------------------------------------------------------------------- evidence
@dataclass
class CoverageEvidence:
    documents: list[EvidenceDocument]
    records: list[SkippedFile]
    report: CoverageReport


def coverage_evidence(root: Path, resolved: Sequence[ResolvedFile], data_files: Sequence[str | Path],
                      nodeid: Callable[[str, str, str], str]) -> CoverageEvidence:
    """Read ``data_files`` (their union) and build the evidence documents of the tree ``resolved``."""
    report = CoverageReport(sources=[str(p) for p in data_files])
    merged: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    for p in data_files:
        for ctx, files in read_contexts(Path(p)).items():
            for f, lines in files.items():
                merged[ctx][f] |= lines
    spans = spans_of(resolved, nodeid)
    by_file: dict[str, list[Span]] = defaultdict(list)
    for s in spans:
        by_file[s.path].append(s)
    line_maps = {path: _LineMap(ss) for path, ss in by_file.items()}
    measured = {f for files in merged.values() for f in files}
    doc_of = _match_files(measured, root, {rf.facts.path for rf in resolved}, report)

    def tests_run_in(ctx: str, test_path: str) -> list[Span]:
        lm = line_maps.get(test_path)
        found: dict[str, Span] = {}
        for m, lines in merged[ctx].items():
            if lm is not None and doc_of.get(m) == test_path:
                for line in lines:
                    s = lm.get(line)
                    if s is not None and s.type == v.TEST:
                        found[s.name] = s
        return list(found.values())

    test_contexts = [c for c in merged if c]
    report.contexts = len(test_contexts)
    matched = _context_tests(test_contexts, spans, tests_run_in, report)
    report.contexts_matched = len(matched)
    executed: dict[tuple[str, str], set[int]] = defaultdict(set)  # (test, function) -> lines
    test_spans: dict[str, Span] = {}
    outside: set[tuple[str, str, int]] = set()
    for ctx, test in matched.items():
        test_spans[test.name] = test
        for m, lines in merged[ctx].items():
            path = doc_of.get(m)
            lm = line_maps.get(path) if path else None
            for line in lines:
                s = lm.get(line) if lm is not None else None
                if s is None:
                    if path is not None:
                        outside.add((test.name, path, line))
                elif s.type == v.FUNCTION:
                    executed[(test.name, s.name)].add(line)
    report.lines_outside_functions = len(outside)
    documents = _documents(executed, test_spans, report.sources)
    recorded = _recorded(spans, set(doc_of.values()), set(test_spans), report.sources)
    if recorded[1]:
        documents.append(recorded)
    report.tests = len({t for t, _ in executed})
    report.functions = len({f for _, f in executed})
    report.relations = len(executed)
    report.documents = len(documents)
    records = ([SkippedFile(path=c, reason=UNMATCHED_CONTEXT, message="coverage context matching no test of the tree")
                for c in report.contexts_unmatched]
               + [SkippedFile(path=f, reason=UNMATCHED_FILE, message="file measured by coverage, not in the tree")
                  for f in report.files_unmatched]
               + [SkippedFile(path=f, reason=AMBIGUOUS_FILE,
                              message="file measured by coverage whose path matches several files of the tree")
                  for f in report.files_ambiguous])
    if records:
        logger.warning("coverage: %d context(s) and %d file(s) matched nothing (listed under skipped_files)",
                       len(report.contexts_unmatched), len(report.files_unmatched) + len(report.files_ambiguous))
    return CoverageEvidence(documents, records, report)


def _recorded(spans: list[Span], measured: set[str], tests: set[str], sources: list[str]) -> EvidenceDocument:
    """What the run measured, as it was: every function of a measured file and every test the run
    holds, with the fingerprint and first line it had (``recorded_fingerprint``, ``recorded_start_line``).
    One chunk per file. Once the code changes (``code refresh``), a function whose fingerprint still
    equals the recorded one is described by the run's lines (shifted), one that differs is stale, and
    one the run never saw (no recorded fingerprint) is new to it: :mod:`graphrag_got.code.stale`."""
    first: dict[tuple[str, str], Span] = {}  # one per name: the first that is not an @overload stub
    for sp in spans:
        if (sp.type == v.FUNCTION and sp.path in measured) or (sp.type == v.TEST and sp.name in tests):
            kept = first.get((sp.path, sp.name))
            if kept is None or (kept.overload and not sp.overload):
                first[(sp.path, sp.name)] = sp
    per_file: dict[str, list[Span]] = defaultdict(list)
    for sp in spans:
        if first.get((sp.path, sp.name)) is sp:
            per_file[sp.path].append(sp)
    chunks: list[tuple[ChunkRecord, dict[str, Any]]] = []
    offset = 0
    for index, (path, ss) in enumerate(sorted(per_file.items())):
        text = f"{path}: state recorded by the coverage run\n" + "".join(
            f"  {sp.name} line {sp.start} {sp.fingerprint}\n" for sp in ss)
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        ents = [{"name": sp.name, "type": sp.type, "properties": {"recorded_fingerprint": sp.fingerprint,
                                                                   "recorded_start_line": str(sp.start)}} for sp in ss]
        rec = ChunkRecord(id=f"{RECORDED_DOCUMENT}:{digest[:12]}", document_id=RECORDED_DOCUMENT, index=index,
                          start=offset, end=offset + len(text), hash=digest, text=text, heading=path)
        offset += len(text)
        chunks.append((rec, {"entities": ents, "relations": []}))
    blob = json.dumps([c.hash for c, _ in chunks])
    doc_hash = hashlib.sha256(f"{RECORDED_DOCUMENT}\n{blob}".encode("utf-8")).hexdigest()
    return (DocumentRecord(id=RECORDED_DOCUMENT, path=sources[0] if len(sources) == 1 else ", ".join(sources),
                           hash=doc_hash, metadata={v.SOURCE: v.COVERAGE, "files": len(chunks)}), chunks)


def _ranges(lines: Iterable[int]) -> str:
    """``1, 2, 3, 7`` -> ``1-3, 7``."""
    out: list[str] = []
    nums = sorted(lines)
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        out.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ", ".join(out)


def _documents(executed: dict[tuple[str, str], set[int]], tests: dict[str, Span],
               sources: list[str]) -> list[EvidenceDocument]:
    """One document per test file, one chunk per test: the text lists what the test ran."""
    per_test: dict[str, list[tuple[str, set[int]]]] = defaultdict(list)
    for (test, func), lines in sorted(executed.items()):
        per_test[test].append((func, lines))
    per_file: dict[str, list[str]] = defaultdict(list)
    for test in sorted(per_test, key=lambda t: (tests[t].path, tests[t].start, t)):
        per_file[tests[test].path].append(test)
    out: list[EvidenceDocument] = []
    for path, names in sorted(per_file.items()):
        doc_id = DOCUMENT_PREFIX + path
        chunks: list[tuple[ChunkRecord, dict[str, Any]]] = []
        offset = 0
        for index, test in enumerate(names):
            t = tests[test]
            rows = per_test[test]
            text = f"{t.nodeid or t.name} executed:\n" + "".join(
                f"  {func} (lines {_ranges(lines)})\n" for func, lines in rows)
            digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            ents = [{"name": test, "type": v.TEST, "properties": {}}]
            ents += [{"name": func, "type": v.FUNCTION, "properties": {}} for func, _ in rows]
            rels = [{"relation": v.EXECUTES, "subject": test, "subject_type": v.TEST, "object": func,
                     "object_type": v.FUNCTION, "attributes": {v.SOURCE: v.COVERAGE, v.LINES: _ranges(lines)}}
                    for func, lines in rows]
            rec = ChunkRecord(id=f"{doc_id}:{digest[:12]}", document_id=doc_id, index=index, start=offset,
                              end=offset + len(text), hash=digest, text=text, heading=t.nodeid or t.name)
            offset += len(text)
            chunks.append((rec, {"entities": ents, "relations": rels}))
        blob = json.dumps([c.hash for c, _ in chunks])
        doc_hash = hashlib.sha256(f"{doc_id}\n{blob}".encode("utf-8")).hexdigest()
        out.append((DocumentRecord(id=doc_id, path=sources[0] if len(sources) == 1 else ", ".join(sources),
                                   hash=doc_hash, metadata={v.SOURCE: v.COVERAGE, "tests": len(names)}), chunks))
    return out

