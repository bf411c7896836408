"""Attention that never holds the whole ``T x S`` score matrix.

The keys are read in blocks. For each block the running row maximum, the
running softmax denominator and the running weighted sum of values are
updated ("online softmax"); earlier blocks are rescaled when the maximum
grows. Memory for scores falls from ``T * S`` to ``T * block`` per head; the
result is the same as :func:`mha.scaled_dot_product_attention` up to rounding.
"""

from __future__ import annotations

import numpy as np

from ._validate import check_causal, check_positive_int, check_qkv, require_finite, score_dtype

__all__ = ["attention_chunked"]


def attention_chunked(Q, K, V, *, block=64, causal=False):
    r"""Scaled dot-product attention computed one block of keys at a time.

    For each block :math:`j` of keys, with scores
    :math:`S_j = Q K_j^\top / \sqrt{d_k}` and per-row running values
    :math:`m` (maximum), :math:`\ell` (denominator) and :math:`O` (unnormalised output):

    .. math::
        m' = \max(m, \max_{\text{row}} S_j), \quad
        P_j = e^{S_j - m'}, \quad
        \ell \leftarrow e^{m - m'}\,\ell + \textstyle\sum_{\text{row}} P_j, \quad
        O \leftarrow e^{m - m'}\,O + P_j V_j

    and at the end :math:`\operatorname{softmax}(Q K^\top/\sqrt{d_k})\,V = O / \ell`.

    Parameters
    ----------
    Q : array_like, shape (..., T, d_k)
    K : array_like, shape (..., S, d_k)
    V : array_like, shape (..., S, d_v)
    block : int
        Keys per block. Scores are held for ``T x block`` pairs at a time.
    causal : bool
        If true, query ``t`` sees only keys ``s <= t`` (needs ``S = T``).
        Blocks wholly in the future of a query are skipped for it.

    Returns
    -------
    ndarray, shape (..., T, d_v)
        The attention output. The weights are never formed, so none are returned.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> Q, K, V = rng.normal(size=(3, 5, 2))
    >>> from mha import scaled_dot_product_attention
    >>> plain, _ = scaled_dot_product_attention(Q, K, V)
    >>> np.allclose(attention_chunked(Q, K, V, block=2), plain)
    True
    """
    Q, K, V, _ = check_qkv(Q, K, V)
    block = check_positive_int(block, "block")
    causal = check_causal(causal, Q.shape[-2], K.shape[-2])
    given = np.result_type(Q, K, V)
    dtype, may_overflow, _ = score_dtype(Q, K, V)  # float16 runs in float32; float32 in float64 if scores need it
    Q, K, V = (x.astype(dtype, copy=False) for x in (Q, K, V))
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below, with a clear error
        out = _online_attention(Q, K, V, block, causal)
    if may_overflow:
        require_finite(("the scores Q Kᵀ / √d_k", out))
    return out.astype(given, copy=False)


def _online_attention(Q, K, V, block, causal):
    """The loop of :func:`attention_chunked`, unchecked: one block of keys at a time."""
    *lead, T, d_k = Q.shape
    S, d_v = V.shape[-2:]
    lead = np.broadcast_shapes(tuple(lead), K.shape[:-2], V.shape[:-2])
    scale = Q.dtype.type(1.0 / np.sqrt(d_k))
    m = np.full((*lead, T, 1), -np.inf, dtype=Q.dtype)  # running row maximum
    ell = np.zeros((*lead, T, 1), dtype=Q.dtype)  # running softmax denominator
    O = np.zeros((*lead, T, d_v), dtype=Q.dtype)  # running unnormalised output
    for s0 in range(0, S, block):
        s1 = min(s0 + block, S)
        rows = slice(s0, T) if causal else slice(0, T)  # queries t < s0 see nothing here
        S_j = (Q[..., rows, :] @ np.swapaxes(K[..., s0:s1, :], -1, -2)) * scale  # (..., t, d_k) @ (..., d_k, b)
        if causal:
            t = np.arange(rows.start, T)[:, None]
            S_j = np.where(np.arange(s0, s1)[None, :] <= t, S_j, -np.inf)
        m_old = m[..., rows, :]
        m_new = np.maximum(m_old, S_j.max(axis=-1, keepdims=True))  # (..., t, 1)
        P = np.exp(S_j - m_new)  # (..., t, b); masked entries give exactly 0
        rescale = np.exp(m_old - m_new)  # (..., t, 1); 0 on the first block (m_old = -inf)
        ell[..., rows, :] = rescale * ell[..., rows, :] + P.sum(axis=-1, keepdims=True)
        O[..., rows, :] = rescale * O[..., rows, :] + P @ V[..., s0:s1, :]  # (..., t, b) @ (..., b, d_v)
        m[..., rows, :] = m_new
    return O / ell  # (..., T, d_v)

