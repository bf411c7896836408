"""Tests of mha.fitting: one row of weights fitted to several targets."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mha.attention import softmax
from mha.fitting import best_single_row, fit_one_head, kl_divergence

SUBJECT = [0.8, 0.1, 0.1]
OBJECT = [0.1, 0.1, 0.8]


def _rows(n, S):
    """Strategy: n probability rows over S keys, every entry at least 0.01."""
    logits = arrays(np.float64, (n, S), elements=st.floats(-4.0, 4.0))
    return logits.map(lambda z: (softmax(z) + 0.01) / (1 + 0.01 * S))


# ---- kl_divergence --------------------------------------------------------------------------

def test_kl_known_values():
    assert kl_divergence([0.5, 0.5], [0.5, 0.5]) == 0.0
    assert np.isclose(kl_divergence([1.0, 0.0], [0.5, 0.5]), np.log(2.0))
    p, q = np.array([0.2, 0.3, 0.5]), np.array([0.4, 0.4, 0.2])
    assert np.isclose(kl_divergence(p, q), np.sum(p * np.log(p / q)))


def test_kl_is_not_symmetric_and_broadcasts():
    p, q = [0.9, 0.1], [0.5, 0.5]
    assert not np.isclose(kl_divergence(p, q), kl_divergence(q, p))
    out = kl_divergence([[0.9, 0.1], [0.5, 0.5]], [0.5, 0.5])
    assert out.shape == (2,) and out[1] == 0.0 and out[0] > 0


@pytest.mark.parametrize("p, q, match", [
    ([0.5, 0.5], [1.0, 0.0], "infinite"),
    ([0.5, 0.5], [0.2, 0.3, 0.5], "same last axis"),
    ([-0.5, 1.5], [0.5, 0.5], "never negative"),
    ([np.nan, 1.0], [0.5, 0.5], "finite"),
    ("ab", [0.5, 0.5], "real numbers"),
])
def test_kl_bad_input(p, q, match):
    with pytest.raises((ValueError, TypeError), match=match):
        kl_divergence(p, q)


# ---- best_single_row -----------------------------------------------------------------------

def test_two_relations_meet_in_the_middle():
    fit = best_single_row([SUBJECT, OBJECT])
    assert fit.converged
    np.testing.assert_allclose(fit.row, [0.45, 0.1, 0.45], atol=1e-9)
    np.testing.assert_allclose(fit.kl, kl_divergence([SUBJECT, OBJECT], fit.row))
    assert np.isclose(fit.total_kl, fit.kl.sum())
    assert fit.kl[0] > 0.3 and np.isclose(fit.kl[0], fit.kl[1])  # serves neither well, both alike


@pytest.mark.parametrize("target", [SUBJECT, OBJECT, [0.25, 0.25, 0.5], [0.6, 0.4]])
def test_one_target_is_fitted_exactly(target):
    fit = best_single_row(target)
    np.testing.assert_allclose(fit.row, target, atol=1e-9)
    assert fit.total_kl < 1e-12


def test_zero_targets_are_allowed_when_another_target_covers_the_key():
    fit = best_single_row([[1.0, 0.0, 0.0], [0.0, 0.5, 0.5]])
    np.testing.assert_allclose(fit.row, [0.5, 0.25, 0.25], atol=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 4).flatmap(lambda n: st.integers(2, 6).flatmap(lambda S: _rows(n, S))))
def test_best_row_is_the_average_and_nothing_beats_it(targets):
    fit = best_single_row(targets)
    assert fit.converged
    np.testing.assert_allclose(fit.row, targets.mean(axis=0), atol=1e-8)
    assert np.isclose(fit.row.sum(), 1.0)
    # Any other row does at least as badly: try the targets themselves and a nudged row.
    for other in [*targets, (fit.row + np.eye(len(fit.row))[0]) / 2]:
        assert kl_divergence(targets, other).sum() >= fit.total_kl - 1e-9


@pytest.mark.parametrize("targets, match", [
    ([[0.5, 0.6, 0.1]], "sum to 1"),
    ([[1.2, -0.2]], "negative"),
    ([[1.0, 0.0], [1.0, 0.0]], "no target puts weight on key 1"),
    ([1.0], "S >= 2"),
    ([[[0.5, 0.5]]], "shape"),
    (None, "None"),
    ("text", "real numbers"),
    ([[0.5, np.nan]], "finite"),
])
def test_best_row_bad_input(targets, match):
    with pytest.raises((ValueError, TypeError), match=match):
        best_single_row(targets)


def test_best_row_bad_max_steps():
    with pytest.raises(TypeError, match="max_steps"):
        best_single_row(SUBJECT, max_steps=2.5)


# ---- fit_one_head --------------------------------------------------------------------------

@pytest.mark.parametrize("d_k", [1, 3, 32])
def test_no_width_beats_the_compromise(d_k):
    floor = best_single_row([SUBJECT, OBJECT]).total_kl
    fit = fit_one_head([SUBJECT, OBJECT], d_k, seed=d_k)
    assert fit.converged
    assert fit.total_kl >= floor - 1e-12          # cannot beat the best single row ...
    assert fit.total_kl < floor + 1e-8            # ... and reaches it
    np.testing.assert_allclose(fit.row, [0.45, 0.1, 0.45], atol=1e-5)


@pytest.mark.parametrize("target", [SUBJECT, OBJECT, [0.05, 0.3, 0.15, 0.4, 0.1]])
def test_a_head_of_width_one_fits_one_target(target):
    fit = fit_one_head(target, d_k=1)
    assert fit.total_kl < 1e-10
    np.testing.assert_allclose(fit.row, target, atol=1e-5)


def test_the_width_one_construction_of_the_docstring_is_exact():
    # q = 1 and k_j = ln t_j: softmax(K q / sqrt(1)) is the target itself.
    t = np.array([0.05, 0.3, 0.15, 0.4, 0.1])
    np.testing.assert_allclose(softmax(np.log(t)[:, None] @ np.ones(1)), t)


def test_logits_are_the_scaled_scores_and_seed_is_reproducible():
    a = fit_one_head([SUBJECT, OBJECT], 4, seed=3, steps=50)
    b = fit_one_head([SUBJECT, OBJECT], 4, seed=3, steps=50)
    np.testing.assert_array_equal(a.row, b.row)
    np.testing.assert_allclose(a.row, softmax(a.logits))
    assert a.steps == 50


@pytest.mark.parametrize("kwargs, err, match", [
    ({"d_k": 0}, ValueError, "d_k"),
    ({"d_k": 2.0}, TypeError, "d_k"),
    ({"d_k": 2, "lr": -1.0}, ValueError, "lr"),
    ({"d_k": 2, "lr": float("nan")}, ValueError, "lr"),
    ({"d_k": 2, "steps": 0}, ValueError, "steps"),
])
def test_fit_one_head_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        fit_one_head([SUBJECT, OBJECT], **kwargs)
