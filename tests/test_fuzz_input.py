"""Property-based tests: no text and no model answer can crash a run.

Hypothesis generates the input; the profiles live in tests/conftest.py ("default": quick, every
run; ``pytest tests/test_fuzz_input.py --hypothesis-profile=thorough``: 2,000 examples a test).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st
from pydantic import BaseModel

from graphrag_got.ingest.chunking import chunk_text
from graphrag_got.errors import CorpusError
from graphrag_got.llm.calls import LLMOutputError
from graphrag_got.llm.json_answers import complete_json
from graphrag_got.llm.replay import ReplayChatModel
from graphrag_got.common.normalize import is_empty_key, normalize_name
from graphrag_got.common.sanitize import clean_text

# --- text ----------------------------------------------------------------------------------------

# any code point, lone surrogates included
ANY_CHAR = st.characters(exclude_categories=())
# pieces that exercise the chunkers' structure: blank lines, sentence and clause ends, headings,
# fences, front matter, CRLF, accents written as combining marks, invisible characters
STRUCTURE = st.sampled_from([
    "\n", "\n\n", "\r\n", " ", "\t", ". ", "! ", "… ", ", ", "; ", ": ", "# ", "## T\n", "#### x\n",
    "```\n", "~~~\n", "---\n", "...\n", "a: b\n", "e\u0301", "\u200b", "\ufeff", "\u2028", "\x0c",
    "\ud83d", "palabra ", "x" * 50,
])
TEXT = st.lists(st.one_of(STRUCTURE, st.text(ANY_CHAR, max_size=30)), max_size=60).map("".join)


@given(text=TEXT, max_chars=st.integers(1, 120), min_frac=st.floats(0, 1),
       kind=st.sampled_from(["paragraph", "markdown"]))
def test_chunks_never_exceed_max_chars_and_index_the_text(text: str, max_chars: int, min_frac: float,
                                                          kind: str) -> None:
    min_chars = int(max_chars * min_frac)
    try:
        result = chunk_text("doc.md", text, kind=kind,  # type: ignore[arg-type]
                            min_chars=min_chars, max_chars=max_chars)
    except CorpusError as exc:  # unreadable front matter is reported, with the file and line
        assert kind == "markdown" and str(exc).startswith("doc.md, line ")
        return
    previous_end = 0
    for i, chunk in enumerate(result.chunks):
        assert min_chars <= len(chunk.text) <= max_chars
        assert text[chunk.start:chunk.end] == chunk.text
        assert chunk.text and chunk.text == chunk.text.strip()
        assert chunk.start >= previous_end  # in order, never overlapping
        assert chunk.index == i
        previous_end = chunk.end
    assert len({c.id for c in result.chunks}) == len(result.chunks)


@given(text=TEXT, max_chars=st.integers(1, 120))
def test_paragraph_chunker_loses_no_visible_character(text: str, max_chars: int) -> None:
    result = chunk_text("doc.txt", text, kind="paragraph", min_chars=0, max_chars=max_chars)
    covered = [False] * len(text)
    for chunk in result.chunks:
        covered[chunk.start:chunk.end] = [True] * (chunk.end - chunk.start)
    assert all(covered[i] for i, ch in enumerate(text) if not ch.isspace())


@given(paragraphs=st.lists(st.text(st.characters(exclude_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"),
                                   min_size=1, max_size=80), min_size=1, max_size=8))
def test_paragraphs_that_fit_are_one_chunk_each(paragraphs: list[str]) -> None:
    paragraphs = [p.strip() for p in paragraphs]
    assume(all(paragraphs))
    result = chunk_text("doc.txt", "\n\n".join(paragraphs), kind="paragraph", min_chars=0, max_chars=80)
    assert [c.text for c in result.chunks] == paragraphs


# --- model answers -----------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(ANY_CHAR, max_size=8), children,
                                                                      max_size=4),
    max_leaves=30,
)


@st.composite
def json_answers(draw: st.DrawFn) -> str:
    """Valid JSON of any shape, possibly with raw (unescaped) characters, truncated or fenced."""
    text = json.dumps(draw(JSON_VALUES), ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text[: draw(st.integers(0, len(text)))]
    if draw(st.booleans()):
        text = f"```json\n{text}\n```"
    return text


@st.composite
def nested_answers(draw: st.DrawFn) -> str:
    """Brackets a small model loops on: unbalanced, balanced, objects, around junk."""
    depth = draw(st.integers(0, 3000))
    opener = draw(st.sampled_from(["[", "{", '{"a": ', '{"a": [', "[{"]))
    closer = draw(st.sampled_from(["", "]", "}", "]}"]))
    return opener * depth + draw(st.text(ANY_CHAR, max_size=5)) + closer * draw(st.integers(0, depth))


ANSWERS = st.one_of(
    json_answers(),
    nested_answers(),
    st.text(ANY_CHAR, max_size=200),  # junk, surrogates included
    st.lists(st.one_of(st.sampled_from(['{', '}', '[', ']', '"', ':', ',', '\\', "\\ud83d", "NaN", "1e999",
                                        "```", "\n", "true", "null"]), st.text(ANY_CHAR, max_size=4)),
             max_size=80).map("".join),
)


class Answer(BaseModel):
    relevance: int
    extract: str


def _assert_safe(value: Any) -> None:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str)
    text.encode("utf-8")


@given(answer=ANSWERS, second=ANSWERS, typed=st.booleans())
def test_any_model_answer_gives_safe_json_or_an_output_error(answer: str, second: str, typed: bool) -> None:
    chat = ReplayChatModel(fallback=[answer, second])
    try:
        value, attempt = complete_json(chat, "system", "user", Answer if typed else None)
    except LLMOutputError as exc:
        for raw in exc.raw_responses:
            raw.encode("utf-8")
        str(exc).encode("utf-8")
        return
    _assert_safe(value.model_dump() if typed else value)
    for raw in attempt.raw_responses:
        raw.encode("utf-8")
    for error in attempt.errors:
        error.encode("utf-8")


# --- strings at the boundary and the merge key --------------------------------------------------

INVISIBLE = {chr(c) for c in [*range(0x200B, 0x2010), *range(0x202A, 0x202F), *range(0x2060, 0x206A), 0xFEFF]}
JOINERS = {"\u200c", "\u200d"}  # kept inside words (ZWNJ, ZWJ)


@given(text=st.text(st.one_of(ANY_CHAR, st.sampled_from(["\u200c", "\u200d", " ", "\n", "\u094d", "\u200b", "a"]))))
def test_clean_text_is_safe_and_idempotent(text: str) -> None:
    cleaned = clean_text(text)
    cleaned.encode("utf-8")
    assert unicodedata.is_normalized("NFC", cleaned)
    assert not any(unicodedata.category(ch) == "Cc" and ch not in "\n\t" for ch in cleaned)
    assert not (INVISIBLE - JOINERS) & set(cleaned)
    for run in re.finditer("[\u200c\u200d]+", cleaned):  # kept joiners follow a virama or join two characters
        start, end = run.span()
        if not (start and unicodedata.combining(cleaned[start - 1]) == 9):
            assert 0 < start and end < len(cleaned), cleaned
            assert not cleaned[start - 1].isspace() and not cleaned[end].isspace(), cleaned
    assert clean_text(cleaned) == cleaned


@given(name=st.text(ANY_CHAR))
def test_normalize_name_is_idempotent_and_has_no_invisible_characters(name: str) -> None:
    key = normalize_name(name)
    key.encode("utf-8")
    assert normalize_name(key) == key
    assert key == key.strip() and "  " not in key
    assert not any(unicodedata.category(ch) in ("Cf", "Cs") for ch in key)
    assert is_empty_key(name) == (key == "")
