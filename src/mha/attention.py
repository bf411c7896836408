"""Scaled dot-product attention and multi-head attention in NumPy.

Shape legend, used in every comment of this package:

=====  ==========================================
``B``  batch (any number of leading axes, written ``...``)
``T``  query positions
``S``  key/value positions (``S = T`` in self-attention)
``d``  model width, ``d_model``
``h``  query heads
``g``  key/value heads, ``n_kv_heads`` (``g = h`` is plain multi-head attention)
``d_k`` width of one query/key head
``d_v`` width of one value head
=====  ==========================================
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._validate import (as_bool_mask, as_float_array, check_axis, check_causal, check_flag, check_ndim,
                        check_positive_int, check_qkv, loop_dtype, require_finite, score_dtype)

__all__ = [
    "AttentionSteps",
    "Projections",
    "attention_steps",
    "causal_mask",
    "grouped_attention",
    "merge_heads",
    "multi_head_attention",
    "multi_head_attention_loop",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]

#: Causal attention works through the queries in blocks of this many rows; block ``[t0, t1)``
#: reads only keys ``0 .. t1 - 1``, so almost half of the ``T x T`` products are never done.
#: Up to two blocks' worth of positions, one masked product is faster, and is used instead.
CAUSAL_BLOCK_ROWS = 256


# ================================================================ softmax
def softmax(x, axis=-1):
    r"""Softmax along ``axis``, safe for large inputs.

    .. math:: \operatorname{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_l e^{x_l - m}},
              \quad m = \max_l x_l

    Subtracting the row maximum ``m`` changes nothing mathematically but keeps
    every exponent at or below zero, so nothing overflows. Entries equal to
    ``-inf`` get weight exactly 0.

    Parameters
    ----------
    x : array_like
        Real numbers; ``-inf`` allowed, NaN and ``+inf`` not.
    axis : int
        The axis that sums to 1.

    Returns
    -------
    ndarray
        Same shape as ``x``.

    Raises
    ------
    ValueError
        If ``x`` has no entries along ``axis``, or a slice along ``axis`` is
        entirely ``-inf`` (nothing to weigh).

    Examples
    --------
    >>> softmax([0.0, 0.0, np.log(2.0)]).round(2)
    array([0.25, 0.25, 0.5 ])
    >>> softmax([1e4, 0.0, -np.inf])
    array([1., 0., 0.])
    """
    x = as_float_array(x, "x", allow_neg_inf=True)
    if x.ndim == 0:
        raise ValueError("x must have at least one axis, got a scalar")
    axis = check_axis(axis, x.ndim)
    if x.shape[axis] == 0:
        raise ValueError(f"x (shape {x.shape}) has no entries along axis {axis}; softmax needs at least one")
    m = x.max(axis=axis, keepdims=True)
    if np.isneginf(m).any():
        where = tuple(int(i) for i in np.argwhere(np.isneginf(m))[0])
        raise ValueError(
            f"x (shape {x.shape}) has a slice along axis {axis} that is entirely -inf "
            f"(first at index {where}); softmax has nothing to put weight on"
        )
    e = np.exp(x - m)  # every exponent <= 0: no overflow
    e /= e.sum(axis=axis, keepdims=True)
    return e


def _softmax_rows(A, shift=True):
    """Softmax of every row of ``A``, in place (unchecked: each row needs one finite entry).

    ``shift=False`` skips subtracting the row maximum, which changes nothing in
    exact arithmetic; only for callers that know every entry is small (see
    :func:`mha._validate.score_dtype`), as it saves two passes over ``A``.
    """
    if shift:
        A -= A.max(axis=-1, keepdims=True)  # every exponent <= 0: nothing overflows
    np.exp(A, out=A)
    A *= 1 / A.sum(axis=-1, keepdims=True)  # each row now sums to 1 (one division per row, not per entry)


def causal_mask(T):
    """Boolean ``(T, T)`` mask, True where query ``t`` may attend to key ``s <= t``.

    Examples
    --------
    >>> causal_mask(3).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 1]])
    """
    T = check_positive_int(T, "T")
    return np.tri(T, dtype=bool)


# ================================================================ the maths of one head (unchecked)
def _attend(Q, K, V, allowed=None, shift=True):
    """One head, unchecked: the weights ``A = softmax(Q Kᵀ / √d_k)`` and the output ``A V``.

    ``allowed`` (boolean) is False where a query may not see a key. Any leading
    axes (a batch, the heads) broadcast.
    """
    d_k = Q.shape[-1]
    A = (Q * (1 / math.sqrt(d_k))) @ np.swapaxes(K, -1, -2)  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
    if allowed is not None:
        np.copyto(A, -np.inf, where=~allowed)  # a key it may not see gets weight exactly 0
    _softmax_rows(A, shift)
    return A @ V, A  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v), and the weights


def _attend_causal(Q, K, V, allowed=None, shift=True, rows=CAUSAL_BLOCK_ROWS):
    """:func:`_attend` with query ``t`` seeing keys ``s <= t``, one block of query rows at a time.

    Block ``[t0, t1)`` multiplies its queries with keys ``0 .. t1 - 1`` only:
    the products, exponentials and sums above the diagonal block are never
    done, and the upper triangle of the returned ``(..., T, T)`` weights stays
    0. Each head's block is worked on in one small contiguous array, which
    stays in the cache, and then copied into place: on the book's machine, a
    pass over 256 columns of rows ``4 T`` bytes apart (``T = 1024``) took 2.3
    times as long as over the same numbers stored contiguously. ``rows`` is the
    block's height (tests use small blocks to reach the loop with short texts).
    """
    T, d_k = Q.shape[-2:]
    if T <= 2 * rows:  # a short text: one masked product is faster than the loop (benchmarks/bench_costs.py)
        seen = np.tri(T, dtype=bool)  # (T, T): key s <= query t
        return _attend(Q, K, V, seen if allowed is None else allowed & seen, shift)
    lead = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    dtype = np.result_type(Q, K, V)
    A = np.zeros((*lead, T, T), dtype)  # (..., T, T); the future keeps weight 0
    out = np.empty((*lead, T, V.shape[-1]), dtype)  # (..., T, d_v)
    K_t = np.empty((*K.shape[:-2], d_k, K.shape[-2]), dtype)  # each head's keys as whole rows: (..., d_k, T)
    np.multiply(np.swapaxes(K, -1, -2), 1 / math.sqrt(d_k), out=K_t)  # K_i^T / √d_k, in the one copy made
    Q, K_t, V = (np.broadcast_to(x, (*lead, *x.shape[-2:])) for x in (Q, K_t, V))  # a shared head: no copy
    if allowed is not None:
        allowed = np.broadcast_to(allowed, (*lead, T, T))
    scratch = np.empty(min(rows, T) * T, dtype)
    for t0 in range(0, T, rows):
        t1 = min(t0 + rows, T)
        block = scratch[:(t1 - t0) * t1].reshape(t1 - t0, t1)  # one head's block of weights, contiguous: (b, t1)
        for i in np.ndindex(*lead):  # every head (and batch row) in turn
            np.matmul(Q[i][t0:t1], K_t[i][:, :t1], out=block)  # (b, d_k) @ (d_k, t1) -> (b, t1)
            _causal_softmax(block, t0, None if allowed is None else allowed[i][t0:t1, :t1], shift)
            np.matmul(block, V[i][:t1], out=out[i][t0:t1])  # (b, t1) @ (t1, d_v) -> (b, d_v)
            A[i][t0:t1, :t1] = block
    return out, A


def _causal_softmax(block, t0, allowed_b, shift):
    """Softmax, in place, of a block of score rows for queries ``t0 ..``, keys after each query left out."""
    b, t1 = block.shape
    if shift or allowed_b is not None:
        future = np.arange(t0, t0 + b) > np.arange(t0, t0 + b)[:, None]  # (b, b): key after query
        np.copyto(block[:, t0:], -np.inf, where=future)
        if allowed_b is not None:
            np.copyto(block, -np.inf, where=~allowed_b)
        _softmax_rows(block, shift)
        return
    # Every score is small (see _validate.score_dtype): exponentiate, then zero the future keys.
    np.exp(block, out=block)
    block[:, t0:] *= _lower_triangle(b, block.dtype)  # (b, b): 1 where key s <= query t, else 0
    block *= (1 / (block @ np.ones(t1, block.dtype)))[:, None]  # the row sums as one matrix-vector product


@functools.lru_cache(maxsize=8)
def _lower_triangle(n, dtype):
    """The ``(n, n)`` lower triangle of ones, read-only."""
    tri = np.tri(n, dtype=dtype)
    tri.setflags(write=False)
    return tri


def _grouped(Q, K, V, allowed=None, causal=False, shift=True, rows=CAUSAL_BLOCK_ROWS):
    """Unchecked grouped attention: query head ``i`` reads key/value head ``i // (h // g)``.

    ``Q`` is ``(..., h, T, d_k)``, ``K`` and ``V`` are ``(..., g, S, ·)``. Each shared
    key/value head is read through a size-1 axis by its group of ``h // g`` query heads: no copy.
    """
    h, T = Q.shape[-3:-1]
    g, S = K.shape[-3:-1]
    Q = Q.reshape(*Q.shape[:-3], g, h // g, T, Q.shape[-1])  # (..., h, T, d_k) -> (..., g, h/g, T, d_k)
    K, V = K[..., None, :, :], V[..., None, :, :]  # (..., g, S, ·) -> (..., g, 1, S, ·)
    allowed = _group_mask(allowed, g, h // g)
    out, A = _attend_causal(Q, K, V, allowed, shift, rows) if causal else _attend(Q, K, V, allowed, shift)
    return (out.reshape(*out.shape[:-4], h, T, out.shape[-1]),  # (..., g, h/g, T, d_v) -> (..., h, T, d_v)
            A.reshape(*A.shape[:-4], h, T, S))  # (..., g, h/g, T, S) -> (..., h, T, S)


def _group_mask(allowed, g, r):
    """A mask over ``(..., h, T, S)`` reshaped to the groups ``(..., g, r, T, S)``, at its own size."""
    if allowed is None:
        return None
    allowed = allowed.reshape((1,) * max(0, 3 - allowed.ndim) + allowed.shape)
    if allowed.shape[-3] == 1:
        return allowed[..., None, :, :]  # the same mask for every head: (..., 1, 1, T, S)
    return allowed.reshape(*allowed.shape[:-3], g, r, *allowed.shape[-2:])


# ================================================================ checks around the maths
def _check_mask(mask, T, S, lead, causal):
    """``mask`` as a boolean array broadcastable to ``(*lead, T, S)``, every query left a key to see."""
    if mask is None:
        return None
    mask = as_bool_mask(mask)
    target = (*lead, T, S)
    try:
        if np.broadcast_shapes(mask.shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"mask has shape {mask.shape}, which does not broadcast to the scores' shape {target} (..., T, S)"
        ) from None
    if causal:  # a row must allow some key s <= t: a running "or" along the keys, read on the diagonal
        seen = np.logical_or.accumulate(np.broadcast_to(mask, (*mask.shape[:-2], T, S)), axis=-1)
        empty = ~np.diagonal(seen, axis1=-2, axis2=-1)  # (..., T)
    else:
        empty = ~mask.any(axis=-1)  # at the mask's own shape, never (h, T, S)
    if empty.any():
        where = tuple(int(i) for i in np.argwhere(empty)[0])
        extra = " together with causal=True" if causal else ""
        raise ValueError(
            f"mask{extra} leaves a query row with nothing to attend to (query index {where}, mask shape "
            f"{mask.shape}, scores shape {target}); every row needs at least one True"
        )
    return mask


def _attention(Q, K, V, mask, causal, grouped, dtype=None, rows=CAUSAL_BLOCK_ROWS):
    """Checked attention: the work type, the maths, then a check that nothing overflowed.

    The results come back as ``dtype`` (default: the type of ``Q``, ``K`` and ``V`` together).
    """
    dtype = np.result_type(Q, K, V) if dtype is None else dtype
    work, may_overflow, small = score_dtype(Q, K, V)
    Q, K, V = (x.astype(work, copy=False) for x in (Q, K, V))
    with np.errstate(over="ignore", invalid="ignore"):  # checked just below, with a clear error
        if grouped:
            out, A = _grouped(Q, K, V, mask, causal, shift=not small, rows=rows)
        elif causal:
            out, A = _attend_causal(Q, K, V, mask, shift=not small, rows=rows)
        else:
            out, A = _attend(Q, K, V, mask, shift=not small)
    if may_overflow:
        require_finite(("the scores Q_i K_iᵀ / √d_k" if grouped else "the scores Q Kᵀ / √d_k", A))
    return out.astype(dtype, copy=False), A.astype(dtype, copy=False)


def scaled_dot_product_attention(Q, K, V, mask=None, *, causal=False):
    r"""One attention head: :math:`\operatorname{softmax}(Q K^\top / \sqrt{d_k})\,V`.

    Parameters
    ----------
    Q : array_like, shape (..., T, d_k)
        Queries, one row per position that asks.
    K : array_like, shape (..., S, d_k)
        Keys, one row per position that can be found.
    V : array_like, shape (..., S, d_v)
        Values, what each found position hands back.
    mask : array_like of bool, optional
        Broadcastable to ``(..., T, S)``; True where query ``t`` may attend to key ``s``.
    causal : bool
        If true, query ``t`` sees only keys ``s <= t`` (needs ``S = T``); combines with ``mask``.

    Returns
    -------
    out : ndarray, shape (..., T, d_v)
        Each row is a weighted average of the rows of ``V``.
    weights : ndarray, shape (..., T, S)
        Attention weights; every row sums to 1.

    Raises
    ------
    ValueError
        For mismatched shapes, a query row that the mask leaves nothing to see,
        or scores too large for float64.

    Examples
    --------
    >>> Q = np.array([[1.0, 0.0]]); K = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> out, w = scaled_dot_product_attention(Q, K, np.eye(2))
    >>> w.round(3)
    array([[0.67, 0.33]])
    """
    Q, K, V, lead = check_qkv(Q, K, V)
    causal = check_causal(causal, Q.shape[-2], K.shape[-2])
    mask = _check_mask(mask, Q.shape[-2], K.shape[-2], lead, causal)
    return _attention(Q, K, V, mask, causal, grouped=False)


def grouped_attention(Q, K, V, *, mask=None, causal=False):
    r"""Attention of ``h`` query heads that share ``g`` key/value heads (GQA; MQA when ``g = 1``).

    Query head ``i`` reads key/value head ``i // (h // g)``:

    .. math:: \text{head}_i = \operatorname{softmax}\!\Big(\frac{Q_i K_{\lfloor i r / h \rfloor \cdot}^\top}
              {\sqrt{d_k}}\Big) V_{\lfloor i / r \rfloor}, \qquad r = h / g

    The shared heads are read, never copied. With ``g = h`` this is plain
    multi-head attention on already split heads.

    Parameters
    ----------
    Q : array_like, shape (..., h, T, d_k)
    K : array_like, shape (..., g, S, d_k)
    V : array_like, shape (..., g, S, d_v)
        ``g`` must divide ``h``.
    mask : array_like of bool, optional
        Broadcastable to ``(..., h, T, S)``; True where a query may attend.
    causal : bool
        If true, query ``t`` sees only keys ``s <= t`` (needs ``S = T``).

    Returns
    -------
    out : ndarray, shape (..., h, T, d_v)
    weights : ndarray, shape (..., h, T, S)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(4, 3, 2)), rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 3, 2))
    >>> out, w = grouped_attention(Q, K, V)            # 4 query heads, 2 shared key/value heads
    >>> out.shape, w.shape
    ((4, 3, 2), (4, 3, 3))
    >>> bool(np.allclose(out[1], scaled_dot_product_attention(Q[1], K[0], V[0])[0]))   # head 1 reads 0
    True
    """
    Q, K, V, lead = check_qkv(Q, K, V, grouped=True)
    h = Q.shape[-3]
    T, S = Q.shape[-2], K.shape[-2]
    causal = check_causal(causal, T, S)
    mask = _check_mask(mask, T, S, (*lead, h), causal)
    return _attention(Q, K, V, mask, causal, grouped=True)


# ================================================================ heads: split and merge
def split_heads(X, h):
    """Deal the columns of ``X`` out to ``h`` heads.

    Head ``i`` gets the ``i``-th block of ``d_k`` columns, from every row.
    This is a reshape *then* a transpose: reshaping straight to
    ``(h, T, d_k)`` would mix rows of different tokens into one head.

    The result is a read-only view of ``X`` (no copy): writing into one head
    would silently change the caller's ``X``.

    Parameters
    ----------
    X : array_like, shape (..., T, h*d_k)
    h : int
        Number of heads; must divide the last axis.

    Returns
    -------
    ndarray, shape (..., h, T, d_k)
        Read-only.

    Examples
    --------
    >>> X = np.arange(8).reshape(2, 4)   # 2 tokens, width 4
    >>> split_heads(X, 2)[1]             # head 1: columns 2 and 3 of both tokens
    array([[2., 3.],
           [6., 7.]])
    """
    X = as_float_array(X, "X")
    h = check_positive_int(h, "h")
    check_ndim(X, "X", 2, "(..., T, h*d_k)")
    if X.shape[-1] % h:
        raise ValueError(f"the width of X ({X.shape[-1]}, shape {X.shape}) is not divisible by h={h}")
    return _read_only(_split(X, h))


def _split(X, h):
    *lead, T, width = X.shape
    X = X.reshape(*lead, T, h, width // h)  # (..., T, h*d_k) -> (..., T, h, d_k)
    return np.swapaxes(X, -3, -2)  # (..., T, h, d_k) -> (..., h, T, d_k)


def merge_heads(Z):
    """Concatenate heads side by side: the exact inverse of :func:`split_heads`.

    Parameters
    ----------
    Z : array_like, shape (..., h, T, d_v)

    Returns
    -------
    ndarray, shape (..., T, h*d_v)
        Row ``t`` is ``[head_0[t], head_1[t], ..., head_{h-1}[t]]``. Usually a
        copy; where it can be a view of ``Z`` (one head, or one position) it is
        read-only, like :func:`split_heads`.

    Examples
    --------
    >>> X = np.arange(12.0).reshape(3, 4)
    >>> np.array_equal(merge_heads(split_heads(X, 2)), X)
    True
    """
    Z = as_float_array(Z, "Z")
    check_ndim(Z, "Z", 3, "(..., h, T, d_v)")
    merged = _merge(Z)
    return _read_only(merged) if np.shares_memory(merged, Z) else merged


def _merge(Z):
    *lead, h, T, d_v = Z.shape
    Z = np.swapaxes(Z, -3, -2)  # (..., h, T, d_v) -> (..., T, h, d_v)
    return Z.reshape(*lead, T, h * d_v)  # (..., T, h, d_v) -> (..., T, h*d_v)


def _read_only(view):
    view.flags.writeable = False
    return view


# ================================================================ the layer
class Projections(NamedTuple):
    """The weights of one multi-head attention layer, and its optional biases."""

    W_Q: np.ndarray  # (d, h*d_k)
    W_K: np.ndarray  # (d, g*d_k)
    W_V: np.ndarray  # (d, g*d_v)
    W_O: np.ndarray  # (h*d_v, d_out)
    b_Q: np.ndarray | None = None  # (h*d_k,)
    b_K: np.ndarray | None = None  # (g*d_k,)
    b_V: np.ndarray | None = None  # (g*d_v,)
    b_O: np.ndarray | None = None  # (d_out,)


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate of one multi-head attention layer.

    Attributes
    ----------
    Q, K, V : ndarray
        Full-width projections, ``(..., T, h*d_k)``, ``(..., T, g*d_k)``, ``(..., T, g*d_v)``.
    Q_heads : ndarray, shape (..., h, T, d_k)
    K_heads : ndarray, shape (..., g, T, d_k)
    V_heads : ndarray, shape (..., g, T, d_v)
    scores : ndarray, shape (..., h, T, T)
        :math:`Q_i K_i^\\top` for every query head, *before* dividing by :math:`\\sqrt{d_k}`
        and before any mask.
    weights : ndarray, shape (..., h, T, T)
        Attention weights of every head; rows sum to 1.
    head_outputs : ndarray, shape (..., h, T, d_v)
    concat : ndarray, shape (..., T, h*d_v)
        The head outputs side by side.
    output : ndarray, shape (..., T, d_out)
        ``concat @ W_O`` (plus ``b_O`` if given).
    h, n_kv_heads, d_k, d_v : int
    """

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    Q_heads: np.ndarray
    K_heads: np.ndarray
    V_heads: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    head_outputs: np.ndarray
    concat: np.ndarray
    output: np.ndarray
    h: int
    n_kv_heads: int
    d_k: int
    d_v: int


