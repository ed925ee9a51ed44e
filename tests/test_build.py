"""`graphrag-got build`: the incremental pipeline over a small vault, against the real Neo4j.

The extraction answers are replayed (a fake chat answering by chunk hash); community reports get a
fixed stand-in answer. Asserted: the first build writes documents, note structure, embeddings and
communities; a second build of the unchanged vault makes zero LLM and zero embedding calls; an
edited note costs one call; a deleted note is pruned with the entities only it supported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.pipeline.build import run_build
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.llm.replay import ReplayChatModel

ROOT = Path(__file__).resolve().parents[1]
NOTES = ROOT / "ontology" / "notes.json"

REPORT = json.dumps({"title": "Group", "summary": "Tools that work together.", "findings": [], "rating": 4,
                     "rating_explanation": "stand-in"})


class _Chat(ReplayChatModel):
    calls: list[str] = []

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        key = kwargs.get("replay_key")
        self.calls.append(key or "report")
        text = self.responses[key][0] if key else REPORT
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


def _answer(text: str) -> str:
    names = [n for n in ("Prometheus", "Grafana", "Alertmanager", "restic") if n in text]
    ents = [{"type": "Tool", "name": n, "confidence": 0.9} for n in names]
    rels = [{"relation": "USES", "subject": "Grafana", "subject_type": "Tool", "object": "Prometheus",
             "object_type": "Tool"}] if {"Grafana", "Prometheus"} <= set(names) else []
    return json.dumps({"entities": ents, "relations": rels})


def _vault(root: Path) -> Path:
    (root / "obs").mkdir(parents=True)
    (root / "obs" / "grafana.md").write_text(
        "---\ntitle: Grafana\ntags: [dashboards]\n---\n# Grafana\n\nGrafana draws the graphs that Prometheus "
        "collects; see [[alerts]] and [[missing-note]]. #metrics\n", encoding="utf-8")
    (root / "obs" / "alerts.md").write_text(
        "# Alerts\n\nAlertmanager receives the alerts that Prometheus fires and routes them to people.\n",
        encoding="utf-8")
    (root / "restic.md").write_text("# restic\n\nrestic makes encrypted, deduplicated backups of the servers.\n",
                                    encoding="utf-8")
    return root


def _chat(settings, vault: Path) -> _Chat:  # type: ignore[no-untyped-def]
    docs = read_corpus(vault, kind="auto", min_chars=settings.chunking.min_chars, max_chars=settings.chunking.max_chars)
    return _Chat(responses={c.hash: [_answer(c.text)] for d in docs for c in d.chunks}, calls=[])


def _count(driver, query: str, **params) -> int:  # type: ignore[no-untyped-def]
    with driver.session() as s:
        return int(s.run(query, **params).single()[0])


@pytest.mark.neo4j
def test_build_is_incremental_and_prunes_deleted_notes(clean_graph, neo4j_settings, tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES)
    lines: list[str] = []
    first = run_build(settings, vault, chat=_chat(settings, vault), say=lines.append)
    assert first.llm_calls["extract"] == 3 and first.total_embedding_calls > 0
    assert any(line.startswith("== communities") for line in lines)
    driver = clean_graph
    assert _count(driver, "MATCH (d:Document) WHERE d.title IS NOT NULL RETURN count(d)") == 3
    assert _count(driver, "MATCH (:Document {id: 'obs/grafana.md'})-[:LINKS_TO]->(:MissingNote) RETURN count(*)") == 1
    assert _count(driver, "MATCH (c:Chunk) WHERE c.embedding IS NOT NULL RETURN count(c)") == 3
    assert _count(driver, "MATCH (c:Community) RETURN count(c)") >= 1
    assert _count(driver, "MATCH (:Entity)-[r:USES]->(:Entity) RETURN count(r)") == 1

    again = _chat(settings, vault)
    second = run_build(settings, vault, chat=again, say=lambda line: None)
    assert second.total_llm_calls == 0 and second.total_embedding_calls == 0 and again.calls == []

    (vault / "restic.md").unlink()
    (vault / "obs" / "alerts.md").write_text("# Alerts\n\nAlertmanager groups the alerts Prometheus sends, "
                                             "then notifies the on-call person.\n", encoding="utf-8")
    third_chat = _chat(settings, vault)
    third = run_build(settings, vault, chat=third_chat, say=lambda line: None)
    assert third.llm_calls["extract"] == 1  # only the edited note
    assert _count(driver, "MATCH (d:Document {id: 'restic.md'}) RETURN count(d)") == 0
    assert _count(driver, "MATCH (e:Entity {name: 'restic'}) RETURN count(e)") == 0  # its orphan entity
    assert _count(driver, "MATCH (e:Entity {name: 'Alertmanager'}) RETURN count(e)") == 1


class _MentionsChat(_Chat):
    """The mentions questions answered with the tool names each text holds (per text, as the schema asks);
    the typed-relations question and the reports as in :class:`_Chat`."""

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        import re

        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        key = kwargs.get("replay_key") or ""
        if not key.startswith("mentions:"):
            return super()._generate(messages, stop, run_manager, **kwargs)
        self.calls.append(key)
        blocks = re.findall(r'TEXT(?: \d+)?:\n"""\n(.*?)\n"""', str(messages[-1].content), re.DOTALL)
        names = [[{"name": n, "class": "Tool"} for n in ("Prometheus", "Grafana", "Alertmanager", "restic") if n in b]
                 for b in blocks]
        text = json.dumps({"mentions": names[0]} if len(blocks) == 1 else
                          {f"TEXT {k}": v for k, v in enumerate(names, 1)})
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])


@pytest.mark.neo4j
def test_a_mentions_build_takes_its_edges_from_the_vault_and_asks_relations_for_chosen_notes(
        clean_graph, neo4j_settings, tmp_path: Path) -> None:
    vault = _vault(tmp_path / "vault")
    settings = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=NOTES,
                                             extraction="mentions", mentions_batch_chars=2000, embeddings=False)
    base = _chat(settings, vault)
    chat = _MentionsChat(responses=base.responses, calls=[])
    lines: list[str] = []
    first = run_build(settings, vault, chat=chat, say=lines.append, communities=False)
    assert lines[0].startswith("extraction strategy: mentions (") and lines[0].endswith("GRAPHRAG_EXTRACTION=mentions")
    assert "--relations-for" in lines[1] and lines[2] == "== ontology"
    assert first.strategy == "mentions" and first.llm_calls["extract"] == 1  # three short notes, one call
    driver = clean_graph
    assert _count(driver, "MATCH (:Entity)-[r:USES]->(:Entity) RETURN count(r)") == 0  # no typed relation asked
    assert _count(driver, "MATCH (:Entity {name: 'Grafana'})-[r:CO_OCCURS]-(:Entity {name: 'Prometheus'}) "
                          "RETURN count(r)") == 1
    assert _count(driver, "MATCH (:Document {id: 'obs/grafana.md'})-[:LINKS_TO]->(:Document {id: 'obs/alerts.md'}) "
                          "RETURN count(*)") == 1
    assert _count(driver, "MATCH (:Document {id: 'obs/grafana.md'})-[:TAGGED]->(:Tag {name: 'metrics'}) "
                          "RETURN count(*)") == 1
    # typed relations for one note: one generate call, its fact in the graph; the same build again asks nothing
    typed = run_build(settings, vault, chat=chat, say=lambda line: None, communities=False,
                      relations_for=["obs/grafana.md"])
    assert typed.llm_calls["extract"] == 1 and [k for k in chat.calls if not k.startswith("mentions:")][-1:]
    assert _count(driver, "MATCH (:Entity {name: 'Grafana'})-[r:USES]->(:Entity {name: 'Prometheus'}) "
                          "RETURN count(r)") == 1
    again = run_build(settings, vault, chat=chat, say=lambda line: None, communities=False,
                      relations_for=["obs/grafana.md"])
    assert again.total_llm_calls == 0
    assert _count(driver, "MATCH (:Entity)-[r:USES]->(:Entity) RETURN count(r)") == 1
