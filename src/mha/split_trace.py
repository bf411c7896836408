"""Where every entry of ``Q``, ``K`` and ``V`` goes when the width is split into heads.

:func:`head_split` traces a ``(T, d)`` matrix through the right split
(:func:`mha.split_heads`: reshape to ``(T, h, d_k)``, then swap the first two
axes) or through the classic bug, a reshape straight to ``(h, T, d_k)``.
:func:`h_sweep_frames` does it for every head count ``h`` that divides the
width, next to the heads' attention weights on a layer's sentence: the data
behind the h sweep widget.
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from ._validate import check_flag, check_positive_int, check_size
from .attention import multi_head_attention, split_heads

__all__ = ["HSweepFrame", "HeadSplit", "divisors", "h_sweep_frames", "head_split"]


def divisors(d):
    """Every head count ``h`` that divides the width ``d``.

    Examples
    --------
    >>> divisors(12)
    (1, 2, 3, 4, 6, 12)
    """
    d = check_size(d, "d", high=2 ** 40)  # trial division up to sqrt(d): at most 2^20 steps
    small = [h for h in range(1, math.isqrt(d) + 1) if d % h == 0]
    return tuple(sorted(set(small + [d // h for h in small])))


@dataclass(frozen=True)
class HeadSplit:
    """Where every entry of a ``(T, d)`` matrix lands when it is split into ``h`` heads.

    Attributes
    ----------
    h, d_k : int
    token : ndarray of int, shape (h, T, d_k)
        ``token[i, t, m]`` is the row (token) of the original matrix that entry
        ``m`` of position ``t`` in head ``i`` comes from.
    column : ndarray of int, shape (h, T, d_k)
        The original column of the same entry.
    owner : ndarray of int, shape (T, d)
        ``owner[t, c]`` is the head that receives entry ``(t, c)``.
    """

    h: int
    d_k: int
    token: np.ndarray
    column: np.ndarray
    owner: np.ndarray

    @property
    def mixes_tokens(self):
        """True if some head holds, at position ``t``, data of another token."""
        T = self.token.shape[1]
        return bool((self.token != np.arange(T)[:, None]).any())


def head_split(T, d, h, *, wrong=False):
    """Trace every entry of a ``(T, d)`` matrix through a split into ``h`` heads.

    The right split is :func:`mha.split_heads` (reshape to ``(T, h, d_k)``,
    then swap the first two axes): head ``i`` gets the ``i``-th block of
    ``d_k`` columns, ``i*d_k <= c < (i+1)*d_k``, of every token. The wrong
    split reshapes straight to ``(h, T, d_k)``, which cuts the matrix in
    reading order and hands a head pieces of other tokens.

    Parameters
    ----------
    T, d, h : int
        Tokens, width, heads; ``h`` must divide ``d``.
    wrong : bool
        Trace the direct reshape instead of the right split.

    Returns
    -------
    HeadSplit

    Examples
    --------
    >>> head_split(T=2, d=4, h=2).owner          # columns 0-1 to head 0, 2-3 to head 1
    array([[0, 0, 1, 1],
           [0, 0, 1, 1]])
    >>> head_split(T=2, d=4, h=2, wrong=True).owner   # a whole token to each head
    array([[0, 0, 0, 0],
           [1, 1, 1, 1]])
    """
    T, d, h = (check_size(v, n, high=4096) for v, n in ((T, "T"), (d, "d"), (h, "h")))
    wrong = check_flag(wrong, "wrong")
    if d % h:
        raise ValueError(f"h={h} does not divide the width d={d}")
    d_k = d // h
    where = np.arange(T * d).reshape(T, d)  # entry (t, c) holds its own address t*d + c
    if wrong:
        parts = where.reshape(h, T, d_k)  # (T, d) -> (h, T, d_k), straight through
    else:
        parts = split_heads(where, h).astype(int)  # (T, d) -> (h, T, d_k)
    owner = np.empty(T * d, dtype=int)
    owner[parts.ravel()] = np.repeat(np.arange(h), T * d_k)
    return HeadSplit(h=h, d_k=d_k, token=parts // d, column=parts % d, owner=owner.reshape(T, d))


@dataclass(frozen=True)
class HSweepFrame:
    """One setting of the h sweep: the two ways to split, and the heads' attention.

    Attributes
    ----------
    h, d_k : int
    right, wrong : HeadSplit
        The split by :func:`mha.split_heads` and the direct reshape.
    weights : ndarray, shape (h, T, T)
        Each head's attention weights on the layer's sentence (right split).
    """

    h: int
    d_k: int
    right: HeadSplit
    wrong: HeadSplit
    weights: np.ndarray


def h_sweep_frames(layer):
    """One :class:`HSweepFrame` for every ``h`` that divides the layer's width.

    Parameters
    ----------
    layer : WorkedExample
        For instance :func:`mha.examples.i_love_llms` or :func:`mha.examples.random_layer`.

    Examples
    --------
    >>> from mha.examples import i_love_llms
    >>> [(f.h, f.d_k, f.weights.shape) for f in h_sweep_frames(i_love_llms())]
    [(1, 4, (1, 3, 3)), (2, 2, (2, 3, 3)), (4, 1, (4, 3, 3))]
    """
    X = getattr(layer, "X", None)
    if X is None or np.ndim(X) != 2:
        raise TypeError(f"layer must be a WorkedExample with a (T, d) matrix X, got {type(layer).__name__}")
    T, d = np.shape(X)
    frames = []
    for h in divisors(d):
        _, A = multi_head_attention(layer.X, layer.W_Q, layer.W_K, layer.W_V, layer.W_O, h)
        frames.append(HSweepFrame(h=h, d_k=d // h, right=head_split(T, d, h),
                                  wrong=head_split(T, d, h, wrong=True), weights=A))
    return tuple(frames)