_LEGENDS = {"W_Q": "(d_model, h*d_k)", "W_K": "(d_model, n_kv*d_k)", "W_V": "(d_model, n_kv*d_v)",
            "W_O": "(h*d_v, d_out)"}


def _check_layer(X, P, h, n_kv_heads):
    """Validate a layer's inputs; return ``X``, the checked :class:`Projections` and ``(h, g, d_k, d_v)``."""
    X = as_float_array(X, "X")
    check_ndim(X, "X", 2, "(..., T, d_model)")
    if X.shape[-2] == 0:
        raise ValueError(f"X has no positions (T = 0, shape {X.shape}); attention needs at least one token (T >= 1)")
    W = {name: as_float_array(getattr(P, name), name) for name in _LEGENDS}
    for name, legend in _LEGENDS.items():
        check_ndim(W[name], name, 2, legend, exact=True)
    h = check_positive_int(h, "h")
    g = h if n_kv_heads is None else check_positive_int(n_kv_heads, "n_kv_heads")
    if h % g:
        raise ValueError(f"n_kv_heads={g} must divide h={h} (each key/value head serves h/n_kv_heads query heads)")
    d_model = X.shape[-1]
    for name in ("W_Q", "W_K", "W_V"):
        if W[name].shape[0] != d_model:
            raise ValueError(f"{name} has {W[name].shape[0]} rows (shape {W[name].shape}) but X has width "
                             f"d_model={d_model} (shape {X.shape})")
    d_k, d_v = _head_widths(W, h, g)
    widths = {"b_Q": h * d_k, "b_K": g * d_k, "b_V": g * d_v, "b_O": W["W_O"].shape[1]}
    b = {name: _check_bias(getattr(P, name), name, width) for name, width in widths.items()}
    return X, Projections(**W, **b), h, g, d_k, d_v


