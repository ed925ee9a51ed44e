"""The one contract between steps: ``extraction.json``, as a pydantic model.

``extract`` writes an :class:`Extraction`; ``load``, ``report``, ``viz``, ``communities`` and the
benchmarks read it through :meth:`Extraction.read`, so the file has one shape, one version and one
set of error messages. ``graphrag-got schema extraction`` prints its JSON Schema.

Validation results are data: a :class:`Rejection` carries structured fields (which end or property,
the offending value and type, what was allowed) filled by :mod:`graphrag_got.extract.validate`, so the
report only groups and renders them.

Files of the previous version (``graphrag_got.extraction/1``: one fixed attribute field on relations and
two Spanish-named rejection lists) are read and upgraded in memory.
"""

from __future__ import annotations

import json
from collections import Counter
from enum import StrEnum
from pathlib import Path
from typing import Any, Iterable, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_serializer
from pydantic_core import PydanticSerializationError

from graphrag_got.errors import ExtractionFileError, format_problems
from graphrag_got.common.files import write_json_atomic, write_text_atomic
from graphrag_got.ingest.chunking import location_label
from graphrag_got.ingest.note_record import NoteLink, NoteRecord  # noqa: F401 (the file contract, made by ingest)

FORMAT = "graphrag_got.extraction/2"
LEGACY_FORMATS = ("graphrag_got.extraction/1",)
MAX_FILE_DEPTH = 64  # deeper JSON is not an extraction file (and would exhaust the parser)


class Reason(StrEnum):
    """Why an item was refused. The same codes in extraction, revalidation, load and the report."""

    MALFORMED = "malformed"
    UNPARSED = "unparsed"  # a line (or array) of a keyless answer form that reads as neither an entity nor a fact
    EMPTY_NAME = "empty_name"
    NAME_TOO_LONG = "name_too_long"
    TOO_MANY_ITEMS = "too_many_items"
    UNKNOWN_RELATION = "unknown_relation"
    UNKNOWN_CLASS = "unknown_class"
    DOMAIN_VIOLATION = "domain_violation"
    RANGE_VIOLATION = "range_violation"
    SUBJECT_TYPE_MISMATCH = "subject_type_mismatch"
    OBJECT_TYPE_MISMATCH = "object_type_mismatch"
    SUBJECT_NOT_EXTRACTED = "subject_not_extracted"
    OBJECT_NOT_EXTRACTED = "object_not_extracted"
    SELF_RELATION = "self_relation"
    UNKNOWN_PROPERTY = "unknown_property"
    INVALID_ENUM_VALUE = "invalid_enum_value"
    INVALID_VALUE = "invalid_value"
    MISSING_REQUIRED_PROPERTY = "missing_required_property"
    UNKNOWN_ATTRIBUTE = "unknown_attribute"
    MISSING_REQUIRED_ATTRIBUTE = "missing_required_attribute"
    NOT_IN_TEXT = "not_in_text"  # evidence: the name is not found in its chunk's text
    ENDS_NOT_NEAR = "ends_not_near"  # evidence: the two ends never meet within the sentence window
    LOW_CONFIDENCE = "low_confidence"  # a mention whose model confidence is under the threshold
    NOT_CONFIRMED = "not_confirmed"  # verification: the model answered "no" for the triple against its evidence
    NO_CUE = "no_cue"  # evidence: none of the relation's cues (`indicios`) occurs where its two ends meet
    NO_FACT = "no_fact"  # an entity no kept relation uses (setting orphan_entities: related, duplicates, drop)
    # classify strategy: the model chose the relation, with a probability under GRAPHRAG_MIN_FACT_PROBABILITY
    LOW_PROBABILITY = "low_probability"


