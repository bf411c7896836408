r"""The backward pass of multi-head attention: how the loss changes with ``X`` and the four projections.

Training needs, for a loss :math:`L` of the layer's output ``Y``, the gradients
:math:`\partial L / \partial X` and :math:`\partial L / \partial W` for each
weight. Given ``dY`` :math:`= \partial L / \partial Y`, the chain rule walks the
forward steps of :func:`mha.attention_steps` backwards, one line per step.

* :func:`attention_backward` -- the checked entry point, with the signature of
  :func:`mha.multi_head_attention` plus ``dY``.
* :func:`steps_backward` -- the same walk from a forward pass already done
  (an :class:`mha.AttentionSteps`): the chain rule written out step by step.
  (Chapter 06's trainer, :mod:`mha.training`, has its own backward for its
  one-query layer.)
* :func:`attend_backward` -- the heads' part alone, from the head outputs back
  to the split ``Q``, ``K``, ``V`` (any number of queries and keys).

The only step that is not a matrix product is the softmax; its Jacobian is
explained in :func:`attend_backward`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from ._validate import as_float_array, check_prob_rows, check_qkv, require_finite
from .attention import AttentionSteps, attention_steps

__all__ = ["AttentionGradients", "attend_backward", "attention_backward", "steps_backward"]


class AttentionGradients(NamedTuple):
    """Gradients of a scalar loss with respect to the inputs of one attention layer.

    Each field has the shape of the argument it belongs to.
    """

    X: np.ndarray  # (..., T, d)
    W_Q: np.ndarray  # (d, h*d_k)
    W_K: np.ndarray  # (d, h*d_k)
    W_V: np.ndarray  # (d, h*d_v)
    W_O: np.ndarray  # (h*d_v, d_out)


def _heads(M, h):
    """``(..., T, h*w) -> (..., h, T, w)``: head ``i`` gets the ``i``-th block of columns."""
    *lead, T, width = M.shape
    return np.swapaxes(M.reshape(*lead, T, h, width // h), -3, -2)


def _joined(M):
    """``(..., h, T, w) -> (..., T, h*w)``: the inverse of :func:`_heads`."""
    *lead, h, T, w = M.shape
    return np.swapaxes(M, -3, -2).reshape(*lead, T, h * w)


def _outer_sum(A, B):
    """``Σ over every token of every batch row of  aᵀ b``: ``(..., T, m), (..., T, n) -> (m, n)``."""
    return A.reshape(-1, A.shape[-1]).T @ B.reshape(-1, B.shape[-1])


def attend_backward(Q, K, V, A, dZ):
    r"""Gradients through attention heads already split: from ``dZ`` back to ``Q``, ``K`` and ``V``.

    The forward pass of a head, with ``A`` its weights and ``S`` its scaled
    scores (:attr:`mha.AttentionSteps.scores` are the scores before the scaling):

    .. math:: S = Q K^\top / \sqrt{d_k}, \quad A = \operatorname{softmax}(S), \quad Z = A V

    The two products give :math:`dA = dZ\, V^\top` and :math:`dV = A^\top dZ`, and
    :math:`dQ = dS\,K / \sqrt{d_k}`, :math:`dK = dS^\top Q / \sqrt{d_k}`.

    **The softmax's Jacobian.** One row :math:`a = \operatorname{softmax}(s)`
    has :math:`\partial a_j / \partial s_l = a_j(\delta_{jl} - a_l)`: raising
    one score raises its own weight and takes from every other weight in
    proportion to its size. Applied to a row of upstream gradients :math:`g = dA`,

    .. math::
        ds_l = \sum_j g_j\, a_j (\delta_{jl} - a_l) = a_l \Big(g_l - \sum_j g_j a_j\Big),
        \qquad\text{so}\qquad dS = A \odot \big(dA - \operatorname{rowsum}(dA \odot A)\big).

    Each score's gradient is its weight times how much its own gradient beats
    the row's weighted average. A masked key has weight 0, so its score gets
    gradient 0: masks and the causal triangle need no special case.

    Checked: ``Q`` ``(..., T, d_k)``, ``K`` ``(..., S, d_k)``, ``V`` ``(..., S, d_v)``,
    ``A`` ``(..., T, S)`` (the forward's weights) and ``dZ`` ``(..., T, d_v)``, with the same leading axes.

    Returns
    -------
    dQ, dK, dV : ndarray
        Shaped like ``Q``, ``K`` and ``V``.
    """
    dA = dZ @ np.swapaxes(V, -1, -2)  # (..., T, d_v) @ (..., d_v, S) -> (..., T, S)
    dV = np.swapaxes(A, -1, -2) @ dZ  # (..., S, T) @ (..., T, d_v) -> (..., S, d_v)
    dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True))  # the softmax's Jacobian, row by row: (..., T, S)
    dS *= 1 / math.sqrt(Q.shape[-1])  # the scores were divided by √d_k
    dQ = dS @ K  # (..., T, S) @ (..., S, d_k) -> (..., T, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q  # (..., S, T) @ (..., T, d_k) -> (..., S, d_k)
    return dQ, dK, dV


def _steps_backward(steps, X,  # the forward's intermediates, and its tokens
                   W_Q, W_K, W_V,  # the three input projections
                   W_O, dY):  # the output projection, and the gradient arriving at the output
    r"""Gradients of a loss through one attention layer, from its forward intermediates.

    The forward pass, per head :math:`i` (``Q_i`` is head ``i``'s block of ``X W_Q``):

    .. math::
        S_i = Q_i K_i^\top / \sqrt{d_k}, \quad A_i = \operatorname{softmax}(S_i), \quad
        Z_i = A_i V_i, \quad Y = [Z_1, \dots, Z_h]\, W_O

    Every step but the softmax is a product, whose gradient is a product with a
    transpose: for :math:`Y = C W`, :math:`dC = dY\,W^\top` and :math:`dW = C^\top dY`.
    The heads' part, softmax included, is :func:`attend_backward`. ``X`` feeds
    all three projections, so its gradient is the sum of three.

    Parameters
    ----------
    steps : AttentionSteps
        From :func:`mha.attention_steps` on these same inputs, with one
        key/value head per query head and no biases.
    X : ndarray
        The forward's tokens.
    W_Q, W_K, W_V, W_O : ndarray
        Its weights.
    dY : ndarray, shape (..., T, d_out)
        Gradient of the loss with respect to the output.

    Returns
    -------
    AttentionGradients
    """
    dconcat = dY @ W_O.T  # (..., T, d_out) @ (d_out, h*d_v) -> (..., T, h*d_v)
    dW_O = _outer_sum(steps.concat, dY)  # (h*d_v, d_out)
    dZ = _heads(dconcat, steps.h)  # (..., T, h*d_v) -> (..., h, T, d_v)
    dQ_heads, dK_heads, dV_heads = _attend_backward(steps.Q_heads, steps.K_heads, steps.V_heads, steps.weights, dZ)
    dQ, dK, dV = _joined(dQ_heads), _joined(dK_heads), _joined(dV_heads)  # (..., h, T, ·) -> (..., T, h*·)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T  # (..., T, h*·) @ (h*·, d) -> (..., T, d), three times
    return AttentionGradients(X=dX, W_Q=_outer_sum(X, dQ), W_K=_outer_sum(X, dK), W_V=_outer_sum(X, dV),
                              W_O=dW_O)  # (d, h*d_k), (d, h*d_k), (d, h*d_v), (h*d_v, d_out)


def steps_backward(steps, X, W_Q, W_K, W_V, W_O, dY):
    """:func:`_steps_backward` with its arguments checked against ``steps`` (shapes, finite values, no grouping).

    The gradients of a loss through one attention layer, from its forward
    intermediates (an :class:`mha.AttentionSteps` of these inputs): see
    :func:`attention_backward`, which runs the forward pass itself.

    Returns
    -------
    AttentionGradients
    """
    if not isinstance(steps, AttentionSteps):
        raise TypeError(f"steps must come from mha.attention_steps, got {type(steps).__name__}")
    if steps.n_kv_heads != steps.h:
        raise ValueError(f"steps comes from a grouped run ({steps.h} query heads, {steps.n_kv_heads} key/value "
                         "heads); this backward pass needs one key/value head per query head")
    X, W_Q, W_K, W_V, W_O, dY = (as_float_array(a, name) for a, name in
                                 ((X, "X"), (W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"), (W_O, "W_O"), (dY, "dY")))
    d, hd_k, hd_v = X.shape[-1] if X.ndim else 0, steps.Q.shape[-1], steps.V.shape[-1]
    if X.shape != steps.Q.shape[:-1] + (d,):
        raise ValueError(f"X {X.shape} is not the input of steps (queries {steps.Q.shape})")
    for name, W, shape in (("W_Q", W_Q, (d, hd_k)), ("W_K", W_K, (d, hd_k)), ("W_V", W_V, (d, hd_v)),
                           ("W_O", W_O, (hd_v, steps.output.shape[-1]))):
        if W.shape != shape:
            raise ValueError(f"{name} must have shape {shape} to fit steps and X {X.shape}, got {W.shape}")
    if dY.shape != steps.output.shape:
        raise ValueError(f"dY must have the shape of the layer's output {steps.output.shape}, got {dY.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        grads = _steps_backward(steps, X, W_Q, W_K, W_V, W_O, dY)
    require_finite(*((f"the gradient of {name}", g) for name, g in zip(AttentionGradients._fields, grads)))
    return grads


def _checked_heads(kernel):
    """:func:`attend_backward` with its arguments checked; the maths stays as written (chapter 06 shows it)."""

    @functools.wraps(kernel)
    def attend_backward(Q, K, V, A, dZ):
        Q, K, V, lead = check_qkv(Q, K, V)
        A = check_prob_rows(A, "A", ndim=2, legend="(..., T, S)")
        dZ = as_float_array(dZ, "dZ")
        T, S, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
        if A.shape[-2:] != (T, S) or dZ.shape[-2:] != (T, d_v) or A.shape[:-2] != dZ.shape[:-2] \
                or np.broadcast_shapes(lead, A.shape[:-2]) != A.shape[:-2]:
            raise ValueError(f"A must be (..., T, S) = (..., {T}, {S}) and dZ (..., T, d_v) = (..., {T}, {d_v}) with "
                             f"the leading axes of Q, K, V {lead}; got A {A.shape} and dZ {dZ.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            grads = kernel(Q, K, V, A, dZ)
        require_finite(*((f"the gradient of {name}", g) for name, g in zip(("Q", "K", "V"), grads)))
        return grads

    return attend_backward


_attend_backward = attend_backward  # the maths alone, unchecked: what the layer's backward pass runs
attend_backward = _checked_heads(_attend_backward)  # the public name checks its arguments first


def attention_backward(X,  # tokens, one row each
                       W_Q, W_K, W_V,  # projections into queries, keys, values
                       W_O,  # projection of the joined heads
                       h, dY, *, mask=None, causal=False):
    r"""Gradients of a loss with respect to the inputs of :func:`mha.multi_head_attention`.

    Runs the forward pass (:func:`mha.attention_steps`, which checks every
    input) and then :func:`steps_backward`, which walks the steps back; the
    softmax's Jacobian is derived in :func:`attend_backward`:
    :math:`dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))`.

    Parameters
    ----------
    X, h, mask, causal
        As for :func:`mha.multi_head_attention`.
    W_Q, W_K, W_V, W_O
        The weights, as for :func:`mha.multi_head_attention` (one key/value head per query head, no biases).
    dY : array_like, shape (..., T, d_out)
        :math:`\partial L / \partial Y` for the output ``Y``; the shape of ``Y``.

    Returns
    -------
    AttentionGradients
        A named tuple with one field per input, ``X`` first, then the four weights: each gradient has the shape of
        its argument. Gradients of the weights are summed over every batch row
        and position.

    Raises
    ------
    ValueError, TypeError
        For any input :func:`mha.multi_head_attention` refuses, and for a
        ``dY`` that is not finite or not the output's shape.

    Examples
    --------
    >>> from mha import multi_head_attention
    >>> from mha.examples import i_love_llms
    >>> ex = i_love_llms()
    >>> Y, _ = multi_head_attention(ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, h=2)
    >>> g = attention_backward(ex.X, ex.W_Q, ex.W_K, ex.W_V, ex.W_O, 2, np.ones_like(Y))
    >>> g.W_O.shape == ex.W_O.shape, g.X.shape == ex.X.shape
    (True, True)
    """
    weights = (W_Q, W_K, W_V, W_O)
    steps = attention_steps(X, *weights, h, mask=mask, causal=causal)
    dY = as_float_array(dY, "dY")
    if dY.shape != steps.output.shape:
        raise ValueError(f"dY must have the shape of the layer's output {steps.output.shape} (..., T, d_out), "
                         f"got {dY.shape}")
    names = AttentionGradients._fields  # the inputs' names, X first
    X, *weights = (as_float_array(a, name) for a, name in zip((X, *weights), names))
    dtype = np.result_type(steps.output, dY)
    X, dY, *weights = (a.astype(dtype, copy=False) for a in (X, dY, *weights))
    with np.errstate(over="ignore", invalid="ignore"):
        grads = _steps_backward(steps, X, *weights, dY)
    if not all(np.isfinite(g).all() for g in grads):
        raise ValueError("a gradient overflowed: the inputs or dY are finite but too large for "
                         f"{dtype}; scale them down")
    return grads
