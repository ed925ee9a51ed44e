"""One self-contained HTML page showing the entity graph (or one community of it).

Design choice: the layout is computed in Python (networkx ``spring_layout`` with a fixed seed) and
written as static SVG, instead of running a force simulation in the browser. Reasons:

* the picture is deterministic (same graph -> same file), so it can be diffed and tested;
* the page shows the graph with JavaScript disabled (mail clients, repository previews, locked-down
  browsers) and needs nothing from a CDN: users and CI machines may be offline;
* networkx is already a dependency (communities), so no hand-written physics is needed.

A few lines of inline JavaScript add pan/zoom and "click a node to highlight its neighbours"; they
are an optional extra, the SVG is complete without them.

Every string that reaches the page (entity names, classes, relation types, properties, the title)
is untrusted and HTML-escaped; nothing from the data is put inside the ``<script>`` element.

Machine-checkable structure: each entity is ``<circle class="node" data-uid=... data-group=...>``,
each relation a ``<g class="edge" data-source=... data-target=... data-type=...>``, and the page has
``<p id="counts">N nodes, M edges</p>``.
"""

from __future__ import annotations

import html
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from .files import write_text_atomic
from .normalize import entity_uid

if TYPE_CHECKING:  # pragma: no cover
    from .config import Settings

Node = dict[str, Any]  # {"uid", "name", "type", optional "communityId", optional "properties"}
Edge = dict[str, Any]  # {"source": uid, "target": uid, "type", optional "momento", "symmetric"}

DEFAULT_NEO4J_LIMIT = 500

# Readable on white, distinguishable for most colour-vision types (Tableau 10 + 2).
_PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b",
]  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _esc(value: Any) -> str:
    """HTML-escape any value for text or a double/single-quoted attribute (control chars dropped)."""
    return html.escape(_CONTROL.sub("\ufffd", "" if value is None else str(value)), quote=True)


def _color(i: int) -> str:
    if i < len(_PALETTE):
        return _PALETTE[i]
    hue = (i * 137.508) % 360  # golden angle: successive hues stay far apart
    return f"hsl({hue:.0f},55%,50%)"


# --------------------------------------------------------------------------------------------------
# data sources


def graph_from_extraction(extraction: Mapping[str, Any]) -> tuple[list[Node], list[Edge]]:
    """Nodes and edges from an ``extraction.json`` dict (accepted entities and relations only)."""
    nodes: dict[str, Node] = {}
    for ent in extraction.get("entities") or []:
        uid = ent.get("uid") or entity_uid(ent["type"], ent.get("key") or ent["name"])
        nodes.setdefault(
            uid,
            {
                "uid": uid,
                "name": ent.get("name") or ent.get("key") or uid,
                "type": ent.get("type"),
                "properties": dict(ent.get("properties") or {}),
            },
        )
    edges: list[Edge] = []
    for rel in extraction.get("relations") or []:
        ends = []
        for side in ("subject", "object"):
            cls = rel.get(f"{side}_type")
            name = rel.get(side) or rel.get(f"{side}_key") or ""
            uid = entity_uid(cls, rel.get(f"{side}_key") or name)
            if uid not in nodes:  # should not happen in a valid file; keep the edge visible anyway
                nodes[uid] = {"uid": uid, "name": name, "type": cls, "properties": {}}
            ends.append(uid)
        edges.append(
            {
                "source": ends[0],
                "target": ends[1],
                "type": rel.get("relation"),
                "momento": rel.get("momento"),
                "symmetric": bool(rel.get("symmetric")),
            }
        )
    return list(nodes.values()), edges


