"""Checkers of the appendix book/12_rank_bound.md (mha.checks.rank_bound)."""

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
    # the verdict gives the reason through P (an invertible log A alone would not prove it)
    assert "multiplying by P" in check("ex-floor-distance", 5).message


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


# ---------------------------------------------------------------- ex-causal-leaders
def test_causal_leaders_accepts_the_reference_and_other_heads():
    k = np.arange(5.0)
    assert status("ex-causal-leaders", (10 * np.ones(5), k)) == "correct"
    assert status("ex-causal-leaders", [list(-10 * np.ones(5)), list(-k)]) == "correct"  # both signs flipped
    assert status("ex-causal-leaders", (np.full((5, 1), 3.0), k[:, None])) == "correct"  # columns of a d_k = 1 head


@pytest.mark.parametrize("answer, words", [
    ((np.ones(5), np.arange(5.0)), "gaps between the scores are too small"),
    ((10 * np.ones(5), -np.arange(5.0)), "row 1, token 0 scores at least as much"),
    ((np.zeros(5), np.arange(5.0)), "row 1, token 0 scores at least as much"),
    ((10 * np.ones(5), np.ones(5)), "row 1, token 0"),
    ((np.ones(4), np.arange(4.0)), "5 in all"),
    ((1e200 * np.ones(5), 1e200 * np.arange(5.0)), "too large"),
    (np.arange(5.0), "should be a pair"),
    (("q", "k"), "text"),
    ((np.full(5, np.nan), np.arange(5.0)), "NaN"),
])
def test_causal_leaders_names_mistakes(answer, words):
    v = check("ex-causal-leaders", answer)
    assert v.status == "wrong" and words in v.message, v.message


@pytest.mark.parametrize("junk", [None, ..., {}, "answer", 3, [[1, 2], [3]], (..., np.arange(5))])
def test_causal_leaders_survives_junk(junk):
    assert status("ex-causal-leaders", junk) != "correct"
