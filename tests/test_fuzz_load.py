"""Property-based test (hypothesis) of `load_extraction` against the real Neo4j.

Generated ``extraction.json`` documents (the valid shape, with hostile strings, relation types of the
ontology and outside it, numbers where text belongs, integers beyond 64 bits, empty and huge strings,
ids too long for an index) are loaded on top of a valid earlier load. The property: the load ends
with a summary or with one clear ``GraphragGotError``, never another exception, and never a
half-written document: every document in the graph holds exactly the chunks of one version of it
(the earlier one or the new one) with that version's hash, and no entity or relationship cites a
chunk or document the graph does not hold.

Examples are few and small in the default profile (tests/conftest.py); ``--hypothesis-profile=thorough``
runs more.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graphrag_got.errors import GraphragGotError
from graphrag_got.extract.extraction import FORMAT
from graphrag_got.graph.load import LoadSummary, load_extraction
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology

ONTO = Ontology.from_dict({
    "name": "fuzz",
    "classes": {"Person": {"properties": {"title": "string, optional", "sex": "enum: f | m"}},
                "House": {"properties": {}}},
    "relations": [{"name": "MARRIED_TO", "domain": "Person", "range": "Person", "symmetric": True},
                  {"name": "MEMBER_OF", "domain": "Person", "range": "House"}],
    "relation_attributes": {"when": {"type": "string", "required": False, "identity": True}},
}, source="fuzz-ontology.json")  # fmt: skip

_profile_examples = settings().max_examples
EXAMPLES = 15 if _profile_examples <= 50 else max(15, _profile_examples // 20)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


# ------------------------------------------------------------------------------------ strategies

plain = st.one_of(st.text(max_size=15), st.sampled_from(
    ["", " ", "Ann", "ann", "ANN ", "Bob", "x' }) MATCH (n) DETACH DELETE n //", "`tick`", "$p", "línea\nnueva",
     "日本語", "\x00", "a" * 250, "b" * 5000]))
#: Mostly text a file may hold; sometimes lone surrogates (which the file contract refuses).
hostile = st.one_of(plain, plain, plain, st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6))
numbers_where_text_goes = st.one_of(st.integers(), st.floats(), st.booleans(), st.none())
values = st.one_of(hostile, hostile, st.sampled_from(["f", "m", "Lady"]), numbers_where_text_goes)
small = st.integers(min_value=0, max_value=10_000)
ints = st.one_of(small, small, small, st.sampled_from([-1, 2**63 - 1, 2**63, -(2**63) - 1, 2**80]))
normal_ids = st.sampled_from(["d0.txt", "d1.txt", "d2.txt"])
doc_ids = st.one_of(normal_ids, normal_ids, hostile, st.just("c" * 9000))


@st.composite
def extractions(draw: st.DrawFn) -> dict[str, Any]:
    """Half of the files keep to what the file contract accepts (text where text goes, non-empty
    names), so the load itself runs; the other half may break anything."""
    contract = draw(st.booleans())
    names = plain.filter(lambda n: normalize_name(n) != "") if contract else hostile
    texts_ = st.one_of(plain, st.sampled_from(["f", "m", "Lady"])) if contract else values
    ids = st.one_of(normal_ids, normal_ids, normal_ids, st.just("c" * 9000)) if contract else doc_ids
    numbers = small if contract else ints
    documents, chunks = [], []
    for doc_id in draw(st.lists(ids, min_size=1, max_size=3, unique=True)):
        texts = draw(st.lists(st.one_of(hostile, st.just("z" * 100_000)), min_size=0, max_size=3))
        documents.append({"id": doc_id, "path": f"corpus/{doc_id}", "hash": _sha("generated|" + doc_id + "|".join(texts)),
                          "metadata": draw(st.dictionaries(hostile, st.one_of(hostile, ints), max_size=2))})  # fmt: skip
        for i, text in enumerate(texts):
            chunks.append({"id": f"{doc_id}:{i}", "document_id": doc_id, "index": draw(numbers), "start": draw(numbers),
                           "end": draw(numbers), "hash": _sha(text), "text": text, "heading": None})  # fmt: skip
    chunk_ids = [c["id"] for c in chunks] or ["none:0"]
    entities = []
    for _ in range(draw(st.integers(0, 5))):
        name = draw(names)
        cls = draw(st.sampled_from(["Person", "Person", "House", "Dragon"]))
        key = normalize_name(name)
        props = draw(st.dictionaries(st.sampled_from(["title", "sex", "color"]),
                                     texts_, max_size=2))  # fmt: skip
        entities.append({"uid": f"{cls}|{key}", "key": key, "name": name, "type": cls, "properties": props,
                         "chunk_ids": draw(st.lists(st.sampled_from(chunk_ids), max_size=2, unique=True))})  # fmt: skip
    ends = [(e["type"], e["name"], e["key"]) for e in entities] + [("Person", "Nobody", "nobody")]
    relations = []
    for _ in range(draw(st.integers(0, 5))):
        persons = [e for e in ends if e[0] == "Person" and e[1] != "Nobody"]
        houses = [e for e in ends if e[0] == "House"]
        if len(persons) > 1 and draw(st.booleans()):  # ends the ontology allows (the relation may still not)
            (stype, sname, skey), (otype, oname, okey) = draw(st.permutations(persons))[:2]
        elif persons and houses and draw(st.booleans()):
            (stype, sname, skey), (otype, oname, okey) = draw(st.sampled_from(persons)), draw(st.sampled_from(houses))
        else:
            (stype, sname, skey), (otype, oname, okey) = draw(st.sampled_from(ends)), draw(st.sampled_from(ends))
        attributes = draw(st.dictionaries(st.sampled_from(["when", "where"]), texts_, max_size=1))
        relations.append({
            "subject": sname, "subject_key": skey, "subject_type": stype,
            "relation": draw(st.sampled_from(["MARRIED_TO", "MEMBER_OF", "HATES", "married_to"] + ([] if contract else [""]))),
            "object": oname, "object_key": okey, "object_type": otype, "attributes": attributes,
            "symmetric": draw(st.booleans()),
            "chunk_ids": draw(st.lists(st.sampled_from(chunk_ids), max_size=2, unique=True)),
        })  # fmt: skip
    return {"format": FORMAT, "ontology": {"path": "fuzz-ontology.json", "hash": draw(st.sampled_from([ONTO.hash, "", "other"]))},
            "documents": documents, "chunks": chunks, "entities": entities, "relations": relations}  # fmt: skip


def base_extraction() -> dict[str, Any]:
    """A valid earlier load: d0.txt and d1.txt, so the generated files also change and drop documents."""
    docs, chunks, ents, rels = [], [], [], []
    for d, people in (("d0.txt", ["Ann", "Bob"]), ("d1.txt", ["Bob", "Cid"])):
        cid = f"{d}:0"
        docs.append({"id": d, "path": f"corpus/{d}", "hash": _sha(d), "metadata": {}})
        chunks.append({"id": cid, "document_id": d, "index": 0, "start": 0, "end": 10, "hash": _sha(d),
                       "text": " and ".join(people), "heading": None})  # fmt: skip
        rels.append({"subject": people[0], "subject_key": people[0].lower(), "subject_type": "Person",
                     "relation": "MARRIED_TO", "object": people[1], "object_key": people[1].lower(),
                     "object_type": "Person", "attributes": {}, "symmetric": True, "chunk_ids": [cid]})  # fmt: skip
        for p in people:
            ents.append({"uid": f"Person|{p.lower()}", "key": p.lower(), "name": p, "type": "Person",
                         "properties": {}, "chunk_ids": [cid]})  # fmt: skip
    merged: dict[str, dict[str, Any]] = {}
    for e in ents:
        merged.setdefault(e["uid"], {**e, "chunk_ids": []})["chunk_ids"] += e["chunk_ids"]
    return {"format": FORMAT, "ontology": {"path": "fuzz-ontology.json", "hash": ONTO.hash}, "documents": docs,
            "chunks": chunks, "entities": list(merged.values()), "relations": rels}  # fmt: skip


# ------------------------------------------------------------------------------------ the property


def _versions(*exts: dict[str, Any]) -> dict[str, dict[str, set[str]]]:
    """document id -> {hash: chunk ids} over the versions given (raw dicts, as generated)."""
    out: dict[str, dict[str, set[str]]] = {}
    for ext in exts:
        for d in ext["documents"]:
            out.setdefault(d["id"], {})[d["hash"]] = {c["id"] for c in ext["chunks"] if c["document_id"] == d["id"]}
    return out


def _read(driver, settings_, query: str) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    records, _, _ = driver.execute_query(query, database_=settings_.neo4j.database)
    return [r.data() for r in records]


def assert_no_half_written_document(driver, settings_, versions: dict[str, dict[str, set[str]]]) -> None:  # type: ignore[no-untyped-def]
    docs = {r["id"]: r["hash"] for r in _read(driver, settings_, "MATCH (d:Document) RETURN d.id AS id, d.hash AS hash")}
    chunks: dict[str, set[str]] = {}
    for r in _read(driver, settings_, "MATCH (c:Chunk) RETURN c.id AS id, c.document_id AS doc"):
        chunks.setdefault(r["doc"], set()).add(r["id"])
    assert set(chunks) <= set(docs), "chunks without their document"
    for doc_id, doc_hash in docs.items():
        assert doc_hash in versions.get(doc_id, {}), f"document {doc_id[:40]!r} without a complete version"
        assert chunks.get(doc_id, set()) == versions[doc_id][doc_hash], f"document {doc_id[:40]!r} half-written"
    held = {c for ids in chunks.values() for c in ids}
    for r in _read(driver, settings_, "MATCH (e:Entity) RETURN e.chunk_ids AS c, e.doc_ids AS d UNION ALL "
                                      "MATCH (:Entity)-[r]->(:Entity) RETURN r.chunk_ids AS c, r.doc_ids AS d"):  # fmt: skip
        assert set(r["c"] or []) <= held and set(r["d"] or []) <= set(docs), "provenance cites what is not loaded"


def test_any_extraction_loads_or_fails_cleanly_never_half_written(neo4j_driver, neo4j_settings, wipe_graph) -> None:
    wipe_graph()
    base = base_extraction()

    @settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(ext=extractions(), batch_size=st.sampled_from([1, 2, 5000]))
    def run(ext: dict[str, Any], batch_size: int) -> None:
        neo4j_driver.execute_query("MATCH (n) DETACH DELETE n", database_=neo4j_settings.neo4j.database)
        load_extraction(neo4j_driver, neo4j_settings.neo4j, base, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
        try:
            cfg = neo4j_settings.with_overrides(batch_size=batch_size)
            summary = load_extraction(neo4j_driver, cfg.neo4j, ext, ONTO, graph=cfg.graph, extract=cfg.extract, embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
        except GraphragGotError as exc:
            event(f"refused: {type(exc).__name__}")
            message = str(exc)
            assert message.strip() and "Traceback" not in message
            assert len(message) < 5000  # hostile values are shortened, never echoed in full
        else:
            event("loaded" + (" with refusals" if summary.refused_by_reason else ""))
            assert isinstance(summary, LoadSummary)
            loaded = {r["id"]: r["hash"] for r in _read(neo4j_driver, neo4j_settings,
                                                        "MATCH (d:Document) RETURN d.id AS id, d.hash AS hash")}  # fmt: skip
            assert loaded == {d["id"]: d["hash"] for d in ext["documents"]}  # new ones in, missing ones out
        assert_no_half_written_document(neo4j_driver, neo4j_settings, _versions(base, ext))

    try:
        run()
    finally:
        wipe_graph()
