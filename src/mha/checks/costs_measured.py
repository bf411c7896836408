"""Checkers for the exercises of book/13_costs_measured.md (costs, measured on a CPU).

* ``ex-online-softmax`` (code): ``merge(a, b)``, the step that combines the softmax summaries of two
  parts of one query row. A summary is ``(m, l)``: the part's largest score and the sum of
  ``e^(s - m)`` over its scores; a part whose scores are all masked has the summary ``(-inf, 0)``.
  The checker summarises the two parts of each row of :data:`PARTS` itself, calls ``merge``, and
  compares the result with the summary of the whole row, then ``e^(s - m) / l`` with
  :func:`mha.softmax`.
"""

from __future__ import annotations

import math

import numpy as np

from ..attention import softmax
from .core import call_learner, checker, compare, one_number, pair, wrong

__all__ = ["PARTS", "merge_reference", "summary"]

#: (first part, second part, what the case tests); an empty part is a part whose scores are all masked.
PARTS = (
    ((0.5, 2.0, -1.0), (3.0, 1.0, 0.2), "the second part holds the larger maximum"),
    ((5.0, 4.0), (3.0, 2.0, 1.0, 0.0), "the first part holds the larger maximum"),
    ((998.0, 1000.0), (999.5, 1001.0, 997.0), "scores near 1,000"),
    ((-2.0, 4.0, 1.0), (4.0, -3.0, 0.5), "both parts share the same maximum"),
    ((), (0.3, -0.7, 1.9), "the first part is fully masked"),
    ((1.5, 0.0), (), "the second part is fully masked"),
    ((), (), "both parts are fully masked"),
)

_CALL = "merge(a, b), with a = (m, l) and b = (m, l), returning the pair (m, l)"


def summary(scores):
    """``(m, l)`` of a part of a row: its largest score and the sum of ``e^(s - m)``; ``(-inf, 0)`` if empty."""
    scores = np.asarray(scores, dtype=float)
    if scores.size == 0:
        return -math.inf, 0.0
    m = float(scores.max())
    return m, float(np.exp(scores - m).sum())


def merge_reference(a, b):
    """The combine step: ``m = max(m_a, m_b)``, ``l = l_a e^(m_a - m) + l_b e^(m_b - m)``."""
    (m_a, l_a), (m_b, l_b) = a, b
    m = max(m_a, m_b)
    if m == -math.inf:
        return -math.inf, 0.0
    return m, l_a * math.exp(m_a - m) + l_b * math.exp(m_b - m)


@checker("ex-online-softmax", kind="code")
def check_online_softmax(merge):
    """The learner's ``merge(a, b)``: the softmax summary of a row from the summaries of its two parts."""
    for number, (first, second, about) in enumerate(PARTS, start=1):
        case = f"case {number} ({about})"
        a, b = summary(first), summary(second)
        got = call_learner(merge, a, b, name="merge", case=case, signature=_CALL)
        got_m, got_l = pair(got, f"what merge returned for {case}", "(m, l)")
        m, l = merge_reference(a, b)
        if m == -math.inf:  # m = -inf is the right answer here, so read the numbers without refusing infinity
            try:
                got_m, got_l = (float(np.asarray(x, dtype=float)) for x in (got_m, got_l))
            except Exception:  # a BaseException from the learner's object is left to check()
                wrong(f"for {case}: merge should return two numbers (m, l).")
            if got_m != -math.inf or got_l != 0:
                extra = (" e^(m_a - m) is e^(-inf - (-inf)), which is NaN: when both maxima are -inf, "
                         "the row has no scores at all, so return (-inf, 0) without computing it."
                         if math.isnan(got_l) or math.isnan(got_m) else "")
                wrong(f"for {case}: a row whose scores are all masked has the summary (-inf, 0).{extra}")
            continue
        got_m = one_number(got_m, f"m for {case}")
        got_l = one_number(got_l, f"l for {case}")
        compare(got_m, m, f"m for {case}", rtol=1e-12, atol=0, rounding_hint=False, mistakes=[
            (min(a[0], b[0]) if min(a[0], b[0]) > -math.inf and a[0] != b[0] else None,
             f"for {case}: m is the larger of the two maxima, not the smaller."),
        ])
        if not math.isfinite(got_l):
            wrong(f"for {case}: l is not finite. Measure both sums from the larger maximum m: the factor "
                  "e^(m_part - m) is then at most 1, and a fully masked part (l = 0) adds nothing.")
        flipped = [(x_l * math.exp(m - x_m)) if x_l else 0.0 for x_m, x_l in (a, b)]
        compare(got_l, l, f"l for {case}", rtol=1e-9, atol=0, rounding_hint=False, mistakes=[
            (a[1] + b[1] if a[0] != b[0] and a[1] and b[1] else None,
             f"for {case}: the two sums were added as they are. Each was measured from its own part's "
             "maximum: rescale each by e^(m_part - m) before adding."),
            (sum(flipped) if a[0] != b[0] and a[1] and b[1] else None,
             f"for {case}: the rescale factor is upside down: it is e^(m_part - m), at most 1."),
            ((a if a[0] >= b[0] else b)[1] if a[1] and b[1] else None,
             f"for {case}: one of the two sums is missing. Keep both, each rescaled to the larger maximum."),
        ], hint="l is the sum of e^(s - m) over every score s of both parts, with m the larger maximum.")
        row = np.asarray(first + second, dtype=float)
        compare(np.exp(row - got_m) / got_l, softmax(row), f"the weights e^(s - m) / l for {case}",
                rtol=1e-9, atol=1e-12, rounding_hint=False)
    return (f"all {len(PARTS)} merges are right, fully masked parts included: summaries of any parts "
            "of a row can be combined in any grouping, which lets the work be split over chunks.")
