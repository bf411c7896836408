"""Checker of book/13_costs_measured.md (mha.checks.costs_measured): accepts the reference, names the classic mistakes, survives junk."""

import math

import numpy as np
import pytest

import mha
from mha.checks import check, labels
from mha.checks.costs_measured import PARTS, merge_reference, summary
from _verdicts import wrong as _wrong


def test_label_is_registered_as_code():
    assert labels()["ex-online-softmax"] == "code"


def _learner(a, b):
    (m1, l1), (m2, l2) = a, b
    m = max(m1, m2)
    if m == -np.inf:
        return m, 0.0
    return m, l1 * np.exp(m1 - m) + l2 * np.exp(m2 - m)


@pytest.mark.parametrize("func", [merge_reference, _learner,
                                  lambda a, b: list(_learner(a, b)),
                                  lambda a, b: np.array(_learner(a, b))])
def test_accepts_the_reference(func):
    v = check("ex-online-softmax", func)
    assert v.ok, v


def test_the_reference_gives_the_summary_of_the_whole_row():
    for first, second, _ in PARTS:
        m, l = merge_reference(summary(first), summary(second))
        whole = summary(first + second)
        assert m == whole[0] and math.isclose(l, whole[1], rel_tol=1e-12)
        if first + second:
            assert np.allclose(np.exp(np.asarray(first + second) - m) / l, mha.softmax(np.asarray(first + second)))


def _naive(a, b):  # right except when both parts are fully masked: e^(-inf + inf) is NaN
    (m1, l1), (m2, l2) = a, b
    m = max(m1, m2)
    with np.errstate(invalid="ignore"):
        return m, float(l1 * np.exp(np.float64(m1) - m) + l2 * np.exp(np.float64(m2) - m))


def _no_rescale(a, b):
    return max(a[0], b[0]), a[1] + b[1]


def _flipped(a, b):
    m = max(a[0], b[0])
    return m, sum(l * math.exp(m - mm) if l else 0.0 for mm, l in (a, b))


def _smaller_max(a, b):
    return min(a[0], b[0]), a[1] + b[1]


def _one_sum(a, b):
    m = max(a[0], b[0])
    return m, (a if a[0] >= b[0] else b)[1]


@pytest.mark.parametrize("func, phrase", [
    (_naive, "NaN"),
    (_no_rescale, "added as they are"),
    (_flipped, "upside down"),
    (_smaller_max, "not the smaller"),
    (_one_sum, "one of the two sums is missing"),
    (lambda a, b: (a[0], b[0], 0), "should be a pair (m, l)"),
    (lambda a, b: 3.0, "should be a pair (m, l)"),
    (lambda a, b: (np.nan, 1.0), "NaN"),
    (lambda a, b: (max(a[0], b[0]) + 1, 1.0), "too large"),
])
def test_names_the_mistake(func, phrase):
    _wrong("ex-online-softmax", func, phrase)


def test_both_masked_is_explained_without_the_answer_elsewhere():
    v = _wrong("ex-online-softmax", _naive, "both maxima are -inf")
    assert "case 7" in v.message


@pytest.mark.parametrize("junk", [None, ..., "merge", 3, [1, 2], np.ones(2), print, object()])
def test_survives_junk(junk):
    v = check("ex-online-softmax", junk)
    assert v.status in ("wrong", "not done") and v.message


def test_stub_is_not_done():
    def stub(a, b):
        raise NotImplementedError

    assert check("ex-online-softmax", stub).status == "not done"
