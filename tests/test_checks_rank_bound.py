"""Checkers of the appendix book/10_rank_bound.md (mha.checks.rank_bound)."""

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
