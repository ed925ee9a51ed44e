"""Vault structure of Markdown notes (Obsidian-style): title, date, tags, folders and links.

:func:`note_records` reads every ``.md`` document of a corpus into a
:class:`~graphrag_got.extract.extraction.NoteRecord`; ``load`` turns them into ``Folder``, ``Tag``,
``MissingNote`` nodes and ``IN_FOLDER``, ``TAGGED``, ``LINKS_TO`` relationships
(:mod:`graphrag_got.graph.notes`).

What counts, and why:

* **title**: front matter ``title``, else the first ``# `` heading of the body, else the file stem.
* **date**: front matter ``date`` when it is an ISO date or date-time (the corpus reader already
  turns YAML dates into ISO strings), else None.
* **tags**: front matter ``tags`` (a list, or one string split at commas and spaces) and inline
  ``#tags`` of the body. Not tags: anything in fenced code blocks or inline code, the ``#`` of
  URLs and link targets (``page#section``), a heading's leading ``#``, and all-digit words
  (``#1``), as in Obsidian. Nested ``#a/b`` is kept whole. Normalized: lower case, no ``#``.
* **folder_tags**: the folder names on the note's path (lower case, spaces as ``-``), kept apart
  from the note's own tags because they are implied, not written.
* **links**: ``[[Note]]``, ``[[Note|alias]]``, ``[[Note#Heading]]``, ``![[embed]]`` and relative
  Markdown links ``[x](../a.md)``, ``[x](a%20b.md#h)``; external URLs (``scheme://``,
  ``mailto:``) and in-page anchors are ignored, and so are links in code. A wikilink resolves
  like Obsidian: by path or by file name without ``.md``, case-insensitive, the shortest path
  winning ties (then the smaller id, so the result never depends on file order). A Markdown link
  resolves relative to the note's folder (``/`` from the corpus root). An unresolved link is
  kept with ``resolved=None`` (dangling), never an error: the note may be written tomorrow.

A hand-written scanner rather than a Markdown parser: the constructs are line-level and a full
CommonMark parser knows neither wikilinks nor tags.
"""

from __future__ import annotations

import datetime as _dt
import logging
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from graphrag_got.ingest.chunking import ChunkedDocument, read_text, sha256_hex
from graphrag_got.extract.extraction import NoteLink, NoteRecord

logger = logging.getLogger(__name__)

NOTE_SUFFIX = ".md"

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+|$)(.*)$")
_INLINE_CODE = re.compile(r"(`+)(?:.+?)\1", re.DOTALL)
_WIKILINK = re.compile(r"(!?)\[\[([^\[\]\n]+?)\]\]")
# [text](target "title") or [text](<target with spaces>)
_MD_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'))?\s*\)")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_URL = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.-]*://|mailto:|www\.)\S+", re.IGNORECASE)
# An inline tag: '#' at the start or after a space or opening punctuation, then letters, digits,
# '_', '-', '/'. Unicode letters count (#monitorización-like words in any language).
_TAG = re.compile(r"(?:(?<=^)|(?<=[\s(\[{,;:!?\"'«]))#([^\W][\w/-]*)", re.UNICODE)
_TAG_SPLIT = re.compile(r"[,\s]+")
_SPACES = re.compile(r"\s+")


# ---------------------------------------------------------------------------------------------
# Small normalizers
# ---------------------------------------------------------------------------------------------


def normalize_tag(tag: str) -> str:
    """``"#Linux/LVM "`` -> ``"linux/lvm"`` ("" when nothing is left)."""
    return tag.strip().lstrip("#").strip().strip("/").lower()


def note_key(path: str) -> str:
    """The resolution key of a note path or link target: lower case, POSIX, no ``./``, no ``.md``."""
    key = path.strip().replace("\\", "/")
    while key.startswith("./"):
        key = key[2:]
    key = key.lstrip("/")
    if key.lower().endswith(NOTE_SUFFIX):
        key = key[: -len(NOTE_SUFFIX)]
    return key.lower()


def _folder_tag(name: str) -> str:
    return _SPACES.sub("-", name.strip()).lower()


def _unique(items: Sequence[str]) -> list[str]:
    return [x for x in dict.fromkeys(items) if x]


# ---------------------------------------------------------------------------------------------
# Front matter values
# ---------------------------------------------------------------------------------------------


