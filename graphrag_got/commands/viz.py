"""`graphrag-got viz`: write the graph (from extraction.json or from Neo4j) as one HTML page."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from graphrag_got.errors import ConfigError, ExtractionFileError
from graphrag_got.report import DEFAULT_NEO4J_LIMIT

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser("viz", help="write a self-contained HTML view of the graph or of one community")
    # dest differs from the global --out (the output folder) so neither overrides the other
    p.add_argument("--out", dest="html_out", type=Path, default=None,
                   help="HTML file to write (default: <out>/graph.html)")  # fmt: skip
    src = p.add_mutually_exclusive_group()
    src.add_argument("--extraction", type=Path, default=None,
                     help="read an extraction.json (default: <out>/extraction.json)")  # fmt: skip
    src.add_argument("--from-neo4j", action="store_true", help="read the graph loaded in Neo4j")
    p.add_argument("--community", default=None, help="only this community (with --from-neo4j)")
    p.add_argument("--limit", type=int, default=DEFAULT_NEO4J_LIMIT,
                   help="at most this many entities from Neo4j, best connected first (default: %(default)s)")  # fmt: skip
    p.add_argument("--title", default=None, help="page title")
    p.set_defaults(func=run)


def _read_extraction(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExtractionFileError(f"{path} does not exist; run `graphrag-got extract` first or pass --extraction") from None
    except json.JSONDecodeError as exc:
        raise ExtractionFileError(f"{path} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}") from None
    except OSError as exc:
        raise ExtractionFileError(f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("entities", []), list):
        raise ExtractionFileError(f"{path} is not an extraction file (expected an object with an 'entities' list)")
    return data


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.report import viz

    out = args.html_out or Path(settings.files.out_dir) / "graph.html"
    if args.limit < 1:
        raise ConfigError(f"--limit must be at least 1, got {args.limit}")
    if args.from_neo4j:
        from graphrag_got.graph.db import connect

        driver = connect(settings.neo4j)
        try:
            nodes, edges, titles = viz.graph_from_neo4j(driver, settings.neo4j, community_id=args.community, limit=args.limit)
        finally:
            driver.close()
        title = args.title or (f"Community {args.community}" if args.community is not None else "Knowledge graph (Neo4j)")
        if args.community is not None and titles.get(str(args.community)):
            title = args.title or f"Community {args.community}: {titles[str(args.community)]}"
        if not nodes:
            what = f"community {args.community!r}" if args.community is not None else "the database"
            print(f"warning: no entities found in {what}")
    else:
        if args.community is not None:
            raise ConfigError("--community needs --from-neo4j (communities exist only in the loaded graph)")
        path = args.extraction or Path(settings.files.out_dir) / "extraction.json"
        nodes, edges = viz.graph_from_extraction(_read_extraction(path))
        titles = {}
        title = args.title or f"Knowledge graph: {path.name}"
    written = viz.render_html(nodes, edges, out, title, legend_labels=titles)
    uids = {n["uid"] for n in nodes}
    n_edges = sum(1 for e in edges if e["source"] in uids and e["target"] in uids)
    print(f"wrote {written} ({len(nodes)} nodes, {n_edges} edges)")
    return 0
