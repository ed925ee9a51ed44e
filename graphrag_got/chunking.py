"""Corpus reading and chunkers (paragraph, markdown).

Two chunkers, both line based:

* ``paragraph``: one chunk per paragraph (blocks separated by blank lines).
* ``markdown``: one section per ATX heading of level 1-3 (``#``, ``##``, ``###``); the heading line
  stays in the chunk text and its text goes to ``Chunk.heading``. Deeper headings (``####``...)
  stay inside their section. YAML front matter (between a leading ``---`` line and the next
  ``---`` or ``...`` line) becomes ``Document.metadata`` and is never part of a chunk. Fenced
  code blocks (````` ``` ````` or ``~~~``) are atomic: never split, and headings inside them are
  ignored.

Size rules, the same for both chunkers:

* A chunk shorter than ``min_chars`` is dropped and counted in ``ChunkedDocument.dropped``.
* A markdown section longer than ``max_chars`` is split at paragraph boundaries (consecutive
  paragraphs are packed while they fit). Only the first piece contains the heading line; every
  piece carries the section's ``Chunk.heading``.
* A single paragraph longer than ``max_chars`` is split at sentence ends (``.``, ``!``, ``?``,
  ``…`` followed by white space), packing sentences while they fit, so a model with a small
  context still sees whole sentences. A sentence longer than ``max_chars``, and a fenced code
  block of any length, is kept whole.

``Chunk.start``/``Chunk.end`` index into the document text, so ``text[start:end] == chunk.text``
always holds; chunk text is the span with surrounding white space trimmed.

Why hand-written and not a text-splitter library: we need exact character offsets into the
original text, atomic code fences and ids that depend only on the chunk text; the LangChain
splitters recover offsets with ``str.find`` (wrong when text repeats) and a full Markdown parser
would be a new dependency for the three line-level constructs we use.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml

from .errors import ConfigError, CorpusError

ChunkerKind = Literal["paragraph", "markdown"]
CORPUS_SUFFIXES = (".txt", ".md")

_HEADING = re.compile(r"^ {0,3}(#{1,3})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SENTENCE_END = re.compile(r"[.!?…][\"'»”’)\]]*(?=\s)")


@dataclass(frozen=True)
class Document:
    id: str  # path relative to the corpus root, POSIX
    path: str
    hash: str  # sha256 hex of the text
    metadata: dict = field(default_factory=dict)  # YAML front matter for markdown, else {}


@dataclass(frozen=True)
class Chunk:
    id: str  # f"{document_id}:{hash[:12]}", "-2", "-3"... when the same text repeats in the document
    document_id: str
    index: int
    start: int
    end: int
    hash: str  # sha256 hex of text
    text: str
    heading: str | None = None


@dataclass
class ChunkedDocument:
    document: Document
    chunks: list[Chunk]
    dropped: int = 0


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------------------------
# Line model
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    number: int  # 1-based line number in the document
    start: int  # offset of the first character
    end: int  # offset after the last character, line break excluded
    text: str  # without the line break

    @property
    def blank(self) -> bool:
        return not self.text.strip()


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    pos = 0
    for number, raw in enumerate(text.splitlines(keepends=True), start=1):
        body = raw.rstrip("\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029")
        out.append(_Line(number, pos, pos + len(body), body))
        pos += len(raw)
    return out


@dataclass
class _Block:
    """A run of lines that is a paragraph, a heading line or a fenced code block."""

    start: int
    end: int
    splittable: bool  # prose that may be cut at sentence ends


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


# --------------------------------------------------------------------------------------------
# Splitting
# --------------------------------------------------------------------------------------------


def _paragraph_blocks(lines: list[_Line]) -> list[_Block]:
    """Blank-line separated paragraphs, no Markdown awareness."""
    blocks: list[_Block] = []
    current: list[_Line] = []
    for line in lines + [None]:  # type: ignore[list-item]
        if line is None or line.blank:
            if current:
                blocks.append(_Block(current[0].start, current[-1].end, splittable=True))
                current = []
        else:
            current.append(line)
    return blocks


def _fence_closes(line: _Line, fence: str) -> bool:
    stripped = line.text.strip()
    return (
        len(line.text) - len(line.text.lstrip(" ")) <= 3
        and len(stripped) >= len(fence)
        and set(stripped) == {fence[0]}
    )


def _markdown_sections(lines: list[_Line]) -> list[tuple[str | None, list[_Block]]]:
    """Sections (heading text, blocks) of a Markdown body. A fence without a closing line runs to
    the end of the document, as in CommonMark."""
    sections: list[tuple[str | None, list[_Block]]] = [(None, [])]
    current: list[_Line] = []
    fence: str | None = None
    fence_start: _Line | None = None

    def flush() -> None:
        nonlocal current
        if current:
            sections[-1][1].append(_Block(current[0].start, current[-1].end, splittable=True))
            current = []

    for line in lines:
        if fence is not None:
            if _fence_closes(line, fence):
                assert fence_start is not None
                sections[-1][1].append(_Block(fence_start.start, line.end, splittable=False))
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
            sections.append((title, [_Block(line.start, line.end, splittable=False)]))
            continue
        if line.blank:
            flush()
        else:
            current.append(line)
    flush()
    if fence is not None and fence_start is not None:
        sections[-1][1].append(_Block(fence_start.start, lines[-1].end, splittable=False))
    return sections


def _sentence_pieces(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Cut text[start:end] at sentence ends into pieces of at most max_chars where possible."""
    cuts = [m.end() for m in _SENTENCE_END.finditer(text, start, end) if m.end() < end]
    sentences: list[tuple[int, int]] = []
    prev = start
    for cut in cuts + [end]:
        s, e = _trimmed(text, prev, cut)
        if s < e:
            sentences.append((s, e))
        prev = cut
    pieces: list[tuple[int, int]] = []
    for s, e in sentences:
        if pieces and e - pieces[-1][0] <= max_chars:
            pieces[-1] = (pieces[-1][0], e)
        else:
            pieces.append((s, e))
    return pieces


