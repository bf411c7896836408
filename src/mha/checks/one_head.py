"""Checkers for the exercises of the one-head recap (book/01_one_head.md).

* ``ex-one-head-llms-row`` (numeric): the attention weights of "LLMs" in the
  one-head example, under a mask that hides the key of "love" from it.
* ``ex-stable-softmax`` (code): a row-wise softmax that survives huge scores, written without
  ``mha``.
"""

from __future__ import annotations

import types

import numpy as np

from ..attention import softmax as _softmax
from ..examples import i_love_llms
from .core import answer_array, call_learner, checker, compare, entry_names, near_threshold, rounding_of, wrong

# Two decimals, as the page prints them, are accepted; a row of weights may miss 1 by this much.
_PAGE, _SUM_TOL = 0.006, 0.02
_ROW, _HIDDEN = 2, 1  # the query of "LLMs"; the key of "love", which the mask hides from it


def _scores():
    ex = i_love_llms()
    return (ex.X @ ex.W_Q) @ (ex.X @ ex.W_K).T  # (T, d) (d, T) -> (T, T)


def _hide(scores, key=_HIDDEN, value=-np.inf):
    """A copy of one row (or of a whole matrix's row ``_ROW``) of scores with ``key`` set to ``value``."""
    out = np.array(scores, dtype=float)
    if out.ndim == 1:
        out[key] = value
    else:
        out[_ROW, key] = value
    return out


def _still_minus_inf(answer) -> bool:
    """True when ``answer`` reads as three numbers whose entry for "love" is -inf (no softmax applied)."""
    try:
        raw = np.asarray(answer, dtype=float)
    except Exception:
        return False
    return raw.shape == (3,) and bool(np.isneginf(raw[_HIDDEN])) and np.isfinite(np.delete(raw, _HIDDEN)).all()


_DOWN_COLUMNS = "each weight was normalised down a column. The softmax runs along the row: one query's weights."


def _down_columns(scaled):
    """Row ``_ROW`` of the masked scaled scores with the softmax taken down each column (a mistake)."""
    return _softmax(_hide(scaled), axis=0)[_ROW]


@checker("ex-one-head-llms-row", kind="numeric")
def llms_row(answer):
    """The attention weights of "LLMs" when the mask hides the key of "love" from it."""
    S = _scores()
    d_k = 4
    scaled = S[_ROW] / np.sqrt(d_k)
    expected = _softmax(_hide(scaled))
    if _still_minus_inf(answer):
        wrong("your row still holds -inf, the hidden score of 'love'. Apply the softmax to the row: it "
              "turns that score into a weight of exactly 0.")
    weight_on = entry_names(i_love_llms().tokens, template="the weight on {}")
    got = answer_array(answer, "your row", entry=weight_on)
    total = float(got.sum())
    rounded = rounding_of(got, expected, _PAGE, 0) if got.shape == expected.shape else ""
    if got.shape == (3,) and not rounded and not np.isclose(total, 1.0, atol=_SUM_TOL):
        if np.allclose(got, scaled, atol=_PAGE) or np.allclose(got, _hide(scaled, value=0.0), atol=_PAGE):
            wrong("these are the scaled scores. The last step is missing: apply a softmax to them.")
        if np.allclose(got, _hide(_softmax(scaled), value=0.0), atol=_PAGE):
            wrong("you set the weight on 'love' to 0 after the softmax, so the row no longer sums to 1. "
                  "Hide the key before the softmax, by setting its score to -inf: then 'I' and 'LLMs' "
                  "share the whole budget.")
        if np.allclose(got, _down_columns(S / np.sqrt(d_k)), atol=_PAGE):
            wrong(_DOWN_COLUMNS)
        edge = 1.0 - _SUM_TOL if total < 1.0 else 1.0 + _SUM_TOL
        wrong(f"your three weights sum to {near_threshold(total, edge)}, but a row of attention weights "
              "sums to 1. Did you apply the softmax to the whole row?")
    other_keys = [(_softmax(_hide(scaled, key)),
                   f"you hid the key of '{i_love_llms().tokens[key]}'. The mask hides 'love' (the middle "
                   "key) from 'LLMs'.") for key in range(3) if key != _HIDDEN]
    compare(got, expected, "your row", atol=_PAGE, rtol=0, entry=weight_on, mistakes=[
        (_softmax(scaled), "this is the row without the mask. 'LLMs' may not see 'love': the weight on "
                           "'love' must be 0."),
        (_softmax(_hide(scaled, value=0.0)),
         "a score of 0 does not hide a key: e to the power 0 is 1, so 'love' still gets weight. Set its "
         "score to -inf (np.exp(-np.inf) is 0)."),
        (_softmax(_hide(S[_ROW])), "this is the softmax of the raw scores: divide by the square root of d_k "
                                   "first."),
        (_softmax(_hide(S[_ROW] / d_k)), "you divided by d_k = 4; the scaling is by the square root of d_k."),
        (_down_columns(S / np.sqrt(d_k)), _DOWN_COLUMNS),
        (_softmax(_hide(S.T[_ROW] / np.sqrt(d_k))),
         "this is the column of 'LLMs', i.e. how much the others match its key. Use its row of scores."),
        *other_keys,
    ], shape_hint="Enter three numbers: the weights on 'I', 'love' and 'LLMs'.")


_CASES = (
    np.array([[1.0, 2.0, 3.0]]),
    np.random.default_rng(0).normal(size=(4, 5)),
    np.array([[1000.0, 0.0, -1000.0], [-800.0, -800.0, -801.0]]),
    np.array([[7.0]]),
)


def _overflowed(got, shape) -> bool:
    """True when ``got`` is a real array of ``shape`` holding NaN or infinity."""
    try:
        raw = np.asarray(got)
    except Exception:
        return False
    return raw.dtype.kind in "fiu" and raw.shape == shape and not np.isfinite(raw).all()


def _uses_mha(func) -> bool:
    """True when ``func`` is a function of the library, or its code names ``mha`` (a light check).

    It sees ``mha.softmax`` itself and a function or lambda whose code (or an inner function's)
    reads the name ``mha``; it cannot see a name imported from ``mha`` under another name.
    """
    try:
        if str(getattr(func, "__module__", "") or "").split(".")[0] == "mha":
            return True
        codes = [getattr(func, "__code__", None)]
        while codes:
            code = codes.pop()
            if isinstance(code, types.CodeType):
                if "mha" in code.co_names:
                    return True
                codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    except Exception:
        return False
    return False


@checker("ex-stable-softmax", kind="code")
def stable_softmax(func):
    """A row-wise softmax that survives huge inputs, written without the library."""
    for x in _CASES:
        got = call_learner(func, x.copy(), name="softmax", signature="softmax(x)")
        if _overflowed(got, x.shape):
            wrong(f"softmax gave NaN or infinity for the scores {x.tolist()}. exp(1000) overflows: subtract "
                  "each row's maximum before exp.")
        compare(got, _softmax(x), f"softmax of a {x.shape[0]}x{x.shape[1]} input", atol=1e-9,
                entry=entry_names("row", "column"), mistakes=[
                    (_softmax(x, axis=0), "your weights sum to 1 down each column. Normalise along each row "
                                          "(axis=-1)."),
                    (np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
                     "your weights sum to 1 over the whole matrix. Normalise each row on its own (axis=-1)."),
                ])
    if _uses_mha(func):
        wrong("your softmax gives the right weights, but it uses the library `mha`, which already has one. "
              "Write it with NumPy alone.")
    return "your softmax is right and stable for huge scores."
