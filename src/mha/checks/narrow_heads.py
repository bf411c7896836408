"""Checkers for the exercises of book/05_narrow_heads.md (why a narrow head can express less).

The head of both exercises has d_k = 1; a query is one number q. The keys of
"I", "love" and "LLMs" are (2, 0, 1) in ``ex-q-love`` (:data:`KEYS`), as on the page.

* ``ex-q-love`` (numeric): the boundary q* below which "love" gets a weight above
  0.9, to two decimals (between two stops of the page's slider, which are 0.5 apart). Answers on either side of it learn on which side they are.
* ``ex-q-llms`` (numeric): for a head with the other keys (2, 0, 1.5)
  (:data:`LLMS_KEYS`), the query q that gives "LLMs" its largest weight, to two
  decimals, and that weight, to three. Its best q is no longer 0.
"""

from __future__ import annotations

import numpy as np

from ..attention import softmax
from .core import answer_array, checker, compare, dict_parts, near_threshold, one_number, safe_repr, wrong

__all__ = ["KEYS", "LLMS_KEYS", "TOKENS", "weights_for_q"]

#: The one-wide head of the chapter: keys of "I", "love", "LLMs".
KEYS = np.array([2.0, 0.0, 1.0])
TOKENS = ("I", "love", "LLMs")

_LOVE = 0.9  # the weight ex-q-love asks for: its q* (about -2.293) lies between slider stops


def weights_for_q(q, keys=KEYS):
    """Weights of a ``d_k = 1`` head with ``keys`` (default (2, 0, 1)) for the query ``q`` (no scaling: sqrt(1) = 1).

    softmax(q k) over the three keys, for one q or for each of several.

    >>> weights_for_q(0.0).round(3).tolist()
    [0.333, 0.333, 0.333]
    """
    # Beyond |q| = 1e4 the weights are one-hot in float64 already (the gaps q (k_i - k_j) exceed 745), so
    # clipping q there changes no weight and keeps q k finite for a q as large as 1e308.
    q = np.clip(np.asarray(q, dtype=float), -1e4, 1e4)
    return softmax(np.multiply.outer(q, np.asarray(keys, dtype=float)), axis=-1)  # () -> (3,), (m,) -> (m, 3)


def _one_q(answer, what="your q"):
    if isinstance(answer, (bool, np.bool_)):
        wrong(f"{what} is {answer}, a truth value. Give a number: the query of the token.")
    if isinstance(answer, (str, bytes)):
        wrong(f"{what} is text ({safe_repr(answer)}); it should be a number.")
    arr = answer_array(answer, what)
    if arr.size != 1:
        wrong(f"{what} should be one number, got {arr.size} numbers (shape {arr.shape}).")
    return float(arr.reshape(()))


# "love" (key 0) has the weight 1 / (1 + e^q + e^2q); it passes 0.9 where e^q + e^2q = 1/9,
# a quadratic in x = e^q. Dropping one of the other two tokens gives the two slips below.
_REST = 1 / _LOVE - 1
_Q_STAR = float(np.log((np.sqrt(1 + 4 * _REST) - 1) / 2))  # about -2.293
_TOL = 0.005  # two decimals
_ONE_TOKEN_SLIPS = [
    (float(np.log(_REST)), '"love" and "LLMs": 1 / (1 + e^q). "I", with the score 2q, takes weight too.'),
    (float(np.log(_REST) / 2), '"love" and "I": 1 / (1 + e^(2q)). "LLMs", with the score q, takes weight too.'),
]


