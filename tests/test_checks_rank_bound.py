"""Checkers of the appendix book/11_rank_bound.md (mha.checks.rank_bound)."""

import numpy as np
import pytest

from mha.checks import check


def status(label, answer):
    return check(label, answer).status


# ---- ex-tight-scores ---------------------------------------------------------------------------

def centred(A):
    L = np.log(A)
    return L - L.mean(axis=1, keepdims=True)


def test_tight_scores_accepts_reference_and_other_valid_shifts():
    assert status("ex-tight-scores", centred) == "correct"
    assert status("ex-tight-scores", lambda A: np.log(A) - np.log(A)[:, :1]) == "correct"


@pytest.mark.parametrize("func, words", [
    (np.log, "log A itself"),
    (lambda A: np.log(A) + np.arange(len(A))[:, None], "still has full rank"),
    (lambda A: np.log(A) - np.log(A).mean(axis=0), "column's mean"),
    (lambda A: A - A.mean(axis=1, keepdims=True), "softmax(S) is not A"),
    (lambda A: centred(A)[:2], "shape"),
    (lambda A: None, "returns None"),
])
def test_tight_scores_names_mistakes(func, words):
    v = check("ex-tight-scores", func)
    assert v.status != "correct" and words in v.message, v.message


# ---------------------------------------------------------------- ex-floor-distance
def test_floor_distance_accepts_the_floor_in_any_numeric_form():
    from mha.checks.rank_bound import FLOOR_N, floor_distance

    assert floor_distance() == FLOOR_N - 1
    for answer in (5, 5.0, np.int64(5), np.array(5)):
        assert status("ex-floor-distance", answer) == "correct"


@pytest.mark.parametrize("answer, words", [
    (2, "floor of the smooth band"),
    (6, "no target of 6 tokens needs more"),
    (1, "rows are all alike"),
    (3, "Count the singular values"),
    (4.5, "whole number"),
    (-1, "whole number"),
    ([5, 5], "one number"),
])
def test_floor_distance_names_mistakes(answer, words):
    v = check("ex-floor-distance", answer)
    assert v.status == "wrong" and words in v.message, v.message
