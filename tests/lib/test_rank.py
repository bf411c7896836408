"""Tests of mha.rank: target patterns, the rank floor of a pattern (exact, and against the simple
bound), the d_k fits (also from random starts and under a causal mask), inputs."""

import warnings

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import rank


SETTINGS = settings(max_examples=40, deadline=None)


# ================================================================ fits: the floor
@pytest.mark.parametrize("n", [3, 4, 5])
def test_diagonal_target_needs_exactly_n_minus_1(n):
    A = rank.target_diagonal(n)
    kls = {d_k: rank.fit_scores(A, d_k).kl for d_k in range(1, n + 1)}
    for d_k in range(1, n - 1):
        assert kls[d_k] > 0.1, f"n={n}, d_k={d_k}: KL {kls[d_k]} should stay clearly above 0"
    assert kls[n - 1] < 1e-6 and kls[n] < 1e-6


def test_diagonal_target_of_size_3_is_the_sources_target():
    np.testing.assert_allclose(rank.target_diagonal(3), np.where(np.eye(3, dtype=bool), 0.8, 0.1))
    A = rank.target_diagonal(5)
    np.testing.assert_allclose(A.sum(axis=1), 1)
    assert np.allclose(A[0, 0] / A[0, 1], 8)


@pytest.mark.parametrize("n, d_k", [(4, 1), (4, 2), (5, 2), (5, 3)])
def test_fit_is_consistent(n, d_k):
    fit = rank.fit_scores(rank.target_diagonal(n), d_k)
    assert fit.Q.shape == (n, d_k) and fit.K.shape == (n, d_k) and fit.d_k == d_k
    np.testing.assert_allclose(fit.scores, fit.Q @ fit.K.T)
    np.testing.assert_allclose(fit.weights, mha.softmax(fit.scores))
    np.testing.assert_allclose(fit.kl_rows, rank.kl_rows(fit.target, fit.weights), atol=1e-12)
    assert fit.kl == pytest.approx(fit.kl_rows.sum())
    assert np.sum(fit.singular_values > 1e-8 * fit.singular_values.max()) <= d_k
    assert fit.kl == pytest.approx(min(fit.start_kls), abs=1e-12)


@pytest.mark.parametrize("n, d_k", [(4, 2), (5, 2), (5, 3)])
def test_fit_does_not_depend_on_the_seed(n, d_k):
    kls = [rank.fit_scores(rank.target_diagonal(n), d_k, seed=s).kl for s in range(3)]
    assert max(kls) - min(kls) < 1e-6


@pytest.mark.parametrize("n, d_k", [(4, 1), (4, 2), (5, 3)])
def test_fit_is_no_worse_than_torch_lbfgs(n, d_k):
    """An outside optimiser (PyTorch L-BFGS from many random starts) finds nothing better."""
    torch = pytest.importorskip("torch")
    A = torch.from_numpy(rank.target_diagonal(n))
    gen = torch.Generator().manual_seed(0)
    best = np.inf
    for _ in range(8):
        Q = torch.randn(n, d_k, generator=gen, dtype=torch.float64, requires_grad=True)
        K = torch.randn(n, d_k, generator=gen, dtype=torch.float64, requires_grad=True)
        opt = torch.optim.LBFGS([Q, K], max_iter=500, tolerance_grad=1e-10, tolerance_change=1e-14,
                                line_search_fn="strong_wolfe")

        def loss():
            opt.zero_grad()
            value = torch.sum(A * (A.log() - torch.log_softmax(Q @ K.T, dim=1)))
            value.backward()
            return value

        opt.step(loss)
        best = min(best, float(loss().detach()))
    assert rank.fit_scores(rank.target_diagonal(n), d_k).kl <= best + 1e-6


def _dirichlet(n, seed):
    return rank.target_random(n, seed=seed)


@settings(max_examples=15, deadline=None)
@given(st.integers(2, 5), st.integers(0, 10_000))
def test_random_targets_reached_at_n_minus_1_and_kl_falls_with_d_k(n, seed):
    A = _dirichlet(n, seed)
    kls = [rank.fit_scores(A, d_k).kl for d_k in range(1, n + 1)]
    assert kls[n - 2] < 1e-6  # d_k = n - 1
    assert all(b <= a + 1e-6 for a, b in zip(kls, kls[1:]))  # a wider head never does worse


