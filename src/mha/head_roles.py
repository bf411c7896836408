"""Heads with roles: which keys each role wants, how much of it a map keeps, and one row's arithmetic.

A hand-set layer such as :func:`mha.examples.cat_sat_mat` gives each of its
heads one role. This module reads the roles back from attention maps:

* :func:`role_keys` -- for every role, the keys it wants for every query, as a
  ``(n_roles, T, T)`` mask;
* :func:`role_mass` -- the weight a map puts on a role's keys, averaged over
  the query rows;
* :func:`read_roles` -- one reading of the layer with ``h`` heads: each head's
  map and its mass on every role;
* :func:`survival` -- how much of each role is left when the same weights are
  read with ``h = 1``;
* :func:`row_arithmetic` -- one query row of every head, step by step:
  ``q . k``, divided by ``sqrt(d_k)``, ``exp``, the sum, the softmax;
* :func:`map_distance` -- how far apart two maps are (total variation, per row).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_index, check_ndim, check_positive_int, check_prob_rows
from .attention import AttentionSteps, attention_steps
from .examples import RoleExample

__all__ = ["RoleReading", "RowArithmetic", "map_distance", "read_roles", "role_keys", "role_mass",
           "row_arithmetic", "survival"]

DELIMITERS = (".", ",", ";", "!", "?", "[SEP]")


def _check_example(example):
    if not isinstance(example, RoleExample):
        raise TypeError(f"example must be a mha.examples.RoleExample (e.g. cat_sat_mat()), "
                        f"got {type(example).__name__}")
    return example


def _keys_of(role, tokens, tags):
    T = len(tokens)
    t, s = np.arange(T)[:, None], np.arange(T)[None, :]
    word, tag = np.array(tokens, dtype=object), np.array(tags, dtype=object)
    if role == "neighbour":
        return np.abs(t - s) == 1                                          # the tokens beside t
    if role == "same part of speech":
        return tag[:, None] == tag[None, :]                                # itself included
    if role == "same word":
        return word[:, None] == word[None, :]                              # itself included
    if role == "delimiter sink":
        return np.broadcast_to(np.isin(word, DELIMITERS)[None, :], (T, T))  # every query, the "."
    raise ValueError(f"unknown role {role!r}; the roles read here are neighbour, same part of speech, "
                     "same word and delimiter sink")


def role_keys(example):
    """For every role of the example, the keys it wants from every query.

    Parameters
    ----------
    example : RoleExample

    Returns
    -------
    ndarray of bool, shape (n_roles, T, T)
        ``keys[r, t, s]`` is True when role ``r`` wants query ``t`` to look at key ``s``.

    Examples
    --------
    >>> from mha.examples import cat_sat_mat
    >>> role_keys(cat_sat_mat())[2, 0].astype(int)   # "same word" at the first "the"
    array([1, 0, 0, 0, 1, 0, 0, 0])
    """
    example = _check_example(example)
    return np.array([_keys_of(role, example.tokens, example.tags) for role in example.roles])


def role_mass(weights, keys):
    r"""The weight a map puts on a role's keys, averaged over the query rows.

    .. math:: m = \frac{1}{T} \sum_t \sum_s a_{ts} \, [\text{role wants } s \text{ from } t]

    Parameters
    ----------
    weights : array_like, shape (..., T, S)
        Attention maps; rows sum to 1.
    keys : array_like of bool, shape (T, S)
        One role's wanted keys, e.g. ``role_keys(example)[r]``.

    Returns
    -------
    ndarray, shape (...)
        1 when every row puts all its weight on the role's keys.
    """
    A = check_prob_rows(weights, "weights", ndim=2, legend="(..., T, S)")
    try:
        M = np.asarray(keys)
    except ValueError:
        raise ValueError(f"keys must be a boolean (T, S) mask of shape {A.shape[-2:]}, got a ragged sequence") from None
    if M.dtype != bool or M.shape != A.shape[-2:]:
        raise ValueError(f"keys must be a boolean (T, S) mask of shape {A.shape[-2:]} like the maps' last two "
                         f"axes, got {M.dtype} of shape {M.shape}")
    return (A * M).sum(axis=-1).mean(axis=-1)  # (..., T, S) -> (...,)


@dataclass(frozen=True)
class RoleReading:
    """The layer read with ``h`` heads.

    Attributes
    ----------
    h, d_k : int
    steps : AttentionSteps
        Every intermediate, from :func:`mha.attention_steps`.
    weights : ndarray, shape (h, T, T)
    masses : ndarray, shape (h, n_roles)
        ``masses[i, r]``: head ``i``'s weight on role ``r``'s keys (see :func:`role_mass`).
    """

    h: int
    d_k: int
    steps: AttentionSteps
    weights: np.ndarray
    masses: np.ndarray


def read_roles(example, h):
    """Run the example's layer with ``h`` heads and measure every head's mass on every role.

    Only the split changes with ``h``: the matrices are the example's own.

    Examples
    --------
    >>> from mha.examples import cat_sat_mat
    >>> r = read_roles(cat_sat_mat(), h=2)
    >>> r.weights.shape, r.masses.shape
    ((2, 8, 8), (2, 4))
    """
    example = _check_example(example)
    h = check_positive_int(h, "h")
    steps = attention_steps(example.X, *example.weights, h=h)
    keys = role_keys(example)                                             # (n_roles, T, T)
    masses = np.stack([role_mass(steps.weights, M) for M in keys], axis=-1)  # (h, n_roles)
    return RoleReading(h=h, d_k=steps.d_k, steps=steps, weights=steps.weights, masses=masses)


def survival(example):
    """How much of each role the single map (``h = 1``) keeps, against the role's own head.

    Returns
    -------
    dict
        ``role -> (own, single, fraction)``: the mass of the role's head on
        its keys (read with the example's ``h``), the mass of the one map of
        ``h = 1`` on the same keys, and ``single / own``.
    """
    example = _check_example(example)
    own = read_roles(example, example.h).masses                        # (h, n_roles)
    single = read_roles(example, 1).masses[0]                          # (n_roles,)
    for r, role in enumerate(example.roles):
        if not own[r, r] > 0:
            raise ValueError(f"role {role!r} (head {r}) puts no weight on its keys in this sentence ({own[r, r]:.3g}): "
                             "it has no keys to want here, so what survives of it is undefined. Use a sentence "
                             "that holds what the role looks for")
    return {role: (float(own[r, r]), float(single[r]), float(single[r] / own[r, r]))
            for r, role in enumerate(example.roles)}


@dataclass(frozen=True)
class RowArithmetic:
    """One query row of one head, step by step.

    Attributes
    ----------
    head, row : int
        Which head (from 0) and which query.
    d_k : int
    scores : ndarray, shape (S,)
        ``q . k`` for every key.
    scaled : ndarray, shape (S,)
        ``scores / sqrt(d_k)``.
    exps : ndarray, shape (S,)
        ``exp(scaled)``.
    total : float
        ``exps.sum()``.
    weights : ndarray, shape (S,)
        ``exps / total``: the softmax.
    """

    head: int
    row: int
    d_k: int
    scores: np.ndarray
    scaled: np.ndarray
    exps: np.ndarray
    total: float
    weights: np.ndarray


def row_arithmetic(steps, row):
    r"""The arithmetic of one query row, for every head of a run.

    .. math:: w_s = \frac{\exp(q \cdot k_s / \sqrt{d_k})}{\sum_{s'} \exp(q \cdot k_{s'} / \sqrt{d_k})}

    The exponentials are shown as they are, without the shift by the row's
    maximum that :func:`mha.softmax` makes for safety; the weights agree.

    Parameters
    ----------
    steps : AttentionSteps
        One sentence (no batch axis, no mask), from :func:`mha.attention_steps`. A run with a
        mask (``causal=True``, ``mask=...``) is refused: its weights are not this arithmetic's.
    row : int
        The query.

    Returns
    -------
    tuple of RowArithmetic
        One per head.

    Examples
    --------
    >>> from mha.examples import cat_sat_mat
    >>> ex = cat_sat_mat()
    >>> sink = row_arithmetic(attention_steps(ex.X, *ex.weights, h=4), row=1)[3]
    >>> sink.scores
    array([ 0.,  0.,  0.,  0.,  0.,  0.,  0., 20.])
    """
    if not isinstance(steps, AttentionSteps):
        raise TypeError(f"steps must come from mha.attention_steps, got {type(steps).__name__}")
    if steps.scores.ndim != 3:
        raise ValueError(f"steps must hold one sentence: scores of shape (h, T, S), got {steps.scores.shape}")
    if steps.weights.shape != steps.scores.shape:
        raise ValueError(f"steps.weights {steps.weights.shape} and steps.scores {steps.scores.shape} differ: "
                         "pass the AttentionSteps of one run, unedited")
    row = check_index(row, "row", steps.scores.shape[1])
    out = []
    for i, scores in enumerate(steps.scores[:, row]):                 # (h, T, S) -> (S,) per head
        scaled = scores / np.sqrt(steps.d_k)
        with np.errstate(over="ignore", under="ignore"):
            exps = np.exp(scaled)
            total = float(exps.sum())
        tiny, huge = np.finfo(exps.dtype).tiny, np.finfo(exps.dtype).max
        if not tiny <= total <= huge:
            side = "overflows" if not total <= huge else "underflows to 0 for every key"
            raise ValueError(f"head {i}'s scaled scores at row {row} run from {scaled.min():.3g} to {scaled.max():.3g}; "
                             f"exp of them {side} in {exps.dtype}, so the arithmetic cannot be shown without "
                             "shifting by the row's maximum")
        weights = exps / total
        if not np.allclose(weights, steps.weights[i, row], rtol=1e-4, atol=1e-5):
            raise ValueError(f"steps comes from a run with a mask (causal=True or mask=...): head {i}'s weights at row "
                             f"{row} are not the softmax of its scores, and this arithmetic (which has no mask) would "
                             "contradict them. Pass the steps of a run without a mask")
        out.append(RowArithmetic(head=i, row=row, d_k=steps.d_k, scores=scores, scaled=scaled, exps=exps,
                                 total=total, weights=weights))
    return tuple(out)


def map_distance(A, B):
    r"""How far apart two attention maps are: the total variation of each row, averaged.

    .. math:: D(A, B) = \frac{1}{T} \sum_t \tfrac12 \sum_s |a_{ts} - b_{ts}|

    0 for the same map, 1 when every row puts its weight on other keys. Each row of ``A`` and ``B``
    must be a probability distribution.

    Examples
    --------
    >>> map_distance([[1.0, 0.0]], [[0.0, 1.0]])
    1.0
    """
    A = check_prob_rows(A, "A", ndim=2, legend="(T, S)")
    B = check_prob_rows(B, "B", ndim=2, legend="(T, S)")
    check_ndim(A, "A", 2, "(T, S)", exact=True)
    if A.shape != B.shape:
        raise ValueError(f"A and B must have the same shape, got {A.shape} and {B.shape}")
    if A.shape[0] == 0:
        raise ValueError(f"A and B have no rows (shape {A.shape}); a distance needs at least one query row")
    return float(0.5 * np.abs(A - B).sum(axis=-1).mean())  # (T, S) -> ()
