r"""Statistics of attention and of a model's loss: entropy, perplexity change and its interval.

*Entropy.*
A row of attention weights :math:`a_{t,1}, \dots, a_{t,S}` is a probability
distribution over the ``S`` key positions. Its entropy, in nats,

.. math:: H_t = -\sum_{s=1}^{S} a_{t,s} \ln a_{t,s}, \qquad 0 \cdot \ln 0 = 0,

is 0 when query ``t`` puts all its weight on one position and :math:`\ln S`
when it spreads the weight evenly.

*Perplexity change.* The loss of a model on the same ``N`` tokens, with and
without a change (a head removed, say), compared as a change in perplexity
(:func:`perplexity_change`), with a moving-block bootstrap interval
(:func:`perplexity_change_interval`). Shape legend as in :mod:`mha.attention`.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_count, check_ndim, check_number, check_positive_int, check_prob_rows, check_size

__all__ = ["head_entropy", "row_entropy", "perplexity_change", "perplexity_change_interval"]


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


def perplexity_change(nll, nll_base):
    r"""Change in perplexity, in per cent: :math:`100\,(e^{\bar\ell - \bar\ell_0} - 1)`.

    ``nll`` (..., N) and ``nll_base`` (N,) hold the loss of each of the same
    ``N`` tokens, in nats; :math:`\bar\ell` is the mean over the tokens.
    Positive: the model does worse. Returns an array of shape (...).

    >>> float(perplexity_change(np.array([1.0, 2.0]), np.array([1.0, 2.0])))
    0.0
    """
    nll, nll_base = _paired_losses(nll, nll_base)
    with np.errstate(over="ignore", invalid="ignore"):
        gap = nll.mean(axis=-1) - nll_base.mean()  # (...,)
        if not np.isfinite(gap).all():  # the means of huge float32 losses overflowed: take them in float64
            gap = nll.mean(axis=-1, dtype=np.float64) - nll_base.mean(dtype=np.float64)
        change = 100 * np.expm1(gap)
    return _finite_change(change, gap)


def _finite_change(change, gap):
    """``change`` if every entry is finite; else the losses differ too much for a change in perplexity."""
    if not np.isfinite(change).all():
        worst = float(np.max(np.abs(np.asarray(gap, dtype=np.float64))))
        raise ValueError(f"the mean losses differ by up to {worst:.3g} nats: the change in perplexity, "
                         f"100 (e^gap - 1) per cent, is too large for {np.asarray(change).dtype}. Compare the mean "
                         "losses themselves")
    return change


def _paired_losses(nll, nll_base):
    nll = as_float_array(nll, "nll")
    nll_base = as_float_array(nll_base, "nll_base")
    check_ndim(nll_base, "nll_base", 1, "(N,)", exact=True)
    if nll.ndim < 1 or nll.shape[-1] != nll_base.shape[0] or nll_base.shape[0] == 0:
        raise ValueError(f"nll {nll.shape} must hold (..., N) losses for the same N >= 1 tokens as "
                         f"nll_base {nll_base.shape}")
    return nll, nll_base


def perplexity_change_interval(nll, nll_base, *, n_boot=1000, block=16, level=0.95, seed=0):
    r"""A bootstrap interval for :func:`perplexity_change`, resampling the tokens in blocks.

    Neighbouring tokens are not independent, so the tokens are drawn in runs of
    ``block`` consecutive positions (a moving-block bootstrap): ``n_boot``
    resampled texts of ``N`` tokens each, the same tokens for the ablated and
    the whole model (the comparison is paired). The interval holds the middle
    ``level`` of the resampled changes.

    Parameters
    ----------
    nll : array_like, shape (..., N)
    nll_base : array_like, shape (N,)
    n_boot, block : int
    level : float in (0, 1)
    seed : int

    Returns
    -------
    ndarray, shape (..., 2)
        Lower and upper end, in per cent.
    """
    nll, nll_base = _paired_losses(nll, nll_base)
    n_boot = check_size(n_boot, "n_boot", high=10 ** 6)
    N = nll_base.shape[0]
    block = min(check_positive_int(block, "block"), N)
    level = check_number(level, "level", low=0.0, high=1.0, low_open=True)
    if level == 1:
        raise ValueError("level must be below 1: a bootstrap interval cannot hold every resampled value")
    rng = np.random.default_rng(check_count(seed, "seed"))
    n_blocks = -(-N // block)  # ceil(N / block)
    starts = rng.integers(0, N - block + 1, size=(n_boot, n_blocks))  # (n_boot, n_blocks)
    picks = (starts[..., None] + np.arange(block)).reshape(n_boot, -1)[:, :N]  # (n_boot, N) token indices
    counts = np.zeros((n_boot, N))
    np.add.at(counts, (np.arange(n_boot)[:, None], picks), 1.0)  # how often each token was drawn
    with np.errstate(over="ignore", invalid="ignore"):
        diff = nll - nll_base  # (..., N)
        gaps = diff @ counts.T / N  # (..., N) @ (N, n_boot) -> (..., n_boot)
        changes = 100 * np.expm1(gaps)
    _finite_change(changes, np.where(np.isfinite(gaps), gaps, np.inf))
    tail = (1 - level) / 2
    return np.moveaxis(np.quantile(changes, [tail, 1 - tail], axis=-1), 0, -1)  # (2, ...) -> (..., 2)
