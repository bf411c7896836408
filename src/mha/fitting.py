"""Fitting one row of attention weights to several wishes at once.

One head gives each query a single row of weights. When two relations want
two different rows from the same query, the head has to settle on one row.
This module finds that row by gradient descent, the way training would, so
a chapter can show the compromise instead of asserting it.

Shape legend: ``n`` targets, ``S`` keys, ``d_k`` head width.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import check_count, check_number, check_positive_int, check_prob_rows, check_size
from .attention import softmax

__all__ = ["RowFit", "kl_divergence", "best_single_row", "fit_one_head"]


@dataclass(frozen=True)
class RowFit:
    """The result of fitting one row of weights.

    Attributes
    ----------
    row : ndarray, shape (S,)
        The fitted weights, ``softmax(logits)``; they sum to 1.
    logits : ndarray, shape (S,)
        The scores the row comes from.
    kl : ndarray, shape (n,)
        ``KL(target_k || row)`` in nats, one entry per target.
    total_kl : float
        ``kl.sum()``, the quantity that was minimised.
    steps : int
        Gradient steps taken.
    converged : bool
        True if the gradient fell below the tolerance before ``max_steps``.
    """

    row: np.ndarray
    logits: np.ndarray
    kl: np.ndarray
    total_kl: float
    steps: int
    converged: bool


def _as_targets(targets):
    """``targets`` as an ``(n, S)`` float64 array of probability rows, each rescaled to sum to exactly 1."""
    t = check_prob_rows(targets, "targets", legend="(n, S) or (S,)")
    if t.ndim == 1:
        t = t[None, :]  # (S,) -> (1, S)
    if t.ndim != 2 or t.shape[-1] < 2 or t.shape[0] == 0:
        raise ValueError(f"targets must have shape (n, S) with n >= 1 rows and S >= 2 keys, got shape {t.shape}")
    t = t.astype(np.float64)  # the fit runs in float64 whatever the targets' type
    return t / t.sum(axis=-1, keepdims=True)  # rows off by rounding would keep the gradient from vanishing


def kl_divergence(p, q):
    r"""Kullback-Leibler divergence :math:`\sum_j p_j \log(p_j / q_j)` along the last axis, in nats.

    Terms with :math:`p_j = 0` count as 0. ``q`` must be positive wherever ``p`` is
    (else the divergence is infinite, and a ``ValueError`` says so). The logs
    are taken separately, :math:`p_j (\log p_j - \log q_j)`, so a tiny but
    positive ``q_j`` gives a large finite value, never an overflow.

    Parameters
    ----------
    p, q : array_like, shape (..., S)
        Rows of probabilities (each at least 0, summing to 1); they broadcast
        against each other.

    Returns
    -------
    ndarray, shape (...)

    Examples
    --------
    >>> float(kl_divergence([0.5, 0.5], [0.5, 0.5]))
    0.0
    >>> round(float(kl_divergence([1.0, 0.0], [0.5, 0.5])), 4)   # log 2
    0.6931
    """
    p = check_prob_rows(p, "p")
    q = check_prob_rows(q, "q")
    if p.shape[-1] != q.shape[-1]:
        raise ValueError(f"p and q need the same last axis S, got p {p.shape} and q {q.shape}")
    try:
        p, q = np.broadcast_arrays(p, q)
    except ValueError:
        raise ValueError(f"the leading axes of p {p.shape} and q {q.shape} do not broadcast") from None
    infinite = (p > 0) & (q == 0)
    if infinite.any():
        where = tuple(int(i) for i in np.argwhere(infinite)[0])
        raise ValueError(f"q is 0 where p is positive (index {where}, shape {q.shape}): the divergence is infinite")
    log_ratio = np.log(np.where(p > 0, p, 1.0)) - np.log(np.where(p > 0, q, 1.0))  # 0 where p = 0
    return np.maximum(np.sum(p * log_ratio, axis=-1), 0.0)  # >= 0; rounding can dip below


def best_single_row(targets, *, tol=1e-10, max_steps=20_000):
    r"""The one row of weights that serves every target best.

    Gradient descent on the logits :math:`z` of the row :math:`w = \operatorname{softmax}(z)`,
    minimising the summed divergence

    .. math:: L(z) = \sum_{k=1}^{n} \operatorname{KL}(t_k \,\|\, w),
              \qquad \nabla_z L = \sum_{k=1}^{n} (w - t_k) = n\,(w - \bar t).

    The gradient vanishes only where :math:`w = \bar t`, the average of the targets,
    so that is where the fit ends. One target is fitted exactly.

    Parameters
    ----------
    targets : array_like, shape (n, S) or (S,)
        The rows of weights each relation would like; every row sums to 1.
        Targets with a zero entry are fine as long as some target is positive there.
    tol : float
        Stop when the largest entry of the gradient is below ``tol``; a
        finite number above 0 (an infinite ``tol`` would call any row converged).
    max_steps : int
        Upper limit on the number of gradient steps, at least 1.

    Returns
    -------
    RowFit

    Examples
    --------
    >>> fit = best_single_row([[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]])
    >>> fit.row.round(2)
    array([0.45, 0.1 , 0.45])
    >>> best_single_row([0.8, 0.1, 0.1]).total_kl < 1e-12      # one target: exact
    True
    """
    t = _as_targets(targets)
    tol = check_number(tol, "tol", low=0, low_open=True)
    max_steps = check_size(max_steps, "max_steps", high=10 ** 7)
    n, S = t.shape
    if (t.sum(axis=0) == 0).any():
        j = int(np.argmin(t.sum(axis=0)))
        raise ValueError(f"no target puts weight on key {j} (targets shape {t.shape}); "
                         "the best row would need a logit of -inf there")
    z = np.zeros(S)
    lr = 2.0 / n  # the Hessian n (diag(w) - w wᵀ) has eigenvalues at most n/2, so 1/(n/2) is safe
    converged = False
    steps = 0
    for steps in range(1, max_steps + 1):
        grad = (softmax(z)[None, :] - t).sum(axis=0)  # (n, S) -> (S,)
        if np.abs(grad).max() < tol:
            converged = True
            break
        z = z - lr * grad
    return _row_fit(t, z - z.mean(), steps, converged)


def _row_fit(t, z, steps, converged):
    row = softmax(z)
    kl = kl_divergence(t, row)  # (n, S), (S,) -> (n,)
    return RowFit(row=row, logits=z, kl=kl, total_kl=float(kl.sum()), steps=steps, converged=converged)


def fit_one_head(targets, d_k, *, seed=0, steps=4000, lr=0.05):
    r"""Fit the query and keys of ONE head of width ``d_k`` to every target at once.

    The head's row for one query is :math:`w = \operatorname{softmax}(K q / \sqrt{d_k})`
    with a query :math:`q \in \mathbb{R}^{d_k}` and keys :math:`K \in \mathbb{R}^{S \times d_k}`,
    both free. Adam, with a step size that decays linearly to 0, fits them from a
    small random start to the summed divergence :math:`\sum_k \operatorname{KL}(t_k \,\|\, w)`.
    However wide the head, it still has one row for this query, so the fit can
    do no better than :func:`best_single_row`. For a single target, width 1
    already suffices: :math:`q = 1` and :math:`k_j = \ln t_j` give the row exactly.
    Width pays off only across many queries, whose rows share the keys
    (:func:`mha.rank.fit_scores` fits those).

    Parameters
    ----------
    targets : array_like, shape (n, S) or (S,)
    d_k : int
        Width of the head.
    seed : int
        Seed of the random start, at least 0.
    steps : int
        Number of Adam steps, at least 1.
    lr : float
        Adam's first step size: above 0 and at most 10 (each step moves a
        parameter by about ``lr``, so a larger one only overshoots, and an
        enormous one would overflow the scores).

    Returns
    -------
    RowFit
        ``logits`` are the scaled scores :math:`K q / \sqrt{d_k}`; ``converged`` is
        True when the final gradient is below ``1e-6``.

    Examples
    --------
    >>> targets = [[0.8, 0.1, 0.1], [0.1, 0.1, 0.8]]
    >>> wide = fit_one_head(targets, d_k=16)
    >>> bool(abs(wide.total_kl - best_single_row(targets).total_kl) < 1e-6)
    True
    """
    t = _as_targets(targets)
    d_k = check_size(d_k, "d_k", high=4096)
    seed = check_count(seed, "seed")
    steps = check_size(steps, "steps", high=10 ** 7)
    lr = check_number(lr, "lr", low=0, low_open=True, high=10)
    n, S = t.shape
    rng = np.random.default_rng(seed)
    params = [rng.normal(0.0, 0.5, size=d_k), rng.normal(0.0, 0.5, size=(S, d_k))]  # q (d_k,), K (S, d_k)
    moments = [[np.zeros_like(p), np.zeros_like(p)] for p in params]
    b1, b2, eps = 0.9, 0.999, 1e-12
    scale = 1.0 / np.sqrt(d_k)
    for step in range(1, steps + 1):
        rate = lr * (1.0 - (step - 1) / steps)  # decays linearly to 0: no jitter at the end
        q, K = params
        g = n * softmax(K @ q * scale) - t.sum(axis=0)  # dL/dz, shape (S,)
        grads = [K.T @ g * scale, np.outer(g, q) * scale]  # dL/dq (d_k,), dL/dK (S, d_k)
        for p, (m, v), dp in zip(params, moments, grads):
            m *= b1
            m += (1 - b1) * dp
            v *= b2
            v += (1 - b2) * dp * dp
            p -= rate * (m / (1 - b1**step)) / (np.sqrt(v / (1 - b2**step)) + eps)
    q, K = params
    z = K @ q * scale
    g = n * softmax(z) - t.sum(axis=0)
    return _row_fit(t, z, steps, bool(np.abs(g).max() < 1e-6))
