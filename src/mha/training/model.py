r"""The model, its loss and its gradients, in NumPy: one attention layer of ``h`` heads, read by linear readouts.

Width ``d``. An entry is embedded as ``E_key[k] + E_val[v]``; the query as
``E_ask[0][k_0] + E_ask[1][k_1] + ...`` (one table per asked slot); there
are no positions, since the lookup is by content. One attention layer of
``h`` heads of width ``d_k``, values of width ``d_v = d / h``, in which only
the query token asks: its one query row attends over the 8 entries and
itself, the last row of :func:`mha.multi_head_attention` on the 9 tokens.
The heads' output, through ``W_O``, is added to the query (a residual) and
read by one linear readout ``d -> 16`` (with a bias) per asked key. The
gradients follow :func:`mha.backward.attend_backward` step by step.
Embeddings start as N(0, 1), projections as N(0, 1/fan_in), biases at 0.
Everything is float32.

The layer and its backward pass are written once more here, for the one
query row and with the batch axis last (``_query_layer``): the model is so
small (256 lookups of 9 tokens of width 16) that NumPy's cost per call, not
the arithmetic, sets the speed. The tests check both against
:func:`mha.multi_head_attention` and :func:`mha.attention_backward`.
Models whose weights have the same shapes train side by side in one grid,
share the products of each seed's one-hots and one softmax call for all
their heads; :class:`Workspace` holds one step's arrays and
:func:`loss_and_grads_into` is the step a training run repeats
(:mod:`mha.training.run`).
"""

from __future__ import annotations

import functools
import math
import typing

import numpy as np

from .._validate import as_float_array, check_generator, check_positive_int, require_finite
from .task import N_ENTRIES, N_SYMBOLS, check_batch, check_n_keys

__all__ = ["DTYPE", "Workspace", "check_layout", "init_params", "loss_and_grads", "loss_and_grads_into",
           "param_shapes", "predict", "unpack"]

DTYPE = np.float32  # every model's weights and activations


# Every array below carries a leading axis M: models trained side by side, M = N G for N seeds and G head
# counts (model s G + g is seed s with the g-th head count). Each seed has its own batches, which its G
# models share. The models' numbers never mix; stacking only shares NumPy's per-call cost between them.
def param_shapes(h, d, d_k, n_keys):
    """The model's weights by name, with their shapes (``d_v = d / h``).

    ``E`` is one table of token embeddings: rows 0-15 the keys of entries,
    16-31 their values, then 16 rows for each asked slot (``32 + 16 j + k`` is
    key ``k`` named in slot ``j``). A token is the sum of its rows.
    ``h`` must divide ``d``; ``d_k`` and ``n_keys`` (1 to 8) are positive.

    Examples
    --------
    >>> param_shapes(2, 8, 4, 1)["W_V"]
    (8, 8)
    """
    h, d, d_k, n_keys = (check_positive_int(v, name) for v, name in ((h, "h"), (d, "d"), (d_k, "d_k"),
                                                                      (n_keys, "n_keys")))
    check_n_keys(n_keys)
    if d % h:
        raise ValueError(f"h={h} must divide the width d={d} (every head gets d_v = d/h value columns)")
    d_v = d // h
    return {"E": (2 * N_SYMBOLS + n_keys * N_SYMBOLS, d), "W_Q": (d, h * d_k), "W_K": (d, h * d_k),
            "W_V": (d, h * d_v), "W_O": (h * d_v, d), "R": (n_keys, d, N_SYMBOLS), "c": (n_keys, N_SYMBOLS)}


