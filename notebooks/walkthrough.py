# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.7
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# <!-- Source of truth: notebooks/walkthrough.py (jupytext percent format). After editing it, run
#      `.venv/bin/jupytext --sync notebooks/walkthrough.py` and commit both files;
#      tests/test_notebook.py checks that they agree and that the .ipynb carries no outputs. -->
# # graphrag_got walkthrough
#
# From a text corpus to a Neo4j knowledge graph that obeys an ontology, and questions over it:
#
# 1. settings and a scratch folder,
# 2. the ontology: read it, edit it (validated), and see a broken edit refused with its JSON path,
# 3. extraction with the LLM, and what the ontology refused (the discarded-relations report),
# 4. revalidation of the stored answers against the edited ontology (no LLM call),
# 5. loading into Neo4j, communities and their summaries,
# 6. one community drawn inline, and the HTML view of the whole graph,
# 7. a local question (with its context) and a global question.
#
# The example corpus and ontology are in Spanish (Game of Thrones); the code is not tied to them.
#
# **Before running.** Settings come from the environment and `.env` (see the settings reference,
# `docs/reference/settings.md`); `GRAPHRAG_CORPUS` chooses the corpus. The notebook writes only into its scratch folder
# (`out/notebook/` in the repository, or `GRAPHRAG_NOTEBOOK_DIR`), but step 5 *writes into the Neo4j
# database at `NEO4J_URI`*: a document with the same id as one already loaded is replaced, and the
# communities are recomputed. Extraction and summaries call the LLM once per chunk / community; the
# answers are cached, so a second run is fast.

# %%
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import graphrag_got
from graphrag_got.config import Settings
from IPython.display import HTML, Markdown, display


