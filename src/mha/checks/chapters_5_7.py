"""Checkers for the chapters on the number of heads, d_model, narrow heads and the rank bound.

Pages: book/05_how_many_heads.md, book/06_d_model.md, book/07_narrow_heads.md and
the appendix book/10_rank_bound.md.
"""

from __future__ import annotations

import re

import numpy as np

from ..attention import softmax as _softmax
from ..papers import VASWANI2017_TABLE3_A, best_bleu
from ..rank import q_sweep_weights
from .core import answer_array, call_learner, checker, compare, is_unfinished, not_done, wrong

__all__ = ["KEYS", "TOKENS", "weights_for_q"]

# --------------------------------------------------------------------------------------------
# Chapter 5: how many heads
# --------------------------------------------------------------------------------------------


def _row(h):
    return next(r for r in VASWANI2017_TABLE3_A if r.h == h)


@checker("ex-bleu-gaps", kind="numeric")
def bleu_gaps(answer):
    """BLEU lost by one head and by 32 heads, against the best row of Table 3 (A)."""
    top, _ = best_bleu()
    ends = (_row(1), _row(32))
    expected = [top - r.dev_bleu for r in ends]
    best_ppl = min(r.dev_ppl for r in VASWANI2017_TABLE3_A)
    compare(answer, expected, "your pair of BLEU losses", atol=0.011, rtol=0, rounding_hint=False, mistakes=[
        ([-g for g in expected], "both numbers are negative. A loss is the best BLEU minus the row's BLEU, "
                                 "so it is positive."),
        (expected[::-1], "the two numbers are swapped: the first is for h = 1, the second for h = 32."),
        ([r.dev_ppl - best_ppl for r in ends], "these are perplexity differences. The question asks about "
                                               "BLEU, the last column."),
        ([r.dev_bleu for r in ends], "these are the two BLEU scores themselves. Subtract each from the best "
                                     "score in the table."),
    ], shape_hint="Give two numbers: the loss at h = 1, then the loss at h = 32.")
    return "the single head loses more than twice as much as the 32 narrow heads."


_SIZE_CASES = ((512, 8, 100), (512, 1, 100), (512, 32, 100), (768, 12, 512), (6, 3, 5))


@checker("ex-layer-sizes", kind="code")
def layer_sizes(func):
    """Parameters and score entries of one attention layer, computation held constant."""
    for d, h, T in _SIZE_CASES:
        got = call_learner(func, d, h, T, name="layer_sizes")
        if not isinstance(got, (tuple, list)) or len(got) != 2:
            wrong(f"layer_sizes({d}, {h}, {T}) returned {type(got).__name__} {got!r}; "
                  "return a pair (n_params, n_scores).")
        d_k = d // h
        where = f"for d = {d}, h = {h}, T = {T}"
        compare(got[0], 4 * d * d, f"n_params {where}", atol=0, rtol=0, rounding_hint=False, mistakes=[
            (4 * d * d_k, "n_params counts one head only. The stacked W_Q, W_K, W_V and W_O are each "
                          "d x d, whatever h is."),
            (3 * d * d, "n_params leaves out W_O: there are four d x d matrices."),
            (4 * d * d + 4 * d, "n_params includes biases; this layer has none."),
        ])
        compare(got[1], h * T * T, f"n_scores {where}", atol=0, rtol=0, rounding_hint=False, mistakes=[
            (T * T, "n_scores counts one score map. Every head makes its own T x T map."),
            (h * T * d_k, "n_scores counts the entries of the queries, T x d_k per head. A score map "
                          "has one entry per (query, key) pair."),
            (T * T * d, "n_scores multiplies by d. A score map is T x T, and there is one per head."),
        ])
    return "parameters stay at 4d² for every h, while the score maps grow with h."


# --------------------------------------------------------------------------------------------
# Chapter 6: what fixes d_model
# --------------------------------------------------------------------------------------------

_FREE_NAMES = {"dk": "d_k", "wqicols": "d_k", "wqirows": "W_Q_i rows", "worows": "W_O rows",
               "wocols": "W_O cols"}
_FREE_VOCAB = '"d_k", "W_Q_i rows", "W_O rows", "W_O cols"'


