"""Document readers: one class per input format, chosen by the file's bytes.

:data:`READERS` is the one list of formats, tried in order; the first whose :meth:`Reader.sniff`
accepts the bytes reads the file. The text reader comes last and accepts anything, so a file no
reader knows gets the text reader's refusal (binary, not UTF-8). A file whose name says one format
and whose bytes another is read by its bytes, with a note; a file named as a binary format (``.pdf``,
``.docx``) whose bytes are no known format is refused.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.base import Heading, Layout, ReadDocument, Reader
from graphrag_got.ingest.readers.docx import DocxReader
from graphrag_got.ingest.readers.html import HtmlReader
from graphrag_got.ingest.readers.legacy import LegacyOfficeReader
from graphrag_got.ingest.readers.pdf import PdfDocumentReader
from graphrag_got.ingest.readers.text import TextReader, decode_text

__all__ = ["READERS", "Heading", "Layout", "ReadDocument", "Reader", "decode_text", "document_suffixes",
           "read_document", "reader_for"]

_log = logging.getLogger(__name__)

#: Every format, tried in this order. A new format: a Reader subclass added here.
READERS: tuple[Reader, ...] = (PdfDocumentReader(), DocxReader(), LegacyOfficeReader(), HtmlReader(), TextReader())

_HEAD = 1024


def document_suffixes() -> tuple[str, ...]:
    """The file name endings a corpus folder is searched for."""
    return tuple(s for r in READERS for s in r.suffixes)


def reader_for(name: str, data: bytes) -> Reader:
    head = data[:_HEAD]
    return next(r for r in READERS if r.sniff(name, head, data))


def read_document(path: Path, name: str, *, max_bytes: int = 0) -> ReadDocument:
    """Read one corpus file with the reader its bytes call for. Raises :class:`CorpusError` (with a
    reason code) when it cannot be read."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{name}: cannot read the file ({exc.strerror or exc})", "unreadable") from None
    reader = reader_for(name, data)
    suffix = path.suffix.lower()
    named = next((r for r in READERS if suffix in r.suffixes), None)
    if named is not None and named is not reader and not isinstance(named, TextReader):
        if isinstance(reader, TextReader):
            raise CorpusError(f"{name}: named {suffix} but the bytes are not {named.label} (the file does not start "
                              f"as one); rename it to what it is or replace it with a real {suffix[1:].upper()} file",
                              "wrong_format")
    read = reader.read(name, data, max_bytes=max_bytes)
    if named is not None and named is not reader and not isinstance(reader, TextReader):
        note = f"named {suffix} but the bytes are {reader.label}: read as {reader.name}"
        _log.warning("%s: %s", name, note)
        read = replace(read, notes=(note, *read.notes))
    return read
