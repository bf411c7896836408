"""Checkers for the exercises of book/12_costs_measured.md (costs, measured on a CPU).

* ``ex-online-softmax`` (code): ``online_step(m, l, block)``, the online-softmax update of one
  query row: the new running maximum and the new running sum of exponentials. The checker feeds
  each row of :data:`ROWS` to it block by block, from ``m = -inf`` and ``l = 0``, checks every
  step against the exact running values, then the weights ``exp(s - m) / l`` against
  :func:`mha.softmax`.
"""

from __future__ import annotations

import math

import numpy as np

from ..attention import softmax
from .core import call_learner, checker, compare, one_number, pair, wrong

__all__ = ["ROWS", "online_reference"]

#: (scores of one row, the sizes of its blocks, what the row tests)
ROWS = (
    ((0.5, 2.0, -1.0, 3.0, 1.0, 0.2), (2, 2, 2), "a row whose maximum grows from block to block"),
    ((5.0, 4.0, 3.0, 2.0, 1.0, 0.0), (1, 1, 1, 1, 1, 1), "a row whose first block holds its maximum"),
    ((998.0, 1000.0, 999.5, 1001.0, 997.0), (2, 2, 1), "a row of scores near 1,000"),
    ((0.3, -0.7, 1.9, 0.0), (4,), "a row in one block"),
    ((-2.0, 4.0, 1.0, 4.0, -3.0, 0.5), (3, 1, 2), "blocks of 3, 1 and 2 scores"),
)

_CALL = "online_step(m, l, block), returning the pair (m, l)"


def online_reference(m, l, block):
    """The update itself: ``(m', l e^{m - m'} + sum e^{block - m'})``."""
    block = np.asarray(block, dtype=float)
    m_new = max(m, float(block.max()))
    return m_new, l * math.exp(m - m_new) + float(np.exp(block - m_new).sum())


def _blocks(row, sizes):
    starts = np.cumsum((0, *sizes[:-1]))
    return [np.array(row[s:s + n]) for s, n in zip(starts, sizes)]


@checker("ex-online-softmax", kind="code")
def check_online_softmax(step):
    """The learner's ``online_step(m, l, block)``: the running maximum and sum of one softmax row."""
    for number, (row, sizes, about) in enumerate(ROWS, start=1):
        m, l = -math.inf, 0.0
        for index, block in enumerate(_blocks(row, sizes), start=1):
            case = f"row {number} ({about}), block {index}"
            got = call_learner(step, m, l, block, name="online_step", case=case, signature=_CALL)
            got_m, got_l = pair(got, f"what online_step returned for {case}", "(m, l)")
            got_m = one_number(got_m, f"m after {case}")
            got_l = one_number(got_l, f"l after {case}")
            m_new, l_new = online_reference(m, l, block)
            compare(got_m, m_new, f"m after {case}", rtol=1e-12, atol=0, rounding_hint=False, mistakes=[
                (float(block.max()), f"for {case}: m is the largest score seen so far, over every block, "
                                     "not only the new block's largest."),
                (m if np.isfinite(m) else None, f"for {case}: m did not change, but this block holds a "
                                                "larger score."),
            ])
            if not math.isfinite(got_l):
                wrong(f"for {case}: l is not finite. Measure every exponential from the new maximum, "
                      "e^(s - m'), so that none can overflow.")
            shift = np.exp(block - m_new).sum()
            compare(got_l, l_new, f"l after {case}", rtol=1e-9, atol=0, rounding_hint=False, mistakes=[
                (l + shift if l else None, f"for {case}: the old sum was not rescaled. When the maximum "
                                           "grows from m to m', multiply the old l by e^(m - m')."),
                (l * math.exp(m_new - m) + shift if l and m_new != m else None,
                 f"for {case}: the rescale factor is upside down: it is e^(m - m'), the old maximum "
                 "minus the new one, which is at most 1."),
                (shift if l else None, f"for {case}: the old sum was dropped. Keep it, rescaled by e^(m - m')."),
                (l + float(np.exp(block).sum()) if m_new != 0 else None,
                 f"for {case}: l sums e^(s - m), each score measured from the running maximum, "
                 "not e^s."),
            ], hint="l is the sum of e^(s - m) over every score s seen so far, with m the new maximum.")
            m, l = got_m, got_l
        compare(np.exp(np.asarray(row) - m) / l, softmax(np.asarray(row)),
                f"the weights e^(s - m) / l of row {number}", rtol=1e-9, atol=1e-12, rounding_hint=False)
    return (f"every step of all {len(ROWS)} rows is right, and e^(s - m) / l is the softmax of each row: "
            "one pass over the blocks, never more than one block of scores at a time.")