def graph_from_neo4j(
    driver: Any,
    settings: "Settings",
    community_id: str | int | None = None,
    limit: int = DEFAULT_NEO4J_LIMIT,
) -> tuple[list[Node], list[Edge], dict[str, str]]:
    """Read entities (the ``limit`` best connected, optionally of one community) and the relations among
    them. Read-only. Returns ``(nodes, edges, community_titles)``; the last maps community id -> title
    for the legend."""
    from . import cypher  # the query strings live there ("viz" section)
    from .graphdb import read_query  # managed read transaction, Neo4jError with a hint on failure

    def read(query: str, **params: Any) -> list[dict[str, Any]]:
        return [r.data() for r in read_query(driver, settings, query, params).records]

    community = None if community_id is None else str(community_id)
    node_rows = read(cypher.viz_entities(), community=community, limit=int(limit))
    nodes: list[Node] = []
    for row in node_rows:
        props = {k: v for k, v in (row.get("properties") or {}).items() if not isinstance(v, (list, dict))}
        nodes.append(
            {
                "uid": row["uid"],
                "name": row.get("name") or row["uid"],
                "type": row.get("type"),
                "communityId": row.get("communityId"),
                "properties": props,
            }
        )
    uids = [n["uid"] for n in nodes]
    edges = [
        {
            "source": r["source"],
            "target": r["target"],
            "type": r["type"],
            "momento": r.get("momento") or None,
            "symmetric": bool(r.get("symmetric")),
        }
        for r in (read(cypher.viz_relations(), uids=uids, limit=int(limit) * 4) if uids else [])
    ]
    ids = sorted({str(n["communityId"]) for n in nodes if n.get("communityId") is not None})
    titles = {r["id"]: r["title"] for r in read(cypher.viz_community_titles(), ids=ids) if r.get("title")} if ids else {}
    return nodes, edges, titles


# --------------------------------------------------------------------------------------------------
# layout and rendering


_SPACING = 120.0  # rough distance between neighbouring nodes, in SVG units (labels are ~12 units high)


