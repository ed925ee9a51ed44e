"""Chunkers and corpus reading: structure, sizes, offsets, stable ids and errors."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from graphrag_got.ingest.chunking import ChunkedDocument, chunk_text, read_corpus
from graphrag_got.errors import ConfigError, CorpusError

REPO = Path(__file__).resolve().parents[1]

P1 = "Eddard Stark gobierna Invernalia y el Norte desde hace muchos años."
P2 = "Catelyn Tully nació en Aguasdulces, la sede de la Casa Tully."
P3 = "Robb Stark es proclamado Rey en el Norte tras la muerte de su padre."


def assert_offsets(text: str, result: ChunkedDocument) -> None:
    for chunk in result.chunks:
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.hash == hashlib.sha256(chunk.text.encode("utf-8")).hexdigest()
    assert [c.index for c in result.chunks] == list(range(len(result.chunks)))


# --- paragraph chunker -----------------------------------------------------------------------


def test_paragraphs_split_on_blank_lines_and_keep_exact_offsets() -> None:
    text = f"\n\n  {P1}\n\n\n{P2}\n   \n{P3}\n"
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=10, max_chars=500)
    assert [c.text for c in result.chunks] == [P1, P2, P3]
    assert all(c.heading is None for c in result.chunks)
    assert result.dropped == 0
    assert_offsets(text, result)


def test_paragraph_chunker_never_merges_neighbours() -> None:
    text = f"{P1}\n\n{P2}"
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=0, max_chars=5000)
    assert len(result.chunks) == 2


def test_short_chunks_are_dropped_and_counted() -> None:
    text = f"{P1}\n\nCorto.\n\n{P2}\n\nOtro."
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=20, max_chars=500)
    assert [c.text for c in result.chunks] == [P1, P2]
    assert result.dropped == 2
    assert [c.index for c in result.chunks] == [0, 1]


def test_long_paragraph_is_split_at_sentence_ends() -> None:
    sentences = [f"Frase número {i} sobre la Casa Stark y sus aliados del Norte." for i in range(10)]
    text = " ".join(sentences)
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=0, max_chars=150)
    assert len(result.chunks) > 1
    assert all(len(c.text) <= 150 for c in result.chunks)
    assert all(c.text.endswith(".") for c in result.chunks)  # cut at sentence ends only
    assert " ".join(c.text for c in result.chunks) == text
    assert_offsets(text, result)


def test_sentence_longer_than_max_is_split_between_words() -> None:
    long_sentence = "palabra " * 40 + "fin."
    text = f"Inicio breve. {long_sentence} Cierre breve."
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=0, max_chars=100)
    texts = [c.text for c in result.chunks]
    assert all(len(t) <= 100 for t in texts)
    assert texts[0] == "Inicio breve." and texts[-1] == "Cierre breve."  # neighbours stay whole
    assert " ".join(texts[1:-1]) == long_sentence
    assert_offsets(text, result)


def test_crlf_text_offsets_still_exact() -> None:
    text = f"{P1}\r\n\r\n{P2}\r\n"
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=0, max_chars=500)
    assert [c.text for c in result.chunks] == [P1, P2]
    assert_offsets(text, result)


# --- markdown chunker ------------------------------------------------------------------------

MD = """---
title: Casas de Poniente
autor: Maestre
fecha: 2024-05-01
tags: [stark, tully]
---
Introducción: este documento resume las grandes casas.

# Casa Stark

La Casa Stark gobierna el Norte desde Invernalia.

## Aliados

La Casa Tully es aliada de la Casa Stark.
#### Detalle menor
Un detalle que sigue en la sección Aliados.

### Enemigos ###

