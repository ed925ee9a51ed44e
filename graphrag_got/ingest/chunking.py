"""Corpus reading and chunkers (paragraph, markdown).

Two chunkers, both line based:

* ``paragraph``: one chunk per paragraph (blocks separated by blank lines).
* ``markdown``: one section per ATX heading of level 1-3 (``#``, ``##``, ``###``); the heading line
  stays in the chunk text and its text goes to ``Chunk.heading``. Deeper headings (``####``...)
  stay inside their section. YAML front matter (between a leading ``---`` line and the next
  ``---`` or ``...`` line) becomes ``Document.metadata`` and is never part of a chunk. Fenced
  code blocks (````` ``` ````` or ``~~~``) are kept whole when they fit in ``max_chars``, and
  headings inside them are ignored.

Files are read by :mod:`graphrag_got.ingest.readers`, the reader chosen by the file's bytes. PDF,
DOCX and HTML files are cut by their structure, whatever ``kind`` says: a PDF within each page (a
chunk never spans a page break; ``Chunk.page`` is 1-based), a DOCX or HTML page at each heading line
the reader found (``Chunk.heading`` the heading, ``Chunk.section`` the heading path). Markdown chunks
get their heading path too. None of this enters a chunk id.

Size rules, the same for every chunker. ``max_chars`` is a hard limit: no chunk is ever longer,
whatever the text (a 5 MB file without a single full stop gives 5 MB / max_chars chunks, not one
chunk no model could read).

* A chunk shorter than ``min_chars`` is dropped and counted in ``ChunkedDocument.dropped``.
* A markdown section longer than ``max_chars`` is split at paragraph boundaries (consecutive
  paragraphs are packed while they fit). Only the first piece contains the heading line; every
  piece carries the section's ``Chunk.heading``.
* A single paragraph longer than ``max_chars`` is split at sentence ends (``.``, ``!``, ``?``,
  ``…`` followed by white space), packing sentences while they fit, so a model with a small
  context still sees whole sentences. A sentence longer than ``max_chars`` is split at clause
  marks (``;``, ``:``, ``,`` followed by white space), then at line breaks, then between words;
  a fenced code block or a heading line longer than ``max_chars`` at line breaks, then between
  words. Text with no such boundary (one 10,000-character "word") is cut every ``max_chars``
  characters, never between a character and its combining accents. The pieces of a split unit
  are packed among themselves with the same rule. Text that fits is never cut, so its chunk ids
  do not depend on these rules.
* Front matter YAML that cannot be read at all (syntax error, no closing line, not a mapping) is
  a :class:`CorpusError` naming the file and line, raised while the corpus is read, before any
  model call. Values JSON cannot hold are made JSON-friendly with a logged warning: sets become
  sorted lists, dates ISO strings; bytes (``!!binary``), unknown tags (``!!python/object``...),
  ``NaN``/infinite numbers and anything nested too deeply are dropped.

``Chunk.start``/``Chunk.end`` index into the document text, so ``text[start:end] == chunk.text``
always holds; chunk text is the span with surrounding white space trimmed.

Why hand-written and not a text-splitter library: we need exact character offsets into the
original text, whole code fences and ids that depend only on the chunk text; the LangChain
splitters recover offsets with ``str.find`` (wrong when text repeats) and a full Markdown parser
would be a new dependency for the three line-level constructs we use.
"""

from __future__ import annotations

import hashlib
import logging
import re
from bisect import bisect_left
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from graphrag_got.common.walk import TOO_LARGE, SkippedInput, walk_files
from graphrag_got.errors import ConfigError, CorpusError
from graphrag_got.ingest.front_matter import front_matter as _front_matter
from graphrag_got.ingest.readers import ReadDocument, decode_text, document_suffixes, read_document
from graphrag_got.ingest.split import Block as _Block
from graphrag_got.ingest.split import Line as _Line
from graphrag_got.ingest.split import lines_of as _lines
from graphrag_got.ingest.split import pack as _pack
from graphrag_got.ingest.split import pack_each as _pack_each
from graphrag_got.ingest.split import paragraph_blocks as _paragraph_blocks

