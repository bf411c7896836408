"""Checkers of book/02_why_heads.md (mha.checks.why_heads): the reference passes, each classic
mistake is named, rounding is told apart from a mistake, entries are named in words."""

import numpy as np
import pytest

from mha.checks.why_heads import (BLEND_FAVOUR, BLEND_PREVIOUS, BLEND_SUBJECT, COMPROMISE_COUNTS,
                                  COMPROMISE_TARGETS, blend_outputs, compromise_reference)
from mha.fitting import best_single_row, kl_divergence
from _verdicts import status_of as _status

T1, T2 = (np.array(t) for t in COMPROMISE_TARGETS)


# ---- ex-compromise-row ---------------------------------------------------------------------

def test_compromise_reference_is_the_weighted_average():
    row = compromise_reference()
    c1, c2 = COMPROMISE_COUNTS
    np.testing.assert_allclose(row, (c1 * T1 + c2 * T2) / (c1 + c2), atol=1e-8)
    # it is the minimum of the weighted loss: nearby rows do worse
    loss = lambda w: c1 * kl_divergence(T1, w) + c2 * kl_divergence(T2, w)
    for step in (np.array([0.01, 0, -0.01]), np.array([0, 0.01, -0.01]), np.array([-0.01, 0.01, 0])):
        assert loss(row) < loss(row + step) and loss(row) < loss(row - step)


def test_compromise_accepts_reference_and_page_rounding():
    row = compromise_reference()
    assert _status("ex-compromise-row", row).ok
    assert _status("ex-compromise-row", row.round(2).tolist()).ok
    assert _status("ex-compromise-row", (2 * T1 + T2) / 3).ok


@pytest.mark.parametrize("answer, phrase", [
    ([0.45, 0.1, 0.45], "both relations count once"),
    ((T1 + 2 * T2) / 3, "counted the object relation twice"),
    (2 * T1 + T2, "sum to 3"),
    ((2 * T1 + T2) / 2, "sum to 1.5"),
    (list(T1), "target 1 itself"),
    (list(T2), "target 2 itself"),
    (np.exp((2 * np.log(T1) + np.log(T2)) / 3) / np.exp((2 * np.log(T1) + np.log(T2)) / 3).sum(),
     "geometric mean"),
    ([0.5, 0.1, 0.4], "the weight on 'I' is too small"),
    ([1 / 3, 1 / 3, 1 / 3], "flat row"),
    ([0.33, 0.33, 0.33], "flat row"),
    ([0.33, 0.1, 0.57], "not in the right places"),
    ([0.1, 0.57, 0.33], "not in the right places"),
    ([0.57, 0.1, 0.33, 0.0], "expected shape"),
    ([0.5, 0.5], "expected shape"),
])
def test_compromise_names_mistakes(answer, phrase):
    verdict = _status("ex-compromise-row", answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message
    if phrase in ("flat row", "both relations count once"):  # concept errors, not rounding ones
        assert "decimals" not in verdict.message


def test_compromise_one_decimal_is_rounding_not_a_mistake():
    verdict = _status("ex-compromise-row", compromise_reference().round(1))
    assert verdict.status == "wrong" and "rounded to 1 decimal" in verdict.message


def test_compromise_answers_are_not_on_the_page():
    # The page fits the two relations counted once: that row is a named mistake here, not the answer.
    assert not np.allclose(best_single_row(COMPROMISE_TARGETS).row, compromise_reference(), atol=0.05)


# ---- ex-one-hot-blend ----------------------------------------------------------------------

def test_blend_reference_and_its_lesson():
    ref = blend_outputs()
    assert _status("ex-one-hot-blend", ref).ok
    assert _status("ex-one-hot-blend", {k: getattr(v, "tolist", lambda: v)() for k, v in ref.items()}).ok
    # The point of the exercise: a row that favours one question changes under the swap, but the
    # other question is served worse than by a head of its own.
    assert not np.allclose(ref["one_head"], ref["one_head_swapped"])
    assert ref["can_tell"] == "both"
    assert ref["one_head"][2] < BLEND_PREVIOUS[2] / 2       # "quietly" as the previous word
    assert ref["one_head"][1] < BLEND_SUBJECT[1]             # and the subject is served less, too
    np.testing.assert_allclose(ref["one_head"].sum(), 1.0)
    assert 0.5 < BLEND_FAVOUR < 1


def test_blend_mistakes_give_different_numbers():
    # Each known mistake must have numbers of its own, or its verdict is ambiguous.
    ref = blend_outputs()
    w1, w2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)
    swapped = ref["two_heads_swapped"]
    candidates = [np.concatenate([w1, w2]), np.concatenate([w2, w1]), np.roll(swapped, 4),
                  swapped[:4] + swapped[4:], (swapped[:4] + swapped[4:]) / 2]
    full = [c for c in candidates if c.size == 8]
    assert all(not np.allclose(a, b) for i, a in enumerate(full) for b in full[i + 1:])
    assert all(not np.allclose(a, swapped) for a in full)
    singles = [ref["one_head"], 0.25 * w1 + 0.75 * w2, (w1 + w2) / 2, w1 + w2, w1]
    assert all(not np.allclose(a, ref["one_head_swapped"]) for a in singles)
    assert all(not np.allclose(a, b) for i, a in enumerate(singles) for b in singles[i + 1:])


