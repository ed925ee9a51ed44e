"""Document readers (graphrag_got.ingest.readers): PDF, DOCX and HTML files made here, good and bad,
read into chunks that know their page and heading path; the bad ones skipped with one record each."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from graphrag_got.common.walk import SkippedInput
from graphrag_got.errors import CorpusError
from graphrag_got.ingest.chunking import chunk_text, read_corpus
from graphrag_got.ingest.readers import read_document, reader_for
from graphrag_got.ingest.readers.repeated import drop_repeated

SIZES = {"min_chars": 20, "max_chars": 600}

PAGES = [
    "Eddard Stark rules Winterfell and is the Warden of the North.",
    "Jon Snow joins the Night's Watch at Castle Black on the Wall.",
    "Daenerys Targaryen crosses the Narrow Sea with three dragons.",
    "Tyrion Lannister serves as Hand of the King in King's Landing.",
]


def make_pdf(pages: list[str], *, header: str = "The Chronicle of Westeros - draft") -> bytes:
    """One page per text, each with a running header and a page-number footer."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for number, text in enumerate(pages, start=1):
        pdf.setFont("Helvetica", 9)
        pdf.drawString(72, 800, header)
        pdf.setFont("Helvetica", 11)
        pdf.drawString(72, 700, text)
        pdf.setFont("Helvetica", 9)
        pdf.drawString(290, 40, f"Page {number} of {len(pages)}")
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def image_only_pdf() -> bytes:
    """Two pages of drawing and no text, like a scan."""
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    for _ in range(2):
        pdf.rect(100, 100, 300, 500, fill=1)
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(PAGES[:1]))))
    writer.encrypt(user_password="secret", owner_password="owner", algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def make_docx() -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Operations Manual", 0)
    d.add_paragraph("This manual says how the observatory is installed and run.")
    d.add_heading("Installation", 1)
    d.add_paragraph("Unpack the telescope and mount it on the northern pier.")
    d.add_heading("Network", 2)
    d.add_paragraph("The control computer reaches the dome over a wired network.")
    table = d.add_table(rows=2, cols=2)
    for (r, c), value in {(0, 0): "Port", (0, 1): "Service", (1, 0): "7687", (1, 1): "Bolt"}.items():
        table.cell(r, c).text = value
    d.add_heading("Usage", 1)
    d.add_paragraph("Open the dome, point the telescope and start the exposure.")
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


HTML = """<!DOCTYPE html>
<html><head><title>Guide</title><script>var secret = "script text";</script><style>p {color: red}</style></head>
<body><nav>Home | About | Contact</nav>
<h1>Field Guide</h1><p>The guide lists the birds of the <em>northern</em> marshes.</p>
<h2>Herons</h2><p>Grey herons stand still in shallow water for hours.</p>
<ul><li>They nest in colonies.</li><li>They eat fish and frogs.</li></ul>
<table><tr><th>Bird</th><th>Length</th></tr><tr><td>Grey heron</td><td>95 cm</td></tr></table>
</body></html>"""


def write(folder: Path, name: str, data: bytes | str) -> Path:
    path = folder / name
    path.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def read_one(path: Path, **kw):  # type: ignore[no-untyped-def]
    docs = read_corpus(path.parent, **SIZES, **kw)
    return next(d for d in docs if d.document.id == path.name)


# ------------------------------------------------------------------------------------ PDF


def test_pdf_chunks_know_their_page_and_running_headers_are_dropped_and_counted(tmp_path: Path) -> None:
    path = write(tmp_path, "chronicle.pdf", make_pdf(PAGES))
    read = read_document(path, path.name)
    assert (read.format, read.pages, read.lines_dropped) == ("pdf", 4, 8)  # a header and a footer per page
    assert "Chronicle of Westeros" not in read.text and "Page 2 of 4" not in read.text
    assert any("8 running header" in note for note in read.notes)
    doc = read_one(path)
    assert (doc.document.format, doc.document.pages, doc.document.lines_dropped) == ("pdf", 4, 8)
    assert [(c.page, c.text) for c in doc.chunks] == [(i + 1, text) for i, text in enumerate(PAGES)]
    for c in doc.chunks:
        assert read.text[c.start:c.end] == c.text
        assert c.location == f"p. {c.page}" and c.section == ()


def test_a_changed_pdf_page_changes_only_that_pages_chunk_ids(tmp_path: Path) -> None:
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    before = read_one(write(tmp_path / "v1", "a.pdf", make_pdf(PAGES)))
    changed = PAGES[:2] + ["Daenerys Targaryen lands at Dragonstone with her army."] + PAGES[3:]
    after = read_one(write(tmp_path / "v2", "a.pdf", make_pdf(changed)))
    assert before.document.hash != after.document.hash  # the digest is the file's bytes
    old, new = [c.id for c in before.chunks], [c.id for c in after.chunks]
    assert [o == n for o, n in zip(old, new)] == [True, True, False, True]


def test_repeated_lines_need_most_pages_and_stay_in_the_body() -> None:
    body = ["Ned rides north.", "Arya trains.", "Annual report 2025", "Bran climbs.", "Sansa sews.",
            "Jon swears.", "Rob marches."]
    names = ["alpha", "beta", "gamma", "delta", "epsilon"]  # body lines differ from page to page
    pages = [["Annual report 2025", *[f"{line} ({names[i - 1]})" if n != 2 else line for n, line in enumerate(body)],
              f"- {i} -"] for i in range(1, 6)]
    kept, dropped = drop_repeated(pages)
    assert dropped == 10  # the header and the page number of each of the 5 pages
    assert all(page[0].startswith("Ned rides north") and page[2] == "Annual report 2025" for page in kept)
    assert all(not page[-1].startswith("- ") for page in kept)
    same, none = drop_repeated(pages[:2])
    assert none == 0 and same == pages[:2]  # two pages are too few to tell furniture from text


@pytest.mark.parametrize("make, reason, words", [
    (encrypted_pdf, "encrypted", "password"),
    (image_only_pdf, "no_text", "ocrmypdf"),
    (lambda: b"%PDF-1.7\n1 0 obj << /Type /Catalog >>\n this is not a PDF body", "corrupt", "damaged"),
])
def test_bad_pdfs_are_skipped_with_one_record_saying_what_to_do(tmp_path: Path, make, reason: str,
                                                                words: str) -> None:
    write(tmp_path, "good.txt", "Jon Snow is the Lord Commander of the Night's Watch.")
    write(tmp_path, "bad.pdf", make())
    skipped: list[SkippedInput] = []
    docs = read_corpus(tmp_path, **SIZES, skipped=skipped)
    assert [d.document.id for d in docs] == ["good.txt"]  # the run goes on
    assert [(s.path, s.reason) for s in skipped] == [("bad.pdf", reason)]
    assert words in skipped[0].message and "\n" not in skipped[0].message
    with pytest.raises(CorpusError, match=words):
        read_corpus(tmp_path, **SIZES, strict=True)


def test_a_pdf_with_some_pages_without_text_says_which(tmp_path: Path) -> None:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(make_pdf(PAGES))))
    writer.append(PdfReader(io.BytesIO(image_only_pdf())))
    out = io.BytesIO()
    writer.write(out)
    read = read_document(write(tmp_path, "mixed.pdf", out.getvalue()), "mixed.pdf")
    assert read.pages == 6
    assert any("page(s) 5, 6 have no text layer" in note for note in read.notes)