def _head_widths(W, h, g):
    """``(d_k, d_v)`` from the shapes of the weights, or a clear error."""
    width_q, width_k, width_v = W["W_Q"].shape[1], W["W_K"].shape[1], W["W_V"].shape[1]
    if width_q % h:
        raise ValueError(f"the width of W_Q ({width_q}, shape {W['W_Q'].shape}) is not divisible by h={h}")
    d_k = width_q // h
    if d_k == 0:
        raise ValueError(f"W_Q has no columns (shape {W['W_Q'].shape}): each head needs d_k >= 1")
    if width_k != g * d_k:
        raise ValueError(
            f"W_K has shape {W['W_K'].shape} but needs n_kv_heads*d_k = {g}*{d_k} = {g * d_k} columns "
            f"to match W_Q {W['W_Q'].shape} with h={h}"
        )
    if width_v % g or width_v == 0:
        raise ValueError(f"the width of W_V ({width_v}, shape {W['W_V'].shape}) must be a positive multiple "
                         f"of n_kv_heads={g}")
    d_v = width_v // g
    if W["W_O"].shape[0] != h * d_v:
        raise ValueError(
            f"W_O has {W['W_O'].shape[0]} rows (shape {W['W_O'].shape}) but the concatenated heads have "
            f"h*d_v = {h}*{d_v} = {h * d_v} columns"
        )
    return d_k, d_v


