"""The discarded-relations report: groups, counts, suggestions, escaping, files and the CLI command."""

from __future__ import annotations

import argparse
import csv
import io
import hashlib
import json
from pathlib import Path

import pytest

from graphrag_got.config import Settings
from graphrag_got.errors import ExtractionFileError
from graphrag_got.ontology.model import Ontology
from graphrag_got.report.discarded import write_report
from graphrag_got.report.discarded_build import build_report
from graphrag_got.report.discarded_model import make_excerpt
from graphrag_got.report.discarded_render import CSV_COLUMNS, to_csv, to_html, to_markdown

ROOT = Path(__file__).resolve().parents[1]
ONTOLOGY = ROOT / "ontology" / "got.json"
XSS = "<script>alert(1)</script>"


# Which end of the triple the validator blames for each relation reason (``end`` of a rejection).
_BLAMED_END = {"domain_violation": "subject", "subject_type_mismatch": "subject", "subject_not_extracted": "subject",
               "range_violation": "object", "object_type_mismatch": "object", "object_not_extracted": "object",
               "self_relation": "object"}


def _rel(reason, subject, stype, relation, obj, otype, chunk="d.txt:c1", attributes=None, allowed=()):
    """A relation rejection as graphrag_got.extract.validate writes it (format /2): the raw triple in ``item``
    and the structured fields (the triple, the blamed end, what the ontology allows there)."""
    item = {"subject": subject, "subject_type": stype, "relation": relation, "object": obj, "object_type": otype}
    if attributes:
        item["attributes"] = dict(attributes)
    rec = {
        "kind": "relation", "reason": reason, "message": f"{relation} refused ({reason})", "item": item,
        "chunk_id": chunk, "document_id": "d.txt", "relation": relation, "subject": subject, "subject_type": stype,
        "object": obj, "object_type": otype, "allowed": list(allowed),
    }
    end = _BLAMED_END.get(reason)
    if end:
        rec.update(end=end, end_name=subject if end == "subject" else obj, end_type=stype if end == "subject" else otype)
    return rec


def _enum(name, value, allowed=("masculino", "femenino")):
    return {"kind": "property", "reason": "invalid_enum_value", "message": f"genero {value!r} not allowed",
            "item": {"name": name, "type": "Personaje", "genero": value}, "chunk_id": "d.txt:c1",
            "document_id": "d.txt", "entity_name": name, "entity_type": "Personaje", "property": "genero",
            "value": value, "allowed": list(allowed)}


def _chunk(cid, index, text):
    return {"id": cid, "document_id": "d.txt", "index": index, "start": 0, "end": len(text),
            "hash": hashlib.sha256(text.encode("utf-8")).hexdigest(), "text": text, "heading": None}


