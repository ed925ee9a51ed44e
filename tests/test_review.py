"""`graphrag-got review`: the pages showing, passage by passage, what an extraction kept and refused; the
same pages served at /review, and saving a corrected passage from them (POST /examples). No Neo4j, no model."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from graphrag_got.config import Settings
from graphrag_got.extract.extraction import (ChunkRecord, DocumentRecord, EntityRecord, Evidence, Extraction, Reason,
                                             RelationRecord, Rejection)
from graphrag_got.ontology.example_store import read_store, store_path
from graphrag_got.ontology.model import Ontology
from graphrag_got.service import create_app
from graphrag_got.teach.review import build_review, page_names
from graphrag_got.teach.review_render import file_links, render_document, render_index, write_review

ROOT = Path(__file__).resolve().parent.parent
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
ONTOLOGY = ROOT / "ontology" / "got.json"
ONTO = Ontology.from_file(ONTOLOGY, stored_examples=False)
XSS = "<script>alert(1)</script>"

# sentence 1 names Jon and Daenerys; sentence 2 Jon (by an alias) and the Watch; sentence 3 Casa Stark
TEXT = (f"Jon Snow swore loyalty to Daenerys Targaryen. Lord Snow led the Guardia de la Noche {XSS}. "
        "Later the Casa Stark ruled again.")
DOC = "notes/north <1>.md"


def _entity(name: str, type_: str, *aliases: str, chunks: tuple[str, ...] = ("c1",)) -> EntityRecord:
    key = name.lower()
    return EntityRecord(uid=f"{type_}|{key}", key=key, name=name, type=type_, chunk_ids=list(chunks),
                        aliases=list(aliases))


def _fact(subject: EntityRecord, relation: str, obj: EntityRecord, **kw) -> RelationRecord:  # type: ignore[no-untyped-def]
    return RelationRecord(subject=subject.name, subject_key=subject.key, subject_type=subject.type, relation=relation,
                          object=obj.name, object_key=obj.key, object_type=obj.type, chunk_ids=["c1"], **kw)


@pytest.fixture()
def extraction() -> Extraction:
    jon = _entity("Jon Snow", "Personaje", "Lord Snow")
    dany = _entity("Daenerys Targaryen", "Personaje")
    watch = _entity("Guardia de la Noche", "Organizacion")
    house = _entity("Casa Stark", "CasaNoble")
    stark = _entity("Stark", "Personaje")  # inside "Casa Stark": the longer mention wins
    second = TEXT.index("Lord Snow")
    end = TEXT.index("Later")
    facts = [
        _fact(jon, "LEAL_A", dany),  # no evidence: the first sentence naming both ends
        _fact(jon, "ES_MIEMBRO_DE", watch, attributes={"momento": "later"},
              evidence=[Evidence(chunk_id="c1", start=second, end=end - 1, text=TEXT[second:end - 1])]),
        _fact(dany, "PERTENECE_A", house),  # never in one sentence: the passage
    ]
    refused = [
        Rejection(kind="relation", reason=Reason.RANGE_VIOLATION, message=f"GOBIERNA takes a Region {XSS}",
                  chunk_id="c1", document_id=DOC, relation="GOBIERNA", subject="Jon Snow", subject_type="Personaje",
                  object="Daenerys Targaryen", object_type="Personaje", allowed=["Region"]),
        Rejection(kind="entity", reason=Reason.UNKNOWN_CLASS, message="class Dragon is not declared", chunk_id="c1",
                  document_id=DOC, entity_name="Drogon", entity_type="Dragon"),
        Rejection(kind="relation", reason=Reason.NO_CUE, message="no cue", document_id=DOC, relation="TRAICIONA_A",
                  subject="Jon Snow", object="Casa Stark"),  # tied to no passage
    ]
    ext = Extraction(documents=[DocumentRecord(id=DOC, path=DOC, hash="h")],
                     chunks=[ChunkRecord(id="c1", document_id=DOC, index=0, start=0, end=len(TEXT), hash="x",
                                         text=TEXT)],
                     entities=[jon, dany, watch, house, stark], relations=facts, rejections=refused)
    ext.recount()
    return ext


class Page(HTMLParser):
    """What a page shows: marked names (text, class attribute, title), tags, and the text of elements by class."""

    def __init__(self, text: str):
        super().__init__()
        self.marks: list[tuple[str, dict[str, str]]] = []
        self.tags: list[str] = []
        self.by_class: dict[str, list[str]] = {}
        self._open: list[tuple[str, dict[str, str]]] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append(tag)
        if tag not in {"br", "meta", "input", "link"}:
            self._open.append((tag, {k: v or "" for k, v in attrs}))
            for cls in dict(attrs).get("class", "").split() if dict(attrs).get("class") else ():
                self.by_class.setdefault(cls, []).append("")
            if tag == "mark":
                self.marks.append(("", {k: v or "" for k, v in attrs}))

    def handle_endtag(self, tag):  # type: ignore[no-untyped-def]
        if self._open and self._open[-1][0] == tag:
            self._open.pop()

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        for tag, attrs in self._open:
            for cls in attrs.get("class", "").split():
                self.by_class[cls][-1] += data
        if self._open and self._open[-1][0] == "mark":
            text, attrs = self.marks[-1]
            self.marks[-1] = (text + data, attrs)


def _document_page(ext: Extraction) -> str:
    book = build_review(ext, ONTO)
    return render_document(book, book.documents[0], file_links(book))


# ------------------------------------------------------------------------------ the page's data


def test_names_are_highlighted_with_their_class_longest_first(extraction: Extraction) -> None:
    chunk = build_review(extraction, ONTO).documents[0].chunks[0]
    placed = [(h.text, h.class_name, h.entity) for h in chunk.highlights]
    assert placed == [("Jon Snow", "Personaje", "Jon Snow"), ("Daenerys Targaryen", "Personaje", "Daenerys Targaryen"),
                      ("Lord Snow", "Personaje", "Jon Snow"), ("Guardia de la Noche", "Organizacion",
                                                               "Guardia de la Noche"),
                      ("Casa Stark", "CasaNoble", "Casa Stark")]
    assert all(TEXT[h.start:h.end] == h.text for h in chunk.highlights)
    assert [e.name for e in chunk.unplaced] == ["Stark"]  # only inside the longer name

    marks = Page(_document_page(extraction)).marks
    assert ("Jon Snow", "Personaje") in [(t, a["data-class"]) for t, a in marks]
    lord = next(a for t, a in marks if t == "Lord Snow")
    assert lord["title"] == "Personaje: Jon Snow" and lord["class"].startswith("ent k")
    colours = {a["data-class"]: a["class"] for _, a in marks}
    assert colours["Personaje"] != colours["Organizacion"] != colours["CasaNoble"]


def test_facts_sit_beside_the_sentence_that_states_them(extraction: Extraction) -> None:
    chunk = build_review(extraction, ONTO).documents[0].chunks[0]
    groups = chunk.sentence_groups()
    shown = [(g.source, "".join(s.text for s in g.segments), [f.relation for f in g.facts]) for g in groups]
    assert shown == [
        ("sentence", "Jon Snow swore loyalty to Daenerys Targaryen.", ["LEAL_A"]),
        ("evidence", f"Lord Snow led the Guardia de la Noche {XSS}.", ["ES_MIEMBRO_DE"]),
        ("passage", "", ["PERTENECE_A"]),
    ]
    page = Page(_document_page(extraction))
    assert page.by_class["sentence"][:2] == ["Jon Snow swore loyalty to Daenerys Targaryen.",
                                             f"Lord Snow led the Guardia de la Noche {XSS}."]
    facts = page.by_class["fact"]
    assert facts[0] == "Jon Snow -LEAL_A-> Daenerys Targaryen"
    assert facts[1] == "Jon Snow -ES_MIEMBRO_DE-> Guardia de la Noche momento: later"
    assert "passage (no single sentence names both ends)" in page.by_class["sentence"][2]


def test_refusals_show_their_reason_code_and_message(extraction: Extraction) -> None:
    book = build_review(extraction, ONTO)
    doc = book.documents[0]
    refusals = doc.chunks[0].refusals
    assert [(r.reason, r.label) for r in refusals] == [
        ("range_violation", "Jon Snow (Personaje) -GOBIERNA-> Daenerys Targaryen (Personaje)"),
        ("unknown_class", "Drogon (Dragon)")]
    assert [r.reason for r in doc.loose_refusals] == ["no_cue"]
    assert (doc.counts.entities, doc.counts.facts, doc.counts.refusals) == (5, 3, 3)
    assert doc.counts.by_reason == {"no_cue": 1, "range_violation": 1, "unknown_class": 1}

    page = Page(render_document(book, doc, file_links(book)))
    assert page.by_class["reason"] == ["range_violation", "unknown_class", "no_cue"]
    assert any("GOBIERNA takes a Region" in m for m in page.by_class["message"])
    # the filters, with counts
    text = render_document(book, doc, file_links(book))
    assert '<option value="range_violation">range_violation (1)</option>' in text
    assert '<option value="LEAL_A">LEAL_A (1)</option>' in text
    assert 'data-reasons="|range_violation|unknown_class|"' in text


def test_the_index_lists_documents_with_counts_and_links(extraction: Extraction) -> None:
    book = build_review(extraction, ONTO)
    page = render_index(book, file_links(book))
    assert '<a href="notes_north_1_.md.html">notes/north &lt;1&gt;.md</a>' in page
    assert '<td class="n">5</td><td class="n">3</td><td class="n">3</td>' in page
    assert "<script" not in page


def test_untrusted_text_is_escaped(extraction: Extraction) -> None:
    page = _document_page(extraction)
    assert XSS not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    parsed = Page(page)
    assert parsed.tags.count("script") == 1  # the page's own script, inline (a file on disk), and no other
    assert "http://" not in page and "https://" not in page  # nothing fetched from elsewhere


def test_page_names_are_safe_and_unique() -> None:
    names = page_names(["a/b.md", "a b.md", "index", "ok.txt", "../x"])
    assert names["ok.txt"] == "ok.txt.html" and names["../x"] == "x.html"
    assert names["a/b.md"] != names["a b.md"] and all(n.startswith("a_b.md-") for n in (names["a/b.md"], names["a b.md"]))
    assert names["index"].startswith("index-") and len(set(names.values())) == 5


def test_the_gold_extraction_reviews_every_passage(tmp_path: Path) -> None:
    book = build_review(GOLD, ONTO)
    [doc] = book.documents
    assert len(doc.chunks) == 16 and doc.counts.entities == 65
    assert all(f.sentence_source in {"sentence", "passage"} for c in doc.chunks for f in c.facts)
    written = write_review(book, tmp_path / "review")
    assert [p.name for p in written] == ["index.html", "got.txt.html"]
    assert "Eddard Stark" in written[1].read_text(encoding="utf-8")


# ------------------------------------------------------------------------------ the command


def _cli(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, GRAPHRAG_HOME=str(tmp_path / "home"), GRAPHRAG_OUT=str(tmp_path / "out"),
               GRAPHRAG_ONTOLOGY=str(ONTOLOGY))
    return subprocess.run([sys.executable, "-m", "graphrag_got.cli", "review", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_command_writes_the_pages(tmp_path: Path, extraction: Extraction) -> None:
    (tmp_path / "out").mkdir()
    extraction.write(tmp_path / "out" / "extraction.json")
    run = _cli([], tmp_path)  # the out dir's extraction, pages into <out>/review
    assert run.returncode == 0, run.stderr
    index, page = tmp_path / "out" / "review" / "index.html", tmp_path / "out" / "review" / "notes_north_1_.md.html"
    assert index.is_file() and page.is_file()
    assert f"wrote {index}" in run.stdout and "5 kept entities, 3 kept facts, 3 refusals" in run.stdout
    assert "range_violation" in page.read_text(encoding="utf-8")

    other = _cli([str(GOLD), "--out-dir", str(tmp_path / "elsewhere")], tmp_path)
    assert other.returncode == 0, other.stderr
    assert (tmp_path / "elsewhere" / "review" / "got.txt.html").is_file()


def test_the_command_fails_clearly_on_a_missing_or_invalid_file(tmp_path: Path) -> None:
    missing = _cli([str(tmp_path / "nope.json")], tmp_path)
    assert missing.returncode == 1
    assert "nope.json: extraction file not found" in missing.stderr and "Traceback" not in missing.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    invalid = _cli([str(bad)], tmp_path)
    assert invalid.returncode == 1 and "not valid JSON" in invalid.stderr and "Traceback" not in invalid.stderr
    assert not (tmp_path / "out" / "review").exists()


def test_serve_refuses_examples_on_a_remote_host(tmp_path: Path) -> None:
    env = dict(os.environ, GRAPHRAG_HOME=str(tmp_path / "home"), GRAPHRAG_OUT=str(tmp_path / "out"))
    run = subprocess.run([sys.executable, "-m", "graphrag_got.cli", "serve", "--allow-examples", "--host", "0.0.0.0",
                          "--port", "0"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and "loopback only" in run.stderr and "--allow-examples-remote" in run.stderr


# ------------------------------------------------------------------------------ the service


@pytest.fixture()
def served(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Settings whose out dir holds the gold extraction, and a copy of the ontology (its examples file is ours)."""
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(GOLD, out / "extraction.json")
    onto = tmp_path / "ontology" / "got.json"
    onto.parent.mkdir()
    shutil.copy(ONTOLOGY, onto)
    settings = Settings(home=tmp_path / "home", out_dir=out, ontology_path=onto)
    before = sorted(p.name for p in ONTOLOGY.parent.iterdir())
    yield settings
    assert sorted(p.name for p in ONTOLOGY.parent.iterdir()) == before  # the repository's ontology folder untouched


