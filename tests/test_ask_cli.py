"""`graphrag-got ask`: the routing message, explicit modes, --json, the reference list (real Neo4j, replay model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.cli import main
from test_drift import FOLLOWUPS, QUESTION, primer, summarize

ROOT = Path(__file__).resolve().parent.parent
ONTOLOGY = str(ROOT / "ontology" / "got.json")
BETRAYAL = "¿Quién traicionó a Robb Stark?"



@pytest.fixture(scope="module")
def graph(gold_graph, neo4j_settings, tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("askcli")
    summarize(gold_graph, neo4j_settings.with_overrides(home=tmp / "home", local_retrieval="graph"))
    return tmp


@pytest.fixture()
def run(graph, monkeypatch, capsys, tmp_path):  # type: ignore[no-untyped-def]
    """``run(*argv, replay=[answers])`` -> (exit code, stdout, stderr) of one CLI call."""
    monkeypatch.setenv("GRAPHRAG_LOCAL_RETRIEVAL", "graph")

    def call(*argv: str, replay: list[str] | None = None) -> tuple[int, str, str]:
        extra = ["--ontology", ONTOLOGY, "--home", str(graph / "home"), "--out", str(tmp_path / "out")]
        if replay is not None:
            f = tmp_path / "replay.json"
            f.write_text(json.dumps({"responses": [], "fallback": replay}), encoding="utf-8")
            extra += ["--provider", "replay", "--replay-file", str(f)]
        code = main([*argv, *extra])
        out, err = capsys.readouterr()
        return code, out, err

    return call


def test_bare_question_says_the_mode_and_why_and_retrieves_without_llm(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("ask", BETRAYAL, "--no-answer")
    lines = out.splitlines()
    assert code == 0 and lines[0] == "mode: local (names 1 entity of the graph: Robb Stark)"
    assert any(line.startswith("context (") for line in lines)
    assert any(line.strip().startswith("[F1] ") and "Robb Stark" in line for line in lines)
    assert lines[-1].startswith("LLM calls: 0")
    code, out, _ = run("ask", BETRAYAL, "--mode", "global", "--no-answer")
    assert code == 0 and out.splitlines()[0] == "mode: global (global asked explicitly)"
    assert any(line.strip().startswith("[R1] Grupo") for line in out.splitlines())


def test_json_prints_the_whole_result_and_nothing_else(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("ask", QUESTION, "--json", replay=[primer("Borrador [R1].", FOLLOWUPS[:2]),
                                                          "Final [F1], con [R1] y [X9]."])  # fmt: skip
    assert code == 0
    data = json.loads(out)  # stdout is exactly one JSON document
    assert data["mode"] == "drift" and data["route"]["decided_by"] == "rule"
    assert data["route"]["rule"] == "connective.es.que_relacion"
    assert data["answer"] == "Final [F1], con [R1] y [X9]." and data["invented_citations"] == 0  # X is no source kind
    assert [c["id"] for c in data["citations"]] == ["F1", "R1"]
    assert data["llm_calls"] == 2 and data["followups"] == FOLLOWUPS[:2]
    assert data["bounds"]["depth"] == 1 and data["bounds"]["max_calls"] == 6
    assert {"question", "sources", "anchors", "communities", "timings", "input_tokens", "output_tokens",
            "invented_citations", "warnings"} <= set(data)  # fmt: skip
    assert {"Robb Stark", "Walder Frey"} <= set(data["anchors"])


def test_drift_prints_bounds_answer_and_reference_list(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("ask", "drift", QUESTION, "--followups", "1",
                       replay=[primer("Borrador.", FOLLOWUPS), "Respuesta [R1] y [F1] y [F77]."])  # fmt: skip
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "bounds: depth 1, followups 1, max_calls 6, reports 5, rounds 1"
    assert "Respuesta [R1] y [F1] y." in lines
    refs = lines[lines.index("References:") + 1:]
    assert refs[0].startswith("[R1] Grupo") and any(r.startswith("[F1] ") for r in refs)
    assert "(1 citation(s) not in the context were removed)" in lines
    assert lines[-1].startswith("LLM calls: 2")


def test_explicit_local_keeps_its_output_and_takes_a_retrieval_mode(run) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run("ask", "local", BETRAYAL, "--no-answer")
    assert code == 0 and "anchors: Robb Stark (Personaje, exact)" in out and "mode:" not in out
    assert "TRAICIONA_A" in out
    code, out, _ = run("ask", "local", BETRAYAL, "--mode", "graph", "--no-answer", "--json")
    data = json.loads(out)
    assert code == 0 and data["retrieval"] == "graph" and data["route"]["rule"] == "explicit"
    code, out2, _ = run("ask", "local", BETRAYAL, "--retrieval", "graph", "--no-answer", "--json")
    assert json.loads(out2)["sources"] == data["sources"]


def test_errors_are_one_line_and_exit_non_zero(run) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run("ask", "   ")
    assert code == 1 and out == "" and err.strip().splitlines() == [
        'error: the question is empty: pass the question as text, e.g. ask "Who rules the city?"']
    code, _, err = run("ask", "drift", QUESTION, "--depth", "0", "--no-answer")
    assert code == 1 and len(err.strip().splitlines()) == 1 and "drift depth" in err


def test_a_claims_answer_lists_what_was_left_out_and_why(run, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("GRAPHRAG_ANSWER_FORMAT", "claims")
    claims = json.dumps({"claims": [
        {"statement": "Roose Bolton traicionó a Robb Stark en la Boda Roja.", "sources": ["F2"]},
        {"statement": "Sansa Stark traicionó a Robb Stark en la Boda Roja.", "sources": ["F2"]}]})  # fmt: skip
    anchors = '{"entities": ["Robb Stark"]}'
    code, out, _ = run("ask", "local", BETRAYAL, replay=[anchors, claims])
    lines = out.splitlines()
    assert code == 0 and "Roose Bolton traicionó a Robb Stark en la Boda Roja [F2]." in lines
    assert not any(line.startswith("Sansa Stark traicionó") for line in lines)  # not in the answer
    at = lines.index("claims: 1 claim kept, 1 left out (1 entity not in its sources)")
    assert lines[at + 1:at + 3] == ["Left out (not supported by its sources):",
                                    "  - Sansa Stark traicionó a Robb Stark en la Boda Roja. [F2]: Sansa Stark is in "
                                    "none of its sources (F2)"]  # fmt: skip
    assert lines[-1].startswith("LLM calls: 2")
    code, out, _ = run("ask", "local", BETRAYAL, "--json", replay=[anchors, claims])
    data = json.loads(out)
    assert data["answer_format"] == "claims" and [c["statement"] for c in data["claims"]] == [
        "Roose Bolton traicionó a Robb Stark en la Boda Roja."]
    assert [(c["reason"], c["sources"]) for c in data["left_out"]] == [("entity_not_in_sources", ["F2"])]
