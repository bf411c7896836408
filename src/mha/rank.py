r"""What a head of width ``d_k`` can express: the data behind the three sweeps.

Three groups of pure functions, one for each sweep of the book:

* **q sweep** (:func:`q_sweep_weights`, :func:`q_threshold`, :func:`q_peak`):
  the smallest head, ``d_k = 1``. One query row of scores is ``q`` times the
  fixed row of keys, so a single number ``q`` decides the whole row.
* **h sweep** (:func:`divisors`, :func:`head_split`, :func:`random_layer`,
  :func:`h_sweep_frames`): which entries of ``Q``, ``K`` and ``V`` each head
  receives, for the right split and for the wrong direct reshape.
* **d_k sweep** (:func:`fit_scores` and the ``target_*`` patterns): the best
  attention pattern a head of width ``d_k`` can reach, found by optimisation
  over ``Q`` and ``K``.

In this module the scores are ``Q Kᵀ`` with no division by :math:`\sqrt{d_k}`.
The factor only rescales ``Q``, so a head that divides by it reaches exactly
the same patterns (use ``Q * sqrt(d_k)``).
"""

from __future__ import annotations

import functools
import numbers
from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, check_positive_int
from .attention import multi_head_attention, softmax, split_heads
from .examples import WorkedExample
from .fitting import kl_divergence

__all__ = [
    "HSweepFrame",
    "HeadSplit",
    "ScoreFit",
    "divisors",
    "fit_scores",
    "h_sweep_frames",
    "head_split",
    "kl_rows",
    "q_peak",
    "q_sweep_weights",
    "q_threshold",
    "random_layer",
    "target_diagonal",
    "target_first_token",
    "target_local_band",
    "target_previous_token",
    "target_random",
]


# ================================================================ q sweep: the d_k = 1 head
def _check_keys(keys):
    keys = as_float_array(keys, "keys")
    if keys.ndim != 1 or keys.size < 2:
        raise ValueError(f"keys must be a 1-D sequence of at least 2 numbers, got shape {keys.shape}")
    return keys


def _check_index(index, keys):
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, numbers.Integral):
        raise TypeError(f"index must be an integer, got {index!r} of type {type(index).__name__}")
    if not 0 <= index < keys.size:
        raise ValueError(f"index={index} is out of range for {keys.size} keys")
    return int(index)


def q_sweep_weights(q_values, keys):
    r"""One query row of a ``d_k = 1`` head, for each scalar query ``q``.

    .. math:: w(q) = \operatorname{softmax}(q\,k^\top)

    Parameters
    ----------
    q_values : float or array_like, shape (m,)
        Query scalars.
    keys : array_like, shape (n,)
        One key scalar per token.

    Returns
    -------
    ndarray, shape (n,) or (m, n)
        Row ``i`` holds the weights of every token at ``q_values[i]``.

    Examples
    --------
    >>> q_sweep_weights([0.0, -3.0], keys=(2, 0, 1)).round(3)
    array([[0.333, 0.333, 0.333],
           [0.002, 0.95 , 0.047]])
    """
    q = as_float_array(q_values, "q_values")
    if q.ndim > 1:
        raise ValueError(f"q_values must be a number or a 1-D array, got shape {q.shape}")
    keys = _check_keys(keys)
    return softmax(np.multiply.outer(q, keys), axis=-1)  # (m,) x (n,) -> (m, n)


def _log_weight(q, keys, j):
    """log w_j(q) = -log sum_l exp(q (k_l - k_j)), computed without overflow."""
    z = q * (keys - keys[j])
    m = z.max()
    return -(m + np.log(np.exp(z - m).sum()))


def _bisect(f, lo, hi, iters=200):
    """Root of ``f`` in ``[lo, hi]`` where ``f(lo) < 0 < f(hi)`` (``f`` increasing)."""
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if f(mid) < 0 else (lo, mid)
    return 0.5 * (lo + hi)