def _layout(nodes: list[Node], edges: list[Edge], seed: int) -> dict[str, tuple[float, float]]:
    """Positions in SVG units. Each connected component gets its own spring layout and the components
    are packed in rows, largest first: a single spring layout of a disconnected graph pushes small
    components and isolated nodes to the far border and squeezes the main component into a corner."""
    g = nx.Graph()
    g.add_nodes_from(n["uid"] for n in nodes)
    g.add_edges_from((e["source"], e["target"]) for e in edges if e["source"] != e["target"])
    comps = sorted(nx.connected_components(g), key=lambda c: (-len(c), min(c)))
    boxes: list[tuple[float, float, dict[str, tuple[float, float]]]] = []  # width, height, local positions
    for comp in comps:
        if len(comp) == 1:
            boxes.append((_SPACING * 1.6, _SPACING * 0.6, {next(iter(comp)): (0.0, 0.0)}))
            continue
        sub = g.subgraph(sorted(comp))
        # k a bit above the default 1/sqrt(n) spreads clusters so that labels overlap less
        pos = nx.spring_layout(sub, seed=seed, k=1.5 / math.sqrt(len(comp)), iterations=200)
        xs = [p[0] for p in pos.values()]
        ys = [p[1] for p in pos.values()]
        span = max(max(xs) - min(xs), max(ys) - min(ys), 1e-9)
        size = _SPACING * math.sqrt(len(comp)) * 1.1
        cx, cy = (max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2
        local = {u: ((x - cx) / span * size, (y - cy) / span * size) for u, (x, y) in pos.items()}
        w = (max(xs) - min(xs)) / span * size + _SPACING * 1.6
        h = (max(ys) - min(ys)) / span * size + _SPACING * 0.8
        boxes.append((w, h, local))
    if not boxes:
        return {}
    total_area = sum(w * h for w, h, _ in boxes)
    row_width = max(boxes[0][0], math.sqrt(total_area) * 1.3)
    out: dict[str, tuple[float, float]] = {}
    x = y = row_h = 0.0
    for w, h, local in boxes:  # shelf packing
        if x > 0 and x + w > row_width:
            x, y, row_h = 0.0, y + row_h, 0.0
        for u, (lx, ly) in local.items():
            out[u] = (x + w / 2 + lx, y + h / 2 + ly)
        x += w
        row_h = max(row_h, h)
    return out


def _group_key(node: Node, by_community: bool) -> str:
    value = node.get("communityId") if by_community else node.get("type")
    return "(none)" if value is None or value == "" else str(value)


def render_html(
    nodes: Iterable[Node],
    edges: Iterable[Edge],
    out_path: str | Path,
    title: str = "Knowledge graph",
    *,
    color_by: str = "auto",
    legend_labels: Mapping[str, str] | None = None,
    seed: int = 42,
) -> Path:
    """Write the page to ``out_path`` (atomically) and return the path.

    ``color_by``: ``"class"``, ``"community"``, or ``"auto"`` (community when any node has a
    ``communityId``). ``legend_labels`` maps a group key (e.g. a community id) to a readable label.
    Edges whose ends are not among ``nodes`` are dropped.
    """
    node_list: list[Node] = []
    seen: set[str] = set()
    for nd in nodes:
        if nd["uid"] not in seen:
            seen.add(nd["uid"])
            node_list.append(nd)
    # canonical order: the same graph gives the same file whatever order the source returned it in
    node_list.sort(key=lambda nd: nd["uid"])
    edge_list = sorted(
        (e for e in edges if e["source"] in seen and e["target"] in seen),
        key=lambda e: (e["source"], e["target"], str(e.get("type") or ""), str(e.get("momento") or "")),
    )

    by_community = (
        color_by == "community"
        or (color_by == "auto" and any(nd.get("communityId") is not None for nd in node_list))
    )
    group_counts = Counter(_group_key(nd, by_community) for nd in node_list)
    groups = sorted(group_counts, key=lambda k: (-group_counts[k], k))
    colors = {k: _color(i) for i, k in enumerate(groups)}
    legend_labels = legend_labels or {}

    degree: Counter[str] = Counter()
    for e in edge_list:
        degree[e["source"]] += 1
        degree[e["target"]] += 1

    # ---- coordinates
    coords = _layout(node_list, edge_list, seed)
    xs = [p[0] for p in coords.values()] or [0.0]
    ys = [p[1] for p in coords.values()] or [0.0]
    pad = 40.0
    vb = (min(xs) - pad, min(ys) - pad, max(xs) - min(xs) + 2 * pad + 120.0, max(ys) - min(ys) + 2 * pad)

    def radius(uid: str) -> float:
        return min(6.0 + 2.2 * math.sqrt(degree[uid]), 22.0)

    # ---- edges: parallel edges between the same pair are drawn as curves with different bends
    pair_count: Counter[frozenset[str]] = Counter(frozenset((e["source"], e["target"])) for e in edge_list)
    pair_seen: defaultdict[frozenset[str], int] = defaultdict(int)
    names = {nd["uid"]: str(nd.get("name") or nd["uid"]) for nd in node_list}
    edge_svg: list[str] = []
    for e in edge_list:
        s, t = e["source"], e["target"]
        (x1, y1), (x2, y2) = coords[s], coords[t]
        key = frozenset((s, t))
        idx = pair_seen[key]
        pair_seen[key] += 1
        rel = str(e.get("type") or "")
        arrow = "" if e.get("symmetric") else ' marker-end="url(#arrow)"'
        tip = f"{names[s]} —{rel}→ {names[t]}" + (f" ({e['momento']})" if e.get("momento") else "")
        if s == t:  # self loop
            r = radius(s)
            d = f"M{x1:.1f},{y1 - r:.1f} c 30,-45 60,0 {r:.1f},{r:.1f}"
            lx, ly = x1 + 32, y1 - 28
        else:
            dx, dy = x2 - x1, y2 - y1
            dist = math.hypot(dx, dy) or 1.0
            # shorten so the arrow head ends at the circle's border
            ex, ey = x2 - dx / dist * (radius(t) + 2), y2 - dy / dist * (radius(t) + 2)
            n_par = pair_count[key]
            bend = 0.0 if n_par == 1 else (idx - (n_par - 1) / 2) * 28.0
            if (s, t) != tuple(sorted((s, t))):
                bend = -bend  # same side convention for both directions
            mx, my = (x1 + ex) / 2 - dy / dist * bend, (y1 + ey) / 2 + dx / dist * bend
            d = f"M{x1:.1f},{y1:.1f} Q{mx:.1f},{my:.1f} {ex:.1f},{ey:.1f}"
            lx, ly = (x1 + 2 * mx + ex) / 4, (y1 + 2 * my + ey) / 4  # point on the curve at t=0.5
        edge_svg.append(
            f'<g class="edge" data-source="{_esc(s)}" data-target="{_esc(t)}" data-type="{_esc(rel)}">'
            f"<title>{_esc(tip)}</title>"
            f'<path d="{d}"{arrow}/>'
            f'<text class="elabel" x="{lx:.1f}" y="{ly:.1f}">{_esc(rel)}</text></g>'
        )

    node_svg: list[str] = []
    for nd in node_list:
        uid = nd["uid"]
        x, y = coords[uid]
        r = radius(uid)
        group = _group_key(nd, by_community)
        lines = [str(nd.get("name") or uid), f"class: {nd.get('type')}", f"uid: {uid}"]
        if nd.get("communityId") is not None:
            lines.append(f"community: {nd['communityId']}")
        for k, v in sorted((nd.get("properties") or {}).items()):
            lines.append(f"{k}: {v}")
        lines.append(f"{degree[uid]} relation(s)")
        node_svg.append(
            f'<g class="entity"><title>{_esc(chr(10).join(lines))}</title>'
            f'<circle class="node" data-uid="{_esc(uid)}" data-type="{_esc(nd.get("type"))}" '
            f'data-group="{_esc(group)}" cx="{x:.1f}" cy="{y:.1f}" r="{r:.1f}" fill="{colors[group]}"/>'
            f'<text class="nlabel" x="{x + r + 3:.1f}" y="{y + 4:.1f}">{_esc(nd.get("name") or uid)}</text></g>'
        )

    legend_items = []
    for k in groups:
        label = legend_labels.get(k)
        text = f"{k}: {label}" if label else k
        legend_items.append(
            f'<li data-group="{_esc(k)}"><span class="swatch" style="background:{colors[k]}"></span>'
            f"{_esc(text)} <span class=\"n\">({group_counts[k]})</span></li>"
        )
    rel_counts = Counter(str(e.get("type") or "") for e in edge_list)
    rel_items = "".join(
        f"<li>{_esc(k)} <span class=\"n\">({v})</span></li>" for k, v in sorted(rel_counts.items(), key=lambda kv: (-kv[1], kv[0]))
    )

    page = _TEMPLATE.format(
        title=_esc(title),
        counts=f"{len(node_list)} nodes, {len(edge_list)} edges",
        legend_title="Community" if by_community else "Class",
        legend="".join(legend_items),
        relations=rel_items or "<li>(none)</li>",
        viewbox=" ".join(f"{v:.1f}" for v in vb),
        edges="\n".join(edge_svg),
        nodes="\n".join(node_svg),
        script=_SCRIPT,
    )
    return write_text_atomic(out_path, page)


_TEMPLATE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
  body {{ font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0; color: #222; }}
  header {{ padding: 8px 16px; border-bottom: 1px solid #ddd; }}
  h1 {{ font-size: 18px; margin: 0 0 2px 0; }}
  #counts {{ margin: 0; color: #555; font-size: 13px; }}
  main {{ display: flex; }}
  #graph {{ flex: 1; height: calc(100vh - 60px); min-height: 480px; background: #fff; cursor: grab; }}
  aside {{ width: 230px; padding: 8px 12px; border-left: 1px solid #ddd; font-size: 13px;
          overflow-y: auto; max-height: calc(100vh - 60px); }}
  aside h2 {{ font-size: 14px; margin: 8px 0 4px; }}
  aside ul {{ list-style: none; padding: 0; margin: 0; }}
  aside li {{ margin: 3px 0; }}
  .swatch {{ display: inline-block; width: 12px; height: 12px; border-radius: 50%;
            vertical-align: -1px; margin-right: 6px; border: 1px solid #0003; }}
  .n {{ color: #888; }}
  .hint {{ color: #888; font-size: 12px; }}
  .edge path {{ fill: none; stroke: #9aa; stroke-width: 1.3; }}
  .edge:hover path {{ stroke: #345; stroke-width: 2.2; }}
  .elabel {{ font-size: 9px; fill: #677; text-anchor: middle; paint-order: stroke;
            stroke: #fff; stroke-width: 3px; }}
  .node {{ stroke: #fff; stroke-width: 1.5; }}
  .entity:hover .node {{ stroke: #222; }}
  .nlabel {{ font-size: 12px; fill: #222; paint-order: stroke; stroke: #fff; stroke-width: 3px; }}
  .dim {{ opacity: 0.12; }}
</style>
</head>
<body>
<header>
  <h1>{title}</h1>
  <p id="counts">{counts}</p>
</header>
<main>
<svg id="graph" xmlns="http://www.w3.org/2000/svg" viewBox="{viewbox}" preserveAspectRatio="xMidYMid meet"
     role="img" aria-label="{title}">
  <defs>
    <marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
      <path d="M0,0 L10,5 L0,10 z" fill="#9aa"/>
    </marker>
  </defs>
  <g id="viewport">
  <g id="edges">
{edges}
  </g>
  <g id="nodes">
{nodes}
  </g>
  </g>
</svg>
<aside>
  <h2>{legend_title}</h2>
  <ul id="legend">{legend}</ul>
  <h2>Relations</h2>
  <ul id="relations">{relations}</ul>
  <p class="hint">Hover for details. Wheel: zoom, drag: pan, click a node: its neighbours (click the background to reset).</p>
</aside>
</main>
<script>{script}</script>
</body>
</html>
"""

# Pan/zoom and neighbour highlighting. Reads only the DOM built above; no data is inlined here.
_SCRIPT = r"""
(function () {
  var svg = document.getElementById('graph');
  if (!svg || !svg.viewBox) return;
  var vb = svg.viewBox.baseVal, drag = null;
  function pt(ev) {
    var r = svg.getBoundingClientRect();
    var s = Math.max(vb.width / r.width, vb.height / r.height);
    return { x: vb.x + (ev.clientX - r.left - (r.width - vb.width / s) / 2) * s,
             y: vb.y + (ev.clientY - r.top - (r.height - vb.height / s) / 2) * s, s: s };
  }
  svg.addEventListener('wheel', function (ev) {
    ev.preventDefault();
    var p = pt(ev), f = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
    vb.x = p.x - (p.x - vb.x) * f; vb.y = p.y - (p.y - vb.y) * f;
    vb.width *= f; vb.height *= f;
  }, { passive: false });
  svg.addEventListener('mousedown', function (ev) { drag = { x: ev.clientX, y: ev.clientY, moved: false }; });
  window.addEventListener('mouseup', function () { setTimeout(function () { drag = null; }, 0); });
  svg.addEventListener('mousemove', function (ev) {
    if (!drag) return;
    var s = pt(ev).s, dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 2) drag.moved = true;
    vb.x -= dx * s; vb.y -= dy * s; drag.x = ev.clientX; drag.y = ev.clientY;
  });
  var nodes = Array.prototype.slice.call(document.querySelectorAll('circle.node'));
  var edges = Array.prototype.slice.call(document.querySelectorAll('g.edge'));
  function reset() {
    nodes.forEach(function (n) { n.parentNode.classList.remove('dim'); });
    edges.forEach(function (e) { e.classList.remove('dim'); });
  }
  svg.addEventListener('click', function (ev) {
    if (drag && drag.moved) return;
    var t = ev.target;
    if (!(t.classList && t.classList.contains('node'))) { reset(); return; }
    var uid = t.getAttribute('data-uid'), keep = {};
    keep[uid] = true;
    edges.forEach(function (e) {
      var s = e.getAttribute('data-source'), d = e.getAttribute('data-target');
      var on = s === uid || d === uid;
      if (on) { keep[s] = true; keep[d] = true; }
      e.classList.toggle('dim', !on);
    });
    nodes.forEach(function (n) { n.parentNode.classList.toggle('dim', !keep[n.getAttribute('data-uid')]); });
  });
  document.documentElement.setAttribute('data-viz-ready', String(nodes.length));
})();
"""
