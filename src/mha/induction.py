r"""An induction head built by hand: two attention-only layers that continue a repeated text.

The model has no feed-forward layers and no training. Its residual stream is
cut into four subspaces, each with one axis per token or per position:

============  ======  =============================================
``token``     ``V``   the token at this position (one-hot)
``position``  ``N``   the position (one-hot)
``previous``  ``V``   layer 1 writes the token just before here
``output``    ``V``   layer 2 writes its guess for the next token
============  ======  =============================================

*Layer 1, a previous-token head.* The query of position ``t`` and the key of
position ``s`` match when ``s = t - 1``; the value is the key's token, and
``W^O`` writes it into ``previous``.

*Layer 2, an induction head.* The query is the current token, the key is what
layer 1 left in ``previous``: query ``t`` finds the positions ``s`` whose
*previous* token equals its own token. The value is the token at ``s`` (the
one that came next last time), and ``W^O`` writes it into ``output``.
Elhage et al. (2021) call this K-composition: the second head's keys read
what the first head wrote. Olsson et al. (2022) found such heads in trained
models.

Position 0 has nothing before it, so its previous-token head can only look at
itself and leaves its own token in ``previous``: a false clue. The induction
head's query has one more axis that is 1 everywhere (each position holds one
token), and position 0's key has -1 there, which cancels that false match.

Shapes: ``T`` positions, ``V`` tokens, ``N`` the longest text, ``d = 3V + N``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, as_index_array, check_count, check_ndim, check_number, check_positive_int, check_size
from ._validate import check_index
from .attention import AttentionSteps, Projections, attention_steps

__all__ = ["Stream", "stream", "embed", "previous_token_head", "induction_head", "unembed", "Toy", "build",
           "ToyRun", "run", "next_token_nll", "repeated_tokens", "HeadWrite", "head_write", "unembedding",
           "copying_score", "copying_scores"]


@dataclass(frozen=True)
class Stream:
    """Where each subspace of the residual stream lies: ``V`` tokens, texts of up to ``N`` positions.

    Attributes
    ----------
    token, position, previous, output : slice
        The columns of each subspace.
    d : int
        The width of the stream, ``3V + N``.
    """

    V: int
    N: int

    @property
    def token(self):
        return slice(0, self.V)

    @property
    def position(self):
        return slice(self.V, self.V + self.N)

    @property
    def previous(self):
        return slice(self.V + self.N, 2 * self.V + self.N)

    @property
    def output(self):
        return slice(2 * self.V + self.N, 3 * self.V + self.N)

    @property
    def d(self):
        return 3 * self.V + self.N


def stream(V, N):
    """The residual stream's layout for ``V`` tokens (at least 2) and texts of up to ``N`` positions."""
    V = check_size(V, "V", low=2, high=4096)
    N = check_size(N, "N", high=4096)
    return Stream(V, N)


def _layout(s):
    if not isinstance(s, Stream):
        raise TypeError(f"s must be a Stream (from mha.induction.stream), got {type(s).__name__}")
    return s


def _strength(value, name):
    return check_number(value, name, low=0, low_open=True, high=50)


def embed(ids, s: Stream):
    """One-hot token plus one-hot position; ``previous`` and ``output`` start at zero: (..., T) -> (..., T, d)."""
    s = _layout(s)
    ids = as_index_array(ids, "ids", s.V)
    T = ids.shape[-1] if ids.ndim else 0
    if not 1 <= T <= s.N:
        raise ValueError(f"ids must have shape (..., T) with 1 <= T <= N = {s.N}, got shape {ids.shape}")
    X = np.zeros((*ids.shape, s.d))  # (..., T, d)
    X[..., s.token] = np.eye(s.V)[ids]  # (..., T) -> (..., T, V)
    X[..., s.position] = np.eye(s.N)[:T]  # (T, N), the same for every text
    return X


