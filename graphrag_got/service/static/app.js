// The page of `graphrag-got serve`: ask, show the cited answer, the evidence of a clicked citation
// and the neighbourhood of the cited entities as an SVG graph (own small force layout, no library).
// Every text from the server is inserted with textContent, never as HTML.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";
const CITE = /\[\s*([FCR]\d{1,4}(?:\s*[,;]\s*[FCR]\d{1,4})*)\s*\]/g;
const MAX_GRAPH_ENTITIES = 6;
const NEIGHBOURHOOD_LIMIT = 30;
const KIND = { fact: "fact", chunk: "source excerpt", report: "community report" };

const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  return node;
}

async function getJSON(url, options) {
  const res = await fetch(url, options);
  let body = null;
  try { body = await res.json(); } catch (_) { /* not JSON */ }
  if (!res.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${res.status}`;
    const err = new Error(message);
    err.status = res.status;
    err.body = body;
    throw err;
  }
  return body;
}

// --- health ---------------------------------------------------------------------------------
async function showHealth() {
  const line = $("health");
  try {
    const h = await getJSON("/health");
    line.textContent = `${h.entities} entities, ${h.communities} communities · model: ${h.model || "not configured"}`;
  } catch (err) {
    const h = err.body || {};
    line.textContent = h.neo4j_error ? h.neo4j_error : `service problem: ${err.message}`;
    line.classList.add("error");
  }
}

// --- answer and citations -------------------------------------------------------------------
let current = { byId: new Map(), cited: new Set() };

function citeButton(id) {
  const b = el("button", { type: "button", class: "cite", "data-id": id }, id);
  b.addEventListener("click", () => showEvidence(id));
  return b;
}

function renderAnswer(text) {
  const box = $("answer");
  box.replaceChildren();
  let last = 0;
  for (const m of text.matchAll(CITE)) {
    box.append(document.createTextNode(text.slice(last, m.index)));
    const ids = m[1].split(/\s*[,;]\s*/);
    box.append(document.createTextNode("["));
    ids.forEach((id, i) => {
      if (i) box.append(document.createTextNode(", "));
      box.append(current.byId.has(id) ? citeButton(id) : document.createTextNode(id));
    });
    box.append(document.createTextNode("]"));
    last = m.index + m[0].length;
  }
  box.append(document.createTextNode(text.slice(last)));
}

function showEvidence(id) {
  const c = current.byId.get(id);
  const panel = $("evidence");
  panel.replaceChildren();
  document.querySelectorAll(".cite").forEach((b) => b.classList.toggle("active", b.dataset.id === id));
  if (!c) {
    panel.append(el("p", { class: "muted" }, `${id} is not among the sources of this answer.`));
    return;
  }
  panel.append(el("p", {}, `[${c.id}] ${KIND[c.kind] || c.kind}`));
  panel.append(el("p", { class: "source-text" }, c.text));
  if (c.evidence && c.evidence !== c.text) panel.append(el("blockquote", { class: "evidence-sentence" }, c.evidence));
  // where in the document: "report.pdf p. 12", "manual.docx › Installation › Network"
  const place = (c.location || c.heading || "").split(" > ").join(" › ");
  const where = !c.document_id ? "" : !place ? c.document_id
    : place.startsWith("p. ") ? `${c.document_id} ${place}` : `${c.document_id} › ${place}`;
  if (where) panel.append(el("p", { class: "where document" }, `document: ${where}`));
  if (c.chunk_id) panel.append(el("p", { class: "where" }, `chunk: ${c.chunk_id}`));
  if (c.community_id !== null && c.community_id !== undefined) {
    panel.append(el("p", { class: "where" }, `community: ${c.community_id}`));
  }
}

// The claims the answer's check left out, each with why (not supported by the sources it cites,
// or a repeat of another claim), under the answer: a reader sees what was removed and the reason.
function renderLeftOut(r) {
  const box = $("left-out");
  box.replaceChildren();
  if (r.answer_format === "claims") {
    const left = r.left_out || [];
    const kept = (r.claims || []).length;
    const recited = (r.claims || []).filter((c) => c.cited_as && c.cited_as.length);
    const rewritten = (r.claims || []).filter((c) => c.pasted);
    const how = [recited.length ? recited.length + " re-cited" : "",
                 rewritten.length ? rewritten.length + " rewritten from a pasted context line" : ""].filter(Boolean);
    box.append(el("p", { class: "muted", id: "claims-summary" },
                  `claims: ${kept} kept${how.length ? " (" + how.join(", ") + ")" : ""}, ` +
                  `${left.length ? left.length + " left out" : "none left out"}` +
                  (r.answer_form === "extractive" ? " · extractive answer (built on the sources' own sentences)" : "")));
    if (rewritten.length) {
      box.append(el("h2", {}, "Rewritten (it pasted a context line; shown as the sentence of the fact it pasted)"));
      const list = el("ul", { class: "left-out" });
      for (const c of rewritten) {
        const li = el("li", {}, `${c.statement} [${c.sources.join(", ")}]`);
        li.append(el("span", { class: "reason" }, ` — written as: ${c.pasted}`));
        list.append(li);
      }
      box.append(list);
    }
    if (recited.length) {
      box.append(el("h2", {}, "Re-cited (its own ids did not state it; the ids shown do)"));
      const list = el("ul", { class: "left-out" });
      for (const c of recited) {
        const li = el("li", {}, `${c.statement} [${c.sources.join(", ")}]`);
        li.append(el("span", { class: "reason" }, ` — cited ${c.cited_as.join(", ")}`));
        list.append(li);
      }
      box.append(list);
    }
    if (left.length) {
      box.append(el("h2", {}, "Left out (not supported by its sources)"));
      const list = el("ul", { class: "left-out" });
      for (const c of left) {
        const ids = c.sources && c.sources.length ? ` [${c.sources.join(", ")}]` : "";
        const li = el("li", {}, `${c.statement}${ids}`);
        li.append(el("span", { class: "reason" }, ` — ${c.detail}`));
        list.append(li);
      }
      box.append(list);
    }
  }
  if (r.language_retry) box.append(el("p", { class: "muted" }, "The answer was asked again once in the question's language."));
}

function renderSources(sources) {
  const list = $("sources");
  list.replaceChildren();
  for (const s of sources) {
    const li = el("li", current.cited.has(s.id) ? { class: "cited" } : {});
    li.append(citeButton(s.id), document.createTextNode(" " + s.text));
    list.append(li);
  }
  if (!sources.length) list.append(el("li", { class: "muted" }, "no sources"));
}

function renderResult(r) {
  current = { byId: new Map(), cited: new Set((r.citations || []).map((c) => c.id)) };
  for (const c of r.sources || []) current.byId.set(c.id, c);
  for (const c of r.citations || []) current.byId.set(c.id, c);

  const route = $("route");
  route.replaceChildren(el("span", { class: "mode", id: "mode-chosen" }, r.mode),
                        document.createTextNode(" " + ((r.route && r.route.reason) || "")));
  if (r.answer) renderAnswer(r.answer);
  else $("answer").textContent = `Retrieval only: ${(r.sources || []).length} sources (no answer asked).`;

  const warnings = $("warnings");
  warnings.replaceChildren(...(r.warnings || []).map((w) => el("li", {}, w)));
  if (r.invented_citations) warnings.append(el("li", {}, `${r.invented_citations} invented citation(s) removed`));
  renderLeftOut(r);
  renderSources(r.sources || []);
  $("evidence").replaceChildren(el("p", { class: "muted" }, "Click a citation such as [F1] to see the sentence it stands on."));
  const t = r.timings || {};
  $("timings").textContent = `${r.llm_calls} LLM call(s), ${r.input_tokens + r.output_tokens} tokens` +
    (t.total !== undefined ? `, ${t.total.toFixed(2)} s` : "");
  $("result").hidden = false;
  drawNeighbourhood(graphNames(r));
}

function graphNames(r) {
  const names = [];
  const cited = r.citations && r.citations.length ? r.citations : (r.sources || []);
  for (const c of cited) for (const n of c.entities || []) if (!names.includes(n)) names.push(n);
  for (const n of r.anchors || []) if (!names.includes(n)) names.push(n);
  return names.slice(0, MAX_GRAPH_ENTITIES);
}

// --- neighbourhood graph --------------------------------------------------------------------
async function drawNeighbourhood(names) {
  const board = $("graph");
  const note = $("graph-note");
  board.replaceChildren();
  note.textContent = names.length ? "loading…" : "no entity cited";
  if (!names.length) return;
  const results = await Promise.allSettled(names.map((n) =>
    getJSON(`/entities/${encodeURIComponent(n)}?limit=${NEIGHBOURHOOD_LIMIT}`)));
  const nodes = new Map();
  const edges = new Map();
  const focus = new Set();
  for (const res of results) {
    if (res.status !== "fulfilled") continue;
    for (const e of res.value.entities) { nodes.set(e.uid, { id: e.uid, name: e.name, type: e.type }); focus.add(e.uid); }
    for (const r of res.value.relations) {
      nodes.has(r.start) || nodes.set(r.start, { id: r.start, name: r.start_name, type: r.start_type });
      nodes.has(r.end) || nodes.set(r.end, { id: r.end, name: r.end_name, type: r.end_type });
      edges.set(`${r.start}|${r.type}|${r.end}`, r);
    }
  }
  const missing = results.filter((r) => r.status !== "fulfilled").length;
  note.textContent = `${nodes.size} entities, ${edges.size} relations` + (missing ? ` (${missing} name(s) not found)` : "");
  layoutAndDraw(board, [...nodes.values()], [...edges.values()], focus);
}

function hue(text) {
  let h = 0;
  for (const ch of text) h = (h * 31 + ch.codePointAt(0)) % 360;
  return h;
}

// Fruchterman-Reingold: nodes repel (k²/d), edges attract (d²/k), moves capped by a cooling
// temperature; then the drawing is scaled to fill the board. Deterministic (starts on a circle).
function layout(nodes, links, W, H) {
  const n = nodes.length;
  const k = Math.sqrt((W * H) / Math.max(1, n)) * 0.8;
  nodes.forEach((node, i) => {
    const a = (2 * Math.PI * i) / Math.max(1, n);
    node.x = W / 2 + (W / 3) * Math.cos(a);
    node.y = H / 2 + (H / 3) * Math.sin(a);
  });
  const steps = 250;
  for (let step = 0; step < steps; step++) {
    const t = (W / 10) * (1 - step / steps) + 0.5;
    const dx = new Float64Array(n), dy = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      for (let j = i + 1; j < n; j++) {
        let x = nodes[i].x - nodes[j].x, y = nodes[i].y - nodes[j].y;
        const d = Math.max(Math.hypot(x, y), 0.01);
        const f = (k * k) / d;
        x = (x / d) * f; y = (y / d) * f;
        dx[i] += x; dy[i] += y; dx[j] -= x; dy[j] -= y;
      }
    }
    for (const [i, j] of links) {
      let x = nodes[i].x - nodes[j].x, y = nodes[i].y - nodes[j].y;
      const d = Math.max(Math.hypot(x, y), 0.01);
      const f = (d * d) / k;
      x = (x / d) * f; y = (y / d) * f;
      dx[i] -= x; dy[i] -= y; dx[j] += x; dy[j] += y;
    }
    for (let i = 0; i < n; i++) {
      const d = Math.max(Math.hypot(dx[i], dy[i]), 0.01);
      nodes[i].x += (dx[i] / d) * Math.min(d, t);
      nodes[i].y += (dy[i] / d) * Math.min(d, t);
    }
  }
  const xs = nodes.map((p) => p.x), ys = nodes.map((p) => p.y);
  const [x0, x1, y0, y1] = [Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)];
  const margin = 40, labelRoom = 90;  // labels are written to the right of their node
  const sx = (W - 2 * margin - labelRoom) / Math.max(x1 - x0, 1), sy = (H - 2 * margin) / Math.max(y1 - y0, 1);
  for (const p of nodes) {
    p.x = n === 1 ? W / 2 : margin + (p.x - x0) * sx;
    p.y = n === 1 ? H / 2 : margin + (p.y - y0) * sy;
  }
}

function layoutAndDraw(board, nodes, edges, focus) {
  const W = 640, H = 480;
  const index = new Map(nodes.map((n, i) => [n.id, i]));
  layout(nodes, edges.map((e) => [index.get(e.start), index.get(e.end)]), W, H);
  const edgeLabels = edges.length <= 15;  // more would hide the names; the tooltip always has it
  for (const e of edges) {
    const a = nodes[index.get(e.start)], b = nodes[index.get(e.end)];
    const line = svg("line", { x1: a.x, y1: a.y, x2: b.x, y2: b.y });
    const attrs = Object.entries(e.attributes || {}).map(([k, v]) => `${k}: ${v}`).join(", ");
    const title = svg("title");
    title.textContent = `${e.start_name} ${e.type} ${e.end_name}` + (attrs ? ` (${attrs})` : "") +
      (e.evidence && e.evidence.length ? `\n“${e.evidence[0].text}”` : "");
    line.append(title);
    board.append(line);
    if (!edgeLabels) continue;
    const label = svg("text", { x: (a.x + b.x) / 2, y: (a.y + b.y) / 2, class: "edge", "text-anchor": "middle" });
    label.textContent = e.type;
    board.append(label);
  }
  for (const n of nodes) {
    const circle = svg("circle", { cx: n.x, cy: n.y, r: focus.has(n.id) ? 9 : 6,
                                   fill: `hsl(${hue(n.type)}, 55%, 55%)`, "data-uid": n.id });
    if (focus.has(n.id)) circle.classList.add("cited");
    const title = svg("title");
    title.textContent = `${n.name} (${n.type})`;
    circle.append(title);
    board.append(circle);
    const label = svg("text", { x: n.x + 11, y: n.y + 4, class: "node" });
    label.textContent = n.name;
    board.append(label);
  }
}

// --- the form -------------------------------------------------------------------------------
let asked = 0;  // the number of the latest request: a slower earlier answer must not overwrite it

// Remove everything the previous request showed (route, answer, warnings, sources, evidence,
// graph, timings), so an error or a new answer never appears under an old one.
function clearResult() {
  current = { byId: new Map(), cited: new Set() };
  for (const id of ["route", "answer", "warnings", "left-out", "sources", "evidence", "graph"]) $(id).replaceChildren();
  $("graph-note").textContent = "";
  $("timings").textContent = "";
  $("result").hidden = true;
}

async function onAsk(event) {
  event.preventDefault();
  const status = $("status");
  const button = $("ask");
  const question = $("question").value.trim();
  if (!question) { status.textContent = "Type a question first."; status.className = "error"; return; }
  const mine = ++asked;
  clearResult();
  button.disabled = true;
  status.className = "";
  status.textContent = "searching…";
  try {
    const body = { question, mode: $("mode").value, answer: $("use-llm").checked };
    const r = await getJSON("/ask", { method: "POST", headers: { "content-type": "application/json" },
                                      body: JSON.stringify(body) });
    if (mine !== asked) return;
    status.textContent = "";
    renderResult(r);
  } catch (err) {
    if (mine !== asked) return;
    status.textContent = err.message;
    status.className = "error";
  } finally {
    if (mine === asked) button.disabled = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("ask-form").addEventListener("submit", onAsk);
  showHealth();
});
