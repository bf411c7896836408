"""Checkers for the exercises of the appendix book/12_rank_bound.md (the rank bound is tight).

* ``ex-tight-scores`` (code): ``tight_head(A)`` returning a head ``(Q, K)`` of the
  least width, floor(A), whose weights softmax(Q Kᵀ / √d_k) are the target A.
* ``ex-floor-distance`` (numeric): the least d_k that reaches the band by
  distance, e^(-|i - j|), for n = 12 tokens (beyond the explorer's lengths).
* ``ex-causal-leaders`` (numeric): the least query q, shared by every token,
  with which a causal head of width 1 and keys 0, 1, 2, 3, 4 puts at least 0.9
  of each token's weight on the token itself.
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax as _softmax
from .core import answer_array, call_learner, checker, entry_names, near_threshold, one_number, pair, wrong


def _tight_cases():
    """Targets whose floor is below n (so the least width is a real question): band, first token, random."""
    from ..rank import target_first_token, target_local_band

    rng = np.random.default_rng(7)
    random_rows = _softmax(rng.normal(scale=1.5, size=(4, 4)))
    return (target_local_band(5, width=1.5), target_first_token(4), random_rows)


def _least_width(A):
    from ..rank import score_rank_floor

    return score_rank_floor(A)


@checker("ex-tight-scores", kind="code")
def tight_head(func):
    """A head (Q, K) of width floor(A) whose weights softmax(Q Kᵀ / √d_k) are A."""
    for A in _tight_cases():
        n = A.shape[0]
        out = call_learner(func, A.copy(), name="tight_head", signature="tight_head(A)")
        Q, K = pair(out, "what tight_head returned", "(Q, K)")
        Q = answer_array(Q, "Q", entry=entry_names("token", "column"))
        K = answer_array(K, "K", entry=entry_names("token", "column"))
        if Q.ndim == 1 and K.ndim == 1:
            Q, K = Q[:, None], K[:, None]
        if Q.ndim != 2 or K.ndim != 2 or Q.shape[0] != n or K.shape[0] != n or Q.shape[1] != K.shape[1] \
                or Q.shape[1] == 0:
            wrong(f"for a target of {n} tokens, Q and K must both have {n} rows and the same number d_k >= 1 "
                  f"of columns; got shapes {Q.shape} and {K.shape}.")
        d_k = Q.shape[1]
        with np.errstate(over="ignore", invalid="ignore"):
            raw = Q @ K.T  # (n, d_k) @ (d_k, n) -> (n, n)
        if not np.isfinite(raw).all():
            wrong("some scores Q Kᵀ are too large to compute (or not numbers). Softmax needs only "
                  "differences within a row: keep the scores of moderate size.")
        if np.allclose(_softmax(raw / np.sqrt(d_k)), A, atol=1e-8):
            if d_k > _least_width(A):
                hint = (" An SVD gives as many singular values as tokens, but some are zero up to rounding: "
                        "drop those directions." if d_k >= n else "")
                wrong(f"for a target of {n} tokens your head reproduces A with d_k = {d_k}, but a narrower "
                      f"head does too. Which scores with softmax(S) = A have the least rank?{hint}")
            continue
        if d_k > 1 and np.allclose(_softmax(raw), A, atol=1e-8):
            wrong(f"softmax(Q Kᵀ) is A, but the head divides the scores by √d_k = √{d_k} before the softmax. "
                  "Scale Q (or K) to make up for it.")
        wrong(f"for a target of {n} tokens, the head's weights softmax(Q Kᵀ / √d_k) are not A. Every S with "
              "softmax(S) = A is log A plus one constant per row; remove each row's mean before you factor.")
    return ("every head reproduces its target with the least width there is: Theorem 4's scores log A P, "
            "factored and scaled by √d_k.")


#: The exercise's target: the band by distance over this many tokens (more than the explorer shows).
FLOOR_N = 12


def floor_distance():
    """The answer of ``ex-floor-distance``: the floor of the band by distance for :data:`FLOOR_N` tokens."""
    from ..rank import score_rank_floor, target_distance_band

    return score_rank_floor(target_distance_band(FLOOR_N))


@checker("ex-floor-distance", kind="numeric")
def floor_distance_check(answer):
    """The least head width that reaches the band by distance exactly, for n = FLOOR_N tokens."""
    value = one_number(answer, "your d_k")
    if value < 0:
        wrong(f"a head width counts columns, so it cannot be negative; got {value:g}.")
    if value != round(value):
        wrong(f"a head width is a whole number of columns, got {value:g}.")
    d_k, right = int(round(value)), floor_distance()
    if d_k == right:
        return (f"d_k = {right}: log A is minus the distances |i - j| plus one constant per row. The distances "
                "form an invertible matrix, so removing the row constants (multiplying by P) leaves rank n - 1, "
                "the most any target needs.")
    if d_k == 2:
        wrong("2 is the floor of the smooth band, whose exponent -(i - j)^2 expands into a few products "
              "(i^2, i j, j^2). Does -|i - j| expand like that? Look at the right panel of the explorer.")
    if d_k == 5:
        wrong("5 is what the explorer shows for 6 tokens. This target has more tokens: how does the floor "
              "of the band by distance grow with n in the explorer, and why?")
    if d_k >= FLOOR_N:
        wrong(f"the constant in each row is free, so no target of {FLOOR_N} tokens needs more than "
              f"d_k = {FLOOR_N - 1}. Is this one the worst case, or better?")
    if d_k < 2:
        wrong("that few would do for a target whose rows are all alike, like the first-token pattern. "
              "Here each row peaks at a different token.")
    wrong(f"not {d_k}. Count the singular values of the centred log-target above rounding "
          "(mha.rank.centred_log_spectrum), or watch in the explorer how the floor grows with n.")


#: ``ex-causal-leaders``: the keys 0, 1, ..., CAUSAL_N - 1, and the least weight each token must put on itself.
CAUSAL_N, CAUSAL_SELF = 5, 0.9
#: How far from the least q an answer may be (the exercise asks for 4 decimals).
CAUSAL_TOL = 5e-5


def causal_weights(q, k):
    """Weights of a width-1 head under a causal mask: row r is softmax(q_r k_0, ..., q_r k_r), then zeros."""
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    n = len(q)
    scores = np.where(np.tril(np.ones((n, n), dtype=bool)), np.outer(q, k), -np.inf)  # (n, n)
    return _softmax(scores)


def _own_weights(q):
    """The weight each token puts on itself when every query is q and the keys are 0 .. CAUSAL_N - 1."""
    return np.diag(causal_weights(np.full(CAUSAL_N, q), np.arange(CAUSAL_N, dtype=float)))


def least_common_q():
    """The answer of ``ex-causal-leaders``: the least q with every own weight at least CAUSAL_SELF.

    Token r's own weight is 1 / (1 + x + ... + x^r) with x = e^(-q); the last row decides.
    """
    coeffs = [1.0] * CAUSAL_N
    coeffs[-1] -= 1 / CAUSAL_SELF  # x^(N-1) + ... + x + 1 - 1/0.9 = 0
    roots = np.roots(coeffs)
    x = max(float(r.real) for r in roots if abs(r.imag) < 1e-12 and 0 < r.real < 1)
    return -float(np.log(x))


@checker("ex-causal-leaders", kind="numeric")
def causal_leaders(answer):
    """The least common query q for which every token puts at least 0.9 of its weight on itself."""
    q = one_number(answer, "your q")
    right = least_common_q()
    if abs(q - right) <= CAUSAL_TOL:
        return (f"q = {q:.4f}: token r's own weight is 1 / (1 + x + ... + x^r) with x = e^(-q), smallest in the "
                f"last row, which sees the most earlier tokens. Without the mask only the tokens with the "
                "largest or the smallest key could lead a row (Theorem 1); here every token leads its own.")
    for decimals in (1, 2, 3):
        if q == round(right, decimals):
            wrong(f"your q is the right one rounded to {decimals} decimal{'s' if decimals > 1 else ''}; "
                  "give it to 4 decimals.")
    if q <= 0:
        wrong("with q <= 0 the weight on the token itself is never the largest: with increasing keys, a "
              "negative query favours the smallest key, token 0, and q = 0 spreads each row evenly.")
    if abs(q - np.log(CAUSAL_SELF / (1 - CAUSAL_SELF))) < CAUSAL_TOL:
        wrong("that q is enough for row 1, which sees one earlier token. Which row is the hardest to satisfy?")
    if abs(q - np.log(10.0)) < CAUSAL_TOL:
        wrong("that q would be the answer if a row saw endlessly many earlier tokens (x + x^2 + ... = 1/9 "
              "gives x = 0.1). The last row sees only four.")
    if q > right:  # decided before any weights are computed, so a huge q cannot overflow them
        wrong(f"with that q every token puts at least {CAUSAL_SELF} on itself, but a smaller q works too. "
              "Which row decides, and for which q does it hold exactly 0.9?")
    own = _own_weights(q)
    r = int(np.argmin(own))
    wrong(f"with that q, token {r} puts only {near_threshold(own[r], CAUSAL_SELF, 4)} of its weight on itself.")