@pytest.fixture()
def extraction() -> dict:
    text1 = ("Jon Snow juró sus votos y desde entonces gobierna con la Guardia de la Noche en el Muro. "
             "Stannis Baratheon llegó después.")
    text2 = "Daenerys Targaryen manda sobre los Inmaculados. " + "Relleno sin nombres. " * 40 + "Fin."
    return {
        "format": "graphrag_got.extraction/2",
        "ontology": {"path": str(ONTOLOGY), "hash": "x"},
        "documents": [{"id": "d.txt", "path": "d.txt", "hash": "h", "metadata": {}}],
        "chunks": [_chunk("d.txt:c1", 0, text1), _chunk("d.txt:c2", 1, text2)],
        "entities": [
            {"uid": "Personaje|jon snow", "key": "jon snow", "name": "Jon Snow", "type": "Personaje",
             "properties": {}, "chunk_ids": ["d.txt:c1"]},
        ],
        "relations": [
            {"subject": "Jon Snow", "subject_key": "jon snow", "subject_type": "Personaje", "relation": "ES_MIEMBRO_DE",
             "object": "Guardia de la Noche", "object_key": "guardia de la noche", "object_type": "Organizacion",
             "attributes": {}, "symmetric": False, "chunk_ids": ["d.txt:c1"]},
        ],
        "rejections": [
            _rel("range_violation", "Jon Snow", "Personaje", "GOBIERNA", "Guardia de la Noche", "Organizacion",
                 allowed=["Region"]),
            _rel("range_violation", "Stannis Baratheon", "Personaje", "GOBIERNA", "Guardia de la Noche", "Organizacion",
                 allowed=["Region"]),
            _rel("range_violation", "Daenerys Targaryen", "Personaje", "GOBIERNA", "Inmaculados", "Organizacion",
                 chunk="d.txt:c2", allowed=["Region"]),
            _rel("unknown_relation", "Jon Snow", "Personaje", "CASADA_CON", "Ygritte", "Personaje"),
            _rel("unknown_relation", "Jon Snow", "Personaje", "CASADA_CON", "Ygritte", "Personaje"),
            _rel("object_not_extracted", XSS, "Personaje", "LEAL_A", "Robb Stark", "Personaje"),
            {"reason": "malformed", "message": "not an object", "item": {"value": "garbage"}, "chunk_id": "d.txt:c1",
             "document_id": "d.txt", "kind": "relation"},
            _enum("Jon Snow", "hombre"),
            _enum("Stannis Baratheon", "varon"),
        ],
        "failed_chunks": [
            {"chunk_id": "d.txt:c2", "document_id": "d.txt", "error": "invalid JSON after retry",
             "raw_responses": ["{not json", "<b>still</b> not json"]},
        ],
        "counts": {"chunks": 2, "entities": 1, "relations": 1, "rejected_relations": 7, "rejected_properties": 2},
    }


def _as_format_1(ext: dict) -> dict:
    """The same extraction as a format /1 file: ``momento`` on relations, two rejection lists whose
    records carry only reason, message, raw item and chunk (the structured fields did not exist)."""
    def legacy(i: int, rec: dict) -> dict:
        item = dict(rec["item"])
        if rec["kind"] == "relation":
            item["momento"] = item.pop("attributes", {}).get("momento")
        elif i % 2:  # old files nested entity properties too
            item = {"name": item["name"], "type": item["type"],
                    "properties": {k: v for k, v in item.items() if k not in ("name", "type")}}
        if set(item) == {"value"}:
            item = item["value"]
        return {"kind": rec["kind"], "reason": rec["reason"], "message": rec["message"], "item": item,
                "chunk_id": rec["chunk_id"], "document_id": rec["document_id"]}

    old = {k: v for k, v in ext.items() if k not in ("rejections", "counts")}
    old["format"] = "graphrag_got.extraction/1"
    old["relations"] = [{**{k: v for k, v in r.items() if k != "attributes"}, "momento": r["attributes"].get("momento")}
                        for r in ext["relations"]]
    records = list(enumerate(ext["rejections"]))
    old["relaciones_descartadas"] = [legacy(i, r) for i, r in records if r["kind"] == "relation"]
    old["entidades_descartadas"] = [legacy(i, r) for i, r in records if r["kind"] != "relation"]
    old["counts"] = {"chunks": len(ext["chunks"]), "entities": len(ext["entities"]),
                     "relations": len(ext["relations"]), "rejected_relations": len(old["relaciones_descartadas"]),
                     "by_reason": {}}
    return old


@pytest.fixture()
def onto() -> Ontology:
    return Ontology.from_file(ONTOLOGY)


def _group(report, relation, reason):
    return next(g for g in report.relation_groups if g.relation == relation and g.reason == reason)


def test_totals_and_reason_counts(extraction, onto):
    rep = build_report(extraction, onto)
    assert rep.totals.kept_relations == 1
    assert rep.totals.refused_relations == 7
    assert rep.totals.refusal_rate == pytest.approx(7 / 8, abs=1e-4)
    assert rep.totals.refused_entities == 2
    assert rep.totals.failed_chunks == 1
    assert rep.relation_reasons == {"range_violation": 3, "unknown_relation": 2, "object_not_extracted": 1,
                                    "malformed": 1}
    assert rep.entity_reasons == {"invalid_enum_value": 2}


