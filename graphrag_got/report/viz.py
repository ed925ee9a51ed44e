"""One self-contained HTML page showing the entity graph (or one community of it).

Design choice: the layout is computed in Python (networkx ``spring_layout`` with a fixed seed) and
written as static SVG, instead of running a force simulation in the browser. Reasons:

* the picture is deterministic (same graph -> same file), so it can be diffed and tested;
* the page shows the graph with JavaScript disabled (mail clients, repository previews, locked-down
  browsers) and needs nothing from a CDN: users and CI machines may be offline;
* networkx is already a dependency (communities), so no hand-written physics is needed.

A few lines of inline JavaScript add pan/zoom and "click a node to highlight its neighbours"; they
are an optional extra, the SVG is complete without them.

The page is the jinja2 template ``templates/graph.html.j2`` (its script: ``graph_view.js.j2``);
this module computes the geometry and passes plain data. Every string that reaches the page (entity
names, classes, relation types, properties, the title) is untrusted and autoescaped; nothing from
the data is put inside the ``<script>`` element.

Machine-checkable structure: each entity is ``<circle class="node" data-uid=... data-group=...>``,
each relation a ``<g class="edge" data-source=... data-target=... data-type=...>``, and the page has
``<p id="counts">N nodes, M edges</p>``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import networkx as nx

from graphrag_got.common.files import write_text_atomic
from graphrag_got.report import DEFAULT_NEO4J_LIMIT
from graphrag_got.report.html import render
from graphrag_got.extract.extraction import Extraction
from graphrag_got.ontology.model import RESERVED_RELATION_ATTRIBUTES

if TYPE_CHECKING:  # pragma: no cover
    from graphrag_got.config import Neo4jSettings

Node = dict[str, Any]  # {"uid", "name", "type", optional "communityId", optional "properties"}
Edge = dict[str, Any]  # {"source": uid, "target": uid, "type", "attributes": {name: value}, "symmetric"}

#: Properties the loader keeps on every relationship; the others are the ontology's relation attributes.
RELATION_BOOKKEEPING = RESERVED_RELATION_ATTRIBUTES

# Readable on white, distinguishable for most colour-vision types (Tableau 10 + 2).
_PALETTE = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948",
    "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b",
]  # fmt: skip


def _color(i: int) -> str:
    if i < len(_PALETTE):
        return _PALETTE[i]
    hue = (i * 137.508) % 360  # golden angle: successive hues stay far apart
    return f"hsl({hue:.0f},55%,50%)"


# --------------------------------------------------------------------------------------------------
# data sources


def graph_from_extraction(extraction: "Extraction | Mapping[str, Any] | str | Path") -> tuple[list[Node], list[Edge]]:
    """Nodes and edges of an extraction (accepted entities and relations only), read through the
    :class:`~graphrag_got.extract.extraction.Extraction` contract."""
    ext = Extraction.read(extraction if not isinstance(extraction, Mapping) else dict(extraction))
    nodes: dict[str, Node] = {}
    for ent in ext.entities:
        nodes.setdefault(ent.uid, {"uid": ent.uid, "name": ent.name, "type": ent.type,
                                   "properties": dict(ent.properties)})
    edges: list[Edge] = []
    for rel in ext.relations:
        for uid, name, cls in ((rel.subject_uid, rel.subject, rel.subject_type),
                               (rel.object_uid, rel.object, rel.object_type)):
            if uid not in nodes:  # should not happen in a valid file; keep the edge visible anyway
                nodes[uid] = {"uid": uid, "name": name, "type": cls, "properties": {}}
        edges.append({"source": rel.subject_uid, "target": rel.object_uid, "type": rel.relation,
                      "attributes": dict(rel.attributes), "symmetric": rel.symmetric})
    return list(nodes.values()), edges


def graph_from_neo4j(
    driver: Any,
    db: "Neo4jSettings",
    community_id: str | int | None = None,
    limit: int = DEFAULT_NEO4J_LIMIT,
) -> tuple[list[Node], list[Edge], dict[str, str]]:
    """Read entities (the ``limit`` best connected, optionally of one community) and the relations among
    them. Read-only. Returns ``(nodes, edges, community_titles)``; the last maps community id -> title
    for the legend."""
    from graphrag_got.report import cypher
    from graphrag_got.graph.db import read_query  # managed read transaction, Neo4jError with a hint on failure

    def read(query: str, **params: Any) -> list[dict[str, Any]]:
        return [r.data() for r in read_query(driver, db, query, params).records]

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
            "attributes": {k: str(v) for k, v in sorted((r.get("properties") or {}).items())
                           if k not in RELATION_BOOKKEEPING and v not in (None, "")},
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
        # a fresh graph in sorted order: a subgraph view iterates its node set, whose order
        # changes with the hash seed, and spring_layout's result depends on node order
        sub = nx.Graph()
        sub.add_nodes_from(sorted(comp))
        sub.add_edges_from(sorted(tuple(sorted(e)) for e in g.edges(comp)))
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
        key=lambda e: (e["source"], e["target"], str(e.get("type") or ""), sorted((e.get("attributes") or {}).items())),
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
    edge_views: list[dict[str, Any]] = []
    for e in edge_list:
        s, t = e["source"], e["target"]
        (x1, y1), (x2, y2) = coords[s], coords[t]
        key = frozenset((s, t))
        idx = pair_seen[key]
        pair_seen[key] += 1
        rel = str(e.get("type") or "")
        shown = "; ".join(f"{k}: {v}" for k, v in (e.get("attributes") or {}).items())
        tip = f"{names[s]} —{rel}→ {names[t]}" + (f" ({shown})" if shown else "")
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
        edge_views.append({"source": s, "target": t, "type": rel, "tip": tip, "d": d,
                           "arrow": not e.get("symmetric"), "label_x": lx, "label_y": ly})

    node_views: list[dict[str, Any]] = []
    for nd in node_list:
        uid = nd["uid"]
        group = _group_key(nd, by_community)
        tooltip = [str(nd.get("name") or uid), f"class: {nd.get('type')}", f"uid: {uid}"]
        if nd.get("communityId") is not None:
            tooltip.append(f"community: {nd['communityId']}")
        tooltip += [f"{k}: {v}" for k, v in sorted((nd.get("properties") or {}).items())]
        tooltip.append(f"{degree[uid]} relation(s)")
        x, y = coords[uid]
        node_views.append({"uid": uid, "name": nd.get("name") or uid, "type": nd.get("type"), "group": group,
                           "fill": colors[group], "x": x, "y": y, "r": radius(uid), "tooltip": tooltip})

    rel_counts = Counter(str(e.get("type") or "") for e in edge_list)
    page = render(
        "graph.html.j2",
        title=title,
        legend_title="Community" if by_community else "Class",
        legend=[{"group": k, "label": legend_labels.get(k), "color": colors[k], "count": group_counts[k]}
                for k in groups],
        relations=sorted(rel_counts.items(), key=lambda kv: (-kv[1], kv[0])),
        viewbox=vb,
        edges=edge_views,
        nodes=node_views,
    )
    return write_text_atomic(out_path, page)
