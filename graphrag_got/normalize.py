"""The one rule that decides when two entity names are the same entity."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")


def normalize_name(name: str) -> str:
    """Lower case, accents stripped, whitespace collapsed: the merge key of an entity.

    ``"  Daenerys   Targaryen "`` and ``"daenérys targaryen"`` both give ``"daenerys targaryen"``.
    Non-Latin letters are kept as they are (only combining marks are removed).
    """
    decomposed = unicodedata.normalize("NFKD", name)
    stripped = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return _SPACE.sub(" ", unicodedata.normalize("NFC", stripped)).strip().casefold()


def entity_uid(class_name: str, name: str) -> str:
    """Unique id of an entity node: its class and its normalized name (``Personaje|jon snow``)."""
    return f"{class_name}|{normalize_name(name)}"
