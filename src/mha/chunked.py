"""Attention that never holds the whole ``T x S`` score matrix.

The keys are read in blocks. For each block the running row maximum, the
running softmax denominator and the running weighted sum of values are
updated ("online softmax"); earlier blocks are rescaled when the maximum
grows. Memory for scores falls from ``T * S`` to ``T * block`` per head; the
result is the same as :func:`mha.scaled_dot_product_attention` up to rounding.
This is the algorithm of Rabe and Staats (2021), tiled over keys only
(FlashAttention tiles the queries too). Under a causal mask, the queries
that come before a block of keys skip it: see :func:`causal_tiles`.
"""

from __future__ import annotations

import numpy as np

from typing import NamedTuple

from ._validate import check_causal, check_flag, check_positive_int, check_qkv, require_finite, score_dtype

__all__ = ["CausalTiles", "attention_chunked", "causal_tiles"]


def attention_chunked(Q, K, V, *, block=64, causal=False, skip_masked=True):
    r"""Scaled dot-product attention computed one block of keys at a time.

    For each block :math:`j` of keys, with scaled scores
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
    skip_masked : bool
        Under ``causal``, skip the queries that come before a block of keys
        (all their scores there are masked). True by default; False computes
        and masks every block, only to measure what the skip saves.

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
    skip_masked = check_flag(skip_masked, "skip_masked")
    given = np.result_type(Q, K, V)
    dtype, may_overflow, _ = score_dtype(Q, K, V)  # float16 runs in float32; float32 in float64 if scores need it
    Q, K, V = (x.astype(dtype, copy=False) for x in (Q, K, V))
    # The running sum O adds up to S weighted values before it is divided by the denominator: values near the
    # type's largest number would overflow it although the output (a weighted mean of them) does not. Such values
    # are scaled by a power of 2 first (exact) and the output scaled back.
    v_max = float(np.abs(V).max()) if V.size else 0.0
    shift = 0
    if v_max * K.shape[-2] >= 0.25 * float(np.finfo(dtype).max):
        shift = int(np.frexp(v_max)[1])
        V = np.ldexp(V, -shift)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is checked below, with a clear error
        out = _online_attention(Q, K, V, block, causal, skip_masked)
        if shift:
            out = np.ldexp(out, shift)
    if may_overflow:
        require_finite(("the scores Q Kᵀ / √d_k", out))
    return out.astype(given, copy=False)


def _online_attention(Q, K, V, block, causal, skip_masked=True):
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
        rows = slice(s0 if causal and skip_masked else 0, T)  # causal: queries t < s0 see nothing here
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



class CausalTiles(NamedTuple):
    """Tiles of ``block x block`` scores under a causal mask: computed and skipped."""

    computed: int
    skipped: int

    @property
    def total(self) -> int:
        return self.computed + self.skipped


def causal_tiles(T, block):
    r"""How many ``block x block`` tiles of the causal ``T x T`` scores :func:`attention_chunked` skips.

    Cut the queries into blocks of the same size as the keys, giving
    :math:`n = \lceil T / \text{block} \rceil` blocks each way. Key block
    :math:`j` starts at position :math:`j \cdot \text{block}`; the loop starts
    its rows there, so it skips query blocks :math:`0, \dots, j-1`, whose
    scores in that block are all masked: :math:`n(n-1)/2` of the :math:`n^2`
    tiles, the ones wholly above the diagonal.

    Examples
    --------
    >>> causal_tiles(256, 64)
    CausalTiles(computed=10, skipped=6)
    """
    T = check_positive_int(T, "T")
    block = check_positive_int(block, "block")
    n = -(-T // block)  # ceil(T / block)
    skipped = n * (n - 1) // 2  # key block j skips query blocks 0 .. j-1: 0 + 1 + ... + (n - 1)
    return CausalTiles(computed=n * n - skipped, skipped=skipped)