def previous_token_head(s: Stream, sharpness):
    r"""Layer 1: query ``t`` matches key ``t - 1`` and copies its token into ``previous``.

    Query and key live in a space of ``N`` axes, one per position: the query
    of position ``t`` is :math:`c\,e_t`, the key of position ``s`` is
    :math:`e_{s+1}`. With :math:`c = \text{sharpness}\cdot\sqrt{N}` the scaled
    score :math:`q_t \cdot k_s / \sqrt{N}` is ``sharpness`` when ``s = t - 1``
    and 0 otherwise.
    """
    s, sharpness = _layout(s), _strength(sharpness, "sharpness")
    W_Q = np.zeros((s.d, s.N))  # (d, d_k = N)
    W_K = np.zeros((s.d, s.N))
    pos = np.arange(s.N)
    W_Q[s.position.start + pos, pos] = sharpness * math.sqrt(s.N)  # position t -> axis t
    W_K[s.position.start + pos[:-1], pos[1:]] = 1.0  # position s -> axis s + 1
    W_V = np.zeros((s.d, s.V))  # (d, d_v = V): the key's token
    W_V[s.token, :] = np.eye(s.V)
    W_O = np.zeros((s.V, s.d))  # (V, d): into the previous subspace
    W_O[:, s.previous] = np.eye(s.V)
    return Projections(W_Q, W_K, W_V, W_O)


def induction_head(s: Stream, sharpness):
    r"""Layer 2: query ``t`` matches the keys whose previous token is its token, and copies their token.

    Query and key have ``V + 1`` axes. The query is the current token,
    :math:`c\,(e_{x_t} + e_V)`; the key is the ``previous`` subspace on the first
    ``V`` axes, and -1 on the last one at position 0 only. With
    :math:`c = \text{sharpness}\cdot\sqrt{V + 1}` the scaled score is ``sharpness``
    times the weight layer 1 put on a copy of the query's token, less
    ``sharpness`` at position 0. The value is the key's own token, written
    into ``output``.
    """
    s, sharpness = _layout(s), _strength(sharpness, "sharpness")
    d_k = s.V + 1
    c = sharpness * math.sqrt(d_k)
    W_Q = np.zeros((s.d, d_k))  # (d, d_k = V + 1)
    W_Q[s.token, :s.V] = c * np.eye(s.V)  # the current token ...
    W_Q[s.token, s.V] = c  # ... and a 1 that every position has
    W_K = np.zeros((s.d, d_k))
    W_K[s.previous, :s.V] = np.eye(s.V)  # the token layer 1 found before this position
    W_K[s.position.start, s.V] = -1.0  # position 0 has no real previous token
    W_V = np.zeros((s.d, s.V))  # (d, d_v = V): the key's own token
    W_V[s.token, :] = np.eye(s.V)
    W_O = np.zeros((s.V, s.d))  # (V, d): into the output subspace
    W_O[:, s.output] = np.eye(s.V)
    return Projections(W_Q, W_K, W_V, W_O)


def unembed(s: Stream, scale):
    """Next-token scores read from the ``output`` subspace, times ``scale``: ``W_U`` of shape (d, V)."""
    s, scale = _layout(s), _strength(scale, "scale")
    W_U = np.zeros((s.d, s.V))
    W_U[s.output, :] = scale * np.eye(s.V)
    return W_U


@dataclass(frozen=True)
class Toy:
    """The two hand-set layers and the unembedding; build it with :func:`build`."""

    stream: Stream
    layer1: Projections
    layer2: Projections
    W_U: np.ndarray  # (d, V)


def build(V=12, N=32, *, sharpness=8.0, scale=6.0):
    """The toy for ``V`` tokens and texts of up to ``N`` positions.

    ``sharpness`` (the score of a match) and ``scale`` (the score of the
    guessed token) are positive numbers; larger ones make sharper weights and
    surer guesses.
    """
    s = stream(V, N)
    return Toy(s, previous_token_head(s, sharpness), induction_head(s, sharpness), unembed(s, scale))


@dataclass(frozen=True)
class ToyRun:
    """Every step of one run of the toy.

    Attributes
    ----------
    ids : ndarray of int, shape (..., T)
    X0, X1, X2 : ndarray, shape (..., T, d)
        The residual stream: embedded, after layer 1, after layer 2.
    layer1, layer2 : AttentionSteps
        Each layer's intermediates (scores, weights, outputs), one head each.
    logits : ndarray, shape (..., T, V)
        Next-token scores.
    """

    ids: np.ndarray
    X0: np.ndarray
    layer1: AttentionSteps
    X1: np.ndarray
    layer2: AttentionSteps
    X2: np.ndarray
    logits: np.ndarray

    @property
    def attention(self):
        """Both layers' weights as (..., L = 2, h = 1, T, T), the layout of :func:`mha.heads.induction_scores`."""
        return np.stack([self.layer1.weights, self.layer2.weights], axis=-4)


