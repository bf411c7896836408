"""Checkers of the appendix book/12_rank_bound.md (mha.checks.rank_bound)."""

import numpy as np
import pytest

from mha.checks import check
from mha.rank import score_rank_floor


def status(label, answer):
    return check(label, answer).status


# ---- ex-tight-scores ---------------------------------------------------------------------------

def centred(A):
    L = np.log(A)
    return L - L.mean(axis=1, keepdims=True)


def head_of_width(A, d, *, scale=True, centre=True):
    """(Q, K) from the SVD of the (centred) log-target, kept to width d."""
    U, s, Vt = np.linalg.svd(centred(A) if centre else np.log(A))
    Q, K = U[:, :d] * np.sqrt(s[:d]), Vt[:d].T * np.sqrt(s[:d])
    return (np.sqrt(d) * Q if scale else Q), K


def tight_head(A):
    return head_of_width(A, score_rank_floor(A))


def test_tight_head_accepts_reference_and_other_factorings():
    from mha.rank import fit_scores

    assert status("ex-tight-scores", tight_head) == "correct"

    def fitted(A):  # the library's fit at the floor, rescaled for the head's 1/sqrt(d_k)
        d = score_rank_floor(A)
        f = fit_scores(A, d)
        return np.sqrt(d) * f.Q, f.K

    assert status("ex-tight-scores", fitted) == "correct"
    assert status("ex-tight-scores", lambda A: tuple(x.tolist() for x in tight_head(A))) == "correct"


def test_tight_head_cases_are_below_full_width():
    from mha.checks.rank_bound import _tight_cases

    assert [score_rank_floor(A) < len(A) for A in _tight_cases()] == [True] * 3
    assert any(score_rank_floor(A) > 1 for A in _tight_cases())  # the sqrt(d_k) scaling is tested


@pytest.mark.parametrize("func, words", [
    (lambda A: head_of_width(A, len(A)), "a narrower head does too"),
    (lambda A: head_of_width(A, len(A)), "drop those directions"),
    (lambda A: (lambda Q, K: (Q, K))(*head_of_width(A, len(A) - 1)), "narrower"),
    (lambda A: head_of_width(A, score_rank_floor(A), scale=False), "divides the scores by"),
    (lambda A: head_of_width(A, 2, centre=False), "remove each row's mean"),
    (lambda A: centred(A), "should be a pair"),
    (lambda A: (tight_head(A)[0][:2], tight_head(A)[1]), "must both have"),
    (lambda A: (tight_head(A)[0] * 1e200, tight_head(A)[1] * 1e200), "too large"),
    (lambda A: None, "returns None"),
])
def test_tight_head_names_mistakes(func, words):
    v = check("ex-tight-scores", func)
    assert v.status != "correct" and words in v.message, v.message


# ---------------------------------------------------------------- ex-floor-distance
def test_floor_distance_accepts_the_floor_in_any_numeric_form():
    from mha.checks.rank_bound import FLOOR_N, floor_distance
    from mha.widgets.floor import MAX_N, SIZES

    assert FLOOR_N > max(MAX_N, *SIZES)  # beyond what the explorer shows
    assert floor_distance() == FLOOR_N - 1 == 11
    for answer in (11, 11.0, np.int64(11), np.array(11)):
        assert status("ex-floor-distance", answer) == "correct"
    # the verdict gives the reason through P (an invertible log A alone would not prove it)
    assert "multiplying by P" in check("ex-floor-distance", 11).message


@pytest.mark.parametrize("answer, words", [
    (2, "floor of the smooth band"),
    (5, "what the explorer shows for 6 tokens"),
    (12, "no target of 12 tokens needs more"),
    (1, "rows are all alike"),
    (7, "Count the singular values"),
    (4.5, "whole number"),
    (-1, "cannot be negative"),
    (-5, "cannot be negative"),
    ([5, 5], "one number"),
])
def test_floor_distance_names_mistakes(answer, words):
    v = check("ex-floor-distance", answer)
    assert v.status == "wrong" and words in v.message, v.message


# ---------------------------------------------------------------- ex-causal-leaders
def test_causal_leaders_accepts_the_least_q_to_four_decimals():
    from mha.checks.rank_bound import CAUSAL_SELF, _own_weights, least_common_q

    q = least_common_q()
    assert abs(_own_weights(q).min() - CAUSAL_SELF) < 1e-12  # the last row holds exactly 0.9
    assert (_own_weights(q - 1e-3) < CAUSAL_SELF).any() and (_own_weights(q + 1e-3) > CAUSAL_SELF).all()
    for answer in (q, round(q, 4), np.float64(round(q, 4)), np.array(round(q, 4))):
        assert status("ex-causal-leaders", answer) == "correct"


@pytest.mark.parametrize("answer, words", [
    (np.log(9.0), "enough for row 1"),
    (np.log(10.0), "endlessly many earlier tokens"),
    (3.0, "a smaller q works too"),
    (1.0, "token 4 puts only"),
    (2.3, "rounded to 1 decimal"),
    (-2.0, "q <= 0"),
    (0, "q <= 0"),
    ([1.0, 2.0], "one number"),
    ("q", "text"),
    (np.nan, "NaN"),
])
def test_causal_leaders_names_mistakes(answer, words):
    v = check("ex-causal-leaders", answer)
    assert v.status == "wrong" and words in v.message, v.message


def test_causal_leaders_prints_enough_decimals_near_the_threshold():
    from mha.checks.rank_bound import least_common_q

    v = check("ex-causal-leaders", least_common_q() - 1e-4)
    assert v.status == "wrong" and "0.9 " not in v.message and "0.9000 " not in v.message, v.message


@pytest.mark.parametrize("junk", [None, ..., {}, "answer", (1, 2), [[1, 2], [3]], np.inf])
def test_causal_leaders_survives_junk(junk):
    assert status("ex-causal-leaders", junk) != "correct"
