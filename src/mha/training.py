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
entries and itself (:func:`mha.split_heads`,
:func:`mha.scaled_dot_product_attention`, :func:`mha.merge_heads`; the same
numbers as the last row of :func:`mha.multi_head_attention` on the 9 tokens).
The heads' output, through ``W_O``, is added to the query (a residual) and
read by one linear readout ``d -> 16`` (with a bias) per asked key. The
heads' gradients come from :func:`mha.backward.attend_backward`.

**Training.** Adam (0.9, 0.999, 1e-8), peak learning rate 3e-3, 100 warm-up
steps then a cosine decay to 0 (:func:`learning_rate`), batches of 256 fresh
samples, the mean cross-entropy over the answers. Embeddings start as
N(0, 1), projections as N(0, 1/fan_in), biases at 0. Everything is float32.
The score is the accuracy on one fixed test set of 8192 samples.

:func:`dictionary_lookup` runs one experiment and is deterministic per seed.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from threadpoolctl import threadpool_limits  # the products here are tiny: BLAS threads cost more than they save

from ._validate import check_count, check_counts, check_number, check_positive_int
from .attention import merge_heads, scaled_dot_product_attention, split_heads
from .backward import attend_backward

__all__ = ["LookupBatch", "LookupResult", "adam_step", "dictionary_lookup", "init_params", "learning_rate",
           "lookup_batch", "loss_and_grads", "dictionary_lookups", "param_shapes", "predict", "test_set", "train", "unpack"]

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

    @property
    def asked_keys(self):
        """The keys the query names, ``(B, n_keys)``."""
        return np.take_along_axis(self.keys, self.asked, axis=-1)

    @property
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
# Every array below carries a leading axis M: models trained side by side (one per seed), each on its
# own batches. Their numbers never mix; stacking only shares NumPy's per-call cost between them.
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


def _embed(E, batch):
    """The 9 tokens of every lookup, each the sum of its rows of ``E``: ``(M, B, 9, d)``."""
    M, B, n_keys = batch.asked.shape
    model = np.arange(M)[:, None, None]  # (M, 1, 1): each model reads its own table
    entries = E[model, batch.keys] + E[model, N_SYMBOLS + batch.values]  # (M, B, 8, d)
    slots = 2 * N_SYMBOLS + N_SYMBOLS * np.arange(n_keys)  # the first row of each asked slot
    query = E[model, slots + batch.asked_keys].sum(axis=2)  # (M, B, n_keys, d) -> (M, B, d)
    return np.concatenate([entries, query[:, :, None]], axis=2)  # (M, B, 9, d)


def _embed_backward(dX, batch, dE):
    """Add each token's gradient to the rows of ``E`` it was made of, into ``dE`` ``(M, n_codes, d)``."""
    M, B, n_keys = batch.asked.shape
    one_hot = np.eye(N_SYMBOLS, dtype=dX.dtype)
    d_entries = dX[:, :, :-1].reshape(M, -1, dX.shape[-1])  # (M, 8B, d)
    dE[:, :N_SYMBOLS] = _t(one_hot[batch.keys.reshape(M, -1)]) @ d_entries  # (M, 16, 8B) @ (M, 8B, d)
    dE[:, N_SYMBOLS:2 * N_SYMBOLS] = _t(one_hot[batch.values.reshape(M, -1)]) @ d_entries
    asked = one_hot[batch.asked_keys]  # (M, B, n_keys, 16)
    for j in range(n_keys):
        rows = slice(2 * N_SYMBOLS + N_SYMBOLS * j, 2 * N_SYMBOLS + N_SYMBOLS * (j + 1))
        dE[:, rows] = _t(asked[:, :, j]) @ dX[:, :, -1]  # (M, 16, B) @ (M, B, d) -> (M, 16, d)


def _project(X, W):
    """Each model's tokens times its weights, as one product per model: ``(M, ..., d), (M, d, k) -> (M, ..., k)``."""
    M, d, k = W.shape
    return (X.reshape(M, -1, d) @ W).reshape(*X.shape[:-1], k)


def _t(M):
    """Swap the last two axes."""
    return np.swapaxes(M, -1, -2)


