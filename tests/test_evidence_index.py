"""Mention search through the token index finds exactly what a scan of every token finds."""

from __future__ import annotations

import random

from graphrag_got.common.text_match import ChunkText, _same_word, name_words

WORDS = ["log", "logs", "loges", "tool", "tools", "bus", "buses", "as", "a", "es", "ses", "cache", "caches",
         "net", "nets", "box", "boxes", "kit"]  # fmt: skip


def _scan(ct: ChunkText, words: list[str]) -> list[tuple[int, int]]:
    toks, n = ct.tokens, len(words)
    return [(toks[i].start, toks[i + n - 1].end) for i in range(len(toks) - n + 1)
            if all(_same_word(toks[i + k].key, words[k]) for k in range(n))]  # fmt: skip


def test_indexed_exact_mentions_equal_the_full_scan() -> None:
    rng = random.Random(4)
    compared = hits = 0
    for _ in range(300):
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 40))) + "."
        ct = ChunkText(text)
        for _ in range(5):
            name = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 3)))
            want = _scan(ct, name_words(name))
            got = [(m.start, m.end) for m in ct.find(name, threshold=1.0)]
            assert got == want, (text, name)
            compared += 1
            hits += bool(want)
    assert hits > compared // 4  # plural and singular forms do meet: the comparison is not vacuous


def test_fold_of_ascii_text_is_the_per_character_rule() -> None:
    from graphrag_got.common.text_match import _fold_char, fold

    text = "".join(chr(i) for i in range(128)) * 2
    assert fold(text) == "".join(_fold_char.__wrapped__(ch) for ch in text)
    assert fold("Ánimo, ÇA İx") == "".join(_fold_char.__wrapped__(ch) for ch in "Ánimo, ÇA İx")
