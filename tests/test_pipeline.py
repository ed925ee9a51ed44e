"""The pipeline's one list of steps: `demo` and `build` run the same step functions.

The demo used to write communities with its own copy of the detect step, which ignored
GRAPHRAG_COMMUNITY_ALGORITHM, _MAX_SIZE and _MAX_LEVELS; both now run
:func:`graphrag_got.pipeline.steps.communities_step`. Against the real Neo4j, with replayed answers.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from langchain_core.globals import set_llm_cache
from test_build import NOTES, _chat, _count, _vault

from graphrag_got.pipeline import steps
from graphrag_got.pipeline.build import run_build
from graphrag_got.pipeline.demo import run_demo


def test_demo_and_build_share_the_indexing_steps() -> None:
    demo = dict(steps.DEMO_STEPS)
    build = dict(steps.BUILD_STEPS)
    for name in ("ontology", "neo4j", "extract", "load", "embeddings", "communities"):
        assert demo[name] is build[name]


@pytest.mark.neo4j
@pytest.mark.parametrize("algorithm", ["louvain", "leiden"])
def test_demo_honours_the_community_settings(clean_graph, neo4j_settings, tmp_path: Path, algorithm: str) -> None:
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             corpus_path=vault, community_algorithm=algorithm,
                                             community_max_levels=1, embeddings=False)
    lines: list[str] = []
    try:
        res = run_demo(settings, local_question="What does Grafana use?", global_question="What are the tools for?",
                       chat=_chat(settings, vault), say=lines.append)
    finally:
        set_llm_cache(None)  # the demo installs LangChain's answer cache for the process
    driver = clean_graph
    assert _count(driver, "MATCH (c:Community) RETURN count(c)") > 0
    assert _count(driver, "MATCH (c:Community) WHERE c.algorithm <> $a RETURN count(c)", a=algorithm) == 0
    assert _count(driver, "MATCH (c:Community) WHERE c.level > 0 RETURN count(c)") == 0  # max_levels 1
    assert any(line.startswith("== communities") for line in lines)
    assert f"({algorithm})" in "\n".join(lines)
    assert {"extract", "load", "communities", "ask local", "ask global", "viz"} <= set(res.timings)
    assert res.paths["graph"].exists()


@pytest.mark.neo4j
def test_build_without_communities_skips_the_step(clean_graph, neo4j_settings, tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             embeddings=False)
    res = run_build(settings, vault, chat=_chat(settings, vault), communities=False, say=lambda _line: None)
    assert "communities" not in res.timings and "embeddings" not in res.timings
    assert _count(clean_graph, "MATCH (c:Community) RETURN count(c)") == 0
    assert res.extraction_path is not None and res.extraction_path.exists()


@pytest.mark.neo4j
def test_a_rebuild_with_nothing_changed_keeps_extraction_and_communities(clean_graph, neo4j_settings,
                                                                        tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             embeddings=False)
    first: list[str] = []
    run_build(settings, vault, chat=_chat(settings, vault), say=first.append)
    detected = _count(clean_graph, "MATCH (c:Community) RETURN count(c)")
    assert detected > 0 and not any("unchanged" in line for line in first)

    again: list[str] = []
    run_build(settings, vault, chat=_chat(settings, vault), say=again.append)
    text = "\n".join(again)
    assert "extraction unchanged" in text and f"kept {detected} communities" in text
    assert _count(clean_graph, "MATCH (c:Community) RETURN count(c)") == detected

    # another community setting: detected again (and a detection outside the build invalidates the digest too)
    other: list[str] = []
    run_build(settings.with_overrides(community_max_levels=1), vault, chat=_chat(settings, vault), say=other.append)
    assert not any("communities unchanged" in line for line in other)
    assert any("communities over" in line and "communities kept from the last detection" in line
               for line in other)  # detected again, keeping the unchanged level-0 communities  # fmt: skip
    assert _count(clean_graph, "MATCH (c:Community) WHERE c.level > 0 RETURN count(c)") == 0


@pytest.mark.neo4j
def test_a_rebuild_with_nothing_changed_writes_nothing_in_the_load_step(clean_graph, neo4j_settings,
                                                                       tmp_path: Path) -> None:
    """The load step keeps the graph when the extraction file, ontology, settings and the graph's documents
    are as the last build left them; a document missing from the graph makes it load again."""
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             embeddings=False)
    first = run_build(settings, vault, chat=_chat(settings, vault), communities=False, say=lambda _line: None)
    loaded = first.lines["load"][0]
    assert loaded.startswith("documents +") and "load unchanged" not in loaded

    again = run_build(settings, vault, chat=_chat(settings, vault), communities=False, say=lambda _line: None)
    assert again.lines["load"][0].startswith("load unchanged") and loaded in again.lines["load"][0]

    # the graph lost a document (another process, a manual delete): the step loads it again
    clean_graph.execute_query("MATCH (d:Document) WITH d LIMIT 1 DETACH DELETE d")
    third = run_build(settings, vault, chat=_chat(settings, vault), communities=False, say=lambda _line: None)
    assert third.lines["load"][0].startswith("documents +1 ")