_log = logging.getLogger(__name__)

ChunkerKind = Literal["paragraph", "markdown"]
#: the file name endings a corpus folder is searched for: those of every reader
CORPUS_SUFFIXES = document_suffixes()
_SUFFIXES_SHOWN = "/".join(CORPUS_SUFFIXES)
_OTHER_SUFFIXES = ", ".join(s for s in CORPUS_SUFFIXES if s not in (".txt", ".md"))

#: (heading, heading path, page, start, end) of one chunk-to-be
_Span = tuple[str | None, tuple[str, ...], int | None, int, int]

_HEADING = re.compile(r"^ {0,3}(#{1,3})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Document:
    id: str  # path relative to the corpus root, POSIX
    path: str
    hash: str  # sha256 hex of the text (.txt, .md) or of the file's bytes (PDF, DOCX, HTML)
    metadata: dict = field(default_factory=dict)  # YAML front matter for markdown, else {}
    format: str = "text"  # the reader that read it (graphrag_got.ingest.readers)
    pages: int | None = None  # PDF: its page count
    lines_dropped: int = 0  # PDF: running headers, footers and page numbers left out
    notes: tuple[str, ...] = ()  # what the reader wants a user to know (pages without text, a wrong name)


@dataclass(frozen=True)
class Chunk:
    id: str  # f"{document_id}:{hash[:12]}", "-2", "-3"... when the same text repeats in the document
    document_id: str
    index: int
    start: int
    end: int
    hash: str  # sha256 hex of text
    text: str
    heading: str | None = None  # the innermost heading above the chunk (Markdown levels 1-3, DOCX, HTML)
    page: int | None = None  # PDF: the 1-based page the chunk is on (a chunk never spans two pages)
    section: tuple[str, ...] = ()  # the heading path, outermost first: ("Installation", "Network")

    @property
    def location(self) -> str:
        """Where the chunk is inside its document: ``p. 12``, ``Installation > Network``, or ``""``."""
        return location_label(self.page, self.section)


def location_label(page: int | None, section: tuple[str, ...] | list[str] = ()) -> str:
    """``p. 12`` for a page, ``A > B`` for a heading path (both: ``p. 12 > A > B``)."""
    return " > ".join(([f"p. {page}"] if page else []) + [s for s in section if s])


@dataclass
class ChunkedDocument:
    document: Document
    chunks: list[Chunk]
    dropped: int = 0


def sha256_hex(text: str) -> str:
    """sha256 of the UTF-8 text. ``surrogatepass`` only matters for a ``str`` that holds lone
    surrogates (never text read from a file), so that hashing it cannot fail."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _fence_closes(line: _Line, fence: str) -> bool:
    stripped = line.text.strip()
    return (
        len(line.text) - len(line.text.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
    )


def _markdown_sections(lines: list[_Line]) -> list[tuple[str | None, int, list[_Block]]]:
    """Sections (heading text, heading level, blocks) of a Markdown body. A fence without a closing
    line runs to the end of the document, as in CommonMark."""
    sections: list[tuple[str | None, int, list[_Block]]] = [(None, 0, [])]
    current: list[_Line] = []
    fence: str | None = None
    fence_start: _Line | None = None

    def flush() -> None:
        nonlocal current
        if current:
            sections[-1][2].append(_Block(current[0].start, current[-1].end, splittable=True))
            current = []

    for line in lines:
        if fence is not None:
            if _fence_closes(line, fence):
                assert fence_start is not None
                sections[-1][2].append(_Block(fence_start.start, line.end, splittable=False))
                fence, fence_start = None, None
            continue
        opening = _FENCE_OPEN.match(line.text)
        if opening and not (opening.group(1)[0] == "`" and "`" in line.text[opening.end():]):
            flush()
            fence, fence_start = opening.group(1), line
            continue
        heading = _HEADING.match(line.text)
        if heading:
            flush()
            title = (heading.group(2) or "").strip()
            sections.append((title, len(heading.group(1)), [_Block(line.start, line.end, splittable=False)]))
            continue
        if line.blank:
            flush()
        else:
            current.append(line)
    flush()
    if fence is not None and fence_start is not None:
        sections[-1][2].append(_Block(fence_start.start, lines[-1].end, splittable=False))
    return sections
# --------------------------------------------------------------------------------------------


def _check_sizes(min_chars: int, max_chars: int) -> None:
    if min_chars < 0 or max_chars < 1 or min_chars > max_chars:
        raise ConfigError(
            f"chunk sizes need 0 <= min_chars <= max_chars and max_chars >= 1; got "
            f"min_chars={min_chars}, max_chars={max_chars}"
        )


def chunk_text(
    doc_id: str,
    text: str,
    *,
    kind: ChunkerKind = "paragraph",
    min_chars: int,
    max_chars: int,
    path: str | None = None,
) -> ChunkedDocument:
    """Chunk one document's text. ``doc_id`` is its id (path relative to the corpus root)."""
    _check_sizes(min_chars, max_chars)
    name = path or doc_id
    lines = _lines(text)
    metadata: dict = {}
    if kind == "paragraph":
        spans: list[tuple[str | None, tuple[str, ...], int, int]] = [
            (None, (), s, e) for s, e in _pack_each(text, _paragraph_blocks(lines), max_chars)
        ]
    elif kind == "markdown":
        metadata, body = _front_matter(lines, name)
        spans = [
            (heading, trail, s, e)
            for heading, trail, blocks in _with_paths(_markdown_sections(lines[body:]))
            for s, e in _pack(text, blocks, max_chars)
        ]
    else:
        raise ConfigError(f"unknown chunker {kind!r}; use 'paragraph' or 'markdown'")
    return _chunked(doc_id, text, [(h, p, None, s, e) for h, p, s, e in spans], min_chars,
                    Document(id=doc_id, path=path or doc_id, hash=sha256_hex(text), metadata=metadata,
                             format="markdown" if kind == "markdown" else "text"))


def _with_paths(sections: list[tuple[str | None, int, list[_Block]]]
                ) -> list[tuple[str | None, tuple[str, ...], list[_Block]]]:
    """Each section with its heading path: the titles of the headings it sits under, outermost first."""
    out: list[tuple[str | None, tuple[str, ...], list[_Block]]] = []
    stack: list[tuple[int, str]] = []
    for title, level, blocks in sections:
        if level:
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, title or ""))
        out.append((title, tuple(t for _, t in stack if t), blocks))
    return out