def _shape_pair(value, what):
    if is_unfinished(value):
        not_done(f"{what} is still ...: fill it in.")
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)):
        wrong(f"{what} should be a pair (rows, columns), got {value!r}.")
    arr = answer_array(value, what)
    if arr.shape != (2,):
        wrong(f"{what} should be a pair (rows, columns): two numbers, got {arr.size}.")
    if not np.all(arr == np.round(arr)) or np.any(arr < 1):
        wrong(f"{what} should hold two positive whole numbers.")
    return tuple(int(v) for v in arr)


def _free_set(value):
    if is_unfinished(value):
        not_done('"free" is still ...: fill it in.')
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (set, frozenset, list, tuple)):
        wrong(f'"free" should be a set of names drawn from {_FREE_VOCAB}; got a {type(value).__name__}.')
    names = set()
    for item in value:
        key = re.sub(r"[^a-z]", "", str(item).lower())
        if not isinstance(item, str) or key not in _FREE_NAMES:
            wrong(f'"free" contains {item!r}, which is not one of {_FREE_VOCAB}.')
        names.add(_FREE_NAMES[key])
    return names


@checker("ex-shapes-768", kind="numeric")
def shapes_768(answer):
    """d_k, W_i^Q and W^O for d_model = 768 with 12 heads, and which sizes are free."""
    d, h = 768, 12
    d_k = d // h
    if is_unfinished(answer):
        not_done()
    if not isinstance(answer, dict):
        wrong('answer should be a dict with the keys "d_k", "W_Q_i", "W_O" and "free"; '
              f"got a {type(answer).__name__}.")
    missing = [k for k in ("d_k", "W_Q_i", "W_O", "free") if k not in answer]
    if missing:
        wrong(f"the dict has no entry for {', '.join(repr(k) for k in missing)}.")
    if all(is_unfinished(answer[k]) for k in ("d_k", "W_Q_i", "W_O", "free")):
        not_done()
    got_dk = answer["d_k"]
    if is_unfinished(got_dk):
        not_done('"d_k" is still ...: fill it in.')
    if isinstance(got_dk, bool):
        wrong('"d_k" should be a number.')
    compare(got_dk, d_k, '"d_k"', atol=0, rtol=0, rounding_hint=False, mistakes=[
        (d, '"d_k" is the width of all heads together. Each of the 12 heads gets an equal share of it.'),
        (d * h, '"d_k" was multiplied by h. The heads share the width: divide it.'),
    ])
    W_Q_i = _shape_pair(answer["W_Q_i"], '"W_Q_i"')
    if W_Q_i == (d_k, d):
        wrong('"W_Q_i" is transposed. In this book a row x is multiplied as x @ W, so W_Q_i has one row '
              "per coordinate of x and one column per coordinate of the head's query.")
    if W_Q_i == (d, d):
        wrong('"W_Q_i" is the shape of the stacked W_Q of all heads. One head uses only its own columns.')
    if W_Q_i != (d, d_k):
        wrong(f'"W_Q_i" = {W_Q_i} does not fit: it must take a row of the stream and give a query of width d_k.')
    W_O = _shape_pair(answer["W_O"], '"W_O"')
    if W_O in ((d_k, d), (d, d_k)):
        wrong('"W_O" is the size of one head\'s block. W_O reads all heads\' outputs side by side.')
    if W_O != (h * d_k, d):
        wrong(f'"W_O" = {W_O} does not fit: its rows take the concatenated heads, its columns give the '
              "stream's width.")
    free = _free_set(answer["free"])
    if "W_O cols" in free:
        wrong('"W_O cols" is not free: the output of W_O is added to the stream, entry by entry, so it must '
              "be exactly as wide as the stream.")
    if "W_Q_i rows" in free:
        wrong('"W_Q_i rows" is not free: W_Q_i reads a row of the stream, so its rows must match the '
              "stream's width.")
    if "d_k" not in free:
        wrong('"d_k" is missing from "free". Nothing outside the sublayer ever sees a query or a key.')
    if "W_O rows" not in free:
        wrong('"W_O rows" is missing from "free". The rows of W_O count the concatenated head outputs, '
              "h times d_v, which the sublayer chooses for itself.")
    return "the sublayer chooses its inner widths; only what touches the stream is fixed."


