// Runs service/static/app.js against a minimal DOM (no browser, no npm package) and asks two
// questions: the first answers with a route, warnings and sources, the second fails (HTTP 409).
// Prints the page's state after each as JSON for tests/test_service.py to check.
"use strict";
const fs = require("fs");
const vm = require("vm");

class FakeNode {
  constructor(tag) {
    this.tagName = tag; this.children = []; this.attrs = {}; this.own = ""; this.hidden = false;
    this.className = ""; this.listeners = {}; this.value = ""; this.checked = false; this.disabled = false;
    this.dataset = {};
    const classes = new Set();
    this.classList = { add: (c) => classes.add(c), remove: (c) => classes.delete(c),
                       toggle: (c, on) => (on ? classes.add(c) : classes.delete(c)), contains: (c) => classes.has(c) };
  }
  get textContent() { return this.own + this.children.map((c) => c.textContent).join(""); }
  set textContent(v) { this.children = []; this.own = String(v); }
  append(...nodes) { for (const n of nodes) this.children.push(typeof n === "string" ? text(n) : n); }
  replaceChildren(...nodes) { this.children = []; this.own = ""; this.append(...nodes); }
  setAttribute(k, v) { this.attrs[k] = v; }
  addEventListener(type, fn) { this.listeners[type] = fn; }
}
const text = (s) => { const n = new FakeNode("#text"); n.own = String(s); return n; };

const elements = {};
const docListeners = {};
const document = {
  getElementById: (id) => (elements[id] = elements[id] || new FakeNode("div")),
  createElement: (tag) => new FakeNode(tag),
  createElementNS: (_ns, tag) => new FakeNode(tag),
  createTextNode: text,
  querySelectorAll: () => [],
  addEventListener: (type, fn) => { docListeners[type] = fn; },
};

const replies = [];
function fetch() {
  const [status, body] = replies.shift();
  return Promise.resolve({ ok: status < 400, status, json: async () => body });
}

const state = () => ({
  route: elements.route.textContent, answer: elements.answer.textContent,
  warnings: elements.warnings.textContent, sources: elements.sources.textContent,
  left_out: elements["left-out"].textContent,
  result_hidden: elements.result.hidden, status: elements.status.textContent,
});

async function main() {
  const code = fs.readFileSync(process.argv[2], "utf8");
  vm.runInNewContext(code, { document, fetch, console, Promise, Map, Set, Math, Float64Array, Object, String });
  replies.push([200, { entities: 1, communities: 0, model: "m" }]);
  docListeners.DOMContentLoaded();
  await new Promise((r) => setTimeout(r, 10));
  document.getElementById("question").value = "first question";
  document.getElementById("mode").value = "auto";
  replies.push([200, { mode: "local", route: { reason: "OLD-ROUTE" }, answer: "OLD-ANSWER [F1]",
                       warnings: ["OLD-WARNING"], sources: [{ id: "F1", kind: "fact", text: "OLD-SOURCE", entities: [] }],
                       answer_format: "claims", claims: [{ statement: "OLD-ANSWER", sources: ["F1"] }],
                       left_out: [{ statement: "OLD-LEFT-OUT", sources: ["F1"], reason: "repeat", detail: "OLD-WHY" }],
                       citations: [], anchors: [], llm_calls: 1, input_tokens: 1, output_tokens: 1, timings: {} }]);
  await elements["ask-form"].listeners.submit({ preventDefault() {} });
  const first = state();
  document.getElementById("question").value = "second question";
  replies.push([409, { error: { code: "mode_unavailable", message: "NEW-ERROR", detail: {} } }]);
  await elements["ask-form"].listeners.submit({ preventDefault() {} });
  console.log(JSON.stringify({ first, second: state() }));
}
main().catch((e) => { console.error(e); process.exit(1); });