def _pack(text: str, blocks: list[_Block], max_chars: int) -> list[tuple[int, int]]:
    """Group consecutive blocks into spans of at most max_chars (a longer block stays alone,
    cut at sentence ends when it is prose)."""
    units: list[tuple[int, int]] = []
    for block in blocks:
        s, e = _trimmed(text, block.start, block.end)
        if s >= e:
            continue
        if block.splittable and e - s > max_chars:
            units.extend(_sentence_pieces(text, s, e, max_chars))
        else:
            units.append((s, e))
    spans: list[tuple[int, int]] = []
    for s, e in units:
        if spans and e - spans[-1][0] <= max_chars:
            spans[-1] = (spans[-1][0], e)
        else:
            spans.append((s, e))
    return spans


# --------------------------------------------------------------------------------------------
# Front matter
# --------------------------------------------------------------------------------------------


def _json_safe(value: Any) -> Any:
    """YAML dates and non-string keys made JSON-friendly: metadata ends up in extraction.json
    and in Neo4j."""
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return value


def _front_matter(lines: list[_Line], name: str) -> tuple[dict, int]:
    """(metadata, index of the first body line). No front matter: ({}, 0)."""
    if not lines or lines[0].text.lstrip("\ufeff").rstrip() != "---":
        return {}, 0
    for i in range(1, len(lines)):
        if lines[i].text.rstrip() in ("---", "..."):
            break
    else:
        raise CorpusError(
            f"{name}, line 1: the YAML front matter opened by '---' is never closed; "
            "add a '---' line after it, or remove the opening line"
        )
    source = "\n".join(line.text for line in lines[1:i])
    try:
        data = yaml.safe_load(source)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        line_no = mark.line + 2 if mark is not None else 2  # YAML starts on file line 2
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise CorpusError(
            f"{name}, line {line_no}: malformed YAML front matter ({problem}); fix the YAML "
            "between the '---' lines"
        ) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise CorpusError(
            f"{name}, line 2: the YAML front matter must be a mapping (key: value lines), "
            f"got {type(data).__name__}"
        )
    return _json_safe(data), i + 1