def _read_spans(text: str, read: ReadDocument, max_chars: int) -> list[_Span]:
    """Spans of a document a structure-aware reader read: within each page (``pages``: a chunk never
    spans a page break, so a change on one page leaves the other pages' chunks as they were) or within
    each section between the reader's heading lines (``sections``)."""
    lines = _lines(text)
    starts = [line.start for line in lines]
    if read.layout == "pages":
        bounds = [(None, (), i + 1, start) for i, start in enumerate(read.page_starts)]
    else:  # sections: the text before the first heading, then one section per heading line
        sections = _with_paths([(h.title, h.level, []) for h in read.headings])
        bounds = [(None, (), None, 0)] + [(title, path, None, h.start)
                                           for (title, path, _), h in zip(sections, read.headings)]
    spans: list[_Span] = []
    ends = [b[3] for b in bounds[1:]] + [len(text) + 1]
    for (heading, path, page, start), end in zip(bounds, ends):
        inside = lines[bisect_left(starts, start):bisect_left(starts, end)]
        blocks = _paragraph_blocks(inside)
        if read.layout == "sections" and heading is not None and blocks:
            blocks[0].splittable = False  # the heading line is its own block (a blank line follows it)
        spans.extend((heading, path, page, s, e) for s, e in _pack(text, blocks, max_chars))
    return spans


