"""The JSON loop guard: a list the model repeats is closed, nothing else is touched."""

from __future__ import annotations

import json

import numpy as np

from graphrag_got.llm.providers.loop_guard import JsonLoopGuard, TokenTable

# A tiny vocabulary: pieces a model writes JSON with, some merging a close with a comma.
VOCAB = [b'{"e": [', b'{"n": "A"}', b'{"n": "B"}', b", ", b"]", b', "r": [', b"}", b'{"n": "', b'A', b'B',
         b'"}', b'"},', b'"}, {"n": "', b'{"n": "x}, y"}', b" "]
IDS = {v: i for i, v in enumerate(VOCAB)}


def _run(pieces: list[bytes], max_repeats: int = 2) -> tuple[JsonLoopGuard, list[np.ndarray]]:
    """Feed the pieces one by one as a decoder would, returning the scores the guard gave at each step."""
    guard = JsonLoopGuard(TokenTable(VOCAB), max_repeats=max_repeats)
    prompt = [IDS[b" "]] * 3
    ids = list(prompt)
    out = [guard(np.array(ids), np.zeros(len(VOCAB), dtype=np.float32))]
    for piece in pieces:
        ids.append(IDS[piece])
        out.append(guard(np.array(ids), np.zeros(len(VOCAB), dtype=np.float32)))
    return guard, out


def _banned(scores: np.ndarray) -> set[bytes]:
    return {VOCAB[i] for i in np.flatnonzero(np.isneginf(scores))}


def test_no_repeat_nothing_is_forbidden() -> None:
    guard, steps = _run([b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "B"}', b"]"])
    assert all(not _banned(s) for s in steps) and guard.closed == 0


def test_second_repeat_closes_the_list() -> None:
    pieces = [b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "B"}', b", ", b'{"n": "A"}', b", ", b'{"n": "B"}']
    guard, steps = _run(pieces)
    assert not _banned(steps[6])  # after the first repeat: one is tolerated
    assert _banned(steps[-1]) == {b", ", b', "r": ['}  # after the second: no comma, so "]" comes next
    assert guard.closed == 1


def test_one_repeat_is_enough_when_asked() -> None:
    guard, steps = _run([b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "A"}'], max_repeats=1)
    assert b", " in _banned(steps[-1])


def test_a_close_merged_with_a_comma_is_forbidden_too() -> None:
    # The repeat is being written piece by piece: only the pieces that finish it and go on are refused.
    pieces = [b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "B"}', b", ", b'{"n": "A"}', b", ", b'{"n": "', b'B']
    guard, steps = _run(pieces)
    assert _banned(steps[-1]) == {b'"},', b'"}, {"n": "'}
    assert b'"}' not in _banned(steps[-1])  # closing the item alone stays allowed
    assert guard.closed == 1


def test_a_new_item_is_never_cut() -> None:
    pieces = [b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "B"}', b", ", b'{"n": "A"}', b", ", b'{"n": "', b'A', b'B']
    _, steps = _run(pieces)
    assert not _banned(steps[-1])  # "AB" is no earlier item


def test_strings_with_braces_and_commas_do_not_confuse_it() -> None:
    pieces = [b'{"e": [', b'{"n": "x}, y"}', b", ", b'{"n": "x}, y"}', b", ", b'{"n": "A"}']
    guard, steps = _run(pieces)
    assert not _banned(steps[-1]) and guard.closed == 0  # one repeat only
    text = b"".join(pieces).decode() + "]}"
    assert json.loads(text)["e"][0]["n"] == "x}, y"


def test_each_list_is_counted_on_its_own() -> None:
    pieces = [b'{"e": [', b'{"n": "A"}', b", ", b'{"n": "A"}', b"]", b', "r": [', b'{"n": "A"}']
    guard, steps = _run(pieces)
    assert not _banned(steps[-1])  # the first "A" of the second list is no repeat there
