"""Checkers for the exercises of the appendix book/10_rank_bound.md (the rank bound is tight).

* ``ex-tight-scores`` (code): ``tight_scores(A)`` returning scores S with
  softmax(S) = A and rank(S) = n - 1, for targets whose log has full rank.
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax as _softmax
from .core import answer_array, call_learner, checker, entry_names, wrong


def _self_target(n, p):
    A = np.full((n, n), (1 - p) / (n - 1))
    np.fill_diagonal(A, p)
    return A


def _tight_cases():
    rng = np.random.default_rng(7)
    random_rows = _softmax(rng.normal(scale=1.5, size=(4, 4)))
    return (_self_target(3, 0.8), _self_target(5, 0.6), random_rows)


@checker("ex-tight-scores", kind="code")
def tight_scores(func):
    """Scores S with softmax(S) = A and rank(S) = n - 1, for targets whose log has full rank."""
    for A in _tight_cases():
        n = A.shape[0]
        S = call_learner(func, A.copy(), name="tight_scores", signature="tight_scores(A)")
        S = answer_array(S, "the returned S", entry=entry_names("row", "column"))
        if S.shape != A.shape:
            wrong(f"for a {n} x {n} target, tight_scores returned shape {S.shape}; S must be {n} x {n}.")
        logA = np.log(A)
        if not np.allclose(_softmax(S), A, atol=1e-8):
            if np.allclose(S, logA - logA.mean(axis=0, keepdims=True), atol=1e-8):
                wrong("you subtracted each column's mean. Softmax forgives a constant added to a row, "
                      "not to a column.")
            wrong(f"softmax(S) is not A for a {n} x {n} target. Every S with softmax(S) = A is log A plus "
                  "one constant per row.")
        rank = int(np.linalg.matrix_rank(S, tol=1e-8 * max(1.0, np.abs(S).max())))
        if rank == n:
            if np.allclose(S, logA, atol=1e-8):
                wrong(f"S is log A itself, which has full rank {n}. Pick the row constants so that "
                      "one direction disappears (hint: what if every row summed to zero?).")
            wrong(f"softmax(S) is A, but S still has full rank {n}. Choose the constant of each row so that "
                  "the rows become dependent.")
    return "softmax(S) = A with rank n - 1 in every case: the floor of the rank bound is reached."