def test_range_violation_group_names_relations_accepting_the_pair(extraction, onto):
    rep = build_report(extraction, onto, max_examples=2)
    g = rep.relation_groups[0]  # largest first
    assert (g.relation, g.reason, g.offending_type, g.offending_end) == ("GOBIERNA", "range_violation", "Organizacion", "object")
    assert g.count == 3 and len(g.examples) == 2
    assert g.type_pairs == [("Personaje", "Organizacion")]
    assert "widen its range to include Organizacion" in g.suggestion
    assert "ES_MIEMBRO_DE" in g.suggestion and "CONTRATA" in g.suggestion
    # relations that do not accept Personaje -> Organizacion are not offered
    assert "LEAL_A" not in g.suggestion and "ALIADA_DE" not in g.suggestion
    # the example carries the source text with both names highlighted
    ex = g.examples[0].excerpt
    marked = [ex.text[a:b] for a, b in ex.highlights]
    assert "Jon Snow" in marked and "Guardia de la Noche" in marked


def test_unknown_relation_suggests_closest_and_single_occurrences_get_none(extraction, onto):
    rep = build_report(extraction, onto)
    g = _group(rep, "CASADA_CON", "unknown_relation")
    assert g.count == 2 and "CASADO_CON" in g.suggestion
    single = _group(rep, "LEAL_A", "object_not_extracted")
    assert single.count == 1 and single.suggestion is None
    rep1 = build_report(extraction, onto, min_repeat=1)
    assert "did not extract" in _group(rep1, "LEAL_A", "object_not_extracted").suggestion


def test_invalid_enum_lists_values_and_allowed(extraction, onto):
    rep = build_report(extraction, onto)
    [eg] = rep.entity_groups
    assert (eg.entity_type, eg.reason, eg.property, eg.count) == ("Personaje", "invalid_enum_value", "genero", 2)
    assert eg.values == ["hombre", "varon"]
    assert eg.allowed_values == ["masculino", "femenino"]
    assert "'hombre'" in eg.suggestion and "masculino, femenino" in eg.suggestion


def test_ontology_from_extraction_path_and_missing_ontology(extraction):
    rep = build_report(extraction)  # path recorded in the extraction
    assert "CONTRATA" in _group(rep, "GOBIERNA", "range_violation").suggestion
    extraction["ontology"] = {"path": "/nonexistent/onto.json"}
    rep = build_report(extraction)
    assert rep.notes and "could not be loaded" in rep.notes[0]
    g = _group(rep, "GOBIERNA", "range_violation")
    assert g.count == 3 and "widen its range" in g.suggestion


def test_excerpt_truncates_around_names():
    text = "a " * 500 + "Jon Snow mira a Ygritte. " + "b " * 500
    ex = make_excerpt(text, ["jon snow", "YGRITTE"], max_chars=200, context=30)
    assert ex.truncated and len(ex.text) < 200
    assert ex.text.startswith("…") and ex.text.endswith("…")
    assert [ex.text[a:b] for a, b in ex.highlights] == ["Jon Snow", "Ygritte"]
    # accent- and case-insensitive, offsets into the original spelling
    ex = make_excerpt("Habló Daenérys.", ["daenerys"])
    assert [ex.text[a:b] for a, b in ex.highlights] == ["Daenérys"]


def test_html_escapes_untrusted_strings(extraction, onto):
    page = to_html(build_report(extraction, onto, min_repeat=1))
    assert XSS not in page and "<b>still</b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<script") == 0 and "<details>" in page and "<mark>" in page
    assert "http://" not in page and "https://" not in page  # self-contained
    md = to_markdown(build_report(extraction, onto, min_repeat=1))
    assert XSS not in md and "&lt;script" in md