def find_repo_root() -> Path:
    """The checkout this notebook lives in: walk up from the working folder (Jupyter starts the
    kernel in the notebook's folder), else the folder holding the installed package."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "graphrag_got" / "__init__.py").is_file() and (folder / "ontology").is_dir():
            return folder
    return Path(graphrag_got.__file__).resolve().parents[1]


ROOT = find_repo_root()
WORK = Path(os.environ.get("GRAPHRAG_NOTEBOOK_DIR") or ROOT / "out" / "notebook").resolve()
WORK.mkdir(parents=True, exist_ok=True)


def under_root(p: Path) -> Path:
    """Relative settings are relative to the repository root, as for the CLI run from there."""
    return p if p.is_absolute() else ROOT / p


base = Settings.load()
ONTOLOGY_ORIGINAL = under_root(base.files.ontology_path)
ONTOLOGY_COPY = WORK / "ontology.json"          # the notebook's own copy: the original is never edited
shutil.copyfile(ONTOLOGY_ORIGINAL, ONTOLOGY_COPY)

settings = base.with_overrides(
    home=under_root(base.files.home),
    models_path=under_root(base.models_dir),
    corpus_path=under_root(base.files.corpus_path),
    ontology_path=ONTOLOGY_COPY,
    out_dir=WORK / "out",
)
OUT = settings.files.out_dir
OUT.mkdir(parents=True, exist_ok=True)


def md_table(headers, rows) -> Markdown:
    """A small Markdown table (cells with '|' or newlines are escaped)."""
    def cell(v):
        return str("" if v is None else v).replace("|", "\\|").replace("\n", " ")
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return Markdown("\n".join(lines))


display(md_table(["setting", "value"], [
    ["repository", ROOT],
    ["scratch folder", WORK],
    ["corpus (GRAPHRAG_CORPUS)", settings.files.corpus_path],
    ["ontology (copy of)", ONTOLOGY_ORIGINAL],
    ["LLM provider", settings.llm.provider],
    ["llama.cpp model / Ollama model", f"{settings.llm.llamacpp_model} / {settings.llm.ollama_model}"],
    ["schema bounds (entities, relations)", f"{settings.extract.max_entities}, {settings.extract.max_relations}"],
    ["Neo4j", f"{settings.neo4j.uri} (database {settings.neo4j.database})"],
    ["state folder (cache, models)", settings.files.home],
]))

# %% [markdown]
# ## 1. The ontology
#
# The ontology declares the entity classes (with their properties) and the relations with their
# domain (subject classes) and range (object classes). `describe()` is the text the extraction prompt
# uses, and what `graphrag-got ontology show` prints.

# %%
from graphrag_got.ontology.model import Ontology
from graphrag_got.errors import OntologyError

onto = Ontology.from_file(ONTOLOGY_COPY)
print(onto.describe())
print(f"\nhash {onto.hash[:12]} · {len(onto.classes)} classes · {len(onto.relations)} relations")

# %% [markdown]
# ### Editing the ontology
#
# The file is plain JSON: edit it with any tool, then validate it with `Ontology.from_dict` (or
# `graphrag-got ontology check`). Here we make two edits to a *separate* file, `ontology_edited.json`,
# to compare later:
#
# * **narrow** `PARTICIPA_EN`: only a `Personaje` can take part in an event (no more houses or orders);
# * **widen** `PERTENECE_A`: a character can belong to a `CasaNoble` *or* an `Organizacion`.
#
# The extraction below uses the unedited copy; section 3 shows what the edits change.

# %%
raw = json.loads(ONTOLOGY_COPY.read_text(encoding="utf-8"))
edited_raw = json.loads(json.dumps(raw))                  # deep copy
for rel in edited_raw["relaciones"]:
    if rel["nombre"] == "PARTICIPA_EN":
        rel["dominio"] = ["Personaje"]
    if rel["nombre"] == "PERTENECE_A":
        rel["rango"] = ["CasaNoble", "Organizacion"]

edited = Ontology.from_dict(edited_raw, source="ontology_edited.json")   # raises OntologyError if invalid
ONTOLOGY_EDITED = WORK / "ontology_edited.json"
ONTOLOGY_EDITED.write_text(json.dumps(edited_raw, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

for name in ("PARTICIPA_EN", "PERTENECE_A"):
    before, after = onto.relation(name), edited.relation(name)
    print(f"{name:<13} before: {' | '.join(before.domain)} -> {' | '.join(before.range)}")
    print(f"{'':<13} after:  {' | '.join(after.domain)} -> {' | '.join(after.range)}")
print(f"\nedited ontology valid, written to {ONTOLOGY_EDITED} (hash {edited.hash[:12]})")

# %% [markdown]
# ### A broken edit is refused, with its JSON path
#
# Now a deliberate mistake: `GOBIERNA` gets the range class `Ciudad`, which is not declared in
# `clases`. `graphrag-got ontology check` exits with code 1 and names the exact place
# (`$.relaciones[i].rango[j]`); from Python, `OntologyError.problems` holds the same `(json_path,
# message)` pairs.

# %%
broken_raw = json.loads(json.dumps(raw))
for rel in broken_raw["relaciones"]:
    if rel["nombre"] == "GOBIERNA":
        rel["rango"] = ["Region", "Ciudad"]          # 'Ciudad' is not a declared class
ONTOLOGY_BROKEN = WORK / "ontology_broken.json"
ONTOLOGY_BROKEN.write_text(json.dumps(broken_raw, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")

check = subprocess.run([sys.executable, "-m", "graphrag_got.cli", "ontology", "check", str(ONTOLOGY_BROKEN)],
                       capture_output=True, text=True)
print(f"$ graphrag-got ontology check {ONTOLOGY_BROKEN.name}    -> exit code {check.returncode}")
print(check.stdout + check.stderr)
assert check.returncode == 1, "the broken ontology should have been refused"

try:
    Ontology.from_dict(broken_raw, source=ONTOLOGY_BROKEN.name)
except OntologyError as exc:
    display(md_table(["JSON path", "problem"], exc.problems))

# %% [markdown]
# ## 2. Extraction
#
# `run_extraction` splits the corpus into chunks (paragraphs for `.txt`, headings for `.md`) and asks
# the LLM for entities and relations, its output constrained by a JSON schema generated from the
# ontology. Every answer is validated again in code; what the ontology does not allow is kept aside
# with a reason. Each chunk's raw answer is cached, so rerunning this cell costs no LLM call.
# Long steps report their progress to a callback (`graphrag_got.common.progress`); here it prints a line.

# %%
from graphrag_got.extract.run import run_extraction
from graphrag_got.llm.factory import resolve_provider
from graphrag_got.common.progress import ProgressEvent


def show_progress(event: ProgressEvent | str) -> None:
    """A progress callback: one line per finished unit (chunk, community...)."""
    if isinstance(event, str):  # some steps report plain status lines
        print(event)
    elif event.done:
        stats = "".join(f" · {k} {v}" for k, v in event.stats.items())
        print(f"  [{event.done}/{event.total if event.total is not None else '?'}] {event.step}{stats}")


print(f"corpus {settings.files.corpus_path} · provider {resolve_provider(settings.llm)}")
ex = run_extraction(settings.extract, onto, progress=show_progress,
                    files=settings.files, chunking=settings.chunking, llm=settings.llm)
print("\n".join(ex.lines()))

# %% [markdown]
# ### What was refused
#
# `extraction.json` keeps every refused triple with its reason (`domain_violation`,
# `range_violation`, `unknown_relation`, `subject_not_extracted`, ...). `build_report` groups them
# by relation, reason and the offending type, with the types the model gave:

# %%
from graphrag_got.report.discarded import write_report
from graphrag_got.report.discarded_build import build_report

report = build_report(ex.out_path, onto)
print(f"{ex.rejected_relations} refused relation(s), {ex.rejected_entities} refused entit(ies), "
      f"{ex.failed_chunks} chunk(s) with an unusable answer")
if report.relation_groups:
    display(md_table(["reason", "relation", "offending type", "types given (subject → object)", "count"],
                     [[g.reason, g.relation, g.offending_type, ", ".join(f"{a} → {b}" for a, b in g.type_pairs),
                       g.count] for g in report.relation_groups[:15]]))
else:
    print("nothing was refused")

# %% [markdown]
# The same information as a report (`graphrag-got report`): groups with example triples, the source
# excerpt and a suggestion of what to change in the ontology. Written as Markdown, HTML, CSV and JSON;
# the Markdown is shown here.

# %%
report_paths = write_report(ex.out_path, OUT, ontology=onto)
for fmt, path in report_paths.items():
    print(f"{fmt:<5} {path}")
report_md = Path(report_paths["md"]).read_text(encoding="utf-8")
limit = 12000
display(Markdown(report_md if len(report_md) <= limit
                 else report_md[:limit] + f"\n\n*... cut here, full report in `{report_paths['md']}`*"))

# %% [markdown]
# ## 3. Revalidation: the edited ontology vs the original
#
# `run_extraction(..., revalidate=True)` takes the stored answers and validates them against another
# ontology, in seconds, without calling the LLM. We revalidate against both ontologies (into separate
# files, so `extraction.json` stays as it is) and compare. What changes depends on what the model
# wrote: with few chunks or a small model, the edits may change nothing.

# %%
# no progress callback: this takes well under a second
re_orig = run_extraction(settings.extract, onto, out_path=OUT / "revalidated_original.json", revalidate=True,
                         files=settings.files, chunking=settings.chunking, llm=settings.llm)
re_edit = run_extraction(settings.extract, edited, out_path=OUT / "revalidated_edited.json", revalidate=True,
                         files=settings.files, chunking=settings.chunking, llm=settings.llm)
assert re_orig.llm_calls == 0 and re_edit.llm_calls == 0

reasons = sorted(set(re_orig.by_reason) | set(re_edit.by_reason))
rows = [["relations kept", re_orig.relations, re_edit.relations],
        ["relations refused", re_orig.rejected_relations, re_edit.rejected_relations]]
rows += [[f"refused: {r}", re_orig.by_reason.get(r, 0), re_edit.by_reason.get(r, 0)] for r in reasons]
display(md_table(["", "original ontology", "edited ontology"], rows))


from graphrag_got.report.viz import graph_from_extraction


def kept(summary):
    """The relations an extraction kept, as (subject name, relation, object name)."""
    nodes, edges = graph_from_extraction(summary.out_path)
    name = {n["uid"]: n["name"] for n in nodes}
    return {(name[e["source"]], e["type"], name[e["target"]]) for e in edges}


gained, lost = kept(re_edit) - kept(re_orig), kept(re_orig) - kept(re_edit)
print(f"kept only with the edited ontology: {len(gained)}; kept only with the original: {len(lost)}")
for s, rel, o in sorted(gained)[:10]:
    print(f"  + {s} {rel} {o}")
for s, rel, o in sorted(lost)[:10]:
    print(f"  - {s} {rel} {o}")

# %% [markdown]
# ## 4. Neo4j: load the graph
#
# `ensure_running` reuses the Neo4j answering at `NEO4J_URI` (Docker, embedded, any) or starts the
# embedded one. `load_extraction` MERGEs the extraction in batches: entities become
# `(:Entity:<Class>)` nodes, relations typed relationships, plus `Document` and `Chunk` nodes for
# provenance. Loading is idempotent and incremental per document. We load the extraction made with
# the original ontology.

# %%
from graphrag_got.graph.db import connect
from graphrag_got.graph.load import load_extraction
from graphrag_got.graph.stats import graph_stats
from graphrag_got.graph.server import ensure_running

info = ensure_running(settings.neo4j, files=settings.files)
print(f"Neo4j at {info.uri}" + (" (started now)" if info.started else " (already running)"))
driver = connect(settings.neo4j)
ls = load_extraction(driver, settings.neo4j, ex.out_path, onto, graph=settings.graph, extract=settings.extract,
                     embedding=settings.embedding, code=settings.code, llm=settings.llm, files=settings.files)
print(f"documents +{ls.documents_added} ~{ls.documents_updated} ={ls.documents_unchanged} -{ls.documents_pruned}; "
      f"entities written {ls.entities_written}, relationships written {ls.relations_written}, "
      f"refused {ls.relations_refused}")
stats = graph_stats(driver, settings.neo4j, onto)
print(f"graph: {stats['entities']} entities, {stats['entity_relations']} relationships, "
      f"ontology violations {stats['violations']}, missing symmetric directions {stats['missing_symmetric']}")

# %% [markdown]
# ## 5. Communities
#
# Louvain over the entity graph (weighted by how many chunks support each relation) groups entities
# into communities, stored as `(:Community)` nodes. Each community with two or more members then gets
# an LLM-written title and summary (cached by content): global search reads these summaries.

# %%
from graphrag_got.communities.detect import detect_communities
from graphrag_got.communities.graph import fact_line, read_entity_graph
from graphrag_got.communities.reports import summarize_communities
from graphrag_got.communities.store import stored_communities, write_communities

eg = read_entity_graph(driver, settings.neo4j, onto, communities=settings.communities, files=settings.files)
comms = detect_communities(eg, settings.communities.resolution, settings.communities.seed)
write_communities(driver, settings.neo4j, comms, communities=settings.communities, graph_settings=settings.graph)
sizes = [c.size for c in comms]
print(f"{len(comms)} communities; sizes {sizes[:15]}{' ...' if len(sizes) > 15 else ''}")
if any(s > 1 for s in sizes):
    sm = summarize_communities(driver, settings.neo4j, ontology=onto, progress=show_progress,
                               llm=settings.llm, files=settings.files, embedding=settings.embedding,
                               graph_settings=settings.graph)
    print(f"summaries: {sm.generated} new, {sm.cached + sm.unchanged} reused, {len(sm.failed)} failed; "
          f"{sm.llm_calls} LLM calls")
else:
    print("no community has two members or more: nothing to summarize")

# %% [markdown]
# ### One community up close
#
# The largest community: its members, the facts among them and its summary.

# %%
stored = {c["id"]: c for c in stored_communities(driver, settings.neo4j, llm=settings.llm)}
multi = [c for c in comms if c.size > 1]          # comms are sorted by size, largest first
chosen = multi[0] if multi else None

if chosen is None:
    print("no community with two members or more (the extraction kept too few relations); "
          "the drawing below shows the whole entity graph instead")
else:
    members = set(chosen.members)
    info_c = stored.get(chosen.id, {})
    print(f"community {chosen.id}: {chosen.size} members")
    print(f"title:   {info_c.get('title') or '(no summary)'}")
    print(f"summary: {info_c.get('summary') or '(no summary)'}")
    display(md_table(["member", "class", "properties"],
                     [[eg.entities[u]["name"], eg.entities[u]["type"],
                       "; ".join(f"{k}: {v}" for k, v in eg.entities[u]["properties"].items())]
                      for u in sorted(members, key=lambda u: eg.entities[u]["name"])]))
    facts = [r for r in eg.relations if r.start in members and r.end in members]
    print("facts:")
    for r in facts:
        print("  - " + fact_line(eg.entities[r.start]["name"], r.type, eg.entities[r.end]["name"], dict(r.attributes)))

# %% [markdown]
# ### Drawing it
#
# networkx + matplotlib: nodes labelled by name and coloured by class, edges labelled by relation
# (symmetric ones marked "sym."; the arrow then only shows the stored order). The figure is also
# saved as `community.png` in the scratch folder.

# %%
# %matplotlib inline
import matplotlib.pyplot as plt
import networkx as nx
from matplotlib.lines import Line2D


def draw_entities(eg, uids, title, max_nodes=40):
    """Draw the given entities and the relations among them (the best connected ``max_nodes``)."""
    g = nx.DiGraph()
    uids = sorted(uids, key=lambda u: (-eg.graph.degree(u) if u in eg.graph else 0, u))[:max_nodes]
    keep = set(uids)
    g.add_nodes_from(uids)
    labels_on_edge = {}
    for r in eg.relations:
        if r.start in keep and r.end in keep and r.start != r.end:
            g.add_edge(r.start, r.end)
            labels_on_edge.setdefault((r.start, r.end), []).append(r.type + (" (sym.)" if r.symmetric else ""))
    fig, ax = plt.subplots(figsize=(11, 7.5))
    ax.set_title(title, fontsize=13)
    ax.axis("off")
    if not uids:
        ax.text(0.5, 0.5, "the graph has no entities", ha="center", va="center", fontsize=14)
        return fig
    classes = sorted({eg.entities[u]["type"] for u in uids})
    cmap = plt.get_cmap("tab10")
    color = {c: cmap(i % 10) for i, c in enumerate(classes)}
    pos = nx.spring_layout(g.to_undirected(), seed=7, k=1.8 / max(1, len(uids)) ** 0.5, iterations=200)
    nx.draw_networkx_nodes(g, pos, ax=ax, node_size=900, alpha=0.9,
                           node_color=[color[eg.entities[u]["type"]] for u in g.nodes])
    nx.draw_networkx_edges(g, pos, ax=ax, arrows=True, arrowsize=14, width=1.3, edge_color="#777777",
                           node_size=900, connectionstyle="arc3,rad=0.08")
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=9,
                            labels={u: eg.entities[u]["name"] for u in g.nodes},
                            bbox=dict(boxstyle="round,pad=0.2", fc="white", ec="none", alpha=0.75))
    nx.draw_networkx_edge_labels(g, pos, ax=ax, font_size=8, font_color="#444444",
                                 edge_labels={e: "\n".join(t) for e, t in labels_on_edge.items()},
                                 bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.7))
    ax.legend(handles=[Line2D([0], [0], marker="o", ls="", markersize=11, color=color[c], label=c) for c in classes],
              loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, title="class")
    ax.margins(0.12)
    fig.tight_layout()
    return fig


if chosen is not None:
    title = (stored.get(chosen.id) or {}).get("title") or f"{chosen.size} members"
    fig = draw_entities(eg, chosen.members, f"community {chosen.id}: {title}")
else:
    fig = draw_entities(eg, list(eg.entities), "the whole entity graph")
fig.savefig(WORK / "community.png", dpi=110, bbox_inches="tight")
plt.show()

# %% [markdown]
# ### The HTML view
#
# `graphrag_got.report.viz.render_html` writes one self-contained page (static SVG, pan/zoom, click a node to
# see its neighbours), coloured by community, the same as `graphrag-got viz`. It is embedded below;
# the file can also be opened in any browser.

# %%
import html as html_lib

from graphrag_got.report.viz import graph_from_neo4j, render_html

nodes, edges, titles = graph_from_neo4j(driver, settings.neo4j)
graph_html = render_html(nodes, edges, OUT / "graph.html", "graphrag_got walkthrough", legend_labels=titles or None)
print(f"{len(nodes)} nodes, {len(edges)} edges -> {graph_html}")
page = graph_html.read_text(encoding="utf-8")
display(HTML(f'<div><iframe srcdoc="{html_lib.escape(page, quote=True)}" '
             f'style="width:100%;height:560px;border:1px solid #ccc"></iframe></div>'))

# %% [markdown]
# ## 6. Questions
#
# **Local search** finds the entities the question names (anchors, by exact, partial or fuzzy match,
# helped by names the LLM picks out), collects the facts around them in the graph plus source
# excerpts, and answers from that context only. If the question names nothing in the graph, we ask
# instead about the best connected entity.

# %%
from graphrag_got.errors import SearchError
from graphrag_got.search.local import local_search

LOCAL_QUESTION = "¿Cómo se conocieron Jon Snow y Daenerys?"


def show_local(lr):
    print(f"Q: {lr.question}")
    print("anchors:", ", ".join(f"{a.name} ({a.type}, {a.how})" for a in lr.anchors) or "none")
    print(f"context ({len(lr.facts)} facts, {len(lr.excerpts)} excerpts):")
    print(lr.context_text())
    print(f"\nA: {lr.answer}")


try:
    lr = local_search(driver, settings.neo4j, LOCAL_QUESTION, ontology=onto,
                      search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    if lr.no_anchor and eg.entities:
        print(f"'{LOCAL_QUESTION}' names no entity of this graph; asking about the best connected one.\n")
        hub = max(eg.entities, key=lambda u: (eg.graph.degree(u), u))
        lr = local_search(driver, settings.neo4j, f"¿Qué se sabe de {eg.entities[hub]['name']}?", ontology=onto,
                          search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    show_local(lr)
except SearchError as exc:
    print(f"local search not possible: {exc}")

# %% [markdown]
# **Global search** is map-reduce over the community summaries: each summary is rated for relevance
# to the question (0-10) with a short extract; the extracts above the threshold are combined into one
# answer.

# %%
from graphrag_got.search.global_ import global_search

GLOBAL_QUESTION = "¿Cuáles son las principales facciones en conflicto y qué las mueve?"
try:
    gr = global_search(driver, settings.neo4j, GLOBAL_QUESTION,
                       search=settings.search, llm=settings.llm, files=settings.files, embedding=settings.embedding)
    print(f"Q: {GLOBAL_QUESTION}")
    display(md_table(["community", "title", "relevance", "kept"],
                     [[r.id, r.title, r.relevance if r.error is None else f"error: {r.error[:60]}",
                       "yes" if r.kept else ""] for r in gr.ratings]))
    print(f"A: {gr.answer}")
except SearchError as exc:
    print(f"global search not possible: {exc}")

# %% [markdown]
# ## Files written
#
# Everything the notebook wrote is in its scratch folder; the Neo4j graph stays loaded.

# %%
driver.close()
for path in sorted(WORK.rglob("*")):
    if path.is_file():
        print(f"{path.stat().st_size:>9,d}  {path.relative_to(WORK)}")
