"""Write gold.json: the hand-curated gold extraction of this folder's corpus (an invented observatory).

The facts below were read off each paragraph of ``corpus/*.txt`` by hand; this script only adds the
bookkeeping of the extraction.json format (chunks from the library's own chunker, uids,
aggregation, counts) and goes through the library's contract, as ``scripts/make_gold_extraction.py``
does for the GoT gold: every fact is checked by :class:`graphrag_got.extract.validate.Validator` (a fact
the ontology refuses stops the script with the validator's message), merged by
:func:`graphrag_got.extract.aggregate.aggregate` as ``extract`` merges them, and written by
:meth:`graphrag_got.extract.extraction.Extraction.write` (format ``graphrag_got.extraction/2``).

    .venv/bin/python benchmarks/quality/data/observatory/make_gold.py            # writes gold.json
    .venv/bin/python benchmarks/quality/data/observatory/make_gold.py --check    # exit 1 if stale

Per document and paragraph: entities as ``(class, name, properties)`` or
``(class, name, properties, mention)``, where ``mention`` is how that paragraph names the entity
when it is not the canonical name (a surname, "the Institute"); the script checks the mention is in
the paragraph, so a paragraph index that drifts is caught, and lists the mentions as the entity's
``aliases``. Relations as ``(subject, RELATION,
object)`` or ``(subject, RELATION, object, attributes)`` with names among the paragraph's entities.
``year`` (an identity attribute) is given only when the text ties the fact to a year; ``certainty``
(not part of identity) only when the text says a claim is confirmed or disputed.

Deliberately absent (the text names both ends but states no relation; a prediction of them is an
invented fact): Mount Halde LOCATED_IN Vellmar, the Institute COLLABORATES_WITH the University of
Corran, Sefa Anand COLLABORATES_WITH Piet Rowan, Piet Rowan WORKS_AT the Observatory, Edvard Lisle
COLLABORATES_WITH Mara Quill (never in one paragraph, never related).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

from graphrag_got.ingest.chunking import Chunk, chunk_text, corpus_files, read_text
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, Extraction, LLMRef, OntologyRef
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.validate import ChunkValidation, Validator, known_entities
from graphrag_got.extract.aggregate import aggregate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
CORPUS = "benchmarks/quality/data/observatory/corpus"  # paths as written into the file: repository-relative
ONTOLOGY = "benchmarks/quality/data/observatory/ontology.json"
OUT = "benchmarks/quality/data/observatory/gold.json"
MIN_CHARS, MAX_CHARS = 40, 1500  # the pipeline's default chunk sizes

Fact = tuple[Any, ...]

OBSERVATORY = "Halde Mountain Observatory"
INSTITUTE = "Corran Institute for Celestial Physics"
UNIVERSITY = "University of Corran"
TRUST = "Northern Science Trust"
REFLECTOR = "Great Halde Reflector"
STATION = "Southern Sarn Station"
CAMERA = "Sarn Schmidt Camera"


def year(value: str, **more: str) -> dict[str, str]:
    return {"year": value, **more}


# document id -> paragraph index -> entities and relations stated in that paragraph
GOLD: dict[str, dict[int, dict[str, list[Fact]]]] = {
    "history.txt": {
        0: {  # the founding
            "entities": [
                ("Institution", OBSERVATORY, {"kind": "observatory", "founded": "1921"}),
                ("Place", "Mount Halde", {"kind": "mountain"}),
                ("Place", "Vellmar", {"kind": "town"}),
                ("Person", "Ingrid Halvorsen", {"role": "director", "field": "astronomy"}),
                ("Institution", UNIVERSITY, {"kind": "university"}),
            ],
            "relations": [
                (OBSERVATORY, "LOCATED_IN", "Mount Halde"),
                ("Ingrid Halvorsen", "DIRECTS", OBSERVATORY),
                ("Ingrid Halvorsen", "STUDIED_AT", UNIVERSITY),
            ],
        },
        1: {  # the first telescope
            "entities": [
                ("Institution", TRUST, {"kind": "funder"}),
                ("Person", "Lucia Ferrand", {"role": "secretary", "field": "administration"}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Institution", "Pell Optical Works", {"kind": "company"}),
                ("Place", "Corran", {"kind": "city"}),
                ("Person", "Edvard Lisle", {"role": "chief optician", "field": "optics"}),
                ("Instrument", REFLECTOR, {"kind": "telescope", "aperture": "1.2 m"}),
            ],
            "relations": [
                ("Lucia Ferrand", "WORKS_AT", TRUST),
                (TRUST, "FUNDED", REFLECTOR),
                ("Pell Optical Works", "LOCATED_IN", "Corran"),
                ("Edvard Lisle", "WORKS_AT", "Pell Optical Works"),
                ("Edvard Lisle", "BUILT", REFLECTOR),
                ("Pell Optical Works", "BUILT", REFLECTOR),
            ],
        },
        2: {  # first light and the spectrograph
            "entities": [
                ("Instrument", REFLECTOR, {}, "the Reflector"),
                ("Place", "Mount Halde", {}),
                ("Person", "Ingrid Halvorsen", {}, "Halvorsen"),
                ("Person", "Joachim Brede", {"role": "physicist", "field": "physics"}),
                ("Institution", INSTITUTE, {"kind": "institute"}),
                ("Instrument", "Brede Spectrograph", {"kind": "spectrograph"}),
            ],
            "relations": [
                (REFLECTOR, "LOCATED_IN", "Mount Halde"),
                ("Joachim Brede", "DIRECTS", REFLECTOR),
                ("Joachim Brede", "WORKS_AT", INSTITUTE),
                ("Joachim Brede", "BUILT", "Brede Spectrograph"),
                (INSTITUTE, "BUILT", "Brede Spectrograph"),
            ],
        },
        3: {  # the first discovery
            "entities": [
                ("Person", "Ingrid Halvorsen", {}, "Halvorsen"),
                ("Person", "Mara Quill", {"role": "doctoral student", "field": "astronomy"}),
                ("Institution", UNIVERSITY, {}),
                ("Instrument", REFLECTOR, {}, "the Reflector"),
                ("Discovery", "Comet Quill", {"kind": "comet"}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
            ],
            "relations": [
                ("Ingrid Halvorsen", "MENTORED", "Mara Quill"),
                ("Mara Quill", "STUDIED_AT", UNIVERSITY),
                ("Mara Quill", "DISCOVERED", "Comet Quill", year("1934", certainty="confirmed")),
                ("Comet Quill", "OBSERVED_WITH", REFLECTOR, year("1934")),
            ],
        },
        4: {  # the nebula and the disputed claim
            "entities": [
                ("Person", "Mara Quill", {}, "Quill"),
                ("Person", "Joachim Brede", {}, "Brede"),
                ("Discovery", "Vesper Nebula", {"kind": "nebula"}),
                ("Instrument", "Brede Spectrograph", {}),
                ("Person", "Piet Rowan", {"role": "amateur astronomer", "field": "astronomy"}),
                ("Place", "Vellmar", {}),
            ],
            "relations": [
                ("Mara Quill", "COLLABORATES_WITH", "Joachim Brede"),
                ("Mara Quill", "DISCOVERED", "Vesper Nebula", year("1938")),
                ("Joachim Brede", "DISCOVERED", "Vesper Nebula", year("1938")),
                ("Vesper Nebula", "OBSERVED_WITH", "Brede Spectrograph", year("1938")),
                ("Piet Rowan", "DISCOVERED", "Vesper Nebula", {"certainty": "disputed"}),
            ],
        },
        5: {  # the second director
            "entities": [
                ("Person", "Ingrid Halvorsen", {}, "Halvorsen"),
                ("Institution", TRUST, {}, "the Trust"),
                ("Person", "Joachim Brede", {"role": "director"}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Institution", INSTITUTE, {}, "the Institute"),
            ],
            "relations": [
                ("Joachim Brede", "DIRECTS", OBSERVATORY, year("1941")),
                (INSTITUTE, "COLLABORATES_WITH", OBSERVATORY, year("1947")),
            ],
        },
        6: {  # two separate bodies: places only, no tie between them
            "entities": [
                ("Place", "Vellmar", {}),
                ("Institution", INSTITUTE, {}),
                ("Institution", UNIVERSITY, {}),
                ("Place", "Corran", {}),
            ],
            "relations": [
                (INSTITUTE, "LOCATED_IN", "Corran"),
                (UNIVERSITY, "LOCATED_IN", "Corran"),
            ],
        },
    },
    "southern_station.txt": {
        0: {  # the search for a darker site
            "entities": [
                ("Place", "Vellmar", {}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Person", "Sefa Anand", {"role": "astronomer", "field": "astronomy"}),
                ("Person", "Joachim Brede", {}, "Brede"),
                ("Institution", INSTITUTE, {}, "the Institute"),
            ],
            "relations": [
                ("Joachim Brede", "MENTORED", "Sefa Anand"),
                ("Sefa Anand", "STUDIED_AT", INSTITUTE),
                ("Sefa Anand", "WORKS_AT", OBSERVATORY, year("1952")),
            ],
        },
        1: {  # the southern station
            "entities": [
                ("Person", "Sefa Anand", {}, "Anand"),
                ("Place", "Sarn Desert", {"kind": "desert"}),
                ("Institution", STATION, {"kind": "observatory", "founded": "1958"}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Institution", TRUST, {}),
                ("Institution", "Kestrel Foundation", {"kind": "funder"}),
            ],
            "relations": [
                (STATION, "LOCATED_IN", "Sarn Desert"),
                ("Sefa Anand", "DIRECTS", STATION, year("1958")),
                (TRUST, "FUNDED", STATION),
                ("Kestrel Foundation", "FUNDED", STATION),
            ],
        },
        2: {  # the Schmidt camera
            "entities": [
                ("Institution", STATION, {}),
                ("Instrument", CAMERA, {"kind": "camera"}),
                ("Person", "Sefa Anand", {}, "Anand"),
                ("Person", "Edvard Lisle", {}),
                ("Institution", "Pell Optical Works", {}),
                ("Place", "Sarn Desert", {}),
            ],
            "relations": [
                ("Sefa Anand", "BUILT", CAMERA),
                ("Edvard Lisle", "BUILT", CAMERA),
                ("Sefa Anand", "COLLABORATES_WITH", "Edvard Lisle"),
                ("Edvard Lisle", "WORKS_AT", "Pell Optical Works"),
                (CAMERA, "LOCATED_IN", "Sarn Desert", year("1960")),
            ],
        },
        3: {  # the cluster
            "entities": [
                ("Instrument", CAMERA, {}),
                ("Person", "Sefa Anand", {}, "Anand"),
                ("Discovery", "Anand Cluster", {"kind": "cluster"}),
                ("Person", "Tavi Marsh", {"role": "astronomer", "field": "astronomy"}),
                ("Institution", UNIVERSITY, {}),
            ],
            "relations": [
                ("Sefa Anand", "DISCOVERED", "Anand Cluster", year("1967")),
                ("Anand Cluster", "OBSERVED_WITH", CAMERA, year("1967")),
                ("Sefa Anand", "COLLABORATES_WITH", "Tavi Marsh"),
                ("Tavi Marsh", "WORKS_AT", UNIVERSITY),
            ],
        },
        4: {  # the infrared detector
            "entities": [
                ("Institution", TRUST, {}, "the Trust"),
                ("Institution", "Kestrel Foundation", {}),
                ("Instrument", "Ember Detector", {"kind": "detector"}),
                ("Instrument", REFLECTOR, {}),
                ("Institution", "Dunmore Instruments", {"kind": "company"}),
                ("Place", "Vellmar", {}),
                ("Person", "Tavi Marsh", {}),
                ("Discovery", "Vesper Nebula", {}),
            ],
            "relations": [
                (TRUST, "FUNDED", "Ember Detector", year("1972")),
                ("Kestrel Foundation", "FUNDED", "Ember Detector", year("1972")),
                (TRUST, "COLLABORATES_WITH", "Kestrel Foundation", year("1972")),
                ("Dunmore Instruments", "BUILT", "Ember Detector"),
                ("Dunmore Instruments", "LOCATED_IN", "Vellmar"),
                ("Vesper Nebula", "OBSERVED_WITH", "Ember Detector", year("1974")),
            ],
        },
        5: {  # the third director, and letters that are not a collaboration
            "entities": [
                ("Person", "Sefa Anand", {"role": "director"}),
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Person", "Piet Rowan", {}),
                ("Place", "Vellmar", {}),
            ],
            "relations": [
                ("Sefa Anand", "DIRECTS", OBSERVATORY, year("1975")),
            ],
        },
        6: {  # today
            "entities": [
                ("Institution", OBSERVATORY, {}, "the Observatory"),
                ("Person", "Oren Vasquez-Lind", {"role": "director"}),
                ("Person", "Tavi Marsh", {}),
                ("Institution", UNIVERSITY, {}),
                ("Instrument", REFLECTOR, {}),
                ("Person", "Edvard Lisle", {}),
            ],
            "relations": [
                ("Oren Vasquez-Lind", "DIRECTS", OBSERVATORY),
                ("Tavi Marsh", "MENTORED", "Oren Vasquez-Lind"),
                ("Oren Vasquez-Lind", "STUDIED_AT", UNIVERSITY),
                ("Edvard Lisle", "BUILT", REFLECTOR),
            ],
        },
    },
}


def _validate_paragraph(validator: Validator, where: str, chunk: Chunk, facts: dict[str, list[Fact]],
                        aliases: dict[str, list[str]]) -> ChunkValidation:
    """One paragraph's curated facts as the validator's records; ValueError on the first refusal.

    A mention that differs from the canonical name is added to ``aliases[uid]``.
    """
    out = ChunkValidation(chunk_id=chunk.id, document_id=chunk.document_id)
    for item in facts["entities"]:
        cls, name, props = item[:3]
        mention = item[3] if len(item) > 3 else name
        if mention.casefold() not in chunk.text.casefold():
            raise ValueError(f"{where}: {mention!r} ({name}) is not in the paragraph text")
        record, refused = validator.check_entity({"name": name, "type": cls, "properties": props},
                                                 chunk.id, chunk.document_id)
        if refused or record is None:
            raise ValueError(f"{where}: entity {name!r} refused: {refused[0].message if refused else 'no record'}")
        out.entities.append(record)
        if mention != name and mention not in aliases.setdefault(record.uid, []):
            aliases[record.uid].append(mention)
    known = known_entities(out.entities)
    local = {record.name: record for record in out.entities}
    for fact in facts["relations"]:
        subject_name, rel, object_name = fact[:3]
        attributes = dict(fact[3]) if len(fact) > 3 else {}
        missing = [n for n in (subject_name, object_name) if n not in local]
        if missing:
            raise ValueError(f"{where}: {missing[0]!r} in {fact} is not among the paragraph's entities")
        raw = {"subject": subject_name, "subject_type": local[subject_name].type, "relation": rel,
               "object": object_name, "object_type": local[object_name].type, "attributes": attributes}
        record, refused = validator.check_relation(raw, known, chunk.id, chunk.document_id)
        if refused or record is None:
            raise ValueError(f"{where}: {fact} refused: {refused[0].message if refused else 'no record'}")
        out.relations.append(record)
    return out


def build(root: Path = ROOT) -> Extraction:
    """The gold extraction (raises ValueError when a curated fact no longer fits the corpus or ontology)."""
    onto = Ontology.from_file(root / ONTOLOGY)
    files = corpus_files(root / CORPUS)
    if sorted(GOLD) != [doc_id for doc_id, _ in files]:
        raise ValueError(f"GOLD covers documents {sorted(GOLD)} but {CORPUS} holds {[d for d, _ in files]}")
    validator = Validator(onto)
    documents, chunks, validations = [], [], []
    aliases: dict[str, list[str]] = {}
    for doc_id, file in files:
        shown = f"{CORPUS}/{doc_id}"
        chunked = chunk_text(doc_id, read_text(file, shown), kind="paragraph", min_chars=MIN_CHARS,
                             max_chars=MAX_CHARS, path=shown)
        paragraphs = GOLD[doc_id]
        if sorted(paragraphs) != list(range(len(chunked.chunks))):
            raise ValueError(f"GOLD[{doc_id!r}] covers paragraphs {sorted(paragraphs)} but the document has "
                             f"{len(chunked.chunks)} chunks")
        doc = chunked.document
        documents.append(DocumentRecord(id=doc.id, path=doc.path, hash=doc.hash, metadata=dict(doc.metadata)))
        for chunk in chunked.chunks:
            chunks.append(ChunkRecord(id=chunk.id, document_id=chunk.document_id, index=chunk.index,
                                      start=chunk.start, end=chunk.end, hash=chunk.hash, text=chunk.text,
                                      heading=chunk.heading))
            validations.append(_validate_paragraph(validator, f"{doc_id} paragraph {chunk.index}", chunk,
                                                   paragraphs[chunk.index], aliases))
    identity = onto.identity_attributes
    entities, relations = aggregate(validations, identity)
    for entity in entities:  # how the text also names it: the scorer's tolerant mode reads these
        entity.aliases = sorted(aliases.get(entity.uid, []))
    ext = Extraction(
        ontology=OntologyRef(path=ONTOLOGY, hash=onto.hash),
        llm=LLMRef(provider="gold", model="hand-curated"),
        prompt_version="gold",
        documents=documents,
        chunks=chunks,
        entities=sorted(entities, key=lambda e: e.uid),
        relations=sorted(relations, key=lambda r: (r.subject_uid, r.relation, r.object_uid, r.identity(identity))),
    )
    ext.recount()
    ext.counts.chunks_extracted = len(chunks)
    problems = ext.consistency_problems()
    if problems:
        raise ValueError("the gold extraction is inconsistent: " + "; ".join(f"{p}: {m}" for p, m in problems))
    return ext


def render(ext: Extraction) -> str:
    """The file's text exactly as :meth:`Extraction.write` writes it."""
    with tempfile.TemporaryDirectory() as tmp:
        return ext.write(Path(tmp) / "gold.json").read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare with the checked-in file")
    parser.add_argument("--out", type=Path, default=None, help=f"the file to write or check (default {OUT})")
    args = parser.parse_args(argv)
    try:
        ext = build()
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    out = args.out or ROOT / OUT
    if args.check:
        current = out.read_text(encoding="utf-8") if out.is_file() else ""
        if current != render(ext):
            print(f"{out} is stale; run {OUT.rsplit('/', 1)[0]}/make_gold.py", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    ext.write(out)
    counts = ext.counts
    print(f"wrote {out}: {counts.documents} documents, {counts.chunks} chunks, {counts.entities} entities, "
          f"{counts.relations} relations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
