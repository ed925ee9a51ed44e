"""The inputs of an extraction file, as one digest: a rerun whose inputs have not changed rewrites nothing.

Rebuilding a corpus whose documents, stored answers, ontology and extraction settings are all as they
were would produce the same ``extraction.json`` byte for byte (validation, repair and resolution are
deterministic), yet validating thousands of stored answers again takes minutes on a large notes vault.
The digest of those inputs is kept beside the file (``extraction.json.inputs``); when it matches and
the file is there, the run reads the file instead of rebuilding it, and says so.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Iterable

from graphrag_got.common.sidecar import Sidecar
from graphrag_got.config import ChunkingSettings, ExtractSettings
from graphrag_got.extract.alias_file import alias_file_path

logger = logging.getLogger(__name__)

#: Bump when what the digest covers changes meaning (older sidecars then never match).
FINGERPRINT_VERSION = "extraction-inputs/1"


def sidecar(out: Path) -> Path:
    """Where the digest of ``out``'s inputs is kept."""
    return out.with_name(out.name + ".inputs")


@functools.cache
def code_version() -> str:
    """sha256 of the package's own source: any code change rebuilds the file (ms, once per process)."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0" + path.read_bytes())
    return h.hexdigest()


def file_digest(path: Path | None) -> str:
    """sha256 of a file's bytes, read in blocks ("absent" when there is none)."""
    if path is None:
        return "absent"
    h = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    except FileNotFoundError:
        return "absent"
    return h.hexdigest()


def inputs_digest(*, settings: dict[str, Any], ontology_hash: str, model: str, form: str,
                  chunks: Iterable[tuple[str, str, str | None, str]], skipped: Iterable[str], code_version: str,
                  side_files: dict[str, str] | None = None) -> str:
    """sha256 of everything the extraction file is built from: the extraction and chunking settings,
    the ontology and the files read beside it (``side_files``: the alias file), the model and answer
    form, each chunk (id, text hash, the stored answer's creation time, its place in the document: a PDF
    chunk that moved to another page is a change) and the skipped inputs, plus
    the package's source (code changes rebuild)."""
    h = hashlib.sha256()
    head = {"v": FINGERPRINT_VERSION, "code": code_version, "settings": settings, "ontology": ontology_hash,
            "model": model, "form": form, "side_files": side_files or {}}
    h.update(json.dumps(head, sort_keys=True, default=str).encode("utf-8"))
    for chunk_id, chunk_hash, created, location in chunks:
        place = f"\t{location}" if location else ""  # text chunks keep the digest they had
        h.update(f"\n{chunk_id}\t{chunk_hash}\t{created}{place}".encode("utf-8"))
    for item in skipped:
        h.update(f"\nskipped\t{item}".encode("utf-8"))
    return h.hexdigest()


def unchanged(out: Path, digest: str) -> bool:
    """Whether ``out`` exists and was written from inputs with this digest."""
    return out.is_file() and Sidecar(sidecar(out)).kept(digest) is not None


def remember(out: Path, digest: str) -> None:
    """Record the digest of the inputs ``out`` was just written from."""
    Sidecar(sidecar(out)).remember(digest)


def forget(out: Path) -> None:
    """Drop the digest (a run that wrote ``out`` from inputs it cannot vouch for)."""
    Sidecar(sidecar(out)).forget()


def validation_context(extract: ExtractSettings, chunking: ChunkingSettings, onto: Any) -> dict[str, Any]:
    """What every chunk's validation depends on beyond the chunk itself: the package's source, the ontology
    and its alias file, the extraction and chunking settings (the validation memo's context, and part of
    the extraction file's input digest)."""
    return {"code": code_version(), "ontology": onto.hash,
            "aliases": file_digest(alias_file_path(onto)),
            "settings": {"extract": extract.model_dump(mode="json"),
                         "chunking": chunking.model_dump(mode="json")}}