def _forward(w, batch, h):
    """The layer for the query token only: it asks, the 8 entries and the query itself answer."""
    X = _embed(w["E"], batch)  # (M, B, 9, d)
    x_q = X[:, :, -1:]  # the query token: (M, B, 1, d)
    Q = split_heads(_project(x_q, w["W_Q"]), h)  # (M, B, 1, h*d_k) -> (M, B, h, 1, d_k)
    K = split_heads(_project(X, w["W_K"]), h)  # (M, B, 9, h*d_k) -> (M, B, h, 9, d_k)
    V = split_heads(_project(X, w["W_V"]), h)  # (M, B, 9, h*d_v) -> (M, B, h, 9, d_v)
    Z, A = scaled_dot_product_attention(Q, K, V)  # (M, B, h, 1, d_v), (M, B, h, 1, 9)
    concat = merge_heads(Z)[:, :, 0]  # (M, B, h, 1, d_v) -> (M, B, h*d_v)
    z = x_q[:, :, 0] + concat @ w["W_O"]  # the query plus what its heads read (a residual): (M, B, d)
    logits = z[:, None] @ w["R"] + w["c"][..., None, :]  # (M, 1, B, d) @ (M, n_keys, d, 16) -> (M, n_keys, B, 16)
    return {"X": X, "Q": Q, "K": K, "V": V, "A": A, "concat": concat, "z": z, "logits": logits}


def _log_softmax(logits):
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def _joined(M):
    """``(..., h, S, w) -> (..., S, h*w)``: heads side by side again."""
    *lead, h, S, w = M.shape
    return np.swapaxes(M, -3, -2).reshape(*lead, S, h * w)


def loss_and_grads(theta, shapes, batch, h):
    r"""Each model's mean cross-entropy over the answers of its batch, and its gradient for every weight.

    .. math:: L = -\frac{1}{B\,n}\sum_{b, j} \log p_{bj}(\text{answer}_{bj}), \qquad
              \frac{\partial L}{\partial \text{logits}_{bj}} = \frac{p_{bj} - \text{onehot}(\text{answer}_{bj})}{B\,n}

    The heads' part of the gradient is :func:`mha.backward.attend_backward`.

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
    w = unpack(theta, shapes)
    f = _forward(w, batch, h)
    X, z = f["X"], f["z"]
    M, n_keys, B, n_out = f["logits"].shape
    grad = np.empty_like(theta)
    g = unpack(grad, shapes)
    log_p = _log_softmax(f["logits"])  # (M, n_keys, B, 16)
    target = np.eye(n_out, dtype=log_p.dtype)[_t(batch.answers)]  # one-hot answers: (M, n_keys, B, 16)
    loss = -(log_p * target).sum(axis=(1, 2, 3)) / (B * n_keys)  # (M,)
    dlogits = (np.exp(log_p) - target) / (B * n_keys)  # (M, n_keys, B, 16)
    g["R"][...] = _t(z)[:, None] @ dlogits  # (M, 1, d, B) @ (M, n_keys, B, 16) -> (M, n_keys, d, 16)
    g["c"][...] = dlogits.sum(axis=2)  # (M, n_keys, 16)
    dz = (dlogits @ _t(w["R"])).sum(axis=1)  # (M, n_keys, B, 16) @ (M, n_keys, 16, d) -> (M, B, d)
    g["W_O"][...] = _t(f["concat"]) @ dz  # (M, h*d_v, B) @ (M, B, d) -> (M, h*d_v, d)
    dZ = (dz @ _t(w["W_O"])).reshape(M, B, h, 1, -1)  # (M, B, d) -> (M, B, h*d_v) -> (M, B, h, 1, d_v)
    dQ, dK, dV = attend_backward(f["Q"], f["K"], f["V"], f["A"], dZ)  # (M, B, h, 1, d_k), (M, B, h, 9, ·)
    dQ, dK, dV = dQ.reshape(M, B, -1), _joined(dK), _joined(dV)  # (M, B, h*d_k), (M, B, 9, h*d_k), (M, B, 9, h*d_v)
    tokens = X.reshape(M, -1, X.shape[-1])  # (M, 9B, d)
    g["W_Q"][...] = _t(X[:, :, -1]) @ dQ  # (M, d, B) @ (M, B, h*d_k) -> (M, d, h*d_k)
    g["W_K"][...] = _t(tokens) @ dK.reshape(M, tokens.shape[1], -1)  # (M, d, 9B) @ (M, 9B, h*d_k)
    g["W_V"][...] = _t(tokens) @ dV.reshape(M, tokens.shape[1], -1)  # (M, d, 9B) @ (M, 9B, h*d_v)
    dX = _project(dK, _t(w["W_K"])) + _project(dV, _t(w["W_V"]))  # every token is a key and a value: (M, B, 9, d)
    dX[:, :, -1] += dQ @ _t(w["W_Q"]) + dz  # the query also asked, and is the residual: (M, B, d)
    _embed_backward(dX, batch, g["E"])  # each row of E gets the gradients of the tokens it is in
    return loss, grad


def predict(theta, shapes, batch, h):
    """Each model's answers ``(M, B, n_keys)``, losses per answer ``(M, B, n_keys)`` and query weights ``(M, B, h, 9)``."""
    f = _forward(unpack(theta, shapes), batch, h)
    log_p = _log_softmax(f["logits"])  # (M, n_keys, B, 16)
    losses = -np.take_along_axis(log_p, _t(batch.answers)[..., None], axis=-1)[..., 0]  # (M, n_keys, B)
    return _t(f["logits"].argmax(axis=-1)), _t(losses), f["A"][..., 0, :]  # (M, B, h, 1, 9) -> (M, B, h, 9)


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
    m = state.setdefault("m", np.zeros_like(theta))
    v = state.setdefault("v", np.zeros_like(theta))
    m *= b1
    m += (1 - b1) * grad
    v *= b2
    v += (1 - b2) * grad * grad
    theta -= ((lr / (1 - b1 ** t)) * m / (np.sqrt(v / (1 - b2 ** t)) + eps)).astype(theta.dtype, copy=False)


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


