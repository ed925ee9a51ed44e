"""Validated answers kept per chunk: a build re-validates only the chunks whose inputs changed.

Repair and validation are deterministic, but they are not purely per chunk: the repair reads the
corpus's class votes (:class:`~graphrag_got.extract.repair.ClassVotes`) and the cue check masks the
entity names listed anywhere in the corpus. A daily update of a notes vault touches a few dozen
notes out of thousands, and validating every stored answer again cost most of its extract step
(measured in ``benchmarks/vault_scale.py``). So each chunk's result is kept with a key made of what
it depends on:

* the memo's context (kept once per file): the package's source, the ontology and its alias file,
  the extraction and chunking settings; any change there drops the whole memo;
* the chunk: id, document, text hash and offset, and the stored answer itself (its parsed JSON);
* what the repair decides from the corpus's class votes of the names that answer lists or uses as
  relation ends (the only votes it reads): each name's majority class and whether it is strict; the
  exact counts only of the names a repair record quotes them for ("Tool in 5 chunk answer(s)");
* when a relation declares cues and the cue check is on: the whole set of corpus entity names
  (``names_key``), checked separately, since it is known only after every chunk's repair.

A chunk whose key matches reuses its repairs, added entities and validation; any other chunk goes
through repair and validation as before, so the result is the same as validating everything
(``tests/test_validation_memo.py`` compares both). The memo lives in the cache folder, one file per
output file, rewritten after each run with the current chunks only.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any, Iterable

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from graphrag_got.common.files import write_text_atomic
from graphrag_got.common.normalize import normalize_name
from graphrag_got.extract.answer import RawAnswer
from graphrag_got.extract.extraction import EntityRecord, RelationRecord, Rejection, Repair
from graphrag_got.extract.repair import ClassVotes, majority_of

__all__ = ["MEMO_VERSION", "MemoEntry", "QuotingVotes", "ValidationMemo", "answer_names", "chunk_key", "names_key",
           "votes_key"]

logger = logging.getLogger(__name__)

#: Bump when what an entry holds or what its key covers changes meaning (older memos are dropped).
MEMO_VERSION = "validated-chunks/1"


class MemoEntry(BaseModel):
    """One chunk's repair and validation, as the validator produced them before aggregation."""

    model_config = ConfigDict(extra="forbid")

    key: str
    quoted: list[str] = []  # names whose vote counts its repair records quote
    votes_key: str = ""  # those counts
    names_key: str = ""  # digest of the corpus names the cue check masked ("" when it does not run)
    names: list[str]  # the entity names this chunk's repaired answer lists (its share of the corpus names)
    answer_entities: list[JsonValue]  # the answer's items after the repair
    answer_relations: list[JsonValue]
    repairs: list[Repair]
    extra_entities: list[dict[str, JsonValue]]
    entities: list[EntityRecord]
    relations: list[RelationRecord]
    rejections: list[Rejection]


class _MemoFile(BaseModel):
    format: str = MEMO_VERSION
    context: str
    chunks: dict[str, MemoEntry]


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def answer_names(answer: RawAnswer) -> set[str]:
    """Normalized names an answer lists as entities or uses as relation ends (every string of a relation
    item: over-inclusive on purpose, a relation's own name simply has no votes)."""
    keys: set[str] = set()
    for item in answer.entities:
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            keys.add(normalize_name(item["name"]))
    for item in answer.relations:
        if isinstance(item, dict):
            keys.update(normalize_name(v) for v in item.values() if isinstance(v, str))
    keys.discard("")
    return keys


def chunk_key(*, chunk_id: str, document_id: str, chunk_hash: str, start: int, parsed: JsonValue,
              votes: ClassVotes | None, names: Iterable[str]) -> str:
    """The key of one chunk's result: the chunk, its stored answer and what the repair decides from the
    class votes of its names (each name's majority class, whether it is strict, whether it has votes)."""
    decided = {k: majority_of(votes.votes[k]) for k in sorted(names) if k in votes.votes} if votes is not None else {}
    return _digest([chunk_id, document_id, chunk_hash, start, parsed, decided])


def votes_key(votes: ClassVotes | None, names: Iterable[str]) -> str:
    """The exact vote counts of ``names``: repair records quote them ("Tool in 5 chunk answer(s)"), so an
    entry whose repairs quoted them is reused only when they are the same."""
    if votes is None:
        return ""
    return _digest({k: sorted(votes.votes[k].items()) for k in sorted(names) if k in votes.votes})


class QuotingVotes(ClassVotes):
    """The corpus's votes, recording the names whose counts a repair message quoted (``describe``)."""

    def __init__(self, votes: ClassVotes):  # shares the counts, does not count again
        self.classes, self.votes = votes.classes, votes.votes
        self.quoted: set[str] = set()

    def describe(self, name: str) -> str:
        self.quoted.add(normalize_name(name))
        return super().describe(name)


def names_key(names: Iterable[str] | None) -> str:
    """The digest of the corpus names a validation masked; "" when the cue check does not use them."""
    return "" if names is None else _digest(sorted(names))


class ValidationMemo:
    """The per-chunk results of the last run for one output file (read at start, written at the end)."""

    def __init__(self, path: Path, context: Any):
        self.path = path
        self.context = _digest([MEMO_VERSION, context])
        self.entries: dict[str, MemoEntry] = {}
        self.hits = 0
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return
        except OSError as exc:
            logger.warning("validation memo %s unreadable (%s): every answer is validated again", path, exc)
            return
        try:
            memo = _MemoFile.model_validate_json(raw)
        except ValidationError as exc:
            logger.warning("validation memo %s is damaged (%d problem(s)): every answer is validated again",
                           path, exc.error_count())
            return
        if memo.format == MEMO_VERSION and memo.context == self.context:
            self.entries = memo.chunks
        else:
            logger.info("validation memo %s was made under other code, ontology or settings: not used", path)

    def get(self, chunk_id: str, key: str, votes: ClassVotes | None) -> MemoEntry | None:
        """The entry of ``chunk_id`` when its key matches, and the counts its repairs quote are the same."""
        entry = self.entries.get(chunk_id)
        if entry is None or entry.key != key or (entry.quoted and entry.votes_key != votes_key(votes, entry.quoted)):
            return None
        return entry

    def write(self, entries: dict[str, MemoEntry]) -> None:
        """Replace the memo with ``entries`` (the chunks of this run)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(self.path, _MemoFile(context=self.context, chunks=entries).model_dump_json())


def memo_path(cache_dir: Path, out: Path) -> Path:
    """Where the memo of the extraction file ``out`` is kept: one file per output path."""
    return cache_dir / "validated" / (hashlib.sha256(str(out.resolve()).encode("utf-8")).hexdigest()[:24] + ".json")
