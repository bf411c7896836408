"""Tests of mha.rank: the q sweep's facts, the d_k floor, the head split, inputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import rank

SETTINGS = settings(max_examples=40, deadline=None)
KEYS = (2, 0, 1)  # "I love LLMs": I has the largest key, love the smallest, LLMs the middle one


# ================================================================ q sweep
def test_q_sweep_rows_are_softmax_of_q_times_keys():
    q = np.linspace(-3, 3, 7)
    W = rank.q_sweep_weights(q, KEYS)
    assert W.shape == (7, 3)
    for qi, row in zip(q, W):
        e = np.exp(qi * np.array(KEYS, float))
        np.testing.assert_allclose(row, e / e.sum(), rtol=1e-12)
    assert rank.q_sweep_weights(1.5, KEYS).shape == (3,)


def test_only_the_largest_or_smallest_key_ever_wins():
    W = rank.q_sweep_weights(np.linspace(-30, 30, 6001), KEYS)
    winners = set(W.argmax(axis=1)[np.ptp(W, axis=1) > 1e-12].tolist())
    assert winners == {0, 1}  # I and love; never LLMs
    assert (W[:, 2] <= W.max(axis=1)).all()


def test_middle_token_peaks_at_exactly_one_third_at_q_zero():
    np.testing.assert_array_equal(rank.q_sweep_weights(0.0, KEYS), np.full(3, 1 / 3))
    q, w = rank.q_peak(KEYS, 2)
    assert q == 0.0 and w == pytest.approx(1 / 3, abs=1e-15)
    grid = rank.q_sweep_weights(np.linspace(-10, 10, 2001), KEYS)[:, 2]
    assert grid.max() <= 1 / 3 + 1e-15
    assert rank.q_peak(KEYS, 0) == (np.inf, 1.0) and rank.q_peak(KEYS, 1) == (-np.inf, 1.0)


def test_love_passes_095_below_q_minus_2_99():
    q_star = rank.q_threshold(KEYS, 1, 0.95)
    # love's weight is 1 / (1 + e^{2q} + e^{q}); it equals 0.95 where x = e^q solves x^2 + x = 1/19.
    exact = np.log((-1 + np.sqrt(1 + 4 / 19)) / 2)
    assert q_star == pytest.approx(exact, abs=1e-10)
    assert -3.0 < q_star < -2.99
    w = rank.q_sweep_weights([q_star - 1e-6, q_star, q_star + 1e-6, -2.99], KEYS)[:, 1]
    assert w[0] > 0.95 > w[2] and w[1] == pytest.approx(0.95, abs=1e-9) and w[3] < 0.95


@st.composite
def distinct_keys(draw):
    n = draw(st.integers(3, 6))
    keys = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n, unique=True))
    return np.array(keys, float)


@SETTINGS
@given(distinct_keys(), st.floats(-8, 8).filter(lambda q: abs(q) > 1e-3))
def test_winner_is_an_extreme_key_for_any_keys(keys, q):
    w = rank.q_sweep_weights(q, keys)
    assert w.argmax() == (keys.argmax() if q > 0 else keys.argmin())


@SETTINGS
@given(distinct_keys(), st.floats(0.4, 0.99))
def test_thresholds_of_extreme_keys(keys, p):
    lo, hi = int(keys.argmin()), int(keys.argmax())
    q_lo, q_hi = rank.q_threshold(keys, lo, p), rank.q_threshold(keys, hi, p)
    w = rank.q_sweep_weights([q_lo - 1e-3, q_lo + 1e-3, q_hi - 1e-3, q_hi + 1e-3], keys)
    assert w[0, lo] > p > w[1, lo]  # smallest key: above p for q < q*
    assert w[2, hi] < p < w[3, hi]  # largest key: above p for q > q*


@SETTINGS
@given(distinct_keys())
def test_middle_keys_peak_below_the_winner(keys):
    grid = np.linspace(-12, 12, 481)
    W = rank.q_sweep_weights(grid, keys)
    for j in np.argsort(keys)[1:-1]:
        q, w = rank.q_peak(keys, int(j))
        assert np.isfinite(q)
        assert w >= W[:, j].max() - 1e-9  # no grid point beats the peak
        at_peak = rank.q_sweep_weights(q, keys)
        assert at_peak[j] == pytest.approx(w, abs=1e-12)
        assert at_peak.max() > w or np.isclose(q, 0.0)  # someone else leads, or all tie at q = 0


@pytest.mark.parametrize("call, error, words", [
    (lambda: rank.q_threshold(KEYS, 2), ValueError, "q_peak"),
    (lambda: rank.q_threshold(KEYS, 1, p=1.0), ValueError, "p must be"),
    (lambda: rank.q_threshold((1, 1, 0), 0, p=0.6), ValueError, "1/2"),
    (lambda: rank.q_threshold(KEYS, 3), ValueError, "index=3"),
    (lambda: rank.q_threshold(KEYS, 1.0), TypeError, "index"),
    (lambda: rank.q_sweep_weights(0.0, (1,)), ValueError, "keys"),
    (lambda: rank.q_sweep_weights(0.0, [[1, 2]]), ValueError, "keys"),
    (lambda: rank.q_sweep_weights(0.0, (1, np.nan)), ValueError, "keys"),
    (lambda: rank.q_sweep_weights([[0.0]], KEYS), ValueError, "q_values"),
    (lambda: rank.q_sweep_weights("a", KEYS), TypeError, "q_values"),
])
def test_q_sweep_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ================================================================ d_k sweep: the floor
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
    (np.eye(3), 1, {}, ValueError, "positive"),
    (np.full((3, 3), 0.5), 1, {}, ValueError, "sums to 1.5"),
    (np.full(3, 1 / 3), 1, {}, ValueError, "matrix"),
    (np.full((2, 2), np.nan), 1, {}, ValueError, "finite"),
    ([["a", "b"]], 1, {}, TypeError, "real numbers"),
    (None, 1, {}, TypeError, "target"),
    (rank.target_diagonal(3), 0, {}, ValueError, "d_k"),
    (rank.target_diagonal(3), 1.5, {}, TypeError, "d_k"),
    (rank.target_diagonal(3), 1, {"seed": -1}, ValueError, "seed"),
    (rank.target_diagonal(3), 1, {"restarts": "2"}, TypeError, "restarts"),
])
def test_fit_bad_input(target, d_k, kwargs, error, words):
    with pytest.raises(error, match=words):
        rank.fit_scores(target, d_k, **kwargs)


@pytest.mark.parametrize("call, error, words", [
    (lambda: rank.target_diagonal(0), ValueError, "n"),
    (lambda: rank.target_diagonal(3, on=-1), ValueError, "on"),
    (lambda: rank.target_first_token(3, off=[0.1, 0.2]), ValueError, "off"),
    (lambda: rank.target_previous_token(4, width=0), ValueError, "width"),
    (lambda: rank.target_previous_token(40, width=0.2), ValueError, "underflow"),
    (lambda: rank.target_random(3, seed=1.5), TypeError, "seed"),
    (lambda: rank.target_random(3, concentration=0), ValueError, "concentration"),
    (lambda: rank.kl_rows(rank.target_diagonal(3), np.ones((2, 2))), ValueError, "shape"),
])
def test_target_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


# ================================================================ h sweep: who gets what
@st.composite
def split_sizes(draw):
    T = draw(st.integers(1, 5))
    h = draw(st.integers(1, 6))
    d_k = draw(st.integers(1, 4))
    return T, h * d_k, h


@SETTINGS
@given(split_sizes())
def test_right_split_traces_split_heads(sizes):
    T, d, h = sizes
    X = np.random.default_rng(d * 7 + T).normal(size=(T, d))
    split = rank.head_split(T, d, h)
    np.testing.assert_array_equal(X[split.token, split.column], mha.split_heads(X, h))
    d_k = d // h
    for i in range(h):  # head i: columns i*d_k .. (i+1)*d_k - 1 of every token, tokens in order
        np.testing.assert_array_equal(split.column[i], np.tile(np.arange(i * d_k, (i + 1) * d_k), (T, 1)))
        np.testing.assert_array_equal(split.token[i], np.repeat(np.arange(T)[:, None], d_k, axis=1))
    assert not split.mixes_tokens


@SETTINGS
@given(split_sizes())
def test_wrong_split_traces_the_direct_reshape_and_mixes_tokens(sizes):
    T, d, h = sizes
    X = np.random.default_rng(d * 7 + T).normal(size=(T, d))
    wrong = rank.head_split(T, d, h, wrong=True)
    np.testing.assert_array_equal(X[wrong.token, wrong.column], X.reshape(h, T, d // h))
    assert wrong.mixes_tokens == (h > 1 and T > 1)


@SETTINGS
@given(split_sizes(), st.booleans())
def test_owner_is_the_inverse_of_the_split(sizes, wrong):
    T, d, h = sizes
    split = rank.head_split(T, d, h, wrong=wrong)
    heads = np.broadcast_to(np.arange(h)[:, None, None], split.token.shape)
    np.testing.assert_array_equal(split.owner[split.token, split.column], heads)
    assert np.bincount(split.owner.ravel(), minlength=h).tolist() == [T * d // h] * h


def test_divisors_and_split_errors():
    assert rank.divisors(12) == (1, 2, 3, 4, 6, 12) and rank.divisors(7) == (1, 7)
    with pytest.raises(ValueError, match="h=5 does not divide"):
        rank.head_split(3, 12, 5)
    with pytest.raises(TypeError, match="T"):
        rank.head_split(2.0, 4, 2)


def test_h_sweep_frames_of_the_worked_example():
    ex = mha.examples.i_love_llms()
    frames = rank.h_sweep_frames(ex)
    assert [f.h for f in frames] == [1, 2, 4] and [f.d_k for f in frames] == [4, 2, 1]
    _, A = mha.multi_head_attention(ex.X, *ex.weights, h=2)
    np.testing.assert_array_equal(frames[1].weights, A)
    for f in frames:
        np.testing.assert_allclose(f.weights.sum(axis=-1), 1)
        assert not f.right.mixes_tokens and f.wrong.mixes_tokens == (f.h > 1)


def test_random_layer_is_seeded():
    a, b = rank.random_layer(("x", "y"), 6, seed=1), rank.random_layer(("x", "y"), 6, seed=1)
    c = rank.random_layer(("x", "y"), 6, seed=2)
    np.testing.assert_array_equal(a.W_Q, b.W_Q)
    assert not np.allclose(a.W_Q, c.W_Q)
    assert a.X.shape == (2, 6) and a.tokens == ("x", "y")
    with pytest.raises(ValueError, match="tokens"):
        rank.random_layer((), 6)