def _bracket(f):
    """An interval ``[lo, hi]`` with ``f(lo) < 0 < f(hi)`` for an increasing ``f``."""
    lo, hi = -1.0, 1.0
    while f(lo) >= 0:
        lo *= 2
    while f(hi) <= 0:
        hi *= 2
    return lo, hi


def q_threshold(keys, index, p=0.95):
    r"""The query ``q*`` where token ``index`` of a ``d_k = 1`` head reaches weight ``p``.

    Only a token with the largest or the smallest key has a threshold: its
    weight :math:`w_j(q) = 1 / \sum_l e^{q (k_l - k_j)}` is monotone in ``q``.
    For the smallest key, ``w_j(q) > p`` exactly when ``q < q*``; for the
    largest key, exactly when ``q > q*``.

    Parameters
    ----------
    keys : array_like, shape (n,)
    index : int
        The token whose weight is asked about.
    p : float
        Target weight, ``0 < p < 1/m`` where ``m`` counts the tokens that share
        this key (the weight never passes ``1/m``).

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the key is neither the largest nor the smallest (its weight is never
        the largest; see :func:`q_peak`), or ``p`` is out of reach.

    Examples
    --------
    >>> round(q_threshold((2, 0, 1), index=1, p=0.95), 3)   # "love" has the smallest key
    -2.993
    """
    keys = _check_keys(keys)
    j = _check_index(index, keys)
    p = float(p)
    share = int(np.sum(keys == keys[j]))
    if keys[j] not in (keys.min(), keys.max()) or share == keys.size:
        raise ValueError(f"key {keys[j]} of token {j} is not the one largest or smallest key of "
                         f"{tuple(keys.tolist())}: its weight has no threshold (use q_peak)")
    if not 0 < p < 1 / share:
        raise ValueError(f"p must be between 0 and 1/{share} (the most this weight can reach), got {p}")
    sign = -1.0 if keys[j] == keys.min() else 1.0  # the weight grows as sign * q grows
    return _bisect(lambda q: sign * (_log_weight(q, keys, j) - np.log(p)),
                   *_bracket(lambda q: sign * (_log_weight(q, keys, j) - np.log(p))))


def q_peak(keys, index):
    r"""The query ``q`` that gives token ``index`` its largest weight, and that weight.

    :math:`\log w_j(q)` is concave in ``q`` with slope :math:`k_j - \mathbb{E}_{w(q)}[k]`,
    so the peak is where the weighted mean of the keys equals :math:`k_j`. For
    the largest (smallest) key there is no finite peak: the weight climbs
    towards ``1/m`` as ``q`` goes to ``+inf`` (``-inf``).

    Returns
    -------
    q : float
        ``inf`` or ``-inf`` for an extreme key.
    weight : float

    Examples
    --------
    >>> q, w = q_peak((2, 0, 1), index=2)     # "LLMs", the middle key
    >>> float(q), round(float(w), 6)
    (0.0, 0.333333)
    """
    keys = _check_keys(keys)
    j = _check_index(index, keys)
    share = int(np.sum(keys == keys[j]))
    if keys[j] == keys.max() or keys[j] == keys.min():
        if share == keys.size:
            return 0.0, 1.0 / share
        return (np.inf if keys[j] == keys.max() else -np.inf), 1.0 / share

    def slope(q):  # weighted mean of the keys minus k_j; increasing in q
        return float(softmax(q * keys) @ keys) - keys[j]

    q = 0.0 if slope(0.0) == 0 else _bisect(slope, *_bracket(slope))
    return q, float(np.exp(_log_weight(q, keys, j)))


# ================================================================ h sweep: which head gets what
def divisors(d):
    """Every head count ``h`` that divides the width ``d``.

    Examples
    --------
    >>> divisors(12)
    (1, 2, 3, 4, 6, 12)
    """
    d = check_positive_int(d, "d")
    return tuple(h for h in range(1, d + 1) if d % h == 0)