def test_html_marks_names_in_excerpts_and_clips_long_values(extraction, onto):
    from html.parser import HTMLParser

    class Marks(HTMLParser):
        def __init__(self, text: str):
            super().__init__()
            self.marked: list[str] = []
            self.quotes: list[str] = []
            self.tags: list[str] = []
            self._in: list[str] = []
            self.feed(text)

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self._in.append(tag)
            if tag == "blockquote":
                self.quotes.append("")

        def handle_endtag(self, tag):
            if self._in and self._in[-1] == tag:
                self._in.pop()

        def handle_data(self, data):
            if "mark" in self._in:
                self.marked.append(data)
            if "blockquote" in self._in:
                self.quotes[-1] += data

    hostile = "Ser <img src=x onerror=alert(1)> & Jon Snow dijo <b>no</b>."
    long_name = "Jon " + "x" * 1000
    extraction["chunks"].append({"id": "d.txt:c3", "document_id": "d.txt", "index": 2, "start": 0,
                                 "end": len(hostile), "hash": "h3", "text": hostile})
    extraction["rejections"] = [
        _rel("range_violation", "Jon Snow", "Personaje", "GOBIERNA", "Ser", "Organizacion", chunk="d.txt:c3"),
        _rel("range_violation", long_name, "Personaje", "GOBIERNA", "Ser", "Organizacion", chunk="d.txt:c3"),
        *(r for r in extraction["rejections"] if r["kind"] != "relation"),
    ]
    page = to_html(build_report(extraction, onto, min_repeat=1))
    parsed = Marks(page)
    assert "img" not in parsed.tags and "b" not in parsed.tags
    # the excerpt reads as the source text, and exactly the names are marked
    assert hostile in parsed.quotes
    assert parsed.marked[:2] == ["Ser", "Jon Snow"]
    # untrusted fields are cut to the display limit, the full value stays in the CSV
    assert long_name not in page and long_name[:199] + "…" in page
    assert long_name in to_csv(build_report(extraction, onto))


def test_csv_one_row_per_rejection(extraction, onto):
    rep = build_report(extraction, onto)
    rows = list(csv.reader(io.StringIO(to_csv(rep))))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert {"reason", "relation", "subject", "subject_type", "object", "object_type", "attributes", "chunk_id",
            "document_id", "message"} <= set(rows[0])
    assert len(rows) - 1 == 7 + 2
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    gob = [r for r in body if r["relation"] == "GOBIERNA"]
    assert len(gob) == 3 and all(r["object_type"] == "Organizacion" for r in gob)


def test_csv_neutralises_formulas(extraction, onto):
    extraction["rejections"].append(
        _rel("self_relation", "=HYPERLINK(\"x\")", "Personaje", "LEAL_A", "=HYPERLINK(\"x\")", "Personaje"))
    rows = list(csv.DictReader(io.StringIO(to_csv(build_report(extraction, onto)))))
    [row] = [r for r in rows if r["reason"] == "self_relation"]
    assert row["subject"] == "'=HYPERLINK(\"x\")" and row["relation"] == "LEAL_A"


def test_write_report_files(extraction, onto, tmp_path):
    src = tmp_path / "extraction.json"
    src.write_text(json.dumps(extraction), encoding="utf-8")
    written = write_report(src, tmp_path / "out", ontology=onto)
    assert set(written) == {"md", "html", "csv", "json"}
    for path in written.values():
        assert path.is_file() and path.stat().st_size > 0
    data = json.loads(written["json"].read_text(encoding="utf-8"))
    assert data["totals"]["refused_relations"] == 7
    assert data["relation_groups"][0]["relation"] == "GOBIERNA"
    assert not list((tmp_path / "out").glob("*.tmp"))
    only = write_report(extraction, tmp_path / "o2", formats="csv", ontology=onto)
    assert list(only) == ["csv"] and [p.name for p in (tmp_path / "o2").iterdir()] == ["discarded_report.csv"]


@pytest.mark.parametrize("content, expected", [
    (None, "not found"),
    ("{\"format\": \"graphrag_got.extraction/1\", ", "not valid JSON"),
    ("[1, 2]", "$: expected a JSON object, got list"),
    ("{\"format\": \"other\"}", "$.format"),
    ("{\"format\": \"graphrag_got.extraction/2\", \"rejections\": {}}", "$.rejections: Input should be a valid list"),
    ("{\"format\": \"graphrag_got.extraction/2\", \"rejections\": [{\"kind\": \"relation\", \"message\": \"m\"}]}",
     "$.rejections[0].reason: field required"),
    ("{\"format\": \"graphrag_got.extraction/1\", \"relations\": [{\"subject\": \"A\", \"relation\": \"R\"}]}",
     "$.relations[0].subject_key: field required"),
])
def test_bad_extraction_file(tmp_path, content, expected):
    path = tmp_path / "extraction.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    with pytest.raises(ExtractionFileError) as exc:
        build_report(path)
    assert str(path) in str(exc.value) and expected in str(exc.value)


