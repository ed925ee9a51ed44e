"""Write tests/data/got_extraction.json: a hand-curated gold extraction of corpus/got.txt.

The facts below were read off each paragraph of the corpus by hand; this script only adds the
bookkeeping of the extraction.json format (chunks from our own chunker, uids, aggregation,
counts). It goes through the library's own contract: every fact is checked by
:class:`graphrag_got.extract.validate.Validator` (a fact the ontology refuses stops the script with the
validator's message), merged by :func:`graphrag_got.extract.aggregate.aggregate` as ``extract`` merges them,
and written by :meth:`graphrag_got.extract.extraction.Extraction.write` (format ``graphrag_got.extraction/2``).
When the corpus or the ontology changes, fix the facts of the paragraphs that changed and run

    .venv/bin/python scripts/make_gold_extraction.py            # writes the file
    .venv/bin/python scripts/make_gold_extraction.py --check    # exit 1 if the file is stale

Each paragraph lists its entities as ``(class, name, properties)`` or
``(class, name, properties, mention)``: ``mention`` is the text that names the entity in that
paragraph when it differs from the canonical name (the script checks it is there, so a paragraph
index that drifts is caught). Triples are ``(subject, RELATION, object)`` or
``(subject, RELATION, object, momento)``, with names among the paragraph's entities; the fourth
item is the relation attribute ``momento`` of the ontology, given only when the text places the
fact in time.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from graphrag_got.ingest.chunking import chunk_text, read_text
from graphrag_got.extract.extraction import ChunkRecord, DocumentRecord, Extraction, LLMRef, OntologyRef
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.aggregate import aggregate
from graphrag_got.extract.validate import ChunkValidation, Validator, known_entities

ROOT = Path(__file__).resolve().parents[1]

CORPUS = "corpus/got.txt"
DOCUMENT_ID = "got.txt"
ONTOLOGY = "ontology/got.json"
OUT = "tests/data/got_extraction.json"
MIN_CHARS, MAX_CHARS = 40, 1500
TIME_ATTRIBUTE = "momento"  # the relation attribute the fourth item of a triple fills

M, F = "masculino", "femenino"
DURANTE_GUERRA = "durante la Guerra de los Cinco Reyes"
EN_BODA_ROJA = "en la Boda Roja"
TRAS_BODA_ROJA = "tras la Boda Roja"
TRAS_BASTARDOS = "tras la Batalla de los Bastardos"
TRAS_DESEMBARCO = "tras el desembarco de Daenerys en Poniente"

# paragraph index -> entities and triples stated in that paragraph
GOLD: dict[int, dict[str, list[tuple]]] = {
    0: {  # Stark-Tully marriage
        "entities": [
            ("Personaje", "Eddard Stark", {"titulo": "señor de Invernalia y Guardián del Norte", "genero": M}),
            ("CasaNoble", "Casa Stark", {"sede": "Invernalia", "lema": "Se acerca el invierno"}),
            ("Region", "el Norte", {}),
            ("Region", "Invernalia", {}),
            ("Personaje", "Catelyn Tully", {"genero": F}),
            ("Personaje", "Hoster Tully", {"titulo": "señor de Aguasdulces", "genero": M}),
            ("Region", "Aguasdulces", {}),
            ("CasaNoble", "Casa Tully", {"sede": "Aguasdulces", "lema": "Familia, deber, honor"}),
        ],
        "relations": [
            ("Eddard Stark", "PERTENECE_A", "Casa Stark"),
            ("Eddard Stark", "GOBIERNA", "Invernalia"),
            ("Casa Stark", "GOBIERNA", "el Norte"),
            ("Eddard Stark", "CASADO_CON", "Catelyn Tully"),
            ("Hoster Tully", "GOBIERNA", "Aguasdulces"),
            ("Catelyn Tully", "PERTENECE_A", "Casa Tully"),
            ("Catelyn Tully", "PERTENECE_A", "Casa Stark"),
            ("Casa Tully", "GOBIERNA", "Aguasdulces"),
            ("Casa Stark", "ALIADA_DE", "Casa Tully"),
        ],
    },
    1: {  # Lannister-Baratheon
        "entities": [
            ("Personaje", "Robert Baratheon", {"titulo": "rey de los Siete Reinos", "genero": M}),
            ("CasaNoble", "Casa Baratheon", {}),
            ("Region", "Siete Reinos", {"continente": "Poniente"}),
            ("Region", "Desembarco del Rey", {}),
            ("Personaje", "Cersei Lannister", {"genero": F}),
            ("Personaje", "Tywin Lannister", {"genero": M}),
            ("CasaNoble", "Casa Lannister", {"sede": "Roca Casterly", "lema": "Oye mi rugido"}),
            ("Region", "Roca Casterly", {}),
            ("Personaje", "Eddard Stark", {}),
            ("Region", "Invernalia", {}),
            ("Personaje", "Joffrey Baratheon", {"genero": M}),
        ],
        "relations": [
            ("Robert Baratheon", "PERTENECE_A", "Casa Baratheon"),
            ("Robert Baratheon", "GOBIERNA", "Siete Reinos"),
            ("Robert Baratheon", "CASADO_CON", "Cersei Lannister"),
            ("Cersei Lannister", "PERTENECE_A", "Casa Lannister"),
            ("Tywin Lannister", "PERTENECE_A", "Casa Lannister"),
            ("Casa Baratheon", "ALIADA_DE", "Casa Lannister"),
            ("Casa Lannister", "GOBIERNA", "Roca Casterly"),
            ("Eddard Stark", "LEAL_A", "Robert Baratheon"),
            ("Robert Baratheon", "SE_ENCUENTRA_CON", "Eddard Stark", "cuando el rey viaja a Invernalia"),
            ("Joffrey Baratheon", "PERTENECE_A", "Casa Baratheon"),
        ],
    },
    2: {  # War of the Five Kings
        "entities": [
            ("Personaje", "Robert Baratheon", {"estado": "muerto"}, "rey Robert"),
            ("Personaje", "Joffrey Baratheon", {}),
            ("Personaje", "Eddard Stark", {"estado": "muerto"}),
            ("Personaje", "Robb Stark", {"titulo": "Rey en el Norte", "genero": M}),
            ("CasaNoble", "Casa Stark", {}),
            ("Personaje", "Catelyn Tully", {}, "Catelyn"),
            ("Region", "el Norte", {}),
            ("Evento", "Guerra de los Cinco Reyes", {"tipo": "otro"}),
            ("CasaNoble", "Casa Tully", {}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Personaje", "Tywin Lannister", {}),
        ],
        "relations": [
            ("Robb Stark", "PERTENECE_A", "Casa Stark"),
            ("Robb Stark", "GOBIERNA", "el Norte"),
            ("Robb Stark", "PARTICIPA_EN", "Guerra de los Cinco Reyes"),
            ("Casa Stark", "EN_GUERRA_CON", "Casa Lannister", DURANTE_GUERRA),
            ("Casa Tully", "EN_GUERRA_CON", "Casa Lannister", DURANTE_GUERRA),
            ("Casa Tully", "LEAL_A", "Robb Stark"),
        ],
    },
    3: {  # the broken Frey pact
        "entities": [
            ("Personaje", "Robb Stark", {}),
            ("Personaje", "Walder Frey", {"titulo": "señor de Los Gemelos", "genero": M}),
            ("Region", "Los Gemelos", {}),
            ("CasaNoble", "Casa Frey", {"sede": "Los Gemelos"}),
            ("Personaje", "Talisa Maegyr", {"genero": F}),
            ("Personaje", "Roose Bolton", {"titulo": "señor de Fuerte Terror", "genero": M}),
            ("CasaNoble", "Casa Bolton", {}),
            ("CasaNoble", "Casa Stark", {}),
        ],
        "relations": [
            ("Walder Frey", "GOBIERNA", "Los Gemelos"),
            ("Walder Frey", "PERTENECE_A", "Casa Frey"),
            ("Casa Frey", "GOBIERNA", "Los Gemelos"),
            ("Robb Stark", "TRAICIONA_A", "Walder Frey"),
            ("Robb Stark", "CASADO_CON", "Talisa Maegyr"),
            ("Roose Bolton", "PERTENECE_A", "Casa Bolton"),
            ("Roose Bolton", "LEAL_A", "Robb Stark"),
            ("Casa Bolton", "LEAL_A", "Casa Stark"),
        ],
    },
    4: {  # the Red Wedding
        "entities": [
            ("Evento", "Boda Roja", {"tipo": "boda", "lugar": "Los Gemelos"}),
            ("Region", "Los Gemelos", {}),
            ("Personaje", "Edmure Tully", {"genero": M}),
            ("Personaje", "Roslin Frey", {"genero": F}),
            ("Personaje", "Walder Frey", {}),
            ("Personaje", "Roose Bolton", {}),
            ("Personaje", "Robb Stark", {"estado": "muerto"}),
            ("Personaje", "Catelyn Tully", {"estado": "muerto"}, "Catelyn Stark"),
            ("CasaNoble", "Casa Frey", {}),
            ("CasaNoble", "Casa Bolton", {}),
            ("CasaNoble", "Casa Stark", {}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Personaje", "Tywin Lannister", {}),
        ],
        "relations": [
            ("Edmure Tully", "CASADO_CON", "Roslin Frey", EN_BODA_ROJA),
            ("Walder Frey", "TRAICIONA_A", "Robb Stark", EN_BODA_ROJA),
            ("Roose Bolton", "TRAICIONA_A", "Robb Stark", EN_BODA_ROJA),
            ("Casa Frey", "TRAICIONA_A", "Casa Stark", EN_BODA_ROJA),
            ("Casa Bolton", "TRAICIONA_A", "Casa Stark", EN_BODA_ROJA),
            ("Robb Stark", "PARTICIPA_EN", "Boda Roja"),
            ("Catelyn Tully", "PARTICIPA_EN", "Boda Roja"),
            ("Walder Frey", "PARTICIPA_EN", "Boda Roja"),
            ("Roose Bolton", "PARTICIPA_EN", "Boda Roja"),
        ],
    },
    5: {  # after the Red Wedding
        "entities": [
            ("Personaje", "Roose Bolton", {"titulo": "Guardián del Norte"}),
            ("Region", "el Norte", {}),
            ("CasaNoble", "Casa Bolton", {}),
            ("Region", "Invernalia", {}),
            ("CasaNoble", "Casa Frey", {}),
            ("Region", "Aguasdulces", {}),
            ("CasaNoble", "Casa Lannister", {}),
            ("CasaNoble", "Casa Tully", {}),
            ("Personaje", "Edmure Tully", {}),
        ],
        "relations": [
            ("Roose Bolton", "GOBIERNA", "el Norte", TRAS_BODA_ROJA),
            ("Casa Bolton", "GOBIERNA", "Invernalia", TRAS_BODA_ROJA),
            ("Casa Frey", "GOBIERNA", "Aguasdulces", TRAS_BODA_ROJA),
            ("Casa Frey", "ALIADA_DE", "Casa Lannister", TRAS_BODA_ROJA),
            ("Casa Bolton", "ALIADA_DE", "Casa Lannister", TRAS_BODA_ROJA),
        ],
    },
    6: {  # Lannister-Tyrell alliance
        "entities": [
            ("CasaNoble", "Casa Tyrell", {"sede": "Altojardín"}),
            ("Region", "Altojardín", {}),
            ("Personaje", "Olenna Tyrell", {"titulo": "Reina de Espinas", "genero": F}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Personaje", "Margaery Tyrell", {"genero": F}),
            ("Personaje", "Joffrey Baratheon", {"titulo": "rey", "estado": "muerto"}, "Joffrey"),
            ("Evento", "Boda Púrpura", {"tipo": "boda"}),
            ("Personaje", "Tommen Baratheon", {"genero": M}),
            ("Region", "Siete Reinos", {}),
        ],
        "relations": [
            ("Casa Tyrell", "GOBIERNA", "Altojardín"),
            ("Olenna Tyrell", "PERTENECE_A", "Casa Tyrell"),
            ("Casa Tyrell", "ALIADA_DE", "Casa Lannister", DURANTE_GUERRA),
            ("Margaery Tyrell", "PERTENECE_A", "Casa Tyrell"),
            ("Margaery Tyrell", "CASADO_CON", "Joffrey Baratheon", DURANTE_GUERRA),
            ("Joffrey Baratheon", "PARTICIPA_EN", "Boda Púrpura"),
            ("Olenna Tyrell", "TRAICIONA_A", "Joffrey Baratheon", "en la Boda Púrpura"),
            ("Margaery Tyrell", "CASADO_CON", "Tommen Baratheon", "tras la Boda Púrpura"),
            ("Tommen Baratheon", "GOBIERNA", "Siete Reinos", "tras la Boda Púrpura"),
        ],
    },
    7: {  # Sansa's marriages
        "entities": [
            ("Personaje", "Sansa Stark", {"genero": F}),
            ("CasaNoble", "Casa Stark", {}),
            ("Region", "Desembarco del Rey", {}),
            ("Personaje", "Tywin Lannister", {}),
            ("Personaje", "Tyrion Lannister", {"genero": M}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Personaje", "Ramsay Bolton", {"genero": M}),
            ("CasaNoble", "Casa Bolton", {}),
            ("Personaje", "Petyr Baelish", {"genero": M}),
            ("Region", "Invernalia", {}),
        ],
        "relations": [
            ("Sansa Stark", "PERTENECE_A", "Casa Stark"),
            ("Sansa Stark", "CASADO_CON", "Tyrion Lannister", DURANTE_GUERRA),
            ("Tyrion Lannister", "PERTENECE_A", "Casa Lannister"),
            ("Sansa Stark", "CASADO_CON", "Ramsay Bolton", TRAS_BODA_ROJA),
            ("Ramsay Bolton", "PERTENECE_A", "Casa Bolton"),
            ("Petyr Baelish", "TRAICIONA_A", "Sansa Stark"),
        ],
    },
    8: {  # Jon Snow and the Night's Watch
        "entities": [
            ("Personaje", "Jon Snow", {"titulo": "Lord Comandante de la Guardia de la Noche", "genero": M}),
            ("Region", "Invernalia", {}),
            ("Personaje", "Eddard Stark", {}),
            ("Organizacion", "Guardia de la Noche", {"tipo": "militar"}),
            ("Region", "El Muro", {}),
            ("Organizacion", "Pueblo Libre", {"tipo": "otra"}),
            ("Personaje", "Alliser Thorne", {"genero": M}),
        ],
        "relations": [
            ("Jon Snow", "ES_MIEMBRO_DE", "Guardia de la Noche"),
            ("Guardia de la Noche", "ALIADA_DE", "Pueblo Libre"),
            ("Alliser Thorne", "ES_MIEMBRO_DE", "Guardia de la Noche"),
            ("Alliser Thorne", "TRAICIONA_A", "Jon Snow"),
        ],
    },
    9: {  # Battle of the Bastards
        "entities": [
            ("Evento", "Batalla de los Bastardos", {"tipo": "batalla", "lugar": "Invernalia"}),
            ("Region", "Invernalia", {}),
            ("Personaje", "Jon Snow", {}),
            ("Personaje", "Sansa Stark", {}),
            ("Personaje", "Ramsay Bolton", {"estado": "muerto"}),
            ("CasaNoble", "Casa Bolton", {}),
            ("CasaNoble", "Casa Stark", {}),
            ("Organizacion", "Pueblo Libre", {}),
            ("Personaje", "Lyanna Mormont", {"genero": F}),
            ("CasaNoble", "Casa Mormont", {}),
            ("CasaNoble", "Casa Arryn", {}),
            ("Personaje", "Petyr Baelish", {}),
        ],
        "relations": [
            ("Jon Snow", "PARTICIPA_EN", "Batalla de los Bastardos"),
            ("Sansa Stark", "PARTICIPA_EN", "Batalla de los Bastardos"),
            ("Ramsay Bolton", "PARTICIPA_EN", "Batalla de los Bastardos"),
            ("Casa Stark", "EN_GUERRA_CON", "Casa Bolton", "en la Batalla de los Bastardos"),
            ("Pueblo Libre", "ALIADA_DE", "Casa Stark", "en la Batalla de los Bastardos"),
            ("Lyanna Mormont", "PERTENECE_A", "Casa Mormont"),
            ("Lyanna Mormont", "LEAL_A", "Jon Snow"),
            ("Casa Arryn", "PARTICIPA_EN", "Batalla de los Bastardos"),
        ],
    },
    10: {  # King in the North
        "entities": [
            ("Personaje", "Jon Snow", {}),
            ("Region", "el Norte", {}),
            ("Region", "Invernalia", {}),
            ("CasaNoble", "Casa Mormont", {}),
            ("CasaNoble", "Casa Stark", {}),
            ("Personaje", "Sansa Stark", {}),
            ("Personaje", "Davos Seaworth", {"genero": M}),
        ],
        "relations": [
            ("Jon Snow", "GOBIERNA", "el Norte", TRAS_BASTARDOS),
            ("Casa Mormont", "ALIADA_DE", "Casa Stark"),
            ("Sansa Stark", "LEAL_A", "Jon Snow"),
            ("Davos Seaworth", "LEAL_A", "Jon Snow"),
        ],
    },
    11: {  # Daenerys in Essos
        "entities": [
            ("Personaje", "Daenerys Targaryen", {"genero": F}),
            ("CasaNoble", "Casa Targaryen", {}),
            ("Organizacion", "Inmaculados", {"tipo": "militar"}),
            ("Personaje", "Gusano Gris", {"genero": M}),
            ("Organizacion", "Dothraki", {"tipo": "militar"}),
            ("Personaje", "Tyrion Lannister", {"titulo": "Mano de la Reina"}),
            ("Region", "Meereen", {"continente": "Essos"}),
            ("CasaNoble", "Casa Lannister", {}),
        ],
        "relations": [
            ("Daenerys Targaryen", "PERTENECE_A", "Casa Targaryen"),
            ("Daenerys Targaryen", "CONTRATA", "Inmaculados"),
            ("Gusano Gris", "ES_MIEMBRO_DE", "Inmaculados"),
            ("Dothraki", "ALIADA_DE", "Inmaculados"),
            ("Tyrion Lannister", "SE_ENCUENTRA_CON", "Daenerys Targaryen"),
            ("Tyrion Lannister", "LEAL_A", "Daenerys Targaryen"),
            ("Tyrion Lannister", "TRAICIONA_A", "Casa Lannister"),
        ],
    },
    12: {  # Daenerys' coalition in Westeros
        "entities": [
            ("Personaje", "Daenerys Targaryen", {}),
            ("Personaje", "Yara Greyjoy", {"genero": F}),
            ("CasaNoble", "Casa Greyjoy", {}),
            ("Personaje", "Olenna Tyrell", {}),
            ("Personaje", "Cersei Lannister", {}, "Cersei"),
            ("Personaje", "Margaery Tyrell", {"estado": "muerto"}, "Margaery"),
            ("CasaNoble", "Casa Tyrell", {}),
            ("CasaNoble", "Casa Targaryen", {}),
            ("Personaje", "Ellaria Sand", {"genero": F}),
            ("Region", "Dorne", {}),
            ("Personaje", "Doran Martell", {"genero": M, "estado": "muerto"}),
            ("CasaNoble", "Casa Martell", {}),
            ("Region", "Rocadragón", {}),
        ],
        "relations": [
            ("Yara Greyjoy", "PERTENECE_A", "Casa Greyjoy"),
            ("Yara Greyjoy", "LEAL_A", "Daenerys Targaryen"),
            ("Olenna Tyrell", "LEAL_A", "Daenerys Targaryen"),
            ("Casa Tyrell", "ALIADA_DE", "Casa Targaryen"),
            ("Ellaria Sand", "GOBIERNA", "Dorne", "tras asesinar a Doran Martell"),
            ("Ellaria Sand", "LEAL_A", "Daenerys Targaryen"),
            ("Casa Martell", "ALIADA_DE", "Casa Targaryen"),
            ("Daenerys Targaryen", "GOBIERNA", "Rocadragón"),
        ],
    },
    13: {  # Jon meets Daenerys at Dragonstone
        "entities": [
            ("Personaje", "Jon Snow", {}),
            ("Region", "Rocadragón", {}),
            ("Personaje", "Davos Seaworth", {}),
            ("Personaje", "Daenerys Targaryen", {}),
            ("Personaje", "Tyrion Lannister", {}),
        ],
        "relations": [
            ("Jon Snow", "SE_ENCUENTRA_CON", "Daenerys Targaryen", TRAS_BASTARDOS),
            ("Davos Seaworth", "SE_ENCUENTRA_CON", "Tyrion Lannister"),
            ("Jon Snow", "SE_ENCUENTRA_CON", "Tyrion Lannister"),
            ("Jon Snow", "LEAL_A", "Daenerys Targaryen", "tras el encuentro en Rocadragón"),
        ],
    },
    14: {  # Cersei, the Iron Bank and the Golden Company
        "entities": [
            ("Personaje", "Cersei Lannister", {}),
            ("Region", "Siete Reinos", {}),
            ("Region", "Desembarco del Rey", {}),
            ("Personaje", "Tommen Baratheon", {"estado": "muerto"}, "Tommen"),
            ("Organizacion", "Banco de Hierro", {"tipo": "otra"}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Personaje", "Euron Greyjoy", {"genero": M}),
            ("CasaNoble", "Casa Greyjoy", {}),
            ("Personaje", "Yara Greyjoy", {}),
            ("Organizacion", "Compañía Dorada", {"tipo": "mercenaria"}),
            ("Personaje", "Harry Strickland", {"titulo": "capitán de la Compañía Dorada", "genero": M}),
        ],
        "relations": [
            ("Cersei Lannister", "GOBIERNA", "Siete Reinos", "tras la muerte de Tommen"),
            ("Casa Lannister", "ALIADA_DE", "Banco de Hierro"),
            ("Euron Greyjoy", "PERTENECE_A", "Casa Greyjoy"),
            ("Euron Greyjoy", "LEAL_A", "Cersei Lannister"),
            ("Euron Greyjoy", "TRAICIONA_A", "Yara Greyjoy"),
            ("Cersei Lannister", "CONTRATA", "Compañía Dorada"),
            ("Harry Strickland", "ES_MIEMBRO_DE", "Compañía Dorada"),
        ],
    },
    15: {  # the facts placed in time
        "entities": [
            ("CasaNoble", "Casa Stark", {}),
            ("CasaNoble", "Casa Lannister", {}),
            ("Evento", "Guerra de los Cinco Reyes", {}),
            ("Evento", "Boda Roja", {}),
            ("CasaNoble", "Casa Frey", {}),
            ("CasaNoble", "Casa Bolton", {}),
            ("Evento", "Batalla de los Bastardos", {}),
            ("Region", "Invernalia", {}),
            ("CasaNoble", "Casa Targaryen", {}),
            ("Organizacion", "Compañía Dorada", {}),
            ("Organizacion", "Inmaculados", {}),
        ],
        "relations": [
            ("Casa Stark", "EN_GUERRA_CON", "Casa Lannister", DURANTE_GUERRA),
            ("Casa Stark", "EN_GUERRA_CON", "Casa Frey", TRAS_BODA_ROJA),
            ("Casa Stark", "EN_GUERRA_CON", "Casa Bolton", TRAS_BODA_ROJA),
            ("Casa Stark", "GOBIERNA", "Invernalia", TRAS_BASTARDOS),
            ("Casa Targaryen", "EN_GUERRA_CON", "Casa Lannister", TRAS_DESEMBARCO),
            ("Compañía Dorada", "EN_GUERRA_CON", "Inmaculados", TRAS_DESEMBARCO),
        ],
    },
}


def _validate_paragraph(validator: Validator, index: int, chunk_id: str, text: str,
                        facts: dict[str, list[tuple]]) -> ChunkValidation:
    """One paragraph's curated facts as the validator's records; ValueError on the first refusal."""
    where = f"paragraph {index}"
    out = ChunkValidation(chunk_id=chunk_id, document_id=DOCUMENT_ID)
    for item in facts["entities"]:
        cls, name, props = item[:3]
        mention = item[3] if len(item) > 3 else name
        if mention.casefold() not in text.casefold():
            raise ValueError(f"{where}: {mention!r} ({name}) is not in the paragraph text")
        record, refused = validator.check_entity({"name": name, "type": cls, "properties": props},
                                                 chunk_id, DOCUMENT_ID)
        if refused or record is None:
            raise ValueError(f"{where}: entity {name!r} refused: {refused[0].message if refused else 'no record'}")
        out.entities.append(record)
    known = known_entities(out.entities)
    local = {record.name: record for record in out.entities}
    for triple in facts["relations"]:
        subject_name, rel, object_name = triple[:3]
        attributes = {TIME_ATTRIBUTE: triple[3]} if len(triple) > 3 else {}
        missing = [n for n in (subject_name, object_name) if n not in local]
        if missing:
            raise ValueError(f"{where}: {missing[0]!r} in {triple} is not among the paragraph's entities")
        subject, obj = local[subject_name], local[object_name]
        raw = {"subject": subject_name, "subject_type": subject.type, "relation": rel, "object": object_name,
               "object_type": obj.type, "attributes": attributes}
        record, refused = validator.check_relation(raw, known, chunk_id, DOCUMENT_ID)
        if refused or record is None:
            raise ValueError(f"{where}: {triple} refused: {refused[0].message if refused else 'no record'}")
        out.relations.append(record)
    return out


def build(root: Path = ROOT) -> Extraction:
    """The gold extraction (raises ValueError when a curated fact no longer fits the corpus or ontology)."""
    onto = Ontology.from_file(root / ONTOLOGY)
    if TIME_ATTRIBUTE not in onto.relation_attributes:
        raise ValueError(f"{ONTOLOGY} declares no relation attribute {TIME_ATTRIBUTE!r}, which the gold triples use")
    text = read_text(root / CORPUS, CORPUS)
    chunked = chunk_text(DOCUMENT_ID, text, kind="paragraph", min_chars=MIN_CHARS, max_chars=MAX_CHARS, path=CORPUS)
    chunks = chunked.chunks
    if sorted(GOLD) != list(range(len(chunks))):
        raise ValueError(f"GOLD covers paragraphs {sorted(GOLD)} but the corpus has {len(chunks)} chunks")

    validator = Validator(onto)
    validations = [_validate_paragraph(validator, index, chunk.id, chunk.text, GOLD[index])
                   for index, chunk in enumerate(chunks)]
    identity = onto.identity_attributes
    entities, relations = aggregate(validations, identity)
    doc = chunked.document
    ext = Extraction(
        ontology=OntologyRef(path=ONTOLOGY, hash=onto.hash),
        llm=LLMRef(provider="gold", model="hand-curated"),
        prompt_version="gold",
        documents=[DocumentRecord(id=doc.id, path=doc.path, hash=doc.hash, metadata=dict(doc.metadata))],
        chunks=[ChunkRecord(id=c.id, document_id=c.document_id, index=c.index, start=c.start, end=c.end,
                            hash=c.hash, text=c.text, heading=c.heading) for c in chunks],
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
        return ext.write(Path(tmp) / "extraction.json").read_text(encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
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
            print(f"{out} is stale; run scripts/make_gold_extraction.py", file=sys.stderr)
            return 1
        print(f"{out} is up to date")
        return 0
    ext.write(out)
    counts = ext.counts
    print(f"wrote {out}: {counts.chunks} chunks, {counts.entities} entities, {counts.relations} relations")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
