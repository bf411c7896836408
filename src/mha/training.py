r"""Train heads in NumPy on a dictionary lookup, at a fixed width, and measure the head-count trade-off.

**The task.** The input is a list of 8 entries, each a (key, value) pair, with
8 different keys out of 16 and values out of 16, in random order; then one
query token that names ``n_keys`` of those keys. The model must answer every
named key's value. Chance is 1/16 per answer.

**The model.** Width ``d``. An entry is embedded as ``E_key[k] + E_val[v]``;
the query as ``E_ask[0][k_0] + E_ask[1][k_1] + ...`` (one table per asked
slot); there are no positions, since the lookup is by content. One attention
layer of ``h`` heads of width ``d_k``, values of width ``d_v = d / h``, in
which only the query token asks: its one query row attends over the 8
entries and itself, the last row of :func:`mha.multi_head_attention` on the 9
tokens. The heads' output, through ``W_O``, is added to the query (a residual)
and read by one linear readout ``d -> 16`` (with a bias) per asked key. The
gradients follow :func:`mha.backward.attend_backward` step by step.

The layer and its backward pass are written once more here, for the one
query row and with the batch axis last (``_query_layer``): the model is so
small (256 lookups of 9 tokens of width 16) that NumPy's cost per call, not
the arithmetic, sets the speed. The tests check both against
:func:`mha.multi_head_attention` and :func:`mha.attention_backward`.

**Training.** Adam (0.9, 0.999, 1e-8), peak learning rate 3e-3, 100 warm-up
steps then a cosine decay to 0 (:func:`learning_rate`), batches of 256 fresh
samples, the mean cross-entropy over the answers. Embeddings start as
N(0, 1), projections as N(0, 1/fan_in), biases at 0. Everything is float32.
The score is the accuracy on one fixed test set of 8192 samples.

:func:`dictionary_lookup` runs one experiment and is deterministic per seed;
:func:`dictionary_lookups` trains several seeds side by side,
:func:`head_sweep` one model per head count, and :func:`lookup_sweep` several
settings, in worker processes if asked. Models whose weights have the same
shapes (every ``h`` with ``d_k = d / h``) and that read the same lookups train
side by side in one grid, share the products of each seed's one-hots in the
forward pass and one softmax call for all their heads (:func:`_query_layer`),
as many seeds at a time as keep the step's arrays small (``job_bytes``, by
default :data:`JOB_BYTES`);
each model's numbers are the ones it gets alone.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import math
import typing
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits  # the products here are tiny: BLAS threads cost more than they save

from ._validate import check_count, check_counts, check_number, check_positive_int

__all__ = ["LookupBatch", "LookupResult", "adam_step", "dictionary_lookup", "init_params", "learning_rate",
           "head_sweep", "lookup_batch", "lookup_sweep", "loss_and_grads", "dictionary_lookups", "param_shapes", "predict", "test_set", "train", "unpack"]

N_ENTRIES = 8  # (key, value) entries in every input
N_SYMBOLS = 16  # possible keys, and possible values
BATCH = 256
TEST_SIZE = 8192
TEST_SEED = 20170612  # the one fixed test set every run is scored on
PEAK_LR = 3e-3
WARMUP = 100
BETAS = (0.9, 0.999)
EPS = 1e-8
N_SAMPLES = 4  # sample queries whose attention a result keeps
DTYPE = np.float32


# ================================================================ the task
@dataclass(frozen=True)
class LookupBatch:
    """A batch of lookups.

    Attributes
    ----------
    keys, values : ndarray of int, shape (..., B, 8)
        The entries; the keys of one row are all different.
    asked : ndarray of int, shape (..., B, n_keys)
        Which entries the query names (positions 0 .. 7, all different).

    A leading axis, if any, holds one batch per model trained side by side.
    """

    keys: np.ndarray
    values: np.ndarray
    asked: np.ndarray

    @functools.cached_property
    def asked_keys(self):
        """The keys the query names, ``(B, n_keys)``."""
        return np.take_along_axis(self.keys, self.asked, axis=-1)

    @functools.cached_property
    def answers(self):
        """The values to answer, ``(B, n_keys)``."""
        return np.take_along_axis(self.values, self.asked, axis=-1)


def _first_of_permutations(rng, size, n, k):
    """``size`` rows of ``k`` different numbers from ``0 .. n-1``, uniformly at random."""
    return np.argsort(rng.random((size, n)), axis=1)[:, :k]


def lookup_batch(rng, size, n_keys=2):
    """``size`` random lookups drawn with ``rng`` (a ``numpy.random.Generator``).

    Examples
    --------
    >>> b = lookup_batch(np.random.default_rng(0), 3)
    >>> b.keys.shape, b.asked.shape, bool((np.sort(b.keys, axis=1)[:, 1:] != np.sort(b.keys, axis=1)[:, :-1]).all())
    ((3, 8), (3, 2), True)
    """
    keys = _first_of_permutations(rng, size, N_SYMBOLS, N_ENTRIES)  # (B, 8), distinct in each row
    values = rng.integers(0, N_SYMBOLS, size=(size, N_ENTRIES))  # (B, 8)
    asked = _first_of_permutations(rng, size, N_ENTRIES, n_keys)  # (B, n_keys)
    return LookupBatch(keys, values, asked)


@functools.lru_cache(maxsize=8)
def test_set(n_keys=2):
    """The fixed test set: 8192 lookups from one fixed seed, the same for every run (read-only)."""
    batch = lookup_batch(np.random.default_rng(TEST_SEED), TEST_SIZE, n_keys)
    for a in (batch.keys, batch.values, batch.asked):
        a.setflags(write=False)
    return batch


test_set.__test__ = False  # not a pytest test


# ================================================================ the model
# Every array below carries a leading axis M: models trained side by side, M = N G for N seeds and G head
# counts (model s G + g is seed s with the g-th head count). Each seed has its own batches, which its G
# models share. The models' numbers never mix; stacking only shares NumPy's per-call cost between them.
def param_shapes(h, d, d_k, n_keys):
    """The model's weights by name, with their shapes (``d_v = d / h``).

    ``E`` is one table of token embeddings: rows 0-15 the keys of entries,
    16-31 their values, then 16 rows for each asked slot (``32 + 16 j + k`` is
    key ``k`` named in slot ``j``). A token is the sum of its rows.
    """
    d_v = d // h
    return {"E": (2 * N_SYMBOLS + n_keys * N_SYMBOLS, d), "W_Q": (d, h * d_k), "W_K": (d, h * d_k),
            "W_V": (d, h * d_v), "W_O": (h * d_v, d), "R": (n_keys, d, N_SYMBOLS), "c": (n_keys, N_SYMBOLS)}


def unpack(theta, shapes):
    """Views of the flat weights ``theta`` ``(M, P)``, one ``(M, *shape)`` per name (writing one writes ``theta``)."""
    views, start = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        views[name] = theta[:, start:start + size].reshape(theta.shape[0], *shape)
        start += size
    return views


def init_params(rng, shapes, dtype=DTYPE):
    """Fresh weights of one model as a flat vector: embeddings N(0, 1), projections N(0, 1/fan_in), biases 0."""
    parts = []
    for name, shape in shapes.items():
        fan_in = 1 if name == "E" else shape[-2]  # a projection (..., fan_in, fan_out)
        scale = 0.0 if name == "c" else 1 / math.sqrt(fan_in)
        parts.append((rng.standard_normal(shape) * scale).astype(dtype).ravel())
    return np.concatenate(parts)


# The layout of the activations: the batch axis comes LAST, ``(M, features, tokens, B)``. Every sum
# over a head's columns or over the 9 tokens then runs along a long contiguous axis (B = 256), which
# NumPy does in one fast pass; with B first, the same sums loop over thousands of tiny rows.
def _one_hots(batch, dtype):
    """Which rows of ``E`` make each token, as 0/1 matrices with the batch last.

    For each of the ``N`` batches of ``batch`` (one per seed), returns
    ``entries`` ``(N, 32, 8B)``, whose column ``t B + b`` has a 1 in the
    rows of the key and of the value of entry ``t`` of lookup ``b``, and
    ``query`` ``(N, 16 n_keys, B)``, whose column ``b`` has a 1 in row
    ``16 j + k_j`` for the key ``k_j`` named in each slot ``j``.
    """
    N, B, n_keys = batch.asked.shape
    keys, values = _t(batch.keys).reshape(N, 1, -1), _t(batch.values).reshape(N, 1, -1)  # (N, B, 8) -> (N, 1, 8B)
    entries = _ones_at(np.concatenate([keys, N_SYMBOLS + values], axis=1), 2 * N_SYMBOLS, dtype)  # (N, 32, 8B)
    slots = N_SYMBOLS * np.arange(n_keys)[:, None] + _t(batch.asked_keys)  # (N, n_keys, B)
    return entries, _ones_at(slots, n_keys * N_SYMBOLS, dtype)  # (N, 32, 8B), (N, 16 n_keys, B)


def _ones_at(rows, n_rows, dtype):
    """Zeros ``(M, n_rows, N)`` with a 1 in row ``rows[m, i, n]`` of column ``n``, for every ``i``: ``rows`` is ``(M, k, N)``."""
    M, _, N = rows.shape
    out = np.zeros((M, n_rows, N), dtype)
    out.ravel()[rows.astype(np.intp) * N + _column_starts(M, n_rows, N)] = 1  # where each 1 goes in out.ravel()
    return out


@functools.lru_cache(maxsize=16)
def _column_starts(M, n_rows, N):
    """The place of row 0 of each column of an ``(M, n_rows, N)`` array in its ``ravel()``: ``(M, 1, N)``."""
    return (np.arange(M)[:, None, None] * n_rows * N + np.arange(N)).astype(np.intp)


def _answer_places(answers, n_out):
    """Where answer ``answers[m, j, b]`` sits in the ``ravel()`` of an ``(M, n_keys, n_out, B)`` array."""
    M, n_keys, B = answers.shape
    return (answers.astype(np.intp) * B + _column_starts(M * n_keys, n_out, B).reshape(M, n_keys, B)).ravel()


def _t(M):
    """Swap the last two axes (a view)."""
    return M.swapaxes(-1, -2)


def _heads_of(hs):
    """``h`` as a tuple of head counts, one per model of each seed (an int is one model)."""
    return (hs,) if isinstance(hs, int) else tuple(hs)


def _by_seed(X, G):
    """The models' axis ``M = N G`` of ``X`` ``(M, ...)`` split as ``(N, G, ...)`` (a view)."""
    return X.reshape(X.shape[0] // G, G, *X.shape[1:])


def _query_layer(w, one_hots, hs, ws=None):
    r"""The model up to the heads' output, for the last token only, batch last: it asks, all 9 tokens answer.

    Per head :math:`i`, with :math:`k_{it}`, :math:`v_{it}` the key and value of token :math:`t`,

    .. math:: s_{it} = q_i \cdot k_{it} / \sqrt{d_k}, \quad a_i = \operatorname{softmax}_t(s_i),
              \quad z_i = \textstyle\sum_t a_{it} v_{it}, \quad y = W_O^\top [z_1; \dots; z_h]

    the last row of :func:`mha.multi_head_attention` on the 9 tokens
    (``tests/test_training.py`` checks it). An entry is the sum of two rows of
    ``E``, so its key and value are the same sums of rows of ``E W_K`` and
    ``E W_V``: the 32 rows are projected once and picked by the one-hots,
    and the entries' tokens are never formed.

    Parameters
    ----------
    w : dict
        The weights of :func:`param_shapes`, each with a leading axis ``M``.
    one_hots : tuple
        From :func:`_one_hots`, with a leading axis ``N``: one batch per seed (``N`` seeds).
    hs : int or tuple of int
        The head counts of the ``G`` models of each seed, whose weights have the
        same shapes; model ``m = s G + g`` reads batch ``s`` and has ``hs[g]``
        heads (``M = N G``). The models of a seed share its one-hot products.
    ws : _Workspace, optional
        The step's arrays, made once and reused by every step of a training run;
        made here if not given.

    Returns
    -------
    x_q : ndarray, shape (M, d, B)
        The query token.
    y : ndarray, shape (M, d, B)
        What the heads add to it.
    cache : dict
        The intermediates :func:`_query_layer_backward` needs, with the weights
        ``A``: for each head count ``hs[g]``, ``(N, hs[g], 9, B)``.
    """
    entries, query = one_hots  # (N, 32, 8B), (N, 16 n_keys, B)
    hs = _heads_of(hs)
    E_T = _t(w["E"])  # (M, d, n_codes)
    W_KV = np.concatenate([w["W_K"], w["W_V"]], axis=-1)  # keys' and values' columns side by side: (M, d, c)
    (M, d, c), B, G = W_KV.shape, query.shape[-1], len(hs)
    ws = ws or _Workspace(M, c, w["W_Q"].shape[-1], hs, B, W_KV.dtype)
    x_q = _by_seed(E_T[:, :, 2 * N_SYMBOLS:], G) @ query[:, None]  # the query token: (N, G, d, 16 n) @ (N, 1, 16 n, B)
    x_q = x_q.reshape(M, d, B)  # -> (M, d, B)
    KV, q, S, concat = ws.KV, ws.q, ws.S, ws.concat  # (M, c, 9, B), (M, h d_k, B), (N Σh, 9, B), (M, d, B)
    rows = _t(W_KV) @ E_T[:, :, :2 * N_SYMBOLS]  # each key's and each value's row of E, projected: (M, c, 32)
    np.matmul(rows.reshape(-1, G * c, 2 * N_SYMBOLS), entries, out=ws.KV_entries)  # one product per seed:
    # (N, G c, 32) @ (N, 32, 8B) -> (N, G c, 8B), every token's key and value but the query's
    KV[:, :, -1] = _t(W_KV) @ x_q  # the query is a key and a value too: (M, c, d) @ (M, d, B)
    np.matmul(_t(w["W_Q"]), x_q, out=q)  # (M, h d_k, d) @ (M, d, B) -> (M, h d_k, B)
    for (K, _, q_g), S_g in zip(ws.views, ws.A):  # each model split into its heads (views)
        np.einsum("mhktb,mhkb->mhtb", K, q_g, out=S_g)  # per head and token: (N, h, 9, B)
    _softmax_tokens(S, ws.heads.scale)  # in place, all the models' heads at once: (N Σh, 9, B)
    for g, ((_, V, _), A_g) in enumerate(zip(ws.views, ws.A)):
        Z_g = np.einsum("mhtb,mhvtb->mhvb", A_g, V)  # each head's weighted sum of values: (N, h, d_v, B)
        _by_seed(concat, G)[:, g] = Z_g.reshape(-1, d, B)  # (N, h, d_v, B) -> (N, d, B)
    y = _t(w["W_O"]) @ concat  # (M, d, h d_v) @ (M, h d_v, B) -> (M, d, B)
    return x_q, y, {"W_KV": W_KV, "x_q": x_q, "A": ws.A, "ws": ws, "hs": hs}


class _Workspace:
    """The arrays of one step of a grid (:func:`_query_layer` and its backward), with each model's views of them.

    A training run makes one and reuses it at every step, so the arrays and
    their views are made once, not once per step. Each step writes every
    entry it reads.
    """

    def __init__(self, M, c, hd_k, hs, B, dtype):
        G, T = len(hs), N_ENTRIES + 1
        self.heads = heads = _grid_heads(hs, hd_k, M // G, np.dtype(dtype))
        self.KV, self.dKV = np.empty((M, c, T, B), dtype), np.empty((M, c, T, B), dtype)  # every token's key and value
        self.q, self.dq = np.empty((M, hd_k, B), dtype), np.empty((M, hd_k, B), dtype)
        self.S, self.dA = np.empty((heads.total, T, B), dtype), np.empty((heads.total, T, B), dtype)  # (N Σh, 9, B)
        self.concat = np.empty((M, c - hd_k, B), dtype)  # the heads' outputs side by side, h d_v = d
        self.per_row = np.empty((M, c, 2 * N_SYMBOLS), dtype)
        self.KV_entries = self.KV[:, :, :-1].reshape(-1, G * c, N_ENTRIES * B)  # (N, G c, 8B), a view
        self.A, self.dA_blocks = heads.blocks(self.S), heads.blocks(self.dA)  # model g's heads: (N, h, 9, B)
        self.views = [_head_views(self.KV, self.q, G, g, h) for g, h in enumerate(hs)]  # K, V, q of model g
        self.grad_views = [_head_views(self.dKV, self.dq, G, g, h) for g, h in enumerate(hs)]  # dK, dV, dq
        self.dKV_entries = [_by_seed(self.dKV[:, :, :-1], G)[:, g].reshape(-1, c, N_ENTRIES * B) for g in range(G)]
        self.per_row_g = [_by_seed(self.per_row, G)[:, g] for g in range(G)]  # (N, c, 32) each


def _head_views(KV, q, G, g, h):
    """Model ``g`` of each seed, split into its ``h`` heads: keys, values and query, as views."""
    KV_g, q_g = _by_seed(KV, G)[:, g], _by_seed(q, G)[:, g]  # (N, c, 9, B), (N, h d_k, B)
    N, c, T, B = KV_g.shape
    d_k = q_g.shape[1] // h
    K = KV_g[:, :h * d_k].reshape(N, h, d_k, T, B)  # (N, h d_k, 9, B) -> (N, h, d_k, 9, B)
    V = KV_g[:, h * d_k:].reshape(N, h, -1, T, B)  # (N, h d_v, 9, B) -> (N, h, d_v, 9, B)
    return K, V, q_g.reshape(N, h, d_k, B)  # q: (N, h d_k, B) -> (N, h, d_k, B)


class _GridHeads(typing.NamedTuple):
    """The heads of a grid's models (``N`` seeds, head counts ``hs``) stacked on one axis, model by model."""

    hs: tuple  # the head counts of the G models
    N: int  # seeds
    total: int  # N Σh heads in all
    scale: np.ndarray  # 1/√d_k of each head, (N Σh, 1, 1), in the scores' dtype
    rows: tuple  # model g's heads: a slice of the N Σh axis

    def blocks(self, X):
        """``X`` ``(N Σh, ...)`` cut into one view per model, ``(N, h, ...)``: each a contiguous block.

        Model ``g``'s block has the same layout in any grid (and alone), so its
        numbers do not depend on what it trains beside.
        """
        return [X[rows].reshape(self.N, h, *X.shape[1:]) for rows, h in zip(self.rows, self.hs)]


@functools.lru_cache(maxsize=32)
def _grid_heads(hs, hd_k, N, dtype):
    """:class:`_GridHeads` of ``N`` seeds of models with ``hs`` heads and ``h d_k = hd_k`` query columns each."""
    scale = np.concatenate([np.full(N * h, 1 / math.sqrt(hd_k // h)) for h in hs]).astype(dtype).reshape(-1, 1, 1)
    scale.setflags(write=False)
    stops = np.cumsum([N * h for h in hs]).tolist()
    return _GridHeads(tuple(hs), N, stops[-1], scale, tuple(slice(stop - N * h, stop) for stop, h in zip(stops, hs)))


def _softmax_tokens(S, scale):
    """Scores ``S`` ``(heads, 9, B)`` scaled by ``scale`` (1/√d_k per head), then softmax over the 9 tokens, in place."""
    S *= scale
    S -= S.max(axis=1, keepdims=True)  # every exponent <= 0: nothing overflows
    A = np.exp(S, out=S)  # in place: one array for the scores and the weights
    A *= 1 / A.sum(axis=1, keepdims=True)
    return A


def _softmax_tokens_backward(A, dA, scale):
    r"""The gradient of the scores before :func:`_softmax_tokens` from ``dA``, the gradient of its weights ``A``.

    The softmax's Jacobian is :math:`ds_t = a_t\,(da_t - \sum_u da_u a_u)`, then the
    scale: ``dS = scale * A * (dA - sum(dA * A))``. ``dA`` is overwritten.
    """
    dS = dA * A
    dA -= dS.sum(axis=1, keepdims=True)
    dS = np.multiply(dA, A, out=dS)  # a (da - Σ da a): (heads, 9, B)
    dS *= scale  # the scores were divided by √d_k
    return dS


def _query_layer_backward(w, one_hots, cache, dy, dx_q):
    r"""Gradients through :func:`_query_layer`, from ``dy`` and ``dx_q`` ``(M, d, B)``, for every weight it uses.

    The same steps as :func:`mha.backward.attend_backward`, for one query row
    (the softmax's in :func:`_softmax_tokens_backward`, for every head at once). The entries' gradients go back through
    the one-hots to the rows of ``E``. ``tests/test_training.py`` checks the
    result against :func:`mha.attention_backward`.

    Returns
    -------
    dict of str to ndarray
        ``E``, ``W_Q``, ``W_K``, ``W_V``, ``W_O``, each with a leading axis ``M``.
    """
    entries, query = one_hots  # (N, 32, 8B), (N, 16 n_keys, B)
    W_KV, x_q, ws, hs = (cache[k] for k in ("W_KV", "x_q", "ws", "hs"))
    (M, c, T, B), G, hd_k = ws.KV.shape, len(hs), ws.q.shape[1]
    grads = {"W_O": ws.concat @ _t(dy)}  # (M, h d_v, B) @ (M, B, d) -> (M, h d_v, d)
    dZ = w["W_O"] @ dy  # (M, h d_v, d) @ (M, d, B) -> (M, h d_v, B)
    dKV, dq, dA = ws.dKV, ws.dq, ws.dA  # (M, c, 9, B), (M, h d_k, B), (N Σh, 9, B)
    for g, ((_, V, _), (_, dV, _), A_g, dA_g) in enumerate(zip(ws.views, ws.grad_views, ws.A, ws.dA_blocks)):
        dZ_g = _by_seed(dZ, G)[:, g].reshape(V.shape[:3] + (B,))  # (N, h d_v, B) -> (N, h, d_v, B)
        np.multiply(A_g[:, :, None], dZ_g[..., None, :], out=dV)  # each token's value got weight a_t: (N, h, d_v, 9, B)
        np.einsum("mhvb,mhvtb->mhtb", dZ_g, V, out=dA_g)  # (N, h, 9, B)
    dS = _softmax_tokens_backward(ws.S, dA, ws.heads.scale)  # all the models' heads at once: (N Σh, 9, B)
    for g, ((K, _, q_g), (dK, _, _), dS_g) in enumerate(zip(ws.views, ws.grad_views, ws.heads.blocks(dS))):
        np.multiply(dS_g[:, :, None], q_g[..., None, :], out=dK)  # (N, h, d_k, 9, B)
        _by_seed(dq, G)[:, g] = np.einsum("mhtb,mhktb->mhkb", dS_g, K).reshape(-1, hd_k, B)  # dq: (N, h, d_k, B)
    dKV_q = dKV[:, :, -1]  # the query token's key and value: (M, c, B)
    # Summed by row of E, one product per model: BLAS may add up a row's 2048 terms in another order when
    # the matrix has more rows (OpenBLAS on an AMD EPYC does), and a model's numbers must not depend on its grid.
    for dKV_g, per_row_g in zip(ws.dKV_entries, ws.per_row_g):
        np.matmul(dKV_g, _t(entries), out=per_row_g)  # (N, c, 8B) @ (N, 8B, 32) -> (N, c, 32)
    per_row = _t(ws.per_row)  # (M, 32, c)
    dx_q = dx_q + w["W_Q"] @ dq + W_KV @ dKV_q  # the query asked, and was a key and a value: (M, d, B)
    dW_KV = _t(w["E"][:, :2 * N_SYMBOLS]) @ per_row + x_q @ _t(dKV_q)  # (M, d, 32) @ (M, 32, c) + (M, d, B) @ (M, B, c)
    grads["W_Q"] = x_q @ _t(dq)  # (M, d, B) @ (M, B, h d_k) -> (M, d, h d_k)
    grads["W_K"], grads["W_V"] = dW_KV[..., :hd_k], dW_KV[..., hd_k:]  # (M, d, h d_k), (M, d, h d_v)
    dE_asked = query[:, None] @ _t(_by_seed(dx_q, G))  # asked slots' rows: (N, 1, 16 n, B) @ (N, G, B, d)
    grads["E"] = np.concatenate([per_row @ _t(W_KV),  # entries' rows: (M, 32, c) @ (M, c, d) -> (M, 32, d)
                                 dE_asked.reshape(M, -1, dx_q.shape[1])], axis=1)  # (N, G, 16 n, d) -> (M, 16 n, d)
    return grads


def _log_softmax(logits, axis):
    shifted = logits - logits.max(axis=axis, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


def _forward(w, batch, hs, ws=None):
    """The whole model: the layer, the residual, the readouts (batch last); ``hs``, ``ws`` as in :func:`_query_layer`."""
    one_hots = _one_hots(batch, w["E"].dtype)
    x_q, y, cache = _query_layer(w, one_hots, hs, ws)
    z = x_q + y  # the query plus what its heads read (a residual): (M, d, B)
    logits = _t(w["R"]) @ z[:, None] + w["c"][..., None]  # (M, n_keys, 16, d) @ (M, 1, d, B) -> (M, n_keys, 16, B)
    return {"one_hots": one_hots, "x_q": x_q, "z": z, "cache": cache, "logits": logits}


def loss_and_grads(theta, shapes, batch, h):
    r"""Each model's mean cross-entropy over the answers of its batch, and its gradient for every weight.

    .. math:: L = -\frac{1}{B\,n}\sum_{b, j} \log p_{bj}(\text{answer}_{bj}), \qquad
              \frac{\partial L}{\partial \text{logits}_{bj}} = \frac{p_{bj} - \text{onehot}(\text{answer}_{bj})}{B\,n}

    The heads' part of the gradient follows :func:`mha.backward.attend_backward`
    step by step, for the one query row (:func:`_query_layer_backward`).

    Parameters
    ----------
    theta : ndarray, shape (M, P)
        The flat weights of ``M`` models, laid out by ``shapes`` (:func:`param_shapes`).
    batch : LookupBatch
        Arrays ``(M, B, ...)``: one batch per model.
    h : int

    Returns
    -------
    loss : ndarray, shape (M,)
    grad : ndarray, shape (M, P)
    """
    grad = np.empty_like(theta)
    return _loss_and_grads(unpack(theta, shapes), unpack(grad, shapes), batch, check_positive_int(h, "h")), grad


def _loss_and_grads(w, g, batch, hs, ws=None):
    """:func:`loss_and_grads` on views: the weights ``w``, and ``g`` into which the gradient is written.

    ``batch`` holds one batch per seed, read by the models of ``hs``, with the step's arrays ``ws``
    (:func:`_query_layer`).
    """
    f = _forward(w, batch, hs, ws)
    M, n_keys, n_out, B = f["logits"].shape
    log_p = _log_softmax(f["logits"], axis=2)  # (M, n_keys, 16, B)
    answers = np.repeat(_t(batch.answers), len(_heads_of(hs)), axis=0)  # each seed's, for its models: (M, n_keys, B)
    at_answer = _answer_places(answers, n_out)  # where each answer's log p sits in log_p.ravel()
    loss = -log_p.ravel()[at_answer].reshape(M, -1).sum(axis=1) / (B * n_keys)  # (M,)
    dlogits = np.exp(log_p)  # p, then p - onehot(answer): (M, n_keys, 16, B)
    dlogits.ravel()[at_answer] -= 1
    dlogits *= 1 / (B * n_keys)
    g["R"][...] = f["z"][:, None] @ _t(dlogits)  # (M, 1, d, B) @ (M, n_keys, B, 16) -> (M, n_keys, d, 16)
    g["c"][...] = dlogits.sum(axis=-1)  # (M, n_keys, 16)
    dz = (w["R"] @ dlogits).sum(axis=1)  # (M, n_keys, d, 16) @ (M, n_keys, 16, B) -> (M, d, B)
    # z = x_q + y: the residual hands dz to the query token directly, and to the heads' output
    for name, value in _query_layer_backward(w, f["one_hots"], f["cache"], dz, dz).items():
        g[name][...] = value
    return loss


def predict(theta, shapes, batch, h):
    """Each model's answers ``(M, B, n_keys)``, losses per answer ``(M, B, n_keys)`` and query weights ``(M, B, h, 9)``."""
    f = _forward(unpack(theta, shapes), batch, check_positive_int(h, "h"))
    log_p = _log_softmax(f["logits"], axis=2)  # (M, n_keys, 16, B)
    losses = -np.take_along_axis(log_p, _t(batch.answers)[:, :, None], axis=2)[:, :, 0]  # (M, n_keys, B)
    answers = f["logits"].argmax(axis=2)  # (M, n_keys, B)
    weights = f["cache"]["A"][0]  # the one head count h: (M, h, 9, B)
    return _t(answers), _t(losses), np.moveaxis(weights, -1, 1)  # (M, B, n_keys), (M, B, n_keys), (M, B, h, 9)


# ================================================================ the optimiser
def learning_rate(step, *, steps, peak=PEAK_LR, warmup=WARMUP):
    r"""The learning rate at ``step`` (counted from 0): a linear warm-up, then a cosine decay to 0.

    .. math:: \eta(s) = \begin{cases} \eta_{\max}\,(s + 1) / w & s < w \\
              \tfrac12 \eta_{\max} \big(1 + \cos(\pi\,(s + 1 - w) / (N - w))\big) & s \ge w \end{cases}

    so the warm-up reaches ``peak`` at step ``w - 1`` and the last step ``N - 1`` uses 0.

    Examples
    --------
    >>> learning_rate(0, steps=1500), learning_rate(99, steps=1500), learning_rate(1499, steps=1500)
    (3e-05, 0.003, 0.0)
    """
    if step < warmup:
        return peak * (step + 1) / warmup
    return 0.5 * peak * (1 + math.cos(math.pi * (step + 1 - warmup) / (steps - warmup)))


def adam_step(theta, grad, state, lr, betas=BETAS, eps=EPS):
    r"""One Adam update of the flat weights ``theta``, in place, with bias correction.

    .. math:: m \leftarrow \beta_1 m + (1 - \beta_1) g, \quad v \leftarrow \beta_2 v + (1 - \beta_2) g^2, \quad
              \theta \leftarrow \theta - \eta\, \frac{m / (1 - \beta_1^t)}{\sqrt{v / (1 - \beta_2^t)} + \epsilon}

    ``state`` is a dict holding ``t`` (steps taken) and the moments ``m`` and ``v`` (created on first use).
    """
    b1, b2 = betas
    t = state["t"] = state.get("t", 0) + 1
    if "m" not in state:
        state.update(m=np.zeros_like(theta), v=np.zeros_like(theta), tmp=np.empty_like(theta))  # tmp: scratch
    m, v, tmp = state["m"], state["v"], state["tmp"]
    m *= b1
    m += np.multiply(grad, 1 - b1, out=tmp)
    v *= b2
    v += np.multiply(np.multiply(grad, 1 - b2, out=tmp), grad, out=tmp)
    denominator = np.sqrt(np.divide(v, 1 - b2 ** t, out=tmp), out=tmp)
    denominator += eps  # sqrt(v / (1 - b2^t)) + eps
    theta -= np.divide(np.multiply(m, lr / (1 - b1 ** t), out=np.empty_like(m)), denominator, out=tmp)


# ================================================================ one experiment
@dataclass(frozen=True)
class LookupResult:
    """One trained model on the dictionary lookup, scored on the fixed test set.

    Attributes
    ----------
    h, d, d_k, d_v, n_keys, seed, steps : int
        The experiment.
    lr : float
        The peak learning rate.
    accuracy : float
        Fraction of all test answers that are right.
    accuracy_per_key : tuple of float
        The same for each asked slot (first key named, second, ...).
    loss : float
        Mean test cross-entropy per answer.
    train_loss : ndarray, shape (steps,)
        The training loss at every step.
    attention_on_asked : ndarray, shape (h, n_keys)
        Each head's weight on the entry holding each asked key, averaged over the test set.
    samples : LookupBatch
        The first few test lookups.
    sample_weights : ndarray, shape (n, h, 9)
        Each head's weights over the 8 entries and the query itself, for those lookups.
    sample_attention : ndarray, shape (n, h, n_keys)
        Each head's weight on the entries the query names, for those lookups.
    sample_answers : ndarray of int, shape (n, n_keys)
        The model's answers to those lookups.
    params : dict of str to ndarray
        The trained weights.
    """

    h: int
    d: int
    d_k: int
    d_v: int
    n_keys: int
    seed: int
    steps: int
    lr: float
    accuracy: float
    accuracy_per_key: tuple
    loss: float
    train_loss: np.ndarray
    attention_on_asked: np.ndarray
    samples: LookupBatch
    sample_weights: np.ndarray
    sample_attention: np.ndarray
    sample_answers: np.ndarray
    params: dict


def _check_shape(h, d, d_k, n_keys):
    h, d = check_positive_int(h, "h"), check_positive_int(d, "d")
    if d % h:
        raise ValueError(f"h={h} must divide the width d={d} (every head gets d_v = d/h value columns)")
    d_k = d // h if d_k is None else check_positive_int(d_k, "d_k")
    n_keys = check_positive_int(n_keys, "n_keys")
    if n_keys > N_ENTRIES:
        raise ValueError(f"n_keys={n_keys} asks for more keys than the {N_ENTRIES} entries hold")
    return h, d, d_k, n_keys


def _score(theta, shapes, h, n_keys):
    """Each model's accuracy per key ``(M, n_keys)``, mean loss ``(M,)`` and mean weight on the asked entries."""
    test, M = test_set(n_keys), theta.shape[0]
    right, losses, on_asked = [], [], []
    for start in range(0, TEST_SIZE, 1024):
        part = LookupBatch(*(np.broadcast_to(a[start:start + 1024], (M, *a[start:start + 1024].shape))
                             for a in (test.keys, test.values, test.asked)))
        answers, loss, weights = predict(theta, shapes, part, h)
        right.append(answers == part.answers)  # (M, b, n_keys)
        losses.append(loss)
        on_asked.append(np.take_along_axis(weights, part.asked[:, :, None, :], axis=-1))  # (M, b, h, n_keys)
    right, losses, on_asked = (np.concatenate(x, axis=1) for x in (right, losses, on_asked))
    return right.mean(axis=1), losses.mean(axis=(1, 2)), on_asked.mean(axis=1)


@functools.lru_cache(maxsize=4)
def _training_lookups(seed, steps, n_keys, chunk=100):
    """Every training lookup of seed ``seed``, ``steps * 256`` of them (read-only, small integers).

    Drawn ``chunk`` batches at a time from the second stream of
    ``numpy.random.SeedSequence(seed).spawn(2)``. Kept for the few most recent
    seeds: models with other head counts but the same seed train on the same
    lookups without drawing them again.
    """
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1])
    fields = {f: np.empty((steps * BATCH, n), np.uint8) for f, n in
              (("keys", N_ENTRIES), ("values", N_ENTRIES), ("asked", n_keys))}
    for start in range(0, steps, chunk):
        rows = slice(start * BATCH, min(start + chunk, steps) * BATCH)
        draw = lookup_batch(rng, rows.stop - rows.start, n_keys)
        for f, a in fields.items():
            a[rows] = getattr(draw, f)  # numbers below 16 fit in uint8
    for a in fields.values():
        a.setflags(write=False)
    return LookupBatch(**fields)


def _batches(seeds, steps, n_keys):
    """``steps`` batches ``(M, B, ...)`` of fresh lookups, model ``m`` reading the stream of ``seeds[m]``."""
    streams = [_training_lookups(seed, steps, n_keys) for seed in seeds]
    keys, values, asked = (np.stack([getattr(s, f) for s in streams]).reshape(len(seeds), steps, BATCH, -1)
                           for f in ("keys", "values", "asked"))  # (M, steps, B, ·)
    asked_keys, answers = (np.take_along_axis(a, asked, axis=-1) for a in (keys, values))  # once for all steps
    for step in range(steps):
        batch = LookupBatch(keys[:, step], values[:, step], asked[:, step])
        batch.__dict__.update(asked_keys=asked_keys[:, step], answers=answers[:, step])  # the cached properties
        yield batch


def train(h, *, d=16, d_k=None, n_keys=2, seeds=(0,), steps=1500, lr=PEAK_LR):
    """Train one model per seed, side by side; return their flat weights, the layout and the losses.

    Seed ``s`` draws its starting weights and its training lookups from the two
    streams of ``numpy.random.SeedSequence(s).spawn(2)``, so a model depends
    only on its own seed. Parameters are those of :func:`dictionary_lookup`.

    Returns
    -------
    theta : ndarray, shape (M, P)
    shapes : dict of str to tuple
    train_loss : ndarray, shape (M, steps)
    """
    h, shapes, seeds, steps, lr = _check_setting(h, d, d_k, n_keys, seeds, steps, lr)
    theta, train_loss = _train_models((h,), shapes, seeds, steps, lr)
    return theta, shapes, train_loss


def _check_setting(h, d, d_k, n_keys, seeds, steps, lr):
    """One experiment's arguments, checked: ``h``, the weights' shapes, ``seeds``, ``steps``, ``lr``."""
    h, d, d_k, n_keys = _check_shape(h, d, d_k, n_keys)
    seeds = check_counts(seeds, "seeds")
    steps = check_positive_int(steps, "steps")
    lr = check_number(lr, "lr", low=0.0, low_open=True, high=1.0)
    return h, param_shapes(h, d, d_k, n_keys), seeds, steps, lr


def _train_models(hs, shapes, seeds, steps, lr):
    """Train, for every seed, one model per head count in ``hs`` (all with weights of ``shapes``), side by side.

    Row ``s G + g`` of the results is seed ``seeds[s]`` with ``hs[g]`` heads
    (``G = len(hs)``). The models of one seed start from the same weights and
    read the same lookups, so they share the products of its one-hots
    (:func:`_query_layer`); each model's numbers are the ones it gets when
    trained alone (``tests/test_training.py`` checks it).

    Returns
    -------
    theta : ndarray, shape (N G, P)
    train_loss : ndarray, shape (N G, steps)
    """
    inits = [np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[0]) for seed in seeds]
    theta = np.repeat(np.stack([init_params(rng, shapes) for rng in inits]), len(hs), axis=0)  # (N G, P)
    grad = np.empty_like(theta)
    w, g = unpack(theta, shapes), unpack(grad, shapes)  # views, made once: the steps write theta and grad in place
    ws = _Workspace(theta.shape[0], shapes["W_K"][1] + shapes["W_V"][1], shapes["W_Q"][1], hs, BATCH, theta.dtype)
    state, train_loss = {}, np.empty((theta.shape[0], steps))
    warmup = min(WARMUP, max(steps - 1, 1))
    with threadpool_limits(1, user_api="blas"):
        for step, batch in enumerate(_batches(seeds, steps, shapes["R"][0])):
            train_loss[:, step] = _loss_and_grads(w, g, batch, hs, ws)
            adam_step(theta, grad, state, learning_rate(step, steps=steps, peak=lr, warmup=warmup))
    return theta, train_loss


def dictionary_lookups(h, *, d=16, d_k=None, n_keys=2, seeds=(0, 1, 2), steps=1500, lr=PEAK_LR):
    """:func:`dictionary_lookup` for several seeds, trained side by side (faster than one by one).

    Returns
    -------
    list of LookupResult
        One per seed, in order.
    """
    h, shapes, seeds, steps, lr = _check_setting(h, d, d_k, n_keys, seeds, steps, lr)
    theta, train_loss = _train_models((h,), shapes, seeds, steps, lr)
    return _scored(theta, shapes, train_loss, h, seeds, steps, lr)


def _scored(theta, shapes, train_loss, h, seeds, steps, lr):
    """The :class:`LookupResult` of each trained model ``theta[m]`` (seed ``seeds[m]``, ``h`` heads)."""
    d, n_keys = shapes["E"][1], shapes["R"][0]
    d_k = shapes["W_Q"][1] // h
    test = test_set(n_keys)
    samples = LookupBatch(*(np.broadcast_to(a[:N_SAMPLES], (theta.shape[0], N_SAMPLES, a.shape[1]))
                            for a in (test.keys, test.values, test.asked)))
    with threadpool_limits(1, user_api="blas"):
        per_key, test_loss, on_asked = _score(theta, shapes, h, n_keys)
        answers, _, weights = predict(theta, shapes, samples, h)
    sample_attention = np.take_along_axis(weights, samples.asked[:, :, None, :], axis=-1)  # (M, n, h, n_keys)
    views = unpack(theta, shapes)
    return [LookupResult(h=h, d=d, d_k=d_k, d_v=d // h, n_keys=n_keys, seed=int(seed), steps=int(steps),
                         lr=float(lr), accuracy=float(per_key[m].mean()), accuracy_per_key=tuple(float(a) for a in per_key[m]),
                         loss=float(test_loss[m]), train_loss=train_loss[m], attention_on_asked=on_asked[m],
                         samples=LookupBatch(test.keys[:N_SAMPLES], test.values[:N_SAMPLES],
                                             test.asked[:N_SAMPLES]),
                         sample_weights=weights[m], sample_attention=sample_attention[m],
                         sample_answers=answers[m], params={k: v[m].copy() for k, v in views.items()})
            for m, seed in enumerate(seeds)]


def dictionary_lookup(h, *, d=16, d_k=None, n_keys=2, seed=0, steps=1500, lr=PEAK_LR):
    """Train ``h`` heads on the dictionary lookup and score them on the fixed test set.

    Parameters
    ----------
    h : int
        Number of heads; must divide ``d`` (values have width ``d_v = d / h``).
    d : int
        Model width.
    d_k : int, optional
        Width of each query/key head (default ``d / h``, so every ``h`` has the same parameters).
    n_keys : int
        Keys the query names (1 to 8); the model answers each.
    seed : int
        Seeds the starting weights and the training batches; the same seed gives the same result.
    steps : int
        Adam steps, each on 256 fresh lookups.
    lr : float
        Peak learning rate of the schedule (:func:`learning_rate`).

    Returns
    -------
    LookupResult

    Examples
    --------
    >>> r = dictionary_lookup(2, steps=3)
    >>> r.d_k, len(r.accuracy_per_key), r.sample_weights.shape
    (8, 2, (4, 2, 9))
    """
    return dictionary_lookups(h, d=d, d_k=d_k, n_keys=n_keys, seeds=(check_count(seed, "seed"),), steps=steps,
                              lr=lr)[0]


def head_sweep(hs, *, seed=0, processes=1, **setting):
    """One :func:`dictionary_lookup` per head count in ``hs``, all else equal, trained side by side where they can be.

    Parameters
    ----------
    hs : sequence of int
        The head counts.
    seed : int
        The seed of every model.
    processes : int
        As in :func:`lookup_sweep`.
    **setting
        ``d``, ``d_k``, ``n_keys``, ``steps``, ``lr``, as in :func:`dictionary_lookup`.

    Returns
    -------
    list of LookupResult
        One per head count, in order; each the same as :func:`dictionary_lookup` gives.

    Examples
    --------
    >>> [(r.h, r.d_k) for r in head_sweep((1, 4), n_keys=1, steps=3)]
    [(1, 16), (4, 4)]
    """
    if isinstance(hs, (str, bytes)) or not hasattr(hs, "__iter__"):
        raise TypeError(f"hs must be a sequence of head counts, got {type(hs).__name__}")
    if "h" in setting or "seeds" in setting:
        raise TypeError("head_sweep takes the head counts as hs and one seed as seed, not h or seeds")
    hs = list(hs)
    if not hs:
        raise ValueError("hs is empty: give at least one head count")
    seeds = (check_count(seed, "seed"),)
    return [rs[0] for rs in lookup_sweep([{**setting, "h": h, "seeds": seeds} for h in hs], processes=processes)]


_SETTINGS = ("h", "d", "d_k", "n_keys", "seeds", "steps", "lr")
_DEFAULTS = {name: p.default for name, p in inspect.signature(dictionary_lookups).parameters.items()
             if p.default is not inspect.Parameter.empty}  # d, d_k, n_keys, seeds, steps, lr


def _checked(setting):
    """A setting of :func:`lookup_sweep` with its defaults filled in, checked (:func:`_check_setting`)."""
    return _check_setting(**{**_DEFAULTS, **setting})


def _cost(settings, job):
    """A rough guess of a job's training time, to hand the longest jobs out first and to balance them.

    In units of one column of one model's keys and values for one step: each
    step costs about 24 of them whatever it trains, each model 13 more, and
    its ``c = h d_k + d`` columns (fitted to the job times of chapter 05's
    sweep on the book's machine, to within about 15 %).
    """
    indices, positions = job
    columns = [sum(_checked(settings[i])[1][w][1] for w in ("W_K", "W_V")) for i in indices]
    return _checked(settings[indices[0]])[3] * (24 + len(positions) * sum(13 + c for c in columns))


def _usable_cpus():
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


#: The default ``job_bytes`` of :func:`lookup_sweep`: the largest keys-and-values array, in bytes, that one
#: step of a job works on (``_query_layer``'s ``KV``: N G models x c columns x 9 tokens x 256 lookups,
#: float32); the step's other arrays are about as large again. Beyond it they outgrow a core's cache (2 MiB of L2 on the book's machine), and the
#: step slows down, most of all when the machine is busy. There, one step of five head counts with
#: three seeds stacked (4.4 MiB) took 0.83-0.97 ms per model, one seed at a time (1.4 MiB) 0.48-0.55 ms;
#: on a quiet machine, 0.48-0.54 against 0.57-0.61 ms. Chapter 05's sweep on the busy machine:
#: 13.3-14.3 s (2 processes) with its jobs cut at this size, 15.9-17.0 s without
#: (``benchmarks/bench_training.py section``). On a 2-core AMD EPYC (1 MiB of L2) the stacked step
#: was slow for another reason: about 2,500 page faults per step (9-10 ms of system time in a 20-23 ms
#: step), as the C library handed its large arrays back to the system after each step and took them
#: again; cut at this size, 5 per step. Now that a run makes its arrays once (:class:`_Workspace`), the
#: stacked step faults 44 times a step there, and the chapter's sweep took the same time cut or not
#: (14.5-15.1 s against 14.8-15.1 s wall, 2 processes).
JOB_BYTES = 3 * 2**19


def _job_bytes(settings, job):
    """The size of a job's ``KV`` array: its models (settings x seeds) times their columns (:func:`_query_layer`)."""
    indices, positions = job
    shapes = _checked(settings[indices[0]])[1]
    columns = shapes["W_K"][1] + shapes["W_V"][1]
    return len(indices) * len(positions) * columns * (N_ENTRIES + 1) * BATCH * np.dtype(DTYPE).itemsize


def _halves(job):
    """A job cut in two: by seeds if it has several, else by settings."""
    indices, positions = job
    if len(positions) > 1:
        return [(indices, positions[:len(positions) // 2]), (indices, positions[len(positions) // 2:])]
    return [(indices[:len(indices) // 2], positions), (indices[len(indices) // 2:], positions)]


def _jobs(settings, processes, job_bytes=JOB_BYTES):
    """The settings, grouped into jobs of models that train side by side: ``(indices, seed positions)``.

    Settings whose weights have the same shapes and that read the same
    lookups (same seeds, steps, learning rate) train as one grid
    (:func:`_train_models`), on some or all of their seeds (positions in
    their ``seeds``). A job whose step would work on more than
    ``job_bytes`` of keys and values is cut in two, by seeds first; then,
    while the largest job would take more than its share of the processes'
    time, it is cut in two as well.
    """
    groups = {}
    for i, s in enumerate(settings):
        h, shapes, seeds, steps, lr = _checked(s)
        groups.setdefault((tuple(shapes.items()), tuple(seeds), steps, lr), []).append(i)
    jobs = [(tuple(indices), tuple(range(len(key[1])))) for key, indices in groups.items()]
    cuttable = lambda job: len(job[0]) > 1 or len(job[1]) > 1
    while big := [j for j in jobs if cuttable(j) and _job_bytes(settings, j) > job_bytes]:
        jobs.remove(big[0])
        jobs += _halves(big[0])
    cost = functools.partial(_cost, settings)
    share = lambda: sum(cost(j) for j in jobs) / processes
    while any(cuttable(j) and cost(j) > share() for j in jobs):
        big = max((j for j in jobs if cuttable(j)), key=cost)
        jobs.remove(big)
        jobs += _halves(big)
    return sorted(jobs, key=cost, reverse=True)  # the longest first


def _job_settings(settings, job):
    """The settings of a job, each with only the job's seeds."""
    indices, positions = job
    return [{**settings[i], "seeds": tuple(_checked(settings[i])[2][p] for p in positions)} for i in indices]


def _run_job(settings):
    """Train the settings of one job (:func:`_jobs`) side by side; one list of results per setting."""
    checked = [_checked(s) for s in settings]
    hs = tuple(c[0] for c in checked)
    _, shapes, seeds, steps, lr = checked[0]
    theta, train_loss = _train_models(hs, shapes, seeds, steps, lr)
    return [_scored(theta[g::len(hs)], shapes, train_loss[g::len(hs)], h, seeds, steps, lr) for g, h in enumerate(hs)]


@contextlib.contextmanager
def _own_resource_tracker():
    """Stop multiprocessing's resource tracker on the way out, if it was not running on the way in.

    Starting ``spawn`` workers starts a tracker process, which ignores SIGTERM.
    A Jupyter kernel that has one takes seconds to shut down (ipykernel asks
    its children to stop, waits, then kills them), which adds about 2.4 s to a
    notebook's run at build time. The tracker we started holds nothing once
    the workers are gone, so it is stopped; a tracker that was already running
    is left alone.
    """
    from multiprocessing import resource_tracker

    tracker = resource_tracker._resource_tracker
    ours = getattr(tracker, "_fd", None) is None and callable(getattr(tracker, "_stop", None))
    try:
        yield
    finally:
        if ours:
            tracker._stop()


def lookup_sweep(settings, *, processes=1, job_bytes=JOB_BYTES):
    """Several experiments of :func:`dictionary_lookups`, here or in worker processes.

    Parameters
    ----------
    settings : sequence of dict
        The keyword arguments of :func:`dictionary_lookups` for each experiment
        (``h`` is required; ``d``, ``d_k``, ``n_keys``, ``seeds``, ``steps``, ``lr`` optional).
    processes : int
        How many worker processes to train in, at most one per CPU this process
        may use. 1 trains them here, one after another. Workers are fresh
        Python processes (``spawn``; a script that calls this needs the
        ``if __name__ == "__main__":`` guard), each with one BLAS thread. A
        result depends only on its setting, so every value of ``processes``
        gives the same numbers. If workers cannot be started, the experiments
        run here.
    job_bytes : float
        The largest keys-and-values array, in bytes, that one step of a job
        may work on (default :data:`JOB_BYTES`); a larger grid trains some of
        its seeds at a time. ``math.inf`` never cuts a grid by size. It
        changes how the work is grouped, never a result.

    Settings whose weights have the same shapes and that read the same
    lookups (the same ``seeds``, ``steps`` and ``lr``), for example every
    ``h`` with ``d_k = d / h``, train side by side in one process and share
    the products of their one-hots; a grid too large for a core's cache
    (``job_bytes``) trains some of its seeds at a time. Each model still
    gets the numbers it gets alone.

    Returns
    -------
    list of list of LookupResult
        For each setting, in order, one result per seed.

    Examples
    --------
    >>> runs = lookup_sweep([{"h": 1, "seeds": (0,), "steps": 3}, {"h": 2, "seeds": (0, 1), "steps": 3}])
    >>> [[r.h for r in rs] for rs in runs]
    [[1], [2, 2]]
    """
    if isinstance(settings, (str, bytes, dict)) or not hasattr(settings, "__iter__"):
        raise TypeError(f"settings must be a sequence of dicts of keyword arguments, got {type(settings).__name__}")
    settings = [dict(s) if isinstance(s, dict) else s for s in settings]
    for i, s in enumerate(settings):
        if not isinstance(s, dict) or "h" not in s or set(s) - set(_SETTINGS):
            raise ValueError(f"settings[{i}] must be a dict with 'h' and only the keys {', '.join(_SETTINGS)}; "
                             f"got {s!r}")
        _checked(s)  # every argument checked here, before any worker starts
    processes = min(check_positive_int(processes, "processes"), _usable_cpus())
    job_bytes = check_number(job_bytes, "job_bytes", low=0, low_open=True, finite=False)
    jobs = _jobs(settings, processes, job_bytes)
    done = {}  # job -> one list of results per setting
    if processes > 1 and len(jobs) > 1:
        import concurrent.futures
        import multiprocessing

        try:
            with _own_resource_tracker(), concurrent.futures.ProcessPoolExecutor(
                    min(processes, len(jobs)), mp_context=multiprocessing.get_context("spawn")) as pool:
                futures = [pool.submit(_run_job, _job_settings(settings, job)) for job in jobs]
                done = {job: future.result() for job, future in zip(jobs, futures)}
        except (OSError, concurrent.futures.process.BrokenProcessPool):
            done = {}
    for job in jobs:
        if job not in done:  # here: one process, or workers could not be started
            done[job] = _run_job(_job_settings(settings, job))
    by_seed = {}  # (setting, seed position) -> result
    for (indices, positions), results in done.items():
        for i, per_seed in zip(indices, results):
            by_seed.update(((i, p), r) for p, r in zip(positions, per_seed))
    return [[by_seed[i, p] for p in range(len(_checked(s)[2]))] for i, s in enumerate(settings)]
