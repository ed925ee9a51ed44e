"""PDF files through pypdf (BSD, pure Python): the text layer of each page, in content order.

pypdf and not pdfminer.six: on the same generated PDFs both keep the text (similarity >= 0.98 with the
source), pypdf reads about seven times more pages a second (benchmarks/documents.py). Running headers,
footers and page numbers are dropped (:mod:`.repeated`). A PDF with no text layer (a scan) is refused
with what to do: OCR is not done here.
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator
from contextlib import contextmanager

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.base import ReadDocument, Reader, bytes_digest
from graphrag_got.ingest.readers.repeated import drop_repeated

_log = logging.getLogger(__name__)

#: a page with fewer visible characters than this has no usable text layer
_MIN_PAGE_CHARS = 3


@contextmanager
def _pypdf_quiet() -> Iterator[None]:
    """pypdf logs each repair it makes to a damaged file (``incorrect startxref pointer``) as a warning; in a
    corpus run they would bury the one line a document gets, so they are shown only at debug level (-vv)."""
    log = logging.getLogger("pypdf")
    before = log.level
    if not _log.isEnabledFor(logging.DEBUG):
        log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        log.setLevel(before)


def _page_list(pages: list[int]) -> str:
    shown = ", ".join(str(p) for p in pages[:10])
    return shown + (f" and {len(pages) - 10} more" if len(pages) > 10 else "")


class PdfDocumentReader(Reader):
    name = "pdf"
    label = "a PDF"
    suffixes = (".pdf",)

    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        return b"%PDF-" in head  # the header may follow a few bytes of junk, as readers allow

    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        from pypdf import PdfReader
        from pypdf.errors import FileNotDecryptedError

        with _pypdf_quiet():
            try:
                pdf = PdfReader(io.BytesIO(data))
                if pdf.is_encrypted and not pdf.decrypt(""):  # an owner password alone opens with no password
                    raise FileNotDecryptedError("a password is needed")
                raw_pages = [page.extract_text() or "" for page in pdf.pages]
            except FileNotDecryptedError:
                raise CorpusError(f"{name}: the PDF is encrypted and needs a password to open; save a copy without "
                                  "the password (e.g. `qpdf --decrypt --password=PASSWORD in.pdf out.pdf`) and put "
                                  "that in the corpus", "encrypted") from None
            except CorpusError:
                raise
            except Exception as exc:  # noqa: BLE001 - damage breaks pypdf anywhere; one file never stops a run
                _log.debug("%s: pypdf failed", name, exc_info=True)
                raise CorpusError(f"{name}: the PDF is damaged and cannot be read ({type(exc).__name__}: "
                                  f"{str(exc)[:120]}); re-export or repair it (e.g. `qpdf in.pdf out.pdf`)",
                                  "corrupt") from None
        if not raw_pages:
            raise CorpusError(f"{name}: the PDF has no pages", "empty")
        pages = [[line.rstrip() for line in text.replace("\x00", "").replace("\r\n", "\n").replace("\r", "\n")
                  .split("\n")] for text in raw_pages]
        blank = [i + 1 for i, lines in enumerate(pages) if sum(len(x.strip()) for x in lines) < _MIN_PAGE_CHARS]
        if len(blank) == len(pages):
            raise CorpusError(f"{name}: no text layer on any of its {len(pages)} page(s): it looks scanned (pictures "
                              "of pages), and OCR is not done here. Add a text layer first, e.g. `ocrmypdf in.pdf "
                              "out.pdf`, and put out.pdf in the corpus", "no_text")
        pages, dropped = drop_repeated(pages)
        notes: list[str] = []
        if blank:
            notes.append(f"page(s) {_page_list(blank)} have no text layer (scanned or pictures only; OCR is not "
                         "done here, see `ocrmypdf`): nothing read from them")
        if dropped:
            notes.append(f"{dropped} running header, footer and page-number line(s) dropped")
        parts: list[str] = []
        starts: list[int] = []
        pos = 0
        for lines in pages:
            body = "\n".join(lines).strip()
            starts.append(pos)
            parts.append(body)
            pos += len(body) + 2  # the "\n\n" joining pages
        return ReadDocument(text="\n\n".join(parts), format=self.name, digest=bytes_digest(data), layout="pages",
                            page_starts=tuple(starts), lines_dropped=dropped, notes=tuple(notes))
