"""The validation memo: a rebuild reuses each unchanged chunk's validation, and the file it writes is the
one validating every answer again would write (``graphrag_got.extract.memo``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from graphrag_got.config import Settings
from graphrag_got.extract import fingerprint
from graphrag_got.extract.memo import memo_path
from graphrag_got.extract.run import run_extraction
from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.ontology.model import Ontology

ROOT = Path(__file__).resolve().parents[1]
GOT = ROOT / "ontology" / "got.json"
REPLAY = ROOT / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json"


def _content(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("created", None)
    return data


def _no_cues(tmp_path: Path) -> Path:
    """The worked example's ontology without cues: the cue check, the one corpus-wide input of a
    validation, is off."""
    data = json.loads(GOT.read_text(encoding="utf-8"))
    for rel in data["relaciones"]:
        rel.pop("indicios", None)
        rel.pop("indicios_inversos", None)
    path = tmp_path / "plain.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture()
def setup(tmp_path: Path) -> tuple[Path, Path, Settings]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "got.txt").write_bytes((ROOT / "corpus" / "got.txt").read_bytes())
    replay = tmp_path / "replay.json"
    replay.write_bytes(REPLAY.read_bytes())
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay", replay_file=replay)
    return corpus, replay, settings


def _add_document(corpus: Path, replay: Path, settings: Settings) -> None:
    """A second document whose answer lists two of the corpus's names with another class and a new name:
    the class votes of those names change, and so does the set of corpus names."""
    text = ("Eddard Stark y Catelyn Tully llegan a Puerto Gaviota, donde Eddard Stark se casa de nuevo con "
            "Catelyn Tully ante la Casa Arryn.")
    (corpus / "extra.txt").write_text(text + "\n", encoding="utf-8")
    (chunk,) = [c for d in read_corpus(corpus / "extra.txt", min_chars=settings.chunking.min_chars,
                                       max_chars=settings.chunking.max_chars) for c in d.chunks]
    answer = {"entities": [{"type": "CasaNoble", "name": "Eddard Stark"}, {"type": "CasaNoble", "name": "Catelyn Tully"},
                           {"type": "Lugar", "name": "Puerto Gaviota"}],
              "relations": [{"relation": "CASADO_CON", "subject": "Eddard Stark", "subject_type": "Personaje",
                             "object": "Catelyn Tully", "object_type": "Personaje"}]}
    data = json.loads(replay.read_text(encoding="utf-8"))
    data["responses"].append({"chunk_hash": chunk.hash, "responses": [json.dumps(answer, ensure_ascii=False)]})
    replay.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")


@pytest.mark.parametrize("ontology", ["got", "no cues"])
def test_a_rebuild_reuses_unchanged_chunks_and_writes_what_a_full_validation_writes(setup, tmp_path, ontology):
    corpus, replay, settings = setup
    onto = Ontology.from_file(GOT if ontology == "got" else _no_cues(tmp_path))
    first = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert first.validations_reused == 0 and first.chunks == 16
    memo = memo_path(settings.cache_dir, first.out_path)
    assert memo.is_file()

    # nothing changed, but the file is rebuilt (its digest is gone): every chunk's validation is reused
    fingerprint.forget(first.out_path)
    before = _content(first.out_path)
    again = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert not again.unchanged and again.validations_reused == 16
    assert _content(again.out_path) == before

    # a new document changes the class votes of two names and the corpus names
    _add_document(corpus, replay, settings)
    updated = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    with_memo = _content(updated.out_path)
    assert updated.chunks == 17 and updated.llm_calls == 1
    if ontology == "got":  # the cue check masks every corpus name: a new name revalidates every chunk
        assert updated.validations_reused == 0
    else:  # only the chunks whose names changed votes, and the new one, are validated again
        assert 0 < updated.validations_reused < 16

    # the same inputs without a memo: the same file
    memo.unlink()
    fingerprint.forget(updated.out_path)
    fresh = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert fresh.validations_reused == 0
    assert _content(fresh.out_path) == with_memo


def test_a_damaged_or_foreign_memo_is_ignored(setup, tmp_path, caplog):
    corpus, _, settings = setup
    onto = Ontology.from_file(GOT)
    first = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    before = _content(first.out_path)
    memo = memo_path(settings.cache_dir, first.out_path)

    memo.write_text('{"format": "validated-chunks/1", "context": "x", "chunks": {"a": 1}}', encoding="utf-8")
    fingerprint.forget(first.out_path)
    with caplog.at_level("WARNING"):
        damaged = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert damaged.validations_reused == 0 and "damaged" in caplog.text
    assert _content(damaged.out_path) == before

    # another setting of the extraction: the memo's context differs, nothing is reused
    fingerprint.forget(first.out_path)
    cfg = settings.with_overrides(min_confidence=0.99)
    other = run_extraction(cfg.extract, onto, corpus, files=cfg.files, chunking=cfg.chunking, llm=cfg.llm)
    assert other.validations_reused == 0


SHOP = {
    "nombre": "Shop",
    "clases": {"Company": {}, "Product": {}},
    "relaciones": [{"nombre": "SELLS", "dominio": "Company", "rango": "Product"}],
}


def test_a_repair_that_quotes_vote_counts_is_redone_when_the_counts_change(tmp_path):
    """Three notes list Acme as a Company, one as a Product: that one's listing is corrected, and its
    repair record quotes the counts. A fifth note changes the counts but not the decision: the quoting
    chunk is repaired again (its record must say 4, not 3), the others are reused."""
    onto_path = tmp_path / "shop.json"
    onto_path.write_text(json.dumps(SHOP), encoding="utf-8")
    onto = Ontology.from_file(onto_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    replay = tmp_path / "replay.json"
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay", replay_file=replay,
                        chunk_min_chars=10)
    responses: list[dict[str, Any]] = []

    def note(name: str, product: str, acme_class: str) -> None:
        (corpus / name).write_text(f"Acme sells {product} in every town.\n", encoding="utf-8")
        (chunk,) = read_corpus(corpus / name, min_chars=10, max_chars=settings.chunking.max_chars)[0].chunks
        answer = {"entities": [{"type": acme_class, "name": "Acme"}, {"type": "Product", "name": product}],
                  "relations": [{"relation": "SELLS", "subject": "Acme", "subject_type": "Company",
                                 "object": product, "object_type": "Product"}]}
        responses.append({"chunk_hash": chunk.hash, "responses": [json.dumps(answer)]})
        replay.write_text(json.dumps({"format": "graphrag_got.replay/1", "responses": responses}), encoding="utf-8")

    for i, cls in enumerate(["Company", "Company", "Company", "Product"]):
        note(f"n{i}.txt", f"Widget{i}", cls)
    first = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    quoted = [r["message"] for r in _content(first.out_path)["repairs"] if r["reason"] == "majority_class"]
    assert len(quoted) == 1 and "Company in 3" in quoted[0]

    note("n4.txt", "Widget4", "Company")
    second = run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert second.validations_reused == 3  # n0-n2; n3 quotes the counts, n4 is new
    quoted = [r["message"] for r in _content(second.out_path)["repairs"] if r["reason"] == "majority_class"]
    assert len(quoted) == 1 and "Company in 4" in quoted[0]
    with_memo = _content(second.out_path)
    memo_path(settings.cache_dir, second.out_path).unlink()
    fingerprint.forget(second.out_path)
    assert _content(run_extraction(settings.extract, onto, corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm).out_path) == with_memo
