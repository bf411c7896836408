"""Checkers for the exercises of the appendix book/12_rank_bound.md (the rank bound is tight).

* ``ex-tight-scores`` (code): ``tight_scores(A)`` returning scores S with
  softmax(S) = A and rank(S) = n - 1, for targets whose log has full rank.
* ``ex-floor-distance`` (numeric): the least d_k that reaches the band by
  distance, e^(-|i - j|), for n = 6 tokens (predicted, then checked in the explorer).
* ``ex-causal-leaders`` (numeric): one query and one key per token (d_k = 1)
  such that, under a causal mask, every one of 5 tokens puts at least 0.9 of
  its weight on itself.
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax as _softmax
from .core import answer_array, call_learner, checker, entry_names, one_number, pair, wrong


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


#: The exercise's target: the band by distance over this many tokens.
FLOOR_N = 6


def floor_distance():
    """The answer of ``ex-floor-distance``: the floor of the band by distance for :data:`FLOOR_N` tokens."""
    from ..rank import score_rank_floor, target_distance_band

    return score_rank_floor(target_distance_band(FLOOR_N))


@checker("ex-floor-distance", kind="numeric")
def floor_distance_check(answer):
    """The least head width that reaches the band by distance exactly, for n = 6."""
    value = one_number(answer, "your d_k")
    if value != round(value) or value < 0:
        wrong(f"a head width is a whole number, got {value:g}.")
    d_k, right = int(round(value)), floor_distance()
    if d_k == right:
        return (f"d_k = {right}: log A is minus the distances |i - j| plus one constant per row. The distances "
                "form an invertible matrix, so removing the row constants (multiplying by P) leaves rank n - 1, "
                "the most any target needs.")
    if d_k == 2:
        wrong("2 is the floor of the smooth band, whose exponent -(i - j)^2 expands into a few products "
              "(i^2, i j, j^2). Does -|i - j| expand like that? Look at the right panel of the explorer.")
    if d_k >= FLOOR_N:
        wrong(f"the constant in each row is free, so no target of {FLOOR_N} tokens needs more than "
              f"d_k = {FLOOR_N - 1}. Is this one the worst case, or better?")
    if d_k < 2:
        wrong("that few would do for a target whose rows are all alike, like the first-token pattern. "
              "Here each row peaks at a different token.")
    wrong(f"not {d_k}. Count the singular values of the centred log-target above rounding (the explorer's "
          "blue bars), or fit heads of each width and see where the error reaches 0.")



#: ``ex-causal-leaders``: the number of tokens, and the least weight each token must put on itself.
CAUSAL_N, CAUSAL_SELF = 5, 0.9


def _one_per_token(value, what):
    arr = answer_array(value, what, entry=entry_names("token"))
    if arr.shape in ((CAUSAL_N, 1), (1, CAUSAL_N)):
        arr = arr.ravel()
    if arr.shape != (CAUSAL_N,):
        wrong(f"{what} should hold one number per token, {CAUSAL_N} in all (d_k = 1); got shape {arr.shape}.")
    return arr


def causal_weights(q, k):
    """Weights of a width-1 head under a causal mask: row r is softmax(q_r k_0, ..., q_r k_r), then zeros."""
    n = len(q)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), np.outer(q, k), -np.inf)  # (n, n)
    return _softmax(scores)


@checker("ex-causal-leaders", kind="numeric")
def causal_leaders(answer):
    """Under a causal mask, a head of width 1 whose every token puts at least 0.9 of its weight on itself."""
    q, k = pair(answer, "your answer", "(q, k)")
    q, k = _one_per_token(q, "q"), _one_per_token(k, "k")
    with np.errstate(over="ignore", invalid="ignore"):
        scores = np.outer(q, k)
    if not np.isfinite(scores).all():
        wrong("some scores q_r k_j are too large to compute. Much smaller numbers are enough: "
              "a gap of 3 between two scores already gives a ratio of e^3, about 20.")
    W = causal_weights(q, k)
    own = np.diag(W)
    short = [r for r in range(CAUSAL_N) if own[r] < CAUSAL_SELF]
    if not short:
        return (f"every token puts at least {CAUSAL_SELF} of its weight on itself. Without the mask, only the "
                "tokens with the largest and the smallest key could lead a row (Theorem 1); the mask lets "
                "each row see only a prefix, and in each prefix the token itself can hold the largest key.")
    r = short[0]
    beaten = [j for j in range(r) if scores[r, j] >= scores[r, r]]
    if beaten:
        j = beaten[0]
        wrong(f"in row {r}, token {j} scores at least as much as token {r} itself "
              f"(q_{r} k_{j} >= q_{r} k_{r}). Row {r} sees tokens 0 to {r}. With q_{r} > 0, which of "
              f"the keys it sees must be the largest?")
    wrong(f"in row {r}, token {r} has the highest score but only {own[r]:.3f} of the weight. The order is "
          "right; the gaps between the scores are too small. How does the weight change if you multiply "
          "the queries by 10?")
