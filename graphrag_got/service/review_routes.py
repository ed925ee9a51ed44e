"""The review pages in the service: ``GET /review`` (the documents), ``GET /review/{document}`` (one
document's passages, kept and refused), their style and script under ``/review-assets/``, and the
corrected passages: ``GET /examples`` lists the stored ones, ``POST /examples`` stores one.

Pages are rendered from ``<out dir>/extraction.json`` (re-read when the file changes). Storing an example
writes only the examples file beside the ontology (never the graph), and only when the app was created
with ``allow_examples=True`` (``serve --allow-examples``); otherwise POST answers 403.
"""

from __future__ import annotations

import html
import logging
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

from graphrag_got.config import Settings
from graphrag_got.errors import GraphragGotError, OntologyError
from graphrag_got.ontology.example_store import StoredExample, read_store, store_path
from graphrag_got.ontology.model import ExampleEntity, ExampleRelation, Ontology
from graphrag_got.teach.review import ReviewBook, build_review
from graphrag_got.teach.review_render import render_asset, render_document, render_index, served_links
from graphrag_got.teach.store import save_example

logger = logging.getLogger(__name__)

PREFIX, ASSETS, EXAMPLES = "/review", "/review-assets", "/examples"
NOT_ALLOWED = ("saving examples is off in this service: restart it with `graphrag-got serve --allow-examples` "
               "(it listens on loopback only, unless --allow-examples-remote is given too)")


class ExampleRequest(BaseModel):
    """What the page's "save as example" sends: the passage (by chunk id) and what it states."""

    model_config = ConfigDict(extra="forbid")

    chunk_id: str = Field(min_length=1, max_length=1000)
    entities: list[ExampleEntity] = Field(default_factory=list, max_length=1000)
    relations: list[ExampleRelation] = Field(default_factory=list, max_length=2000)


class ReviewSource:
    """The review data of the out dir's extraction, built once per version of the file (and of the ontology)."""

    def __init__(self, settings: Settings):
        self.extraction = Path(settings.files.out_dir) / "extraction.json"
        self.ontology_path = Path(settings.files.ontology_path)
        self._lock = threading.Lock()
        self._key: tuple[Any, ...] | None = None
        self._book: ReviewBook | None = None

    def _stamp(self, path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def book(self) -> ReviewBook:
        """The current review; raises ExtractionFileError when the file is missing or invalid."""
        key = (self._stamp(self.extraction), self._stamp(self.ontology_path))
        with self._lock:
            if self._book is None or key != self._key:
                self._book = build_review(self.extraction, self._ontology(), source=str(self.extraction))
                self._key = key
            return self._book

    def _ontology(self) -> Ontology | None:
        if not self.ontology_path.is_file():
            return None
        try:
            return Ontology.from_file(self.ontology_path, stored_examples=False)
        except GraphragGotError as exc:
            logger.warning("the review pages go without the ontology %s: %s", self.ontology_path,
                           str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
            return None


def _error(status: int, code: str, message: str, **detail: Any) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message, "detail": detail}}, status_code=status)


def _error_page(status: int, message: str) -> HTMLResponse:
    body = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Review</title></head><body>"
            f"<h1>Review</h1><p>{html.escape(message)}</p></body></html>")
    return HTMLResponse(body, status_code=status)


def _same_origin(request: Request) -> bool:
    """A request a page of another site made (its Origin names another host) may not write anything."""
    origin = request.headers.get("origin")
    if origin is None:
        return True
    return urlsplit(origin).netloc.lower() == request.headers.get("host", "").lower()


def add_review_routes(app: FastAPI, settings: Settings, *, allow_examples: bool = False) -> None:
    """Add the review pages and the examples endpoints to ``app``."""
    source = ReviewSource(settings)
    ontology_path = Path(settings.files.ontology_path)

    def current() -> ReviewBook | HTMLResponse:
        try:
            return source.book()
        except GraphragGotError as exc:
            missing = not source.extraction.is_file()
            return _error_page(404 if missing else 500, str(exc) if not missing else
                               f"no extraction file at {source.extraction}: run `graphrag-got extract` first "
                               "(the review pages show what it kept and refused)")

    @app.get(ASSETS + "/{name}", include_in_schema=False)
    def asset(name: str) -> Response:
        found = render_asset(name)
        if found is None:
            return _error(404, "not_found", f"no review asset {name!r}")
        text, media = found
        return Response(text, media_type=media)

    @app.get(PREFIX, response_class=HTMLResponse, summary="The review pages: every document with its counts")
    def review_index() -> Response:
        book = current()
        if isinstance(book, Response):
            return book
        return HTMLResponse(render_index(book, served_links(book, PREFIX, ASSETS)))

    @app.get(PREFIX + "/{document:path}", response_class=HTMLResponse,
             summary="One document's passages: kept entities and facts, refused items and why")
    def review_document(document: str) -> Response:
        book = current()
        if isinstance(book, Response):
            return book
        doc = book.document(document)
        if doc is None:
            return _error_page(404, f"no document {document!r} in {source.extraction}; {PREFIX} lists them")
        save_url = EXAMPLES if allow_examples else None
        return HTMLResponse(render_document(book, doc, served_links(book, PREFIX, ASSETS), save_url=save_url))

    @app.get(EXAMPLES, summary="The corrected passages stored beside the ontology")
    def list_examples() -> JSONResponse:
        path = store_path(ontology_path)
        try:
            store = read_store(path)
        except OntologyError as exc:
            return _error(422, "invalid_store", str(exc), problems=_problems(exc))
        return JSONResponse({"path": str(path), "examples": [e.model_dump(mode="json") for e in store.examples]})

    @app.post(EXAMPLES, summary="Store a corrected passage (serve --allow-examples only)")
    async def add_example(request: Request) -> JSONResponse:
        if not allow_examples:
            return _error(403, "examples_not_allowed", NOT_ALLOWED)
        if not _same_origin(request):
            return _error(403, "cross_origin", "examples are saved from this service's own review page only")
        if request.headers.get("content-type", "").split(";")[0].strip().lower() != "application/json":
            return _error(415, "not_json", "send the example as JSON (content-type: application/json)")
        try:
            req = ExampleRequest.model_validate_json(await request.body())
        except ValidationError as exc:
            problems = [{"where": ".".join(str(p) for p in e["loc"]) or "$", "problem": e["msg"]} for e in exc.errors()]
            return _error(422, "invalid_request", "the example is not valid: "
                          + "; ".join(f"{p['where']}: {p['problem']}" for p in problems[:10]), problems=problems)
        return await run_in_threadpool(_store, source, ontology_path, req)


def _problems(exc: OntologyError) -> list[dict[str, str]]:
    return [{"where": where, "problem": what} for where, what in exc.problems]


def _store(source: ReviewSource, ontology_path: Path, req: ExampleRequest) -> JSONResponse:
    try:
        chunk = source.book().chunk(req.chunk_id)
    except GraphragGotError as exc:
        return _error(404, "no_extraction", str(exc))
    if chunk is None:
        return _error(404, "chunk_not_found", f"no passage {req.chunk_id!r} in {source.extraction}")
    example = StoredExample.build(chunk.text, req.entities, req.relations, chunk_id=chunk.id,
                                  document=chunk.document_id)
    try:
        store = save_example(ontology_path, example)
    except OntologyError as exc:
        return _error(422, "invalid_example", str(exc), problems=_problems(exc))
    return JSONResponse({"id": example.id, "chunk_id": chunk.id, "stored": len(store.examples),
                         "path": str(store_path(ontology_path))})


__all__ = ["ExampleRequest", "ReviewSource", "add_review_routes"]