def test_structured_targets_need_little_width_random_ones_need_n_minus_1():
    n = 6
    assert rank.fit_scores(rank.target_first_token(n), 1).kl < 1e-6
    assert rank.fit_scores(rank.target_previous_token(n), 2).kl < 1e-6
    assert rank.fit_scores(rank.target_local_band(n), 2).kl < 1e-6
    assert rank.fit_scores(rank.target_previous_token(n), 1).kl > 0.1
    assert rank.fit_scores(rank.target_random(n, seed=0), n - 2).kl > 1e-3
    assert rank.fit_scores(rank.target_random(n, seed=0), n - 1).kl < 1e-6


def test_previous_token_pattern_looks_back():
    A = rank.target_previous_token(5)
    assert (A[1:].argmax(axis=1) == np.arange(4)).all() and A[0].argmax() == 0
    np.testing.assert_allclose(A.sum(axis=1), 1)


def test_fit_of_a_rectangular_target():
    A = rank.target_random(4, seed=3)[:3]  # 3 queries, 4 keys: centred log A has rank <= min(3, 4 - 1)
    fit = rank.fit_scores(A, 3)
    assert fit.Q.shape == (3, 3) and fit.K.shape == (4, 3) and fit.kl < 1e-6
    assert rank.fit_scores(A, 2).kl > 1e-3


def test_fit_arrays_are_read_only():
    fit = rank.fit_scores(rank.target_diagonal(3), 1)
    with pytest.raises(ValueError):
        fit.Q[0, 0] = 1.0
    with pytest.raises(ValueError):
        fit.weights[0, 0] = 1.0


def test_tiny_target_weights_do_not_make_the_kl_infinite():
    fit = rank.fit_scores(rank.target_previous_token(6), 1)
    assert np.isfinite(fit.kl) and fit.kl > 0


@pytest.mark.parametrize("target, d_k, kwargs, error, words", [
    (np.eye(3), 1, {}, ValueError, "above 0"),
    (np.full((3, 3), 0.5), 1, {}, ValueError, "sums to 1.5"),
    (np.full(3, 1 / 3), 1, {}, ValueError, "axes"),
    (np.full((2, 2), np.nan), 1, {}, ValueError, "finite"),
    ([["a", "b"]], 1, {}, TypeError, "real numbers"),
    (None, 1, {}, TypeError, "target"),
    (rank.target_diagonal(3), 0, {}, ValueError, "d_k"),
    (rank.target_diagonal(3), 1.5, {}, TypeError, "d_k"),
    (rank.target_diagonal(3), 1, {"seed": -1}, ValueError, "seed"),
    (rank.target_diagonal(3), 1, {"restarts": "2"}, TypeError, "restarts"),
    (rank.target_diagonal(3), 1, {"restarts": -1}, ValueError, "restarts"),
    (rank.target_diagonal(3), True, {}, TypeError, "d_k"),
    (np.zeros((0, 3)), 1, {}, ValueError, "no rows"),
    (np.ones((1, 2, 2)) / 2, 1, {}, ValueError, "axes"),
    (np.ma.masked_array(rank.target_diagonal(3)), 1, {}, TypeError, "masked"),
])
def test_fit_bad_input(target, d_k, kwargs, error, words):
    with pytest.raises(error, match=words):
        rank.fit_scores(target, d_k, **kwargs)


@pytest.mark.parametrize("call, error, words", [
    (lambda: rank.target_diagonal(0), ValueError, "n"),
    (lambda: rank.target_diagonal(3, on=-1), ValueError, "on"),
    (lambda: rank.target_first_token(3, off=[0.1, 0.2]), TypeError, "off"),
    (lambda: rank.target_previous_token(4, width=0), ValueError, "width"),
    (lambda: rank.target_previous_token(40, width=0.2), ValueError, "underflow"),
    (lambda: rank.target_random(3, seed=1.5), TypeError, "seed"),
    (lambda: rank.target_random(3, concentration=0), ValueError, "concentration"),
    (lambda: rank.kl_rows(rank.target_diagonal(3), np.full((2, 2), 0.5)), ValueError, "shape"),
    (lambda: rank.kl_rows(rank.target_diagonal(3), np.ones((3, 3))), ValueError, "sum to 1"),
    (lambda: rank.target_diagonal(3, on=np.nan), ValueError, "on"),
    (lambda: rank.target_local_band(4, width=np.inf), ValueError, "width"),
    (lambda: rank.target_random(3, seed=True), TypeError, "seed"),
])
def test_target_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ================================================================ the floor of a pattern
def centred_rank(L):
    """rank of L (I - J/n) for an integer matrix L, in SymPy's exact arithmetic (no tolerance)."""
    M = sp.Matrix(L.shape[0], L.shape[1], lambda i, j: sp.Rational(int(L[i, j]), 1))
    n = L.shape[1]
    return (M * (sp.eye(n) - sp.ones(n, n) / n)).rank()


