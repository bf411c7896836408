"""Checkers for the exercises of book/05_narrow_heads.md (why a narrow head can express less).

The head of both exercises has d_k = 1 and the keys (2, 0, 1) for "I",
"love" and "LLMs" (:data:`KEYS`); a query is one number q.

* ``ex-q-love`` (numeric): the boundary q* below which "love" gets a weight above
  0.95, to two decimals. Answers on either side of it learn on which side they are.
* ``ex-q-llms`` (numeric): a q giving "LLMs" more than 0.34, or the word
  "impossible" when there is none (there is none). One q far from 0 gets a
  hint; a q near 0 or a search over several values gets the whole argument.
"""

from __future__ import annotations

import re

import numpy as np

from ..attention import softmax
from .core import answer_array, checker, near_threshold, safe_repr, wrong

__all__ = ["KEYS", "TOKENS", "weights_for_q"]

#: The one-wide head of the chapter: keys of "I", "love", "LLMs".
KEYS = np.array([2.0, 0.0, 1.0])
TOKENS = ("I", "love", "LLMs")

_LOVE, _LLMS = 0.95, 0.34  # the weights the two exercises ask for


def weights_for_q(q):
    """Weights of a ``d_k = 1`` head with keys (2, 0, 1) for the query ``q`` (no scaling: sqrt(1) = 1).

    softmax(q k) over the three keys, for one q or for each of several.

    >>> weights_for_q(0.0).round(3).tolist()
    [0.333, 0.333, 0.333]
    """
    return softmax(np.multiply.outer(np.asarray(q, dtype=float), KEYS), axis=-1)  # () -> (3,), (m,) -> (m, 3)


def _one_q(answer, what="your q"):
    if isinstance(answer, (bool, np.bool_)):
        wrong(f"{what} is {answer}, a truth value. Give a number: the query of the token.")
    if isinstance(answer, (str, bytes)):
        wrong(f"{what} is text ({safe_repr(answer)}); it should be a number.")
    arr = answer_array(answer, what)
    if arr.size != 1:
        wrong(f"{what} should be one number, got {arr.size} numbers (shape {arr.shape}).")
    return float(arr.reshape(()))


# "love" (key 0) has the weight 1 / (1 + e^q + e^2q); it passes 0.95 where e^q + e^2q = 1/19,
# a quadratic in x = e^q. Dropping one of the other two tokens gives the two slips below.
_REST = 1 / _LOVE - 1
_Q_STAR = float(np.log((np.sqrt(1 + 4 * _REST) - 1) / 2))  # about -2.993
_TOL = 0.005  # two decimals
_ONE_TOKEN_SLIPS = [
    (float(np.log(_REST)), '"love" and "LLMs": 1 / (1 + e^q). "I", with the score 2q, takes weight too.'),
    (float(np.log(_REST) / 2), '"love" and "I": 1 / (1 + e^(2q)). "LLMs", with the score q, takes weight too.'),
]


@checker("ex-q-love", kind="numeric")
def q_love(answer):
    """The q* below which the one-wide head gives "love" a weight above 0.95, to two decimals."""
    q = _one_q(answer)
    w = weights_for_q(q)
    love = near_threshold(w[1], _LOVE)
    if abs(q - _Q_STAR) <= _TOL:
        return f'q* = {q:.2f}: "love" gets more than {_LOVE} of the weight exactly when q is below it.'
    if 0.95 < q <= 1:
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


_NO_SUCH_Q = {"impossible", "none", "noq", "nosuchq", "noneexists", "thereisnone", "noqexists",
              "thereisnosuchq", "itisimpossible", "cannot", "notpossible"}

_WHY_NONE = ('"LLMs" has the middle key, 1. A positive q keeps the order of the keys, so "I" (key 2) scores '
             'higher; a negative q reverses it, so "love" (key 0) scores higher. Its weight is '
             "1 / (1 + 2 cosh q): largest at q = 0, where it is 1/3, below 0.34. So no q exists.")

_HINT = ('Hint: "LLMs" has the middle key, 1. What does a positive q do to the order of the three scores, '
         "and a negative q? Try q = 0, then values on both sides of it.")

_NEAR_PEAK = 1.0  # |q| below this (or a search over several q) means the learner has looked near the peak


@checker("ex-q-llms", kind="numeric")
def q_llms(answer):
    """A query giving "LLMs" more than 0.34, or the word "impossible" when there is none.

    A single q far from 0 gets a hint (which token leads there, and what the
    sign of q does); a q near 0, or a search over several values, gets the
    whole argument, since the learner has already looked where "LLMs" does best.
    """
    if isinstance(answer, str):
        if re.sub(r"[^a-z]", "", answer.lower()) in _NO_SUCH_Q:
            return "right, no q can do it. " + _WHY_NONE
        wrong(f'{safe_repr(answer)} is not a q, and not the word "impossible". Give a number, or "impossible" '
              "if you are sure that no number works.")
    if isinstance(answer, (bool, np.bool_)):
        wrong(f'{answer} is a truth value. Give a number q, or the word "impossible".')
    qs = answer_array(answer, "your q").ravel()
    if qs.size == 0:
        wrong('your answer is empty. Give a number q, or the word "impossible".')
    W = weights_for_q(qs)  # (n_q,) -> (n_q, 3)
    best = int(np.argmax(W[:, 2]))
    shown = near_threshold(W[best, 2], _LLMS)
    if W[best, 2] > _LLMS:  # never happens; kept so the checker stays honest if the keys change
        return f'with q = {qs[best]:g}, "LLMs" gets {shown}.'
    if qs.size > 1:
        wrong(f'of the {qs.size} values you tried, the best, q = {qs[best]:g}, gives "LLMs" {shown}, '
              f"not more than {_LLMS}. {_WHY_NONE}")
    q = float(qs[0])
    if q == 0:
        wrong(f'q = 0 makes every score 0, so the three tokens tie: it gives "LLMs" {shown}, not more '
              f"than {_LLMS}. Moving q away from 0 only lowers it. {_WHY_NONE}")
    if abs(q) < _NEAR_PEAK:
        wrong(f'q = {q:g} gives "LLMs" {shown}, not more than {_LLMS}. {_WHY_NONE}')
    lead = int(np.argmax(W[0]))
    wrong(f'q = {q:g} gives "LLMs" {shown}, not more than {_LLMS}: "{TOKENS[lead]}" leads with '
          f"{W[0, lead]:.3f}. {_HINT}")
