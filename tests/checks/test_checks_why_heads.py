"""Checkers of book/02_why_heads.md (mha.checks.why_heads): the reference passes, each classic
mistake is named, rounding is told apart from a mistake, entries are named in words."""

import numpy as np
import pytest

from mha.checks import check
from mha.checks.why_heads import COMPROMISE_TARGETS, blend_outputs
from mha.fitting import best_single_row
from _verdicts import status_of as _status


# ---- ex-compromise-row ---------------------------------------------------------------------

def test_compromise_accepts_reference_and_page_rounding():
    row = best_single_row(COMPROMISE_TARGETS).row
    assert _status("ex-compromise-row", row).ok
    assert _status("ex-compromise-row", row.round(2).tolist()).ok
    np.testing.assert_allclose(row, np.mean(COMPROMISE_TARGETS, axis=0))


@pytest.mark.parametrize("answer, phrase", [
    ([0.45, 0.1, 0.45], "first two relations only"),
    (np.sum(COMPROMISE_TARGETS, axis=0), "sum to 3"),
    (list(COMPROMISE_TARGETS[2]), "target 3 itself"),
    (list(COMPROMISE_TARGETS[0]), "target 1 itself"),
    (np.exp(np.log(COMPROMISE_TARGETS).mean(0)) / np.exp(np.log(COMPROMISE_TARGETS).mean(0)).sum(),
     "geometric mean"),
    ([0.2, 0.6, 0.2], "the weight on 'I' is too small"),
    ([1 / 3, 1 / 3, 1 / 3], "flat row"),
    ([0.33, 0.33, 0.33], "flat row"),
    ([0.37, 0.32, 0.32], "not in the right places"),
    ([0.32, 0.32, 0.37], "not in the right places"),
    ([0.45, 0.1, 0.45, 0.0], "expected shape"),
    ([0.5, 0.5], "expected shape"),
])
def test_compromise_names_mistakes(answer, phrase):
    verdict = _status("ex-compromise-row", answer)
    assert verdict.status == "wrong" and phrase in verdict.message
    if phrase == "flat row":  # a concept error, not a rounding one
        assert "decimals" not in verdict.message


# ---- ex-one-hot-blend ----------------------------------------------------------------------

def test_blend_reference_and_its_lesson():
    ref = blend_outputs()
    assert _status("ex-one-hot-blend", ref).ok
    assert _status("ex-one-hot-blend", {k: getattr(v, "tolist", lambda: v)() for k, v in ref.items()}).ok
    # The point of the exercise: one head cannot tell the two roles apart, two heads can.
    np.testing.assert_array_equal(ref["one_head"], ref["one_head_swapped"])
    assert not np.array_equal(ref["two_heads"], ref["two_heads_swapped"])
    assert ref["can_tell"] == "two_heads"


def test_blend_mistakes_give_different_numbers():
    # Each known mistake of 'two_heads_swapped' must have numbers of its own, or its verdict is ambiguous.
    ref = blend_outputs()
    swapped = ref["two_heads_swapped"]
    candidates = [ref["two_heads"], np.roll(ref["two_heads"], 4), np.roll(swapped, 4),
                  swapped[:4] + swapped[4:], (swapped[:4] + swapped[4:]) / 2]
    full = [c for c in candidates if c.size == 8]
    assert all(not np.allclose(a, b) for i, a in enumerate(full) for b in full[i + 1:])
    assert all(not np.allclose(a, swapped) for a in full)


def _blend(**edits):
    return {**blend_outputs(), **edits}


@pytest.mark.parametrize("edit, phrase", [
    (lambda r: {**r, "two_heads": r["two_heads"][:4] + r["two_heads"][4:]}, "added the two heads"),
    (lambda r: {**r, "two_heads": (r["two_heads"][:4] + r["two_heads"][4:]) / 2}, "averaged"),
    (lambda r: {**r, "two_heads": np.roll(r["two_heads"], 4)}, "wrong order"),
    (lambda r: {**r, "two_heads_swapped": np.roll(r["two_heads_swapped"], 4)}, "wrong order"),
    (lambda r: {**r, "two_heads_swapped": r["two_heads"]}, "output before the swap"),
    (lambda r: {**r, "two_heads_swapped": np.roll(r["two_heads"], 4)}, "exchanged the two heads, not the two tokens"),
    (lambda r: {**r, "one_head": 2 * r["one_head"]}, "added the two rows"),
    (lambda r: {**r, "one_head": r["two_heads"]}, "expected shape"),
    (lambda r: {**r, "can_tell": "one_head"}, "same output in both situations"),
    (lambda r: {**r, "can_tell": "both"}, "same output in both situations"),
    (lambda r: {**r, "can_tell": "neither"}, "differ"),
    (lambda r: {**r, "can_tell": "maybe"}, "Answer with one of"),
    (lambda r: {**r, "can_tell": 2}, "should be one of the words"),
    (lambda r: {k: v for k, v in r.items() if k != "two_heads"}, "no 'two_heads' key"),
    (lambda r: {k: v for k, v in r.items() if k != "can_tell"}, "no 'can_tell' key"),
    (lambda r: {**r, "one_head": ...}, "not done"),
    (lambda r: {**r, "can_tell": ...}, "not done"),
    (lambda r: {**r, "one_head": None}, "not done"),
    (lambda r: list(r.values()), "give a dict"),
])
def test_blend_names_mistakes(edit, phrase):
    verdict = _status("ex-one-hot-blend", edit(blend_outputs()))
    if phrase == "not done":
        assert verdict.status == "not done"
    else:
        assert verdict.status == "wrong" and phrase in verdict.message, verdict.message
        assert "Another slip gives the same numbers" not in verdict.message


@pytest.mark.parametrize("words", ["two_heads", "two heads", "2 heads", "Two", "concatenated"])
def test_blend_can_tell_accepts_the_ways_to_say_it(words):
    assert _status("ex-one-hot-blend", _blend(can_tell=words)).ok
