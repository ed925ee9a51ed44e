"""The review pages as HTML (``templates/review.html.j2``), from a :class:`~graphrag_got.teach.review.ReviewBook`.

Two ways to deliver them:

* files (``graphrag-got review``): ``index.html`` and one ``<document>.html`` per document in a folder,
  each self-contained (style and script inline, nothing fetched), readable from disk;
* served (``graphrag-got serve``: ``GET /review``, ``GET /review/{document}``): the same pages linking
  their style and script (the service's Content-Security-Policy runs no inline code), and, when the
  service was started with ``--allow-examples``, the "edit as example" mode with the data it needs.

The templates escape every value; Python hands them data, never markup.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from graphrag_got.common.files import write_text_atomic
from graphrag_got.errors import ConfigError
from graphrag_got.report.html import ENV
from graphrag_got.teach.review import ReviewBook, ReviewDocument

logger = logging.getLogger(__name__)

TEMPLATE = "review.html.j2"
#: the served assets: URL name -> (template, media type)
ASSETS = {"review.css": ("review.css.j2", "text/css; charset=utf-8"),
          "review.js": ("review.js.j2", "text/javascript; charset=utf-8")}
INDEX_FILE = "index.html"


class PageLinks(BaseModel):
    """Where a page's links point: the index, each document's page, and the style and script (unless inline)."""

    model_config = ConfigDict(frozen=True)

    index: str
    documents: dict[str, str]
    inline: bool
    css: str = ""
    js: str = ""


def file_links(book: ReviewBook) -> PageLinks:
    """Links between the files of one folder (relative: the folder can be moved or opened anywhere)."""
    return PageLinks(index=INDEX_FILE, documents={d.id: d.page for d in book.documents}, inline=True)


def served_links(book: ReviewBook, prefix: str = "/review", assets: str = "/review-assets") -> PageLinks:
    """Links of the served pages: ``/review`` and ``/review/<page name>``, style and script from ``assets``."""
    return PageLinks(index=prefix, documents={d.id: f"{prefix}/{d.page}" for d in book.documents}, inline=False,
                     css=f"{assets}/review.css", js=f"{assets}/review.js")


def edit_data(book: ReviewBook, doc: ReviewDocument, save_url: str) -> dict[str, Any]:
    """What the edit mode of ``doc``'s page reads (embedded as JSON): where to save, the ontology's classes
    and relations (domain, range), and per passage its kept entities and facts."""
    onto = book.ontology
    return {
        "save_url": save_url,
        "ontology": {"classes": list(onto.classes) if onto else [],
                     "relations": [r.model_dump(mode="json") for r in onto.relations] if onto else []},
        "chunks": {c.id: {"entities": [{"uid": e.uid, "name": e.name, "class_name": e.class_name,
                                        "example_name": e.example_name, "placed": e.placed} for e in c.entities],
                          "facts": [{"id": f.id, "relation": f.relation, "subject_uid": f.subject_uid,
                                     "object_uid": f.object_uid, "attributes": f.attributes} for f in c.facts]}
                   for c in doc.chunks},
    }


def render_index(book: ReviewBook, links: PageLinks) -> str:
    """The page listing every document with its counts."""
    return ENV.get_template(TEMPLATE).render(book=book, doc=None, page=links, editing=False, edit_data=None)


def render_document(book: ReviewBook, doc: ReviewDocument, links: PageLinks, *, save_url: str | None = None) -> str:
    """One document's page; ``save_url`` (served with ``--allow-examples`` only) turns on the edit mode."""
    data = edit_data(book, doc, save_url) if save_url else None
    return ENV.get_template(TEMPLATE).render(book=book, doc=doc, page=links, editing=data is not None, edit_data=data)


def render_asset(name: str) -> tuple[str, str] | None:
    """The text and media type of a served asset (``review.css``, ``review.js``), or None."""
    found = ASSETS.get(name)
    if found is None:
        return None
    template, media = found
    return ENV.get_template(template).render(), media


def write_review(book: ReviewBook, folder: str | Path) -> list[Path]:
    """Write ``index.html`` and every document's page into ``folder``; returns the paths, index first.
    Raises ConfigError when the folder cannot be written."""
    out = Path(folder)
    links = file_links(book)
    pages = [(out / INDEX_FILE, render_index(book, links))]
    pages += [(out / doc.page, render_document(book, doc, links)) for doc in book.documents]
    try:
        out.mkdir(parents=True, exist_ok=True)
        for path, text in pages:
            write_text_atomic(path, text)
    except OSError as exc:
        raise ConfigError(f"{out}: cannot write the review pages ({exc}); pass another --out-dir.") from None
    logger.info("wrote %d review pages in %s", len(pages), out)
    return [path for path, _ in pages]


__all__ = ["ASSETS", "PageLinks", "edit_data", "file_links", "render_asset", "render_document", "render_index",
           "served_links", "write_review"]
