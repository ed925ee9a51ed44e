"""A step's "unchanged since last time" record: the digest of the inputs an output was made from, in a
small file beside it.

Three steps keep one (the extraction file: ``extract/fingerprint``; the build's load step:
``pipeline/load_inputs``; the build's communities step: ``pipeline/community_inputs``). Each computes its
own digest; this module keeps it: :meth:`Sidecar.kept` answers the record when the digest is the same
(the step then writes nothing and repeats the line it printed), :meth:`Sidecar.remember` writes it
atomically once the step finished, :meth:`Sidecar.forget` drops it before the step writes anything, so
an interrupted step never leaves a record vouching for an output it did not finish.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ValidationError

from graphrag_got.common.files import write_text_atomic


class SidecarRecord(BaseModel):
    """What a sidecar file holds: the inputs' digest and the line the step printed (may be empty)."""

    digest: str
    line: str = ""


@dataclass(frozen=True)
class Sidecar:
    path: Path

    def kept(self, digest: str) -> SidecarRecord | None:
        """The record when it was written for inputs with this ``digest``; None otherwise (or unreadable)."""
        try:
            record = SidecarRecord.model_validate_json(self.path.read_text(encoding="utf-8"))
        except (OSError, ValidationError):
            return None
        return record if record.digest == digest else None

    def remember(self, digest: str, line: str = "") -> None:
        write_text_atomic(self.path, SidecarRecord(digest=digest, line=line).model_dump_json() + "\n")

    def forget(self) -> None:
        self.path.unlink(missing_ok=True)