class RepairReason(StrEnum):
    """What an audited repair changed in a model answer before validation (:mod:`graphrag_got.extract.repair`)."""

    INFERRED_CLASS = "inferred_class"  # a relation end never extracted was added with the only class it can have
    MAJORITY_CLASS = "majority_class"  # a class corrected to the one most of the name's mentions give it
    FLIPPED_ENDS = "flipped_ends"  # subject and object swapped: only the reverse fits domain and range
    # subject and object swapped: both orders fit, and the sentence words the fact the other way round
    REVERSED_BY_WORDING = "reversed_by_wording"
    # an entity listed with a class whose subclass every fact about it in the chunk takes ("Person" where
    # each relation takes an Astronaut, a kind of Person): the class its facts entail, as RDFS domains do
    NARROWED_CLASS = "narrowed_class"


Kind = Literal["relation", "entity", "property"]
End = Literal["subject", "object"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class Rejection(_Model):
    """One refused item: a whole relation, a whole entity, or one property / relation attribute.

    ``item`` is the raw item as the model wrote it. The structured fields say what broke the rule:
    ``end`` (the blamed end of a triple) with ``end_name``/``end_type``; ``property`` and ``value``
    for a property or attribute; ``allowed`` lists what the ontology allows there (types or values).
    """

    kind: Kind
    reason: Reason
    message: str
    item: dict[str, Any] = Field(default_factory=dict)
    chunk_id: str | None = None
    document_id: str | None = None
    relation: str | None = None
    subject: str | None = None
    subject_type: str | None = None
    object: str | None = None
    object_type: str | None = None
    entity_name: str | None = None
    entity_type: str | None = None
    end: End | None = None
    end_name: str | None = None
    end_type: str | None = None
    property: str | None = None
    value: str | None = None
    allowed: list[str] = Field(default_factory=list)

    def on_relation(self) -> bool:
        """A relation, or an attribute of one (as opposed to an entity or an entity property)."""
        return self.kind == "relation" or self.relation is not None


class Repair(_Model):
    """A change made to a model answer before validation (reason code, before, after, where).

    ``reason`` says which rule made the change; ``before``/``after`` are the item (entity or
    triple) as the model wrote it and as it was validated; ``kind`` says which.
    """

    reason: RepairReason
    message: str
    before: dict[str, Any] = Field(default_factory=dict)
    after: dict[str, Any] = Field(default_factory=dict)
    chunk_id: str | None = None
    document_id: str | None = None
    kind: Literal["entity", "relation"] | None = None


class Evidence(_Model):
    """Where the text states a fact: a span of sentences of one chunk mentioning both ends.

    ``start``/``end`` index into the chunk text (``chunk.text[start:end] == text``);
    ``document_start``/``document_end`` into the document (chunk start + offset).
    """

    chunk_id: str | None = None
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    text: str
    document_start: int | None = None
    document_end: int | None = None


class DocumentRecord(_Model):
    id: str = Field(min_length=1)
    path: str = ""
    hash: str = Field(min_length=1)
    metadata: dict[str, Any] = Field(default_factory=dict)
    note: NoteRecord | None = None  # Markdown documents only (graphrag_got.ingest.notes)
    # PDF, DOCX, HTML (graphrag_got.ingest.readers); text files keep the record shape they always had
    format: str = Field(default="text", exclude_if=lambda v: v in ("text", "markdown"))
    pages: int | None = Field(default=None, exclude_if=lambda v: v is None)
    lines_dropped: int = Field(default=0, exclude_if=lambda v: not v)  # running headers/footers left out
    notes: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)  # what the reader reported


class ChunkRecord(_Model):
    id: str = Field(min_length=1)
    document_id: str = Field(min_length=1)
    index: int
    start: int
    end: int
    hash: str
    text: str
    heading: str | None = None
    page: int | None = Field(default=None, exclude_if=lambda v: v is None)  # PDF: its 1-based page
    section: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)  # heading path, outermost first

    @property
    def location(self) -> str:
        """``p. 12`` or ``Installation > Network`` (:func:`graphrag_got.ingest.chunking.location_label`)."""
        return location_label(self.page, self.section)