def _client(settings: Settings, **kw) -> TestClient:  # type: ignore[no-untyped-def]
    return TestClient(create_app(settings, **kw), base_url="http://127.0.0.1")


def _first_chunk() -> dict:  # type: ignore[type-arg]
    return json.loads(GOLD.read_text(encoding="utf-8"))["chunks"][0]


def test_review_pages_are_served(served: Settings) -> None:
    with _client(served) as client:
        index = client.get("/review")
        assert index.status_code == 200 and 'href="/review/got.txt.html"' in index.text
        page = client.get("/review/got.txt.html")
        assert page.status_code == 200 and "Eddard Stark" in page.text
        assert client.get("/review/got.txt").status_code == 200  # by document id too
        # the style and script are linked (the service's CSP runs no inline code), not inlined
        assert '<script src="/review-assets/review.js"></script>' in page.text and "<style>" not in page.text
        assert "review-data" not in page.text and "edit as example" not in page.text  # saving is off
        js = client.get("/review-assets/review.js")
        assert js.status_code == 200 and js.headers["content-type"].startswith("text/javascript")
        assert "applyFilters" in js.text
        assert client.get("/review-assets/review.css").headers["content-type"].startswith("text/css")
        missing = client.get("/review/no-such-document")
        assert missing.status_code == 404 and "no document" in missing.text