def test_floor_of_the_diagonal_target_is_n_minus_1():
    assert rank.score_rank_floor(rank.target_diagonal(3)) == 2
    for n in (4, 6, 9):
        assert rank.score_rank_floor(rank.target_diagonal(n, on=0.5, off=0.2)) == n - 1


def test_floor_of_the_first_token_target_is_1():
    for n in (2, 3, 7):
        assert rank.score_rank_floor(rank.target_first_token(n)) == 1


def test_floor_of_smooth_positional_targets_is_2():
    assert rank.score_rank_floor(rank.target_previous_token(8, width=0.8)) == 2
    assert rank.score_rank_floor(rank.target_local_band(8, width=1.5)) == 2


def test_uniform_target_has_floor_0():
    assert rank.score_rank_floor(np.full((4, 5), 0.2)) == 0  # S = 0 works
    assert rank.score_rank_floor(np.ones((3, 1))) == 0  # one key: every S works


def test_floor_where_log_a_has_two_equal_rows():
    rows = np.array([[0.5, 0.3, 0.2], [0.5, 0.3, 0.2], [0.2, 0.3, 0.5]])
    log_rank = int(np.linalg.matrix_rank(np.log(rows)))
    assert log_rank == 2  # the theorem's bound: rank(log A) - 1 = 1 ...
    assert rank.score_rank_floor(rows) == 2  # ... but no S of rank 1 gives these rows
    C = np.log(rows) - np.log(rows).mean(axis=1, keepdims=True)
    np.testing.assert_allclose(mha.softmax(C), rows, rtol=1e-12)  # the centred log itself reaches it


def test_floor_reaches_the_theorems_bound_when_ones_are_in_the_row_space():
    # Scores of rank 2 whose row space holds the all-ones row: centring removes one rank.
    logits = np.array([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0], [1.0, 2.0, 3.0]])  # row 2 = row 0 + ones
    A = mha.softmax(logits)
    assert rank.score_rank_floor(A) == 1
    assert int(np.linalg.matrix_rank(np.log(A))) == 2


@SETTINGS
@given(st.integers(1, 4), st.integers(2, 7), st.integers(2, 7), st.integers(0, 10**6))
def test_floor_is_the_rank_of_the_centred_scores(r, T, n, seed):
    # Integer scores of rank <= r: their softmax is a target reached by a head of width r.
    rng = np.random.default_rng(seed)
    S = rng.integers(-3, 4, size=(T, r)) @ rng.integers(-3, 4, size=(r, n))  # (T, n)
    A = mha.softmax(S.astype(float))
    floor = rank.score_rank_floor(A)
    assert floor == centred_rank(S) and floor <= min(r, n - 1)


@SETTINGS
@given(st.integers(2, 6), st.integers(0, 10**6))
def test_a_head_as_wide_as_the_floor_fits_and_one_narrower_does_not(n, seed):
    A = rank.target_random(n, seed=seed)
    floor = rank.score_rank_floor(A)
    assert floor == n - 1  # a random pattern: its centred log has full rank n - 1
    assert rank.fit_scores(A, floor, restarts=0).kl < 1e-8


def test_floor_in_float32_uses_float32_rounding():
    A = rank.target_previous_token(6, width=0.9).astype(np.float32)
    A = A / A.sum(axis=1, keepdims=True)
    assert rank.score_rank_floor(A) == 2


@pytest.mark.parametrize("A, kwargs, error, words", [
    (np.eye(3), {}, ValueError, "above 0"),
    (np.full((2, 2), 0.3), {}, ValueError, "sum to 1"),
    (np.full(3, 1 / 3), {}, ValueError, "axes"),
    (np.zeros((0, 3)), {}, ValueError, "no rows"),
    (np.full((2, 2), np.nan), {}, ValueError, "finite"),
    (rank.target_diagonal(3), {"tol": -1.0}, ValueError, "tol"),
    (rank.target_diagonal(3), {"tol": "small"}, TypeError, "tol"),
])
def test_floor_bad_input(A, kwargs, error, words):
    with pytest.raises(error, match=words):
        rank.score_rank_floor(A, **kwargs)


