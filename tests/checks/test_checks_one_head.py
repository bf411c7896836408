"""Checkers of book/01_one_head.md (mha.checks.one_head): the row of "LLMs" with the key of "love"
hidden by a mask, and a softmax that survives huge scores."""

import numpy as np
import pytest

import mha
from _verdicts import status_of as _status, wrong as _wrong

LABEL = "ex-one-head-llms-row"


def _scaled_row():
    """The scaled scores of "LLMs": row 2 of Q Kᵀ / √d_k, computed here from the example."""
    ex = mha.examples.i_love_llms()
    Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K
    return (Q @ K.T)[2] / np.sqrt(Q.shape[1]), Q @ K.T


def _hide(row, key=1, value=-np.inf):
    row = np.array(row, dtype=float)
    row[key] = value
    return row


def _reference():
    scaled, _ = _scaled_row()
    return mha.softmax(_hide(scaled))


def test_the_reference_is_the_masked_row_of_the_library():
    ex = mha.examples.i_love_llms()
    allowed = np.ones((3, 3), dtype=bool)
    allowed[2, 1] = False                      # "LLMs" may not see "love"
    _, A = mha.scaled_dot_product_attention(ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V, mask=allowed)
    np.testing.assert_allclose(A[2], _reference(), atol=1e-12)
    assert A[2, 1] == 0.0


@pytest.mark.parametrize("form", [
    lambda r: r, lambda r: r.tolist(), lambda r: tuple(r.round(2)), lambda r: r.round(3).tolist(),
    lambda r: np.float32(r),
])
def test_accepts_the_reference_and_two_decimals(form):
    assert _status(LABEL, form(_reference())).ok


def test_the_row_printed_on_the_page_is_not_the_answer():
    # the page prints A, whose row of "LLMs" has no mask: copying it must not pass
    ex = mha.examples.i_love_llms()
    _, A = mha.scaled_dot_product_attention(ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V)
    _wrong(LABEL, A[2], "without the mask")
    _wrong(LABEL, A[2].round(2), "without the mask")


def _mistakes():
    scaled, S = _scaled_row()
    sm = mha.softmax
    hidden = np.zeros((3, 3), dtype=bool)
    hidden[2, 1] = True
    return [
        (sm(scaled), "without the mask"),
        (_hide(sm(scaled), value=0.0), "after the softmax"),
        (_hide(sm(scaled), value=0.0).round(2), "after the softmax"),
        (sm(_hide(scaled, value=0.0)), "a score of 0 does not hide a key"),
        (sm(_hide(S[2])), "raw scores"),
        (sm(_hide(S[2] / 4)), "you divided by d_k = 4"),
        (sm(np.where(hidden, -np.inf, S / 2), axis=0)[2], "down a column"),
        (sm(_hide(S[:, 2] / 2)), "column of 'LLMs'"),
        (sm(_hide(scaled, key=0)), "you hid the key of 'I'"),
        (sm(_hide(scaled, key=2)), "you hid the key of 'LLMs'"),
        (scaled, "scaled scores"),
        (_hide(scaled, value=0.0), "scaled scores"),
        ([1.5, -np.inf, 2.5], "still holds -inf"),
        (np.array([1.5, -np.inf, 2.5]), "still holds -inf"),
        (_reference()[:2], "three numbers"),
        (_reference() * 2, "sum to"),
        (_reference() + np.array([0.0, 0.03, -0.03]), "the weight on 'love' is too large"),
    ]


@pytest.mark.parametrize("case", range(len(_mistakes())))
def test_names_each_known_mistake(case):
    answer, phrase = _mistakes()[case]
    _wrong(LABEL, answer, phrase)


def test_rounding_is_named_before_a_mistake():
    _wrong(LABEL, _reference().round(1), "rounded to 1 decimal")


@pytest.mark.parametrize("junk", [
    ..., None, "0.27, 0, 0.73", [0.27, "0", 0.73], [[0.27, 0.0, 0.73]], [np.nan, 0.0, 1.0],
    [np.inf, 0.0, 0.0], [0.27 + 0j, 0.0, 0.73], {"row": [0.27, 0.0, 0.73]}, [True, False, True], [],
    object(),
])
def test_survives_junk(junk):
    verdict = _status(LABEL, junk)
    assert not verdict.ok


# ---- ex-stable-softmax ----------------------------------------------------------------------

def _stable(x):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def test_stable_softmax_accepts_the_reference():
    assert _status("ex-stable-softmax", _stable).ok


def _wraps_the_library(x):
    return mha.softmax(x)


def _inner_function_uses_the_library(x):
    def rows(y):
        return mha.attention.softmax(y, axis=-1)
    return rows(x)


@pytest.mark.parametrize("func", [mha.softmax, mha.attention.softmax, lambda x: mha.softmax(x),
                                  _wraps_the_library, _inner_function_uses_the_library])
def test_stable_softmax_rejects_the_library(func):
    # the exercise says "Use NumPy, but not mha": right weights from the library are not the answer
    _wrong("ex-stable-softmax", func, "NumPy alone")


@pytest.mark.parametrize("func, phrase", [
    (lambda x: np.exp(x) / np.exp(x).sum(axis=-1, keepdims=True), "overflows"),
    (lambda x: mha.softmax(x, axis=0), "down each column"),
    (lambda x: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), "over the whole matrix"),
])
def test_stable_softmax_names_each_known_mistake(func, phrase):
    with np.errstate(over="ignore", invalid="ignore"):
        _wrong("ex-stable-softmax", func, phrase)


@pytest.mark.parametrize("junk", [..., None, "softmax", lambda x: "text", lambda x: None, lambda: 1,
                                  lambda x: 1 / 0])
def test_stable_softmax_survives_junk(junk):
    assert not _status("ex-stable-softmax", junk).ok
