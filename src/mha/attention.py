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

import math
from dataclasses import dataclass

import numpy as np

from ._validate import as_bool_mask, as_float_array, check_ndim, check_positive_int, check_qkv

__all__ = [
    "AttentionSteps",
    "attention_steps",
    "causal_mask",
    "merge_heads",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]


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
        If a slice along ``axis`` is entirely ``-inf`` (nothing to weigh).

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
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis={axis} is out of range for x with shape {x.shape}")
    m = x.max(axis=axis, keepdims=True)
    if np.isneginf(m).any():
        where = tuple(int(i) for i in np.argwhere(np.isneginf(m))[0])
        raise ValueError(
            f"x (shape {x.shape}) has a slice along axis {axis} that is entirely -inf "
            f"(first at index {where}); softmax has nothing to put weight on"
        )
    return _softmax(x, m, axis)


def _softmax(x, m, axis):
    """Unchecked softmax of ``x`` given its maximum ``m`` along ``axis``."""
    e = np.exp(x - m)  # every exponent <= 0: no overflow
    e /= e.sum(axis=axis, keepdims=True)
    return e


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
    return np.tril(np.ones((T, T), dtype=bool))


def _attend(Q, K, V, mask, keep_scores=True):
    """Unchecked core: returns raw scores ``Q Kᵀ`` (or None), weights and output.

    Leading axes broadcast, so key/value heads shared by a group of query heads
    are read through a size-1 axis instead of being copied. Without
    ``keep_scores`` the scale goes on ``Q`` (``T·d_k`` numbers, not ``T·S``) and
    the softmax runs in place in the score buffer.
    """
    d_k = Q.shape[-1]
    K_t = np.swapaxes(K, -1, -2)  # (..., S, d_k) -> (..., d_k, S)
    if keep_scores:
        scores = Q @ K_t  # (..., T, d_k) @ (..., d_k, S) -> (..., T, S)
        S = scores / math.sqrt(d_k)  # a Python float keeps float32 inputs in float32
    else:
        scores = None
        S = (Q * (1 / math.sqrt(d_k))) @ K_t  # (..., T, S), already scaled
    if mask is not None:
        allowed = np.broadcast_to(mask, S.shape)
        empty = ~allowed.any(axis=-1)
        if empty.any():
            where = tuple(int(i) for i in np.argwhere(empty)[0])
            raise ValueError(
                f"mask leaves a query row with nothing to attend to (query index {where}, "
                f"scores shape {S.shape}); every row needs at least one True"
            )
        np.copyto(S, -np.inf, where=~allowed)
    S -= S.max(axis=-1, keepdims=True)  # softmax in place: every exponent <= 0
    np.exp(S, out=S)
    S /= S.sum(axis=-1, keepdims=True)  # (..., T, S), rows sum to 1
    out = S @ V  # (..., T, S) @ (..., S, d_v) -> (..., T, d_v)
    return scores, S, out


def _check_mask(mask, T, S, lead):
    if mask is None:
        return None
    mask = as_bool_mask(mask)
    target = (*lead, T, S)
    try:
        if np.broadcast_shapes(mask.shape, target) != target:
            raise ValueError
    except ValueError:
        raise ValueError(
            f"mask has shape {mask.shape}, which does not broadcast to the scores' shape {target} "
            "(..., T, S)"
        ) from None
    return mask


