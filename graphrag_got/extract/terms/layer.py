"""The terms strategy's two steps: each chunk's key terms (no model), then one pass over the corpus that
types the terms several notes share, once per term.

A chunk's stored answer (``CacheRecord.parsed``) holds its terms as untyped entities, and what found
them::

    {"entities": [{"name", "type": "Term"}...], "relations": [],
     "terms": {"strategy": "terms", "found": [{"name", "source", "context"}...]}}

It depends on the chunk's text alone, so an edited note is read again alone and a rerun reads nothing.
The types are not part of it: they live per term (:class:`~graphrag_got.extract.terms.type_terms.TermTypeCache`)
and are put on the answers by :func:`corpus_pass` every run, so a term gets one class in every note, and
a term a new note makes shared is typed without reading any other note again.

Names are read against the whole corpus once more: a capitalized name whose first word the corpus writes
in lower case more often than capitalized lost that word ("On Windows", "Close Obsidian" begin a sentence
or an item: the names are "Windows" and "Obsidian"), and a one-word name that is such a common word
is no term at all.

Which terms are typed: those written in at least ``GRAPHRAG_TERM_TYPING_NOTES`` notes (documents), but not a
single capitalized word the corpus writes more often in lower case than capitalized (a common word that
begins a list item or labels a button, not a name: a small model gives such a word a class anyway). A term
of one note only stays untyped (:data:`~graphrag_got.ontology.model.TERM_CLASS`): most of them are a
note's own words, and typing every one would cost the model time the layer exists to save. 1 types every
term; ``GRAPHRAG_TERM_TYPING=false`` types none.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from langchain_core.language_models import BaseChatModel

from graphrag_got.common.normalize import normalize_name
from graphrag_got.config import ExtractSettings, FilesSettings
from graphrag_got.extract.cache import CacheRecord
from graphrag_got.extract.terms.find import FoundTerm, TermSource, find_terms
from graphrag_got.extract.terms.type_terms import TermTypeCache, TypingRun, type_terms
from graphrag_got.ingest.chunking import Chunk, ChunkedDocument
from graphrag_got.ontology.model import TERM_CLASS, Ontology
from graphrag_got.prompts import PromptSet

__all__ = ["FIND_VERSION", "CorpusPass", "PassResult", "common_words", "corpus_pass", "local_records", "terms_line",
           "trimmed", "typing_candidates"]

STRATEGY = "terms"
#: The version of the finding rules (keys the stored answers: new rules read every chunk again, no model).
FIND_VERSION = "terms-find-v1"


@dataclass
class CorpusPass:
    """What a strategy's pass over the whole corpus gets, once every chunk has its stored answer."""

    onto: Ontology
    extract: ExtractSettings
    files: FilesSettings
    label: str  # the model's label (the stored types are per model)
    prompts: PromptSet
    docs: Sequence[ChunkedDocument]
    records: Mapping[str, CacheRecord]  # chunk id -> stored answer
    #: the chat model and how many calls it takes at once, made when first needed; None: no call may be made
    chat: Callable[[], tuple[BaseChatModel, int]] | None
    note: Callable[[str], None] = lambda line: None  # progress lines


@dataclass
class PassResult:
    """The answers as the validator reads them (the stored ones are left as they are) and what it cost."""

    records: dict[str, CacheRecord]
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    digest: str = ""  # what the pass put on the answers (keys the extraction file's inputs), "" when nothing


def local_records(onto: Ontology, chunks: Sequence[Chunk], extract: ExtractSettings,
                  metadata: Mapping[str, Mapping[str, Any]], answer_tag: str) -> list[CacheRecord]:
    """The stored answer of each chunk: its key terms, untyped (no model call)."""
    created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    out = []
    for ch in chunks:
        found = find_terms(ch.text, ch.heading, metadata.get(ch.document_id), max_terms=extract.terms_per_chunk)
        parsed = {"entities": [{"name": t.name, "type": TERM_CLASS} for t in found], "relations": [],
                  "terms": {"strategy": STRATEGY,
                            "found": [{"name": t.name, "source": t.source.value, "context": t.context} for t in found]}}
        out.append(CacheRecord(chunk_id=ch.id, chunk_hash=ch.hash, ontology_hash=onto.hash, prompt_version=answer_tag,
                               created=created, strategy=STRATEGY, status="ok", parsed=parsed, raw_responses=[""],
                               calls=0, input_tokens=0, output_tokens=0))
    return out


def _found(rec: CacheRecord) -> list[FoundTerm]:
    audit = rec.parsed.get("terms") if rec.ok and isinstance(rec.parsed, dict) else None
    if not isinstance(audit, dict):
        return []
    return [FoundTerm(f["name"], TermSource(f["source"]), f.get("context", "")) for f in audit.get("found") or []
            if isinstance(f, dict) and isinstance(f.get("name"), str) and f.get("source") in TermSource._value2member_map_]


_WORD = re.compile(r"[^\W\d_][\w'’-]*")


def common_words(texts: Sequence[str]) -> frozenset[str]:
    """The words (lower case) the texts write in lower case at least as often as capitalized."""
    lower: Counter[str] = Counter()
    upper: Counter[str] = Counter()
    for text in texts:
        for w in _WORD.findall(text):
            (lower if w.islower() else upper)[w.lower()] += 1
    return frozenset(w for w, n in lower.items() if n >= upper[w])