@checker("ex-q-love", kind="numeric")
def q_love(answer):
    """The q* below which the one-wide head gives "love" a weight above 0.9, to two decimals."""
    q = _one_q(answer)
    w = weights_for_q(q)
    love = near_threshold(w[1], _LOVE)
    if abs(q - _Q_STAR) <= _TOL:
        return f'q* = {q:.2f}: "love" gets more than {_LOVE} of the weight exactly when q is below it.'
    if _LOVE < q <= 1:
        wrong(f"{q:g} looks like a weight. The answer is the query q, the number that multiplies the keys.")
    if q == 0:
        wrong("q = 0 multiplies every key by zero: the scores tie and each token gets a third.")
    if q > 0:
        wrong(f'with q = {q:g}, the largest key wins: "I" gets {w[0]:.3f} and "love" only {love}. '
              '"love" has the smallest key. What does the sign of q do to the order of the scores?')
    for slip, why in _ONE_TOKEN_SLIPS:
        if abs(q - slip) <= _TOL:
            wrong(f'with q = {q:g}, "love" gets {love}. Your q is where "love" would pass {_LOVE} if the '
                  f"row had only {why}")
    if w[1] > _LOVE:
        wrong(f'with q = {q:g}, "love" gets {love}, more than {_LOVE}: so q* lies between {q:g} and 0. '
              f"Move q towards zero until the weight is {_LOVE}.")
    wrong(f'with q = {q:g}, "love" gets {love}: the right direction, but not yet above {_LOVE}. '
          "q* is further from zero.")


# ex-q-llms uses other keys, (2, 0, 1.5): "LLMs" keeps the middle key, but it is no longer halfway, so its
# best query is not q = 0. Its weight is 1 / (1 + e^(q/2) + e^(-3q/2)); the slope is zero where
# e^(2q) = 3, so q = ln(3) / 2.
LLMS_KEYS = (2.0, 0.0, 1.5)
_Q_PEAK = float(np.log(3) / 2)                         # about 0.549
_W_PEAK = float(weights_for_q(_Q_PEAK, LLMS_KEYS)[2])  # about 0.363
_Q_TOL, _W_TOL = 0.0051, 0.00051                       # two decimals for q, three for the weight
_AT_PEAK = weights_for_q(_Q_PEAK, LLMS_KEYS)           # I, love, LLMs at the best q


@checker("ex-q-llms", kind="numeric")
def q_llms(answer):
    """The query that gives "LLMs" its largest weight under the keys (2, 0, 1.5), and that weight.

    The query is checked first (to two decimals), then the weight (to three).
    Named slips: the tie at q = 0 (the best query of the page's keys), the
    right size with the wrong sign, and e^q = 3 instead of e^(2q) = 3; for the
    weight, 1/3 and the weights of the other two tokens at the best q.
    """
    got_q, got_w = dict_parts(answer, ("q", "weight"), '{"q": 0.0, "weight": 0.0}')
    for value, what in ((got_q, '"q"'), (got_w, '"weight"')):
        if isinstance(value, (bool, np.bool_)):
            wrong(f"{what} is {value}, a truth value. Give a number.")
        if isinstance(value, (str, bytes)):
            wrong(f"{what} is text ({safe_repr(value)}); it should be a number.")
    q = one_number(got_q, '"q"')
    compare(q, _Q_PEAK, '"q"', atol=_Q_TOL, rtol=0, mistakes=[
        (0.0, "q = 0 makes every score 0, so the three tokens tie. With the page's keys (2, 0, 1) that "
              'tie was the best "LLMs" could do, because its key sat halfway between the others. Here '
              'the key of "LLMs" is not halfway: compare its weight a little to each side of 0.'),
        (-_Q_PEAK, 'the right size with the wrong sign. At a negative q, "love" (key 0) scores highest; '
                   'the weight of "LLMs" is larger on the other side of 0.'),
        (float(np.log(3)), 'your q solves e^q = 3. Write the weight of "LLMs" as 1 / (1 + e^(aq) + e^(bq)) '
                           "and check the two exponents a and b before you set the slope to zero."),
    ], hint='Compare the weight of "LLMs" just below and just above your q: the best q is on the side '
            "where it grows.")
    w = one_number(got_w, '"weight"')
    compare(w, _W_PEAK, '"weight"', atol=_W_TOL, rtol=0, mistakes=[
        (1 / 3, "1/3 is the weight at q = 0, where the scores tie. Give the weight at your q."),
        (_AT_PEAK[0], 'that is the weight of "I", the token that leads at this q. "LLMs" is the third token.'),
        (_AT_PEAK[1], 'that is the weight of "love". "LLMs" is the third token.'),
    ], hint='Compute softmax(q * keys) at your q and read the entry of "LLMs".')
    return (f'at q = {q:.2f}, "LLMs" gets {w:.3f}, more than the third it gets at q = 0. It still does not '
            'lead: "I", with the largest key, gets more there.')
