"""Tests of mha.width_one: the q sweep of a d_k = 1 head, its thresholds and peaks, inputs."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha import width_one

SETTINGS = settings(max_examples=40, deadline=None)
KEYS = (2, 0, 1)  # "I love LLMs": I has the largest key, love the smallest, LLMs the middle one


def test_q_sweep_rows_are_softmax_of_q_times_keys():
    q = np.linspace(-3, 3, 7)
    W = width_one.q_sweep_weights(q, KEYS)
    assert W.shape == (7, 3)
    for qi, row in zip(q, W):
        e = np.exp(qi * np.array(KEYS, float))
        np.testing.assert_allclose(row, e / e.sum(), rtol=1e-12)
    assert width_one.q_sweep_weights(1.5, KEYS).shape == (3,)


def test_only_the_largest_or_smallest_key_ever_wins():
    W = width_one.q_sweep_weights(np.linspace(-30, 30, 6001), KEYS)
    winners = set(W.argmax(axis=1)[np.ptp(W, axis=1) > 1e-12].tolist())
    assert winners == {0, 1}  # I and love; never LLMs
    assert (W[:, 2] <= W.max(axis=1)).all()


def test_middle_token_peaks_at_exactly_one_third_at_q_zero():
    np.testing.assert_array_equal(width_one.q_sweep_weights(0.0, KEYS), np.full(3, 1 / 3))
    q, w = width_one.q_peak(KEYS, 2)
    assert q == 0.0 and w == pytest.approx(1 / 3, abs=1e-15)
    grid = width_one.q_sweep_weights(np.linspace(-10, 10, 2001), KEYS)[:, 2]
    assert grid.max() <= 1 / 3 + 1e-15
    assert width_one.q_peak(KEYS, 0) == (np.inf, 1.0) and width_one.q_peak(KEYS, 1) == (-np.inf, 1.0)


def test_love_passes_095_below_q_minus_2_99():
    q_star = width_one.q_threshold(KEYS, 1, 0.95)
    # love's weight is 1 / (1 + e^{2q} + e^{q}); it equals 0.95 where x = e^q solves x^2 + x = 1/19.
    exact = np.log((-1 + np.sqrt(1 + 4 / 19)) / 2)
    assert q_star == pytest.approx(exact, abs=1e-10)
    assert -3.0 < q_star < -2.99
    w = width_one.q_sweep_weights([q_star - 1e-6, q_star, q_star + 1e-6, -2.99], KEYS)[:, 1]
    assert w[0] > 0.95 > w[2] and w[1] == pytest.approx(0.95, abs=1e-9) and w[3] < 0.95


@st.composite
def distinct_keys(draw):
    n = draw(st.integers(3, 6))
    keys = draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n, unique=True))
    return np.array(keys, float)


@SETTINGS
@given(distinct_keys(), st.floats(-8, 8).filter(lambda q: abs(q) > 1e-3))
def test_winner_is_an_extreme_key_for_any_keys(keys, q):
    w = width_one.q_sweep_weights(q, keys)
    assert w.argmax() == (keys.argmax() if q > 0 else keys.argmin())


@SETTINGS
@given(distinct_keys(), st.floats(0.4, 0.99))
def test_thresholds_of_extreme_keys(keys, p):
    lo, hi = int(keys.argmin()), int(keys.argmax())
    q_lo, q_hi = width_one.q_threshold(keys, lo, p), width_one.q_threshold(keys, hi, p)
    w = width_one.q_sweep_weights([q_lo - 1e-3, q_lo + 1e-3, q_hi - 1e-3, q_hi + 1e-3], keys)
    assert w[0, lo] > p > w[1, lo]  # smallest key: above p for q < q*
    assert w[2, hi] < p < w[3, hi]  # largest key: above p for q > q*


@SETTINGS
@given(distinct_keys())
def test_middle_keys_peak_below_the_winner(keys):
    grid = np.linspace(-12, 12, 481)
    W = width_one.q_sweep_weights(grid, keys)
    for j in np.argsort(keys)[1:-1]:
        q, w = width_one.q_peak(keys, int(j))
        assert np.isfinite(q)
        assert w >= W[:, j].max() - 1e-9  # no grid point beats the peak
        at_peak = width_one.q_sweep_weights(q, keys)
        assert at_peak[j] == pytest.approx(w, abs=1e-12)
        assert at_peak.max() > w or np.isclose(q, 0.0)  # someone else leads, or all tie at q = 0


@pytest.mark.parametrize("call, error, words", [
    (lambda: width_one.q_threshold(KEYS, 2), ValueError, "q_peak"),
    (lambda: width_one.q_threshold(KEYS, 1, p=1.0), ValueError, "p must be"),
    (lambda: width_one.q_threshold((1, 1, 0), 0, p=0.6), ValueError, "1/2"),
    (lambda: width_one.q_threshold(KEYS, 3), ValueError, "index=3"),
    (lambda: width_one.q_threshold(KEYS, 1.0), TypeError, "index"),
    (lambda: width_one.q_sweep_weights(0.0, (1,)), ValueError, "keys"),
    (lambda: width_one.q_sweep_weights(0.0, [[1, 2]]), ValueError, "keys"),
    (lambda: width_one.q_sweep_weights(0.0, (1, np.nan)), ValueError, "keys"),
    (lambda: width_one.q_sweep_weights([[0.0]], KEYS), ValueError, "q_values"),
    (lambda: width_one.q_sweep_weights("a", KEYS), TypeError, "q_values"),
])
def test_q_sweep_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.parametrize("call, error, words", [
    (lambda: width_one.q_threshold(KEYS, 1, p=np.nan), ValueError, "p must be a finite"),
    (lambda: width_one.q_threshold(KEYS, 1, p="0.9"), TypeError, "p must be a real"),
    (lambda: width_one.q_threshold(KEYS, True), TypeError, "index"),
    (lambda: width_one.q_peak(KEYS, -1), ValueError, "index=-1"),
    (lambda: width_one.q_sweep_weights(np.inf, KEYS), ValueError, "q_values"),
])
def test_scalar_arguments_are_checked(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_huge_queries_and_keys_give_weights_not_nan():
    W = width_one.q_sweep_weights([1e308, -1e308, 5.0, 0.0], [1e308, 0.0, -1e308])
    assert np.isfinite(W).all()
    np.testing.assert_array_equal(W[:3].argmax(axis=1), [0, 2, 0])
    np.testing.assert_allclose(W[3], 1 / 3)
    np.testing.assert_allclose(W.sum(axis=1), 1)


@SETTINGS
@given(distinct_keys(), st.sampled_from([1e-200, 1e-5, 1e5, 1e200]))
def test_scaling_the_keys_scales_the_threshold_and_the_peak(keys, c):
    # w(q; c k) = w(c q; k): thresholds and peaks of c k are those of k divided by c.
    lo = int(keys.argmin())
    assert width_one.q_threshold(keys * c, lo) == pytest.approx(width_one.q_threshold(keys, lo) / c, rel=1e-9)
    mid = int(np.argsort(keys)[1])
    q, w = width_one.q_peak(keys, mid)
    q_c, w_c = width_one.q_peak(keys * c, mid)
    assert w_c == pytest.approx(w, rel=1e-9) and q_c == pytest.approx(q / c, rel=1e-6, abs=1e-300)