def test_the_tolerance_decides_which_singular_values_count():
    A = rank.target_diagonal(4)  # centred log = log(8) (I - J/4): three singular values log 8, one 0
    assert rank.score_rank_floor(A) == rank.score_rank_floor(A, tol=1e-3) == 3
    assert rank.score_rank_floor(A, tol=2.0) == 3 and rank.score_rank_floor(A, tol=2.1) == 0
    assert rank.score_rank_floor(A, tol=0.0) >= 3  # without a tolerance, rounding may count too

# ===============================================================================================
# Tests of mha.rank: the exact floor against the simple bound, fits from random starts, the causal mask.
# (formerly test_rank_exact_floor_and_mask.py)
# ===============================================================================================


def log_rank(A):
    return int(np.linalg.matrix_rank(np.log(A)))


def ones_in_row_space(A):
    """Is the all-ones row a combination of the rows of log A? (rank does not grow when it is added)."""
    L = np.log(A)
    return int(np.linalg.matrix_rank(np.vstack([L, np.ones(L.shape[1])]))) == int(np.linalg.matrix_rank(L))


# ================================================================ the exact floor
def test_the_floor_is_the_rank_of_log_a_times_the_centring_matrix():
    for A in (rank.target_diagonal(5), rank.target_previous_flat(6), rank.target_random(4, seed=2)[:3]):
        n = A.shape[1]
        P = np.eye(n) - np.ones((n, n)) / n  # I - J/n
        sv = np.linalg.svd(np.log(A) @ P, compute_uv=False)
        np.testing.assert_allclose(rank.centred_log_spectrum(A).singular_values, sv, atol=1e-12)
        assert rank.score_rank_floor(A) == int(np.linalg.matrix_rank(np.log(A) @ P))


@pytest.mark.parametrize("n", [3, 5, 8])
def test_flat_rest_target_the_simple_bound_is_loose(n):
    A = rank.target_previous_flat(n)
    np.testing.assert_array_equal(A[0], A[1])  # the first token leans on itself, as the second does
    assert log_rank(A) == n - 1  # so log A is singular ...
    assert rank.score_rank_floor(A) == n - 1  # ... yet the exact floor is n - 1, not rank(log A) - 1
    assert not ones_in_row_space(A)
    # the null vector x of log A (log A x = 0) is not orthogonal to the ones
    x = np.linalg.svd(np.log(A))[2][-1]
    assert np.abs(np.log(A) @ x).max() < 1e-12 and abs(x.sum()) > 0.1


@pytest.mark.parametrize("A", [rank.target_diagonal(4), rank.target_random(5, seed=1),
                               rank.target_local_band(7, width=1.5), rank.target_previous_token(6, width=0.8)])
def test_targets_where_the_simple_bound_is_exact(A):
    assert ones_in_row_space(A)
    assert rank.score_rank_floor(A) == log_rank(A) - 1


def test_first_token_target_the_simple_bound_says_zero_the_floor_is_one():
    A = rank.target_first_token(5)  # every row the same: log A has rank 1, its row is not constant
    assert log_rank(A) == 1 and not ones_in_row_space(A)
    assert rank.score_rank_floor(A) == 1


@SETTINGS
@given(st.integers(1, 3), st.integers(2, 6), st.integers(2, 6), st.booleans(), st.integers(0, 10**6))
def test_floor_is_rank_minus_one_exactly_when_ones_lie_in_the_row_space(r, T, n, equal_rows, seed):
    rng = np.random.default_rng(seed)
    S = (rng.integers(-3, 4, size=(T, r)) @ rng.integers(-3, 4, size=(r, n))).astype(float)  # rank <= r
    if equal_rows:
        S[-1] = S[0]
    A = mha.softmax(S)
    floor, simple = rank.score_rank_floor(A), log_rank(A) - 1
    assert floor in (simple, simple + 1)
    assert (floor == simple) == ones_in_row_space(A)


# ================================================================ fits from random starts only
@pytest.mark.parametrize("n", [3, 4, 5])
def test_random_starts_alone_reach_the_diagonal_target_at_n_minus_1(n):
    A = rank.target_diagonal(n)
    fit = rank.fit_scores(A, n - 1, spectral=False)
    assert not fit.spectral and fit.kl < 1e-9
    below = rank.fit_scores(A, n - 2, spectral=False) if n > 2 else None
    assert below.kl > 0.1 and len(below.start_kls) == 4


