"""mha.timing's machine measurements: sane numbers and clear errors (never a test of speed)."""

import numpy as np
import pytest

from mha.costs import Machine
from mha.timing import copy_bytes_per_s, matmul_flops_per_s, measure_machine, median_times


def test_matmul_rate_is_a_plausible_flop_rate():
    rate = matmul_flops_per_s(128, repeat=2)
    assert np.isfinite(rate) and 1e6 < rate < 1e15  # between a slow phone and a supercomputer node


def test_copy_rate_is_a_plausible_memory_speed():
    rate = copy_bytes_per_s(4 * 2**20, repeat=2)
    assert np.isfinite(rate) and 1e6 < rate < 1e13


def test_measure_machine_pairs_the_two():
    m = measure_machine(n=128, n_bytes=4 * 2**20, repeat=1)
    assert isinstance(m, Machine) and m.name == "this machine"
    assert m.flop_per_byte == pytest.approx(m.flops_per_s / m.bytes_per_s)
    assert 1e-4 < m.flop_per_byte < 1e6


def test_tiny_copy_still_times_something():
    assert copy_bytes_per_s(1, repeat=1) > 0


def test_median_times_takes_the_median_round():
    calls = []
    t = median_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeat=3)
    assert calls == ["a", "b"] * 3 and set(t) == {"a", "b"} and all(v >= 0 for v in t.values())
    with pytest.raises(TypeError, match="dict"):
        median_times([np.ones])
    with pytest.raises(ValueError, match="repeat"):
        median_times({"a": np.ones}, repeat=0)


@pytest.mark.parametrize("call, error, words", [
    (lambda: matmul_flops_per_s(0), ValueError, "n"),
    (lambda: matmul_flops_per_s(2.5), TypeError, "n"),
    (lambda: matmul_flops_per_s(8, repeat=0), ValueError, "repeat"),
    (lambda: copy_bytes_per_s(-1), ValueError, "n_bytes"),
    (lambda: copy_bytes_per_s("big"), TypeError, "n_bytes"),
    (lambda: measure_machine(repeat=0), ValueError, "repeat"),
])
def test_bad_sizes_are_named(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_layer_parts_together_give_the_layer():
    import mha
    from mha.timing import layer_parts

    rng = np.random.default_rng(0)
    T, d, h = 12, 8, 4
    X = rng.standard_normal((T, d))
    W = [rng.standard_normal((d, d)) for _ in range(4)]
    parts = layer_parts(X, *W, h=h)
    assert sorted(parts) == ["layer", "projections", "scores", "softmax", "weighted sum"]
    Q, K, V, _ = parts["projections"]()
    S = parts["scores"]()  # (h, T, T)
    A = np.exp(S - S.max(axis=-1, keepdims=True))
    A /= A.sum(axis=-1, keepdims=True)
    Z = A @ V.reshape(T, h, d // h).swapaxes(0, 1)
    Y = Z.swapaxes(0, 1).reshape(T, d) @ W[3]
    Y_ref, A_ref = mha.multi_head_attention(X, *W, h=h)
    assert np.allclose(Y, Y_ref) and np.allclose(A, A_ref)
    assert np.allclose(parts["layer"]()[0], Y_ref)
    parts["softmax"]()  # the in-place softmax, run again and again on one array, stays a softmax
    parts["softmax"]()


def test_layer_parts_softmax_is_the_layers_softmax():
    from mha.timing import layer_parts

    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 4)).astype(np.float32)
    W = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(4)]
    parts = layer_parts(X, *W, h=2)
    # the closure's work array starts as the scores; one call must turn it into the layer's weights
    work = parts["softmax"].__closure__
    cells = [c.cell_contents for c in work if isinstance(c.cell_contents, np.ndarray)]
    (A_work,) = [a for a in cells if a.shape == (2, 6, 6)]
    parts["softmax"]()
    import mha

    assert np.allclose(A_work, mha.multi_head_attention(X, *W, h=2)[1], atol=1e-6)


@pytest.mark.parametrize("call, error, words", [
    (lambda: __import__("mha").timing.layer_parts(np.ones((2, 2, 2)), *np.ones((4, 2, 2)), h=1), ValueError, "X"),
    (lambda: __import__("mha").timing.layer_parts(np.ones((3, 4)), *np.ones((4, 4, 4)), h=3), ValueError, "h=3"),
    (lambda: __import__("mha").timing.layer_parts(np.ones((3, 4)), *np.ones((4, 4, 4)), h="2"), TypeError, "h"),
])
def test_layer_parts_refuses_bad_input(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_spread_sums_up_repeats():
    from mha.timing import Spread, spread

    assert spread([3.0, 1.0, 2.0]) == Spread(2.0, 1.0, 3.0, 3)
    for bad, error in (([], ValueError), ([1.0, np.nan], ValueError), ("ab", TypeError), ([[1.0]], ValueError)):
        with pytest.raises(error):
            spread(bad)


@pytest.mark.parametrize("call, words", [
    (lambda: median_times({"a": np.ones}, repeat=10**20), "repeat"),
    (lambda: __import__("mha").timing.best_time(np.ones, 1, number=10**20), "number"),
    (lambda: matmul_flops_per_s(10**20), "n"),
    (lambda: copy_bytes_per_s(10**20), "n_bytes"),
    (lambda: measure_machine(repeat=10**20), "repeat"),
])
def test_huge_counts_are_refused_at_once(call, words):
    with pytest.raises(ValueError, match=f"{words}=.*too large"):
        call()
