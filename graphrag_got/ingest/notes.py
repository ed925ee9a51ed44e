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
import json
import logging
import posixpath
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from graphrag_got.common.files import write_json_atomic
from graphrag_got.ingest.chunking import ChunkedDocument, read_text, sha256_hex
from graphrag_got.ingest.note_record import NoteLink, NoteRecord

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

    def __init__(self, body: str | None = None):
        self.h1: str | None = None
        self.tags: list[str] = []
        self.wikilinks: list[tuple[bool, str]] = []  # (embed, inner text)
        self.md_links: list[tuple[str, str]] = []  # (label, target as written)
        if body is not None:
            self._scan(body)

    def as_data(self) -> list[Any]:
        return [self.h1, self.tags, [list(w) for w in self.wikilinks], [list(m) for m in self.md_links]]

    @classmethod
    def from_data(cls, data: Any) -> "_Scan | None":
        """A scan from :meth:`as_data`'s list; None when ``data`` is not one (a damaged cache entry)."""
        try:
            h1, tags, wikilinks, md_links = data
            scan = cls()
            scan.h1 = h1 if isinstance(h1, str) or h1 is None else str(h1)
            scan.tags = [str(t) for t in tags]
            scan.wikilinks = [(bool(embed), str(inner)) for embed, inner in wikilinks]
            scan.md_links = [(str(label), str(target)) for label, target in md_links]
        except (TypeError, ValueError):
            return None
        return scan

    def _scan(self, body: str) -> None:
        for line in _prose_lines(body.split("\n")):
            if "#" not in line and "[" not in line:
                continue  # no heading, tag or link can start here (most prose lines: a quick skip)
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


def scan_note(text: str) -> _Scan:
    """What the body of a note's full ``text`` holds (front matter left out)."""
    return _Scan("\n".join(_body_lines(text)))


def note_record(doc_id: str, text: str, metadata: Mapping[str, Any], index: _Index,
                scan: _Scan | None = None) -> NoteRecord:
    """The record of one note (``scan``: :func:`scan_note` of ``text`` when the caller has it)."""
    scan = scan if scan is not None else scan_note(text)
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


def note_records(docs: Sequence[tuple[str, str, Mapping[str, Any]]],
                 scans: Mapping[str, _Scan] | None = None) -> dict[str, NoteRecord]:
    """Vault structure of every Markdown document of a corpus, by document id.

    ``docs`` holds ``(document id, full text, front-matter metadata)`` for EVERY document of the
    corpus (links resolve against the whole set); documents that are not ``.md`` get no record.
    ``scans``: the body scans the caller already has, by document id (their text is then not used).
    """
    scans = scans or {}
    note_ids = [doc_id for doc_id, _, _ in docs if is_note(doc_id)]
    index = _Index(note_ids)
    return {doc_id: note_record(doc_id, text, metadata or {}, index, scans.get(doc_id))
            for doc_id, text, metadata in docs if is_note(doc_id)}  # fmt: skip


#: What a cached scan depends on besides the note's text: this module's code.
_SCANNER = sha256_hex(Path(__file__).read_text(encoding="utf-8"))


class ScanCache:
    """Note body scans by the note's content hash, in one JSON file of the cache folder, so a build reads
    and scans only the notes that changed (scanning all 6,000 notes of a vault cost ~2 s of every daily
    update, ``benchmarks/vault_scale.py``). A scan depends on the text alone (links resolve afterwards,
    against the whole vault); entries made by another version of this module are not used. A missing or
    damaged file is an empty cache; :meth:`write` keeps the scans of the current notes only."""

    FORMAT = "graphrag_got.note-scans/1"

    def __init__(self, path: Path):
        self.path = path
        self.scans: dict[str, list[Any]] = {}
        self.hits = 0
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return
        except (OSError, ValueError) as exc:
            logger.warning("note scan cache %s unreadable (%s): every note is read again", path, exc)
            return
        if isinstance(data, dict) and data.get("format") == self.FORMAT and data.get("scanner") == _SCANNER \
                and isinstance(data.get("scans"), dict):
            self.scans = data["scans"]

    def get(self, text_hash: str) -> _Scan | None:
        scan = _Scan.from_data(self.scans[text_hash]) if text_hash in self.scans else None
        self.hits += scan is not None
        return scan

    def write(self, scans: Mapping[str, _Scan]) -> None:
        """Replace the file with ``scans`` (content hash -> scan)."""
        write_json_atomic(self.path, {"format": self.FORMAT, "scanner": _SCANNER,
                                      "scans": {h: sc.as_data() for h, sc in sorted(scans.items())}}, indent=None)


def notes_of_documents(docs: Sequence[ChunkedDocument], cache: ScanCache | None = None) -> dict[str, NoteRecord]:
    """:func:`note_records` for chunked documents: each ``.md`` file is read again from its
    ``Document.path`` (a chunked document keeps its chunks, not its full text), unless ``cache`` holds
    the scan of its content hash; ``cache`` is then rewritten with the scans of these documents."""
    triples: list[tuple[str, str, Mapping[str, Any]]] = []
    scans: dict[str, _Scan] = {}
    by_hash: dict[str, _Scan] = {}
    for d in docs:
        doc = d.document
        if not is_note(doc.id) or doc.format not in ("text", "markdown"):  # a PDF named .md has no note text
            triples.append((doc.id, "", doc.metadata))
            continue
        scan = cache.get(doc.hash) if cache is not None else None
        if scan is None:
            text = read_text(Path(doc.path), doc.path)
            if sha256_hex(text) != doc.hash:
                logger.warning("%s changed since it was chunked; its links and tags are read from the new text",
                               doc.path)
            else:  # only a scan of the text that was chunked is kept under its hash
                scan = by_hash[doc.hash] = scan_note(text)
        else:
            text = ""
            by_hash[doc.hash] = scan
        if scan is not None:
            scans[doc.id] = scan
        triples.append((doc.id, text, doc.metadata))
    if cache is not None:
        cache.write(by_hash)
    return note_records(triples, scans)