def run(toy: Toy, ids):
    """Run the toy on token ids of shape (..., T), keeping every step."""
    ids = _token_ids(toy, ids)
    X0 = embed(ids, toy.stream)  # (..., T, d)
    one = attention_steps(X0, *toy.layer1[:4], h=1, causal=True)
    X1 = X0 + one.output  # layer 1 writes the previous token
    two = attention_steps(X1, *toy.layer2[:4], h=1, causal=True)
    X2 = X1 + two.output  # layer 2 writes its guess
    return ToyRun(ids, X0, one, X1, two, X2, X2 @ toy.W_U)  # (..., T, d) @ (d, V)


def _token_ids(toy, ids):
    if not isinstance(toy, Toy):
        raise TypeError(f"toy must be a Toy (from mha.induction.build), got {type(toy).__name__}")
    ids = as_index_array(ids, "ids", toy.stream.V)
    if ids.ndim == 0:
        raise ValueError("ids must have shape (..., T), one token id per position, got a single number")
    if ids.shape[-1] > toy.stream.N:
        raise ValueError(f"ids has {ids.shape[-1]} positions (shape {ids.shape}); this toy was built for "
                         f"at most N = {toy.stream.N}")
    return ids


def next_token_nll(logits, ids):
    r"""Negative log-likelihood of each next token, in nats: (..., T, V), (..., T) -> (..., T-1).

    Entry ``t`` is :math:`-\ln \operatorname{softmax}(z_t)_{x_{t+1}}`, the loss
    of the guess made at position ``t`` for the token at ``t + 1``.
    """
    z, ids = _scored_ids(logits, ids)
    z = z[..., :-1, :]  # guesses for positions 1 .. T-1
    target = ids[..., 1:]
    top = z.max(axis=-1, keepdims=True)
    with np.errstate(over="ignore", invalid="ignore"):  # z - top = -inf only gives exp = 0, as it should
        log_total = top[..., 0] + np.log(np.exp(z - top).sum(axis=-1))  # (..., T-1)
        nll = log_total - np.take_along_axis(z, target[..., None], axis=-1)[..., 0]
    if not np.isfinite(nll).all():
        raise ValueError(f"logits (shape {np.shape(logits)}) span more than {z.dtype} can hold: a loss, the gap between "
                         "a row's largest logit and the next token's, overflows. Scale the logits down or pass "
                         "float64")
    return nll


def _scored_ids(logits, ids):
    """``logits`` (..., T, V) and ``ids`` (..., T) checked to fit each other, with T >= 2."""
    logits = as_float_array(logits, "logits")
    check_ndim(logits, "logits", 2, "(..., T, V)")
    if logits.shape[-1] == 0:
        raise ValueError(f"logits (shape {logits.shape}) has an empty vocabulary axis; a guess needs V >= 1 logits")
    ids = as_index_array(ids, "ids", max(1, logits.shape[-1]))
    if ids.shape != logits.shape[:-1]:
        raise ValueError(f"ids {ids.shape} must have the shape of logits {logits.shape} without its last axis")
    if ids.shape[-1] < 2:
        raise ValueError(f"ids has {ids.shape[-1]} position (shape {ids.shape}); a next-token loss needs T >= 2")
    return logits, ids


def repeated_tokens(n, V, seed=0):
    """``n`` different tokens out of ``V``, drawn at random, then the same ``n`` again: shape (2n,).

    The tokens of one copy are all different, so only the repeat can be predicted.
    """
    V = check_size(V, "V", low=2, high=2 ** 31)
    n = check_size(n, "n", high=2 ** 24)
    if n > V:
        raise ValueError(f"n={n} different tokens need a vocabulary of at least n, got V={V}")
    seed = check_count(seed, "seed")
    first = np.random.default_rng(seed).choice(V, size=n, replace=False)
    return np.concatenate([first, first])


# ---------------------------------------------------------------- the copying half: direct logit attribution
# An induction head attends to the token after the earlier copy *and* raises that token's score. A
# head's direct logit attribution is what its own output adds to the next-token scores when it is
# read straight out by the final norm and the unembedding, skipping every later layer. Two kinds of
# model are read: the toy (no final norm: its output part is read by ``W_U``) and a causal model with
# SmolLM2's interface (mha.models.smollm2.SmolLM2: ``weights``, ``attention_heads``,
# ``feed_forward``, ``output_norm``, ``eps`` and its GGUF ``file``), whose final RMSNorm divides
# each position by its own scale.


