"""Reading extraction.json: the fast path (pydantic-core parses the text) gives what the slow one gives,
and every file the slow path refuses is still refused with its detailed error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.errors import ExtractionFileError
from graphrag_got.extract.extraction import MAX_FILE_DEPTH, Extraction

GOLD = Path(__file__).resolve().parent / "data" / "got_extraction.json"


def _write(tmp_path: Path, data: dict) -> Path:
    path = tmp_path / "extraction.json"
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_the_fast_path_reads_what_the_slow_path_reads(tmp_path: Path) -> None:
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    data["entities"][0]["properties"] = {**data["entities"][0]["properties"], "apodo": None}  # a null: dropped
    path = _write(tmp_path, data)
    fast = Extraction._read_fast(path.read_text(encoding="utf-8"), str(path))
    assert fast is not None
    assert fast.model_dump() == Extraction.from_data(json.loads(path.read_text(encoding="utf-8"))).model_dump()
    assert Extraction.read(path).model_dump() == fast.model_dump()
    assert "apodo" not in fast.entities[0].properties


def test_files_the_slow_path_refuses_are_refused(tmp_path: Path) -> None:
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    no_format = {k: v for k, v in data.items() if k != "format"}
    with pytest.raises(ExtractionFileError, match=r"\$\.format"):
        Extraction.read(_write(tmp_path, no_format))
    deep: object = "x"
    for _ in range(MAX_FILE_DEPTH):
        deep = {"k": deep}
    def rejection(item: object) -> dict:
        return {"kind": "relation", "reason": "malformed", "message": "m", "chunk_id": data["chunks"][0]["id"],
                "item": {"x": item}}

    shallow = {**data, "rejections": data.get("rejections", []) + [rejection("y")]}
    assert Extraction._read_fast(json.dumps(shallow), "x") is not None  # the record itself is valid
    with pytest.raises(ExtractionFileError, match="nested deeper"):
        Extraction.read(_write(tmp_path, {**data, "rejections": data.get("rejections", []) + [rejection(deep)]}))
    dangling = json.loads(json.dumps(data))
    dangling["entities"][0]["chunk_ids"] = ["no-such-chunk"]
    with pytest.raises(ExtractionFileError, match="is not in"):
        Extraction.read(_write(tmp_path, dangling))
    bad = json.loads(json.dumps(data))
    bad["relations"][0]["subject_key"] = ""
    with pytest.raises(ExtractionFileError, match=r"relations\[0\]\.subject_key"):
        Extraction.read(_write(tmp_path, bad))


def test_write_gives_the_text_of_the_general_serializer(tmp_path: Path) -> None:
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    data["documents"][0]["metadata"] = {"title": "Ñandú «x»", "n": 3, "ratio": 0.5, "tags": ["a", "b"], "none": None}
    ext = Extraction.read(data)
    path = ext.write(tmp_path / "out.json")
    from graphrag_got.common.files import dumps_json

    assert path.read_text(encoding="utf-8") == dumps_json(ext.to_data()) + "\n"
    assert Extraction.read(path).model_dump() == ext.model_dump()


def test_the_extraction_a_run_hands_on_is_the_file_it_wrote(tmp_path: Path) -> None:
    """The build's load step uses the extraction the extract step built instead of reading the file back:
    both must be the same."""
    from graphrag_got.config import Settings
    from graphrag_got.extract.run import run_extraction
    from graphrag_got.ontology.model import Ontology

    root = Path(__file__).resolve().parents[1]
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "got.txt").write_bytes((root / "corpus" / "got.txt").read_bytes())
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", llm_provider="replay",
                        replay_file=root / "tests" / "data" / "got_replay_qwen2.5-coder-1.5b.json")
    summary = run_extraction(settings.extract, Ontology.from_file(root / "ontology" / "got.json"), corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert summary.extraction is not None and summary.extraction.entities
    assert summary.extraction.model_dump() == Extraction.read(summary.out_path).model_dump()
    again = run_extraction(settings.extract, Ontology.from_file(root / "ontology" / "got.json"), corpus, files=settings.files, chunking=settings.chunking, llm=settings.llm)
    assert again.unchanged and again.extraction is None  # the file was kept: the load reads it