def scaled_dot_product_attention(Q, K, V, mask=None):
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

    Returns
    -------
    out : ndarray, shape (..., T, d_v)
        Each row is a weighted average of the rows of ``V``.
    weights : ndarray, shape (..., T, S)
        Attention weights; every row sums to 1.

    Examples
    --------
    >>> Q = np.array([[1.0, 0.0]]); K = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> out, w = scaled_dot_product_attention(Q, K, np.eye(2))
    >>> w.round(3)
    array([[0.67, 0.33]])
    """
    Q, K, V, lead = check_qkv(Q, K, V)
    mask = _check_mask(mask, Q.shape[-2], K.shape[-2], lead)
    _, weights, out = _attend(Q, K, V, mask)
    return out, weights


def split_heads(X, h):
    """Deal the columns of ``X`` out to ``h`` heads.

    Head ``i`` gets the ``i``-th block of ``d_k`` columns, from every row.
    This is a reshape *then* a transpose: reshaping straight to
    ``(h, T, d_k)`` would mix rows of different tokens into one head.

    Parameters
    ----------
    X : array_like, shape (..., T, h*d_k)
    h : int
        Number of heads; must divide the last axis.

    Returns
    -------
    ndarray, shape (..., h, T, d_k)

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
    return _split(X, h)


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
        Row ``t`` is ``[head_0[t], head_1[t], ..., head_{h-1}[t]]``.

    Examples
    --------
    >>> X = np.arange(12.0).reshape(3, 4)
    >>> np.array_equal(merge_heads(split_heads(X, 2)), X)
    True
    """
    Z = as_float_array(Z, "Z")
    check_ndim(Z, "Z", 3, "(..., h, T, d_v)")
    return _merge(Z)


def _merge(Z):
    *lead, h, T, d_v = Z.shape
    Z = np.swapaxes(Z, -3, -2)  # (..., h, T, d_v) -> (..., T, h, d_v)
    return Z.reshape(*lead, T, h * d_v)  # (..., T, h, d_v) -> (..., T, h*d_v)


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
        :math:`Q_i K_i^\\top` for every query head, *before* dividing by :math:`\\sqrt{d_k}`.
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


def _check_bias(b, name, width):
    if b is None:
        return None
    b = as_float_array(b, name)
    if b.shape != (width,):
        raise ValueError(f"{name} must have shape ({width},), got {b.shape}")
    return b


def _check_layer(X, h, n_kv_heads, **weights):
    """Validate a layer's inputs; return X, the weights by name and the sizes (h, g, d_k, d_v)."""
    X = as_float_array(X, "X")
    W = {name: as_float_array(value, name) for name, value in weights.items()}
    h = check_positive_int(h, "h")
    g = h if n_kv_heads is None else check_positive_int(n_kv_heads, "n_kv_heads")
    check_ndim(X, "X", 2, "(..., T, d_model)")
    legends = {"W_Q": "(d_model, h*d_k)", "W_K": "(d_model, n_kv*d_k)", "W_V": "(d_model, n_kv*d_v)",
               "W_O": "(h*d_v, d_out)"}
    for name, legend in legends.items():
        check_ndim(W[name], name, 2, legend, exact=True)
    if h % g:
        raise ValueError(f"n_kv_heads={g} must divide h={h} (each key/value head serves h/n_kv_heads query heads)")
    d_model = X.shape[-1]
    for name in ("W_Q", "W_K", "W_V"):
        if W[name].shape[0] != d_model:
            raise ValueError(f"{name} has {W[name].shape[0]} rows (shape {W[name].shape}) but X has width "
                             f"d_model={d_model} (shape {X.shape})")
    width_q, width_k, width_v = W["W_Q"].shape[1], W["W_K"].shape[1], W["W_V"].shape[1]
    if width_q % h:
        raise ValueError(f"the width of W_Q ({width_q}, shape {W['W_Q'].shape}) is not divisible by h={h}")
    d_k = width_q // h
    if width_k != g * d_k:
        raise ValueError(
            f"W_K has shape {W['W_K'].shape} but needs n_kv_heads*d_k = {g}*{d_k} = {g * d_k} columns "
            f"to match W_Q {W['W_Q'].shape} with h={h}"
        )
    if width_v % g:
        raise ValueError(f"the width of W_V ({width_v}, shape {W['W_V'].shape}) is not divisible by n_kv_heads={g}")
    d_v = width_v // g
    if W["W_O"].shape[0] != h * d_v:
        raise ValueError(
            f"W_O has {W['W_O'].shape[0]} rows (shape {W['W_O'].shape}) but the concatenated heads have "
            f"h*d_v = {h}*{d_v} = {h * d_v} columns"
        )
    return X, W, h, g, d_k, d_v


