"""Checkers of book/11_induction_heads.md: accept the reference, name each classic mistake, survive junk."""

import numpy as np
import pytest

import mha
from mha.heads import induction_scores


def _verdict(answer):
    v = mha.checks.check("ex-induction-score", answer)
    assert isinstance(v, mha.checks.Verdict)
    return v


def _slices(A, period):
    t = np.arange(period, len(A))
    return A[t, t - period + 1]


def test_accepts_the_library_a_loop_and_slices():
    assert _verdict(lambda A, period: induction_scores(A[None, None], period)[0, 0]).ok

    def loop(A, period):
        T = len(A)
        return sum(A[t, t - period + 1] for t in range(period, T)) / (T - period)

    assert _verdict(loop).ok
    assert _verdict(lambda A, period: _slices(A, period).mean()).ok
    assert mha.checks.checker_module("ex-induction-score") == "mha.checks.induction_heads"


def _copy_itself(A, period):
    t = np.arange(period, len(A))
    return A[t, t - period].mean()


@pytest.mark.parametrize("wrong_func, message", [
    (_copy_itself, "the earlier copy itself"),
    (lambda A, p: _slices(A, p).sum() / len(A), "divided by T"),
    (lambda A, p: _slices(A, p).sum(), "did not average"),
    (lambda A, p: np.diagonal(A, -1)[p - 1:].mean(), "previous token"),
    (lambda A, p: _slices(A, p), "should be one number"),
    (lambda A, p: _slices(A, p).mean() + 0.01, "the result for"),
])
def test_names_each_mistake(wrong_func, message):
    v = _verdict(wrong_func)
    assert v.status == "wrong" and message in v.message


@pytest.mark.parametrize("junk", [None, ..., "induction", 3, [1, 2], lambda A, p: 1 / 0, lambda A, p: "x",
                                  lambda A, p: np.nan, lambda A, p: None, lambda A: 0.5,
                                  lambda A, p: A.__setitem__((0, 0), 5) or 0.5])
def test_survives_junk(junk):
    v = _verdict(junk)
    assert v.status in ("wrong", "not done")


def test_stub_is_not_done():
    def stub(A, period):
        raise NotImplementedError

    assert _verdict(stub).status == "not done"


def test_never_shows_the_expected_values():
    v = _verdict(lambda A, p: _slices(A, p).mean() + 0.5)
    from mha.checks.induction_heads import _cases
    for A, period, _ in _cases():
        expected = induction_scores(A[None, None], period)[0, 0]
        assert f"{expected:.3f}" not in v.message
