"""Make text that comes from outside (a model's answer) safe to store, hash, match and send on.

A model answer can hold anything a byte stream can: lone UTF-16 surrogates (which cannot be
written as UTF-8, so the cache write fails), NUL and other control characters, invisible
zero-width and bidirectional-control characters (which make two equal-looking names different
keys and can reorder what a report shows), and text in decomposed form. Each string is cleaned
once, at the boundary where the answer enters (:func:`graphrag_got.llm.json_answers.complete_json`), so the
rest of the code never has to think about it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from typing import Any

#: Deepest nesting of lists/objects :func:`clean_json` accepts (no answer we ask for needs more
#: than a handful of levels; a deeper one is a model looping on brackets).
MAX_JSON_DEPTH = 32

# C0 controls except \t and \n, DEL, C1 controls, the zero-width space and the bidi marks
# (U+200B, U+200E-U+200F), bidi embeddings/overrides (U+202A-U+202E), word joiner and invisible
# operators, bidi isolates (U+2060-U+2069), and the byte order mark / zero-width no-break space
# (U+FEFF). The joiners U+200C/U+200D are not here: see _drop_padding_joiners.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\ufeff]")
# ZERO WIDTH NON-JOINER / JOINER (U+200C/U+200D) are spelling between two characters: Persian
# keeps a prefix apart with ZWNJ (می‌خواهم), Indic scripts choose a half form with ZWJ, emoji
# sequences are joined by ZWJ (👨‍👩‍👧); after a virama (canonical combining class 9) one is spelling
# even at the end of a word (a Malayalam chillu written ന്‍). See _drop_padding_joiners.
_JOINER_RUN = re.compile("[\u200c\u200d]+")
_VIRAMA = 9


#: Most characters of a value (a name, a JSON fragment, a file's content) an error message echoes.
ECHO_MAX = 300


def cap_text(value: object, limit: int = ECHO_MAX) -> str:
    """``value`` as text, at most ``limit`` characters, plus how much was cut: an error message
    quotes what is wrong without echoing a 4 MB file (``'[[1, 2, ... [4,000,000 more characters]'``)."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit:,} more characters]"


def replace_surrogates(text: str) -> str:
    """``text`` made encodable as UTF-8: each lone surrogate becomes U+FFFD.

    A high+low surrogate pair stored as two code points (what a UTF-16 round trip with
    ``surrogatepass`` leaves behind) is joined into the character it encodes. Nothing else changes,
    so this is the right repair for raw answers that are kept verbatim for the audit.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def _drop_padding_joiners(text: str) -> str:
    """``text`` without the runs of U+200C/U+200D that join nothing: at either end of the text or
    next to white space, unless right after a virama."""
    if "\u200c" not in text and "\u200d" not in text:
        return text

    def padding(m: re.Match[str]) -> str:
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if before and unicodedata.combining(before) == _VIRAMA:
            return m.group()
        return "" if not before or not after or before.isspace() or after.isspace() else m.group()

    return _JOINER_RUN.sub(padding, text)


def clean_text(text: str) -> str:
    """One string from a model answer made safe.

    Lone surrogates become U+FFFD; C0/C1 control characters other than ``\\n`` and ``\\t`` are
    removed (so is ``\\r``: answers use ``\\n``); the zero-width space, bidi control characters
    (U+200B, U+200E-U+200F, U+202A-U+202E, U+2060-U+2069) and U+FEFF are removed; the result is
    NFC. The zero-width non-joiner and joiner (U+200C, U+200D) are kept between two characters
    and after a virama, where they are part of a spelling (Persian, Indic scripts, emoji
    sequences), and removed where they join nothing: at either end of the text or next to white
    space. (The merge key, :func:`graphrag_got.common.normalize.normalize_name`, ignores them
    either way, so a name spelt with and without them is one entity.)
    """
    return unicodedata.normalize("NFC", _drop_padding_joiners(_UNSAFE.sub("", replace_surrogates(text))))


def clean_json(value: Any, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """A parsed JSON value with every key and string cleaned by :func:`clean_text`.

    Non-finite floats (``NaN``, ``Infinity``, which Python's ``json`` accepts but JSON does not)
    become ``None``; tuples become lists; a key that is not a string becomes its ``str``. Raises
    ``ValueError`` when lists/objects are nested more than ``max_depth`` levels, so no consumer
    ever recurses deeper than that. Returns new containers; the input is not modified.
    """
    return _clean(value, max_depth, 0)


def _clean(value: Any, max_depth: int, depth: int) -> Any:
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple)):
        if depth >= max_depth:
            raise ValueError(f"the JSON is nested more than {max_depth} levels deep")
        if isinstance(value, dict):
            return {clean_text(k if isinstance(k, str) else str(k)): _clean(v, max_depth, depth + 1)
                    for k, v in value.items()}
        return [_clean(v, max_depth, depth + 1) for v in value]
    # not a JSON type (a caller passed something else): keep its text, cleaned
    return clean_text(str(value))
