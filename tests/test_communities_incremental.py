"""Incremental community detection: unchanged communities are kept, only the rest is clustered again."""

from __future__ import annotations

import random
from pathlib import Path

import networkx as nx
import pytest

from graphrag_got.communities import cypher as communities_cypher
from graphrag_got.communities.detect import Community, PriorCommunity, detect_communities, inner_hash
from graphrag_got.communities.graph import build_entity_graph
from graphrag_got.communities.store import previous_communities
from graphrag_got.graph import db as graphdb
from graphrag_got.ontology.model import Ontology
from graphrag_got.pipeline.steps import detect_and_write, kept_line
from support import nested_groups

ONTO = Ontology.from_file(Path(__file__).resolve().parents[1] / "ontology" / "got.json")


def _rel(a: str, b: str, support: int = 1) -> dict:
    return {"start": a, "end": b, "type": "R", "symmetric": False, "support": support, "attributes": []}


def _rows(blocks: int = 24, size: int = 6, seed: int = 5) -> tuple[list[dict], list[dict]]:
    """Dense groups of ``size`` entities in a ring, each tied to the next by one relation."""
    rng = random.Random(seed)
    ents = [{"uid": f"T|b{b:02d}n{i}", "name": f"B{b} N{i}", "type": "T", "properties": {}}
            for b in range(blocks) for i in range(size)]  # fmt: skip
    rels = []
    for b in range(blocks):
        members = [f"T|b{b:02d}n{i}" for i in range(size)]
        rels += [_rel(x, y) for i, x in enumerate(members) for y in members[i + 1:] if rng.random() < 0.7]
        rels.append(_rel(f"T|b{b:02d}n0", f"T|b{(b + 1) % blocks:02d}n1"))
    return ents, rels


def _prior(comms: list[Community]) -> list[PriorCommunity]:
    return [PriorCommunity(tuple(c.members), c.inner_hash, c.id, c.level, c.parent) for c in comms]


def _level0(comms: list[Community]) -> set[tuple[str, ...]]:
    return {tuple(c.members) for c in comms if c.level == 0}


def _check_hierarchy(comms: list[Community], entities: int) -> None:
    """Level 0 partitions every entity; a split community is partitioned exactly by its children."""
    top = [u for c in comms if c.level == 0 for u in c.members]
    assert len(top) == len(set(top)) == entities
    by_id = {c.id: c for c in comms}
    for c in comms:
        kids = [k for k in comms if k.parent == c.id]
        if kids:
            assert sorted(u for k in kids for u in k.members) == c.members
            assert all(k.level == c.level + 1 for k in kids)
    assert all(c.parent is None or c.parent in by_id for c in comms)


def test_an_unchanged_graph_keeps_every_community_and_the_same_result() -> None:
    ents, rels = _rows()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 1.0, 42, max_size=4)
    assert any(c.level > 0 for c in first)
    again = detect_communities(eg, 1.0, 42, max_size=4, previous=_prior(first))
    assert all(c.kept for c in again)
    assert [(c.id, c.level, c.parent, c.members, c.content_hash) for c in again] == \
        [(c.id, c.level, c.parent, c.members, c.content_hash) for c in first]  # fmt: skip


