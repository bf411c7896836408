"""Tests of mha.rank: the exact floor against the simple bound, fits from random starts, the causal mask."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import rank

SETTINGS = settings(max_examples=40, deadline=None)


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