class EntityRecord(_Model):
    """One entity of the corpus, aggregated over chunks: ``uid`` = ``<type>|<key>``."""

    uid: str = Field(min_length=1)
    key: str = Field(min_length=1)
    name: str = Field(min_length=1)
    type: str = Field(min_length=1)
    properties: dict[str, str] = Field(default_factory=dict)
    chunk_ids: list[str] = Field(default_factory=list)
    aliases: list[str] = Field(default_factory=list)  # other names merged into it (graphrag_got.extract.resolve)
    # Confidence (0-1) the model gave each mention, per chunk id (the highest of that chunk). Chunks
    # missing here were extracted without a confidence (older files, answers without the field): 1.0.
    mentions: dict[str, float] = Field(default_factory=dict)

    def confidence(self, chunk_id: str) -> float:
        return self.mentions.get(chunk_id, 1.0)

    @field_validator("properties", mode="before")
    @classmethod
    def _drop_nulls(cls, value: Any) -> Any:
        """A null property is no value (hand-edited files write them); never stored. A validator of the
        field, not of the record: a record-level "before" validator makes pydantic build every record as
        a Python dict first, which tripled the time to read a large file."""
        if isinstance(value, dict) and None in value.values():
            return {k: v for k, v in value.items() if v is not None}
        return value


class FactScore(_Model):
    """How sure the model was of a fact in one chunk (``classify`` strategy): the probability of the
    chosen option among the pair's options, and the option that came second with its probability."""

    probability: float = Field(ge=0, le=1)
    runner_up: str | None = None
    runner_up_probability: float | None = Field(default=None, ge=0, le=1)


class RelationRecord(_Model):
    """One fact: (subject, relation, object) plus the ontology's relation attributes.

    A symmetric relation is stored once, its ends in sorted-uid order.
    """

    subject: str
    subject_key: str = Field(min_length=1)
    subject_type: str = Field(min_length=1)
    relation: str = Field(min_length=1)
    object: str
    object_key: str = Field(min_length=1)
    object_type: str = Field(min_length=1)
    attributes: dict[str, str] = Field(default_factory=dict)
    symmetric: bool = False
    chunk_ids: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(default_factory=list)
    # classify strategy: the model's probability per chunk id (absent for the generative strategy,
    # and then left out of the file, so files without scores keep their shape)
    scores: dict[str, FactScore] = Field(default_factory=dict)

    @model_serializer(mode="wrap")
    def _without_empty_scores(self, handler: Any) -> Any:
        return _without_empty(handler(self), "scores")

    @property
    def subject_uid(self) -> str:
        return f"{self.subject_type}|{self.subject_key}"

    @property
    def object_uid(self) -> str:
        return f"{self.object_type}|{self.object_key}"

    def identity(self, attributes: Iterable[str]) -> tuple[str, ...]:
        """Values of the identity attributes (``""`` when absent), in the order given."""
        return tuple(self.attributes.get(a, "") for a in attributes)


MergeRule = Literal["pinned", "article_or_class_word", "containment", "fuzzy"]


class Merge(_Model):
    """Entity resolution joined entities of one class into one (:mod:`graphrag_got.extract.resolve`).

    ``rule`` says why: ``pinned`` (the alias file), ``article_or_class_word`` (equal without leading
    articles and the words of the class name), ``containment`` (the only longer name holding the
    words), ``fuzzy`` (spelt alike); ``score`` (0-1) and ``evidence`` say how close and what matched.
    """

    type: str = Field(min_length=1)
    canonical_uid: str = Field(min_length=1)
    canonical_name: str = Field(min_length=1)
    merged_names: list[str] = Field(default_factory=list)
    merged_uids: list[str] = Field(default_factory=list)
    rule: MergeRule
    score: float = 1.0
    evidence: str = ""


