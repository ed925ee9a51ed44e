"""The coverage evidence's validation, kept between refreshes (``<extraction>.evidence``).

``code refresh`` keeps a coverage run's evidence as it was recorded: every refresh rebuilds the same
answers for the same chunks (click: 574 chunks, 42,000 EXECUTES facts and 44,000 mentions, most of
the extraction's records), validates them and merges them again, for the same records. This memo
keeps that work: the state of the aggregation (:class:`~graphrag_got.extract.aggregate.Aggregator`)
once every evidence chunk was added, with their refusals and their number, under a key made of all
it depends on:

* the package's source (:func:`~graphrag_got.extract.fingerprint.code_version`: the validator, the
  aggregation and this extractor), the whole ontology (cues included) and the relation attributes
  that make a fact's identity;
* each evidence document and chunk id, with the answer the chunk is validated from (JSON, keys sorted).

A refresh whose key matches starts the aggregation from the kept state and validates only the
code's own chunks; the records are the same as validating every chunk again
(``tests/test_code_refresh.py`` counts the validations and compares the file with a full
extraction). Any other refresh validates everything and writes the memo again. The file is a pickle
of this tool's own records, read only from beside the extraction file, unpickled only when its
header names this format and its key matches, and used only when what it holds has the expected
types; anything else is ignored with a log line.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from graphrag_got.code.coverage import EvidenceDocument
from graphrag_got.common.canonical import canonical_json
from graphrag_got.common.files import write_bytes_atomic
from graphrag_got.extract.aggregate import Aggregator
from graphrag_got.extract.extraction import EntityRecord, Rejection, RelationRecord
from graphrag_got.extract.fingerprint import code_version
from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)

SUFFIX = ".evidence"
#: Bump when what the file holds or what its key covers changes meaning.
_HEADER = b"graphrag_got.code.evidence-memo/1\n"
_KEY_BYTES = 64  # a sha256, in hex


def evidence_key(onto: Ontology, identity: tuple[str, ...], extra: Sequence[EvidenceDocument]) -> str:
    """The digest of everything the validation and aggregation of ``extra`` depend on (module docstring)."""
    h = hashlib.sha256(canonical_json([_HEADER.decode().strip(), code_version(),
                                       onto.model_dump_json(exclude={"source"}), list(identity)]))
    for doc, pairs in extra:
        for rec, answer in pairs:
            h.update(b"\n" + canonical_json([doc.id, rec.id, answer]))
    return h.hexdigest()


@dataclass
class KeptEvidence:
    """The aggregation after every evidence chunk, their refusals (in order) and how many chunks there were."""

    aggregator: Aggregator
    rejections: list[Rejection]
    chunks: int


class EvidenceMemo:
    """The memo file of one extraction file (``path`` None: no memo, everything is validated)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.key: str | None = None
        self.reused = False
        self._pending: bytes | None = None

    def get(self, onto: Ontology, identity: tuple[str, ...], extra: Sequence[EvidenceDocument]) -> KeptEvidence | None:
        """The kept work when the memo was made from these very inputs (a fresh copy: the caller goes on
        adding to it); None otherwise. Remembers the key for :meth:`keep`."""
        if self.path is None:
            return None
        self.key = evidence_key(onto, identity, extra)
        blob = self._read()
        if blob is None:
            return None
        try:
            kept = _checked(pickle.loads(blob), identity)
        except Exception as exc:  # a truncated or foreign file: validate again
            logger.warning("%s: evidence memo unreadable (%s): the coverage evidence is validated again",
                           self.path, exc)
            return None
        if kept is None:
            logger.warning("%s: evidence memo holds other data than this tool writes: the coverage evidence is "
                           "validated again", self.path)
            return None
        self.reused = True
        return kept

    def _read(self) -> bytes | None:
        assert self.path is not None and self.key is not None
        try:
            with self.path.open("rb") as fh:
                head = fh.read(len(_HEADER) + _KEY_BYTES + 1)
                if head != _HEADER + self.key.encode("ascii") + b"\n":
                    if head.startswith(_HEADER):
                        logger.info("%s: the coverage evidence, the ontology or this tool changed since the memo "
                                    "was written: the evidence is validated again", self.path)
                    else:
                        logger.warning("%s: not an evidence memo of this version: the coverage evidence is validated "
                                       "again", self.path)
                    return None
                return fh.read()
        except FileNotFoundError:
            return None
        except OSError as exc:
            logger.warning("%s: evidence memo unreadable (%s): the coverage evidence is validated again",
                           self.path, exc)
            return None

    def keep(self, kept: KeptEvidence) -> None:
        """Take a copy of the work (pickled now: the caller goes on changing the records) for :meth:`save`."""
        if self.path is None or self.key is None:
            return
        a = kept.aggregator
        state = (list(a.identity), a.entities, a.relations, a.entity_chunks, a.relation_chunks, kept.rejections,
                 kept.chunks)
        self._pending = pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)

    def save(self) -> None:
        """Write the work :meth:`keep` took (once the extraction file is written); nothing when it was reused."""
        if self.path is None or self.key is None or self._pending is None:
            return
        write_bytes_atomic(self.path, _HEADER + self.key.encode("ascii") + b"\n" + self._pending)
        self._pending = None


def _checked(state: Any, identity: tuple[str, ...]) -> KeptEvidence | None:
    """The unpickled state as a :class:`KeptEvidence` when every part has the type this module writes."""
    if not (isinstance(state, tuple) and len(state) == 7):
        return None
    ident, entities, relations, entity_chunks, relation_chunks, rejections, chunks = state
    ok = (ident == list(identity) and isinstance(chunks, int)
          and isinstance(entities, dict) and all(isinstance(e, EntityRecord) for e in entities.values())
          and isinstance(relations, dict) and all(isinstance(r, RelationRecord) for r in relations.values())
          and isinstance(entity_chunks, dict) and entity_chunks.keys() == entities.keys()
          and all(isinstance(s, set) for s in entity_chunks.values())
          and isinstance(relation_chunks, dict) and relation_chunks.keys() == relations.keys()
          and all(isinstance(s, set) for s in relation_chunks.values())
          and isinstance(rejections, list) and all(isinstance(r, Rejection) for r in rejections))
    if not ok:
        return None
    agg = Aggregator(identity)
    agg.entities, agg.relations, agg.entity_chunks, agg.relation_chunks = (entities, relations, entity_chunks,
                                                                           relation_chunks)
    return KeptEvidence(agg, rejections, chunks)
