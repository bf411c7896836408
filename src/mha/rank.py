r"""What a head of width ``d_k`` can express: target patterns, the rank floor, and fits.

* **targets** (``target_*``): attention patterns a head might be asked to
  produce, with positive weights and rows that sum to 1.
* **the floor** (:func:`score_rank_floor`): the least rank of any score
  matrix whose softmax is a given pattern, so the least ``d_k`` that can
  produce it exactly.
* **fits** (:func:`fit_scores`, :func:`kl_rows`): the best pattern a head of
  width ``d_k`` reaches for a target, found by optimisation over ``Q`` and ``K``,
  with or without a causal mask.
* **under a causal mask** (:func:`target_causal_diagonal`,
  :func:`causal_width_one_head`): a target that a head of width 1 cannot
  reach exactly but can approach as closely as we like.

In this module the scores are ``Q Kᵀ`` with no division by :math:`\sqrt{d_k}`.
The factor only rescales ``Q``, so a head that divides by it reaches exactly
the same patterns (use ``Q * sqrt(d_k)``). The smallest head, ``d_k = 1``, has
its own module, :mod:`mha.width_one`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ._validate import (check_causal, check_count, check_flag, check_ndim, check_number, check_positive_int,
                        check_prob_rows, check_size)
from .attention import softmax
from .fitting import kl_divergence

__all__ = [
    "CentredLogSpectrum",
    "ScoreFit",
    "causal_width_one_head",
    "centred_log_spectrum",
    "clear_fit_cache",
    "fit_scores",
    "kl_rows",
    "score_rank_floor",
    "target_causal_diagonal",
    "target_diagonal",
    "target_first_token",
    "target_distance_band",
    "target_local_band",
    "target_previous_flat",
    "target_previous_token",
    "target_random",
]


# ================================================================ target patterns
def _rows_from_logits(L, what):
    """Normalise rows of exp(L); refuse patterns whose small weights underflow to 0."""
    if not np.isfinite(L.max(axis=-1)).all():
        raise ValueError(f"{what}: every weight of a row underflows to 0 at this size; use a larger width")
    A = softmax(L, axis=-1)
    if (A <= 0).any():
        raise ValueError(f"{what}: some weights underflow to 0 at this size; use a larger width")
    return A


def _positive(value, name):
    return check_number(value, name, low=0.0, low_open=True)


#: The largest target built here: an ``n x n`` matrix of float64 (128 MiB).
MAX_N = 4096


def _tokens(n):
    return check_size(n, "n", high=MAX_N)


def _normalised(A, what):
    """``A`` with each row divided by its sum; huge weights are scaled first, and a weight that underflows is refused."""
    with np.errstate(over="ignore"):
        total = A.sum(axis=1, keepdims=True)
    given = A
    if not np.isfinite(total).all():  # the sum of finite weights overflowed: the ratios are what matter
        A = A / A.max()
        total = A.sum(axis=1, keepdims=True)
    rows = A / total
    if ((rows <= 0) & (given > 0)).any():
        raise ValueError(f"{what}: the weights' ratio is too large for float64 (a weight underflows to 0); "
                         "bring on and off closer together")
    return rows


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
    n = _tokens(n)
    on, off = _positive(on, "on"), _positive(off, "off")
    A = np.full((n, n), off)
    np.fill_diagonal(A, on)
    return _normalised(A, "target_diagonal")


def target_first_token(n, on=0.8, off=0.1):
    """Every token attends mostly to the first one (weights ``on`` and ``off``, rows normalised).

    Up to a constant per row, ``log A`` is one fixed row repeated: rank 1, so
    ``d_k = 1`` reaches it exactly.

    Examples
    --------
    >>> target_first_token(3)[2]
    array([0.8, 0.1, 0.1])
    """
    n = _tokens(n)
    on, off = _positive(on, "on"), _positive(off, "off")
    A = np.full((n, n), off)
    A[:, 0] = on
    return _normalised(A, "target_first_token")


def _gaussian_rows(n, centre_shift, width, what):
    n = _tokens(n)
    width = _positive(width, "width")
    pos = np.arange(n, dtype=float)
    gap = pos[None, :] - (pos[:, None] + centre_shift)  # (n, n)
    spread = 2 * np.float64(width) ** 2 if 1e-150 < width < 1e150 else None  # width**2 neither overflows nor underflows
    if spread is not None:
        L = -(gap ** 2) / spread  # (n, n)
    else:
        with np.errstate(over="ignore"):
            L = -0.5 * (gap / width) ** 2  # the same, without squaring an extreme width first
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


def target_previous_flat(n, on=0.8, off=0.1):
    """Each token attends to the one before it (``on``), the rest evenly (``off``), rows normalised.

    The first token, having no predecessor, leans on itself, so rows 0 and 1
    are equal: ``log A`` has rank ``n - 1``, and its floor is still ``n - 1``.

    Examples
    --------
    >>> target_previous_flat(3)[2]                 # 0.1, 0.8, 0.1 already sums to 1
    array([0.1, 0.8, 0.1])
    """
    n = _tokens(n)
    on, off = _positive(on, "on"), _positive(off, "off")
    A = np.full((n, n), off)
    A[np.arange(n), np.maximum(np.arange(n) - 1, 0)] = on
    return _normalised(A, "target_previous_flat")


def target_distance_band(n, width=1.0):
    r"""Each token attends to its neighbours, falling off with distance: :math:`A_{ij} \propto e^{-|i - j| / \mathrm{width}}`.

    Unlike the Gaussian band of :func:`target_local_band`, the exponent
    :math:`-|i - j|` is not a sum of a few products of a function of ``i``
    and a function of ``j``: the matrix of distances on a line is invertible,
    so this band needs the full ``d_k = n - 1``.

    Examples
    --------
    >>> target_distance_band(3)[1].round(3)
    array([0.212, 0.576, 0.212])
    """
    n = _tokens(n)
    width = _positive(width, "width")
    pos = np.arange(n, dtype=float)
    with np.errstate(over="ignore"):
        L = -np.abs(pos[None, :] - pos[:, None]) / width  # (n, n)
    return _rows_from_logits(L, "target_distance_band")


def target_random(n, *, seed=0, concentration=1.0):
    """An arbitrary pattern: each row drawn from a Dirichlet distribution (seeded).

    ``concentration`` below 1 gives spiky rows, above 1 flatter ones.

    Examples
    --------
    >>> A = target_random(5, seed=1)
    >>> A.shape, bool(np.allclose(A.sum(axis=1), 1))
    ((5, 5), True)
    """
    n = _tokens(n)
    alpha = _positive(concentration, "concentration")
    A = np.random.default_rng(check_count(seed, "seed")).dirichlet(np.full(n, alpha), size=n)
    if (A <= 0).any():
        raise ValueError("target_random: a weight underflowed to 0; use a larger concentration")
    return A


def target_causal_diagonal(n, on=0.8, off=0.1):
    """"Attend to yourself" under a causal mask: ``on`` on the diagonal, ``off`` on each earlier key.

    Row ``r`` sees keys ``0 .. r`` only; its weights are normalised over
    those keys, and the later keys get exactly 0.

    Examples
    --------
    >>> target_causal_diagonal(3).round(3)
    array([[1.   , 0.   , 0.   ],
           [0.111, 0.889, 0.   ],
           [0.1  , 0.1  , 0.8  ]])
    """
    n = _tokens(n)
    on, off = _positive(on, "on"), _positive(off, "off")
    A = np.tril(np.full((n, n), off))
    np.fill_diagonal(A, on)
    return _normalised(A, "target_causal_diagonal")


def causal_width_one_head(n, t, on=0.8, off=0.1):
    r"""A head of width 1 that approaches :func:`target_causal_diagonal` as ``t`` grows.

    Keys :math:`k_j = t^j` and queries :math:`q_0 = 0`,
    :math:`q_r = \log(\mathrm{on}/\mathrm{off}) / (k_r - k_{r-1})`. In row ``r``
    the score gap between the token itself and key ``j < r`` is then
    :math:`\log(\mathrm{on}/\mathrm{off})\,(t^r - t^j) / (t^r - t^{r-1})`,
    which tends to :math:`\log(\mathrm{on}/\mathrm{off})`, the target's gap, as
    :math:`t \to \infty`. The scores of the masked entries (``j > r``) grow
    without bound on the way.

    Parameters
    ----------
    n : int
        Number of tokens.
    t : float
        Ratio of neighbouring keys, above 1.

    Returns
    -------
    q, k : ndarray, shape (n,) each
        The head's one query and one key per token (``d_k = 1``).

    Examples
    --------
    >>> q, k = causal_width_one_head(3, 10.0)
    >>> k
    array([  1.,  10., 100.])
    >>> (q / np.log(8)).round(4)                 # log 8 / (10 - 1), log 8 / (100 - 10)
    array([0.    , 0.1111, 0.0111])
    """
    n = check_size(n, "n", high=2 ** 20)
    t = check_number(t, "t", low=1.0, low_open=True)
    on, off = _positive(on, "on"), _positive(off, "off")
    if (n - 1) * np.log(t) > np.log(np.finfo(float).max) - 1:
        raise ValueError(f"t={t:g} with n={n} gives keys up to t**{n - 1}, which overflows float64; use a smaller t "
                         f"(at most about {np.exp((np.log(np.finfo(float).max) - 1) / max(n - 1, 1)):.4g} here)")
    gap = on / off if np.isfinite(on / off) and on / off > 0 else None
    k = t ** np.arange(n, dtype=float)  # (n,)
    q = np.zeros(n)
    with np.errstate(under="ignore"):
        q[1:] = (np.log(gap) if gap is not None else np.log(on) - np.log(off)) / np.diff(k)  # (n - 1,)
    if not (np.diff(k) > 0).all():
        raise ValueError(f"t={t!r} is so close to 1 that neighbouring keys t**j are equal in float64; use a larger t")
    return q, k


# ================================================================ the floor
def _as_target(A, name="target", *, causal=False):
    """A (T, S) matrix of weights whose rows sum to 1, with T >= 1.

    Every weight is above 0; with ``causal``, every weight on or below the
    diagonal is above 0 and every weight above it is exactly 0.
    """
    causal = check_flag(causal, "causal")
    A = check_prob_rows(A, name, ndim=2, legend="(T, S)", positive=not causal)
    check_ndim(A, name, 2, "(T, S)", exact=True)
    if A.shape[0] == 0:
        raise ValueError(f"{name} has no rows (shape {A.shape}); it needs at least one query")
    if check_causal(causal, *A.shape):
        allowed = np.tril(np.ones(A.shape, dtype=bool))
        if (A[~allowed] != 0).any():
            raise ValueError(f"with causal=True, {name} (shape {A.shape}) must be 0 above the diagonal: "
                             "a query cannot see later keys")
        if (A[allowed] <= 0).any():
            raise ValueError(f"with causal=True, every weight of {name} (shape {A.shape}) on or below the "
                             "diagonal must be above 0")
    return A


def score_rank_floor(A, *, tol=None):
    r"""The least rank of any score matrix ``S`` with ``softmax(S) = A`` (row by row).

    Every such ``S`` is ``log A`` plus one constant per row, and subtracting
    each row's mean removes those constants, so the floor is

    .. math:: \operatorname{rank}\big(\log A\,(I - J/n)\big)

    with ``J`` the ``n x n`` matrix of ones. It is ``rank(log A) - 1`` when
    the all-ones row lies in the row space of ``log A`` (equivalently: every
    ``x`` with ``log A @ x = 0`` has ``sum(x) = 0``), and ``rank(log A)``
    otherwise. A head of width ``d_k``, with ``Q`` and ``K`` free, produces
    ``A`` exactly if and only if ``d_k`` is at least the floor.

    Parameters
    ----------
    A : array_like, shape (T, n)
        Attention weights: every entry above 0, every row summing to 1.
    tol : float, optional
        Singular values of the centred log at or below ``tol`` count as zero.
        By default ``max(T, n) * eps * max|log A|``, with ``eps`` the machine
        precision of ``A``'s dtype: the size of the rounding left in the
        centred log.

    Returns
    -------
    int

    Examples
    --------
    >>> score_rank_floor(target_diagonal(3))      # log A = a I + b J: rank 3, centred rank 2
    2
    >>> score_rank_floor(target_first_token(5))   # every row the same: rank 1
    1
    """
    return centred_log_spectrum(A, tol=tol).floor


@dataclass(frozen=True)
class CentredLogSpectrum:
    """The singular values of ``log A`` with each row's mean removed, and the rank they give.

    Attributes
    ----------
    singular_values : ndarray, shape (min(T, n),)
        Largest first.
    tol : float
        Values at or below it count as zero (rounding).
    floor : int
        How many are above ``tol``: :func:`score_rank_floor`.
    """

    singular_values: np.ndarray
    tol: float
    floor: int


def centred_log_spectrum(A, *, tol=None):
    r"""The spectrum behind :func:`score_rank_floor`: singular values of :math:`\log A\,(I - J/n)`.

    Parameters are those of :func:`score_rank_floor`.

    Returns
    -------
    CentredLogSpectrum

    Examples
    --------
    >>> s = centred_log_spectrum(target_first_token(4))
    >>> s.floor, bool(s.singular_values[1] <= s.tol)
    (1, True)
    """
    A = _as_target(A, "A")
    L = np.log(A.astype(np.result_type(A, np.float32), copy=False))  # (T, n); float16 has no SVD: float32
    C = L - L.mean(axis=1, keepdims=True)  # log A (I - J/n), (T, n)
    if tol is None:
        tol = max(A.shape) * np.finfo(A.dtype).eps * float(np.abs(L).max())
    else:
        tol = check_number(tol, "tol", low=0.0)
    sv = np.linalg.svd(C, compute_uv=False)
    sv.flags.writeable = False
    return CentredLogSpectrum(singular_values=sv, tol=float(tol), floor=int(np.sum(sv > tol)))


def kl_rows(target, weights, *, causal=False):
    r"""KL divergence of each row: :math:`\sum_j A_{rj} (\log A_{rj} - \log W_{rj})`.

    The target's rows and shape are checked here; the divergence itself is
    :func:`mha.fitting.kl_divergence` (rounding below zero is clipped to 0 there).
    With ``causal``, the target is 0 above the diagonal (see :func:`fit_scores`)
    and those entries count as 0.

    Examples
    --------
    >>> A = target_diagonal(3)
    >>> kl_rows(A, A)
    array([0., 0., 0.])
    """
    A = _as_target(target, causal=causal)
    W = check_prob_rows(weights, "weights", ndim=2, legend="(T, S)")
    if W.shape != A.shape:
        raise ValueError(f"weights must have the target's shape {A.shape}, got {W.shape}")
    return kl_divergence(A, W)  # (T, S), (T, S) -> (T,)


def _log_softmax(S):
    m = S.max(axis=1, keepdims=True)
    return S - m - np.log(np.exp(S - m).sum(axis=1, keepdims=True))


def _masked_log_softmax(S, allowed):
    """Log-weights of the allowed entries of ``S``; masked entries get ``-inf``."""
    return _log_softmax(np.where(allowed, S, -np.inf))  # (T, S)


def _row_kl(A, log_A, log_W, allowed):
    """KL of each row, summed over the allowed entries only (0 log 0 counts as 0)."""
    return np.sum(A * np.where(allowed, log_A - log_W, 0.0), axis=1)  # (T, S) -> (T,)


def _loss_and_grad(x, A, log_A, d_k, allowed):
    """Summed KL(A ‖ softmax(Q Kᵀ)) over the allowed entries and its gradient in (Q, K), in one vector."""
    T, S = A.shape
    Q, K = x[:T * d_k].reshape(T, d_k), x[T * d_k:].reshape(S, d_k)
    log_W = _masked_log_softmax(Q @ K.T, allowed)  # (T, d_k) @ (d_k, S) -> (T, S)
    G = np.exp(log_W) - A  # d loss / d scores, 0 where masked, (T, S)
    loss = float(_row_kl(A, log_A, log_W, allowed).sum())
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
        ``softmax(scores)`` along each row (0 on the masked entries if ``causal``).
    kl_rows : ndarray, shape (T,)
        KL(target row ‖ weights row).
    kl : float
        ``kl_rows.sum()``.
    singular_values : ndarray, shape (min(T, S),)
        Of ``scores``; at most ``d_k`` of them are non-zero.
    iterations : int
        L-BFGS iterations of the winning start.
    start_kls : tuple of float
        The KL each start ended at (with ``spectral``, the first start is the spectral one).
    spectral : bool
        Whether the first start was the spectral one.
    causal : bool
        Whether each query saw only itself and the keys before it.
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
    spectral: bool = True
    causal: bool = False


def _readonly(*arrays):
    for a in arrays:
        a.setflags(write=False)


def _filled_log(A, allowed):
    """log A on the allowed entries; each masked entry gets its row's mean over the allowed ones."""
    log_A = np.log(np.where(allowed, A, 1.0))  # (T, S)
    row_mean = log_A.sum(axis=1, keepdims=True) / allowed.sum(axis=1, keepdims=True)  # (T, 1)
    return np.where(allowed, log_A, row_mean)


