"""Zip containers (DOCX and the other Office formats): opened only after their unpacked size is checked."""

from __future__ import annotations

import io
import zipfile

from graphrag_got.common.walk import TOO_LARGE
from graphrag_got.errors import CorpusError

ZIP_MAGIC = b"PK\x03\x04"
#: Compound File Binary: old .doc/.xls/.ppt files, and any Office file saved with a password
CFB_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_zip(name: str, data: bytes, label: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorpusError(f"{name}: {label} is a zip archive inside, and this one is damaged ({exc}); open and save "
                          "the file again", "corrupt") from None


def check_unpacked(name: str, archive: zipfile.ZipFile, max_bytes: int) -> None:
    """Refuse an archive whose members unpack to more than ``max_bytes`` (0: no cap) before any is read:
    a few KiB can hold gigabytes (a zip bomb). The sizes checked are the ones the archive declares, and
    zipfile stops reading a member at its declared size."""
    total = sum(info.file_size for info in archive.infolist())
    if max_bytes and total > max_bytes:
        raise CorpusError(f"{name}: the file unpacks to {total:,} bytes, over the {max_bytes:,} a document may have "
                          "(GRAPHRAG_MAX_DOCUMENT_BYTES); split it, or raise GRAPHRAG_MAX_DOCUMENT_BYTES (0: no "
                          "limit) if you trust it", TOO_LARGE)