def _settings(tmp_path) -> Settings:
    return Settings(home=tmp_path / "home", out_dir=tmp_path / "out", ontology_path=ONTOLOGY)


def test_command_run_writes_and_prints(extraction, tmp_path, capsys):
    from graphrag_got.commands import report as cmd

    settings = _settings(tmp_path)
    settings.files.out_dir.mkdir()
    (settings.files.out_dir / "extraction.json").write_text(json.dumps(extraction), encoding="utf-8")
    parser = argparse.ArgumentParser()
    cmd.register(parser.add_subparsers())
    args = parser.parse_args(["report", "--format", "md,csv"])
    assert args.func(args, settings) == 0
    out = capsys.readouterr().out
    assert "GOBIERNA range_violation Organizacion" in out
    assert (settings.files.out_dir / "discarded_report.md").is_file()
    assert (settings.files.out_dir / "discarded_report.csv").is_file()
    assert not (settings.files.out_dir / "discarded_report.html").exists()


def test_cli_missing_extraction_exits_1(tmp_path, capsys, monkeypatch):
    missing = tmp_path / "nope" / "extraction.json"
    if (ROOT / "graphrag_got" / "cli.py").is_file():
        from graphrag_got.cli import main

        monkeypatch.chdir(ROOT)
        try:
            code = main(["--home", str(tmp_path / "home"), "report", str(missing), "--out-dir", str(tmp_path / "o")])
        except SystemExit as exc:
            code = exc.code
        assert code == 1
        err = capsys.readouterr().err
        assert "error:" in err and str(missing) in err and "not found" in err
    else:
        from graphrag_got.commands import report as cmd

        parser = argparse.ArgumentParser()
        cmd.register(parser.add_subparsers())
        args = parser.parse_args(["report", str(missing)])
        with pytest.raises(ExtractionFileError, match="not found"):
            args.func(args, _settings(tmp_path))
    assert not (tmp_path / "o").exists()


def test_rejections_written_by_the_validator(onto):
    """Records as graphrag_got.extract.validate writes them: property and attribute rejections are grouped by
    the key that broke the rule."""
    validate = pytest.importorskip("graphrag_got.extract.validate")
    text = "Jon Snow, hombre de la Guardia de la Noche, gobierna el Muro junto a Sam Tarly."
    answer = {
        "entities": [
            {"name": "Jon Snow", "type": "Personaje", "genero": "hombre", "apodo": "Lord Nieve"},
            {"name": "Sam Tarly", "type": "Personaje", "properties": {"genero": "varon"}},
            {"name": "Guardia de la Noche", "type": "Organizacion"},
        ],
        "relations": [
            {"subject": "Jon Snow", "subject_type": "Personaje", "relation": "GOBIERNA",
             "object": "Guardia de la Noche", "object_type": "Organizacion"},
            {"subject": "Jon Snow", "subject_type": "Personaje", "relation": "ES_MIEMBRO_DE",
             "object": "Guardia de la Noche", "object_type": "Organizacion", "lugar": "el Muro"},
        ],
    }
    val = validate.validate_chunk(onto, answer, "d.txt:c1", "d.txt")
    rej = [r.model_dump(mode="json") for r in val.rejections]
    extraction = {
        "format": "graphrag_got.extraction/2",
        "documents": [{"id": "d.txt", "path": "d.txt", "hash": "h"}],
        "chunks": [_chunk("d.txt:c1", 0, text)],
        "entities": [], "relations": [],
        "rejections": rej,
        "failed_chunks": [],
    }
    rep = build_report(extraction, onto, min_repeat=1)
    groups = {(g.entity_type or g.relation, g.reason, g.property): g for g in rep.entity_groups}
    enum = groups[("Personaje", "invalid_enum_value", "genero")]
    assert enum.count == 2 and enum.values == ["hombre", "varon"] and enum.allowed_values == ["masculino", "femenino"]
    assert groups[("Personaje", "unknown_property", "apodo")].examples[0].value == "Lord Nieve"
    attr = groups[("ES_MIEMBRO_DE", "unknown_attribute", "lugar")]
    assert attr.examples[0].name == "Jon Snow" and attr.examples[0].object == "Guardia de la Noche"
    assert "atributos_de_relacion" in attr.suggestion
    [g] = rep.relation_groups
    assert (g.relation, g.reason, g.offending_type) == ("GOBIERNA", "range_violation", "Organizacion")
    rows = list(csv.DictReader(io.StringIO(to_csv(rep))))
    assert len(rows) == len(rej)
    assert {r["relation"] for r in rows if r["reason"] == "unknown_attribute"} == {"ES_MIEMBRO_DE"}