def test_random_starts_agree_with_the_spectral_start_below_the_floor():
    A = rank.target_diagonal(5)
    for d_k in (1, 2, 3):
        with_spectral = rank.fit_scores(A, d_k)
        random_only = rank.fit_scores(A, d_k, spectral=False)
        assert random_only.kl == pytest.approx(with_spectral.kl, abs=1e-6)


# ================================================================ the causal mask
def test_causal_diagonal_target():
    A = rank.target_causal_diagonal(4)
    np.testing.assert_allclose(A.sum(axis=1), 1)
    assert (A[np.triu_indices(4, 1)] == 0).all() and (A[np.tril_indices(4)] > 0).all()
    assert A[0, 0] == 1 and A[3, 3] / A[3, 0] == pytest.approx(8)


@pytest.mark.parametrize("n", [4, 5])
def test_causal_width_one_head_approaches_the_target_without_reaching_it(n):
    A = rank.target_causal_diagonal(n)
    kls, hidden = [], []
    for t in (10.0, 100.0, 1000.0):
        q, k = rank.causal_width_one_head(n, t)
        _, W = mha.scaled_dot_product_attention(q[:, None], k[:, None], np.eye(n), causal=True)
        kls.append(float(rank.kl_rows(A, W, causal=True).sum()))
        hidden.append(np.abs(np.outer(q, k)[np.triu_indices(n, 1)]).max())
    assert all(0 < b < a / 50 for a, b in zip(kls, kls[1:]))  # about 1 / t^2
    assert all(b > 50 * a for a, b in zip(hidden, hidden[1:]))  # the masked scores run away


@pytest.mark.parametrize("n", [4, 5])
def test_causal_fit_of_width_one_comes_close_the_unmasked_one_cannot(n):
    causal = rank.fit_scores(rank.target_causal_diagonal(n), 1, causal=True, spectral=False)
    unmasked = rank.fit_scores(rank.target_diagonal(n), 1)
    assert causal.causal and causal.kl < 0.01 and unmasked.kl > 1.0


def test_causal_fit_is_consistent_with_the_library_head():
    A = rank.target_causal_diagonal(5)
    fit = rank.fit_scores(A, 2, causal=True, restarts=1)
    assert (fit.weights[np.triu_indices(5, 1)] == 0).all()
    np.testing.assert_allclose(fit.scores, fit.Q @ fit.K.T)
    _, W = mha.scaled_dot_product_attention(fit.Q * np.sqrt(2), fit.K, np.eye(5), causal=True)
    np.testing.assert_allclose(fit.weights, W, atol=1e-12)
    np.testing.assert_allclose(fit.kl_rows, rank.kl_rows(A, fit.weights, causal=True), atol=1e-10)


def test_causal_fit_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = rank.fit_scores(rank.target_causal_diagonal(3), 1, causal=True, restarts=1)
    assert np.isfinite(fit.kl)


@pytest.mark.parametrize("call, error, words", [
    (lambda: rank.fit_scores(rank.target_diagonal(3), 1, causal=True), ValueError, "above the diagonal"),
    (lambda: rank.fit_scores(np.tril(np.ones((3, 3))) * [[1], [0.5], [1 / 3]] * [[1, 0, 0], [0, 2, 0], [1, 1, 1]],
                             1, causal=True), ValueError, "on or below"),
    (lambda: rank.fit_scores(np.full((2, 3), 1 / 3), 1, causal=True), ValueError, "as many queries"),
    (lambda: rank.fit_scores(rank.target_causal_diagonal(3), 1, causal="yes"), TypeError, "causal"),
    (lambda: rank.fit_scores(rank.target_causal_diagonal(3), 1), ValueError, "above 0"),
    (lambda: rank.fit_scores(rank.target_diagonal(3), 1, spectral=False, restarts=0), ValueError, "restarts"),
    (lambda: rank.fit_scores(rank.target_diagonal(3), 1, spectral=1), TypeError, "spectral"),
    (lambda: rank.causal_width_one_head(4, 1.0), ValueError, "t"),
    (lambda: rank.causal_width_one_head(4, "big"), TypeError, "t"),
    (lambda: rank.causal_width_one_head(0, 10.0), ValueError, "n"),
    (lambda: rank.target_causal_diagonal(3, off=0), ValueError, "off"),
    (lambda: rank.kl_rows(rank.target_causal_diagonal(3), np.full((3, 3), 1 / 3)), ValueError, "above 0"),
])
def test_mask_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()