def _batches(rngs, steps, n_keys, chunk=100):
    """``steps`` batches ``(M, B, ...)`` of fresh lookups, model ``m`` drawing its own with ``rngs[m]``.

    Drawn ``chunk`` batches at a time (fewer, larger draws); the stream of each model depends only on its rng.
    """
    for start in range(0, steps, chunk):
        n = min(chunk, steps - start)
        draws = [lookup_batch(rng, n * BATCH, n_keys) for rng in rngs]
        keys, values, asked = (np.stack([getattr(b, f) for b in draws]) for f in ("keys", "values", "asked"))
        for i in range(n):
            part = slice(i * BATCH, (i + 1) * BATCH)
            yield LookupBatch(keys[:, part], values[:, part], asked[:, part])


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
    h, d, d_k, n_keys = _check_shape(h, d, d_k, n_keys)
    seeds = check_counts(seeds, "seeds")
    steps = check_positive_int(steps, "steps")
    lr = check_number(lr, "lr", low=0.0, low_open=True, high=1.0)
    streams = [[np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2)] for seed in seeds]
    shapes = param_shapes(h, d, d_k, n_keys)
    theta = np.stack([init_params(init, shapes) for init, _ in streams])  # (M, P)
    state, train_loss = {}, np.empty((len(seeds), steps))
    warmup = min(WARMUP, max(steps - 1, 1))
    with threadpool_limits(1, user_api="blas"):
        for step, batch in enumerate(_batches([data for _, data in streams], steps, n_keys)):
            train_loss[:, step], grad = loss_and_grads(theta, shapes, batch, h)
            adam_step(theta, grad, state, learning_rate(step, steps=steps, peak=lr, warmup=warmup))
    return theta, shapes, train_loss


def dictionary_lookups(h, *, d=16, d_k=None, n_keys=2, seeds=(0, 1, 2), steps=1500, lr=PEAK_LR):
    """:func:`dictionary_lookup` for several seeds, trained side by side (faster than one by one).

    Returns
    -------
    list of LookupResult
        One per seed, in order.
    """
    theta, shapes, train_loss = train(h, d=d, d_k=d_k, n_keys=n_keys, seeds=seeds, steps=steps, lr=lr)
    h, d, d_k, n_keys = _check_shape(h, d, d_k, n_keys)
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