# ------------------------------------------------------------------------------------ DOCX and HTML


def test_docx_chunks_carry_their_heading_path_and_tables(tmp_path: Path) -> None:
    doc = read_one(write(tmp_path, "manual.docx", make_docx()))
    assert doc.document.format == "docx" and doc.document.pages is None
    where = {c.location: c.text for c in doc.chunks}
    assert set(where) == {"Operations Manual", "Operations Manual > Installation",
                          "Operations Manual > Installation > Network", "Operations Manual > Usage"}
    network = where["Operations Manual > Installation > Network"]
    assert network.startswith("Network\n\n") and "7687 | Bolt" in network
    assert all(c.page is None for c in doc.chunks)


def test_html_keeps_visible_text_and_headings_only(tmp_path: Path) -> None:
    doc = read_one(write(tmp_path, "guide.html", HTML))
    text = "\n".join(c.text for c in doc.chunks)
    assert "script text" not in text and "color: red" not in text and "Contact" not in text
    assert "The guide lists the birds of the northern marshes." in text
    herons = next(c for c in doc.chunks if c.heading == "Herons")
    assert herons.section == ("Field Guide", "Herons")
    assert "They nest in colonies." in herons.text and "Grey heron | 95 cm" in herons.text


def test_zip_bomb_docx_is_refused_by_its_unpacked_size(tmp_path: Path) -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(make_docx())) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item))
        dst.writestr("word/media/padding.bin", b"\0" * 4_000_000)  # 4 MB that pack to a few KiB
    data = out.getvalue()
    assert len(data) < 100_000
    write(tmp_path, "bomb.docx", data)
    write(tmp_path, "good.md", "# Notes\n\nJon Snow is the Lord Commander of the Night's Watch.\n")
    skipped: list[SkippedInput] = []
    read_corpus(tmp_path, **SIZES, skipped=skipped, max_bytes=1_000_000)
    assert [(s.path, s.reason) for s in skipped] == [("bomb.docx", "too_large")]
    assert "unpacks to 4," in skipped[0].message


