"""What every document reader gives back, and the interface a reader implements.

A reader turns a file's bytes into one text plus where things are in it: the start offset of each
page (PDF) and the heading lines with their level (DOCX, HTML). The chunker cuts that text; every
chunk keeps ``text[start:end] == chunk.text`` and takes its page and heading path from these
locations. Readers are chosen by the file's bytes (:meth:`Reader.sniff`), never by its name alone.
"""

from __future__ import annotations

import hashlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Literal

#: How a read text is cut: ``paragraph`` and ``markdown`` as for text files; ``sections``: at the
#: reader's heading lines; ``pages``: within each page, never across a page break.
Layout = Literal["paragraph", "markdown", "sections", "pages"]


@dataclass(frozen=True)
class Heading:
    """A heading line of the read text: ``text[start:end] == title``; ``level`` 1 is the highest."""

    start: int
    end: int
    level: int
    title: str


@dataclass(frozen=True)
class ReadDocument:
    """One document as a reader read it."""

    text: str
    format: str  # the reader's name: "text", "markdown", "pdf", "docx", "html"
    digest: str  # sha256 hex of the file's bytes (text files: of the decoded text, as before)
    layout: Layout
    headings: tuple[Heading, ...] = ()
    page_starts: tuple[int, ...] = ()  # offset where page i + 1 starts; empty: no pages
    lines_dropped: int = 0  # running headers, footers and page numbers left out
    notes: tuple[str, ...] = ()  # what a user should know about the reading (pages without text...)

    @property
    def pages(self) -> int | None:
        return len(self.page_starts) or None


def bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class Reader(ABC):
    """One input format. A new format is a new subclass listed in
    :data:`graphrag_got.ingest.readers.READERS`, nothing else."""

    #: short name, shown to users and stored as the document's ``format``
    name: str = ""
    #: how users know it ("a PDF", "a Word document"), for messages
    label: str = ""
    #: file name endings of this format, lower case with the dot (what the corpus walk picks up)
    suffixes: tuple[str, ...] = ()

    @abstractmethod
    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        """Whether ``data`` (``head``: its first KiB) is of this format, judged from the bytes (``name``
        only tells plain text from Markdown, which no byte does)."""

    @abstractmethod
    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        """The document in ``data``; :class:`graphrag_got.errors.CorpusError` with a reason code and a
        message saying what to do when it cannot be read. ``max_bytes`` (0: none) bounds what an
        archive may unpack to."""
