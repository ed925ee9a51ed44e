"""`graphrag-got review [EXTRACTION_JSON]`: a page per document showing, passage by passage, what the
extraction kept (entities highlighted in the text, facts beside their sentence) and what it refused, and why."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover - imported when the command runs, not when the parser is built
    from graphrag_got.config import Settings
    from graphrag_got.ontology.model import Ontology

logger = logging.getLogger(__name__)


def register(sub: "argparse._SubParsersAction") -> None:
    p = sub.add_parser(
        "review",
        help="write HTML pages showing each passage with what was extracted from it and what was refused",
        description="Write <out dir>/review/index.html and one page per document: each passage with its kept "
                    "entities highlighted by class, its kept facts beside the sentence that states them, and its "
                    "refused items with their reason codes; filters by class, relation and reason. The pages are "
                    "self-contained files. `graphrag-got serve` shows the same pages at /review.",
    )
    p.add_argument("extraction", nargs="?", default=None, metavar="EXTRACTION_JSON",
                   help="extraction file (default: <out dir>/extraction.json)")
    p.add_argument("--out-dir", default=None, metavar="DIR",
                   help="the pages go into DIR/review/ (default: the out dir)")
    p.set_defaults(func=run)


def _ontology(settings: Settings) -> Ontology | None:
    """The configured ontology when it loads (its class order fixes the colours); the pages work without it."""
    from graphrag_got.errors import GraphragGotError
    from graphrag_got.ontology.model import Ontology

    path = Path(settings.files.ontology_path)
    if not path.is_file():
        return None
    try:
        return Ontology.from_file(path, stored_examples=False)
    except GraphragGotError as exc:
        logger.warning("the ontology %s does not load (%s); the pages use the classes of the extraction",
                       path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return None


def run(args: argparse.Namespace, settings: Settings) -> int:
    from graphrag_got.teach.review import build_review
    from graphrag_got.teach.review_render import write_review

    given = getattr(args, "extraction", None)
    extraction = Path(given) if given else settings.files.out_dir / "extraction.json"
    out_dir = Path(args.out_dir) if getattr(args, "out_dir", None) else settings.files.out_dir
    book = build_review(extraction, _ontology(settings))  # ExtractionFileError names the file and the problem
    written = write_review(book, out_dir / "review")
    c = book.counts
    print(f"{len(book.documents)} documents, {c.passages} passages: {c.entities} kept entities, {c.facts} kept facts, "
          f"{c.refusals} refusals")
    for path in written:
        print(f"wrote {path}")
    return 0
