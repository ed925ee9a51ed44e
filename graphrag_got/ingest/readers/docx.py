"""Word documents (.docx) through python-docx (MIT): paragraphs and tables in document order; the
paragraphs styled ``Title`` or ``Heading N`` are the headings a chunk's section path is made of."""

from __future__ import annotations

import io
import logging
import re

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.archive import ZIP_MAGIC, check_unpacked, open_zip
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
            out += [(0, row) for row in _rows(item)]
        else:
            value = item.text.strip()
            if value:
                out.append((_level(item), value))
    return out


def _rows(table) -> list[str]:  # type: ignore[no-untyped-def]
    """Each row of ``table`` as its cells' text joined by `` | ``. A merged cell is given once: python-docx
    lists it at every grid position it covers (across and down), as the same XML cell (``_tc``, held
    here so its identity stays valid: python-docx has no public cell identity)."""
    seen: dict[int, object] = {}
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        for cell in row.cells:
            element = cell._tc  # noqa: SLF001
            if id(element) in seen:
                continue
            seen[id(element)] = element
            cells.append(_cell_text(cell))
        line = " | ".join(cells)
        if line.strip(" |"):
            rows.append(line)
    return rows


def _cell_text(cell) -> str:  # type: ignore[no-untyped-def]
    """A cell's paragraphs and the rows of the tables nested in it, white space collapsed."""
    from docx.table import Table

    parts = [" ".join(_rows(item)) if isinstance(item, Table) else item.text for item in cell.iter_inner_content()]
    return " ".join(" ".join(parts).split())


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