def _project(X, W):
    """``X @ W`` as one 2-D product: every token of every batch row at once.

    NumPy runs a stacked ``(B, T, d) @ (d, k)`` as ``B`` small products; folding
    the leading axes into the rows first is one large, much faster product.
    """
    *lead, d = X.shape
    return (X.reshape(-1, d) @ W).reshape(*lead, W.shape[1])  # (..., d) -> (..., k)


def _steps(X, weights, h, mask, causal, n_kv_heads, biases, keep_scores):
    """The one code path of :func:`attention_steps` and :func:`multi_head_attention`."""
    X, W, h, g, d_k, d_v = _check_layer(X, h, n_kv_heads, **weights)
    W_Q, W_K, W_V, W_O = W["W_Q"], W["W_K"], W["W_V"], W["W_O"]
    widths = {"b_Q": h * d_k, "b_K": g * d_k, "b_V": g * d_v, "b_O": W_O.shape[1]}
    b = {name: _check_bias(value, name, widths[name]) for name, value in biases.items()}
    *lead, T, _ = X.shape
    mask = _check_mask(mask, T, T, (*lead, h))
    if causal:
        mask = causal_mask(T) if mask is None else (mask & causal_mask(T))

    Q = _project(X, W_Q)  # (..., T, d) -> (..., T, h*d_k)
    K = _project(X, W_K)  # (..., T, d) -> (..., T, g*d_k)
    V = _project(X, W_V)  # (..., T, d) -> (..., T, g*d_v)
    if b["b_Q"] is not None:
        Q = Q + b["b_Q"]
    if b["b_K"] is not None:
        K = K + b["b_K"]
    if b["b_V"] is not None:
        V = V + b["b_V"]
    Q_heads = _split(Q, h)  # (..., T, h*d_k) -> (..., h, T, d_k)
    K_heads = _split(K, g)  # (..., T, g*d_k) -> (..., g, T, d_k)
    V_heads = _split(V, g)  # (..., T, g*d_v) -> (..., g, T, d_v)
    # Query head i reads key/value head i // r: group the query heads, r per shared head.
    r = h // g
    Q_groups = Q_heads.reshape(*lead, g, r, T, d_k)  # (..., h, T, d_k) -> (..., g, r, T, d_k)
    mask_groups = None
    if mask is not None:
        mask_groups = np.broadcast_to(mask, (*lead, h, T, T)).reshape(*lead, g, r, T, T)
    scores, weights, head_outputs = _attend(Q_groups, K_heads[..., None, :, :], V_heads[..., None, :, :],
                                            mask_groups, keep_scores)  # (..., g, r, T, ·)
    if scores is not None:
        scores = scores.reshape(*lead, h, T, T)  # (..., g, r, T, T) -> (..., h, T, T)
    weights = weights.reshape(*lead, h, T, T)
    head_outputs = head_outputs.reshape(*lead, h, T, d_v)
    concat = _merge(head_outputs)  # (..., h, T, d_v) -> (..., T, h*d_v)
    output = _project(concat, W_O)  # (..., T, h*d_v) -> (..., T, d_out)
    if b["b_O"] is not None:
        output = output + b["b_O"]
    return AttentionSteps(Q=Q, K=K, V=V, Q_heads=Q_heads, K_heads=K_heads, V_heads=V_heads,
                          scores=scores, weights=weights, head_outputs=head_outputs,
                          concat=concat, output=output, h=h, n_kv_heads=g, d_k=d_k, d_v=d_v)


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
    return _steps(X, dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O), h, mask, causal, n_kv_heads,
                  dict(b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=b_O), keep_scores=True)


def multi_head_attention(X,  # tokens, one row each
                         W_Q, W_K, W_V,  # projections into queries, keys, values
                         W_O,  # projection of the joined heads
                         h, *, mask=None, causal=False, n_kv_heads=None, b_Q=None, b_K=None, b_V=None, b_O=None):
    """Multi-head attention: :func:`attention_steps` returning only ``(Y, A)``.

    The same code path, except that the raw scores are not kept, which saves
    one ``h·T·T`` array.

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
    s = _steps(X, dict(W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O), h, mask, causal, n_kv_heads,
               dict(b_Q=b_Q, b_K=b_K, b_V=b_V, b_O=b_O), keep_scores=False)
    return s.output, s.weights
