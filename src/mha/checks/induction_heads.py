"""Checkers for the exercises of book/11_induction_heads.md (induction heads, found and built).

* ``ex-induction-score`` (code): ``induction_score(A, period)`` for one head's
  weights ``A`` of shape (T, T) on a text that repeats with period ``p``: the
  mean of ``A[t, t - p + 1]`` over the ``T - p`` queries ``t = p .. T-1`` of the
  repeat, as :func:`mha.heads.induction_scores` for one head.
"""

from __future__ import annotations

import numpy as np

from ..attention import causal_mask, softmax
from ..heads import induction_scores
from .core import call_learner, checker, compare, one_number

__all__: list = []


def _causal_head(rng, T, sharpness):
    """A random causal head: row ``t`` spreads its weight over keys ``0 .. t``."""
    scores = np.where(causal_mask(T), rng.normal(size=(T, T)) * sharpness, -np.inf)
    return softmax(scores)


def _perfect_head(T, period):
    """A pure induction head: the repeat looks at the token after its earlier copy, the rest at token 0."""
    A = np.zeros((T, T))
    A[:, 0] = 1.0
    t = np.arange(period, T)
    A[t, 0] = 0.0
    A[t, t - period + 1] = 1.0
    return A


def _cases():
    """(A, period, description): random causal heads, a perfect induction head, the smallest case."""
    rng = np.random.default_rng(10)
    return [
        (_causal_head(rng, 8, 2.0), 4, "a random causal head on 4 tokens repeated twice (T = 8)"),
        (_perfect_head(10, 5), 5, "a perfect induction head on 5 tokens repeated twice (answer 1)"),
        (_causal_head(rng, 9, 3.0), 3, "a random causal head on 3 tokens repeated three times (T = 9)"),
        (np.array([[1.0, 0.0], [0.3, 0.7]]), 1, "a 2 x 2 head with period 1"),
    ]


def _mistakes(A, period):
    T = len(A)
    t = np.arange(period, T)
    right = A[t, t - period + 1]
    copy = A[t, t - period]
    found = [
        (copy.mean(), "that is the weight on the earlier copy itself, A[t, t - period]. An induction head "
                      "looks one place further on, at the token that came next last time: A[t, t - period + 1]."),
        (right.sum() / T, "you divided by T. Only the T - period queries of the repeat have an earlier copy, "
                          "so average over them."),
        (right.sum(), "you added the weights but did not average them: divide by the T - period queries."),
    ]
    if period > 1:
        found.append((np.diagonal(A, -1)[period - 1:].mean(), "that is the weight on the previous token, "
                      "A[t, t-1]: a previous-token head. Look at the key just after the earlier copy: "
                      "t - period + 1."))
    return found


@checker("ex-induction-score", kind="code")
def check_induction_score(func):
    """``induction_score(A, period)``: mean weight on the token after the earlier copy."""
    cases = _cases()
    for A, period, case in cases:
        got = call_learner(func, A, period, name="induction_score", case=case,
                           signature="induction_score(A, period)")
        got = one_number(got, f"the result for {case}")
        expected = induction_scores(A[None, None], period)[0, 0]
        compare(got, expected, f"the result for {case}", atol=1e-9, rtol=1e-7,
                mistakes=_mistakes(A, period), mistake_prefix=f"For {case}: ",
                hint="Check which queries you average over (t from period to T - 1) and which key each one reads.")
    return f"your function gives the induction score of all {len(cases)} heads."
