"""Citations: numbering per kind, the context block, and invented ids removed and counted."""

from __future__ import annotations

from graphrag_got.search.citations import Citation, context_block, number_sources, resolve_citations


def _sources() -> list[Citation]:
    return number_sources([
        Citation(id="", kind="fact", text="A USES B", evidence="A runs on top of B.", document_id="d1.md"),
        Citation(id="", kind="chunk", text="Some excerpt.", document_id="d2.md", heading="Setup", chunk_id="d2.md:ab"),
        Citation(id="", kind="fact", text="B PART_OF C"),
        Citation(id="", kind="report", text="Storage: volumes and pools", community_id="0-3"),
    ])


def test_ids_are_numbered_per_kind_in_context_order() -> None:
    assert [c.id for c in _sources()] == ["F1", "C1", "F2", "R1"]


def test_context_block_groups_by_kind_and_shows_evidence_and_where() -> None:
    block = context_block(_sources())
    assert block.index("FACTS:") < block.index("SOURCE EXCERPTS:") < block.index("COMMUNITY REPORTS:")
    assert '[F1] A USES B -- evidence: "A runs on top of B."' in block
    assert "[C1] Some excerpt. (d2.md > Setup)" in block


def test_resolve_keeps_known_ids_in_first_use_order_and_removes_invented_ones() -> None:
    res = resolve_citations("B is part of C [F2, F5]. A uses B [F1][F9]; see [C1; F2] and [R7].", _sources())
    assert [c.id for c in res.citations] == ["F2", "F1", "C1"]
    assert res.invented == ["F5", "F9", "R7"] and res.invented_count == 3
    assert "[F9]" not in res.answer and "[R7]" not in res.answer
    assert res.answer == "B is part of C [F2]. A uses B [F1]; see [C1, F2] and."


def test_id_lists_in_parentheses_are_citations_too() -> None:
    """The embedded model often writes "(F1, F2)": read like brackets, shown as brackets."""
    res = resolve_citations("A uses B (F1, C1). B is part of C (F2; F7). An aside (see below) stays.", _sources())
    assert [c.id for c in res.citations] == ["F1", "C1", "F2"] and res.invented == ["F7"]
    assert res.answer == "A uses B [F1, C1]. B is part of C [F2]. An aside (see below) stays."


def test_an_answer_without_citations_is_unchanged() -> None:
    res = resolve_citations("Nothing cited here.", _sources())
    assert res.answer == "Nothing cited here." and res.citations == [] and res.invented == []


def test_reference_line_names_document_heading_and_evidence() -> None:
    f1, c1 = _sources()[:2]
    assert f1.reference_line() == '[F1] A USES B\n    d1.md\n    "A runs on top of B."'
    assert c1.reference_line() == "[C1] Some excerpt.\n    d2.md > Setup"
