"""Checker of book/12_costs_measured.md (mha.checks.costs_measured): accepts the reference, names the classic mistakes, survives junk."""

import math

import numpy as np
import pytest

from mha.checks import check, labels
from mha.checks.costs_measured import ROWS, online_reference
from _verdicts import wrong as _wrong


def test_label_is_registered_as_code():
    assert labels()["ex-online-softmax"] == "code"


def _learner(m, l, block):
    m_new = max(m, float(np.max(block)))
    return m_new, l * np.exp(m - m_new) + np.exp(np.asarray(block) - m_new).sum()


@pytest.mark.parametrize("func", [online_reference, _learner,
                                  lambda m, l, b: list(_learner(m, l, b)),
                                  lambda m, l, b: np.array(_learner(m, l, b))])
def test_accepts_the_reference(func):
    v = check("ex-online-softmax", func)
    assert v.ok, v


def test_the_reference_gives_the_softmax():
    import mha

    for row, sizes, _ in ROWS:
        m, l, start = -math.inf, 0.0, 0
        for n in sizes:
            m, l = online_reference(m, l, row[start:start + n])
            start += n
        assert np.allclose(np.exp(np.asarray(row) - m) / l, mha.softmax(np.asarray(row)), rtol=1e-12)


def _no_rescale(m, l, block):
    m_new = max(m, float(np.max(block)))
    return m_new, l + np.exp(np.asarray(block) - m_new).sum()


def _block_max(m, l, block):
    m_new = float(np.max(block))
    return m_new, l * np.exp(m - m_new) + np.exp(np.asarray(block) - m_new).sum()


def _flipped(m, l, block):
    m_new = max(m, float(np.max(block)))
    return m_new, (l * np.exp(m_new - m) if l else 0.0) + np.exp(np.asarray(block) - m_new).sum()


def _dropped(m, l, block):
    m_new = max(m, float(np.max(block)))
    return m_new, np.exp(np.asarray(block) - m_new).sum()


def _unshifted(m, l, block):
    return max(m, float(np.max(block))), l + np.exp(np.asarray(block)).sum()


def _stale_max(m, l, block):
    return (m if np.isfinite(m) else float(np.max(block))), l + np.exp(np.asarray(block) - float(np.max(block))).sum()


@pytest.mark.parametrize("func, phrase", [
    (_no_rescale, "not rescaled"),
    (_block_max, "over every block"),
    (_flipped, "upside down"),
    (_dropped, "old sum was dropped"),
    (_unshifted, "not e^s"),
    (_stale_max, "m did not change"),
    (lambda m, l, b: (m, l, 0), "should be a pair (m, l)"),
    (lambda m, l, b: 3.0, "should be a pair (m, l)"),
    (lambda m, l, b: (np.nan, 1.0), "NaN"),
    (lambda m, l, b: (float(np.max(b)) + 1, 1.0), "too large"),
])
def test_names_the_mistake(func, phrase):
    _wrong("ex-online-softmax", func, phrase)


def test_overflow_is_explained():
    def overflow(m, l, block):  # e^s e^-m': right for small scores, inf * 0 near 1,000
        m_new = max(m, float(np.max(block)))
        with np.errstate(over="ignore", invalid="ignore"):
            return m_new, l * np.exp(m - m_new) + float(np.exp(np.asarray(block)).sum() * np.exp(-m_new))

    v = _wrong("ex-online-softmax", overflow, "NaN")
    assert "row 3" in v.message


@pytest.mark.parametrize("junk", [None, ..., "online_step", 3, [1, 2], np.ones(2), print, object()])
def test_survives_junk(junk):
    v = check("ex-online-softmax", junk)
    assert v.status in ("wrong", "not done") and v.message


def test_stub_is_not_done():
    def stub(m, l, block):
        raise NotImplementedError

    assert check("ex-online-softmax", stub).status == "not done"
