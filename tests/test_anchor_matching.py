"""The fuzzy step of the anchor matcher: rapidfuzz prefilters, difflib decides (same answers)."""

from __future__ import annotations

import difflib
import random
import time

from graphrag_got.search.anchors import FUZZY_CUTOFF, MatchIndex, match_entities

SYLLABLES = ["ka", "lo", "ve", "rin", "tor", "mar", "sel", "dun", "bra", "ny", "es", "ta", "go", "li", "an"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


def _catalog(n: int, seed: int = 3) -> list[dict]:
    rng = random.Random(seed)
    return [{"uid": f"u{i}", "key": f"{_word(rng)} {_word(rng)}" if i % 3 else _word(rng), "name": f"N{i}",
             "type": "T", "aliases": [_word(rng)] if i % 7 == 0 else []} for i in range(n)]  # fmt: skip


def test_close_keys_and_words_equal_difflib_over_the_whole_vocabulary() -> None:
    catalog = _catalog(3000)
    index = MatchIndex(catalog)
    rng = random.Random(5)
    terms = []
    for _ in range(150):
        key = list(rng.choice(catalog)["key"])
        key[rng.randrange(len(key))] = rng.choice("aeiouxz")
        terms.append("".join(key))
    terms += [_word(rng) for _ in range(50)] + ["", "a", "zzzzzzzzzzzzzzzz"]
    found = 0
    for term in terms:
        for n in (1, 5):
            want = difflib.get_close_matches(term, list(index.keys), n=n, cutoff=FUZZY_CUTOFF)
            assert index.close_keys(term, n) == want, term
            found += bool(want)
        assert index.close_words(term) == difflib.get_close_matches(term, list(index.by_word), n=1, cutoff=FUZZY_CUTOFF)
    assert found > 100  # the typos mostly find their key: the comparison above is not vacuous
    # a question's terms scored together give each term's own answer
    many = index.close_keys_many(terms)
    assert set(many) == set(terms) and all(many[t] == index.close_keys(t) for t in terms)
    words = index.close_words_many(terms)
    assert all(words[t] == index.close_words(t) for t in terms)


def test_fuzzy_matching_over_100k_names_is_fast() -> None:
    catalog = _catalog(100_000)
    index = MatchIndex(catalog)
    typo = catalog[12345]["key"][:-1] + "x"
    match_entities(f"what happened to {typo} after the battle by the river", catalog, index=index)  # warm-up
    t = time.process_time()
    for _ in range(5):
        matches = match_entities(f"what happened to {typo} after the battle by the river", catalog, index=index)
    per_question = (time.process_time() - t) / 5
    assert any("u12345" in m.uids for m in matches)
    # difflib alone took ~400 ms here; the prefilter ~10 ms. CPU time of this process (another process on the
    # cores does not count); 150 ms leaves room for a slow machine.
    assert per_question < 0.15, f"{per_question * 1000:.0f} ms per question"