@functools.lru_cache(maxsize=512)
def _fit_cached(raw, shape, d_k, seed, restarts, spectral, causal):
    A = np.frombuffer(raw, dtype=np.float64).reshape(shape).copy()
    allowed = np.tril(np.ones(shape, dtype=bool)) if causal else np.ones(shape, dtype=bool)
    log_A = _filled_log(A, allowed)
    rng = np.random.default_rng(seed)
    size = (shape[0] + shape[1]) * d_k
    best, kls = None, []
    for k in range(restarts + spectral):
        x0 = _spectral_start(log_A, d_k) if spectral and k == 0 else rng.standard_normal(size)
        x, loss, it = _minimise(lambda v: _loss_and_grad(v, A, log_A, d_k, allowed), x0)
        kls.append(max(loss, 0.0))
        if best is None or loss < best[1]:
            best = (x, loss, it)
        if best[1] < 1e-12:  # KL cannot go below 0: nothing left to find
            break
    x, _, it = best
    Q, K = x[:shape[0] * d_k].reshape(shape[0], d_k), x[shape[0] * d_k:].reshape(shape[1], d_k)
    scores = Q @ K.T  # (T, d_k) @ (d_k, S) -> (T, S)
    # From log-softmax, not log(weights): a fitted weight may underflow to 0 where the target is tiny.
    log_W = _masked_log_softmax(scores, allowed)  # (T, S)
    weights = np.exp(log_W)
    per_row = np.maximum(_row_kl(A, log_A, log_W, allowed), 0.0)
    sv = np.linalg.svd(scores, compute_uv=False)
    _readonly(A, Q, K, scores, weights, per_row, sv)
    return ScoreFit(target=A, d_k=d_k, Q=Q, K=K, scores=scores, weights=weights, kl_rows=per_row,
                    kl=float(per_row.sum()), singular_values=sv, iterations=it, start_kls=tuple(kls),
                    spectral=spectral, causal=causal)


