"""mha.heads: mean ablation beside zeroing, the change in perplexity and its bootstrap interval,
Voita et al.'s top-key share; each against a plain loop, with bad input refused clearly."""

import numpy as np
import pytest

from mha import heads, stats


def test_ablate_heads_zero_and_mean_by_loop():
    rng = np.random.default_rng(0)
    concat = rng.normal(size=(2, 5, 6))  # (B, T, h*d_v): h = 3 heads of width 2
    zeroed = heads.ablate_heads(concat, [1], h=3, method="zero")
    meaned = heads.ablate_heads(concat, [0, 2], h=3, method="mean")
    for b in range(2):
        for t in range(5):
            assert np.array_equal(zeroed[b, t, 2:4], [0, 0])
            assert np.array_equal(zeroed[b, t, [0, 1, 4, 5]], concat[b, t, [0, 1, 4, 5]])
            for cols in (slice(0, 2), slice(4, 6)):
                assert np.allclose(meaned[b, t, cols], concat[b, :, cols].mean(axis=0))
            assert np.array_equal(meaned[b, t, 2:4], concat[b, t, 2:4])
    assert np.array_equal(heads.ablate_heads(concat, [], h=3), concat)  # nothing removed: unchanged


@pytest.mark.parametrize("method", heads.ABLATIONS)
def test_without_each_head_matches_ablate_heads(method):
    rng = np.random.default_rng(1)
    concat, W_O, b_O = rng.normal(size=(4, 6)), rng.normal(size=(6, 3)), rng.normal(size=3)
    out = heads.without_each_head(concat, W_O, 3, b_O, method=method)
    for i in range(3):
        assert np.allclose(out[i], heads.ablate_heads(concat, i, 3, method) @ W_O + b_O)


def test_mean_ablation_of_a_constant_head_changes_nothing():
    concat = np.tile([[1.0, 2.0, 3.0, 4.0]], (5, 1))  # every position writes the same: only an offset
    assert np.array_equal(heads.ablate_heads(concat, [0, 1], 2, "mean"), concat)


def test_perplexity_change_and_interval():
    rng = np.random.default_rng(2)
    base = rng.exponential(3.0, size=200)
    worse = base + 0.3  # every token 0.3 nats worse: exactly 100 (e^0.3 - 1) %
    assert np.isclose(stats.perplexity_change(worse, base), 100 * np.expm1(0.3))
    low, high = stats.perplexity_change_interval(worse, base)
    assert np.isclose(low, high) and np.isclose(low, 100 * np.expm1(0.3))  # no spread to resample
    noisy = base + rng.normal(0.0, 0.5, size=(3, 200))
    band = stats.perplexity_change_interval(noisy, base, n_boot=500, block=10, seed=3)
    point = stats.perplexity_change(noisy, base)
    assert band.shape == (3, 2) and (band[:, 0] < point).all() and (point < band[:, 1]).all()
    again = stats.perplexity_change_interval(noisy, base, n_boot=500, block=10, seed=3)
    assert np.array_equal(band, again)  # the seed fixes the resampling


def test_top_key_share_by_loop():
    rng = np.random.default_rng(4)
    A = rng.dirichlet(np.full(7, 0.3), size=(2, 7))  # (h, T, T)
    for offset in (-1, 1, 3):
        got = heads.top_key_share(A, offset)
        for i in range(2):
            rows = [t for t in range(7) if 0 <= t + offset < 7]
            want = np.mean([A[i, t].argmax() == t + offset for t in rows])
            assert np.isclose(got[i], want)
    assert heads.top_key_share(np.eye(5, k=-1) + np.eye(5)[[0]] * np.eye(5)[:, [0]], -1) == 1.0


@pytest.mark.parametrize("call, match", [
    (lambda: heads.ablate_heads(np.ones((3, 6)), [1], 3, method="median"), "method must be one of"),
    (lambda: heads.ablate_heads(np.ones((3, 5)), [1], 3), "h\\*d_v columns"),
    (lambda: heads.ablate_heads(np.ones((3, 6)), [3], 3), "out of range"),
    (lambda: heads.ablate_heads(np.ones(6), [0], 3), "concat"),
    (lambda: heads.without_each_head(np.ones((3, 6)), np.eye(6), 3, method=None), "method must be one of"),
    (lambda: stats.perplexity_change(np.ones((2, 4)), np.ones(5)), "same N"),
    (lambda: stats.perplexity_change(np.ones(3), np.ones((1, 3))), "nll_base"),
    (lambda: stats.perplexity_change_interval(np.ones(4), np.ones(4), level=1.0), "level"),
    (lambda: stats.perplexity_change_interval(np.ones(4), np.ones(4), n_boot=0), "n_boot"),
    (lambda: stats.perplexity_change_interval(np.ones(4), np.ones(4), block=0), "block"),
    (lambda: heads.top_key_share(np.eye(3), 0), "non-zero"),
    (lambda: heads.top_key_share(np.eye(3), 3), "non-zero"),
])
def test_bad_input_is_refused_clearly(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_finite_input_never_gives_nan():
    big = np.full((2, 4), 1e30)
    assert np.isfinite(heads.ablate_heads(big, [0], 2, "mean")).all()
    nll = np.array([1.0, 2.0, 3.0])
    band = stats.perplexity_change_interval(nll, nll, n_boot=10, block=100)  # a block longer than the text
    assert np.isfinite(band).all() and np.array_equal(band, [0.0, 0.0])
