"""viz: escaping, page structure, data sources, CLI, and a real headless Chromium rendering."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from graphrag_got.report import viz
from graphrag_got.commands import viz as viz_cmd
from graphrag_got.config import Settings
from graphrag_got.errors import ConfigError, ExtractionFileError

GOT_EXTRACTION = Path(__file__).parent / "data" / "got_extraction.json"

EVIL_SCRIPT = "<script>document.title='pwned'</script>"
EVIL_IMG = "<img src=x onerror=\"document.title='pwned'\">"
EVIL_QUOTES = "Tom \"the 'Quote'\" & Jerry </svg></html>"


class Page(HTMLParser):
    """Collects what the tests check: circles, edges, scripts, text, external references."""

    def __init__(self, text: str):
        super().__init__()
        self.circles: list[dict[str, str | None]] = []
        self.edges: list[dict[str, str | None]] = []
        self.tags: list[str] = []
        self.text: list[str] = []
        self.ids: dict[str, str] = {}
        self.legend: list[str | None] = []
        self._current_id: str | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append(tag)
        if tag == "circle" and "node" in (a.get("class") or "").split():
            self.circles.append(a)
        if tag == "g" and a.get("class") == "edge":
            self.edges.append(a)
        if tag == "li" and "data-group" in a:
            self.legend.append(a["data-group"])
        self._current_id = a.get("id")

    def handle_data(self, data):
        self.text.append(data)
        if self._current_id:
            self.ids[self._current_id] = self.ids.get(self._current_id, "") + data


def sample_graph():
    nodes = [
        {"uid": "Personaje|jon snow", "name": "Jon Snow", "type": "Personaje", "properties": {"genero": "masculino"}},
        {"uid": "Personaje|<evil>", "name": EVIL_SCRIPT, "type": "Personaje"},
        {"uid": 'Casa|"q" & \'s\'', "name": EVIL_QUOTES, "type": "Casa & <Co>"},
        {"uid": "Region|img", "name": EVIL_IMG, "type": "Region"},
    ]
    edges = [
        {"source": "Personaje|jon snow", "target": "Personaje|<evil>", "type": "ALIADA_DE", "momento": "<b>now</b>"},
        {"source": "Personaje|jon snow", "target": 'Casa|"q" & \'s\'', "type": "PERTENECE_A"},
        {"source": "Personaje|jon snow", "target": 'Casa|"q" & \'s\'', "type": "LEAL_A"},  # parallel edge
        {"source": "Personaje|<evil>", "target": "Region|img", "type": "GOBIERNA", "symmetric": True},
        {"source": "Personaje|jon snow", "target": "Nobody|missing", "type": "LEAL_A"},  # dangling: dropped
    ]
    return nodes, edges


def test_untrusted_strings_are_escaped(tmp_path: Path):
    nodes, edges = sample_graph()
    out = viz.render_html(nodes, edges, tmp_path / "g.html", title="<i>GoT</i> & friends")
    text = out.read_text(encoding="utf-8")
    # the raw markup never appears; its escaped form does
    for raw in (EVIL_SCRIPT, EVIL_IMG, "<evil>", "<Co>", "<b>now</b>", "</svg></html>", "<i>GoT</i>"):
        assert raw not in text
    assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in text  # quotes too (markupsafe)
    assert "&lt;i&gt;GoT&lt;/i&gt; &amp; friends" in text
    page = Page(text)
    assert page.tags.count("script") == 1  # ours only
    assert "img" not in page.tags and "i" not in page.tags and "b" not in page.tags
    # the parser gives back the exact original strings from attributes and text
    assert {c["data-uid"] for c in page.circles} == {n["uid"] for n in nodes}
    body = "".join(page.text)
    for n in nodes:
        assert n["name"] in body
    assert "Casa & <Co>" in body  # the legend shows the (escaped) class name


def test_structure_counts_and_legend(tmp_path: Path):
    nodes, edges = sample_graph()
    page = Page(viz.render_html(nodes, edges, tmp_path / "g.html", "t").read_text(encoding="utf-8"))
    assert page.ids["counts"].strip() == "4 nodes, 4 edges"
    assert len(page.circles) == 4 and len(page.edges) == 4
    assert ("Personaje|jon snow", 'Casa|"q" & \'s\'') in {(e["data-source"], e["data-target"]) for e in page.edges}
    assert {e["data-type"] for e in page.edges} == {"ALIADA_DE", "PERTENECE_A", "LEAL_A", "GOBIERNA"}
    # coloured by class: same class -> same fill, different classes -> different fills
    fills = {c["data-uid"]: c["fill"] for c in page.circles}
    assert fills["Personaje|jon snow"] == fills["Personaje|<evil>"]
    assert len({fills["Personaje|jon snow"], fills["Region|img"], fills['Casa|"q" & \'s\'']}) == 3
    assert page.legend == ["Personaje", "Casa & <Co>", "Region"]  # by count, then name
    assert "Personaje (2)" in "".join(page.text)
    # parallel edges are drawn apart (different paths)
    text = (tmp_path / "g.html").read_text(encoding="utf-8")
    assert text.count('data-target="Casa|&#34;q&#34; &amp; &#39;s&#39;"') == 2


def test_page_is_self_contained_and_deterministic(tmp_path: Path):
    nodes, edges = sample_graph()
    a = viz.render_html(nodes, edges, tmp_path / "a.html", "t").read_text(encoding="utf-8")
    b = viz.render_html(list(reversed(nodes)), edges, tmp_path / "b.html", "t").read_text(encoding="utf-8")
    assert a == b
    page = Page(a)
    assert not {"link", "img", "iframe", "object", "embed"} & set(page.tags)
    clean = viz.render_html(nodes[:1], [], tmp_path / "c.html", "t").read_text(encoding="utf-8").lower()
    for needle in ("src=", "href=", "@import", "url(http", "https://", "cdn"):
        assert needle not in clean
    (tmp_path / "c.html").unlink()
    # atomic write: no temp files left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.html", "b.html"]


def test_colour_by_community(tmp_path: Path):
    nodes = [
        {"uid": f"Personaje|p{i}", "name": f"P{i}", "type": "Personaje" if i % 2 else "Casa", "communityId": i // 3}
        for i in range(6)
    ]
    edges = [{"source": "Personaje|p0", "target": "Personaje|p1", "type": "ALIADA_DE"}]
    out = viz.render_html(nodes, edges, tmp_path / "c.html", "c", legend_labels={"1": "Los <Stark>"})
    page = Page(out.read_text(encoding="utf-8"))
    groups = {c["data-uid"]: c["data-group"] for c in page.circles}
    assert groups["Personaje|p0"] == groups["Personaje|p2"] == "0"
    assert groups["Personaje|p3"] == "1"
    fills = {c["data-group"]: c["fill"] for c in page.circles}
    assert fills["0"] != fills["1"]
    body = "".join(page.text)
    assert "Community" in body and "1: Los <Stark>" in body
    assert page.legend == ["0", "1"]
    # forcing classes ignores the communities
    page2 = Page(viz.render_html(nodes, edges, tmp_path / "d.html", "d", color_by="class").read_text())
    assert {c["data-group"] for c in page2.circles} == {"Personaje", "Casa"}


def test_empty_graph(tmp_path: Path):
    page = Page(viz.render_html([], [], tmp_path / "e.html", "empty").read_text(encoding="utf-8"))
    assert page.ids["counts"].strip() == "0 nodes, 0 edges"


# --- templates -------------------------------------------------------------------------------------

_RENDER_IN_A_PROCESS = """
import sys
from graphrag_got.report import viz
nodes = [{"uid": f"C|n{i}", "name": f"N{i}", "type": "C" if i % 3 else "D"} for i in range(9)]
edges = [{"source": f"C|n{i}", "target": f"C|n{(i * 5 + 1) % 9}", "type": "R"} for i in range(7)]
viz.render_html(nodes, edges, sys.argv[1], "t")
"""


def test_layout_is_the_same_in_every_process(tmp_path: Path):
    """Same graph -> same file, whatever the interpreter's string hash seed (it orders sets)."""
    import os
    import sys

    pages = []
    for seed in ("1", "2"):
        out = tmp_path / f"p{seed}.html"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        proc = subprocess.run([sys.executable, "-c", _RENDER_IN_A_PROCESS, str(out)], env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
        pages.append(out.read_text(encoding="utf-8"))
    assert len(Page(pages[0]).circles) == 9
    assert pages[0] == pages[1]


def test_control_characters_are_replaced(tmp_path: Path):
    nodes = [{"uid": "C|a\x01b", "name": "a\x01b\x1b[31m", "type": "C\x7f"}]
    text = viz.render_html(nodes, [], tmp_path / "c.html", "t\x00").read_text(encoding="utf-8")
    assert not any(ch in text for ch in "\x00\x01\x1b\x7f")
    page = Page(text)
    assert page.circles[0]["data-uid"] == "C|a\ufffdb" and page.circles[0]["data-type"] == "C\ufffd"
    assert "a\ufffdb\ufffd[31m" in page.text


def test_script_is_ours_and_carries_no_data(tmp_path: Path):
    nodes, edges = sample_graph()
    text = viz.render_html(nodes, edges, tmp_path / "g.html", "t").read_text(encoding="utf-8")
    script = text.split("<script>", 1)[1].split("</script>", 1)[0]
    template = (Path(viz.__file__).parents[1] / "templates" / "graph_view.js.j2").read_text(encoding="utf-8")
    assert script == template  # included verbatim: no value of the graph inside the script
    assert "data-viz-ready" in script


def test_templates_refuse_missing_values():
    """StrictUndefined: a value the template needs but was not given fails the render."""
    jinja2 = pytest.importorskip("jinja2")
    from graphrag_got.report.html import render

    with pytest.raises(jinja2.UndefinedError, match="title"):
        render("graph.html.j2", nodes=[], edges=[])


def test_graph_from_extraction_minimal():
    data = {
        "format": "graphrag_got.extraction/2",
        "entities": [
            {"uid": "Personaje|jon snow", "key": "jon snow", "name": "Jon Snow", "type": "Personaje", "properties": {}},
            {"uid": "CasaNoble|casa stark", "key": "casa stark", "name": "Casa Stark", "type": "CasaNoble"},
        ],
        "relations": [
            {"subject": "Jon Snow", "subject_key": "jon snow", "subject_type": "Personaje", "relation": "PERTENECE_A",
             "object": "Casa Stark", "object_key": "casa stark", "object_type": "CasaNoble",
             "attributes": {"momento": "en Invernalia"}, "symmetric": False, "chunk_ids": []},
        ],
    }  # fmt: skip
    nodes, edges = viz.graph_from_extraction(data)
    assert [n["uid"] for n in nodes] == ["Personaje|jon snow", "CasaNoble|casa stark"]
    assert edges == [
        {"source": "Personaje|jon snow", "target": "CasaNoble|casa stark", "type": "PERTENECE_A",
         "attributes": {"momento": "en Invernalia"}, "symmetric": False}
    ]  # fmt: skip


@pytest.mark.skipif(not GOT_EXTRACTION.exists(), reason="tests/data/got_extraction.json not present")
def test_graph_from_got_extraction(tmp_path: Path):
    data = json.loads(GOT_EXTRACTION.read_text(encoding="utf-8"))
    nodes, edges = viz.graph_from_extraction(data)
    uids = {n["uid"] for n in nodes}
    assert {e["uid"] for e in data["entities"]} <= uids
    assert len(edges) == len(data["relations"])
    assert all(e["source"] in uids and e["target"] in uids for e in edges)
    page = Page(viz.render_html(nodes, edges, tmp_path / "got.html", "GoT").read_text(encoding="utf-8"))
    assert len(page.circles) == len(nodes)
    assert page.ids["counts"].strip() == f"{len(nodes)} nodes, {len(edges)} edges"


# --- CLI -------------------------------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", dest="out")  # the global flag of cli.main, which must not collide
    sub = parser.add_subparsers(dest="command")
    viz_cmd.register(sub)
    return parser.parse_args(argv)


def test_cli_from_extraction(tmp_path: Path, capsys):
    ex = tmp_path / "extraction.json"
    nodes, _ = sample_graph()
    keys = [n["uid"].split("|", 1)[1] for n in nodes]  # the contract wants uid == "<type>|<key>"
    entities = [{**n, "uid": f"{n['type']}|{key}", "key": key} for n, key in zip(nodes, keys)]
    ex.write_text(json.dumps({"format": "graphrag_got.extraction/2", "entities": entities, "relations": []}))
    args = parse(["--out", str(tmp_path / "outdir"), "viz", "--out", str(tmp_path / "g.html"), "--extraction", str(ex)])
    assert args.out == str(tmp_path / "outdir")
    assert args.func(args, Settings(out_dir=tmp_path / "outdir")) == 0
    assert "4 nodes, 0 edges" in capsys.readouterr().out
    assert len(Page((tmp_path / "g.html").read_text()).circles) == 4


def test_cli_errors(tmp_path: Path):
    s = Settings(out_dir=tmp_path)
    args = parse(["viz", "--extraction", str(tmp_path / "missing.json")])
    with pytest.raises(ExtractionFileError, match="does not exist"):
        args.func(args, s)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    args = parse(["viz", "--extraction", str(bad)])
    with pytest.raises(ExtractionFileError, match="line 1"):
        args.func(args, s)
    args = parse(["viz", "--community", "3"])
    with pytest.raises(ConfigError, match="--from-neo4j"):
        args.func(args, s)
    with pytest.raises(SystemExit):  # mutually exclusive sources
        parse(["viz", "--extraction", "x.json", "--from-neo4j"])


# --- real browser ----------------------------------------------------------------------------------

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (scripts/install_system_deps.sh installs it)"
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'chromium-profile'}", *args,
    ]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)


