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
