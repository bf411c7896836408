r"""How spread out attention is: the entropy of attention weights.

A row of attention weights :math:`a_{t,1}, \dots, a_{t,S}` is a probability
distribution over the ``S`` key positions. Its entropy, in nats,

.. math:: H_t = -\sum_{s=1}^{S} a_{t,s} \ln a_{t,s}, \qquad 0 \cdot \ln 0 = 0,

is 0 when query ``t`` puts all its weight on one position and :math:`\ln S`
when it spreads the weight evenly. Shape legend as in :mod:`mha.attention`.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_ndim

__all__ = ["head_entropy", "row_entropy"]

# How far a row sum may stray from 1, and an entry below 0, before the input is refused.
_SUM_TOL = 1e-5
_NEG_TOL = 1e-12


def _check_weights(A, name: str, ndim: int, legend: str) -> np.ndarray:
    """``A`` as a float array whose last axis holds probability distributions."""
    A = as_float_array(A, name)
    check_ndim(A, name, ndim, legend)
    if A.shape[-1] == 0:
        raise ValueError(f"{name} has an empty last axis (shape {A.shape}); a row needs at least one weight")
    if (A < -_NEG_TOL).any():
        where = tuple(int(i) for i in np.argwhere(A < -_NEG_TOL)[0])
        raise ValueError(f"{name} (shape {A.shape}) holds the negative weight {A[where]:.3g} at index {where}; "
                         "attention weights are never negative")
    sums = A.sum(axis=-1)
    off = np.abs(sums - 1.0) > _SUM_TOL
    if off.any():
        where = tuple(int(i) for i in np.argwhere(off)[0])
        raise ValueError(f"the rows of {name} (shape {A.shape}) must each sum to 1, but the row at index "
                         f"{where} sums to {sums[where]:.6g}; pass attention weights (after the softmax)")
    return A


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
        If an entry is negative or a row does not sum to 1 (within 1e-5).

    Examples
    --------
    >>> row_entropy([[1.0, 0.0], [0.5, 0.5]]).round(4)     # sure, then evenly split: ln 2
    array([0.    , 0.6931])
    """
    return _entropy(_check_weights(A, "A", 1, "(..., T, S)"))


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
        If ``A`` has fewer than three axes, an entry is negative, or a row
        does not sum to 1 (within 1e-5).

    Examples
    --------
    >>> A = np.array([[[1.0, 0.0], [0.0, 1.0]],      # head 0: each query sure of one key
    ...               [[0.5, 0.5], [0.5, 0.5]]])     # head 1: every query split evenly
    >>> head_entropy(A).round(4)
    array([0.    , 0.6931])
    """
    A = _check_weights(A, "A", 3, "(..., h, T, S)")
    return _entropy(A).mean(axis=-1)  # (..., h, T) -> (..., h)
