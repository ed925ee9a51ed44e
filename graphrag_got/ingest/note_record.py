"""What ingest records of a Markdown note (its vault structure), as the extraction file keeps it with the
note's document (:class:`~graphrag_got.extract.extraction.DocumentRecord` ``note``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class NoteLink(_Model):
    """One link of a note (:mod:`graphrag_got.ingest.notes`).

    ``target`` is the link's key: lower case, POSIX, without ``.md`` (``[[Dir/Note]]`` ->
    ``dir/note``; a Markdown link's path resolved from the corpus root). ``resolved`` is the id of
    the document it points to, or None for a dangling link (a note that does not exist yet; the
    graph keeps it as a ``MissingNote`` named ``target``).
    """

    target: str = Field(min_length=1)
    kind: Literal["wikilink", "embed", "markdown"]
    text: str = ""  # the alias or link text as written, else the target as written
    heading: str | None = None  # the ``#Heading`` part, if any
    resolved: str | None = None


class NoteRecord(_Model):
    """Vault structure of one Markdown note: title, date, tags, folder and links.

    ``tags`` come from the front matter and inline ``#tags`` (lower case, no ``#``, nested
    ``a/b`` kept); ``folder_tags`` are the folder names on the note's path, kept apart.
    """

    title: str = ""
    date: str | None = None
    tags: list[str] = Field(default_factory=list)
    folder: str = ""  # POSIX parent path of the document id, "" at the corpus root
    folder_tags: list[str] = Field(default_factory=list)
    links: list[NoteLink] = Field(default_factory=list)
