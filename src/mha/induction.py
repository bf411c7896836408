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
from .attention import AttentionSteps, Projections, attention_steps

__all__ = ["Stream", "stream", "embed", "previous_token_head", "induction_head", "unembed", "Toy", "build",
           "ToyRun", "run", "next_token_nll", "repeated_tokens"]


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