@needs_chromium
def test_chromium_renders_nodes_and_runs_no_injected_code(tmp_path: Path):
    nodes, edges = sample_graph()
    out = viz.render_html(nodes, edges, tmp_path / "g.html", "browser test")
    proc = chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", out.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    page = Page(dom)
    assert {c["data-uid"] for c in page.circles} == {n["uid"] for n in nodes}
    assert len(page.edges) == 4
    assert 'data-viz-ready="4"' in dom  # our script ran to the end and saw the 4 circles
    assert "<title>browser test</title>" in dom  # an injected handler would have set 'pwned'
    assert "pwned</title>" not in dom
    assert "img" not in page.tags


@needs_chromium
def test_chromium_screenshot(tmp_path: Path):
    src = GOT_EXTRACTION if GOT_EXTRACTION.exists() else None
    if src:
        nodes, edges = viz.graph_from_extraction(json.loads(src.read_text(encoding="utf-8")))
    else:
        nodes, edges = sample_graph()
    out = viz.render_html(nodes, edges, tmp_path / "g.html", "screenshot")
    png = tmp_path / "shot.png"
    proc = chromium(tmp_path, "--window-size=1400,1000", f"--screenshot={png}", out.as_uri())
    assert proc.returncode == 0, proc.stderr[-2000:]
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert int.from_bytes(data[16:20], "big") == 1400 and int.from_bytes(data[20:24], "big") == 1000
    assert len(data) > 20_000  # a blank page compresses to a few KB


