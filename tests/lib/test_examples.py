"""Tests of mha.examples.random_layer (the running example is checked in the chapters' tests)."""

import numpy as np
import pytest

from mha.examples import random_layer


def test_random_layer_is_seeded():
    a, b = random_layer(("x", "y"), 6, seed=1), random_layer(("x", "y"), 6, seed=1)
    c = random_layer(("x", "y"), 6, seed=2)
    np.testing.assert_array_equal(a.W_Q, b.W_Q)
    assert not np.allclose(a.W_Q, c.W_Q)
    assert a.X.shape == (2, 6) and a.tokens == ("x", "y")
    with pytest.raises(ValueError, match="tokens"):
        random_layer((), 6)


@pytest.mark.parametrize("kwargs, error, words", [
    ({"scale": np.nan}, ValueError, "scale must be a finite"),
    ({"scale": np.inf}, ValueError, "scale must be a finite"),
    ({"scale": 0.0}, ValueError, "scale must be above 0"),
    ({"scale": "1"}, TypeError, "scale"),
    ({"seed": -1}, ValueError, "seed"),
    ({"seed": 1.0}, TypeError, "seed"),
    ({"d": 0}, ValueError, "d must be"),
    ({"tokens": "the cat"}, TypeError, "one string"),
])
def test_random_layer_bad_input(kwargs, error, words):
    args = {"tokens": ("a", "b"), "d": 4, **kwargs}
    with pytest.raises(error, match=words):
        random_layer(args.pop("tokens"), args.pop("d"), **args)


def test_random_layer_scale_sets_the_spread_of_q():
    layer = random_layer(tuple("abcdefgh" * 50), 64, seed=3, scale=2.0)
    Q = layer.X @ layer.W_Q
    assert 1.8 < Q.std() < 2.2