def _check_bias(b, name, width):
    if b is None:
        return None
    b = as_float_array(b, name)
    if b.shape != (width,):
        raise ValueError(f"{name} must have shape ({width},), got {b.shape}")
    return b


def _project(X, W, b=None, out=None):
    """``X @ W + b`` as one 2-D product: every token of every batch row at once.

    NumPy runs a stacked ``(B, T, d) @ (d, k)`` as ``B`` small products; folding
    the leading axes into the rows first is one large, much faster product.
    ``out``, if given, is the ``(rows, k)`` array to write it into.
    """
    *lead, d = X.shape
    Y = np.matmul(X.reshape(-1, d), W, out=out)  # (..., d) -> (..., k), the leading axes as rows
    if b is not None:
        Y += b
    return Y.reshape(*lead, W.shape[1])


def _project_qkv(X, P):
    """``X @ W + b`` for the queries, keys and values, written side by side into one array.

    The three results are column blocks (views) of one ``(..., T, h d_k + g d_k + g d_v)``
    array. One large array instead of three costs fewer page faults: NumPy asks
    the kernel for huge pages for arrays of 4 MiB and more.
    """
    Ws, bs = (P.W_Q, P.W_K, P.W_V), (P.b_Q, P.b_K, P.b_V)
    dtypes = {np.result_type(X, W) for W in Ws}
    if len(dtypes) > 1:  # weights of mixed types: each product keeps its own type
        return tuple(_project(X, W, b) for W, b in zip(Ws, bs))
    widths = [W.shape[1] for W in Ws]
    buffer = np.empty((math.prod(X.shape[:-1]), sum(widths)), dtypes.pop())  # the (..., T) rows, all three blocks
    starts = np.cumsum([0, *widths[:-1]])
    return tuple(_project(X, W, b, out=buffer[:, s:s + w]) for W, b, s, w in zip(Ws, bs, starts, widths))