# ------------------------------------------------------------------------------------ sniffing


def test_the_bytes_choose_the_reader_not_the_name(tmp_path: Path) -> None:
    write(tmp_path, "really_a_docx.pdf", make_docx())
    write(tmp_path, "really_a_pdf.txt", make_pdf(PAGES))
    write(tmp_path, "not_a_pdf.pdf", "Just some text that someone named .pdf by mistake.")
    write(tmp_path, "sheet.docx", _zip({"xl/workbook.xml": "<workbook/>"}))
    write(tmp_path, "old.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    write(tmp_path, "broken.docx", b"PK\x03\x04word/document.xml and then nothing")
    skipped: list[SkippedInput] = []
    docs = {d.document.id: d.document for d in read_corpus(tmp_path, **SIZES, skipped=skipped)}
    assert docs["really_a_docx.pdf"].format == "docx"
    assert "named .pdf but the bytes are a Word document" in docs["really_a_docx.pdf"].notes[0]
    assert docs["really_a_pdf.txt"].format == "pdf"
    assert {s.path: s.reason for s in skipped} == {"not_a_pdf.pdf": "wrong_format", "sheet.docx": "wrong_format",
                                                   "old.docx": "encrypted_or_legacy", "broken.docx": "corrupt"}


def _zip(members: dict[str, str]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return out.getvalue()


def test_html_is_sniffed_only_from_the_start_of_the_file() -> None:
    assert reader_for("a.txt", b"\xef\xbb\xbf  <!-- x -->\n<!doctype HTML><html>").name == "html"
    assert reader_for("a.md", b"# Title\n\nAn example: <html><body>...</body></html>\n").name == "text"
    assert reader_for("fragment.html", b"<p>A page with no html element.</p>").name == "html"
    assert reader_for("fragment.txt", b"<p>A page with no html element.</p>").name == "text"


# ------------------------------------------------------------------------------------ text files


def test_markdown_chunks_get_their_heading_path_and_text_ids_stay_as_they_were() -> None:
    text = "# Guide\n\nIntro paragraph long enough.\n\n## Setup\n\nSetup paragraph long enough.\n"
    doc = chunk_text("guide.md", text, kind="markdown", min_chars=5, max_chars=600)
    assert [(c.heading, c.section) for c in doc.chunks] == [("Guide", ("Guide",)), ("Setup", ("Guide", "Setup"))]
    import hashlib

    for c in doc.chunks:  # ids depend only on the document id and the chunk text, as before
        assert c.id == f"guide.md:{hashlib.sha256(c.text.encode()).hexdigest()[:12]}"


# ------------------------------------------------------------------------------------ records, graph, citations


def _extraction_of(docs):  # type: ignore[no-untyped-def]
    from graphrag_got.extract.extraction import FORMAT, ChunkRecord, DocumentRecord, Extraction

    ext = Extraction(
        format=FORMAT,
        documents=[DocumentRecord(id=d.document.id, path=d.document.path, hash=d.document.hash,
                                  format=d.document.format, pages=d.document.pages,
                                  lines_dropped=d.document.lines_dropped, notes=list(d.document.notes))
                   for d in docs],
        chunks=[ChunkRecord(id=c.id, document_id=c.document_id, index=c.index, start=c.start, end=c.end,
                            hash=c.hash, text=c.text, heading=c.heading, page=c.page, section=list(c.section))
                for d in docs for c in d.chunks])
    ext.recount()
    return ext


def test_the_extraction_file_keeps_pages_and_sections_and_text_records_keep_their_shape(tmp_path: Path) -> None:
    from graphrag_got.extract.extraction import Extraction

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus, "chronicle.pdf", make_pdf(PAGES))
    write(corpus, "manual.docx", make_docx())
    write(corpus, "plain.txt", "Jon Snow is the Lord Commander of the Night's Watch.")
    path = _extraction_of(read_corpus(corpus, **SIZES)).write(tmp_path / "extraction.json")
    raw = path.read_text(encoding="utf-8")
    back = Extraction.read(path)
    pdf = next(c for c in back.chunks if c.document_id == "chronicle.pdf" and c.page == 3)
    assert pdf.location == "p. 3" and pdf.text == PAGES[2]
    docx_doc = next(d for d in back.documents if d.id == "manual.docx")
    assert docx_doc.format == "docx"
    assert next(d for d in back.documents if d.id == "chronicle.pdf").lines_dropped == 8
    plain = next(c for c in back.model_dump()["chunks"] if c["document_id"] == "plain.txt")
    assert "page" not in plain and "section" not in plain  # a text corpus's file is as it was
    assert '"format": "text"' not in raw


@pytest.mark.neo4j
def test_chunk_nodes_and_citations_show_page_and_heading_path(tmp_path: Path, neo4j_driver, neo4j_settings,
                                                               clean_graph) -> None:
    from graphrag_got.graph.db import read_all
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.search import cypher
    from graphrag_got.search.citations import Citation

    write(tmp_path, "chronicle.pdf", make_pdf(PAGES))
    write(tmp_path, "manual.docx", make_docx())
    ext = _extraction_of(read_corpus(tmp_path, **SIZES))
    onto = Ontology.from_file(Path(__file__).resolve().parent.parent / "ontology" / "got.json")
    ext.ontology.hash = onto.hash
    cfg = neo4j_settings
    load_extraction(neo4j_driver, cfg.neo4j, ext, onto, graph=cfg.graph, extract=cfg.extract,
                    embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    rows, _, _ = neo4j_driver.execute_query(
        "MATCH (c:Chunk) RETURN c.id AS id, c.page AS page, c.section AS section, c.location AS location",
        database_=cfg.neo4j.database)
    nodes = {r["id"]: r for r in rows}
    by_page = {r["page"]: r for r in nodes.values() if r["page"] is not None}
    assert sorted(by_page) == [1, 2, 3, 4] and by_page[2]["location"] == "p. 2"
    network = next(r for r in nodes.values() if r["section"] and r["section"][-1] == "Network")
    assert network["location"] == "Operations Manual > Installation > Network"
    found = read_all(neo4j_driver, cfg.neo4j, cypher.chunk_sources(), ids=[by_page[2]["id"], network["id"]])
    cites = {r["id"]: Citation(id="C1", kind="chunk", text=r["text"], document_id=r["document_id"],
                               heading=r["heading"], location=r["location"]) for r in found}
    assert cites[by_page[2]["id"]].where() == "chronicle.pdf p. 2"
    assert cites[network["id"]].where() == "manual.docx > Operations Manual > Installation > Network"
    assert "(chronicle.pdf p. 2)" in cites[by_page[2]["id"]].context_line()
    assert "    manual.docx > Operations Manual > Installation > Network" in cites[network["id"]].reference_line()


def test_citations_without_a_location_read_as_before() -> None:
    from graphrag_got.search.citations import Citation

    old = Citation(id="C1", kind="chunk", text="x", document_id="notes.md", heading="Setup")
    assert old.where() == "notes.md > Setup" and old.context_line() == "[C1] x (notes.md > Setup)"
    assert Citation(id="C2", kind="chunk", text="x", document_id="got.txt").where() == "got.txt"


def test_the_extract_summary_gives_each_skipped_file_and_reading_note_a_line() -> None:
    from graphrag_got.extract.summary import ExtractionSummary

    summary = ExtractionSummary(
        out_path=Path("out/extraction.json"), documents=1, chunks=4, dropped_chunks=0, llm_calls=0, cache_hits=4,
        failed_chunks=0, missing_chunks=0, entities=0, relations=0, rejected_relations=0, rejected_entities=0,
        by_reason={}, seconds=0.1, model="replay",
        skipped_files=[SkippedInput("scan.pdf", "no_text", "no text layer ...; run `ocrmypdf in.pdf out.pdf`"),
                       SkippedInput("locked.pdf", "encrypted", "the PDF is encrypted ...")],
        document_notes=["corpus/chronicle.pdf: 8 running header, footer and page-number line(s) dropped"])
    lines = summary.lines()
    assert "    skipped scan.pdf: no text layer ...; run `ocrmypdf in.pdf out.pdf`" in lines
    assert "    skipped locked.pdf: the PDF is encrypted ..." in lines
    assert "    corpus/chronicle.pdf: 8 running header, footer and page-number line(s) dropped" in lines


class _CountingChat:
    """A chat model that answers nothing found and counts its calls (no model runs in these tests)."""

    @staticmethod
    def make():  # type: ignore[no-untyped-def]
        from langchain_core.language_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult

        class Chat(BaseChatModel):
            calls: int = 0

            @property
            def _llm_type(self) -> str:
                return "test"

            def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
                self.calls += 1
                content = '{"entities": [], "relations": []}'
                return ChatResult(generations=[ChatGeneration(message=AIMessage(content=content))])

        return Chat()


def test_extract_over_pdfs_skips_bad_ones_with_a_line_and_asks_again_only_for_a_changed_page(tmp_path: Path) -> None:
    from graphrag_got.config import Settings
    from graphrag_got.extract.extraction import Extraction
    from graphrag_got.extract.run import run_extraction
    from graphrag_got.ontology.model import Ontology

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    write(corpus, "chronicle.pdf", make_pdf(PAGES))
    write(corpus, "locked.pdf", encrypted_pdf())
    write(corpus, "scan.pdf", image_only_pdf())
    onto = Ontology.from_file(Path(__file__).resolve().parent.parent / "ontology" / "got.json")
    settings = Settings(home=tmp_path / "home", out_dir=tmp_path / "out", chunk_min_chars=20)
    chat = _CountingChat.make()
    summary = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files,
                             chunking=settings.chunking, llm=settings.llm)
    assert chat.calls == 4 and summary.documents == 1  # one chunk a page; the bad files cost no call
    lines = summary.lines()
    assert any(line.startswith("    skipped locked.pdf: the PDF is encrypted") for line in lines), lines
    assert any(line.startswith("    skipped scan.pdf: no text layer") and "ocrmypdf" in line for line in lines)
    assert "    chronicle.pdf: 8 running header, footer and page-number line(s) dropped" in lines
    ext = Extraction.read(summary.out_path)
    assert [c.page for c in ext.chunks] == [1, 2, 3, 4]
    assert {s.path: s.reason for s in ext.skipped_files} == {"locked.pdf": "encrypted", "scan.pdf": "no_text"}

    write(corpus, "chronicle.pdf", make_pdf(PAGES[:3] + ["Tyrion Lannister drinks and knows things in the Red Keep."]))
    again = run_extraction(settings.extract, onto, corpus, chat=chat, files=settings.files,
                           chunking=settings.chunking, llm=settings.llm)
    assert chat.calls == 5 and again.llm_calls == 1 and again.cache_hits == 3  # only the changed page is asked


@pytest.mark.neo4j
def test_a_local_search_over_a_pdf_cites_the_page(tmp_path: Path, neo4j_driver, neo4j_settings, clean_graph) -> None:
    from graphrag_got.common.normalize import entity_uid, normalize_name
    from graphrag_got.graph.load import load_extraction
    from graphrag_got.ontology.model import Ontology
    from graphrag_got.search.local import local_search

    pages = ["Eddard Stark rules Winterfell and is the Warden of the North.",
             "Jon Snow swore his vows in the Guardia de la Noche at Castle Black.",
             "Daenerys Targaryen crosses the Narrow Sea with three dragons."]
    write(tmp_path, "chronicle.pdf", make_pdf(pages))
    docs = read_corpus(tmp_path, **SIZES)
    data = _extraction_of(docs).model_dump(mode="json")
    onto = Ontology.from_file(Path(__file__).resolve().parent.parent / "ontology" / "got.json")
    data["ontology"] = {"path": "ontology/got.json", "hash": onto.hash}
    page2 = next(c.id for c in docs[0].chunks if c.page == 2)
    people = [("Personaje", "Jon Snow"), ("Organizacion", "Guardia de la Noche")]
    data["entities"] = [{"uid": entity_uid(t, n), "key": normalize_name(n), "name": n, "type": t, "properties": {},
                         "chunk_ids": [page2]} for t, n in people]
    data["relations"] = [{"subject": "Jon Snow", "subject_key": "jon snow", "subject_type": "Personaje",
                          "relation": "ES_MIEMBRO_DE", "object": "Guardia de la Noche",
                          "object_key": "guardia de la noche", "object_type": "Organizacion", "attributes": {},
                          "symmetric": False, "chunk_ids": [page2]}]
    cfg = neo4j_settings.with_overrides(home=tmp_path / "home", out_dir=tmp_path / "out", local_retrieval="graph",
                                        local_context_order="retrieval")
    load_extraction(neo4j_driver, cfg.neo4j, data, onto, graph=cfg.graph, extract=cfg.extract,
                    embedding=cfg.embedding, code=cfg.code, llm=cfg.llm, files=cfg.files)
    res = local_search(neo4j_driver, cfg.neo4j, "¿A qué organización pertenece Jon Snow?", answer=False,
                       llm_anchors=False, ontology=onto, search=cfg.search, llm=cfg.llm, files=cfg.files,
                       embedding=cfg.embedding)
    assert res.sources, "the question's entity brought no source"
    assert {c.where() for c in res.sources if c.chunk_id == page2} == {"chronicle.pdf p. 2"}
    chunk = next(c for c in res.sources if c.kind == "chunk")
    assert chunk.context_line().endswith("(chronicle.pdf p. 2)")


def test_a_pdf_pypdf_repairs_is_read_without_its_warnings(tmp_path: Path, caplog) -> None:
    import logging
    import re

    data = make_pdf(PAGES)
    broken = re.sub(rb"startxref\s+\d+", b"startxref\n123", data)  # a wrong cross-reference offset
    assert broken != data
    caplog.set_level(logging.WARNING)
    doc = read_one(write(tmp_path, "repaired.pdf", broken))
    assert [c.page for c in doc.chunks] == [1, 2, 3, 4]
    assert not [r for r in caplog.records if r.name.startswith("pypdf")]
    caplog.set_level(logging.DEBUG)  # -vv shows them
    read_one(write(tmp_path, "repaired.pdf", broken))
    assert [r for r in caplog.records if r.name.startswith("pypdf")]


def test_docx_tables_give_merged_cells_once_equal_neighbours_twice_and_nested_tables(tmp_path: Path) -> None:
    import docx

    d = docx.Document()
    d.add_paragraph("The table below lists which stations are open.")
    table = d.add_table(rows=3, cols=3)
    values = [["Station", "Open", "Staffed"], ["North", "Yes", "Yes"], ["South", "No", "No"]]
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            table.cell(r, c).text = value
    table.cell(0, 1).merge(table.cell(0, 2)).text = "Open and staffed"  # across
    table.cell(1, 0).merge(table.cell(2, 0)).text = "Both"  # down
    inner = table.cell(2, 2).add_table(rows=1, cols=2)
    inner.cell(0, 0).text, inner.cell(0, 1).text = "winter", "closed"
    out = io.BytesIO()
    d.save(out)
    read = read_document(write(tmp_path, "stations.docx", out.getvalue()), "stations.docx")
    assert read.text.split("\n\n")[1:] == ["Station | Open and staffed", "Both | Yes | Yes",
                                           "No | No winter | closed"]


def test_html_in_another_encoding_is_decoded_by_its_meta_charset(tmp_path: Path) -> None:
    page = ('<!DOCTYPE html><html><head><meta charset="windows-1252"></head><body><h1>Señales</h1>'
            '<p>La estación del sur mide el cielo austral cada noche.</p></body></html>')
    doc = read_one(write(tmp_path, "sur.html", page.encode("cp1252")))
    assert doc.chunks[0].text == "Señales\n\nLa estación del sur mide el cielo austral cada noche."
    assert doc.chunks[0].location == "Señales"