def _front_matter_tags(value: Any, doc_id: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        parts: list[Any] = _TAG_SPLIT.split(value)
    elif isinstance(value, (list, tuple)):
        parts = list(value)
    else:
        logger.warning("%s: front matter 'tags' is a %s, not a list or text; ignored", doc_id, type(value).__name__)
        return []
    out = []
    for part in parts:
        if isinstance(part, (str, int, float)) and not isinstance(part, bool):
            out.extend(_TAG_SPLIT.split(str(part)))
    return [normalize_tag(t) for t in out]


def _iso_date(value: Any, doc_id: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    text = str(value).strip()
    try:
        _dt.datetime.fromisoformat(text)
    except ValueError:
        try:
            _dt.date.fromisoformat(text)
        except ValueError:
            logger.warning("%s: front matter 'date' %r is not an ISO date (YYYY-MM-DD); ignored", doc_id, text[:40])
            return None
    return text


# ---------------------------------------------------------------------------------------------
# Body scanning
# ---------------------------------------------------------------------------------------------


def _body_lines(text: str) -> list[str]:
    """The lines after the YAML front matter (the corpus reader parsed it into the metadata)."""
    lines = text.split("\n")
    if lines and lines[0].lstrip("\ufeff").rstrip() == "---":
        for i in range(1, len(lines)):
            if lines[i].rstrip() in ("---", "..."):
                return lines[i + 1 :]
    return lines


def _prose_lines(lines: list[str]) -> list[str]:
    """Lines outside fenced code blocks, with inline code blanked (same length, kept offsets)."""
    out: list[str] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            stripped = line.strip()
            if len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening and not (opening.group(1)[0] == "`" and "`" in line[opening.end():]):
            fence = opening.group(1)
            continue
        out.append(_INLINE_CODE.sub(lambda m: " " * len(m.group(0)), line))
    return out


def _blank(text: str, pattern: re.Pattern[str]) -> str:
    return pattern.sub(lambda m: " " * len(m.group(0)), text)


class _Scan:
    """What one note's body holds: first H1, inline tags, raw links (in order)."""

    def __init__(self, body: str):
        self.h1: str | None = None
        self.tags: list[str] = []
        self.wikilinks: list[tuple[bool, str]] = []  # (embed, inner text)
        self.md_links: list[tuple[str, str]] = []  # (label, target as written)
        for line in _prose_lines(body.split("\n")):
            heading = _HEADING.match(line)
            if heading:
                text = re.sub(r"[ \t]+#+[ \t]*$", "", heading.group(2)).strip()
                if len(heading.group(1)) == 1 and self.h1 is None and text:
                    self.h1 = text
                line = " " * (len(line) - len(heading.group(2))) + heading.group(2)
            for m in _WIKILINK.finditer(line):
                self.wikilinks.append((m.group(1) == "!", m.group(2)))
            line = _blank(line, _WIKILINK)
            for m in _MD_LINK.finditer(line):
                target = m.group(3)
                if target.startswith("<") and target.endswith(">"):
                    target = target[1:-1]
                self.md_links.append((m.group(2).strip(), target.strip()))
            # link targets and URLs hold '#' that are not tags; the link *text* may hold tags
            line = _MD_LINK.sub(lambda m: "[" + m.group(2) + "]" + " " * (len(m.group(0)) - len(m.group(2)) - 2), line)
            line = _blank(line, _URL)
            for m in _TAG.finditer(line):
                tag = normalize_tag(m.group(1))
                if tag and not tag.replace("/", "").isdigit():
                    self.tags.append(tag)


# ---------------------------------------------------------------------------------------------
# Resolution
# ---------------------------------------------------------------------------------------------


class _Index:
    """Note ids by resolution key, for Obsidian-like lookups."""

    def __init__(self, note_ids: Sequence[str]):
        self.by_key: dict[str, list[str]] = {}
        self.by_name: dict[str, list[str]] = {}
        for doc_id in note_ids:
            key = note_key(doc_id)
            self.by_key.setdefault(key, []).append(doc_id)
            self.by_name.setdefault(key.rpartition("/")[2], []).append(doc_id)

    @staticmethod
    def _best(ids: Sequence[str]) -> str | None:
        return min(ids, key=lambda d: (len(d), d)) if ids else None

    def wikilink(self, target: str) -> str | None:
        """Exact path first, then any note whose path ends with the target (its name when the
        target has no folder): the shortest path wins."""
        if target in self.by_key:
            return self._best(self.by_key[target])
        name = target.rpartition("/")[2]
        candidates = [d for d in self.by_name.get(name, []) if ("/" + note_key(d)).endswith("/" + target)]
        return self._best(candidates)

    def path(self, key: str) -> str | None:
        return self._best(self.by_key.get(key, []))


def _wikilink(inner: str, embed: bool, index: _Index) -> NoteLink | None:
    target, _, alias = inner.partition("|")
    target, _, heading = target.partition("#")
    target = target.strip()
    if not target:  # [[#Heading]]: a link inside the note itself
        return None
    key = note_key(target)
    if not key:
        return None
    return NoteLink(target=key, kind="embed" if embed else "wikilink", text=(alias.strip() or target),
                    heading=heading.strip() or None, resolved=index.wikilink(key))  # fmt: skip


def _markdown_link(label: str, raw: str, folder: str, index: _Index) -> NoteLink | None:
    if not raw or raw.startswith("#") or _SCHEME.match(raw) or raw.lower().startswith("www."):
        return None  # in-page anchor or external URL (http://, mailto:, ...)
    path, _, heading = raw.partition("#")
    path = unquote(path.split("?", 1)[0]).replace("\\", "/")
    suffix = posixpath.splitext(path)[1].lower()
    if not path or (suffix and suffix != NOTE_SUFFIX):
        return None  # an image, a PDF...: not a note
    joined = path.lstrip("/") if path.startswith("/") else posixpath.join(folder, path)
    key = note_key(posixpath.normpath(joined))
    if not key or key == ".":
        return None
    return NoteLink(target=key, kind="markdown", text=label or path, heading=unquote(heading).strip() or None,
                    resolved=index.path(key))  # fmt: skip


# ---------------------------------------------------------------------------------------------
# Public API
# ---------------------------------------------------------------------------------------------


def is_note(doc_id: str) -> bool:
    return doc_id.lower().endswith(NOTE_SUFFIX)


def note_record(doc_id: str, text: str, metadata: Mapping[str, Any], index: _Index) -> NoteRecord:
    scan = _Scan("\n".join(_body_lines(text)))
    folder = posixpath.dirname(doc_id)
    stem = posixpath.basename(doc_id)[: -len(NOTE_SUFFIX)] if is_note(doc_id) else posixpath.basename(doc_id)
    title = metadata.get("title")
    title = title.strip() if isinstance(title, str) and title.strip() else (scan.h1 or stem)
    tags = _front_matter_tags(metadata.get("tags"), doc_id) + scan.tags
    links: dict[tuple[str, str], NoteLink] = {}
    found = [_wikilink(inner, embed, index) for embed, inner in scan.wikilinks]
    found += [_markdown_link(label, raw, folder, index) for label, raw in scan.md_links]
    for link in found:
        if link is not None:
            links.setdefault((link.kind, link.target), link)
    return NoteRecord(
        title=title,
        date=_iso_date(metadata.get("date"), doc_id),
        tags=_unique(tags),
        folder=folder,
        folder_tags=_unique([_folder_tag(p) for p in folder.split("/")] if folder else []),
        links=list(links.values()),
    )


def note_records(docs: Sequence[tuple[str, str, Mapping[str, Any]]]) -> dict[str, NoteRecord]:
    """Vault structure of every Markdown document of a corpus, by document id.

    ``docs`` holds ``(document id, full text, front-matter metadata)`` for EVERY document of the
    corpus (links resolve against the whole set); documents that are not ``.md`` get no record.
    """
    note_ids = [doc_id for doc_id, _, _ in docs if is_note(doc_id)]
    index = _Index(note_ids)
    return {doc_id: note_record(doc_id, text, metadata or {}, index)
            for doc_id, text, metadata in docs if is_note(doc_id)}  # fmt: skip


def notes_of_documents(docs: Sequence[ChunkedDocument]) -> dict[str, NoteRecord]:
    """:func:`note_records` for chunked documents: each ``.md`` file is read again from its
    ``Document.path`` (a chunked document keeps its chunks, not its full text)."""
    triples: list[tuple[str, str, Mapping[str, Any]]] = []
    for d in docs:
        doc = d.document
        if not is_note(doc.id):
            triples.append((doc.id, "", doc.metadata))
            continue
        text = read_text(Path(doc.path), doc.path)
        if sha256_hex(text) != doc.hash:
            logger.warning("%s changed since it was chunked; its links and tags are read from the new text", doc.path)
        triples.append((doc.id, text, doc.metadata))
    return note_records(triples)