def _chunked(doc_id: str, text: str, spans: list[_Span], min_chars: int, document: Document) -> ChunkedDocument:

    chunks: list[Chunk] = []
    dropped = 0
    seen: dict[str, int] = {}
    for heading, section, page, s, e in spans:
        piece = text[s:e]
        if len(piece) < min_chars:
            dropped += 1
            continue
        digest = sha256_hex(piece)
        seen[digest] = seen.get(digest, 0) + 1
        suffix = "" if seen[digest] == 1 else f"-{seen[digest]}"
        chunks.append(
            Chunk(
                id=f"{doc_id}:{digest[:12]}{suffix}",
                document_id=doc_id,
                index=len(chunks),
                start=s,
                end=e,
                hash=digest,
                text=piece,
                heading=heading,
                page=page,
                section=section,
            )
        )
    return ChunkedDocument(document=document, chunks=chunks, dropped=dropped)


def read_text(path: Path, name: str | None = None) -> str:
    """A text corpus file as text (:func:`graphrag_got.ingest.readers.decode_text`: strict UTF-8, ``\\n``
    line breaks); :class:`CorpusError` naming the file and line when it is not."""
    name = name or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{name}: cannot read the file ({exc.strerror or exc})", "unreadable") from None
    return decode_text(raw, name)


def chunk_document(doc_id: str, read: ReadDocument, *, kind: str = "auto", min_chars: int, max_chars: int,
                   path: str | None = None) -> ChunkedDocument:
    """Chunk a document as its reader read it: text files with ``kind`` (auto: Markdown for ``.md``), other
    formats by their pages (PDF) or headings (DOCX, HTML), whatever ``kind`` says."""
    if read.layout in ("paragraph", "markdown"):
        chunked = chunk_text(doc_id, read.text, kind=_kind_for(Path(path or doc_id), kind), min_chars=min_chars,
                             max_chars=max_chars, path=path)
        document = chunked.document
    else:
        _check_sizes(min_chars, max_chars)
        document = Document(id=doc_id, path=path or doc_id, hash=read.digest)
        chunked = _chunked(doc_id, read.text, _read_spans(read.text, read, max_chars), min_chars, document)
    chunked.document = Document(id=doc_id, path=document.path, hash=read.digest, metadata=document.metadata,
                                format=read.format, pages=read.pages, lines_dropped=read.lines_dropped,
                                notes=read.notes)
    return chunked


def _kind_for(path: Path, kind: str) -> ChunkerKind:
    if kind == "auto":
        return "markdown" if path.suffix.lower() == ".md" else "paragraph"
    if kind in ("paragraph", "markdown"):
        return kind  # type: ignore[return-value]
    raise ConfigError(f"unknown chunker {kind!r}; use 'auto', 'paragraph' or 'markdown'")


def corpus_files(path: str | Path, *, follow_outside_links: bool = False,
                 skipped: list[SkippedInput] | None = None) -> list[tuple[str, Path]]:
    """(document id, file) pairs of a corpus: a single file, or every file of a known format (``.txt``, ``.md``,
    ``.pdf``, ``.docx``, ``.html``, ``.htm``: :data:`CORPUS_SUFFIXES`) under a folder (recursive, sorted by id; hidden files and folders skipped).

    Nothing outside the folder is read: a link whose real path leaves it (``passwd.md ->
    /etc/passwd``), a broken link or something that is not a regular file is appended to
    ``skipped`` with a logged warning (:func:`graphrag_got.common.walk.walk_files`);
    ``follow_outside_links`` lets links leave the folder."""
    root = Path(path)
    if not root.exists():
        raise CorpusError(f"corpus path {str(path)!r} does not exist; pass a file or a folder of {_SUFFIXES_SHOWN} files")
    if root.is_file():
        return [(root.name, root)]
    found = walk_files(root, wanted=lambda name: not name.startswith(".") and name.lower().endswith(CORPUS_SUFFIXES),
                       prune=lambda name: name.startswith("."), follow_outside_links=follow_outside_links,
                       skipped=skipped)
    if not found:
        refused = f" ({len(skipped)} refused: {skipped[0].message})" if skipped else ""
        raise CorpusError(f"corpus folder {str(path)!r} holds no .txt or .md file, nor any {_OTHER_SUFFIXES} "
                          f"file{refused}")
    return found


