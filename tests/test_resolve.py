"""Entity resolution within a class (graphrag_got.extract.resolve): each rule on tiny inputs, the alias file,
re-pointing and re-aggregation of relations, self-relations after a merge, revalidation, load rows
and search anchoring by alias. Neo4j-free except the last test (marked by its fixtures)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError, OntologyError
from graphrag_got.extract.run import run_extraction
from graphrag_got.extract.extraction import EntityRecord, Extraction, Reason, RelationRecord
from graphrag_got.graph.load_plan import build_plan
from graphrag_got.common.normalize import normalize_name
from graphrag_got.ontology.model import Ontology
from graphrag_got.extract.alias_file import AliasFile, AliasFileError, alias_file_path
from graphrag_got.extract.names import class_words, merge_key, name_similarity
from graphrag_got.extract.resolve import resolve_entities
from graphrag_got.search.anchors import find_anchors

ROOT = Path(__file__).resolve().parents[1]
GOT_PATH = ROOT / "ontology" / "got.json"
GOT = Ontology.from_file(GOT_PATH)
NO_FILE = AliasFile()  # explicit "no alias file", so a file beside ontology/got.json never leaks in


def ent(type_: str, name: str, *chunks: str, **props: str) -> EntityRecord:
    key = normalize_name(name)
    return EntityRecord(uid=f"{type_}|{key}", key=key, name=name, type=type_, properties=dict(props),
                        chunk_ids=list(chunks or ("d:c1",)))


def rel(s: EntityRecord, relation: str, o: EntityRecord, *chunks: str, symmetric: bool = False,
        **attrs: str) -> RelationRecord:
    return RelationRecord(subject=s.name, subject_key=s.key, subject_type=s.type, relation=relation, object=o.name,
                          object_key=o.key, object_type=o.type, attributes=dict(attrs), symmetric=symmetric,
                          chunk_ids=list(chunks or ("d:c1",)))


def resolve(entities: list[EntityRecord], relations: list[RelationRecord] | None = None,
            aliases: AliasFile = NO_FILE, onto: Ontology = GOT) -> Any:
    return resolve_entities(entities, relations or [], onto, aliases=aliases)


def names_of(entities: list[EntityRecord]) -> dict[str, list[str]]:
    return {e.name: e.aliases for e in entities}


# ------------------------------------------------------------------------------------- names


def test_merge_key_drops_class_words_and_leading_articles() -> None:
    assert class_words("CasaNoble") == {"casa", "noble"}
    assert class_words("HTTPServer") == {"http", "server"} and class_words("noble_house") == {"noble", "house"}
    assert merge_key("CasaNoble", "Casa Stark") == merge_key("CasaNoble", "Stark") == "stark"
    assert merge_key("CasaNoble", "los Stark") == merge_key("CasaNoble", "La Casa Stark") == "stark"
    assert merge_key("Organizacion", "La Guardia de la Noche") == "guardia de la noche"  # only leading ones
    assert merge_key("CasaNoble", "Casa") == "casa"  # a name made only of such words stays whole
    assert merge_key("Personaje", "Casa Stark") == "casa stark"  # class words of another class stay


def test_name_similarity_compares_word_by_word() -> None:
    assert name_similarity("roca dragon", "rocadragon") == 1.0
    assert 0.85 <= name_similarity("robb stark", "rob stark") < 1.0
    assert name_similarity("tywin lannister", "tyrion lannister") < 0.85  # one word differs a lot
    assert name_similarity("jon snow", "jon snow arryn") == 0.0


# ------------------------------------------------------------------------------------- rules


def test_article_or_class_word_rule_merges_within_the_class_only() -> None:
    house, bare, plural = ent("CasaNoble", "Casa Stark", "d:c1"), ent("CasaNoble", "Stark", "d:c2"), \
        ent("CasaNoble", "los Stark", "d:c3", sede="Invernalia")
    person = ent("Personaje", "Stark", "d:c4")
    out = resolve([bare, house, plural, person])
    assert names_of(out.entities) == {"Casa Stark": ["Stark", "los Stark"], "Stark": []}
    merged = next(e for e in out.entities if e.type == "CasaNoble")
    assert merged.uid == "CasaNoble|casa stark" and merged.key == "casa stark"  # the fullest name is the display
    assert merged.chunk_ids == ["d:c2", "d:c1", "d:c3"] and merged.properties == {"sede": "Invernalia"}
    (merge,) = out.merges
    assert merge.rule == "article_or_class_word" and merge.type == "CasaNoble"
    assert merge.canonical_uid == "CasaNoble|casa stark" and merge.canonical_name == "Casa Stark"
    assert sorted(merge.merged_uids) == ["CasaNoble|los stark", "CasaNoble|stark"]
    assert "stark" in merge.evidence and merge.score == 1.0


def test_containment_merges_only_the_single_candidate() -> None:
    dany, full = ent("Personaje", "Daenerys", "d:c1"), ent("Personaje", "Daenerys Targaryen", "d:c2")
    cat, cat_s = ent("Personaje", "Catelyn"), ent("Personaje", "Catelyn Stark")
    cat_t = ent("Personaje", "Catelyn Tully")
    out = resolve([dany, full, cat, cat_s, cat_t])
    assert names_of(out.entities) == {"Daenerys Targaryen": ["Daenerys"], "Catelyn": [], "Catelyn Stark": [],
                                      "Catelyn Tully": []}  # two names contain "catelyn": never merged
    (merge,) = out.merges
    assert (merge.rule, merge.merged_names, merge.canonical_name) == ("containment", ["Daenerys"],
                                                                       "Daenerys Targaryen")
    assert "daenerys targaryen" in merge.evidence and 0 < merge.score < 1


def test_containment_collapses_a_chain_of_names() -> None:
    a, ab, abc = ent("Personaje", "Aegon"), ent("Personaje", "Aegon Targaryen"), \
        ent("Personaje", "Aegon Targaryen Sexto")
    out = resolve([a, ab, abc])
    assert names_of(out.entities) == {"Aegon Targaryen Sexto": ["Aegon Targaryen", "Aegon"]}
    assert [m.rule for m in out.merges] == ["containment", "containment"]


def test_fuzzy_merges_close_spellings_that_are_each_others_only_candidate() -> None:
    out = resolve([ent("Personaje", "Robb Stark", "d:c1", "d:c2"), ent("Personaje", "Rob Stark"),
                   ent("Personaje", "Tywin Lannister"), ent("Personaje", "Tyrion Lannister"),
                   ent("Region", "Rocadragón"), ent("Region", "Roca Dragón")])
    assert names_of(out.entities) == {"Robb Stark": ["Rob Stark"], "Tywin Lannister": [], "Tyrion Lannister": [],
                                      "Roca Dragón": ["Rocadragón"]}
    by_rule = {m.canonical_name: m for m in out.merges}
    assert by_rule["Robb Stark"].rule == "fuzzy" and 0.85 <= by_rule["Robb Stark"].score < 1
    assert by_rule["Roca Dragón"].rule == "fuzzy" and by_rule["Roca Dragón"].score == 1.0


def test_fuzzy_never_merges_when_two_names_are_close() -> None:
    out = resolve([ent("Personaje", "Aryne Lane"), ent("Personaje", "Aryna Lane"), ent("Personaje", "Aryn Lane")])
    assert len(out.entities) == 3 and out.merges == []


def test_no_merge_leaves_records_as_they_were() -> None:
    jon, dany = ent("Personaje", "Jon Snow"), ent("Personaje", "Daenerys Targaryen")
    facts = [rel(dany, "SE_ENCUENTRA_CON", jon, symmetric=True)]  # as aggregate stores it (sorted ends)
    out = resolve([jon, dany], facts)
    assert out.entities == [jon, dany] and out.relations == facts and out.merges == [] and out.rejections == []


# ------------------------------------------------------------------------------------- relations


def test_relations_are_repointed_and_aggregated_again() -> None:
    dany, full = ent("Personaje", "Daenerys", "d:c1"), ent("Personaje", "Daenerys Targaryen", "d:c2")
    house, bare = ent("CasaNoble", "Casa Targaryen", "d:c2"), ent("CasaNoble", "Targaryen", "d:c1")
    jon = ent("Personaje", "Jon Snow", "d:c3")
    facts = [
        rel(dany, "LEAL_A", bare, "d:c1"),
        rel(full, "LEAL_A", house, "d:c2"),
        rel(full, "LEAL_A", house, "d:c4", momento="al final"),  # another identity value: another fact
        rel(jon, "SE_ENCUENTRA_CON", dany, "d:c3", symmetric=True),
    ]
    out = resolve([dany, full, house, bare, jon], facts)
    triples = {(r.subject, r.relation, r.object, r.attributes.get("momento", "")): r for r in out.relations}
    assert set(triples) == {("Daenerys Targaryen", "LEAL_A", "Casa Targaryen", ""),
                            ("Daenerys Targaryen", "LEAL_A", "Casa Targaryen", "al final"),
                            ("Daenerys Targaryen", "SE_ENCUENTRA_CON", "Jon Snow", "")}
    loyal = triples[("Daenerys Targaryen", "LEAL_A", "Casa Targaryen", "")]
    assert loyal.chunk_ids == ["d:c1", "d:c2"]  # the two facts that became one keep both chunks
    assert (loyal.subject_key, loyal.object_key) == ("daenerys targaryen", "casa targaryen")
    meet = triples[("Daenerys Targaryen", "SE_ENCUENTRA_CON", "Jon Snow", "")]
    assert meet.subject_uid < meet.object_uid  # symmetric: ends in sorted-uid order again
    uids = {e.uid for e in out.entities}
    assert all(r.subject_uid in uids and r.object_uid in uids for r in out.relations)


def test_a_relation_between_two_merged_names_is_refused_as_self_relation() -> None:
    house, bare = ent("CasaNoble", "Casa Stark"), ent("CasaNoble", "Stark")
    frey = ent("CasaNoble", "Casa Frey")
    facts = [rel(bare, "ALIADA_DE", house, "got.txt:aaa", "got.txt:bbb", symmetric=True),
             rel(frey, "TRAICIONA_A", bare, "got.txt:ccc")]
    out = resolve([house, bare, frey], facts)
    assert [(r.subject, r.relation, r.object) for r in out.relations] == [("Casa Frey", "TRAICIONA_A", "Casa Stark")]
    assert len(out.rejections) == 2  # one per chunk that stated it
    for rej in out.rejections:
        assert rej.reason == Reason.SELF_RELATION and rej.kind == "relation"
        assert (rej.subject, rej.object, rej.relation) == ("Stark", "Casa Stark", "ALIADA_DE")
        assert rej.document_id == "got.txt" and "merged" in rej.message and "distinct" in rej.message
    assert {r.chunk_id for r in out.rejections} == {"got.txt:aaa", "got.txt:bbb"}


# ------------------------------------------------------------------------------------- alias file


def _aliases(data: dict[str, Any]) -> AliasFile:
    return AliasFile.from_data(data, GOT, "test.aliases.json")


def test_pinned_aliases_always_merge_and_the_pinned_name_is_displayed() -> None:
    cat, cat_s = ent("Personaje", "Catelyn"), ent("Personaje", "Catelyn Stark")
    cat_t = ent("Personaje", "Catelyn Tully")
    pins = _aliases({"aliases": {"Personaje": {"Catelyn Tully": ["Catelyn Stark", "Lady Catelyn"]}}})
    out = resolve([cat, cat_s, cat_t], aliases=pins)
    # pinned first; then "Catelyn" has one candidate group left, so containment joins it too
    assert names_of(out.entities) == {"Catelyn Tully": ["Catelyn Stark", "Catelyn", "Lady Catelyn"]}
    assert [m.rule for m in out.merges] == ["pinned", "containment"]
    assert out.merges[0].merged_names == ["Catelyn Stark"]


def test_pinned_name_renames_a_lone_entity() -> None:
    out = resolve([ent("CasaNoble", "Stark")], aliases=_aliases({"aliases": {"CasaNoble": {"Casa Stark": ["Stark"]}}}))
    assert names_of(out.entities) == {"Casa Stark": ["Stark"]}
    assert out.entities[0].uid == "CasaNoble|casa stark" and out.merges[0].rule == "pinned"


def test_two_pinned_entries_are_never_joined_by_a_rule() -> None:
    pins = _aliases({"aliases": {"CasaNoble": {"Casa Stark": ["Invernalia"], "Stark": ["los Lobos"]}}})
    out = resolve([ent("CasaNoble", "Casa Stark"), ent("CasaNoble", "Stark")], aliases=pins)
    assert names_of(out.entities) == {"Casa Stark": ["Invernalia"], "Stark": ["los Lobos"]} and out.merges == []


def test_distinct_names_are_never_merged_even_through_a_third_name() -> None:
    dany, full = ent("Personaje", "Daenerys"), ent("Personaje", "Daenerys Targaryen")
    out = resolve([dany, full], aliases=_aliases({"distinct": {"Personaje": [["Daenerys", "Daenerys Targaryen"]]}}))
    assert len(out.entities) == 2 and out.merges == []
    # "los Stark" and "Stark" would join "Casa Stark" by the article rule; "Stark" is declared distinct
    trio = [ent("CasaNoble", "Casa Stark"), ent("CasaNoble", "Stark"), ent("CasaNoble", "los Stark")]
    out = resolve(trio, aliases=_aliases({"distinct": {"CasaNoble": [["Stark", "Casa Stark"]]}}))
    groups = sorted(sorted([e.name, *e.aliases]) for e in out.entities)
    assert ["Casa Stark", "Stark"] not in groups and all(not {"Casa Stark", "Stark"} <= set(g) for g in groups)


def test_alias_file_beside_the_ontology_is_read(tmp_path: Path) -> None:
    onto_path = tmp_path / "myonto.json"
    shutil.copy(GOT_PATH, onto_path)
    onto = Ontology.from_file(onto_path)
    assert alias_file_path(onto) == tmp_path / "myonto.aliases.json"
    dany, full = ent("Personaje", "Daenerys"), ent("Personaje", "Daenerys Targaryen")
    assert len(resolve_entities([dany, full], [], onto).entities) == 1  # no file: the rules apply
    (tmp_path / "myonto.aliases.json").write_text(
        json.dumps({"distinct": {"Personaje": [["Daenerys", "Daenerys Targaryen"]]}}), encoding="utf-8")
    assert len(resolve_entities([dany, full], [], onto).entities) == 2
    assert alias_file_path(Ontology.from_dict(json.loads(GOT_PATH.read_text(encoding="utf-8")))) is None


@pytest.mark.parametrize(("data", "where", "what"), [
    ({"aliases": {"Dragon": {"Drogon": ["Drogo"]}}}, "$.aliases.Dragon", "not a class of the ontology"),
    ({"alias": {}}, "$.alias", "unknown key"),
    ({"aliases": {"CasaNoble": {"Casa Stark": "Stark"}}}, "$.aliases.CasaNoble.Casa Stark", "expected a list"),
    ({"aliases": {"CasaNoble": {"Casa Stark": [3]}}}, "$.aliases.CasaNoble.Casa Stark[0]", "expected a string"),
    ({"aliases": {"CasaNoble": {"Casa Stark": ["  "]}}}, "$.aliases.CasaNoble.Casa Stark[0]", "empty"),
    ({"aliases": {"CasaNoble": {"Casa Stark": ["Stark"], "Casa Tully": ["stark"]}}},
     "$.aliases.CasaNoble.Casa Tully[0]", "already an alias of 'Casa Stark'"),
    ({"distinct": {"Personaje": [["Jon Snow"]]}}, "$.distinct.Personaje[0]", "at least two names"),
    ({"distinct": {"Personaje": [["Jon Snow", "jon  snow"]]}}, "$.distinct.Personaje[0]", "repeated"),
    ({"aliases": {"Personaje": {"Catelyn Tully": ["Catelyn Stark"]}},
      "distinct": {"Personaje": [["Catelyn Stark", "Catelyn Tully"]]}},
     "$.distinct.Personaje[0]", "both pinned as aliases of 'Catelyn Tully'"),
    ([1, 2], "$", "expected a JSON object"),
])
def test_bad_alias_file_content_is_a_clear_error(data: Any, where: str, what: str) -> None:
    with pytest.raises(AliasFileError) as info:
        AliasFile.from_data(data, GOT, "ontology/x.aliases.json")
    err = info.value
    assert isinstance(err, OntologyError) and isinstance(err, GraphragGotError)
    assert str(err).startswith("ontology/x.aliases.json:") and "--revalidate" in str(err)
    assert any(w == where and what in msg for w, msg in err.problems), err.problems


@pytest.mark.parametrize(("text", "what"), [
    ('{"aliases": {"CasaNoble": {"Casa Stark": ["Stark",]}}}', ":1:"),  # position of the JSON error
    ('{"aliases": {}, "aliases": {}}', "appears twice"),
    (b"\xff\xfe{}", "not UTF-8"),
])
def test_unreadable_alias_file_names_the_file(tmp_path: Path, text: str | bytes, what: str) -> None:
    path = tmp_path / "got.aliases.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    with pytest.raises(AliasFileError, match=what) as info:
        AliasFile.read(path, GOT)
    assert str(path) in str(info.value)


# ------------------------------------------------------------------------------------- properties

_NAMES = st.sampled_from(["Casa Stark", "Stark", "los Stark", "Daenerys", "Daenerys Targaryen", "Robb Stark",
                          "Rob Stark", "Jon", "Jon Snow", "Jon Arryn", "Tully", "La Casa Tully"])
_CLASSES = st.sampled_from(["Personaje", "CasaNoble"])


@given(st.lists(st.tuples(_CLASSES, _NAMES), min_size=1, max_size=10, unique=True),
       st.lists(st.tuples(st.integers(0, 9), st.integers(0, 9)), max_size=10))
def test_resolution_invariants(pairs: list[tuple[str, str]], links: list[tuple[int, int]]) -> None:
    entities = [ent(c, n, f"d:c{i}") for i, (c, n) in enumerate(pairs)]
    facts = [rel(entities[a], "LEAL_A", entities[b], f"d:r{k}") for k, (a, b) in enumerate(links)
             if a < len(entities) and b < len(entities) and a != b]
    out = resolve(entities, facts)
    uids = [e.uid for e in out.entities]
    assert len(uids) == len(set(uids))  # one record per entity
    for e in out.entities:
        assert e.uid == f"{e.type}|{normalize_name(e.name)}"  # what load recomputes from the name
    # every input entity is an output entity or was merged into one of its class; nothing crosses classes
    merged = {u: m for m in out.merges for u in m.merged_uids}
    for e in entities:
        assert e.uid in uids or (e.uid in merged and merged[e.uid].type == e.type)
    assert sum(len(e.chunk_ids) for e in out.entities) == len(entities)  # chunk ids are kept, none doubled
    assert all(r.subject_uid in uids and r.object_uid in uids and r.subject_uid != r.object_uid
               for r in out.relations)
    chunks_in = sum(len(r.chunk_ids) for r in facts)
    assert sum(len(r.chunk_ids) for r in out.relations) + len(out.rejections) == chunks_in  # nothing silent


# ------------------------------------------------------------------------------------- the pipeline

PARAGRAPHS = [
    "Daenerys Targaryen llega a Rocadragón con sus dragones y jura lealtad a la Casa Targaryen.",
    "Daenerys se encuentra con Jon Snow en Rocadragón y sigue leal a los Targaryen.",
]
ANSWERS = [
    {"entities": [{"type": "Personaje", "name": "Daenerys Targaryen"}, {"type": "CasaNoble", "name": "Casa Targaryen"}],
     "relations": [{"relation": "LEAL_A", "subject": "Daenerys Targaryen", "subject_type": "Personaje",
                    "object": "Casa Targaryen", "object_type": "CasaNoble"}]},
    {"entities": [{"type": "Personaje", "name": "Daenerys"}, {"type": "Personaje", "name": "Jon Snow"},
                  {"type": "CasaNoble", "name": "Targaryen"}],
     "relations": [{"relation": "SE_ENCUENTRA_CON", "subject": "Daenerys", "subject_type": "Personaje",
                    "object": "Jon Snow", "object_type": "Personaje"},
                   {"relation": "LEAL_A", "subject": "Daenerys", "subject_type": "Personaje",
                    "object": "Targaryen", "object_type": "CasaNoble"}]},
]


@pytest.fixture()
def project(tmp_path: Path) -> dict[str, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "mini.txt").write_text("\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    chunks = read_corpus(corpus, min_chars=10, max_chars=1500)[0].chunks
    assert len(chunks) == len(ANSWERS)
    replay = tmp_path / "replay.json"
    replay.write_text(json.dumps({"format": "graphrag_got.replay/1", "responses": [
        {"chunk_id": c.id, "chunk_hash": c.hash, "responses": [json.dumps(a, ensure_ascii=False)]}
        for c, a in zip(chunks, ANSWERS)]}, ensure_ascii=False), encoding="utf-8")
    onto = tmp_path / "onto" / "got.json"
    onto.parent.mkdir()
    shutil.copy(GOT_PATH, onto)
    return {"corpus": corpus, "replay": replay, "ontology": onto, "aliases": onto.with_name("got.aliases.json"),
            "home": tmp_path / "home", "out": tmp_path / "out"}


def _run(p: dict[str, Path], **kw: Any) -> tuple[Any, Extraction]:
    settings = Settings(home=p["home"], out_dir=p["out"], chunk_min_chars=10, llm_provider="replay",
                        replay_file=p["replay"], ontology_path=p["ontology"], **{k: v for k, v in kw.items()
                                                                                 if k != "revalidate"})
    summary = run_extraction(settings.extract, Ontology.from_file(p["ontology"]), p["corpus"],
                             revalidate=kw.get("revalidate", False), files=settings.files, chunking=settings.chunking, llm=settings.llm)
    return summary, Extraction.read(summary.out_path)


def test_extract_resolves_and_logs_and_revalidate_reverses_a_merge_without_the_model(project) -> None:
    summary, ext = _run(project)
    assert summary.llm_calls == 2
    assert {e.name: e.aliases for e in ext.entities} == {
        "Daenerys Targaryen": ["Daenerys"], "Casa Targaryen": ["Targaryen"], "Jon Snow": []}
    assert sorted(m.rule for m in ext.merges) == ["article_or_class_word", "containment"]
    loyal = [r for r in ext.relations if r.relation == "LEAL_A"]
    assert len(loyal) == 1 and len(loyal[0].chunk_ids) == 2  # the two chunks now state one fact
    assert ext.counts.entities == 3

    # the user says the two names are different people; the model is gone (no replay file)
    project["aliases"].write_text(json.dumps({"distinct": {"Personaje": [["Daenerys", "Daenerys Targaryen"]]}}),
                                  encoding="utf-8")
    project["replay"].unlink()
    summary, ext = _run(project, revalidate=True)
    assert summary.llm_calls == 0 and summary.revalidated and summary.missing_chunks == 0
    assert {e.name for e in ext.entities} == {"Daenerys Targaryen", "Daenerys", "Casa Targaryen", "Jon Snow"}
    assert [m.rule for m in ext.merges] == ["article_or_class_word"]
    assert {(r.subject, r.object) for r in ext.relations if r.relation == "LEAL_A"} == {
        ("Daenerys Targaryen", "Casa Targaryen"), ("Daenerys", "Casa Targaryen")}

    # a broken alias file stops the run with its path, not a traceback
    project["aliases"].write_text('{"distinct": {"Personaje": [["Daenerys"]]}}', encoding="utf-8")
    with pytest.raises(AliasFileError, match=r"(?s)got\.aliases\.json.*\$\.distinct\.Personaje\[0\]"):
        _run(project, revalidate=True)


def test_resolution_off_keeps_every_name(project) -> None:
    _, ext = _run(project, resolution=False)
    assert len(ext.entities) == 5 and ext.merges == [] and all(e.aliases == [] for e in ext.entities)


def test_load_rows_carry_aliases_and_search_anchors_on_them(project) -> None:
    _, ext = _run(project)
    plan = build_plan(ext, GOT)
    row = plan.entities["Personaje|daenerys targaryen"]
    assert row["aliases"] == ["Daenerys"] and row["name"] == "Daenerys Targaryen"
    assert all("Personaje|daenerys" != uid for uid in plan.entities)
    assert not plan.refused  # load's re-check accepts the re-pointed relations as they are
    catalog = [{"uid": r["uid"], "key": r["key"], "name": r["name"], "type": r["type"], "aliases": r["aliases"]}
               for r in plan.entities.values()]
    anchors, _ = find_anchors("¿A quién es leal la casa de los Targaryen?", catalog)
    assert [a.uid for a in anchors] == ["CasaNoble|casa targaryen"]  # through the alias "Targaryen"
    catalog.append({"uid": "Personaje|targaryen x", "key": "targaryen x", "name": "Targaryen X",
                    "type": "Personaje", "aliases": ["Targaryen"]})
    anchors, _ = find_anchors("Targaryen", catalog)
    assert {a.uid for a in anchors} == {"CasaNoble|casa targaryen", "Personaje|targaryen x"}


def test_neo4j_nodes_get_aliases_and_local_search_anchors_on_them(project, clean_graph, neo4j_settings) -> None:
    """Needs Neo4j (marked by its fixtures): one node per real entity, with its aliases list."""
    from graphrag_got.graph import db as graphdb
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.search import local_search

    summary, ext = _run(project)
    settings = neo4j_settings.with_overrides(home=project["home"], out_dir=project["out"])
    load_extraction(clean_graph, settings.neo4j, summary.out_path, GOT, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    rows = graphdb.read_all(clean_graph, settings.neo4j,
                            "MATCH (e:Entity) RETURN e.uid AS uid, e.aliases AS aliases ORDER BY uid")
    assert {r["uid"]: r["aliases"] for r in rows} == {
        "CasaNoble|casa targaryen": ["Targaryen"], "Personaje|daenerys targaryen": ["Daenerys"],
        "Personaje|jon snow": []}
    res = local_search(clean_graph, settings.neo4j, "¿Con quién se encuentra Daenerys?", answer=False, ontology=GOT,
                       retrieval="graph", search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)  # name anchoring only: hybrid adds vector-matched anchors
    assert [a.uid for a in res.anchors] == ["Personaje|daenerys targaryen"]
    assert any(f.type == "SE_ENCUENTRA_CON" for f in res.facts)


def test_cli_counts_merges_and_reports_a_bad_alias_file_without_traceback(project, capsys, monkeypatch) -> None:
    from graphrag_got.cli import main

    monkeypatch.setenv("GRAPHRAG_CHUNK_MIN_CHARS", "10")
    argv = ["--home", str(project["home"]), "--out", str(project["out"]), "--ontology", str(project["ontology"]),
            "--provider", "replay", "--replay-file", str(project["replay"]), "extract", str(project["corpus"])]
    assert main(argv) == 0
    assert "entity resolution: 2 merge(s)" in capsys.readouterr().out
    project["aliases"].write_text('{"aliases": {"Personaje": {"Daenerys Targaryen": "Daenerys"}}}', encoding="utf-8")
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert str(project["aliases"]) in err and "$.aliases.Personaje.Daenerys Targaryen: expected a list" in err
