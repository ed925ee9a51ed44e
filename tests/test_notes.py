"""graphrag_got.ingest.notes: vault structure of Markdown notes (no database, no model)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from graphrag_got.ingest.chunking import read_corpus
from graphrag_got.extract.extraction import DocumentRecord, Extraction
from graphrag_got.ingest.notes import normalize_tag, note_key, note_records, notes_of_documents

ROOT = Path(__file__).resolve().parent.parent
VAULT = ROOT / "corpus" / "notes"


def one(text: str, doc_id: str = "a/b/note.md", metadata: dict | None = None, others: tuple[str, ...] = ()):
    docs = [(doc_id, text, metadata or {})] + [(o, "", {}) for o in others]
    return note_records(docs)[doc_id]


# ------------------------------------------------------------------------------------ title, date, folder


def test_title_prefers_front_matter_then_first_h1_then_stem() -> None:
    assert one("# Heading\nbody", metadata={"title": "From YAML"}).title == "From YAML"
    assert one("intro\n## Second\n# First H1 #\nbody").title == "First H1"
    assert one("no heading at all", doc_id="x/My Note.md").title == "My Note"
    assert one("```\n# not a heading\n```\ntext", doc_id="n.md").title == "n"


def test_date_is_kept_when_iso_and_dropped_otherwise() -> None:
    assert one("x", metadata={"date": "2024-03-01"}).date == "2024-03-01"
    assert one("x", metadata={"date": "2024-03-01T10:20:00"}).date == "2024-03-01T10:20:00"
    assert one("x", metadata={"date": "last tuesday"}).date is None
    assert one("x").date is None


def test_folder_and_folder_tags() -> None:
    rec = one("x", doc_id="Sys Admin/Storage/lvm.md")
    assert rec.folder == "Sys Admin/Storage"
    assert rec.folder_tags == ["sys-admin", "storage"]
    root = one("x", doc_id="top.md")
    assert root.folder == "" and root.folder_tags == []


def test_non_markdown_documents_get_no_record() -> None:
    recs = note_records([("a.txt", "#tag [[b]]", {}), ("b.md", "text", {})])
    assert set(recs) == {"b.md"}


# ------------------------------------------------------------------------------------ tags


def test_front_matter_tags_as_list_or_string_are_normalized() -> None:
    assert one("x", metadata={"tags": ["LVM", "#Storage/Thin"]}).tags == ["lvm", "storage/thin"]
    assert one("x", metadata={"tags": "raid, Mdadm  linux"}).tags == ["raid", "mdadm", "linux"]


def test_inline_tags_skip_code_urls_headings_and_numbers() -> None:
    text = (
        "---\ntitle: t\n---\n"
        "## Heading with #inheading\n"
        "Plain #Tag1 and nested #ops/Backup, (#paren) and #tag1 again.\n"
        "Not tags: `#inline_code`, https://example.com/page#anchor, issue #123, mail a#b.\n"
        "A link [text #linktag](notes.md#section) and [[Other#Section]].\n"
        "```bash\n# comment #fenced\n```\n"
        "~~~\n#tilde\n~~~\n"
    )
    tags = one(text, metadata={"title": "t"}).tags
    assert tags == ["inheading", "tag1", "ops/backup", "paren", "linktag"]
    for absent in ("inline_code", "anchor", "123", "b", "section", "fenced", "tilde", "comment"):
        assert absent not in tags


def test_front_matter_body_is_not_scanned() -> None:
    text = "---\ntitle: x\nnote: '#notatag [[NotALink]]'\n---\nbody #real"
    rec = one(text, metadata={"title": "x", "note": "#notatag [[NotALink]]"})
    assert rec.tags == ["real"] and rec.links == []


def test_normalize_tag_and_note_key() -> None:
    assert normalize_tag(" #Linux/LVM/ ") == "linux/lvm"
    assert note_key("./Dir/Note.MD") == "dir/note"
    assert note_key("/Top.md") == "top"


# ------------------------------------------------------------------------------------ links


def test_wikilink_forms_alias_heading_and_embed() -> None:
    rec = one("[[Target]] [[target|alias]] [[Target#Part]] ![[pic]] [[#Local heading]]",
              others=("z/Target.md",))
    by_kind = {(lk.kind, lk.target): lk for lk in rec.links}
    assert set(by_kind) == {("wikilink", "target"), ("embed", "pic")}  # one per kind and target
    first = by_kind[("wikilink", "target")]
    assert first.resolved == "z/Target.md" and first.text == "Target"
    assert by_kind[("embed", "pic")].resolved is None


def test_alias_and_heading_are_recorded() -> None:
    rec = one("see [[Other Note#Setup|the setup]]", others=("Other Note.md",))
    (link,) = rec.links
    assert (link.target, link.heading, link.text, link.resolved) == ("other note", "Setup", "the setup", "Other Note.md")


def test_wikilink_resolution_is_case_insensitive_and_shortest_path_wins() -> None:
    others = ("deep/inside/Common.md", "x/common.md", "y/common.md")
    (link,) = one("[[COMMON]]", doc_id="n.md", others=others).links
    assert link.resolved == "x/common.md"  # shortest path; x before y on the tie
    (by_path,) = one("[[inside/common]]", doc_id="n.md", others=others).links
    assert by_path.resolved == "deep/inside/Common.md"
    (exact,) = one("[[y/common.md]]", doc_id="n.md", others=others).links
    assert exact.resolved == "y/common.md"


def test_resolution_does_not_depend_on_document_order() -> None:
    docs = [("n.md", "[[dup]]", {}), ("b/dup.md", "", {}), ("a/dup.md", "", {})]
    first = note_records(docs)["n.md"].links[0].resolved
    second = note_records(list(reversed(docs)))["n.md"].links[0].resolved
    assert first == second == "a/dup.md"


def test_markdown_links_relative_encoded_and_external() -> None:
    text = ("[up](../a.md) [space](a%20b.md#h%C3%A9) [abs](/top/c.md) [web](https://x.org/a.md) "
            "[mail](mailto:me@x.org) [img](pic.png) [anchor](#here) [bare](sibling) [angle](<with space.md>)")
    rec = one(text, doc_id="dir/sub/n.md", others=("dir/a.md", "dir/sub/a b.md", "top/c.md", "dir/sub/sibling.md"))
    got = {(lk.target, lk.resolved, lk.heading) for lk in rec.links}
    assert got == {
        ("dir/a", "dir/a.md", None),
        ("dir/sub/a b", "dir/sub/a b.md", "hé"),
        ("top/c", "top/c.md", None),
        ("dir/sub/sibling", "dir/sub/sibling.md", None),
        ("dir/sub/with space", None, None),
    }
    assert all(lk.kind == "markdown" for lk in rec.links)


def test_dangling_links_are_kept_not_errors() -> None:
    rec = one("[[Nowhere]] and [x](../missing.md)", doc_id="d/n.md")
    assert {(lk.target, lk.resolved) for lk in rec.links} == {("nowhere", None), ("missing", None)}


def test_links_in_code_are_ignored() -> None:
    text = "`[[inline]]`\n```\n[[fenced]] [x](fenced.md)\n```\ntext [[real]] ``[[double]]``"
    assert [lk.target for lk in one(text).links] == ["real"]


# ------------------------------------------------------------------------------------ contract


def test_note_record_round_trips_through_the_extraction_file() -> None:
    rec = one("# T\n#tag [[Other]]", others=("Other.md",))
    doc = DocumentRecord(id="a/b/note.md", hash="h", note=rec)
    ext = Extraction.read({"format": "graphrag_got.extraction/2", "documents": [doc.model_dump(mode="json")]})
    assert ext.documents[0].note == rec
    old = Extraction.read({"format": "graphrag_got.extraction/2", "documents": [{"id": "x.txt", "hash": "h"}]})
    assert old.documents[0].note is None


# ------------------------------------------------------------------------------------ the example vault


@pytest.fixture(scope="module")
def vault():  # type: ignore[no-untyped-def]
    docs = read_corpus(VAULT, min_chars=40, max_chars=1500)
    return docs, notes_of_documents(docs)


def test_example_vault_parses_with_most_links_resolved(vault) -> None:  # type: ignore[no-untyped-def]
    docs, notes = vault
    assert len(notes) >= 30 and len(notes) == len(docs)
    assert any("/" in d for d in notes) and any(n.folder.count("/") >= 1 for n in notes.values())
    links = [lk for n in notes.values() for lk in n.links]
    resolved = [lk for lk in links if lk.resolved is not None]
    assert len(links) >= 100 and len(resolved) / len(links) > 0.85
    assert {lk.kind for lk in links} == {"wikilink", "embed", "markdown"}
    assert any(lk.resolved is None for lk in links)  # some notes do not exist yet
    assert all(lk.resolved in notes for lk in resolved)
    with_front_matter = [d for d in docs if d.document.metadata.get("title")]
    assert len(notes) * 0.7 < len(with_front_matter) < len(notes)  # most, not all
    assert sum(bool(n.tags) for n in notes.values()) >= 30


def test_example_vault_tool_notes_never_name_the_field() -> None:
    """Later retrieval tests ask about network monitoring: these notes must be found by meaning."""
    import re

    words = re.compile(r"\b(monitorización|monitorizacion|monitoring|monitor|red|redes|network|networking)\b", re.I)
    notes = sorted((VAULT / "observabilidad").rglob("*.md"))
    assert len(notes) >= 6
    for path in notes:
        assert not words.search(path.read_text(encoding="utf-8")), path


# ------------------------------------------------------------------------------------ the scan cache


def _copy_vault(tmp_path: Path) -> Path:
    dst = tmp_path / "vault"
    for path in VAULT.rglob("*.md"):
        target = dst / path.relative_to(VAULT)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(path.read_bytes())
    return dst


def test_the_scan_cache_reads_only_changed_notes_and_gives_the_same_records(tmp_path, monkeypatch) -> None:
    from graphrag_got.ingest import notes as notes_module

    vault = _copy_vault(tmp_path)
    cache_file = tmp_path / "cache" / "scans.json"
    docs = read_corpus(vault, min_chars=40, max_chars=1500)
    first = notes_of_documents(docs, notes_module.ScanCache(cache_file))
    assert first == notes_of_documents(docs) and cache_file.is_file()

    edited = sorted(vault.rglob("*.md"))[3]
    edited.write_text(edited.read_text(encoding="utf-8") + "\nMore: [[A brand new note]] #newtag\n", encoding="utf-8")
    docs = read_corpus(vault, min_chars=40, max_chars=1500)
    read: list[str] = []
    real_read = notes_module.read_text
    monkeypatch.setattr(notes_module, "read_text", lambda path, shown: read.append(shown) or real_read(path, shown))
    cache = notes_module.ScanCache(cache_file)
    second = notes_of_documents(docs, cache)
    assert read == [str(edited)]  # only the edited note is read and scanned again
    assert cache.hits == len(docs) - 1
    monkeypatch.setattr(notes_module, "read_text", real_read)
    assert second == notes_of_documents(docs)  # the same records as scanning everything
    doc_id = next(d.document.id for d in docs if d.document.path == str(edited))
    assert "newtag" in second[doc_id].tags and second[doc_id] != first[doc_id]


def test_a_damaged_or_foreign_scan_cache_is_not_used(tmp_path, caplog) -> None:
    from graphrag_got.ingest import notes as notes_module

    vault = _copy_vault(tmp_path)
    docs = read_corpus(vault, min_chars=40, max_chars=1500)
    expected = notes_of_documents(docs)
    cache_file = tmp_path / "scans.json"
    cache_file.write_text("{not json", encoding="utf-8")
    with caplog.at_level("WARNING"):
        cache = notes_module.ScanCache(cache_file)
    assert cache.scans == {} and "unreadable" in caplog.text
    assert notes_of_documents(docs, cache) == expected
    data = json.loads(cache_file.read_text(encoding="utf-8"))
    data["scanner"] = "another version"
    some = next(iter(data["scans"]))
    data["scans"][some] = [None, ["wrong"], [], []]
    cache_file.write_text(json.dumps(data), encoding="utf-8")
    assert notes_module.ScanCache(cache_file).scans == {}  # made by other code: not used
    data["scanner"] = notes_module._SCANNER
    data["scans"][some] = "not a scan"
    cache_file.write_text(json.dumps(data), encoding="utf-8")
    cache = notes_module.ScanCache(cache_file)
    assert notes_of_documents(docs, cache) == expected and cache.hits == len(docs) - 1