def _layer(X, P, h, g, mask=None, causal=False):
    """Multi-head attention, unchecked: project, split, attend, merge, mix.

    Returns ``Y``, every head's weights ``A`` and ``(Q, K, V, concat)``.
    :func:`_attention` picks the scores' float type and checks them for
    overflow; :func:`_steps` checks the rest.
    """
    Q, K, V = _project_qkv(X, P)  # (B, T, d) -> (B, T, h*d_k), (B, T, g*d_·)
    Q_i = _split(Q, h)  # heads on their own axis: -> (B, h, T, d_k)
    K_i, V_i = _split(K, g), _split(V, g)  # -> (B, g, T, d_k), (B, g, T, d_v)
    Z, A = _attention(Q_i, K_i, V_i, mask, causal, grouped=True,
                      dtype=X.dtype)  # Z (B, h, T, d_v), A (B, h, T, T)
    concat = _merge(Z)  # (B, h, T, d_v) -> (B, T, h*d_v)
    Y = _project(concat, P.W_O, P.b_O)  # (B, T, h*d_v) -> (B, T, d_out)
    return Y, A, (Q, K, V, concat)


def _steps(X, P, h, *, mask=None, causal=False, n_kv_heads=None, keep_scores=True):
    """The one code path of :func:`attention_steps` and :func:`multi_head_attention`: checks, then :func:`_layer`."""
    X, P, h, g, d_k, d_v = _check_layer(X, P, h, n_kv_heads)
    *lead, T, _ = X.shape
    causal = check_flag(causal, "causal")
    mask = _check_mask(mask, T, T, (*lead, h), causal)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below, with a clear error
        try:
            output, weights, (Q, K, V, concat) = _layer(X, P, h, g, mask, causal)
        except ValueError:  # the scores overflowed: say so of the projection that overflowed first, if one did
            require_finite(*zip(("Q = X @ W_Q", "K = X @ W_K", "V = X @ W_V"), _project_qkv(X, P)))
            raise
    if not np.isfinite(output).all():
        require_finite(("Q = X @ W_Q", Q), ("K = X @ W_K", K), ("V = X @ W_V", V), ("the output concat @ W_O", output))
    Q_heads, K_heads, V_heads = _split(Q, h), _split(K, g), _split(V, g)
    scores = _raw_scores(Q_heads, K_heads, V_heads, X.dtype) if keep_scores else None
    return AttentionSteps(Q=Q, K=K, V=V, Q_heads=Q_heads, K_heads=K_heads, V_heads=V_heads,
                          scores=scores, weights=weights, head_outputs=_split(concat, h),
                          concat=concat, output=output, h=h, n_kv_heads=g, d_k=d_k, d_v=d_v)