def test_review_answers_404_without_an_extraction(served: Settings) -> None:
    (served.files.out_dir / "extraction.json").unlink()
    with _client(served) as client:
        for url in ("/review", "/review/got.txt"):
            got = client.get(url)
            assert got.status_code == 404 and "no extraction file" in got.text and "graphrag-got extract" in got.text


def test_saving_an_example_needs_the_flag(served: Settings) -> None:
    body = {"chunk_id": _first_chunk()["id"], "entities": [], "relations": []}
    with _client(served) as client:
        got = client.post("/examples", json=body)
    assert got.status_code == 403
    assert "serve --allow-examples" in got.json()["error"]["message"]
    assert not store_path(served.files.ontology_path).exists()


def test_a_wrong_example_is_refused_with_located_problems(served: Settings) -> None:
    chunk = _first_chunk()
    body = {"chunk_id": chunk["id"],
            "entities": [{"class_name": "Personaje", "name": "Eddard Stark", "properties": {}},
                         {"class_name": "Personaje", "name": "Tyrion Lannister", "properties": {}}],
            "relations": [{"relation": "LEAL_A", "subject": "Eddard Stark", "object": "Tyrion Lannister",
                           "attributes": {}}]}
    with _client(served, allow_examples=True) as client:
        got = client.post("/examples", json=body)
    assert got.status_code == 422, got.text
    error = got.json()["error"]
    assert error["code"] == "invalid_example"
    problems = error["detail"]["problems"]
    assert any("Tyrion Lannister" in p["problem"] and "entities[1]" in p["where"] for p in problems), problems
    assert not store_path(served.files.ontology_path).exists()


