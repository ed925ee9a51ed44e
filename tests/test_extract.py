"""The extraction run: replay provider, cache hits, revalidation, failed chunks, interruption."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.cli import main
from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionError
from graphrag_got.extract.run import run_extraction
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"

PARAGRAPHS = [
    "Jon Snow es Lord Comandante de la Guardia de la Noche y se encuentra con Daenerys Targaryen en Rocadragón.",
    "Cersei Lannister contrata a la Compañía Dorada para defender Desembarco del Rey tras la caída de Altojardín.",
    "Tyrion Lannister gobierna Roca Casterly durante un tiempo y sirve después a Daenerys Targaryen.",
    "La Casa Frey traiciona a la Casa Stark en la Boda Roja, y la Casa Bolton también traiciona a la Casa Stark.",
]

ANSWERS = [
    # chunk 0: one good relation and one outside the range of GOBIERNA
    {"entities": [{"type": "Personaje", "name": "Jon Snow"}, {"type": "Personaje", "name": "Daenerys Targaryen"},
                  {"type": "Organizacion", "name": "Guardia de la Noche"}],
     "relations": [{"relation": "SE_ENCUENTRA_CON", "subject": "Jon Snow", "subject_type": "Personaje",
                    "object": "Daenerys Targaryen", "object_type": "Personaje", "momento": "en Rocadragón"},
                   {"relation": "GOBIERNA", "subject": "Jon Snow", "subject_type": "Personaje",
                    "object": "Guardia de la Noche", "object_type": "Organizacion", "momento": None}]},
    # chunk 1: fenced answer, valid
    "```json\n" + json.dumps(
        {"entities": [{"type": "Personaje", "name": "Cersei Lannister"},
                      {"type": "Organizacion", "name": "Compañía Dorada", "tipo": "mercenaria"}],
         "relations": [{"relation": "CONTRATA", "subject": "Cersei Lannister", "subject_type": "Personaje",
                        "object": "Compañía Dorada", "object_type": "Organizacion"}]}, ensure_ascii=False) + "\n```",
    # chunk 2: unusable twice -> failed chunk
    ["I cannot answer that.", "Still no JSON, sorry."],
    # chunk 3: truncated JSON that repair can finish
    '{"entities": [{"type": "CasaNoble", "name": "Casa Frey"}, {"type": "CasaNoble", "name": "Casa Stark"}], '
    '"relations": [{"relation": "TRAICIONA_A", "subject": "Casa Frey", "subject_type": "CasaNoble", '
    '"object": "Casa Stark", "object_type": "CasaNoble", "momento": "en la Boda Roja"}, {"relation": "TRAI',
]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    d = tmp_path / "corpus"
    d.mkdir()
    (d / "mini.txt").write_text("\n\n".join(PARAGRAPHS) + "\n", encoding="utf-8")
    return d


def _replay_file(corpus: Path, tmp_path: Path) -> Path:
    chunks = read_corpus(corpus, min_chars=10, max_chars=1500)[0].chunks
    assert len(chunks) == 4
    responses = []
    for ch, ans in zip(chunks, ANSWERS):
        raws = ans if isinstance(ans, list) else [ans if isinstance(ans, str) else json.dumps(ans, ensure_ascii=False)]
        responses.append({"chunk_id": ch.id, "chunk_hash": ch.hash, "responses": raws})
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"format": "graphrag_got.replay/1", "responses": responses}, ensure_ascii=False))
    return path


def _settings(tmp_path: Path, **kw: Any) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=10, **kw)


def test_replay_run_validates_audits_and_caches(corpus, tmp_path, capsys):
    replay = _replay_file(corpus, tmp_path)
    settings = _settings(tmp_path, llm_provider="replay", replay_file=replay)
    onto = Ontology.from_file(GOT)
    s1 = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert s1.chunks == 4 and s1.llm_calls == 5 and s1.cache_hits == 0  # one chunk needed a retry
    data = json.loads(s1.out_path.read_text(encoding="utf-8"))
    assert data["format"] == "graphrag_got.extraction/2"
    assert data["counts"]["chunks_failed"] == 1 and data["counts"]["chunks_repaired"] == 1
    (failed,) = data["failed_chunks"]
    assert failed["raw_responses"] == ["I cannot answer that.", "Still no JSON, sorry."]
    rels = {(r["subject"], r["relation"], r["object"]) for r in data["relations"]}
    assert ("Cersei Lannister", "CONTRATA", "Compañía Dorada") in rels
    assert ("Casa Frey", "TRAICIONA_A", "Casa Stark") in rels
    assert ("Daenerys Targaryen", "SE_ENCUENTRA_CON", "Jon Snow") in rels  # symmetric: sorted ends
    by_reason = {r["reason"]: r for r in data["rejections"] if r["kind"] == "relation"}
    # the truncated last item that repair closed is refused, not silently kept
    assert set(by_reason) == {"range_violation", "empty_name"}
    refused = by_reason["range_violation"]
    assert refused["item"]["relation"] == "GOBIERNA"
    assert refused["chunk_id"] in {c["id"] for c in data["chunks"]}
    # the audit is consistent: every kept relation's chunk exists and its ends are entities
    uids = {e["uid"] for e in data["entities"]}
    for r in data["relations"]:
        assert f"{r['subject_type']}|{r['subject_key']}" in uids and f"{r['object_type']}|{r['object_key']}" in uids

    s2 = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert s2.llm_calls == 0 and s2.cache_hits == 4
    data2 = json.loads(s2.out_path.read_text(encoding="utf-8"))
    assert data2["relations"] == data["relations"] and data2["entities"] == data["entities"]


def test_revalidate_applies_a_widened_range_without_calls(corpus, tmp_path):
    replay = _replay_file(corpus, tmp_path)
    # the fixture's texts rule with words the ontology's GOBIERNA cues do not list: cues off here
    settings = _settings(tmp_path, llm_provider="replay", replay_file=replay, relation_cues=False)
    run_extraction(settings.extract, Ontology.from_file(GOT), corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    raw = json.loads(GOT.read_text(encoding="utf-8"))
    for r in raw["relaciones"]:
        if r["nombre"] == "GOBIERNA":
            r["rango"] = ["Region", "Organizacion"]
    widened = Ontology.from_dict(raw, source="widened.json")
    s = run_extraction(settings.extract, widened, corpus, revalidate=True, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert s.llm_calls == 0 and s.revalidated and s.missing_chunks == 0
    data = json.loads(s.out_path.read_text(encoding="utf-8"))
    assert not [r for r in data["rejections"] if r["reason"] == "range_violation"]
    assert any(r["relation"] == "GOBIERNA" for r in data["relations"])
    assert data["ontology"]["hash"] == widened.hash


class _Flaky(BaseChatModel):
    """Answers with an empty graph, but raises KeyboardInterrupt on call number ``stop_at``."""

    stop_at: int = 0
    calls: int = 0

    @property
    def _llm_type(self) -> str:
        return "flaky"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.calls += 1
        if self.calls == self.stop_at:
            raise KeyboardInterrupt
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content='{"entities": [], "relations": []}'))])


def test_interrupted_run_resumes_without_paying_twice(corpus, tmp_path):
    settings = _settings(tmp_path)
    onto = Ontology.from_file(GOT)
    flaky = _Flaky(stop_at=3)
    with pytest.raises(ExtractionError, match="[23] of 4 chunks are cached") as stopped:
        run_extraction(settings.extract, onto, corpus, chat=flaky, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    # the 4th chunk may have started before the stop: then its answer was waited for and cached too
    cached = int(str(stopped.value).split("\n")[1].split(" of ")[0])
    again = _Flaky()
    s = run_extraction(settings.extract, onto, corpus, chat=again, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.calls == 4 - cached and s.cache_hits == cached and flaky.calls - 1 == cached


def test_cli_extract_prints_counts_and_exports_replay(corpus, tmp_path, capsys):
    replay = _replay_file(corpus, tmp_path)
    out = tmp_path / "out2"
    exported = tmp_path / "exported.json"
    argv = ["--home", str(tmp_path / "home"), "--out", str(out), "--provider", "replay", "--replay-file", str(replay),
            "extract", str(corpus), "--export-replay", str(exported)]
    import os

    os.environ["GRAPHRAG_CHUNK_MIN_CHARS"] = "10"
    try:
        assert main(argv) == 0
        text = capsys.readouterr().out
        assert "relations kept 3" in text and "range_violation 1" in text and "empty_name 1" in text
        assert main(argv[:-2]) == 0
        assert "zero LLM calls" in capsys.readouterr().out
    finally:
        del os.environ["GRAPHRAG_CHUNK_MIN_CHARS"]
    rec = json.loads(exported.read_text(encoding="utf-8"))
    assert len(rec["responses"]) == 4


def test_cli_extract_without_replay_file_is_a_clear_error(corpus, tmp_path, capsys):
    code = main(["--home", str(tmp_path / "h"), "--out", str(tmp_path / "o"), "--provider", "replay",
                 "extract", str(corpus)])
    assert code == 1
    assert "replay" in capsys.readouterr().err


def test_written_files_get_ordinary_permissions(tmp_path):
    import os
    import stat

    from graphrag_got.common.files import write_json_atomic

    old = os.umask(0o022)
    try:
        path = write_json_atomic(tmp_path / "x.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert json.loads(path.read_text()) == {"a": 1}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_rerun_with_unchanged_inputs_keeps_the_file_and_any_change_rebuilds_it(corpus, tmp_path):
    """Same documents, stored answers, ontology and settings: the file is kept as it is (no validation
    again); a changed document, setting or ontology rebuilds it, and revalidation always does."""
    from graphrag_got.extract import fingerprint

    replay = _replay_file(corpus, tmp_path)
    settings = _settings(tmp_path, llm_provider="replay", replay_file=replay)
    onto = Ontology.from_file(GOT)
    first = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert not first.unchanged and fingerprint.sidecar(first.out_path).is_file()
    def content(path: Path) -> dict[str, Any]:  # the file without its creation time
        data = json.loads(path.read_text(encoding="utf-8"))
        data.pop("created", None)
        return data

    written = content(first.out_path)
    assert "created" in json.loads(first.out_path.read_text(encoding="utf-8"))
    first.out_path.touch()
    stamp = first.out_path.stat().st_mtime_ns

    again = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.unchanged and again.llm_calls == 0 and first.out_path.stat().st_mtime_ns == stamp
    assert (again.relations, again.entities, again.by_reason, again.failed_chunks) == \
        (first.relations, first.entities, first.by_reason, first.failed_chunks)
    assert again.lines()[0].startswith("extraction unchanged")

    # the alias file beside the ontology is an input too: writing one rebuilds
    copy = tmp_path / "onto" / "got.json"
    copy.parent.mkdir()
    copy.write_bytes(GOT.read_bytes())
    onto_copy = Ontology.from_file(copy)
    assert run_extraction(settings.extract, onto_copy, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).unchanged  # the same ontology, no alias file either way
    (copy.parent / "got.aliases.json").write_text('{"aliases": {}}', encoding="utf-8")
    assert not run_extraction(settings.extract, onto_copy, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).unchanged

    # another setting of the extraction: rebuilt, from the same stored answers
    cfg = settings.with_overrides(min_confidence=0.99)
    stricter = run_extraction(cfg.extract, onto, corpus, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert not stricter.unchanged and stricter.llm_calls == 0
    # back to the first settings: rebuilt again (the digest now names the stricter run), the same content
    back = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert not back.unchanged and content(back.out_path) == written
    assert run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).unchanged
    # revalidation always rebuilds and leaves no digest behind
    assert not run_extraction(settings.extract, onto, corpus, revalidate=True, files=settings.files, chunking=settings.chunking, llm=settings.llm).unchanged
    assert not fingerprint.sidecar(first.out_path).exists()
    assert not run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).unchanged
    # a document with a paragraph less: the same stored answers for other chunks, so rebuilt without a call
    (corpus / "mini.txt").write_text("\n\n".join(PARAGRAPHS[:3]) + "\n", encoding="utf-8")
    fewer = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert not fewer.unchanged and fewer.chunks == 3 and fewer.llm_calls == 0
