"""Community reports checked like answers (graphrag_got.pipeline.report_check): a finding or summary
sentence its community's facts do not back is left out, with its reason. Unit tests on a small graph of
another domain (no Neo4j), then the summarize runs on the gold GoT graph: the records stored on the
node, in the cache and in communities.json, the counts, and reruns that never ask the model again."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphrag_got.communities import cypher as communities_cypher
from graphrag_got.communities.check import apply_check
from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.embed import SummarizeResult
from graphrag_got.communities.graph import build_entity_graph, read_entity_graph, relations_inside
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import write_communities
from graphrag_got.graph import db as graphdb
from graphrag_got.ontology.model import Ontology
from graphrag_got.pipeline.report_check import CHECK_VERSION, FactsCheck, check_line
from graphrag_got.search.support import SupportReason
from test_communities import fake_chat

ROOT = Path(__file__).resolve().parent.parent
ONTO = Ontology.from_file(ROOT / "ontology" / "got.json")

ADA, BABBAGE, SOMERVILLE, ENGINE = "Person|ada lovelace", "Person|charles babbage", "Person|mary somerville", \
    "Machine|analytical engine"  # fmt: skip
MEMBERS = [ADA, BABBAGE, SOMERVILLE, ENGINE]


def _rel(a: str, rtype: str, b: str, attributes: list[tuple[str, str]] | None = None) -> dict:
    return {"start": a, "end": b, "type": rtype, "symmetric": False, "support": 1, "attributes": attributes or []}


def _graph():  # type: ignore[no-untyped-def]
    """Four members (Ada works with Babbage, Babbage designs the Engine, Somerville teaches Ada) and two
    entities outside the community (Faraday lives in London)."""
    ents = [{"uid": ADA, "name": "Ada Lovelace", "type": "Person",
             "properties": {"key": "ada lovelace", "aliases": ["Condesa de Lovelace"]}},
            {"uid": BABBAGE, "name": "Charles Babbage", "type": "Person", "properties": {}},
            {"uid": SOMERVILLE, "name": "Mary Somerville", "type": "Person", "properties": {}},
            {"uid": ENGINE, "name": "Analytical Engine", "type": "Machine", "properties": {}},
            {"uid": "Person|michael faraday", "name": "Michael Faraday", "type": "Person", "properties": {}},
            {"uid": "Place|london", "name": "London", "type": "Place", "properties": {}}]  # fmt: skip
    rels = [_rel(ADA, "WORKS_WITH", BABBAGE, [("since", "1833")]), _rel(BABBAGE, "DESIGNS", ENGINE),
            _rel(SOMERVILLE, "TEACHES", ADA), _rel("Person|michael faraday", "LIVES_IN", "Place|london")]
    eg = build_entity_graph(ents, rels)
    return eg, relations_inside(eg, [MEMBERS])[0]


def _check(summary: str, *statements: str):  # type: ignore[no-untyped-def]
    eg, inner = _graph()
    report = {"title": "Inventors", "summary": summary, "rating": 6.0,
              "findings": [{"statement": s, "members": []} for s in statements]}
    return apply_check(FactsCheck(), eg, report, MEMBERS, inner)


def test_a_finding_pairing_members_no_fact_joins_is_left_out_and_a_backed_one_kept() -> None:
    record = _check("Ada Lovelace worked with Charles Babbage.",
                    "Mary Somerville designed the Analytical Engine.",  # both members, no fact joins them
                    "Charles Babbage designed the Analytical Engine.",  # a fact: DESIGNS
                    "The Condesa de Lovelace worked with Babbage.",  # an alias and a distinctive word
                    "Ada Lovelace WORKS_WITH Charles Babbage (since: 1833)",  # a fact line copied
                    "Mary Somerville taught mathematics.",  # one member: backed by being one
                    "It was a remarkable time.")  # names nothing: nothing to check it by
    assert [f["statement"] for f in record["findings"]] == [
        "Charles Babbage designed the Analytical Engine.", "The Condesa de Lovelace worked with Babbage.",
        "Ada Lovelace WORKS_WITH Charles Babbage (since: 1833)", "Mary Somerville taught mathematics.",
        "It was a remarkable time."]  # fmt: skip
    (left,) = record["left_out"]
    assert left["part"] == "finding" and left["statement"] == "Mary Somerville designed the Analytical Engine."
    assert left["reason"] == SupportReason.RELATION_NOT_IN_SOURCES.value
    assert left["entities"] == ["Mary Somerville", "Analytical Engine"]
    assert "Mary Somerville and Analytical Engine" in left["detail"] and "M1" not in left["detail"]
    assert record["report_check"] == CHECK_VERSION and record["unbacked_kept"] == []
    assert record["summary"] == "Ada Lovelace worked with Charles Babbage." and record["rating"] == 6.0


def test_a_summary_sentence_naming_an_entity_outside_the_community_is_removed() -> None:
    record = _check("Ada Lovelace worked with Charles Babbage. Michael Faraday advised them. They met often.",
                    "Michael Faraday lived in London.")  # a fact of the graph, but not of this community
    assert record["summary"] == "Ada Lovelace worked with Charles Babbage. They met often."
    assert record["findings"] == []
    finding, sentence = record["left_out"]
    assert (finding["part"], finding["reason"]) == ("finding", "entity_not_in_sources")
    assert (sentence["part"], sentence["statement"]) == ("summary", "Michael Faraday advised them.")
    assert sentence["reason"] == "entity_not_in_sources" and sentence["entities"] == ["Michael Faraday"]
    assert sentence["detail"] == "Michael Faraday is not among the community's members"


def test_a_summary_no_sentence_of_which_is_backed_is_kept_whole_and_recorded() -> None:
    record = _check("Mary Somerville built the Analytical Engine. Michael Faraday funded it.")
    assert record["summary"] == "Mary Somerville built the Analytical Engine. Michael Faraday funded it."
    assert record["left_out"] == []
    assert [(r["part"], r["reason"]) for r in record["unbacked_kept"]] == [
        ("summary", "relation_not_in_sources"), ("summary", "entity_not_in_sources")]


def test_the_counts_and_the_line_printed() -> None:
    res = SummarizeResult(report_check=CHECK_VERSION)
    for record in (_check("Michael Faraday advised them. Ada Lovelace worked with Charles Babbage.",
                          "Mary Somerville designed the Analytical Engine.", "Mary Somerville taught."),
                   _check("Michael Faraday funded it.", "Michael Faraday lived in London.")):
        res.count_check(record["left_out"], json.dumps(record["unbacked_kept"]))  # a list or its JSON
    assert (res.left_out, res.unbacked_summaries) == (3, 1)
    assert res.left_out_reasons == {"relation_not_in_sources": 1, "entity_not_in_sources": 2}
    line = check_line(res)
    assert line.startswith("report claims left out (not backed by their community's facts): 3 ")
    assert "(2 entity not in its sources, 1 relation not in its sources)" in line and "1 summary kept" in line
    assert check_line(SummarizeResult()) == "report claims: not checked"


# ------------------------------------------------------------------ summarize on the gold graph (database)


@pytest.fixture()
def got(gold_graph, neo4j_settings, tmp_path):  # type: ignore[no-untyped-def]
    """The gold GoT graph with communities detected and written, no report; outputs under tmp_path."""
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", concurrency=1,
                                             embeddings=False)
    with graphdb.session(gold_graph, settings.neo4j, write=True) as s:
        s.run(communities_cypher.delete_communities()).consume()
        s.run(communities_cypher.clear_entity_communities()).consume()
    eg = read_entity_graph(gold_graph, settings.neo4j, ONTO, communities=settings.communities, files=settings.files)
    comms = detect_communities(eg, 1.0, 42)
    write_communities(gold_graph, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
    return gold_graph, settings, eg, comms


def _target(eg, comms):  # type: ignore[no-untyped-def]
    """A community with a relation among two members, two members no fact names together, and an entity
    outside it: the names a report about it will get wrong and right."""
    for c in sorted((c for c in comms if c.size >= 3), key=lambda c: (c.size, c.id)):
        inner = relations_inside(eg, [c.members])[0]
        joined = {frozenset((r.start, r.end)) for r in inner}
        lines = [f"{r.start} {r.end} {dict(r.attributes)}" for r in inner if r.attributes]
        pairs = [(a, b) for i, a in enumerate(c.members) for b in c.members[i + 1:]
                 if frozenset((a, b)) not in joined and not any(a in ln and b in ln for ln in lines)]
        words = {w for u in c.members for w in eg.entities[u]["name"].lower().split()}
        outside = [u for u in sorted(eg.entities) if u not in c.members
                   and not words & set(eg.entities[u]["name"].lower().split())]
        if inner and pairs and outside:
            return c, inner[0], pairs[0], outside[0]
    raise AssertionError("the gold graph has no community to test on")


def _records(driver, settings) -> dict[int, tuple]:  # type: ignore[no-untyped-def]
    rows = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) WHERE c.summary IS NOT NULL RETURN c.id AS id, "
                            "c.summary AS summary, c.findings AS findings, c.left_out AS left_out, "
                            "c.unbacked_kept AS unbacked, c.report_check AS version")  # fmt: skip
    return {r["id"]: (r["summary"], r["findings"], r["left_out"], r["unbacked"], r["version"]) for r in rows}


def test_summarize_stores_what_the_check_left_out_and_reruns_never_ask_again(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings, eg, comms = got
    target, fact, (a, b), outsider = _target(eg, comms)
    name = {u: eg.entities[u]["name"] for u in eg.entities}
    joined = f"{name[fact.start]} y {name[fact.end]} están unidos."
    report = json.dumps({"title": "Grupo", "summary": f"{joined} {name[outsider]} los visita a menudo.",
                         "findings": [{"statement": joined, "members": [name[fact.start], name[fact.end]]},
                                      {"statement": f"{name[a]} y {name[b]} son aliados.", "members": [name[a], name[b]]}],
                         "rating": 5, "rating_explanation": "Un grupo."})  # fmt: skip
    eligible = [c for c in comms if c.size > 1]
    kwargs = dict(ontology=ONTO, label="fake", llm=settings.llm, files=settings.files, embedding=settings.embedding,
                  graph_settings=settings.graph)  # fmt: skip

    # reports as they were stored before the check: as the model wrote them, nothing left out
    chat, counter = fake_chat([report])
    before = summarize_communities(driver, settings.neo4j, chat, **kwargs)
    assert counter.calls == before.generated == len(eligible) and before.report_check is None
    assert all(left is None and version is None for _, _, left, _, version in _records(driver, settings).values())

    # the check on those stored reports: read from the cache, checked, rewritten; no LLM call
    chat2, counter2 = fake_chat([report])
    first = summarize_communities(driver, settings.neo4j, chat2, check=FactsCheck(), **kwargs)
    assert (counter2.calls, first.llm_calls, first.rechecked, first.generated) == (0, 0, len(eligible), 0)
    stored = _records(driver, settings)
    summary, findings, left_out, unbacked, version = stored[target.id]
    assert version == CHECK_VERSION and unbacked is None
    assert summary == joined  # the sentence naming an entity outside the community is removed
    assert [f["statement"] for f in json.loads(findings)] == [joined]  # the backed finding is kept
    records = json.loads(left_out)
    assert [(r["part"], r["reason"]) for r in records] == [("finding", "relation_not_in_sources"),
                                                           ("summary", "entity_not_in_sources")]
    assert records[0]["entities"] == [name[a], name[b]] and records[1]["entities"] == [name[outsider]]
    total = sum(len(json.loads(s[2])) for s in stored.values() if s[2])
    assert first.left_out == total == sum(first.left_out_reasons.values()) and total >= 2
    exported = {c["id"]: c for c in json.loads((settings.files.out_dir / "communities.json").read_text("utf-8"))["communities"]}
    assert exported[target.id]["left_out"] == records and exported[target.id]["report_check"] == CHECK_VERSION
    cached = json.loads(next((settings.files.cache_dir / "communities").glob("*.json")).read_text("utf-8"))
    assert "left_out" not in cached  # written before the check: the cache keeps the model's answer

    # unchanged: no call, nothing rewritten, the same counts
    again = summarize_communities(driver, settings.neo4j, chat2, check=FactsCheck(), **kwargs)
    assert (counter2.calls, again.unchanged, again.rechecked, again.left_out) == (0, len(eligible), 0, total)
    assert again.left_out_reasons == first.left_out_reasons and _records(driver, settings) == stored
    # forced: every report from the cache, checked again to the same records
    forced = summarize_communities(driver, settings.neo4j, chat2, check=FactsCheck(), force=True, **kwargs)
    assert (counter2.calls, forced.cached, forced.left_out) == (0, len(eligible), total)
    assert _records(driver, settings) == stored
    # stored by another version of the check and the cache gone: checked again from the node itself
    shutil.rmtree(settings.files.cache_dir / "communities")
    with graphdb.session(driver, settings.neo4j, write=True) as s:
        s.run("MATCH (c:Community) SET c.report_check = 'report-check/0'").consume()
    old = summarize_communities(driver, settings.neo4j, chat2, check=FactsCheck(), **kwargs)
    assert (counter2.calls, old.rechecked, old.left_out) == (0, len(eligible), total)
    assert _records(driver, settings) == stored
    # a new detection of the same communities carries the reports and their records over
    write_communities(driver, settings.neo4j, detect_communities(eg, 1.0, 42), communities=settings.communities,
                      graph_settings=settings.graph)
    carried = summarize_communities(driver, settings.neo4j, chat2, check=FactsCheck(), **kwargs)
    assert (counter2.calls, carried.unchanged, carried.left_out) == (0, len(eligible), total)
    assert _records(driver, settings) == stored


def test_a_report_asked_now_is_checked_and_cached_with_its_records(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings, eg, comms = got
    target, _, (a, b), _ = _target(eg, comms)
    name = {u: eg.entities[u]["name"] for u in eg.entities}
    report = json.dumps({"title": "Grupo", "summary": "Un grupo.",
                         "findings": [{"statement": f"{name[a]} y {name[b]} son aliados.", "members": []}]})
    chat, counter = fake_chat([report])
    res = summarize_communities(driver, settings.neo4j, chat, ontology=ONTO, label="fake", check=FactsCheck(),
                                llm=settings.llm, files=settings.files, embedding=settings.embedding,
                                graph_settings=settings.graph)  # fmt: skip
    assert counter.calls == res.generated > 0 and res.rechecked == 0
    _, findings, left_out, _, version = _records(driver, settings)[target.id]
    assert findings is None and version == CHECK_VERSION
    assert [r["reason"] for r in json.loads(left_out)] == ["relation_not_in_sources"]
    # the cache holds the model's report as parsed, with what the check left out of it
    cached = [json.loads(p.read_text("utf-8")) for p in (settings.files.cache_dir / "communities").glob("*.json")]
    mine = next(c for c in cached if c["community"] == target.id)
    assert len(mine["findings"]) == 1 and mine["left_out"] == json.loads(left_out)
    assert mine["report_check"] == CHECK_VERSION