def _raw_scores(Q_heads, K_heads, V_heads, dtype):
    """``Q_i K_iᵀ`` of every query head against its key head, unscaled and unmasked: (..., h, T, T).

    Computed in the type the layer's attention worked in, then returned as ``dtype``.
    """
    work = score_dtype(Q_heads, K_heads, V_heads).dtype
    h, T = Q_heads.shape[-3:-1]
    g = K_heads.shape[-3]
    Q = Q_heads.astype(work, copy=False).reshape(*Q_heads.shape[:-3], g, h // g, T, Q_heads.shape[-1])  # (..., g, h/g, T, d_k)
    K_t = np.swapaxes(K_heads.astype(work, copy=False), -1, -2)[..., None, :, :]  # (..., g, 1, d_k, T)
    with np.errstate(over="ignore", invalid="ignore"):
        scores = (Q @ K_t).astype(dtype, copy=False)  # (..., g, h/g, T, T)
    require_finite(("the raw scores Q_i K_iᵀ (before dividing by √d_k)", scores))
    return scores.reshape(*scores.shape[:-4], h, T, T)


def attention_steps(X,  # tokens, one row each
                    W_Q, W_K, W_V,  # projections into queries, keys, values
                    W_O,  # projection of the joined heads
                    h, *, mask=None, causal=False, n_kv_heads=None, b_Q=None, b_K=None, b_V=None, b_O=None):
    r"""Run one multi-head attention layer and keep every intermediate.

    .. math::
        \operatorname{MultiHead}(X) = \operatorname{Concat}(\text{head}_1, \dots, \text{head}_h)\,W^O,
        \qquad \text{head}_i = \operatorname{softmax}\!\Big(\frac{Q_i K_i^\top}{\sqrt{d_k}}\Big) V_i

    where :math:`Q = X W^Q`, :math:`K = X W^K`, :math:`V = X W^V` are computed
    once at full width and :math:`Q_i` is the ``i``-th block of ``d_k`` columns of ``Q``.

    Parameters
    ----------
    X : array_like, shape (..., T, d_model)
    W_Q : array_like, shape (d_model, h*d_k)
    W_K : array_like, shape (d_model, n_kv_heads*d_k)
    W_V : array_like, shape (d_model, n_kv_heads*d_v)
    W_O : array_like, shape (h*d_v, d_out)
    h : int
        Number of query heads.
    mask : array_like of bool, optional
        Broadcastable to ``(..., h, T, T)``; True where a query may attend.
    causal : bool
        If true, position ``t`` attends only to positions ``<= t``. Combines
        with ``mask``: both must allow.
    n_kv_heads : int, optional
        Key/value heads (default ``h``). Query head ``i`` reads key/value head
        ``i // (h // n_kv_heads)``; ``n_kv_heads=1`` is multi-query attention.
    b_Q, b_K, b_V, b_O : array_like, optional
        Biases added after each projection.

    Returns
    -------
    AttentionSteps

    Raises
    ------
    ValueError
        For mismatched shapes, a query row left nothing to see, or a step that
        overflows float64 (finite inputs that are far too large).

    Examples
    --------
    >>> from mha.examples import i_love_llms
    >>> ex = i_love_llms()
    >>> s = attention_steps(ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, h=2)
    >>> s.scores[0].astype(int)          # head 1, before dividing by sqrt(2)
    array([[4, 2, 2],
           [2, 4, 1],
           [2, 0, 1]])
    """
    P = Projections(W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O)
    return _steps(X, P, h, mask=mask, causal=causal, n_kv_heads=n_kv_heads, keep_scores=True)


def multi_head_attention(X,  # tokens, one row each
                         W_Q, W_K, W_V,  # projections into queries, keys, values
                         W_O,  # projection of the joined heads
                         h, *, mask=None, causal=False, n_kv_heads=None, b_Q=None, b_K=None, b_V=None, b_O=None):
    """Multi-head attention: :func:`attention_steps` returning only ``(Y, A)``.

    The same code path, except that the raw scores are not kept, which saves
    one ``h·T·T`` array. Causal attention skips the keys after each block of queries.

    Parameters are those of :func:`attention_steps`.

    Returns
    -------
    Y : ndarray, shape (..., T, d_out)
    A : ndarray, shape (..., h, T, T)
        Each head's attention weights.

    Examples
    --------
    >>> from mha.examples import i_love_llms
    >>> ex = i_love_llms()
    >>> Y, A = multi_head_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, h=2)
    >>> Y.shape, A.shape
    ((3, 4), (2, 3, 3))
    """
    P = Projections(W_Q, W_K, W_V, W_O, b_Q, b_K, b_V, b_O)
    s = _steps(X, P, h, mask=mask, causal=causal, n_kv_heads=n_kv_heads, keep_scores=False)
    return s.output, s.weights


# ================================================================ the layer, one head at a time
def multi_head_attention_loop(X, W_Q, W_K, W_V,  # as in mha.multi_head_attention
                              W_O, h):
    """Multi-head attention with a Python loop over the heads.

    Head ``i`` projects ``X`` with its own ``d_k`` columns of ``W_Q``, ``W_K``
    and ``W_V``: ``3h`` narrow products where :func:`multi_head_attention`
    does 3 wide ones. Same result, for timing the difference (appendix 13).
    It computes in the inputs' own float type when a bound on every
    intermediate number shows that they fit (else in a wider type), and
    refuses inputs too large even for float64.

    Returns
    -------
    ndarray, shape (..., T, d_out)

    Examples
    --------
    >>> from mha.examples import i_love_llms
    >>> ex = i_love_llms()
    >>> Y, _ = multi_head_attention(ex.X, *ex.weights, h=2)
    >>> np.allclose(multi_head_attention_loop(ex.X, *ex.weights, h=2), Y)
    True
    """
    weights = Projections(W_Q, W_K, W_V, W_O)
    X, P, h, _, d_k, d_v = _check_layer(X, weights, h, None)
    work = loop_dtype(X, P[:4], h)
    P = Projections(*(W.astype(work, copy=False) for W in P[:4]))
    return _loop_heads(X.astype(work, copy=False), P, h)


def _loop_heads(X, P, h):
    """The loop of :func:`multi_head_attention_loop`, unchecked; ``P`` holds the four weight matrices."""
    d_k, d_v = P.W_Q.shape[1] // h, P.W_V.shape[1] // h
    heads = []
    for i in range(h):
        q = X @ P.W_Q[:, i * d_k:(i + 1) * d_k]  # (B, T, d) -> (B, T, d_k)
        k = X @ P.W_K[:, i * d_k:(i + 1) * d_k]  # (B, T, d) -> (B, T, d_k)
        v = X @ P.W_V[:, i * d_v:(i + 1) * d_v]  # (B, T, d) -> (B, T, d_v)
        scores = q @ np.swapaxes(k, -1, -2) / math.sqrt(d_k)  # (B, T, d_k) @ (B, d_k, T) -> (B, T, T)
        A = np.exp(scores - scores.max(axis=-1, keepdims=True))  # softmax, row maximum subtracted first
        A /= A.sum(axis=-1, keepdims=True)
        heads.append(A @ v)  # (B, T, T) @ (B, T, d_v) -> (B, T, d_v)
    concat = np.concatenate(heads, axis=-1)  # h x (B, T, d_v) -> (B, T, h*d_v)
    return concat @ P.W_O  # (B, T, h*d_v) -> (B, T, d_out)
