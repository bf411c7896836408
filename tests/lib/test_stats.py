"""Tests of mha.stats: the entropy of attention weights, per row and per head."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha.stats import head_entropy, row_entropy


def _random_weights(rng, shape, zeros=False):
    scores = rng.normal(scale=2.0, size=shape)
    if zeros:
        scores = np.where(mha.causal_mask(shape[-1]), scores, -np.inf)
    return mha.softmax(scores, axis=-1)


def _entropy_by_hand(row):
    return -sum(p * math.log(p) for p in row if p > 0)


def test_top_level_name_is_the_stats_function():
    assert mha.head_entropy is head_entropy


def test_extremes_sure_rows_give_zero_and_even_rows_give_log_s():
    S = 5
    sure = np.eye(S)[None]  # (1, T=5, S=5): every query on one key
    even = np.full((1, 3, S), 1.0 / S)
    assert head_entropy(sure).tolist() == [0.0]
    np.testing.assert_allclose(head_entropy(even), [np.log(S)], rtol=1e-12)


def test_is_the_mean_over_rows_of_each_rows_entropy():
    rng = np.random.default_rng(0)
    A = _random_weights(rng, (2, 3, 4, 6))  # B=2, h=3, T=4, S=6
    H = head_entropy(A)
    assert H.shape == (2, 3)
    for b in range(2):
        for i in range(3):
            by_hand = np.mean([_entropy_by_hand(row) for row in A[b, i]])
            assert H[b, i] == pytest.approx(by_hand, rel=1e-12)


def test_row_entropy_keeps_one_value_per_row():
    rng = np.random.default_rng(1)
    A = _random_weights(rng, (3, 4, 5))
    R = row_entropy(A)
    assert R.shape == (3, 4)
    np.testing.assert_allclose(R.mean(axis=-1), head_entropy(A), rtol=1e-12)


@pytest.mark.filterwarnings("error")
def test_exact_zeros_count_as_zero_with_no_warning_and_no_nan():
    rng = np.random.default_rng(2)
    A = _random_weights(rng, (2, 5, 5), zeros=True)  # causal: the upper triangle is exactly 0
    assert (A == 0).any()
    H = head_entropy(A)
    assert np.isfinite(H).all()
    expected = [np.mean([_entropy_by_hand(row) for row in head]) for head in A]
    np.testing.assert_allclose(H, expected, rtol=1e-12)
    assert row_entropy(A)[0, 0] == 0.0  # query 0 sees only itself


def test_float32_keeps_its_precision():
    A = np.full((2, 3, 4), 0.25, dtype=np.float32)
    H = head_entropy(A)
    assert H.dtype == np.float32
    np.testing.assert_allclose(H, np.log(4), rtol=1e-6)


def test_matches_torch_categorical_entropy():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    A = _random_weights(rng, (2, 3, 6, 6), zeros=True)
    rows = torch.distributions.Categorical(probs=torch.from_numpy(A)).entropy().numpy()
    np.testing.assert_allclose(head_entropy(A), rows.mean(axis=-1), rtol=1e-10, atol=1e-12)


def test_worked_example_heads_are_not_uniform():
    ex = mha.examples.i_love_llms()
    _, A = mha.multi_head_attention(ex.X, *ex.weights, h=ex.h)
    H = head_entropy(A)
    assert H.shape == (2,)
    assert ((H > 0) & (H < np.log(3))).all()


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 4), T=st.integers(1, 5), S=st.integers(1, 6))
def test_bounds_and_symmetries(seed, h, T, S):
    rng = np.random.default_rng(seed)
    A = _random_weights(rng, (h, T, S))
    H = head_entropy(A)
    assert H.shape == (h,)
    assert (H >= 0).all() and (H <= np.log(S) + 1e-12).all()
    keys = rng.permutation(S)
    np.testing.assert_allclose(head_entropy(A[..., keys]), H, rtol=1e-10, atol=1e-12)
    heads = rng.permutation(h)
    np.testing.assert_allclose(head_entropy(A[heads]), H[heads], rtol=1e-12, atol=0)


@pytest.mark.parametrize(
    ("A", "error", "phrases"),
    [
        (np.full((3, 3), 1 / 3), ValueError, ["A must have at least 3 axes", "(3, 3)"]),
        (np.full((1, 2, 3), 0.3), ValueError, ["must each sum to 1", "(1, 2, 3)", "0.9"]),
        (np.array([[[1.5, -0.5]]]), ValueError, ["never negative", "(0, 0, 1)"]),
        (np.array([[[np.nan, 1.0]]]), ValueError, ["finite"]),
        (np.zeros((1, 2, 0)), ValueError, ["empty last axis"]),
        ("weights", TypeError, ["A must hold real numbers"]),
        (None, TypeError, ["A must be an array of numbers"]),
    ],
)
def test_bad_input_gets_a_clear_message(A, error, phrases):
    with pytest.raises(error) as info:
        head_entropy(A)
    for phrase in phrases:
        assert phrase in str(info.value)


def test_row_entropy_accepts_a_single_row_but_checks_it():
    assert row_entropy([0.5, 0.5]) == pytest.approx(np.log(2))
    with pytest.raises(ValueError, match="must each sum to 1"):
        row_entropy([0.5, 0.6])