@dataclass(frozen=True)
class HeadWrite:
    """What one head writes into the stream, as the final norm and the unembedding read it.

    Attributes
    ----------
    ids : ndarray of int, shape (B, T)
    out : ndarray, shape (B, T, d)
        The head's own output: its slice of the concatenation times its rows of ``W^O``.
    scale : ndarray, shape (B, T, 1)
        What the final norm divides each position by in this run (1 for the toy, which has no norm).
    norm : ndarray, shape (d,)
        The final norm's weight (ones for the toy).
    final : ndarray, shape (B, T, d)
        The whole stream as the unembedding reads it (after the final norm): the model's logits
        are ``final`` through the unembedding.
    """

    ids: np.ndarray
    out: np.ndarray
    scale: np.ndarray
    norm: np.ndarray
    final: np.ndarray

    @property
    def read(self):
        """``out / scale * norm``: the head's share of what the unembedding reads, (B, T, d)."""
        return self.out / self.scale * self.norm


def _is_model(model):
    names = ("weights", "attention_heads", "feed_forward", "output_norm", "eps", "file", "L", "h", "d_k",
             "vocab_size")
    if isinstance(model, Toy) or all(hasattr(model, n) for n in names):
        return model
    raise TypeError(f"model must be the toy (mha.induction.build) or a model like SmolLM2 "
                    f"(mha.models.smollm2.load), got {type(model).__name__}")


def _sizes(model):
    """(layers, heads, vocabulary) of either kind of model."""
    return (2, 1, model.stream.V) if isinstance(model, Toy) else (model.L, model.h, model.vocab_size)


def _model_ids(model, ids):
    """``ids`` as a (B, T) array of token ids that ``model`` can read."""
    model = _is_model(model)
    ids = _token_ids(model, ids) if isinstance(model, Toy) else as_index_array(ids, "ids", model.vocab_size)
    if ids.ndim not in (1, 2):
        raise ValueError(f"ids must have shape (T,) or (B, T), got shape {ids.shape}")
    return ids[None] if ids.ndim == 1 else ids


def head_write(model, layer, head, ids):
    """Run ``model`` on ``ids`` (T,) or (B, T) and keep what head ``(layer, head)`` writes: a :class:`HeadWrite`.

    For the toy, ``layer`` is 0 (the previous-token head) or 1 (the induction head) and
    ``head`` is 0. For SmolLM2 the run is :meth:`SmolLM2.run`'s, one layer at a time.
    """
    model = _is_model(model)
    L, h, _ = _sizes(model)
    layer, head = check_index(layer, "layer", L), check_index(head, "head", h)
    ids = _model_ids(model, ids)
    if isinstance(model, Toy):
        r = run(model, ids)
        out = (r.layer1 if layer == 0 else r.layer2).output  # one head per layer: the layer's output, (B, T, d)
        return HeadWrite(ids, out, np.ones((*ids.shape, 1)), np.ones(model.stream.d), r.X2)
    x = model.file.array("token_embd.weight", rows=ids.ravel()).reshape(*ids.shape, -1)  # (B, T, d)
    for i in range(model.L):
        w = model.weights(i)
        concat, _ = model.attention_heads(x, w)  # (B, T, h*d_k)
        if i == layer:
            rows = slice(head * model.d_k, (head + 1) * model.d_k)
            out = concat[..., rows] @ w.W_O[rows]  # (B, T, d_k) @ (d_k, d) -> (B, T, d)
        x = model.feed_forward(x + concat @ w.W_O, w)
    scale = np.sqrt((x * x).mean(axis=-1, keepdims=True) + model.eps)  # the final RMSNorm's divisor
    return HeadWrite(ids, out, scale, model.output_norm, x / scale * model.output_norm)


def unembedding(model, tokens=None):
    """Rows of the unembedding, one per token: (n, d); all ``V`` rows if ``tokens`` is None.

    The logit of token ``v`` is the final (normed) stream times row ``v``.
    """
    model = _is_model(model)
    V = _sizes(model)[2]
    tokens = np.arange(V) if tokens is None else as_index_array(tokens, "tokens", V)
    if isinstance(model, Toy):
        return model.W_U.T[tokens]  # (V, d) -> (..., d)
    name = "output.weight" if "output.weight" in model.file.tensors else "token_embd.weight"  # tied
    return model.file.array(name, rows=tokens.ravel()).reshape(*tokens.shape, -1)


def _mean_unembedding(model):
    """The mean row of the unembedding, (d,), read in blocks for a large vocabulary."""
    V = _sizes(model)[2]
    total = 0.0
    for first in range(0, V, 4096):
        total = total + unembedding(model, np.arange(first, min(first + 4096, V))).sum(axis=0, dtype=np.float64)
    return total / V