# --- Neo4j (real server) ---------------------------------------------------------------------------


@pytest.fixture()
def viz_driver(request):
    """The suite's Neo4j driver fixture when a conftest provides one, else the configured server."""
    try:
        return request.getfixturevalue("neo4j_driver")
    except pytest.FixtureLookupError:
        pass
    neo4j = pytest.importorskip("neo4j")
    s = Settings.load()
    driver = neo4j.GraphDatabase.driver(s.neo4j.uri, auth=(s.neo4j.username, s.neo4j.password))
    try:
        driver.verify_connectivity()
    except Exception as exc:  # noqa: BLE001 - any failure means "no server here"
        driver.close()
        pytest.skip(f"no Neo4j answers at {s.neo4j.uri}: {exc}")
    request.addfinalizer(driver.close)
    return driver


@pytest.mark.neo4j
def test_graph_from_neo4j_reads_one_community(viz_driver, tmp_path: Path):
    import uuid

    s = Settings.load()
    tag = f"viztest-{uuid.uuid4().hex[:8]}"
    rows = [
        {"uid": f"Personaje|{tag} jon", "name": "Jon <Snow>", "type": "Personaje", "c": tag},
        {"uid": f"Personaje|{tag} dany", "name": "Daenerys", "type": "Personaje", "c": tag},
        {"uid": f"CasaNoble|{tag} stark", "name": "Casa Stark", "type": "CasaNoble", "c": tag},
        {"uid": f"CasaNoble|{tag} other", "name": "Elsewhere", "type": "CasaNoble", "c": tag + "-x"},
    ]
    setup = [
        ("UNWIND $rows AS row CREATE (e:Entity {uid: row.uid, key: row.uid, name: row.name, type: row.type,"
         " communityId: row.c, chunk_ids: ['x']})", {"rows": rows}),
        ("CREATE (:Community {id: $c, title: 'Los Stark', level: 0})", {"c": tag}),
        # symmetric relation stored in both directions, one directed relation, one leaving the community
        ("MATCH (a:Entity {uid: $a}), (b:Entity {uid: $b}) "
         "CREATE (a)-[:SE_ENCUENTRA_CON {momento: '', symmetric: true}]->(b), "
         "(b)-[:SE_ENCUENTRA_CON {momento: '', symmetric: true}]->(a)", {"a": rows[0]["uid"], "b": rows[1]["uid"]}),
        ("MATCH (a:Entity {uid: $a}), (b:Entity {uid: $b}) CREATE (a)-[:PERTENECE_A {momento: 'hoy', symmetric: false}]->(b)",
         {"a": rows[0]["uid"], "b": rows[2]["uid"]}),
        ("MATCH (a:Entity {uid: $a}), (b:Entity {uid: $b}) CREATE (a)-[:PERTENECE_A {momento: '', symmetric: false}]->(b)",
         {"a": rows[1]["uid"], "b": rows[3]["uid"]}),
        ("MATCH (a:Entity {uid: $a}), (b:Entity {uid: $b}) CREATE (a)-[:LEAL_A {momento: '', symmetric: false}]->(b)",
         {"a": rows[0]["uid"], "b": rows[3]["uid"]}),
    ]  # fmt: skip
    with viz_driver.session(database=s.neo4j.database) as session:
        for query, params in setup:
            session.run(query, **params).consume()
    try:
        nodes, edges, titles = viz.graph_from_neo4j(viz_driver, s.neo4j, community_id=tag, limit=50)
        assert {n["uid"] for n in nodes} == {r["uid"] for r in rows[:3]}
        assert all(n["communityId"] == tag for n in nodes)
        assert sorted((e["type"], e["symmetric"]) for e in edges) == [("PERTENECE_A", False), ("SE_ENCUENTRA_CON", True)]
        assert next(e for e in edges if e["type"] == "PERTENECE_A")["attributes"] == {"momento": "hoy"}
        assert titles == {tag: "Los Stark"}
        # limit keeps the best connected entities (jon: 3 distinct neighbours, dany and stark fewer)
        top, _, _ = viz.graph_from_neo4j(viz_driver, s.neo4j, community_id=tag, limit=1)
        assert [n["uid"] for n in top] == [rows[0]["uid"]]
        page = Page(viz.render_html(nodes, edges, tmp_path / "n.html", "n", legend_labels=titles).read_text())
        assert len(page.circles) == 3 and page.ids["counts"].strip() == "3 nodes, 2 edges"
        assert f"{tag}: Los Stark" in "".join(page.text)
    finally:
        with viz_driver.session(database=s.neo4j.database) as session:
            session.run(
                "MATCH (n) WHERE (n:Entity AND n.uid CONTAINS $tag) OR (n:Community AND n.id = $tag) DETACH DELETE n",
                tag=tag,
            ).consume()