La Casa Bolton traiciona a la Casa Stark.
"""


def test_markdown_new_chunk_per_heading_with_heading_kept() -> None:
    result = chunk_text("casas.md", MD, kind="markdown", min_chars=10, max_chars=1000)
    headings = [c.heading for c in result.chunks]
    assert headings == [None, "Casa Stark", "Aliados", "Enemigos"]
    assert result.chunks[1].text.startswith("# Casa Stark\n")
    assert result.chunks[2].text.startswith("## Aliados\n")
    assert "#### Detalle menor" in result.chunks[2].text  # level 4 stays inside its section
    assert result.chunks[3].text.startswith("### Enemigos ###")
    assert_offsets(MD, result)


def test_front_matter_becomes_metadata_and_never_a_chunk() -> None:
    result = chunk_text("casas.md", MD, kind="markdown", min_chars=0, max_chars=1000)
    assert result.document.metadata == {
        "title": "Casas de Poniente",
        "autor": "Maestre",
        "fecha": "2024-05-01",  # YAML date made JSON-friendly
        "tags": ["stark", "tully"],
    }
    body_start = MD.index("Introducción")
    assert all(c.start >= body_start for c in result.chunks)
    assert not any("title:" in c.text or c.text.startswith("---") for c in result.chunks)
    assert result.document.hash == hashlib.sha256(MD.encode("utf-8")).hexdigest()


def test_paragraph_kind_has_no_front_matter_handling() -> None:
    result = chunk_text("casas.txt", MD, kind="paragraph", min_chars=0, max_chars=1000)
    assert result.document.metadata == {}


CODE = "```python\n" + "\n\n".join(f"linea_{i} = {i}  # ## no es un encabezado" for i in range(30)) + "\n```"


def test_code_fence_kept_whole_when_it_fits_else_split_at_lines() -> None:
    text = f"# Código\n\nAntes del bloque de código.\n\n{CODE}\n\nDespués del bloque.\n"
    assert 300 < len(CODE) < 2000
    whole = chunk_text("code.md", text, kind="markdown", min_chars=0, max_chars=2000)
    assert any(CODE in c.text for c in whole.chunks)
    result = chunk_text("code.md", text, kind="markdown", min_chars=0, max_chars=300)
    assert all(len(c.text) <= 300 for c in result.chunks)  # max_chars is a hard limit, fences too
    fence_start = text.index(CODE)
    pieces = [c for c in result.chunks if fence_start <= c.start < fence_start + len(CODE)]
    assert len(pieces) > 1
    assert all(text[c.start - 1] == "\n" for c in pieces)  # cut at line breaks
    assert all(c.heading == "Código" for c in result.chunks)  # '## ...' inside the fence is no heading
    assert_offsets(text, result)


def test_tilde_fence_and_unclosed_fence() -> None:
    text = "# T\n\n~~~\n# dentro\n\n## dentro\n~~~\n\n## Fuera\n\nTexto.\n\n```\nsin cerrar\n\n# tampoco"
    result = chunk_text("f.md", text, kind="markdown", min_chars=0, max_chars=1000)
    assert [c.heading for c in result.chunks] == ["T", "Fuera"]
    assert result.chunks[1].text.endswith("```\nsin cerrar\n\n# tampoco")
    assert_offsets(text, result)


def test_long_section_split_at_paragraph_boundaries() -> None:
    paragraphs = [f"Párrafo {i}: la Casa Tyrell es aliada de la Casa Lannister durante la guerra." for i in range(8)]
    text = "## Alianzas\n\n" + "\n\n".join(paragraphs) + "\n"
    result = chunk_text("a.md", text, kind="markdown", min_chars=0, max_chars=250)
    assert len(result.chunks) > 1
    assert all(len(c.text) <= 250 for c in result.chunks)
    assert all(c.heading == "Alianzas" for c in result.chunks)
    assert result.chunks[0].text.startswith("## Alianzas")
    assert sum(1 for c in result.chunks if "## Alianzas" in c.text) == 1
    for chunk in result.chunks:  # every piece is made of whole paragraphs
        body = chunk.text.removeprefix("## Alianzas\n\n")
        assert all(part in paragraphs for part in body.split("\n\n"))
    assert_offsets(text, result)


def test_heading_only_section_under_min_is_dropped() -> None:
    text = "# Título\n## Sección\n\nUn párrafo suficientemente largo para quedarse.\n"
    result = chunk_text("h.md", text, kind="markdown", min_chars=20, max_chars=1000)
    assert [c.heading for c in result.chunks] == ["Sección"]
    assert result.dropped == 1


# --- stable ids ------------------------------------------------------------------------------


def test_same_text_gives_same_ids() -> None:
    text = f"{P1}\n\n{P2}\n\n{P3}"
    a = chunk_text("doc.txt", text, min_chars=0, max_chars=500)
    b = chunk_text("doc.txt", text, min_chars=0, max_chars=500)
    assert [c.id for c in a.chunks] == [c.id for c in b.chunks]
    first = a.chunks[0]
    assert first.id == f"doc.txt:{first.hash[:12]}"


def test_editing_one_paragraph_changes_only_its_id() -> None:
    before = chunk_text("doc.txt", f"{P1}\n\n{P2}\n\n{P3}", min_chars=0, max_chars=500)
    after = chunk_text("doc.txt", f"Un párrafo nuevo al principio.\n\n{P1}\n\n{P2} Y algo más.\n\n{P3}",
                       min_chars=0, max_chars=500)
    ids_before = [c.id for c in before.chunks]
    ids_after = [c.id for c in after.chunks]
    assert ids_after[1] == ids_before[0]
    assert ids_after[3] == ids_before[2]
    assert ids_after[2] != ids_before[1]


def test_repeated_text_gets_numbered_suffix() -> None:
    result = chunk_text("doc.txt", f"{P1}\n\n{P2}\n\n{P1}\n\n{P1}", min_chars=0, max_chars=500)
    ids = [c.id for c in result.chunks]
    assert ids[2] == ids[0] + "-2" and ids[3] == ids[0] + "-3"
    assert len(set(ids)) == 4


def test_ids_depend_on_document_id() -> None:
    a = chunk_text("a.txt", P1, min_chars=0, max_chars=500)
    b = chunk_text("b.txt", P1, min_chars=0, max_chars=500)
    assert a.chunks[0].id.startswith("a.txt:") and b.chunks[0].id.startswith("b.txt:")


# --- read_corpus -----------------------------------------------------------------------------


def test_read_corpus_folder_recursive_sorted_with_auto_kind(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "b.txt").write_text(f"{P1}\n\n{P2}", encoding="utf-8")
    (tmp_path / "sub" / "a.md").write_text("---\nx: 1\n---\n# H\n\nTexto del documento markdown.", encoding="utf-8")
    (tmp_path / "notas.csv").write_text("a,b", encoding="utf-8")
    (tmp_path / ".oculto").mkdir()
    (tmp_path / ".oculto" / "z.txt").write_text(P3, encoding="utf-8")
    docs = read_corpus(tmp_path, min_chars=0, max_chars=500)
    assert [d.document.id for d in docs] == ["b.txt", "sub/a.md"]
    assert docs[1].document.metadata == {"x": 1}
    assert docs[1].chunks[0].heading == "H"
    assert docs[0].document.path == (tmp_path / "b.txt").as_posix()
    forced = read_corpus(tmp_path, kind="paragraph", min_chars=0, max_chars=500)
    assert forced[1].document.metadata == {}


def test_read_corpus_single_file_and_crlf(tmp_path: Path) -> None:
    file = tmp_path / "doc.txt"
    file.write_bytes(f"\ufeff{P1}\r\n\r\n{P2}\r\n".encode("utf-8"))
    [doc] = read_corpus(file, min_chars=0, max_chars=500)
    assert doc.document.id == "doc.txt"
    assert [c.text for c in doc.chunks] == [P1, P2]
    assert doc.chunks[1].start == len(P1) + 2  # offsets into the \n-normalised text


def test_got_corpus_chunks(tmp_path: Path) -> None:
    [doc] = read_corpus(REPO / "corpus" / "got.txt", min_chars=40, max_chars=1500)
    text = (REPO / "corpus" / "got.txt").read_text(encoding="utf-8")
    assert 12 <= len(doc.chunks) <= 16 and doc.dropped == 0
    assert_offsets(text, doc)


def test_missing_path_is_a_corpus_error(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="does not exist"):
        read_corpus(tmp_path / "nada", min_chars=0, max_chars=500)


def test_empty_corpus_errors(tmp_path: Path) -> None:
    with pytest.raises(CorpusError, match="no .txt or .md"):
        read_corpus(tmp_path, min_chars=0, max_chars=500)
    (tmp_path / "vacio.txt").write_text("\n\n  \n", encoding="utf-8")
    with pytest.raises(CorpusError, match="empty"):
        read_corpus(tmp_path, min_chars=0, max_chars=500)


def test_non_utf8_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "bien.txt").write_text(P1, encoding="utf-8")
    (tmp_path / "mal.txt").write_bytes("Línea uno\nCasa Stark en latín-1: Señor".encode("latin-1"))
    with pytest.raises(CorpusError, match=r"mal\.txt, line 1: not valid UTF-8"):
        read_corpus(tmp_path, min_chars=0, max_chars=500, strict=True)


def test_malformed_front_matter_names_file_and_line(tmp_path: Path) -> None:
    bad = "---\ntitle: ok\ntags: [a, b\nautor: x\n---\n# H\n\nTexto."
    (tmp_path / "malo.md").write_text(bad, encoding="utf-8")
    with pytest.raises(CorpusError, match=r"malo\.md, line [3-5]: malformed YAML"):
        read_corpus(tmp_path, min_chars=0, max_chars=500, strict=True)


def test_bad_front_matter_variants() -> None:
    with pytest.raises(CorpusError, match=r"x\.md, line 1: .*never closed"):
        chunk_text("x.md", "---\ntitle: a\n\n# H\n\nTexto.", kind="markdown", min_chars=0, max_chars=100)
    with pytest.raises(CorpusError, match=r"x\.md, line 2: .*mapping"):
        chunk_text("x.md", "---\n- a\n- b\n---\nTexto.", kind="markdown", min_chars=0, max_chars=100)
    with pytest.raises(CorpusError, match=r"x\.md, line 3: malformed YAML"):
        chunk_text("x.md", "---\na: 1\nb: : :\n---\nTexto.", kind="markdown", min_chars=0, max_chars=100)


def test_bad_sizes_and_kind() -> None:
    with pytest.raises(ConfigError):
        chunk_text("d.txt", P1, min_chars=100, max_chars=50)
    with pytest.raises(ConfigError, match="unknown chunker"):
        chunk_text("d.txt", P1, kind="words", min_chars=0, max_chars=50)  # type: ignore[arg-type]