# --------------------------------------------------------------------------------------------
# Chapter 7: why a narrow head can express less
# --------------------------------------------------------------------------------------------

#: The one-wide head of the chapter: keys of "I", "love", "LLMs".
KEYS = np.array([2.0, 0.0, 1.0])
TOKENS = ("I", "love", "LLMs")


def weights_for_q(q):
    """Weights of a ``d_k = 1`` head with keys (2, 0, 1) for the query ``q`` (no scaling: sqrt(1) = 1)."""
    return q_sweep_weights(q, KEYS)  # () -> (3,), (m,) -> (m, 3)


def _one_q(answer, what="your q"):
    if isinstance(answer, (bool, np.bool_)):
        wrong(f"{what} is {answer}, a truth value. Give a number: the query of the token.")
    if isinstance(answer, (str, bytes)):
        wrong(f"{what} is text ({answer!r}); it should be a number.")
    arr = answer_array(answer, what)
    if arr.size != 1:
        wrong(f"{what} should be one number, got {arr.size} numbers (shape {arr.shape}).")
    return float(arr.reshape(()))


@checker("ex-q-love", kind="numeric")
def q_love(answer):
    """A query for which the one-wide head gives "love" a weight above 0.95."""
    q = _one_q(answer)
    w = weights_for_q(q)
    if w[1] > 0.95:
        return f'with q = {q:g}, "love" gets {w[1]:.3f}.'
    if 0.95 < q <= 1:
        wrong(f"{q:g} looks like a weight. The answer is the query q, the number that multiplies the keys.")
    if q == 0:
        wrong("q = 0 multiplies every key by zero: the scores tie and each token gets a third.")
    if q > 0:
        wrong(f'with q = {q:g}, the largest key wins: "I" gets {w[0]:.3f} and "love" only {w[1]:.3f}. '
              '"love" has the smallest key. What does the sign of q do to the order of the scores?')
    wrong(f'with q = {q:g}, "love" gets {w[1]:.3f}: the right direction, but not yet above 0.95. '
          "Move q further from zero.")


_NO_SUCH_Q = {"impossible", "none", "noq", "nosuchq", "noneexists", "thereisnone", "noqexists",
              "thereisnosuchq", "itisimpossible", "cannot", "notpossible"}

_WHY_NONE = ('"LLMs" has the middle key, 1. A positive q keeps the order of the keys, so "I" (key 2) scores '
             'higher; a negative q reverses it, so "love" (key 0) scores higher. Its weight is '
             "1 / (1 + 2 cosh q): largest at q = 0, where it is 1/3, below 0.34. So no q exists.")


@checker("ex-q-llms", kind="numeric")
def q_llms(answer):
    """A query giving "LLMs" more than 0.34, or the word "impossible" when there is none."""
    if isinstance(answer, str):
        if re.sub(r"[^a-z]", "", answer.lower()) in _NO_SUCH_Q:
            return "right, no q can do it. " + _WHY_NONE
        wrong(f'{answer!r} is not a q, and not the word "impossible". Give a number, or "impossible" if you '
              "are sure that no number works.")
    if isinstance(answer, (bool, np.bool_)):
        wrong(f'{answer} is a truth value. Give a number q, or the word "impossible".')
    qs = answer_array(answer, "your q").ravel()
    if qs.size == 0:
        wrong('your answer is empty. Give a number q, or the word "impossible".')
    w = weights_for_q(qs)[:, 2]  # (n_q, 3) -> (n_q,)
    best = int(np.argmax(w))
    if w[best] > 0.34:  # never happens; kept so the checker stays honest if the keys change
        return f'with q = {qs[best]:g}, "LLMs" gets {w[best]:.3f}.'
    tried = f"of the {qs.size} values you tried, the best, q = {qs[best]:g}," if qs.size > 1 else \
        f"q = {qs[best]:g}"
    wrong(f'{tried} gives "LLMs" {w[best]:.3f}, not more than 0.34. {_WHY_NONE}')


# --------------------------------------------------------------------------------------------
# Appendix: the rank bound is tight
# --------------------------------------------------------------------------------------------


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
        S = call_learner(func, A.copy(), name="tight_scores")
        S = answer_array(S, "the returned S")
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
