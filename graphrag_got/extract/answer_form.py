"""Stored answers of any form, expanded to the full one (kept as a name: the forms live in
:mod:`graphrag_got.extract.forms`)."""

from __future__ import annotations

from graphrag_got.extract.forms import expand_answer, is_compact

__all__ = ["expand_answer", "is_compact"]
