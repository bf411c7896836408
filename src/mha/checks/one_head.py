"""Checkers for the exercises of the one-head recap (book/01_one_head.md).

* ``ex-one-head-llms-row`` (numeric): the attention weights of "LLMs" in the
  one-head example.
* ``ex-stable-softmax`` (code): a row-wise softmax that survives huge scores.
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax as _softmax
from ..examples import i_love_llms
from .core import answer_array, call_learner, checker, compare, entry_names, near_threshold, rounding_of, wrong

# Two decimals, as printed on the page, are accepted; a row of weights may miss 1 by this much.
_PAGE, _SUM_TOL = 0.006, 0.02


def _scores():
    ex = i_love_llms()
    return (ex.X @ ex.W_Q) @ (ex.X @ ex.W_K).T  # (T, d) (d, T) -> (T, T)


@checker("ex-one-head-llms-row", kind="numeric")
def llms_row(answer):
    """The attention weights of "LLMs" in the one-head example."""
    S = _scores()
    d_k = 4
    expected = _softmax(S[2] / np.sqrt(d_k))
    weight_on = entry_names(i_love_llms().tokens, template="the weight on {}")
    got = answer_array(answer, "your row", entry=weight_on)
    total = float(got.sum())
    rounded = rounding_of(got, expected, _PAGE, 0) if got.shape == expected.shape else ""
    if got.shape == (3,) and not rounded and not np.isclose(total, 1.0, atol=_SUM_TOL):
        if np.allclose(got, S[2] / np.sqrt(d_k), atol=_PAGE):
            wrong("these are the scaled scores. The last step is missing: apply a softmax to them.")
        edge = 1.0 - _SUM_TOL if total < 1.0 else 1.0 + _SUM_TOL
        wrong(f"your three weights sum to {near_threshold(total, edge)}, but a row of attention weights "
              "sums to 1. Did you apply the softmax to the whole row?")
    compare(got, expected, "your row", atol=_PAGE, rtol=0, entry=weight_on, mistakes=[
        (_softmax(S[2]), "this is the softmax of the raw scores: divide by the square root of d_k first."),
        (_softmax(S[2] / d_k), "you divided by d_k = 4; the scaling is by the square root of d_k."),
        (_softmax(S / np.sqrt(d_k), axis=0)[2],
         "each weight was normalised down a column. The softmax runs along the row: one query's weights."),
        (_softmax(S.T[2] / np.sqrt(d_k)),
         "this is the column of 'LLMs', i.e. how much the others match its key. Use its row of scores."),
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


@checker("ex-stable-softmax", kind="code")
def stable_softmax(func):
    """A row-wise softmax that survives huge inputs."""
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
    return "your softmax is right and stable for huge scores."
