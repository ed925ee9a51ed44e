"""The language a question is written in, so answers can be asked for in it by name.

Small models told "answer in the language of the question" often answer in English anyway (seen
with the embedded 1.5B model on a Spanish question). Naming the language ("Answer in Spanish.")
works much better, so :func:`question_language` identifies it with py3langid (a maintained fork of
langid.py: a small naive Bayes model over byte n-grams, numpy only, ~1 ms per question) and returns
its English name. When the identification is not confident (very short or mixed text) it returns
None and the prompts keep asking for "the language of the question".

:func:`text_language` names the language of an answer the same way, so the search modes can check
that an answer is in the question's language (and ask again once when it is not): bracketed ids
(``[F1, C2]``) are left out, and an answer with fewer than ``MIN_ANSWER_WORDS`` words besides its
names is too short to tell (None).
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache
from typing import Any

log = logging.getLogger(__name__)

#: Below this probability (normalized over the languages of LANGUAGE_NAMES) the question's language
#: is left to the model. Chosen on the routing benchmark's tuned questions, not its held-out ones.
MIN_CONFIDENCE = 0.5

#: Fewer words than this (names and bracketed ids left out) and an answer's language is not told.
MIN_ANSWER_WORDS = 4

#: ISO 639-1 codes py3langid returns -> the English name a prompt uses. Codes not listed here are
#: left to the model (None), never guessed.
LANGUAGE_NAMES: dict[str, str] = {
    "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "da": "Danish", "de": "German",
    "el": "Greek", "en": "English", "es": "Spanish", "et": "Estonian", "eu": "Basque", "fa": "Persian",
    "fi": "Finnish", "fr": "French", "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian",
    "hu": "Hungarian", "id": "Indonesian", "it": "Italian", "ja": "Japanese", "ko": "Korean", "lt": "Lithuanian",
    "lv": "Latvian", "nb": "Norwegian", "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese",
    "ro": "Romanian", "ru": "Russian", "sk": "Slovak", "sl": "Slovenian", "sr": "Serbian", "sv": "Swedish",
    "th": "Thai", "tr": "Turkish", "uk": "Ukrainian", "vi": "Vietnamese", "zh": "Chinese",
}  # fmt: skip


@lru_cache(maxsize=1)
def _identifier() -> Any:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    ident = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    # Only the languages a prompt can name: the model's ~100 others (many regional ones) split the
    # probability of a short question between close neighbours and nothing would pass the bar.
    ident.set_languages([code for code in LANGUAGE_NAMES if code in set(ident.labels)])
    return ident


def _without_names(text: str) -> str:
    """``text`` without its capitalized words after the first: names say nothing of the language
    ("Who married Tyrion Lannister?" reads as Finnish otherwise). Kept whole when little is left."""
    words = text.split()
    rest = [w for k, w in enumerate(words) if k == 0 or not w[:1].isupper()]
    return " ".join(rest) if len(rest) >= 2 else text


def identify(text: str) -> tuple[str, float] | None:
    """(ISO 639-1 code, probability) of ``text``, or None for text with no letters."""
    if not any(ch.isalpha() for ch in text or ""):
        return None
    code, prob = _identifier().classify(_without_names(text))
    return str(code), float(prob)


def question_language(text: str, min_confidence: float = MIN_CONFIDENCE) -> str | None:
    """English name of the language ``text`` is written in ("Spanish"), or None when unsure."""
    found = identify(text)
    if found is None:
        return None
    code, prob = found
    name = LANGUAGE_NAMES.get(code)
    if name is None or prob < min_confidence:
        log.debug("question language left to the model (%s, p=%.2f)", code, prob)
        return None
    return name


_BRACKETS = re.compile(r"\[[^\]]*\]")


def text_language(text: str, min_confidence: float = MIN_CONFIDENCE, min_words: int = MIN_ANSWER_WORDS) -> str | None:
    """English name of the language an answer (or any longer text) is written in, or None when
    unsure: too few words besides names and bracketed ids, or a language not named confidently."""
    bare = _BRACKETS.sub(" ", text or "")
    words = [w for w in _without_names(bare).split() if any(ch.isalpha() for ch in w)]
    if len(words) < min_words:
        return None
    return question_language(bare, min_confidence)


__all__ = ["LANGUAGE_NAMES", "MIN_ANSWER_WORDS", "MIN_CONFIDENCE", "identify", "question_language", "text_language"]
