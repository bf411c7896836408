r"""The smallest head, ``d_k = 1``: one query number decides a whole row of weights.

With one column, a query row of scores is ``q`` times the fixed row of keys,
:math:`s = q\,k^\top`, so the head's only freedom for a token is its query
scalar ``q``. This module sweeps ``q`` (:func:`q_sweep_weights`) and finds, by
bisection, where a token's weight crosses a level (:func:`q_threshold`) and
where a middle key's weight peaks (:func:`q_peak`).

As in :mod:`mha.rank`, the scores are ``q k`` with no division by
:math:`\sqrt{d_k}`; at ``d_k = 1`` that factor is 1 anyway.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, check_index, check_number
from .attention import softmax

__all__ = ["as_keys", "q_peak", "q_sweep_weights", "q_threshold"]


def as_keys(keys):
    """``keys`` as a 1-D float array of at least two finite numbers (one key scalar per token).

    Examples
    --------
    >>> as_keys((2, 0, 1))
    array([2., 0., 1.])
    """
    keys = as_float_array(keys, "keys")
    if keys.ndim != 1 or keys.size < 2:
        raise ValueError(f"keys must be a 1-D sequence of at least 2 numbers, got shape {keys.shape}")
    return keys


def q_sweep_weights(q_values, keys):
    r"""One query row of a ``d_k = 1`` head, for each scalar query ``q``.

    .. math:: w(q) = \operatorname{softmax}(q\,k^\top)

    Parameters
    ----------
    q_values : float or array_like, shape (m,)
        Query scalars.
    keys : array_like, shape (n,)
        One key scalar per token.

    Returns
    -------
    ndarray, shape (n,) or (m, n)
        Row ``i`` holds the weights of every token at ``q_values[i]``.

    Examples
    --------
    >>> q_sweep_weights([0.0, -3.0], keys=(2, 0, 1)).round(3)
    array([[0.333, 0.333, 0.333],
           [0.002, 0.95 , 0.047]])
    """
    q = as_float_array(q_values, "q_values")
    if q.ndim > 1:
        raise ValueError(f"q_values must be a number or a 1-D array, got shape {q.shape}")
    u, scale = _unit_keys(as_keys(keys))
    with np.errstate(over="ignore"):
        q_scaled = np.clip(q * scale, -_LIMIT, _LIMIT)  # a q that large already gives 0s and 1s
    return softmax(np.multiply.outer(q_scaled, u), axis=-1)  # (m,) x (n,) -> (m, n), = q k


#: Largest |q * max|k|| used; scores stay finite (|q k| <= this), and so do their differences.
_LIMIT = np.finfo(np.float64).max / 4


def _unit_keys(keys):
    """``keys / s`` with ``s = max |k|`` (1 if every key is 0), and ``s``: ``w(q; k) = w(q s; k / s)``."""
    scale = float(np.abs(keys).max()) or 1.0
    return keys / scale, scale


def _log_weight(q, keys, j):
    """log w_j(q) = -log sum_l exp(q (k_l - k_j)), computed without overflow."""
    z = q * (keys - keys[j])
    m = z.max()
    return -(m + np.log(np.exp(z - m).sum()))


def _bisect(f, lo, hi, iters=200):
    """Root of ``f`` in ``[lo, hi]`` where ``f(lo) < 0 < f(hi)`` (``f`` increasing)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def _bracket(f):
    """An interval ``[lo, hi]`` with ``f(lo) < 0 < f(hi)`` for an increasing ``f``."""
    lo, hi = -1.0, 1.0
    while f(lo) >= 0:
        lo *= 2
    while f(hi) <= 0:
        hi *= 2
    return lo, hi


def q_threshold(keys, index, p=0.95):
    r"""The query ``q*`` where token ``index`` of a ``d_k = 1`` head reaches weight ``p``.

    Only a token with the largest or the smallest key has a threshold: its
    weight :math:`w_j(q) = 1 / \sum_l e^{q (k_l - k_j)}` is monotone in ``q``.
    For the smallest key, ``w_j(q) > p`` exactly when ``q < q*``; for the
    largest key, exactly when ``q > q*``.

    Parameters
    ----------
    keys : array_like, shape (n,)
    index : int
        The token whose weight is asked about.
    p : float
        Target weight, ``0 < p < 1/m`` where ``m`` counts the tokens that share
        this key (the weight never passes ``1/m``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the key is neither the largest nor the smallest (its weight is never
        the largest; see :func:`q_peak`), or ``p`` is out of reach.

    Examples
    --------
    >>> round(q_threshold((2, 0, 1), index=1, p=0.95), 3)   # "love" has the smallest key
    -2.993
    """
    keys = as_keys(keys)
    j = check_index(index, "index", keys.size)
    p = check_number(p, "p")
    u, scale = _unit_keys(keys)
    share = int(np.sum(keys == keys[j]))
    if keys[j] not in (keys.min(), keys.max()) or share == keys.size:
        raise ValueError(f"key {keys[j]} of token {j} is not the one largest or smallest key of "
                         f"{tuple(keys.tolist())}: its weight has no threshold (use q_peak)")
    if not 0 < p < 1 / share:
        raise ValueError(f"p must be between 0 and 1/{share} (the most this weight can reach), got {p}")
    sign = -1.0 if keys[j] == keys.min() else 1.0  # the weight grows as sign * q grows

    def gap(q):  # increasing in q, zero at the threshold (q here multiplies the unit keys u)
        return sign * (_log_weight(q, u, j) - np.log(p))

    return _unscale(_bisect(gap, *_bracket(gap)), scale)


def _unscale(q_unit, scale):
    """The query for the original keys, from the query ``q_unit`` for the unit keys ``k / scale``."""
    with np.errstate(over="ignore"):
        q = q_unit / scale
    if not np.isfinite(q):
        raise ValueError(f"the keys (largest size {scale:.3g}) are so close to 0 that the query needed is "
                         "beyond the range of floating-point numbers")
    return float(q)


def q_peak(keys, index):
    r"""The query ``q`` that gives token ``index`` its largest weight, and that weight.

    :math:`\log w_j(q)` is concave in ``q`` with slope :math:`k_j - \mathbb{E}_{w(q)}[k]`,
    so the peak is where the weighted mean of the keys equals :math:`k_j`. For
    the largest (smallest) key there is no finite peak: the weight climbs
    towards ``1/m`` as ``q`` goes to ``+inf`` (``-inf``), where ``m`` counts
    the tokens that share the key.

    Returns
    -------
    q : float
        ``inf`` or ``-inf`` for an extreme key.
    weight : float

    Examples
    --------
    >>> q, w = q_peak((2, 0, 1), index=2)     # "LLMs", the middle key
    >>> float(q), round(float(w), 6)
    (0.0, 0.333333)
    """
    keys = as_keys(keys)
    j = check_index(index, "index", keys.size)
    share = int(np.sum(keys == keys[j]))
    if keys[j] == keys.max() or keys[j] == keys.min():
        if share == keys.size:
            return 0.0, 1.0 / share
        return (np.inf if keys[j] == keys.max() else -np.inf), 1.0 / share

    u, scale = _unit_keys(keys)

    def slope(q):  # weighted mean of the unit keys minus u_j; increasing in q
        return float(softmax(q * u) @ u) - u[j]

    q = 0.0 if slope(0.0) == 0 else _bisect(slope, *_bracket(slope))
    return _unscale(q, scale), float(np.exp(_log_weight(q, u, j)))