def trimmed(terms: Sequence[FoundTerm], common: frozenset[str]) -> list[FoundTerm]:
    """``terms`` with the common words before a capitalized name dropped, and common one-word names left out
    (module docstring); each term once."""
    out: dict[str, FoundTerm] = {}
    for t in terms:
        if t.source is TermSource.NAME:
            words = t.name.split(" ")
            while words and words[0].lower() in common:
                words = words[1:]
            if not words:
                continue
            t = FoundTerm(" ".join(words), t.source, t.context)
        out.setdefault(t.key, t)
    return list(out.values())


def typing_candidates(docs: Sequence[ChunkedDocument], found: Mapping[str, Sequence[FoundTerm]],
                      min_notes: int) -> list[FoundTerm]:
    """The terms to type (module docstring), each as first found, in corpus order; ``found``: chunk id -> terms
    (as :func:`trimmed` leaves them)."""
    doc_of = {c.id: d.document.id for d in docs for c in d.chunks}
    notes: dict[str, set[str]] = defaultdict(set)
    first: dict[str, FoundTerm] = {}
    for cid, terms in found.items():
        for t in terms:
            notes[t.key].add(doc_of.get(cid, cid))
            first.setdefault(t.key, t)
    return [t for k, t in first.items() if len(notes[k]) >= max(1, min_notes)]


def corpus_pass(p: CorpusPass) -> PassResult:
    """The answers with the class of every typed term (see the module docstring); the shared terms not
    typed yet are asked first, when ``p.chat`` allows calls."""
    stored = {cid: _found(rec) for cid, rec in p.records.items()}
    common = common_words([c.text for d in p.docs for c in d.chunks])
    found = {cid: trimmed(terms, common) for cid, terms in stored.items()}
    result = PassResult(records=dict(p.records))
    typed: dict[str, str] = {}
    if p.extract.term_typing and any(found.values()):
        typed = _types(p, typing_candidates(p.docs, found, p.extract.term_typing_notes), result)
    result.digest = hashlib.sha256(json.dumps(sorted(typed.items())).encode("utf-8")).hexdigest()
    for cid, rec in p.records.items():
        if found[cid] == stored[cid] and not any(t.key in typed for t in found[cid]):
            continue
        parsed = dict(rec.parsed)
        parsed["entities"] = [{"name": t.name, "type": typed.get(t.key, TERM_CLASS)} for t in found[cid]]
        result.records[cid] = rec.model_copy(update={"parsed": parsed})
    return result


def _types(p: CorpusPass, candidates: Sequence[FoundTerm], result: PassResult) -> dict[str, str]:
    """The class of each candidate given one (stored, else asked when ``p.chat`` allows); the cost in ``result``."""
    cache = TermTypeCache(p.files.cache_dir, p.label, p.onto, p.prompts)
    types: dict[str, str | None] = {}
    missing: list[FoundTerm] = []
    for term in candidates:
        stored, cls = cache.type_of(term.key)
        if stored:
            types[term.key] = cls
        else:
            missing.append(term)
    if missing and p.chat is not None:
        chat, workers = p.chat()
        p.note(f"typing {len(missing)} term(s) written in {p.extract.term_typing_notes}+ notes, "
               f"{p.extract.term_typing_batch} a call")
        run: TypingRun = type_terms(chat, p.onto, missing, cache, batch=p.extract.term_typing_batch, workers=workers,
                                    prompts=p.prompts,
                                    progress=lambda done, total: p.note(f"typed {done}/{total} term(s)"))
        types.update(run.types)
        result.calls, result.input_tokens, result.output_tokens = run.calls, run.input_tokens, run.output_tokens
        result.estimated = run.estimated
    return {k: c for k, c in types.items() if c is not None and c in p.onto.classes}


def terms_line(records: Sequence[CacheRecord]) -> str:
    """Totals of the answers as validated: terms found (by where), distinct, typed and untyped, and the notes
    (documents) by the layers they hold."""
    by_source: dict[str, int] = defaultdict(int)
    classes: dict[str, str] = {}
    notes: dict[str, set[str]] = defaultdict(set)  # layer -> documents
    for rec in records:
        doc = rec.chunk_id.rsplit(":", 1)[0]
        for t in _found(rec):
            by_source[t.source.value] += 1
        parsed = rec.parsed if rec.ok and isinstance(rec.parsed, dict) else {}
        for e in parsed.get("entities") or []:
            if isinstance(e, dict) and isinstance(e.get("name"), str):
                cls = str(e.get("type"))
                classes.setdefault(normalize_name(e["name"]), cls)
                notes["typed terms" if cls != TERM_CLASS else "untyped terms"].add(doc)
        if parsed.get("relations"):
            notes["typed relations"].add(doc)
    typed = sum(1 for c in classes.values() if c != TERM_CLASS)
    where = ", ".join(f"{by_source[s.value]} {s.value}" for s in TermSource if by_source[s.value])
    layers = ", ".join(f"{len(notes[k])} with {k}" for k in ("typed terms", "untyped terms", "typed relations"))
    return (f"terms: {sum(by_source.values())} in {len(records)} chunk(s) ({where or 'none'}), no model call; "
            f"{len(classes)} distinct, {typed} typed by the ontology's classes, {len(classes) - typed} untyped "
            f"({TERM_CLASS}); notes: {layers}")
