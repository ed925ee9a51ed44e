"""HTML pages rendered from the jinja2 templates in ``graphrag_got/templates/``.

One environment serves every page (the discarded-relations report, the graph view):

* ``autoescape=True``: every ``{{ value }}`` is HTML-escaped, so names, types and messages written
  by a model cannot add markup or leave an attribute;
* ``StrictUndefined``: a misspelt variable fails the render instead of silently printing nothing;
* ``finalize``: ``None`` prints as an empty string, and C0 control characters (which HTML forbids
  in text and attributes, and which model output sometimes contains) become U+FFFD.

Python code passes data to the templates, never markup.
"""

from __future__ import annotations

import re
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _finalize(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, str) and not isinstance(value, Markup):
        return _CONTROL.sub("\ufffd", value)
    return value


def clip(value: Any, limit: int) -> str:
    """``value`` as text, cut to at most ``limit`` characters (the last one then being ``…``)."""
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fixed(value: float, digits: int = 1) -> str:
    """A number with a fixed count of decimals (SVG coordinates)."""
    return f"{value:.{digits}f}"


ENV = Environment(
    loader=PackageLoader("graphrag_got", "templates"),
    autoescape=True,
    undefined=StrictUndefined,
    finalize=_finalize,
    trim_blocks=True,  # a line holding only a {% tag %} leaves no blank line in the page
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
ENV.filters["clip"] = clip
ENV.filters["fixed"] = fixed


def render(template: str, **context: Any) -> str:
    """Render ``templates/<template>`` with ``context``."""
    return ENV.get_template(template).render(**context)
