"""Plain text and Markdown files: strict UTF-8, the format the corpus always had."""

from __future__ import annotations

import hashlib

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.base import ReadDocument, Reader


def decode_text(raw: bytes, name: str) -> str:
    """A text file's bytes as text: strict UTF-8 (a leading BOM dropped), line breaks normalised to
    ``\\n`` like Python's text mode, so offsets do not depend on the platform that wrote it.

    A binary file (any NUL byte: no text file has one, and UTF-16 text has many), a UTF-16 file
    or bytes that are not UTF-8 raise :class:`CorpusError` naming the file and line."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise CorpusError(f"{name}: the file is UTF-16 (it starts with a UTF-16 byte order mark); "
                          "re-save it as UTF-8", "utf16")
    nul = raw.find(b"\x00")
    if nul >= 0:
        line = raw[:nul].count(b"\n") + 1
        raise CorpusError(f"{name}, line {line}: a NUL byte at offset {nul}; this looks like a binary file, "
                          "not text. Remove it from the corpus or convert it to UTF-8 text", "binary")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise CorpusError(
            f"{name}, line {line}: not valid UTF-8 (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "re-save the file as UTF-8", "not_utf8"
        ) from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


class TextReader(Reader):
    """``.txt`` (paragraph chunker) and ``.md`` (Markdown chunker) files; also the last resort for
    any file no other reader recognises, so a binary file gets the text reader's clear refusal."""

    name = "text"
    label = "a text file"
    suffixes = (".txt", ".md")

    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        return True

    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        text = decode_text(data, name)
        markdown = name.lower().endswith(".md")
        # the digest of a text file stays the hash of its text (as chunking.sha256_hex), so stored answers and loads keyed by it hold
        return ReadDocument(text=text, format="markdown" if markdown else "text", digest=hashlib.sha256(text.encode("utf-8")).hexdigest(),
                            layout="markdown" if markdown else "paragraph")