def test_a_change_reclusters_only_the_communities_it_touches() -> None:
    ents, rels = _rows()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 1.0, 42)
    before = _level0(first)
    assert len(before) >= 10
    # a new entity tied into one group, and a new relation between two members of another group
    present = {(r["start"], r["end"]) for r in rels}
    a, b = next((f"T|b10n{i}", f"T|b10n{j}") for i in range(6) for j in range(i + 1, 6)
                if (f"T|b10n{i}", f"T|b10n{j}") not in present)  # fmt: skip
    touched = {c for c in before if "T|b03n2" in c or a in c}
    ents2 = ents + [{"uid": "T|new", "name": "New", "type": "T", "properties": {}}]
    rels2 = rels + [_rel("T|new", "T|b03n2", 2), _rel(a, b, 3)]
    eg2 = build_entity_graph(ents2, rels2)
    inc = detect_communities(eg2, 1.0, 42, previous=_prior(first))
    fresh = detect_communities(eg2, 1.0, 42)
    kept = {tuple(c.members) for c in inc if c.kept and c.level == 0}
    assert kept == before - touched  # every untouched community is kept, no touched one
    assert sum(c.size for c in inc if c.level == 0) == len(ents2)  # still a partition of every entity
    assert not (set().union(*map(set, kept)) & {"T|new", "T|b03n2", a})
    # the newcomer's only link leads into a community that was unchanged: it joins it (the second pass)
    assert any({"T|new", "T|b03n2"} <= set(c.members) for c in inc if c.level == 0)
    _check_hierarchy(inc, len(ents2))
    # the whole graph's modularity stays as good as a detection from scratch (within 1%)
    def q(comms: list[Community]) -> float:
        return nx.community.modularity(eg2.graph, [set(m) for m in _level0(comms)], weight="weight")

    assert q(inc) >= q(fresh) - 0.01
    assert len(_level0(inc) & before) >= len(_level0(fresh) & before)


def test_a_relation_between_two_communities_keeps_both() -> None:
    ents, rels = _rows()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 1.0, 42)
    home = {u: c for c in first if c.level == 0 for u in c.members}
    a, b = home["T|b05n3"], home["T|b15n3"]
    assert a is not b
    eg2 = build_entity_graph(ents, rels + [_rel("T|b05n3", "T|b15n3")])
    inc = detect_communities(eg2, 1.0, 42, previous=_prior(first))
    assert all(c.kept for c in inc)  # what their reports are written from did not change
    assert _level0(inc) == _level0(first)


def test_a_changed_property_or_inner_relation_is_a_change_a_support_count_is_not() -> None:
    ents, rels = _rows()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 1.0, 42)
    home = {u: c for c in first if c.level == 0 for u in c.members}
    ents2 = [dict(e, properties={"note": "x"}) if e["uid"] == "T|b07n1" else e for e in ents]
    inc = detect_communities(build_entity_graph(ents2, rels), 1.0, 42, previous=_prior(first))
    assert {tuple(c.members) for c in first if c.level == 0} - {tuple(c.members) for c in inc if c.kept} == \
        {tuple(home["T|b07n1"].members)}  # fmt: skip
    # a relation among its members with another attribute value is another relation
    i = next(i for i, r in enumerate(rels) if r["start"].startswith("T|b09") and r["end"].startswith("T|b09"))
    rels2 = rels[:i] + [dict(rels[i], attributes=[("since", "2020")])] + rels[i + 1:]
    inc2 = detect_communities(build_entity_graph(ents, rels2), 1.0, 42, previous=_prior(first))
    assert tuple(home[rels[i]["start"]].members) not in {tuple(c.members) for c in inc2 if c.kept}
    # one more chunk supporting a relation changes neither the members nor the relations among them
    rels3 = rels[:i] + [dict(rels[i], support=4)] + rels[i + 1:]
    eg3 = build_entity_graph(ents, rels3)
    members = home[rels[i]["start"]].members
    assert inner_hash(eg3, members) == inner_hash(eg, members)
    assert all(c.kept for c in detect_communities(eg3, 1.0, 42, previous=_prior(first)))


def test_a_deleted_member_or_an_old_graph_without_inner_hash_keeps_nothing_of_it() -> None:
    ents, rels = _rows()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 1.0, 42)
    gone = "T|b12n4"
    eg2 = build_entity_graph([e for e in ents if e["uid"] != gone],
                             [r for r in rels if gone not in (r["start"], r["end"])])  # fmt: skip
    inc = detect_communities(eg2, 1.0, 42, previous=_prior(first))
    assert not any(gone in c.members for c in inc)
    assert all(len(set(c.members) & {f"T|b12n{i}" for i in range(6)}) == 0 for c in inc if c.kept)
    old = [PriorCommunity(p.members, None) for p in _prior(first)]
    assert not any(c.kept for c in detect_communities(eg, 1.0, 42, previous=old))