@dataclass(frozen=True)
class HeadSplit:
    """Where every entry of a ``(T, d)`` matrix lands when it is split into ``h`` heads.

    Attributes
    ----------
    h, d_k : int
    token : ndarray of int, shape (h, T, d_k)
        ``token[i, t, m]`` is the row (token) of the original matrix that entry
        ``m`` of position ``t`` in head ``i`` comes from.
    column : ndarray of int, shape (h, T, d_k)
        The original column of the same entry.
    owner : ndarray of int, shape (T, d)
        ``owner[t, c]`` is the head that receives entry ``(t, c)``.
    """

    h: int
    d_k: int
    token: np.ndarray
    column: np.ndarray
    owner: np.ndarray

    @property
    def mixes_tokens(self):
        """True if some head holds, at position ``t``, data of another token."""
        T = self.token.shape[1]
        return bool((self.token != np.arange(T)[:, None]).any())


def head_split(T, d, h, *, wrong=False):
    """Trace every entry of a ``(T, d)`` matrix through a split into ``h`` heads.

    The right split is :func:`mha.split_heads` (reshape to ``(T, h, d_k)``,
    then swap the first two axes): head ``i`` gets the ``i``-th block of
    ``d_k`` columns, ``i*d_k <= c < (i+1)*d_k``, of every token. The wrong split reshapes straight to
    ``(h, T, d_k)``, which cuts the matrix in reading order and hands a head
    pieces of other tokens.

    Parameters
    ----------
    T, d, h : int
        Tokens, width, heads; ``h`` must divide ``d``.
    wrong : bool
        Trace the direct reshape instead of the right split.

    Returns
    -------
    HeadSplit

    Examples
    --------
    >>> head_split(T=2, d=4, h=2).owner          # columns 0-1 to head 0, 2-3 to head 1
    array([[0, 0, 1, 1],
           [0, 0, 1, 1]])
    >>> head_split(T=2, d=4, h=2, wrong=True).owner   # a whole token to each head
    array([[0, 0, 0, 0],
           [1, 1, 1, 1]])
    """
    T, d, h = (check_positive_int(v, n) for v, n in ((T, "T"), (d, "d"), (h, "h")))
    if d % h:
        raise ValueError(f"h={h} does not divide the width d={d}")
    d_k = d // h
    where = np.arange(T * d).reshape(T, d)  # entry (t, c) holds its own address t*d + c
    if wrong:
        parts = where.reshape(h, T, d_k)  # (T, d) -> (h, T, d_k), straight through
    else:
        parts = split_heads(where, h).astype(int)  # (T, d) -> (h, T, d_k)
    owner = np.empty(T * d, dtype=int)
    owner[parts.ravel()] = np.repeat(np.arange(h), T * d_k)
    return HeadSplit(h=h, d_k=d_k, token=parts // d, column=parts % d, owner=owner.reshape(T, d))


def random_layer(tokens, d, *, seed=0, scale=1.3):
    """A seeded random attention layer for a sentence, as a :class:`~mha.examples.WorkedExample`.

    ``X`` has standard normal entries; ``W_Q``, ``W_K``, ``W_V`` and ``W_O``
    have standard deviation ``scale / sqrt(d)``, so every entry of ``Q`` has
    standard deviation ``scale`` and the scaled scores about ``scale**2``,
    whatever the head width. ``h`` is set to 1: the layer can be split any way.

    Examples
    --------
    >>> layer = random_layer(("the", "cat", "sat"), d=6)
    >>> layer.X.shape, layer.W_Q.shape
    ((3, 6), (6, 6))
    """
    tokens = tuple(str(t) for t in tokens)
    if not tokens:
        raise ValueError("tokens must name at least one token")
    d = check_positive_int(d, "d")
    rng = np.random.default_rng(_check_count(seed, "seed"))
    X = rng.standard_normal((len(tokens), d))
    W_Q, W_K, W_V, W_O = (rng.standard_normal((d, d)) * (float(scale) / np.sqrt(d)) for _ in range(4))
    return WorkedExample(tokens=tokens, X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, W_O=W_O, h=1)


@dataclass(frozen=True)
class HSweepFrame:
    """One setting of the h sweep: the two ways to split, and the heads' attention.

    Attributes
    ----------
    h, d_k : int
    right, wrong : HeadSplit
        The split by :func:`mha.split_heads` and the direct reshape.
    weights : ndarray, shape (h, T, T)
        Each head's attention weights on the layer's sentence (right split).
    """

    h: int
    d_k: int
    right: HeadSplit
    wrong: HeadSplit
    weights: np.ndarray


def h_sweep_frames(layer):
    """One :class:`HSweepFrame` for every ``h`` that divides the layer's width.

    Parameters
    ----------
    layer : WorkedExample
        For instance :func:`mha.examples.i_love_llms` or :func:`random_layer`.

    Examples
    --------
    >>> from mha.examples import i_love_llms
    >>> [(f.h, f.d_k, f.weights.shape) for f in h_sweep_frames(i_love_llms())]
    [(1, 4, (1, 3, 3)), (2, 2, (2, 3, 3)), (4, 1, (4, 3, 3))]
    """
    T, d = layer.X.shape
    frames = []
    for h in divisors(d):
        _, A = multi_head_attention(layer.X, layer.W_Q, layer.W_K, layer.W_V, layer.W_O, h)
        frames.append(HSweepFrame(h=h, d_k=d // h, right=head_split(T, d, h),
                                  wrong=head_split(T, d, h, wrong=True), weights=A))
    return tuple(frames)


# ================================================================ d_k sweep: target patterns
def _rows_from_logits(L, what):
    """Normalise rows of exp(L); refuse patterns whose small weights underflow to 0."""
    A = softmax(L, axis=-1)
    if (A <= 0).any():
        raise ValueError(f"{what}: some weights underflow to 0 at this size; use a larger width")
    return A


def _check_weight(value, name):
    arr = as_float_array(value, name)
    if arr.ndim:
        raise ValueError(f"{name} must be a single number, got shape {arr.shape}")
    value = float(arr)
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def target_diagonal(n, on=0.8, off=0.1):
    """Each token attends mostly to itself: ``on`` on the diagonal, ``off`` elsewhere, rows normalised.

    Examples
    --------
    >>> target_diagonal(3)
    array([[0.8, 0.1, 0.1],
           [0.1, 0.8, 0.1],
           [0.1, 0.1, 0.8]])
    >>> target_diagonal(4)[0].round(3)       # 0.8, 0.1, 0.1, 0.1 divided by 1.1
    array([0.727, 0.091, 0.091, 0.091])
    """
    n = check_positive_int(n, "n")
    on, off = _check_weight(on, "on"), _check_weight(off, "off")
    A = np.full((n, n), off)
    np.fill_diagonal(A, on)
    return A / A.sum(axis=1, keepdims=True)


def target_first_token(n, on=0.8, off=0.1):
    """Every token attends mostly to the first one (weights ``on`` and ``off``, rows normalised).

    Up to a constant per row, ``log A`` is one fixed row repeated: rank 1, so
    ``d_k = 1`` reaches it exactly.

    Examples
    --------
    >>> target_first_token(3)[2]
    array([0.8, 0.1, 0.1])
    """
    n = check_positive_int(n, "n")
    on, off = _check_weight(on, "on"), _check_weight(off, "off")
    A = np.full((n, n), off)
    A[:, 0] = on
    return A / A.sum(axis=1, keepdims=True)


def _gaussian_rows(n, centre_shift, width, what):
    n = check_positive_int(n, "n")
    width = _check_weight(width, "width")
    pos = np.arange(n, dtype=float)
    L = -((pos[None, :] - (pos[:, None] + centre_shift)) ** 2) / (2 * width**2)  # (n, n)
    return _rows_from_logits(L, what)


def target_previous_token(n, width=0.5):
    r"""Each token attends to the one before it, with a Gaussian fall-off in position.

    :math:`A_{ij} \propto \exp\!\big(-(j - i + 1)^2 / (2\,\mathrm{width}^2)\big)`.
    The exponent is a quadratic in the positions, so up to a constant per row
    ``log A`` has rank 2: ``d_k = 2`` reaches it exactly. The first token,
    having no predecessor, leans on itself.

    Examples
    --------
    >>> target_previous_token(4)[2].round(2)      # token 2 looks back at token 1
    array([0.11, 0.79, 0.11, 0.  ])
    """
    return _gaussian_rows(n, -1.0, width, "target_previous_token")


def target_local_band(n, width=1.0):
    r"""Each token attends to its neighbours: :math:`A_{ij} \propto \exp(-(j - i)^2 / (2\,\mathrm{width}^2))`.

    Like :func:`target_previous_token`, its log has rank 2 up to a constant per row.

    Examples
    --------
    >>> target_local_band(3)[1].round(3)
    array([0.274, 0.452, 0.274])
    """
    return _gaussian_rows(n, 0.0, width, "target_local_band")


def _check_count(value, name):
    """A non-negative whole number (a seed, a number of restarts)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a non-negative integer, got {value!r} of type {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value}")
    return int(value)


def target_random(n, *, seed=0, concentration=1.0):
    """An arbitrary pattern: each row drawn from a Dirichlet distribution (seeded).

    ``concentration`` below 1 gives spiky rows, above 1 flatter ones.

    Examples
    --------
    >>> A = target_random(5, seed=1)
    >>> A.shape, bool(np.allclose(A.sum(axis=1), 1))
    ((5, 5), True)
    """
    n = check_positive_int(n, "n")
    alpha = _check_weight(concentration, "concentration")
    A = np.random.default_rng(_check_count(seed, "seed")).dirichlet(np.full(n, alpha), size=n)
    if (A <= 0).any():
        raise ValueError("target_random: a weight underflowed to 0; use a larger concentration")
    return A


# ================================================================ d_k sweep: fitting Q and K
def _check_target(target):
    A = as_float_array(target, "target")
    if A.ndim != 2 or 0 in A.shape:
        raise ValueError(f"target must be a non-empty matrix (T, S) of attention weights, got shape {A.shape}")
    if (A <= 0).any():
        where = tuple(int(i) for i in np.argwhere(A <= 0)[0])
        raise ValueError(f"target (shape {A.shape}) has {A[where]} at {where}: every weight must be "
                         "positive (a zero weight needs a score of -inf, which no finite head gives)")
    sums = A.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > 1e-6)
    if bad.size:
        raise ValueError(f"row {bad[0]} of target (shape {A.shape}) sums to {sums[bad[0]]:.6g}; "
                         "each row must be a probability distribution summing to 1")
    return A


def kl_rows(target, weights):
    r"""KL divergence of each row: :math:`\sum_j A_{rj} (\log A_{rj} - \log W_{rj})`.

    The target's rows and shape are checked here; the divergence itself is
    :func:`mha.fitting.kl_divergence` (rounding below zero is clipped to 0 there).

    Examples
    --------
    >>> A = target_diagonal(3)
    >>> kl_rows(A, A)
    array([0., 0., 0.])
    """
    A = _check_target(target)
    W = as_float_array(weights, "weights")
    if W.shape != A.shape:
        raise ValueError(f"weights must have the target's shape {A.shape}, got {W.shape}")
    return kl_divergence(A, W)  # (T, S), (T, S) -> (T,)


def _log_softmax(S):
    m = S.max(axis=1, keepdims=True)
    return S - m - np.log(np.exp(S - m).sum(axis=1, keepdims=True))


def _loss_and_grad(x, A, log_A, d_k):
    """Summed KL(A ‖ softmax(Q Kᵀ)) and its gradient in (Q, K), packed in one vector."""
    T, S = A.shape
    Q, K = x[:T * d_k].reshape(T, d_k), x[T * d_k:].reshape(S, d_k)
    log_W = _log_softmax(Q @ K.T)  # (T, d_k) @ (d_k, S) -> (T, S)
    G = np.exp(log_W) - A  # d loss / d scores, (T, S)
    loss = float(np.sum(A * (log_A - log_W)))
    return loss, np.concatenate([(G @ K).ravel(), (G.T @ Q).ravel()])  # (T, d_k), (S, d_k)


def _lbfgs_direction(g, steps, changes):
    """Two-loop recursion: an estimate of ``H⁻¹ g`` from the last few steps."""
    q, alphas = g.copy(), []
    for s, y in zip(reversed(steps), reversed(changes)):
        alphas.append((s @ q) / (y @ s))
        q -= alphas[-1] * y
    q *= (steps[-1] @ changes[-1]) / (changes[-1] @ changes[-1]) if steps else 1 / max(1.0, np.linalg.norm(g))
    for s, y, a in zip(steps, changes, reversed(alphas)):
        q += (a - (y @ q) / (y @ s)) * s
    return q


def _minimise(f, x, *, max_iter=2000, memory=10, gtol=1e-9, ftol=1e-13):
    """L-BFGS with a backtracking (Armijo) line search. Returns ``(x, loss, iterations)``."""
    loss, g = f(x)
    steps, changes = [], []
    it = 0
    for it in range(1, max_iter + 1):
        p = _lbfgs_direction(g, steps, changes)
        slope = -(g @ p)
        if slope >= 0:  # not a descent direction: restart from the gradient
            p, slope, steps, changes = g, -(g @ g), [], []
        t = 1.0
        new_loss, new_g = f(x - t * p)
        while new_loss > loss + 1e-4 * t * slope and t > 1e-10:
            t *= 0.5
            new_loss, new_g = f(x - t * p)
        s, y, drop = -t * p, new_g - g, loss - new_loss
        x, loss, g = x + s, new_loss, new_g
        if y @ s > 1e-16 * (y @ y):
            steps, changes = (steps + [s])[-memory:], (changes + [y])[-memory:]
        if np.abs(g).max() < gtol or drop <= ftol * max(1.0, abs(loss)):
            break
    return x, loss, it


def _spectral_start(log_A, d_k):
    """Q, K from the best rank-d_k approximation of log A with each row centred.

    Centring adds a constant to each row (softmax ignores it) and puts the
    all-ones vector in the null space, so the centred log has rank at most
    ``n - 1``: at ``d_k >= n - 1`` this start is already an exact fit.
    """
    C = log_A - log_A.mean(axis=1, keepdims=True)
    U, sv, Vt = np.linalg.svd(C, full_matrices=False)
    r = min(d_k, sv.size)
    Q, K = np.zeros((C.shape[0], d_k)), np.zeros((C.shape[1], d_k))
    Q[:, :r] = U[:, :r] * np.sqrt(sv[:r])
    K[:, :r] = Vt[:r].T * np.sqrt(sv[:r])
    return np.concatenate([Q.ravel(), K.ravel()])


@dataclass(frozen=True)
class ScoreFit:
    r"""The best pattern a head of width ``d_k`` reaches for a target, and how far off it is.

    Attributes
    ----------
    target : ndarray, shape (T, S)
    d_k : int
    Q : ndarray, shape (T, d_k)
    K : ndarray, shape (S, d_k)
    scores : ndarray, shape (T, S)
        ``Q Kᵀ``, not divided by :math:`\sqrt{d_k}` (that factor would only rescale ``Q``).
    weights : ndarray, shape (T, S)
        ``softmax(scores)`` along each row.
    kl_rows : ndarray, shape (T,)
        KL(target row ‖ weights row).
    kl : float
        ``kl_rows.sum()``.
    singular_values : ndarray, shape (min(T, S),)
        Of ``scores``; at most ``d_k`` of them are non-zero.
    iterations : int
        L-BFGS iterations of the winning start.
    start_kls : tuple of float
        The KL each start ended at (the first start is the spectral one).
    """

    target: np.ndarray
    d_k: int
    Q: np.ndarray
    K: np.ndarray
    scores: np.ndarray
    weights: np.ndarray
    kl_rows: np.ndarray
    kl: float
    singular_values: np.ndarray
    iterations: int
    start_kls: tuple


def _readonly(*arrays):
    for a in arrays:
        a.setflags(write=False)


@functools.lru_cache(maxsize=512)
def _fit_cached(raw, shape, d_k, seed, restarts):
    A = np.frombuffer(raw, dtype=np.float64).reshape(shape).copy()
    log_A = np.log(A)
    rng = np.random.default_rng(seed)
    size = (shape[0] + shape[1]) * d_k
    best, kls = None, []
    for k in range(restarts + 1):
        x0 = _spectral_start(log_A, d_k) if k == 0 else rng.standard_normal(size)
        x, loss, it = _minimise(lambda v: _loss_and_grad(v, A, log_A, d_k), x0)
        kls.append(max(loss, 0.0))
        if best is None or loss < best[1]:
            best = (x, loss, it)
        if best[1] < 1e-12:  # KL cannot go below 0: nothing left to find
            break
    x, _, it = best
    Q, K = x[:shape[0] * d_k].reshape(shape[0], d_k), x[shape[0] * d_k:].reshape(shape[1], d_k)
    scores = Q @ K.T  # (T, d_k) @ (d_k, S) -> (T, S)
    weights = softmax(scores, axis=-1)
    # From log-softmax, not log(weights): a fitted weight may underflow to 0 where the target is tiny.
    per_row = np.maximum(np.sum(A * (log_A - _log_softmax(scores)), axis=1), 0.0)
    sv = np.linalg.svd(scores, compute_uv=False)
    _readonly(A, Q, K, scores, weights, per_row, sv)
    return ScoreFit(target=A, d_k=d_k, Q=Q, K=K, scores=scores, weights=weights, kl_rows=per_row,
                    kl=float(per_row.sum()), singular_values=sv, iterations=it, start_kls=tuple(kls))


def fit_scores(target, d_k, *, seed=0, restarts=4):
    r"""Fit a head of width ``d_k`` to a target attention pattern.

    Minimises, over ``Q`` (T, d_k) and ``K`` (S, d_k),

    .. math:: \sum_r \operatorname{KL}\big(A_r \,\|\, \operatorname{softmax}(Q K^\top)_r\big)
              = \sum_{r,j} A_{rj} \big(\log A_{rj} - \log \operatorname{softmax}(Q K^\top)_{rj}\big)

    with L-BFGS and the analytic gradient :math:`(W - A) K` for ``Q`` and
    :math:`(W - A)^\top Q` for ``K``, where :math:`W = \operatorname{softmax}(Q K^\top)`.
    The first start is spectral (the best rank-``d_k`` approximation of the
    row-centred ``log A``), then ``restarts`` seeded random starts; the best
    end point wins. Results are cached, and the returned arrays are read-only.

    Parameters
    ----------
    target : array_like, shape (T, S)
        Rows are probability distributions with positive entries.
    d_k : int
        Head width.
    seed : int
        Seed of the random starts.
    restarts : int
        Number of random starts after the spectral one.

    Returns
    -------
    ScoreFit

    Examples
    --------
    >>> A = target_diagonal(3)
    >>> round(fit_scores(A, d_k=1).kl, 3)     # d_k = 1 < n - 1: out of reach
    0.556
    >>> fit_scores(A, d_k=2).kl < 1e-9        # d_k = n - 1: reached
    True
    """
    A = _check_target(target)
    d_k = check_positive_int(d_k, "d_k")
    seed = _check_count(seed, "seed")
    restarts = _check_count(restarts, "restarts")
    return _fit_cached(np.ascontiguousarray(A, dtype=np.float64).tobytes(), A.shape, d_k, seed, restarts)