def check_size(path: Path, name: str, max_bytes: int, max_chars: int) -> None:
    """Raise :class:`CorpusError` (reason ``too_large``) when the file at ``path`` is over ``max_bytes``
    (0: no cap), saying what reading it would cost, before a byte of it is read."""
    if not max_bytes:
        return
    try:
        size = path.stat().st_size
    except OSError:
        return  # read_text names the problem
    if size > max_bytes:
        raise CorpusError(f"{name}: the file is {size:,} bytes, over the {max_bytes:,} a document may have "
                          f"(GRAPHRAG_MAX_DOCUMENT_BYTES); it would be about {-(-size // max_chars):,} chunks, one LLM "
                          "call each. Split it, or raise GRAPHRAG_MAX_DOCUMENT_BYTES (0: no limit) to read it",
                          TOO_LARGE)


def read_corpus(
    path: str | Path, *, kind: str = "auto", min_chars: int, max_chars: int, strict: bool = False,
    follow_outside_links: bool = False, skipped: list[SkippedInput] | None = None, max_bytes: int = 0,
) -> list[ChunkedDocument]:
    """Read and chunk a corpus file or folder. ``kind`` auto = markdown for .md, paragraph otherwise.

    A file that cannot be read as text (not UTF-8, UTF-16, binary, malformed YAML front matter),
    that is over ``max_bytes`` (0: no cap; :func:`check_size`) or that the walk refuses (outside
    the folder, see :func:`corpus_files`) is skipped: appended to ``skipped`` with its reason and
    logged as a warning, and the other files are read. With ``strict`` the first such file raises
    :class:`CorpusError` instead. A corpus named as a single file is always read strictly (there is
    nothing else to go on with)."""
    _check_sizes(min_chars, max_chars)
    records: list[SkippedInput] = skipped if skipped is not None else []
    first = len(records)
    files = corpus_files(path, follow_outside_links=follow_outside_links, skipped=records)
    if strict and len(records) > first:
        bad = records[first]
        raise CorpusError(f"{Path(path) / bad.path}: {bad.message} (--strict stops at the first input it cannot read; "
                          "without it the file is skipped and listed)")
    asked_strict, strict = strict, strict or Path(path).is_file()
    out: list[ChunkedDocument] = []
    for doc_id, file in files:
        shown = file.as_posix()
        try:
            check_size(file, shown, max_bytes, max_chars)
            doc = chunk_document(doc_id, read_document(file, shown, max_bytes=max_bytes), kind=kind,
                                 min_chars=min_chars, max_chars=max_chars, path=shown)
            for note in doc.document.notes:
                _log.info("%s: %s", shown, note)
            out.append(doc)
        except CorpusError as exc:
            if asked_strict:
                raise CorpusError(f"{exc} (--strict stops at the first input it cannot read; without it the file "
                                  "is skipped and listed)", exc.reason) from None
            if strict:
                raise
            message = str(exc)
            message = message[len(shown):].lstrip(":, ") if message.startswith(shown) else message
            _log.warning("%s: skipped: %s", shown, message)
            records.append(SkippedInput(doc_id, exc.reason or "unreadable", message))
    if not any(doc.chunks for doc in out):
        refused = (f"; {len(records) - first} file(s) skipped as unreadable, first: {records[first].path}: "
                   f"{records[first].message}") if len(records) > first else ""
        raise CorpusError(
            f"corpus {str(path)!r} is empty: no chunk of at least {min_chars} characters in "
            f"{len(out)} file(s){refused}"
        )
    return out
