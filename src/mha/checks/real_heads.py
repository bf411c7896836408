"""Checkers for the exercises of book/09_real_heads.md (what real trained heads do).

* ``ex-previous-token-mass`` (code): ``previous_token_mass(A)`` for one head's
  weights ``A`` of shape (T, T): the mean of ``A[t, t-1]`` over the ``T - 1``
  queries that have a previous token, as :func:`mha.heads.previous_token_mass`.
* ``ex-kv-head`` (numeric): a model of ``L = 24`` layers, each with ``h = 32``
  query heads and ``g = 8`` key/value heads of width ``d_k = 64``, grouped in
  order as in SmolLM2: the key/value head that query head 13 reads, and the
  numbers in the KV cache after ``T = 1000`` tokens,
  ``[13 // (32 // 8), 2 * 24 * 8 * 64 * 1000]`` (:data:`KV_EXERCISE`).
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax
from ..heads import diagonal_mass, previous_token_mass
from .core import call_learner, checker, compare, one_number, pair

__all__ = ["KV_EXERCISE"]

#: The exercise's model: (layers L, query heads h, key/value heads g, head width d_k, tokens T,
#: the query head asked about).
KV_EXERCISE = (24, 32, 8, 64, 1000, 13)


def _rounded_rows(A):
    """``A`` with three decimals, each row still summing to 1 (its last entry takes up the rounding)."""
    A = np.round(A, 3)
    A[:, -1] = 1.0 - A[:, :-1].sum(axis=1)
    return A


def _previous_cases():
    """(A, description) pairs: random heads, a pure previous-token head, and T = 2."""
    rng = np.random.default_rng(9)
    shifted = np.eye(5, k=-1)
    shifted[0, 0] = 1.0  # the first token has no predecessor: it looks at itself
    return [
        (_rounded_rows(softmax(rng.normal(size=(4, 4)) * 2)), "a random 4 x 4 head"),
        (shifted, "a head that always looks at the previous token (answer 1)"),
        (softmax(rng.normal(size=(7, 7)) * 3), "a random 7 x 7 head"),
        (np.array([[0.3, 0.7], [0.6, 0.4]]), "a 2 x 2 head, where only the second query has a previous token"),
    ]


def _previous_mistakes(A):
    T = len(A)
    below = np.diagonal(A, -1)
    return [
        (below.sum() / T, "you divided by T. The first token has no previous token, so average over the "
                          "T - 1 queries that have one."),
        (diagonal_mass(A, 1), "that is the weight on the next token, A[t, t+1]. The previous token of query t "
                              "is key t - 1: A[t, t-1], just below the diagonal."),
        (np.diagonal(A).mean(), "that is the weight each query puts on itself (the diagonal). Look one place "
                                "to the left: A[t, t-1]."),
        (below.sum(), "you added the weights but did not average them: divide by the T - 1 queries."),
    ]


@checker("ex-previous-token-mass", kind="code")
def check_previous_token_mass(func):
    """``previous_token_mass(A)``: mean weight on the token just before each query."""
    cases = _previous_cases()
    for A, case in cases:
        got = call_learner(func, A, name="previous_token_mass", case=case, signature="previous_token_mass(A)")
        got = one_number(got, f"the result for {case}")
        compare(got, previous_token_mass(A), f"the result for {case}", atol=1e-9, rtol=1e-7,
                mistakes=_previous_mistakes(A), mistake_prefix=f"For {case}: ")
    return f"your function measures the previous-token mass correctly on all {len(cases)} heads."


def _kv_part(index):
    return {(0,): f"the key/value head of query head {KV_EXERCISE[5]}", (1,): "the size of the KV cache"}.get(tuple(index))


@checker("ex-kv-head", kind="numeric")
def check_kv_head(answer):
    """Grouped heads in order: the key/value head of query head 13, and the numbers in the KV cache."""
    L, h, g, d_k, T, i = KV_EXERCISE
    group = h // g
    cache = 2 * L * g * d_k * T
    first, second = pair(answer, "your pair", "(key/value head, numbers in the KV cache)")
    right = [i // group, cache]
    compare([first, second], right, "your pair", atol=1e-9, rtol=0, rounding_hint=False,
            entry=_kv_part, mistakes=[
        ([i % g, cache], "query head i reads key/value head i // (h / g), not i % g: neighbouring query heads "
                         "form a group, as in SmolLM2, where heads 0, 1, 2 read key/value head 0."),
        ([i // g, cache], "query head i reads key/value head i // (h / g): divide by the group size, not by g."),
        ([i // group, cache // 2], "the cache holds a key and a value for each key/value head: count both."),
        ([i // group, 2 * L * h * d_k * T], "only the key/value heads fill the cache: count g of them per "
                                            "layer, not the h query heads."),
        ([i // group, 2 * g * d_k * T], "every layer keeps its own keys and values: multiply by the L layers."),
        ([i // group, 2 * L * g * d_k], "that is the cache for one token; the question asks for T tokens."),
    ], shape_hint="Give two numbers: the key/value head, then the numbers in the KV cache.")
    return (f"query heads {i // group * group} to {i // group * group + group - 1} all read key/value head "
            f"{i // group}, and the cache holds 1/{group} as many keys and values as with one per query head.")
