r"""Superposition: many near-orthogonal directions summed in one vector, and read back.

A head's output is a weighted sum of value rows. If those rows point in
random directions of a wide space, they are nearly orthogonal, and a sum of a
few of them still says which ones went in: the dot product with a member is
about its weight, the dot product with any other direction is small noise.
This module draws such directions, reads a sum back by dot products, and
measures how often that works as more items are summed.

Shape legend: ``n`` directions (a vocabulary), ``d`` their width, ``k``
items in one sum, ``m`` trials.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_count, check_ndim, check_positive_int

__all__ = ["unit_directions", "decode", "BlendRecovery", "blend_recovery"]


def unit_directions(n, d, *, seed=0):
    r"""``n`` random directions of length 1 in ``d`` dimensions, one per row.

    Each row is a standard normal vector divided by its length, so the rows
    are spread evenly over the sphere. Two of them have a dot product of
    mean 0 and standard deviation :math:`1/\sqrt{d}`: in a wide space they
    are nearly orthogonal.

    Parameters
    ----------
    n, d : int
        Number of directions and their width, each at least 1.
    seed : int
        Seed of the draw, at least 0.

    Returns
    -------
    ndarray, shape (n, d)

    Examples
    --------
    >>> U = unit_directions(3, 64)
    >>> np.linalg.norm(U, axis=1).round(6).tolist()
    [1.0, 1.0, 1.0]
    """
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    seed = check_count(seed, "seed")
    g = np.random.default_rng(seed).standard_normal((n, d))  # (n, d)
    norms = np.linalg.norm(g, axis=1, keepdims=True)  # (n, 1); 0 only with probability 0
    return g / np.where(norms > 0, norms, 1.0)


def decode(vector, directions, k):
    r"""The ``k`` directions with the largest dot product with ``vector``, best first.

    Reading a sum :math:`v = \sum_{s \in \text{items}} w_s u_s` back: the score of
    direction :math:`u_j` is :math:`u_j \cdot v`, which is :math:`w_j` plus small
    cross terms for a member and only the cross terms for any other direction.

    Parameters
    ----------
    vector : array_like, shape (d,)
    directions : array_like, shape (n, d)
        The directions to choose from, one per row.
    k : int
        How many to return, from 1 to ``n``.

    Returns
    -------
    ndarray of int, shape (k,)
        Row indices into ``directions``, in order of falling score.

    Examples
    --------
    >>> U = unit_directions(100, 64)
    >>> decode(0.5 * U[7] + 0.5 * U[42], U, k=2).tolist()
    [42, 7]
    """
    v = as_float_array(vector, "vector")
    U = as_float_array(directions, "directions")
    check_ndim(v, "vector", 1, "(d,)", exact=True)
    check_ndim(U, "directions", 2, "(n, d)", exact=True)
    if U.shape[1] != v.shape[0] or U.shape[0] == 0:
        raise ValueError(f"directions must have shape (n, d) with n >= 1 and d = len(vector) = {v.shape[0]}, "
                         f"got directions {U.shape} and vector {v.shape}")
    k = check_positive_int(k, "k")
    if k > U.shape[0]:
        raise ValueError(f"k={k} is larger than the number of directions, {U.shape[0]}")
    scores = U @ v  # (n, d) @ (d,) -> (n,)
    return np.argsort(-scores, kind="stable")[:k]


@dataclass(frozen=True)
class BlendRecovery:
    """How well equal blends of ``k`` random directions are read back by :func:`decode`.

    Attributes
    ----------
    n, d, k, trials : int
        Vocabulary size, width, items per blend, number of blends tried.
    recovered : float
        Fraction of blends whose top ``k`` directions are exactly the ``k`` that went in.
    member_score : float
        Mean dot product of a blend with one of its members (about ``1/k``).
    margin : float
        Median over blends of (smallest member score - largest score of any other
        direction); positive means the blend was read back correctly.
    worst_margin : float
        The smallest of those margins.
    """

    n: int
    d: int
    k: int
    trials: int
    recovered: float
    member_score: float
    margin: float
    worst_margin: float


def blend_recovery(n, d, k, *, trials=200, seed=0):
    r"""Blend ``k`` of ``n`` random unit directions with equal weights, read them back, count successes.

    For each trial, ``k`` distinct directions :math:`u_s` are drawn and summed
    with weight :math:`1/k` each, :math:`v = \frac{1}{k} \sum_s u_s`. The blend is
    read back by dot products with all ``n`` directions (:func:`decode`).

    Parameters
    ----------
    n, d : int
        Vocabulary size (at least 2) and width (at least 1).
    k : int
        Items per blend, from 1 to ``n - 1`` (so that some direction is left out).
    trials : int
        Number of blends, at least 1.
    seed : int
        Seed for the directions and the draws, at least 0.

    Returns
    -------
    BlendRecovery

    Examples
    --------
    >>> r = blend_recovery(500, 64, 2, trials=50)
    >>> r.recovered, r.margin > 0
    (1.0, True)
    """
    n = check_count(n, "n", low=2)
    d = check_positive_int(d, "d")
    k = check_positive_int(k, "k")
    if k >= n:
        raise ValueError(f"k={k} must be smaller than n={n}, so that some direction is left out of each blend")
    trials, seed = check_positive_int(trials, "trials"), check_count(seed, "seed")
    U = unit_directions(n, d, seed=seed)  # (n, d)
    rng = np.random.default_rng(seed + 1)
    items = np.stack([rng.choice(n, size=k, replace=False) for _ in range(trials)])  # (m, k)
    blends = U[items].mean(axis=1)  # (m, k, d) -> (m, d)
    scores = blends @ U.T  # (m, d) @ (d, n) -> (m, n)
    member = np.take_along_axis(scores, items, axis=1)  # (m, k)
    others = scores.copy()
    np.put_along_axis(others, items, -np.inf, axis=1)  # leave the members out
    margins = member.min(axis=1) - others.max(axis=1)  # (m,)
    return BlendRecovery(n=n, d=d, k=k, trials=trials, recovered=float((margins > 0).mean()),
                         member_score=float(member.mean()), margin=float(np.median(margins)),
                         worst_margin=float(margins.min()))
