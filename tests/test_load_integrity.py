"""The graph always equals its extraction (issue 37): a document whose records changed is written again,
whatever changed them (an alias edit and `extract --revalidate`, entity resolution folding a name into
another, other answers for the same text), and `stats --strict` compares the graph with its file.

Against the real Neo4j; the GoT reproductions run the extraction with the recorded answers of the
embedded model. The property test loads random sequences of extractions and compares the graph with a
clean load of the last one.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from test_load import GUARDIA, JON, ONTO, STARK, TEXT_A, TEXT_B, YGRITTE, chunk_id, ent, extraction, q, rel

from graphrag_got.config import Settings
from graphrag_got.extract.extraction import Extraction
from graphrag_got.extract.run import run_extraction
from graphrag_got.graph.compare import DifferenceKind, Section, compare, compare_with_file, stored_view
from graphrag_got.graph.load import load_extraction
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"


def _clear(driver, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    """Every node and relationship (the schema stays: a clean load finds it in place)."""
    driver.execute_query("MATCH (n) DETACH DELETE n", database_=settings.neo4j.database)


def _clean_load_view(driver, settings: Settings, ext: Any, onto: Ontology = ONTO):  # type: ignore[no-untyped-def]
    """The stored view of a clean load of ``ext`` (the graph is emptied first)."""
    _clear(driver, settings)
    load_extraction(driver, settings.neo4j, ext, onto, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    return stored_view(driver, settings.neo4j, onto)


def _assert_equal_to_a_clean_load(driver, settings: Settings, ext: Any, onto: Ontology = ONTO) -> None:  # type: ignore[no-untyped-def]
    data = ext if isinstance(ext, dict) else ext.model_dump(mode="json")
    against_file = compare_with_file(driver, settings.neo4j, Extraction.read(copy.deepcopy(data)), onto, graph=settings.graph, extract=settings.extract)
    assert against_file.equal, [d.line() for d in against_file.differences]
    incremental = stored_view(driver, settings.neo4j, onto)
    result = compare(_clean_load_view(driver, settings, copy.deepcopy(data), onto), incremental)
    assert result.equal, [d.line() for d in result.differences]


# ------------------------------------------------------------------ the reproductions of the issue


@pytest.fixture()
def got_project(tmp_path: Path, neo4j_settings: Settings) -> tuple[Settings, Ontology, Path]:
    """The GoT corpus and ontology copied into ``tmp_path`` (the alias file lives beside the ontology)."""
    (tmp_path / "ontology").mkdir()
    shutil.copy(ROOT / "ontology" / "got.json", tmp_path / "ontology" / "got.json")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out",
                                             ontology_path=tmp_path / "ontology" / "got.json", llm_provider="replay",
                                             replay_file=REPLAY, embeddings=False)  # fmt: skip
    return settings, Ontology.from_file(tmp_path / "ontology" / "got.json"), ROOT / "corpus" / "got.txt"


@pytest.mark.neo4j
def test_an_alias_edit_and_revalidate_reach_the_graph(clean_graph, got_project) -> None:  # type: ignore[no-untyped-def]
    settings, onto, corpus = got_project
    run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    load_extraction(clean_graph, settings.neo4j, settings.files.out_dir / "extraction.json", onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    uid = "Personaje|eddard stark"
    assert q(clean_graph, settings, "MATCH (e:Entity {uid: $uid}) RETURN e.aliases AS a", uid=uid) == [{"a": ["Eddard"]}]

    alias_file = settings.files.ontology_path.with_name("got.aliases.json")
    alias_file.write_text(json.dumps({"distinct": {"Personaje": [["Eddard Stark", "Eddard"]]}}), encoding="utf-8")
    onto = Ontology.from_file(settings.files.ontology_path)
    revalidated = run_extraction(settings.extract, onto, corpus, revalidate=True, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert revalidated.revalidated
    ext = Extraction.read(settings.files.out_dir / "extraction.json")
    assert next(e for e in ext.entities if e.uid == uid).aliases == []

    s = load_extraction(clean_graph, settings.neo4j, settings.files.out_dir / "extraction.json", onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    assert s.documents_unchanged == 0 and s.documents_updated == s.documents_reloaded_for_records == 1
    assert q(clean_graph, settings, "MATCH (e:Entity {uid: $uid}) RETURN e.aliases AS a", uid=uid) == [{"a": []}]
    _assert_equal_to_a_clean_load(clean_graph, settings, ext, onto)


@pytest.mark.neo4j
def test_other_answers_for_the_same_text_rewrite_the_document(clean_graph, got_project) -> None:  # type: ignore[no-untyped-def]
    """Same text, same ontology, other records (another model or settings): drop every third relation and
    rename an entity, as a re-extraction would."""
    settings, onto, corpus = got_project
    run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    path = settings.files.out_dir / "extraction.json"
    load_extraction(clean_graph, settings.neo4j, path, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["relations"] = [r for i, r in enumerate(data["relations"]) if i % 3]
    data["entities"][0]["aliases"] = [*data["entities"][0].get("aliases", []), "otro nombre"]
    s = load_extraction(clean_graph, settings.neo4j, copy.deepcopy(data), onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    assert s.documents_reloaded_for_records == 1 and s.documents_unchanged == 0
    _assert_equal_to_a_clean_load(clean_graph, settings, data, onto)


@pytest.mark.neo4j
def test_resolution_folding_an_older_entity_into_a_new_name(neo4j_driver, neo4j_settings, clean_graph) -> None:
    """A new document makes entity resolution fold an older document's "Jon" into "Jon Snow": the older
    document is written again, the folded entity leaves the graph, its relations move to the new name."""
    t_a, t_b = "Jon, de la Casa Stark, se casa con Ygritte.", "Jon Snow vuelve al Norte."
    a, b = chunk_id("a.txt", t_a), chunk_id("b.txt", t_b)
    jon_short = ("Personaje", "Jon")
    first = extraction({"a.txt": t_a}, [ent(*jon_short, [a]), ent(*YGRITTE, [a]), ent(*STARK, [a])],
                       [rel(jon_short, "CASADO_CON", YGRITTE, [a], symmetric=True),
                        rel(jon_short, "PERTENECE_A", STARK, [a])])  # fmt: skip
    load_extraction(neo4j_driver, neo4j_settings.neo4j, first, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    folded = ent(*JON, [a, b])
    folded["aliases"] = ["Jon"]
    second = extraction({"a.txt": t_a, "b.txt": t_b}, [folded, ent(*YGRITTE, [a]), ent(*STARK, [a])],
                        [rel(JON, "CASADO_CON", YGRITTE, [a], symmetric=True), rel(JON, "PERTENECE_A", STARK, [a])])
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, second, ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert (s.documents_added, s.documents_reloaded_for_records) == (1, 1)
    names = {r["n"] for r in q(neo4j_driver, neo4j_settings, "MATCH (e:Entity) RETURN e.name AS n")}
    assert names == {"Jon Snow", "Ygritte", "Casa Stark"}
    _assert_equal_to_a_clean_load(neo4j_driver, neo4j_settings, second)


@pytest.mark.neo4j
def test_an_entity_edit_rewrites_one_document_citing_it(neo4j_driver, neo4j_settings, clean_graph) -> None:
    """An edit of an entity's own fields while none of its documents changed rewrites one of them (the
    smallest), which writes the entity whole; the others only cite it (issue 40: a line added at the top of
    a code file moved every function below it, and every test file and coverage document citing one of
    them was written again)."""
    texts = {"a.txt": TEXT_A, "b.txt": TEXT_B, "c.txt": "Jon Snow vuelve al Norte."}
    a, b, c = (chunk_id(d, t) for d, t in texts.items())

    def version(titulo: str) -> dict[str, Any]:
        return extraction(texts, [ent(*JON, [a, b, c], titulo=titulo), ent(*YGRITTE, [a]), ent(*STARK, [a]),
                                  ent(*GUARDIA, [b])],
                          [rel(JON, "CASADO_CON", YGRITTE, [a], symmetric=True), rel(JON, "PERTENECE_A", STARK, [a]),
                           rel(JON, "ES_MIEMBRO_DE", GUARDIA, [b])])

    load_extraction(neo4j_driver, neo4j_settings.neo4j, version("Lord"), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    s = load_extraction(neo4j_driver, neo4j_settings.neo4j, version("Rey"), ONTO, graph=neo4j_settings.graph, extract=neo4j_settings.extract, embedding=neo4j_settings.embedding, code=neo4j_settings.code, llm=neo4j_settings.llm, files=neo4j_settings.files)
    assert (s.documents_updated, s.documents_reloaded_for_records, s.documents_unchanged) == (1, 1, 2)
    assert q(neo4j_driver, neo4j_settings, "MATCH (e:Entity {uid: $uid}) RETURN e.titulo AS t",
             uid="Personaje|jon snow") == [{"t": "Rey"}]
    _assert_equal_to_a_clean_load(neo4j_driver, neo4j_settings, version("Rey"))


# ------------------------------------------------------------------ stats --strict


@pytest.mark.neo4j
def test_stats_strict_fails_on_a_graph_that_differs_from_its_file(clean_graph, got_project, tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from graphrag_got.cli import main

    settings, onto, corpus = got_project
    run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    path = settings.files.out_dir / "extraction.json"
    load_extraction(clean_graph, settings.neo4j, path, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    env = {"GRAPHRAG_OUT": str(settings.files.out_dir), "GRAPHRAG_ONTOLOGY": str(settings.files.ontology_path),
           "GRAPHRAG_HOME": str(settings.files.home)}  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        assert main(["stats", "--strict"]) == 0
        assert "equal (what a clean load of it writes)" in capsys.readouterr().out

        # the graph changed behind the file's back: a name, a relation gone
        clean_graph.execute_query("MATCH (e:Entity {uid: 'Personaje|eddard stark'}) SET e.name = 'Ned'")
        clean_graph.execute_query("MATCH (:Entity)-[r:CASADO_CON]->(:Entity) WITH r LIMIT 1 DELETE r")
        assert main(["stats", "--strict"]) == 1
        out = capsys.readouterr().out
        assert "entity Personaje|eddard stark: name is \"Ned\" in the graph, \"Eddard Stark\" in the extraction" in out
        assert "relation (" in out and "in the extraction, not in the graph" in out
        assert main(["stats"]) == 0  # without --strict: reported, exit 0
        capsys.readouterr()

        assert main(["stats", "--strict", "--json"]) == 1
        report = json.loads(capsys.readouterr().out)["extraction"]
        assert report["compared"] and not report["equal"] and report["by_section"] == {"entity": 1, "relation": 1}

        load_extraction(clean_graph, settings.neo4j, path, onto, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)  # nothing changed in the file: the digest says the same
        assert main(["stats", "--strict"]) == 1  # ... so the load skips it, and the check still sees the edit
        capsys.readouterr()
        assert main(["stats", "--strict", "--extraction", str(tmp_path / "nope.json")]) != 0


def test_compare_lists_each_kind_of_difference() -> None:
    want = {Section.ENTITY: {"a": {"name": "A"}, "b": {"name": "B"}}}
    have = {Section.ENTITY: {"a": {"name": "x"}, "c": {"name": "C"}}}
    result = compare(want, have)  # type: ignore[arg-type]
    assert [(d.kind, d.key) for d in result.differences] == [
        (DifferenceKind.DIFFERS, "a"), (DifferenceKind.MISSING, "b"), (DifferenceKind.UNEXPECTED, "c")]
    assert result.total == 3 and result.by_section == {"entity": 3} and not result.equal
    assert compare(want, want).equal  # type: ignore[arg-type]


# ------------------------------------------------------------------ any sequence of loads

TEXTS = ["Jon Snow, de la Casa Stark, se casa con Ygritte.", "Jon Snow jura sus votos en la Guardia.",
         "Ygritte y Jon Snow cruzan el Muro.", "La Casa Stark gobierna Invernalia."]
PEOPLE = ["Jon Snow", "Ygritte", "Sansa Stark", "Jon"]
HOUSES = ["Casa Stark", "Casa Tully"]


@st.composite
def _extraction(draw: st.DrawFn) -> dict[str, Any]:
    """A small extraction over the GoT ontology: some documents, entities with properties and aliases,
    relations (symmetric or not, with and without a momento, with evidence), a few refused by it."""
    docs = {f"d{i}.txt": TEXTS[j] for i, j in enumerate(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))}
    chunks = [chunk_id(d, t) for d, t in docs.items()]
    text_of = {chunk_id(d, t): t for d, t in docs.items()}
    people = draw(st.lists(st.sampled_from(PEOPLE), min_size=1, max_size=4, unique=True))
    houses = draw(st.lists(st.sampled_from(HOUSES), max_size=2, unique=True))
    ents = []
    for cls, name in [("Personaje", p) for p in people] + [("CasaNoble", h) for h in houses]:
        props = {"titulo": draw(st.sampled_from(["Lord", "Rey"]))} if draw(st.booleans()) else {}
        e = ent(cls, name, draw(st.lists(st.sampled_from(chunks), min_size=1, max_size=3, unique=True)), **props)
        if draw(st.booleans()):
            e["aliases"] = draw(st.lists(st.sampled_from(["el Bastardo", "Lord Comandante", "la Loba"]),
                                         max_size=2, unique=True))  # fmt: skip
        e["mentions"] = {c: draw(st.sampled_from([0.5, 0.9, 1.0])) for c in e["chunk_ids"]}
        ents.append(e)
    rels = []
    for _ in range(draw(st.integers(0, 5))):
        s_name = draw(st.sampled_from(people))
        kind = draw(st.sampled_from(["CASADO_CON", "PERTENECE_A", "LEAL_A", "VIVE_EN_LIMBO"]))  # the last: refused
        o = ("CasaNoble", draw(st.sampled_from(houses))) if kind == "PERTENECE_A" and houses else \
            ("Personaje", draw(st.sampled_from(people)))
        cids = draw(st.lists(st.sampled_from(chunks), min_size=1, max_size=2, unique=True))
        r = rel(("Personaje", s_name), kind, o, cids, momento=draw(st.sampled_from([None, "tras la boda"])),
                symmetric=kind == "CASADO_CON")  # fmt: skip
        if draw(st.booleans()):
            cid = cids[0]
            end = draw(st.integers(1, len(text_of[cid])))
            r["evidence"] = [{"chunk_id": cid, "start": 0, "end": end, "text": text_of[cid][:end]}]
        rels.append(r)
    return extraction(docs, ents, rels)


@pytest.mark.neo4j
@hsettings(max_examples=20, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sequence=st.lists(_extraction(), min_size=2, max_size=4), batch=st.sampled_from([1, 1000]))
def test_any_sequence_of_loads_leaves_the_graph_a_clean_load_of_the_last(neo4j_driver, neo4j_settings,
                                                                         sequence, batch) -> None:  # fmt: skip
    settings = neo4j_settings.with_overrides(batch_size=batch)
    _clear(neo4j_driver, settings)
    for ext in sequence:
        load_extraction(neo4j_driver, settings.neo4j, copy.deepcopy(ext), ONTO, embed=False, graph=settings.graph, extract=settings.extract, embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
    _assert_equal_to_a_clean_load(neo4j_driver, settings, sequence[-1])
    _clear(neo4j_driver, settings)