def fit_scores(target, d_k, *, seed=0, restarts=4, spectral=True, causal=False):
    r"""Fit a head of width ``d_k`` to a target attention pattern.

    Minimises, over ``Q`` (T, d_k) and ``K`` (S, d_k),

    .. math:: \sum_r \operatorname{KL}\big(A_r \,\|\, \operatorname{softmax}(Q K^\top)_r\big)
              = \sum_{r,j} A_{rj} \big(\log A_{rj} - \log \operatorname{softmax}(Q K^\top)_{rj}\big)

    with L-BFGS and the analytic gradient :math:`(W - A) K` for ``Q`` and
    :math:`(W - A)^\top Q` for ``K``, where :math:`W = \operatorname{softmax}(Q K^\top)`.
    With ``causal``, row ``r`` of the softmax sees keys ``0 .. r`` only
    (the others get weight 0) and the sum runs over those keys.
    With ``spectral``, the first start is the best rank-``d_k`` approximation
    of the row-centred ``log A`` (under a causal mask, each hidden entry is
    first set to its row's mean); then come ``restarts`` seeded random starts,
    and the best end point wins. Results are cached, and the returned arrays
    are read-only.

    Parameters
    ----------
    target : array_like, shape (T, S)
        Rows are probability distributions with positive entries.
    d_k : int
        Head width.
    seed : int
        Seed of the random starts.
    restarts : int
        Number of random starts after the spectral one. At least 1 without it.
    spectral : bool
        Start from the spectral approximation first. At ``d_k`` at or above the
        floor that start is already an exact fit; ``False`` gives a fit that
        owes nothing to it.
    causal : bool
        Mask each query from the keys after it. The target must then be 0
        above the diagonal and above 0 on and below it.

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
    causal, spectral = check_flag(causal, "causal"), check_flag(spectral, "spectral")
    A = _as_target(target, causal=causal)
    d_k = check_size(d_k, "d_k", high=MAX_N)
    seed = check_count(seed, "seed")
    restarts = check_size(restarts, "restarts", low=0, high=1000)
    if not spectral and restarts == 0:
        raise ValueError("spectral=False needs restarts >= 1: with neither, there is no start to fit from")
    return _fit_cached(np.ascontiguousarray(A, dtype=np.float64).tobytes(), A.shape, d_k, seed, restarts,
                       spectral, causal)


def clear_fit_cache():
    """Forget the fits :func:`fit_scores` has cached (for timing a cold start)."""
    _fit_cached.cache_clear()