def test_format_1_file_is_upgraded_to_the_same_report(extraction, onto, tmp_path):
    """A file of the previous format (rejections without structured fields) is read, upgraded and
    reported exactly like the same extraction in format /2."""
    extraction["rejections"].append(_rel("range_violation", "Jon Snow", "Personaje", "GOBIERNA", "Guardia de la Noche",
                                         "Organizacion", attributes={"momento": "tras los votos"}, allowed=["Region"]))
    legacy = tmp_path / "extraction.json"
    legacy.write_text(json.dumps(_as_format_1(extraction), ensure_ascii=False), encoding="utf-8")
    assert "rejections" not in json.loads(legacy.read_text(encoding="utf-8"))
    old, new = build_report(legacy, onto, min_repeat=1), build_report(extraction, onto, min_repeat=1)
    assert old.source == str(legacy)
    old.source = new.source
    assert old.to_dict() == new.to_dict()
    # and the checks that matter hold on the upgraded file
    assert old.totals.refused_relations == 8 and old.totals.refused_entities == 2
    g = _group(old, "GOBIERNA", "range_violation")
    assert (g.count, g.offending_end, g.offending_type) == (4, "object", "Organizacion")
    [eg] = old.entity_groups
    assert eg.values == ["hombre", "varon"] and eg.allowed_values == ["masculino", "femenino"]
    rows = list(csv.DictReader(io.StringIO(to_csv(old))))
    assert [r["attributes"] for r in rows if r["reason"] == "range_violation"] == ["", "", "", "momento: tras los votos"]


def test_entity_merges_are_listed_with_their_rule(extraction):
    extraction["merges"] = [{"type": "Personaje", "canonical_uid": "Personaje|jon snow", "canonical_name": "Jon Snow",
                             "merged_names": ["Jon", XSS], "merged_uids": ["Personaje|jon"], "rule": "containment",
                             "score": 0.5, "evidence": "only candidate"}]
    report = build_report(extraction, ONTOLOGY)
    (m,) = report.merges
    assert (m.entity_type, m.canonical, m.rule) == ("Personaje", "Jon Snow", "containment")
    md, page = to_markdown(report), to_html(report)
    assert "## Entity merges" in md and "| Personaje | Jon Snow |" in md
    assert "Entity merges" in page and XSS not in page and "&lt;script&gt;" in page
    extraction["merges"] = []
    assert "No entity was merged." in to_markdown(build_report(extraction, ONTOLOGY))


def test_an_excerpt_names_the_page_or_heading_path_of_its_chunk(extraction, onto) -> None:
    extraction["chunks"][0] = {**extraction["chunks"][0], "page": 12}
    extraction["chunks"][1] = {**extraction["chunks"][1], "section": ["Installation", "Network"]}
    rep = build_report(extraction, onto)
    places = {ex.excerpt.location for g in rep.relation_groups for ex in g.examples if ex.excerpt is not None}
    assert places == {"p. 12", "Installation > Network"}
    md, html = to_markdown(rep), to_html(rep)
    assert "(p. 12)" in md and "(Installation &gt; Network)" in md  # Markdown text is escaped as everywhere
    assert "<cite>p. 12</cite>" in html and "<cite>Installation &gt; Network</cite>" in html