def check_layout(shapes, h=None) -> int:
    """Check that ``shapes`` is a layout of :func:`param_shapes` (of ``h`` heads, if given); return its size ``P``."""
    if not isinstance(shapes, dict) or list(shapes) != _NAMES:
        raise TypeError(f"shapes must be the dict of param_shapes(h, d, d_k, n_keys), with the names {_NAMES}; "
                        f"got {shapes!r:.80}")
    for name, shape in shapes.items():
        if not isinstance(shape, tuple) or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1
                                                   for n in shape):
            raise TypeError(f"shapes[{name!r}] must be a tuple of positive ints, got {shape!r:.60}")
    d, n_keys, hd_k = shapes["E"][-1], shapes["c"][0], shapes["W_Q"][-1]
    h0 = 1 if h is None else check_positive_int(h, "h")
    what = f"for h = {h}" if h is not None else "of param_shapes(h, d, d_k, n_keys)"
    if hd_k % h0 or d % h0 or shapes != param_shapes(h0, d, hd_k // h0, n_keys):
        raise ValueError(f"shapes do not fit together as a layout {what}: got {shapes}")
    return sum(math.prod(shape) for shape in shapes.values())


_NAMES = ["E", "W_Q", "W_K", "W_V", "W_O", "R", "c"]


def _check_theta(theta, shapes, h=None, *, finite=True):
    """``theta`` as a float array ``(M, P)`` laid out by ``shapes`` (finite, unless it is to be written)."""
    P = check_layout(shapes, h)
    if not isinstance(theta, np.ndarray):
        raise TypeError(f"theta must be a NumPy array (M, P) of the models' flat weights, got {type(theta).__name__}")
    if theta.dtype.kind != "f":
        raise TypeError(f"theta must hold floats (the models' flat weights), got dtype {theta.dtype} "
                        f"with shape {theta.shape}")
    if finite:
        as_float_array(theta, "theta")
    if theta.ndim != 2 or theta.shape[1] != P or theta.shape[0] == 0:
        raise ValueError(f"theta must be (M, P) with P = {P} weights per model for these shapes, got {theta.shape}")
    return theta


def unpack(theta, shapes):
    """Views of the flat weights ``theta`` ``(M, P)``, one ``(M, *shape)`` per name (writing one writes ``theta``).

    ``theta`` may be a gradient still to be written: its values are not checked, its shape and type are.
    """
    theta = _check_theta(theta, shapes, finite=False)
    return _views(theta, shapes)


def _views(theta, shapes):
    views, start = {}, 0
    for name, shape in shapes.items():
        size = math.prod(shape)
        views[name] = theta[:, start:start + size].reshape(theta.shape[0], *shape)
        start += size
    return views


def init_params(rng, shapes, dtype=DTYPE):
    """Fresh weights of one model as a flat vector: embeddings N(0, 1), projections N(0, 1/fan_in), biases 0."""
    check_generator(rng)
    check_layout(shapes)
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a float type such as np.float32, got {dtype!r:.60}") from None
    if dtype.kind != "f":
        raise TypeError(f"dtype must be a float type such as np.float32, got {dtype}")
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
    ws : Workspace, optional
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
    ws = ws or Workspace(M, c, w["W_Q"].shape[-1], hs, B, W_KV.dtype)
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


class Workspace:
    """The arrays of one step of a grid (:func:`_query_layer` and its backward), with each model's views of them.

    A training run makes one and reuses it at every step, so the arrays and
    their views are made once, not once per step. Each step writes every
    entry it reads.

    Parameters
    ----------
    M : int
        Models side by side, ``N G``: ``N`` seeds times the ``G`` head counts of ``hs``.
    c : int
        Columns of keys and values of each model, ``h d_k + d``.
    hd_k : int
        Query columns of each model, ``h d_k``.
    hs : tuple of int
        The head counts of the ``G`` models of each seed (as in :func:`_query_layer`).
    B : int
        Lookups in a batch.
    dtype : numpy dtype
        The weights' dtype.
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
    h = check_positive_int(h, "h")
    theta = _check_theta(theta, shapes, h)
    check_batch(batch, shapes["R"][0], theta.shape[0])
    grad = np.empty_like(theta)
    with np.errstate(over="ignore", invalid="ignore"):
        loss = loss_and_grads_into(_views(theta, shapes), _views(grad, shapes), batch, h)
    require_finite(("the loss", loss), ("the gradient", grad))
    return loss, grad


def loss_and_grads_into(w, g, batch, hs, ws=None):
    """:func:`loss_and_grads` on views: the weights ``w``, and ``g`` into which the gradient is written.

    The step a training run repeats, unchecked (a run checks its setting once); models with other head counts but
    weights of the same shapes train side by side in it.

    Parameters
    ----------
    w, g : dict of str to ndarray
        Views of the flat weights and of the flat gradient (:func:`unpack`), each ``(M, ...)``;
        ``g`` is overwritten.
    batch : LookupBatch
        Arrays ``(N, B, ...)``: one batch per seed, read by the ``G`` models of that seed.
    hs : int or tuple of int
        The head counts of the ``G`` models of each seed (``M = N G``), as in :func:`_query_layer`.
    ws : Workspace, optional
        The step's arrays, made once per training run; made here if not given.

    Returns
    -------
    loss : ndarray, shape (M,)
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
    h = check_positive_int(h, "h")
    theta = _check_theta(theta, shapes, h)
    check_batch(batch, shapes["R"][0], theta.shape[0])
    with np.errstate(over="ignore", invalid="ignore"):
        return _predict(theta, shapes, batch, h)


def _predict(theta, shapes, batch, h):
    f = _forward(_views(theta, shapes), batch, h)
    log_p = _log_softmax(f["logits"], axis=2)  # (M, n_keys, 16, B)
    losses = -np.take_along_axis(log_p, _t(batch.answers)[:, :, None], axis=2)[:, :, 0]  # (M, n_keys, B)
    answers = f["logits"].argmax(axis=2)  # (M, n_keys, B)
    weights = f["cache"]["A"][0]  # the one head count h: (M, h, 9, B)
    require_finite(("the losses", losses), ("the weights", weights))
    return _t(answers), _t(losses), np.moveaxis(weights, -1, 1)  # (M, B, n_keys), (M, B, n_keys), (M, B, h, 9)