def _blend(**edits):
    return {**blend_outputs(), **edits}


W1, W2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)


@pytest.mark.parametrize("edit, phrase", [
    (lambda r: {**r, "one_head": (W1 + W2) / 2}, "plain average"),
    (lambda r: {**r, "one_head": 0.25 * W1 + 0.75 * W2}, "larger share to the previous-word row"),
    (lambda r: {**r, "one_head": W1 + W2}, "added the two rows"),
    (lambda r: {**r, "one_head": W1}, "subject head's row alone"),
    (lambda r: {**r, "one_head_swapped": r["one_head"]}, "output before the exchange"),
    (lambda r: {**r, "one_head_swapped": 0.25 * W1 + 0.75 * W2}, "changed which question the row favours"),
    (lambda r: {**r, "one_head_swapped": (W1 + W2) / 2}, "plain average"),
    (lambda r: {**r, "two_heads_swapped": r["two_heads_swapped"][:4] + r["two_heads_swapped"][4:]},
     "added the two heads"),
    (lambda r: {**r, "two_heads_swapped": (r["two_heads_swapped"][:4] + r["two_heads_swapped"][4:]) / 2},
     "averaged"),
    (lambda r: {**r, "two_heads_swapped": np.roll(r["two_heads_swapped"], 4)}, "wrong order"),
    (lambda r: {**r, "two_heads_swapped": np.concatenate([W1, W2])}, "output before the exchange"),
    (lambda r: {**r, "two_heads_swapped": np.concatenate([W2, W1])}, "exchanged the two heads, not the two tokens"),
    (lambda r: {**r, "one_head": r["two_heads_swapped"]}, "expected shape"),
    (lambda r: {**r, "can_tell": "two_heads"}, "single head's output changes too"),
    (lambda r: {**r, "can_tell": "one_head"}, "two heads' output changes too"),
    (lambda r: {**r, "can_tell": "neither"}, "both outputs change"),
    (lambda r: {**r, "can_tell": "maybe"}, "Answer with one of"),
    (lambda r: {**r, "can_tell": 2}, "should be one of the words"),
    (lambda r: {k: v for k, v in r.items() if k != "two_heads_swapped"}, "no 'two_heads_swapped' key"),
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


@pytest.mark.parametrize("words", ["both", "Both", "BOTH", "all"])
def test_blend_can_tell_accepts_the_ways_to_say_it(words):
    assert _status("ex-one-hot-blend", _blend(can_tell=words)).ok


def test_blend_entries_are_named_in_words():
    ref = blend_outputs()
    verdict = _status("ex-one-hot-blend", _blend(two_heads_swapped=ref["two_heads_swapped"] + np.eye(8)[5]))
    assert verdict.status == "wrong" and "head 2's entry for 'cat'" in verdict.message, verdict.message
    verdict = _status("ex-one-hot-blend", _blend(one_head=ref["one_head"] + np.array([0, 0, 0.1, -0.1])))
    assert verdict.status == "wrong" and "the entry for 'quietly'" in verdict.message, verdict.message
