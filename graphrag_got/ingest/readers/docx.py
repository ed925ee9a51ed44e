"""Word documents (.docx) through python-docx (MIT): paragraphs and tables in document order; the
paragraphs styled ``Title`` or ``Heading N`` are the headings a chunk's section path is made of."""

from __future__ import annotations

import io
import logging
import re

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.archive import CFB_MAGIC, ZIP_MAGIC, check_unpacked, open_zip
from graphrag_got.ingest.readers.base import Heading, ReadDocument, Reader, bytes_digest

_log = logging.getLogger(__name__)

_HEADING_STYLE = re.compile(r"heading\s*([1-9])$", re.IGNORECASE)
MAIN_PART = "word/document.xml"


class DocxReader(Reader):
    name = "docx"
    label = "a Word document"
    suffixes = (".docx",)

    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        return head.startswith(ZIP_MAGIC) and MAIN_PART.encode() in data

    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        archive = open_zip(name, data, self.label)
        if MAIN_PART not in archive.namelist():
            raise CorpusError(f"{name}: a zip archive with no {MAIN_PART}, so not a Word document", "unsupported")
        check_unpacked(name, archive, max_bytes)
        import docx

        try:
            document = docx.Document(io.BytesIO(data))
            blocks = list(_blocks(document))
        except Exception as exc:  # noqa: BLE001 - a damaged part may break python-docx anywhere; the run goes on
            _log.debug("%s: python-docx failed", name, exc_info=True)
            raise CorpusError(f"{name}: the Word document is damaged and cannot be read ({type(exc).__name__}: "
                              f"{str(exc)[:120]}); open it in Word or LibreOffice and save it again",
                              "corrupt") from None
        text, headings = join_blocks(blocks)
        if not text.strip():
            raise CorpusError(f"{name}: the Word document holds no text", "empty")
        return ReadDocument(text=text, format=self.name, digest=bytes_digest(data), layout="sections",
                            headings=headings)


def _level(paragraph) -> int:  # type: ignore[no-untyped-def]
    style = paragraph.style.name if paragraph.style is not None else ""
    if style == "Title":
        return 1
    match = _HEADING_STYLE.match(style or "")
    return int(match.group(1)) + 1 if match else 0  # "Heading 1" sits under a "Title"


def _blocks(document) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
    """``(heading level or 0, text)`` of each non-empty paragraph and table row, in document order."""
    from docx.table import Table

    out: list[tuple[int, str]] = []
    for item in document.iter_inner_content():
        if isinstance(item, Table):
            for row in item.rows:
                cells: list[str] = []
                for cell in row.cells:
                    value = " ".join(cell.text.split())
                    if not cells or value != cells[-1]:  # a merged cell is listed once per grid column
                        cells.append(value)
                line = " | ".join(cells)
                if line.strip(" |"):
                    out.append((0, line))
        else:
            value = item.text.strip()
            if value:
                out.append((_level(item), value))
    return out


def join_blocks(blocks: list[tuple[int, str]]) -> tuple[str, tuple[Heading, ...]]:
    """One text of ``(heading level or 0, text)`` blocks, a blank line between blocks, and its headings."""
    parts: list[str] = []
    headings: list[Heading] = []
    pos = 0
    for level, value in blocks:
        if level:
            title = " ".join(value.split())
            headings.append(Heading(pos, pos + len(title), level, title))
            value = title
        parts.append(value)
        pos += len(value) + 2
    return "\n\n".join(parts), tuple(headings)