# --------------------------------------------------------------------------------------------
# Public API
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
        spans: list[tuple[str | None, int, int]] = [
            (None, s, e) for s, e in _pack_each(text, _paragraph_blocks(lines), max_chars)
        ]
    elif kind == "markdown":
        metadata, body = _front_matter(lines, name)
        spans = [
            (heading, s, e)
            for heading, blocks in _markdown_sections(lines[body:])
            for s, e in _pack(text, blocks, max_chars)
        ]
    else:
        raise ConfigError(f"unknown chunker {kind!r}; use 'paragraph' or 'markdown'")

    chunks: list[Chunk] = []
    dropped = 0
    seen: dict[str, int] = {}
    for heading, s, e in spans:
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
            )
        )
    document = Document(id=doc_id, path=path or doc_id, hash=sha256_hex(text), metadata=metadata)
    return ChunkedDocument(document=document, chunks=chunks, dropped=dropped)


def _pack_each(text: str, blocks: list[_Block], max_chars: int) -> list[tuple[int, int]]:
    """Paragraph chunker: every paragraph is its own chunk (never merged with its neighbours)."""
    return [span for block in blocks for span in _pack(text, [block], max_chars)]


def read_text(path: Path, name: str | None = None) -> str:
    """A corpus file as text: strict UTF-8 (a leading BOM dropped), line breaks normalised to
    ``\\n`` like Python's text mode, so offsets do not depend on the platform that wrote it."""
    name = name or str(path)
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{name}: cannot read the file ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusError(
            f"{name}, line {line}: not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "re-save the file as UTF-8"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _kind_for(path: Path, kind: str) -> ChunkerKind:
    if kind == "auto":
        return "markdown" if path.suffix.lower() == ".md" else "paragraph"
    if kind in ("paragraph", "markdown"):
        return kind  # type: ignore[return-value]
    raise ConfigError(f"unknown chunker {kind!r}; use 'auto', 'paragraph' or 'markdown'")


def corpus_files(path: str | Path) -> list[tuple[str, Path]]:
    """(document id, file) pairs of a corpus: a single file, or every *.txt and *.md under a
    folder (recursive, sorted by id; hidden files and folders skipped)."""
    root = Path(path)
    if not root.exists():
        raise CorpusError(f"corpus path {str(path)!r} does not exist; pass a file or a folder of .txt/.md files")
    if root.is_file():
        return [(root.name, root)]
    found: list[tuple[str, Path]] = []
    for file in root.rglob("*"):
        rel = file.relative_to(root)
        if any(part.startswith(".") for part in rel.parts):
            continue
        if file.is_file() and file.suffix.lower() in CORPUS_SUFFIXES:
            found.append((rel.as_posix(), file))
    if not found:
        raise CorpusError(f"corpus folder {str(path)!r} holds no .txt or .md file")
    return sorted(found)


def read_corpus(
    path: str | Path, *, kind: str = "auto", min_chars: int, max_chars: int
) -> list[ChunkedDocument]:
    """Read and chunk a corpus file or folder. ``kind`` auto = markdown for .md, paragraph otherwise."""
    _check_sizes(min_chars, max_chars)
    out: list[ChunkedDocument] = []
    for doc_id, file in corpus_files(path):
        shown = file.as_posix()
        out.append(
            chunk_text(
                doc_id,
                read_text(file, shown),
                kind=_kind_for(file, kind),
                min_chars=min_chars,
                max_chars=max_chars,
                path=shown,
            )
        )
    if not any(doc.chunks for doc in out):
        raise CorpusError(
            f"corpus {str(path)!r} is empty: no chunk of at least {min_chars} characters in "
            f"{len(out)} file(s)"
        )
    return out
