"""HTML pages through Beautiful Soup (MIT) and the standard library's parser: the visible text, one
paragraph per block element, ``h1``-``h6`` as headings; scripts, styles and navigation left out.

Beautiful Soup also finds the page's encoding (byte order mark, ``<meta charset>``, else a guess)."""

from __future__ import annotations

import re

from graphrag_got.errors import CorpusError
from graphrag_got.ingest.readers.base import ReadDocument, Reader, bytes_digest
from graphrag_got.ingest.readers.docx import join_blocks

_START = re.compile(rb"^(?:\s|<!--.*?-->|<\?xml[^>]*>)*<(?:!doctype\s+html|html[\s>])", re.IGNORECASE | re.DOTALL)
_HEADINGS = {f"h{n}": n for n in range(1, 7)}
_LEFT_OUT = {"script", "style", "noscript", "template", "head", "svg", "nav", "iframe", "object", "canvas", "button",
             "select", "form"}
_BLOCKS = {"p", "div", "section", "article", "main", "header", "footer", "aside", "blockquote", "ul", "ol", "li", "dl",
           "dt", "dd", "table", "thead", "tbody", "tfoot", "figure", "figcaption", "caption", "address", "details",
           "summary", "hr", "body", "center"}


class HtmlReader(Reader):
    name = "html"
    label = "an HTML page"
    suffixes = (".html", ".htm")

    def sniff(self, name: str, head: bytes, data: bytes) -> bool:
        # the page must start as HTML (after a BOM, white space, comments): a Markdown file that
        # shows some HTML further down is still Markdown. A fragment with no <html> (``<p>...``) is
        # HTML when its name says so and it starts with a tag.
        head = head.removeprefix(b"\xef\xbb\xbf")
        return bool(_START.match(head)) or (name.lower().endswith(self.suffixes) and head.lstrip().startswith(b"<"))

    def read(self, name: str, data: bytes, *, max_bytes: int = 0) -> ReadDocument:
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(data, "html.parser")
        blocks = _Walker().blocks(soup)
        text, headings = join_blocks(blocks)
        if not text.strip():
            raise CorpusError(f"{name}: the HTML page has no visible text", "empty")
        return ReadDocument(text=text, format=self.name, digest=bytes_digest(data), layout="sections",
                            headings=headings)


class _Walker:
    """Block elements end a paragraph, inline ones (``a``, ``em``, ``span``) run on inside it."""

    def __init__(self) -> None:
        self.out: list[tuple[int, str]] = []
        self.inline: list[str] = []

    def blocks(self, soup) -> list[tuple[int, str]]:  # type: ignore[no-untyped-def]
        self._walk(soup)
        self._flush()
        return self.out

    def _flush(self, level: int = 0) -> None:
        value = " ".join("".join(self.inline).split())
        self.inline = []
        if value:
            self.out.append((level, value))

    def _walk(self, node) -> None:  # type: ignore[no-untyped-def]
        from bs4.element import NavigableString, PreformattedString, Tag

        for child in node.children:
            if isinstance(child, PreformattedString):  # comments, doctype, CDATA, processing instructions
                continue
            if isinstance(child, NavigableString):
                self.inline.append(str(child))
                continue
            if not isinstance(child, Tag) or child.name in _LEFT_OUT:
                continue
            name = child.name
            if name in _HEADINGS:
                self._flush()
                self.inline.append(child.get_text(" "))
                self._flush(_HEADINGS[name])
            elif name == "pre":
                self._flush()
                value = child.get_text().strip("\n")
                if value.strip():
                    self.out.append((0, value))
            elif name == "tr":
                self._flush()
                cells = [" ".join(c.get_text(" ").split()) for c in child.find_all(["td", "th"], recursive=False)]
                if any(cells):
                    self.out.append((0, " | ".join(cells)))
            elif name == "br":
                self.inline.append("\n")
            elif name in _BLOCKS:
                self._flush()
                self._walk(child)
                self._flush()
            else:
                self._walk(child)