@pytest.fixture()
def got(gold_graph, neo4j_settings, tmp_path):  # type: ignore[no-untyped-def]
    """The gold GoT graph without communities; settings with outputs under tmp_path."""
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", embeddings=False)
    with graphdb.session(gold_graph, settings.neo4j, write=True) as s:
        s.run(communities_cypher.delete_communities()).consume()
        s.run(communities_cypher.clear_entity_communities()).consume()
    return gold_graph, settings


@pytest.mark.neo4j
def test_the_stored_detection_is_the_next_ones_starting_point(got) -> None:  # type: ignore[no-untyped-def]
    driver, settings = got
    _, first, _ = detect_and_write(driver, settings, ONTO)
    assert first and not any(c.kept for c in first)
    stored = graphdb.read_all(driver, settings.neo4j, "MATCH (c:Community) RETURN c.inner_hash AS inner, c.seed AS seed")
    assert all(r["inner"] and r["seed"] == settings.communities.seed for r in stored)
    prior = previous_communities(driver, settings.neo4j, communities=settings.communities)
    assert sorted((p.id, p.level, p.parent, p.members) for p in prior) == \
        sorted((c.id, c.level, c.parent, tuple(c.members)) for c in first)  # fmt: skip

    _, again, _ = detect_and_write(driver, settings, ONTO)  # the graph did not change: everything is kept
    assert all(c.kept for c in again) and kept_line(again).startswith(f"; {len(prior)} of {len(prior)} communities")
    assert [(c.id, c.members) for c in again] == [(c.id, c.members) for c in first]
    _, fresh, _ = detect_and_write(driver, settings, ONTO, fresh=True)
    assert not any(c.kept for c in fresh) and kept_line(fresh) == ""
    # another seed, resolution or algorithm: the stored communities are not a starting point
    assert previous_communities(driver, settings.neo4j, communities=settings.with_overrides(community_seed=7).communities) == []
    assert previous_communities(driver, settings.neo4j, communities=settings.with_overrides(community_resolution=2.0).communities) == []
    assert previous_communities(driver, settings.neo4j, communities=settings.with_overrides(community_algorithm="louvain").communities) == []
    assert previous_communities(driver, settings.neo4j, communities=settings.with_overrides(community_incremental=False).communities) != []  # the caller decides


def test_a_change_deep_in_the_hierarchy_keeps_the_untouched_sub_communities() -> None:
    # 4 groups of 30 entities, each of 3 dense sub-groups of 10: at resolution 0.3 level 0 holds the groups
    ents, rels = nested_groups()
    eg = build_entity_graph(ents, rels)
    first = detect_communities(eg, 0.3, 3, max_size=10)
    home = {u: c for c in first if c.level == 1 for u in c.members}
    assert home and max(c.size for c in first if c.level == 0) > 10
    present = {(r["start"], r["end"]) for r in rels}
    a, b = next((f"T|g0s0n{i}", f"T|g0s0n{j}") for i in range(10) for j in range(i + 1, 10)
                if (f"T|g0s0n{i}", f"T|g0s0n{j}") not in present)  # fmt: skip
    eg2 = build_entity_graph(ents, rels + [_rel(a, b, 5)])
    inc = detect_communities(eg2, 0.3, 3, max_size=10, previous=_prior(first))
    kept = {(c.level, tuple(c.members)) for c in inc if c.kept}
    changed_top = next(c for c in first if c.level == 0 and a in c.members)
    assert (0, tuple(changed_top.members)) not in kept  # a relation among its members was added
    assert (1, tuple(home[a].members)) not in kept
    untouched = [c for c in first if c.level == 1 and c.parent == changed_top.id and a not in c.members
                 and b not in c.members]  # fmt: skip
    assert untouched and all((1, tuple(c.members)) in kept for c in untouched)  # siblings under a changed parent
    assert sum(1 for c in inc if c.kept) == len(first) - 2
    _check_hierarchy(inc, len(ents))