def _repeated_ids(model, ids):
    """``ids`` (T,) or (B, T) checked to be a block repeated twice; returns ids (B, 2p) and p."""
    ids = _model_ids(model, ids)
    T = ids.shape[-1]
    if T < 4 or T % 2:
        raise ValueError(f"ids must be a block of p >= 2 tokens repeated twice (T = 2p), got shape {ids.shape}")
    p = T // 2
    if not np.array_equal(ids[:, :p], ids[:, p:]):
        raise ValueError(f"ids (shape {ids.shape}) must repeat its first half: token t + {p} equals token t")
    return ids, p


def copying_score(model, layer, head, ids):
    r"""How much one head's own output raises the score of the token it should copy.

    ``ids`` (T,) or (B, T) is a block of ``p`` tokens repeated twice. At each
    position ``t`` of the second copy that has a next token (``t = p .. 2p - 2``),
    the head's direct logit attribution is its output, divided by the final
    norm's scale at ``t``, times the norm's weight, through the unembedding
    ``U``: one number per token. The score at ``t`` is the number of the next
    token minus the mean over all tokens,

    .. math:: c_t = \tilde o_t \cdot u_{x_{t+1}} - \frac{1}{V}\sum_v \tilde o_t \cdot u_v ,

    and the copying score is the mean of :math:`c_t` over positions and texts.
    It is in logits: positive when the head pushes up the token that followed
    the current one last time. It skips every later layer, so it measures the
    head's direct path only. It measures copying (raising the token the head
    attends to) only for a head that also attends to the token after the
    earlier copy: a head that pushes up the next token without looking there
    scores high too.

    ``model`` is the toy (layer 0 or 1, head 0; no final norm) or SmolLM2.
    :func:`copying_scores` gives every head, one number per text.
    """
    hw = head_write(model, layer, head, _repeated_ids(model, ids)[0])
    p = hw.ids.shape[-1] // 2
    t = np.arange(p, 2 * p - 1)  # the second copy, each with a next token
    read = hw.read[:, t]  # (B, p - 1, d): what the unembedding reads from this head
    nxt = unembedding(model, hw.ids[:, t + 1])  # (B, p - 1, d): the row of the token to copy
    c = (read * nxt).sum(axis=-1) - read @ _mean_unembedding(model)  # (B, p - 1)
    return float(c.mean())


def copying_scores(model, ids):
    """:func:`copying_score` of every head, one number per text, from one run: (B, L, h).

    The mean over texts (axis 0) is :func:`copying_score`. The score at
    position ``t`` is ``out_t . r_t / scale_t`` with ``r_t = norm * (u_next - mean u)``,
    and ``r_t`` is known before the run; so each layer folds ``r_t`` back
    through ``W^O`` and keeps one number per head, and the scales divide them
    at the end.
    """
    model = _is_model(model)
    ids, p = _repeated_ids(model, ids)
    L, h, _ = _sizes(model)
    t = np.arange(p, 2 * p - 1)  # the second copy, each with a next token
    if isinstance(model, Toy):
        out = np.zeros((len(ids), L, h))
        for i in range(L):
            hw = head_write(model, i, 0, ids)
            read = hw.read[:, t]  # (B, p - 1, d)
            out[:, i, 0] = ((read * unembedding(model, ids[:, t + 1])).sum(axis=-1)
                            - read @ _mean_unembedding(model)).mean(axis=-1)
        return out
    r = model.output_norm * (unembedding(model, ids[:, t + 1]) - _mean_unembedding(model))  # (B, p - 1, d)
    x = model.file.array("token_embd.weight", rows=ids.ravel()).reshape(*ids.shape, -1)  # (B, T, d)
    raw = np.zeros((len(ids), L, h, len(t)))  # out_t . r_t before the final norm's scale
    for i in range(L):
        w = model.weights(i)
        concat, _ = model.attention_heads(x, w)  # (B, T, h*d_k)
        back = (r @ w.W_O.T).reshape(*r.shape[:2], h, model.d_k)  # (B, p-1, d) -> (B, p-1, h, d_k)
        mine = concat[:, t].reshape(*r.shape[:2], h, model.d_k)  # each head's slice
        raw[:, i] = np.moveaxis((mine * back).sum(axis=-1), -1, 1)  # (B, p-1, h) -> (B, h, p-1)
        x = model.feed_forward(x + concat @ w.W_O, w)
    scale = np.sqrt((x[:, t] ** 2).mean(axis=-1) + model.eps)  # (B, p - 1): the final norm's divisor
    return (raw / scale[:, None, None]).mean(axis=-1)