def test_a_corrected_passage_is_stored(served: Settings) -> None:
    chunk = _first_chunk()
    body = {"chunk_id": chunk["id"],
            "entities": [{"class_name": "Personaje", "name": "Eddard Stark", "properties": {}},
                         {"class_name": "CasaNoble", "name": "Casa Stark", "properties": {}}],
            "relations": [{"relation": "PERTENECE_A", "subject": "Eddard Stark", "object": "Casa Stark",
                           "attributes": {}}]}
    with _client(served, allow_examples=True) as client:
        page = client.get("/review/got.txt")
        assert 'id="review-data"' in page.text and "edit as example" in page.text
        assert client.post("/examples", json=body, headers={"origin": "http://evil.example"}).status_code == 403
        got = client.post("/examples", json=body)
        assert got.status_code == 200, got.text
        listed = client.get("/examples").json()
    stored = read_store(store_path(served.files.ontology_path))
    [example] = stored.examples
    assert got.json()["id"] == example.id and example.chunk_id == chunk["id"] and example.document == "got.txt"
    assert example.text == chunk["text"] and [e.name for e in example.entities] == ["Eddard Stark", "Casa Stark"]
    assert [e["id"] for e in listed["examples"]] == [example.id]


def test_a_passage_names_its_page(extraction: Extraction) -> None:
    extraction.chunks[0] = extraction.chunks[0].model_copy(update={"page": 7})
    book = build_review(extraction, ONTO)
    assert book.documents[0].chunks[0].location == "p. 7"
    assert "Passage 1 · p. 7</h2>" in _document_page(extraction)
