"""The review page in headless Chromium (the system browser, as in tests/test_service_browser.py): the filters
hide passages, and with `serve --allow-examples` a passage is edited (a fact removed) and saved as an example,
which lands in the examples file beside (a copy of) the ontology. A wrong edit shows its located problems.
Skipped without Chromium and playwright, failed under GRAPHRAG_REQUIRE_BROWSER=1. No Neo4j, no model."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.ontology.example_store import read_store, store_path
from graphrag_got.service import create_app
from graphrag_got.service.background import serve_in_thread
from graphrag_got.teach.review import build_review
from graphrag_got.teach.review_render import write_review
from test_service_browser import page  # noqa: F401 (the browser fixture, used by name)

ROOT = Path(__file__).resolve().parent.parent
GOLD = ROOT / "tests" / "data" / "got_extraction.json"
ONTOLOGY = ROOT / "ontology" / "got.json"


@pytest.fixture()
def settings(tmp_path: Path) -> Settings:
    out = tmp_path / "out"
    out.mkdir()
    shutil.copy(GOLD, out / "extraction.json")
    onto = tmp_path / "ontology" / "got.json"
    onto.parent.mkdir()
    shutil.copy(ONTOLOGY, onto)
    return Settings(home=tmp_path / "home", out_dir=out, ontology_path=onto)


def _first_chunk() -> dict:  # type: ignore[type-arg]
    data = json.loads(GOLD.read_text(encoding="utf-8"))
    chunk = data["chunks"][0]
    return {"chunk": chunk, "facts": sum(chunk["id"] in r["chunk_ids"] for r in data["relations"])}


def test_remove_a_fact_and_save_the_passage_as_an_example(page, settings: Settings) -> None:  # type: ignore[no-untyped-def]  # noqa: F811 (the imported fixture)
    pg, errors = page
    first = _first_chunk()
    with serve_in_thread(create_app(settings, allow_examples=True)) as url:
        pg.goto(url + "/review")
        pg.click("#documents a")
        pg.wait_for_selector("section.chunk mark.ent")
        sections = pg.eval_on_selector_all("section.chunk", "els => els.length")
        assert sections == 16

        # the filters: a class only some passages name hides the others, and says how many are shown
        pg.select_option("#filter-class", "Evento")
        shown = pg.eval_on_selector_all("section.chunk:not(.hidden)", "els => els.length")
        assert 0 < shown < 16 and pg.text_content("#shown") == f"{shown} of 16 passages shown"
        pg.select_option("#filter-class", "")

        chunk = pg.locator("section.chunk").first
        assert chunk.get_attribute("data-chunk") == first["chunk"]["id"]
        chunk.locator(".edit-toggle").click()
        editor = chunk.locator(".editor")
        editor.locator("input.fact-keep").first.wait_for()
        assert editor.locator("input.fact-keep").count() == first["facts"]
        editor.locator("input.fact-keep").first.uncheck()
        assert "removed" in (editor.locator("tr[data-fact]").first.get_attribute("class") or "")
        editor.locator(".save-example").click()
        pg.wait_for_selector("section.chunk >> nth=0 >> .editor .status.ok", timeout=15_000)
        assert "saved as example" in editor.locator(".status").text_content()

    [example] = read_store(store_path(settings.files.ontology_path)).examples
    assert example.chunk_id == first["chunk"]["id"] and example.text == first["chunk"]["text"]
    assert len(example.relations) == first["facts"] - 1
    assert not errors, errors


def test_a_wrong_edit_shows_its_problems_next_to_the_passage(page, settings: Settings) -> None:  # type: ignore[no-untyped-def]  # noqa: F811 (the imported fixture)
    pg, errors = page
    with serve_in_thread(create_app(settings, allow_examples=True)) as url:
        pg.goto(url + "/review/got.txt")
        chunk = pg.locator("section.chunk").first
        chunk.locator(".edit-toggle").click()
        editor = chunk.locator(".editor")
        editor.locator("input.entity-name").first.fill("Somebody Else")
        editor.locator("input.entity-name").first.dispatch_event("change")
        editor.locator(".save-example").click()
        pg.wait_for_selector("section.chunk >> nth=0 >> .editor .status.error", timeout=15_000)
        problems = editor.locator("ul.problems li").all_text_contents()
        assert any("'Somebody Else' does not occur" in p and "$.examples[0].entities[0].name" in p for p in problems)
    assert not store_path(settings.files.ontology_path).exists()
    assert all("422" in e for e in errors), errors  # the refused POST is logged by the browser, as expected


def test_the_written_page_filters_from_disk(page, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]  # noqa: F811 (the imported fixture)
    """The file `graphrag-got review` writes runs its inline script under its own CSP, with nothing fetched."""
    pg, errors = page
    index, doc = write_review(build_review(GOLD), tmp_path / "review")
    pg.goto(index.as_uri())
    pg.click("#documents a")
    pg.wait_for_selector("section.chunk")
    assert pg.url == doc.as_uri()
    assert pg.locator(".edit-toggle").count() == 0  # no editing in a file
    pg.check("#filter-refused")
    assert pg.text_content("#shown") == "0 of 16 passages shown"  # the gold file has no refusals
    pg.uncheck("#filter-refused")
    pg.select_option("#filter-relation", "CONTRATA")
    shown = pg.eval_on_selector_all("section.chunk:not(.hidden)", "els => els.length")
    assert 0 < shown < 16
    dimmed = pg.eval_on_selector_all("section.chunk:not(.hidden) li.fact.dim", "els => els.length")
    kept = pg.eval_on_selector_all("section.chunk:not(.hidden) li.fact:not(.dim)", "els => els.map(e => e.dataset.relation)")
    assert dimmed > 0 and set(kept) == {"CONTRATA"}
    assert not errors, errors