class FailureReason(StrEnum):
    """Why a chunk has no usable answer. Only ``unusable_answer`` is about what the model wrote; the
    other two are about the setup, and a rerun retries them once it may succeed
    (:func:`graphrag_got.extract.run.should_retry`)."""

    CONTEXT_OVERFLOW = "context_overflow"  # the prompt did not fit in the model's context window
    PROVIDER = "provider"  # the provider failed for this chunk (server down, refused the request)
    UNUSABLE_ANSWER = "unusable_answer"  # no valid JSON even after repair and one retry


class FailedChunk(_Model):
    chunk_id: str
    document_id: str | None = None
    error: str = ""
    reason: FailureReason = FailureReason.UNUSABLE_ANSWER
    raw_responses: list[str] = Field(default_factory=list)


class SkippedFile(_Model):
    """An input file that was not read (outside the folder, not UTF-8, binary, bad front matter...)."""

    path: str
    reason: str
    message: str = ""


class Usage(_Model):
    """Model calls and tokens behind the stored answers (extraction and verification)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    tokens_estimated: bool = False  # a provider gave no counts: ~4 characters a token
    cost_usd: float | None = None  # None: no known price (GRAPHRAG_LLM_PRICE); 0 for local models


class Counts(_Model):
    documents: int = 0
    chunks: int = 0
    chunks_extracted: int = 0
    chunks_failed: int = 0
    failed_by_reason: dict[str, int] = Field(default_factory=dict)
    files_skipped: int = 0
    chunks_repaired: int = 0
    entities: int = 0
    relations: int = 0
    rejected_relations: int = 0
    rejected_entities: int = 0
    rejected_properties: int = 0
    repairs: int = 0
    by_reason: dict[str, int] = Field(default_factory=dict)
    repairs_by_reason: dict[str, int] = Field(default_factory=dict)


class OntologyRef(_Model):
    path: str = ""
    hash: str = ""


class LLMRef(_Model):
    provider: str = ""
    model: str = ""


class Extraction(_Model):
    """``extraction.json``: what ``extract`` found, kept and refused, with provenance."""

    format: Literal["graphrag_got.extraction/2"] = FORMAT
    created: str = ""
    ontology: OntologyRef = Field(default_factory=OntologyRef)
    llm: LLMRef = Field(default_factory=LLMRef)
    prompt_version: str = ""
    usage: Usage = Field(default_factory=Usage)
    documents: list[DocumentRecord] = Field(default_factory=list)
    chunks: list[ChunkRecord] = Field(default_factory=list)
    entities: list[EntityRecord] = Field(default_factory=list)
    relations: list[RelationRecord] = Field(default_factory=list)
    rejections: list[Rejection] = Field(default_factory=list)
    repairs: list[Repair] = Field(default_factory=list)
    failed_chunks: list[FailedChunk] = Field(default_factory=list)
    skipped_files: list[SkippedFile] = Field(default_factory=list)
    merges: list[Merge] = Field(default_factory=list)
    counts: Counts = Field(default_factory=Counts)
    # sha256 of the entity and relation records as extract validated them under `ontology` (with the code's
    # version): load trusts sealed records and checks any others again (graphrag_got.extract.recheck). Left
    # out of a file that is not sealed, so such files keep their shape
    records_digest: str = ""

    @model_serializer(mode="wrap")
    def _without_empty_digest(self, handler: Any) -> Any:
        return _without_empty(handler(self), "records_digest")

    # ------------------------------------------------------------------ views
    @property
    def relation_rejections(self) -> list[Rejection]:
        return [r for r in self.rejections if r.kind == "relation"]

    @property
    def entity_rejections(self) -> list[Rejection]:
        """Entities and properties (of entities or relations) refused."""
        return [r for r in self.rejections if r.kind != "relation"]

    def chunk_documents(self) -> dict[str, str]:
        return {c.id: c.document_id for c in self.chunks}

    def recount(self) -> None:
        """Recompute ``counts`` from the lists (after building or editing an extraction)."""
        c = self.counts
        c.documents, c.chunks = len(self.documents), len(self.chunks)
        c.chunks_failed = len(self.failed_chunks)
        c.failed_by_reason = dict(sorted(Counter(f.reason.value for f in self.failed_chunks).items()))
        c.files_skipped = len(self.skipped_files)
        c.entities, c.relations = len(self.entities), len(self.relations)
        c.rejected_relations = sum(r.kind == "relation" for r in self.rejections)
        c.rejected_entities = sum(r.kind == "entity" for r in self.rejections)
        c.rejected_properties = sum(r.kind == "property" for r in self.rejections)
        c.repairs = len(self.repairs)
        c.repairs_by_reason = dict(sorted(Counter(r.reason for r in self.repairs).items()))
        c.by_reason = dict(sorted(Counter(r.reason.value for r in self.rejections).items()))

    # ------------------------------------------------------------------ reading and writing
    @classmethod
    def read(cls, source: "str | Path | dict[str, Any] | Extraction") -> "Extraction":
        """Parse and check an extraction (a path, a dict or an instance).

        Raises :class:`ExtractionFileError` naming the file and the JSON path of each bad field.
        """
        if isinstance(source, Extraction):
            return source
        if isinstance(source, dict):
            return cls.from_data(source, "<extraction dict>")
        path = Path(source)
        if not path.exists():
            raise ExtractionFileError(f"{path}: extraction file not found; run `graphrag-got extract` first.")
        if not path.is_file():
            raise ExtractionFileError(f"{path}: is not a file; pass the path of an extraction.json.")
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ExtractionFileError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}).") from None
        except OSError as exc:
            raise ExtractionFileError(f"{path}: cannot be read ({exc.strerror}).") from None
        fast = cls._read_fast(text, str(path))
        if fast is not None:
            return fast
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ExtractionFileError(f"{path}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise ExtractionFileError(f"{path}: JSON nested too deeply to be an extraction file.") from None
        return cls.from_data(data, str(path))

    @classmethod
    def _read_fast(cls, text: str, source: str) -> "Extraction | None":
        """A current-format file parsed straight from its text by pydantic-core (a large file in a third of
        the time of ``json.loads`` and validating the dicts); None when anything is off (a legacy format,
        an invalid field, deep nesting), and the caller takes the slow path, whose errors are the
        detailed ones. Raises for references that do not resolve, as :meth:`from_data` does."""
        try:
            ext = cls.model_validate_json(text)
        except ValidationError:
            return None
        if "format" not in ext.model_fields_set:  # the slow path says the format is missing
            return None
        free = [r.item for r in ext.rejections] + [x for r in ext.repairs for x in (r.before, r.after)]
        if max((_depth(v) for v in free + [d.metadata for d in ext.documents]), default=0) + 3 > MAX_FILE_DEPTH:
            return None
        problems = ext.consistency_problems()
        if problems:
            raise _file_error(source, problems)
        return ext

    @classmethod
    def from_data(cls, data: Any, source: str = "<extraction dict>") -> "Extraction":
        if not isinstance(data, dict):
            raise _file_error(source, [("$", f"expected a JSON object, got {type(data).__name__}")])
        fmt = data.get("format")
        if fmt != FORMAT and fmt not in LEGACY_FORMATS:
            raise _file_error(source, [("$.format", f"expected {FORMAT!r} (or {', '.join(LEGACY_FORMATS)}), "
                                                    f"got {fmt!r}")])
        if _depth(data) > MAX_FILE_DEPTH:
            raise _file_error(source, [("$", f"nested deeper than {MAX_FILE_DEPTH} levels")])
        if fmt in LEGACY_FORMATS:  # format /1 (graphrag_got.extract.extraction_legacy)
            from graphrag_got.extract.extraction_legacy import upgrade_v1

            data = upgrade_v1(data, FORMAT)
        try:
            ext = cls.model_validate(data)
        except ValidationError as exc:
            raise _file_error(source, _pydantic_problems(exc)) from None
        problems = ext.consistency_problems()
        if problems:
            raise _file_error(source, problems)
        return ext

    def consistency_problems(self) -> list[tuple[str, str]]:
        """References that do not resolve (chunk ids, document ids, uids) and duplicate ids."""
        problems: list[tuple[str, str]] = []
        doc_ids: set[str] = set()
        for i, d in enumerate(self.documents):
            if d.id in doc_ids:
                problems.append((f"$.documents[{i}].id", f"duplicate document id {d.id!r}"))
            doc_ids.add(d.id)
        chunk_ids: set[str] = set()
        for i, c in enumerate(self.chunks):
            if c.id in chunk_ids:
                problems.append((f"$.chunks[{i}].id", f"duplicate chunk id {c.id!r}"))
            chunk_ids.add(c.id)
            if c.document_id not in doc_ids:
                problems.append((f"$.chunks[{i}].document_id", f"{c.document_id!r} is not in $.documents"))
        for kind, items in (("entities", self.entities), ("relations", self.relations)):
            for i, item in enumerate(items):
                for j, cid in enumerate(item.chunk_ids):
                    if cid not in chunk_ids:
                        problems.append((f"$.{kind}[{i}].chunk_ids[{j}]", f"{cid!r} is not in $.chunks"))
        for i, r in enumerate(self.relations):
            for j, ev in enumerate(r.evidence):
                if ev.chunk_id is not None and ev.chunk_id not in chunk_ids:
                    problems.append((f"$.relations[{i}].evidence[{j}].chunk_id", f"{ev.chunk_id!r} is not in $.chunks"))
        for i, e in enumerate(self.entities):
            if e.uid != f"{e.type}|{e.key}":
                problems.append((f"$.entities[{i}].uid",
                                 f"{e.uid!r} should be '<type>|<key>' = {e.type}|{e.key!r}"))
        return problems

    def to_data(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def write(self, path: str | Path) -> Path:
        """Write the file (atomically). Serialized by pydantic-core straight from the models, the same text
        as ``dumps_json(self.to_data())`` in half the time (no intermediate dicts)."""
        p = Path(path)
        try:
            text = self.model_dump_json(indent=1)
        except PydanticSerializationError:  # whatever it cannot write gets the general path's answer or error
            write_json_atomic(p, self.to_data())
            return p
        write_text_atomic(p, text + "\n")
        return p

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        schema = cls.model_json_schema()
        schema["$id"] = FORMAT
        schema["title"] = "graphrag_got extraction file"
        return schema


def _without_empty(data: Any, key: str) -> Any:
    """A serialized record without ``key`` when it is empty: a field only some files use stays out of the others."""
    if isinstance(data, dict) and not data.get(key):
        data.pop(key, None)
    return data


# ---------------------------------------------------------------------------- errors
def _depth(value: Any, limit: int = MAX_FILE_DEPTH + 1) -> int:
    """Nesting depth of parsed JSON, iteratively (never recursion), stopping past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, (dict, list)):
            deepest = max(deepest, d)
            if deepest > limit:
                return deepest
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return deepest


def _json_path(loc: Iterable[Any]) -> str:
    out = "$"
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


def _pydantic_problems(exc: ValidationError) -> list[tuple[str, str]]:
    problems = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
        if err["type"] == "missing":
            problems.append((_json_path(loc), "field required"))
            continue
        value = repr(err.get("input"))
        value = value if len(value) <= 80 else value[:77] + "..."
        problems.append((_json_path(loc), f"{err['msg']} (got {value})"))
    return problems


def _file_error(source: str, problems: list[tuple[str, str]]) -> ExtractionFileError:
    return ExtractionFileError(format_problems(source, f"not a valid extraction file ({len(problems)} problem(s))",
                                              problems, "Fix the file or produce it again with `graphrag-got extract`."))
