"""Office files in the old binary container (Compound File Binary): ``.doc``, ``.xls``, ``.ppt``, and
any Word file saved with a password (Office encrypts a ``.docx`` into this container). None is read:
the reader exists so that such a file gets a sentence saying what to do, not a garbled text."""

from __future__ import annotations

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.archive import CFB_MAGIC
from graphrag_got.ingest.readers.base import ReadDocument, Reader


class LegacyOfficeReader(Reader):
    name = "office-binary"
    label = "an old-format or password-protected Office file"
    suffixes = ()

    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        return head.startswith(CFB_MAGIC)

    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        raise CorpusError(f"{name}: an old-format Office file (.doc, .xls, .ppt) or a password-protected one; remove "
                          "the password and save it as .docx (or PDF), then put that in the corpus", "encrypted_or_legacy")
