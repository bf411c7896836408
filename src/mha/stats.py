r"""How spread out attention is: the entropy of attention weights.

A row of attention weights :math:`a_{t,1}, \dots, a_{t,S}` is a probability
distribution over the ``S`` key positions. Its entropy, in nats,

.. math:: H_t = -\sum_{s=1}^{S} a_{t,s} \ln a_{t,s}, \qquad 0 \cdot \ln 0 = 0,

is 0 when query ``t`` puts all its weight on one position and :math:`\ln S`
when it spreads the weight evenly. Shape legend as in :mod:`mha.attention`.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_prob_rows

__all__ = ["head_entropy", "row_entropy"]


def _entropy(A: np.ndarray) -> np.ndarray:
    """Unchecked: the entropy of each row of ``A``; ``0 * log 0`` counts as 0."""
    safe = np.where(A > 0, A, 1.0)  # log(1) = 0 where the weight is 0
    return 0.0 - (A * np.log(safe)).sum(axis=-1)  # (..., T, S) -> (..., T); 0.0 - x avoids -0.0


def row_entropy(A):
    r"""Entropy in nats of every row of attention weights.

    .. math:: H_t = -\sum_s a_{t,s} \ln a_{t,s}, \quad\text{with } 0 \cdot \ln 0 = 0

    Parameters
    ----------
    A : array_like, shape (..., T, S)
        Attention weights; every row (last axis) must be non-negative and sum to 1.

    Returns
    -------
    ndarray, shape (..., T)
        Between 0 (all weight on one key) and :math:`\ln S` (weight spread evenly).

    Raises
    ------
    ValueError
        If an entry is negative, or a row is empty or does not sum to 1
        (within ``mha._validate.ROW_SUM_TOL``, 1e-5). With no rows at all
        (``T = 0``) the result is an empty array.

    Examples
    --------
    >>> row_entropy([[1.0, 0.0], [0.5, 0.5]]).round(4)     # sure, then evenly split: ln 2
    array([0.    , 0.6931])
    """
    return _entropy(check_prob_rows(A, "A", ndim=1, legend="(..., T, S)"))


def head_entropy(A):
    r"""Mean entropy in nats of each head's rows of attention weights.

    For head ``i`` with weights :math:`a^{(i)}_{t,s}` over ``T`` queries,

    .. math:: H^{(i)} = \frac{1}{T} \sum_{t=1}^{T} \Big( -\sum_{s=1}^{S} a^{(i)}_{t,s} \ln a^{(i)}_{t,s} \Big),
              \qquad 0 \cdot \ln 0 = 0.

    That is: the entropy of each row (one query's distribution over the keys),
    averaged over the rows of the head. A low value means the head looks at a
    few positions; :math:`\ln S` means it spreads its weight evenly. Under a
    causal mask query ``t`` can see only ``t + 1`` keys, so the largest
    possible value is smaller.

    Parameters
    ----------
    A : array_like, shape (..., h, T, S)
        Attention weights of ``h`` heads, as returned by
        :func:`mha.multi_head_attention`; every row must be non-negative and sum to 1.

    Returns
    -------
    ndarray, shape (..., h)
        One number per head (and per batch entry).

    Raises
    ------
    ValueError
        If ``A`` has fewer than three axes, a head has no rows (``T = 0``: the
        mean is undefined), an entry is negative, or a row is empty or does
        not sum to 1 (within ``mha._validate.ROW_SUM_TOL``, 1e-5).

    Examples
    --------
    >>> A = np.array([[[1.0, 0.0], [0.0, 1.0]],      # head 0: each query sure of one key
    ...               [[0.5, 0.5], [0.5, 0.5]]])     # head 1: every query split evenly
    >>> head_entropy(A).round(4)
    array([0.    , 0.6931])
    """
    A = check_prob_rows(A, "A", ndim=3, legend="(..., h, T, S)")
    if A.shape[-2] == 0:
        raise ValueError(f"A (shape {A.shape}) has no query rows (T = 0); a head's mean entropy needs "
                         "at least one row")
    return _entropy(A).mean(axis=-1)  # (..., h, T) -> (..., h)
