"""Tests of mha.superposition: near-orthogonal directions summed in one vector, and read back."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha.superposition import blend_recovery, decode, unit_directions


# ---- unit_directions -----------------------------------------------------------------------

def test_directions_have_length_one_and_the_seed_decides_them():
    U = unit_directions(50, 64, seed=3)
    assert U.shape == (50, 64)
    np.testing.assert_allclose(np.linalg.norm(U, axis=1), 1.0)
    np.testing.assert_array_equal(U, unit_directions(50, 64, seed=3))
    assert not np.allclose(U, unit_directions(50, 64, seed=4))


def test_wide_directions_are_nearly_orthogonal():
    # Dot products of distinct rows have standard deviation about 1/sqrt(d).
    for d in (16, 256):
        U = unit_directions(300, d, seed=0)
        off = (U @ U.T)[~np.eye(300, dtype=bool)]
        assert abs(off.std() * np.sqrt(d) - 1) < 0.1 and abs(off.mean()) < 0.02


# ---- decode --------------------------------------------------------------------------------

def test_decode_reads_an_orthonormal_basis_exactly():
    E = np.eye(6)
    assert decode(0.7 * E[4] + 0.3 * E[1], E, k=2).tolist() == [4, 1]
    assert decode(E[2], E, k=1).tolist() == [2]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 1000), st.integers(1, 3))
def test_decode_agrees_with_a_loop(seed, k):
    U = unit_directions(40, 32, seed=seed)
    v = np.random.default_rng(seed).standard_normal(32)
    scores = [sum(U[j, i] * v[i] for i in range(32)) for j in range(40)]
    expected = sorted(range(40), key=lambda j: -scores[j])[:k]
    assert decode(v, U, k).tolist() == expected


def test_decode_of_a_zero_vector_is_finite():
    out = decode(np.zeros(8), unit_directions(5, 8), k=3)
    assert out.shape == (3,) and len(set(out.tolist())) == 3


@pytest.mark.parametrize("vector, directions, k, err, match", [
    (np.zeros(4), np.eye(5), 1, ValueError, "d = len"),
    (np.zeros((1, 5)), np.eye(5), 1, ValueError, "vector"),
    (np.zeros(5), np.zeros(5), 1, ValueError, "directions"),
    (np.zeros(5), np.zeros((0, 5)), 1, ValueError, "n >= 1"),
    (np.zeros(5), np.eye(5), 6, ValueError, "larger than the number"),
    (np.zeros(5), np.eye(5), 0, ValueError, "k"),
    (np.zeros(5), np.eye(5), 1.5, TypeError, "k"),
    ([np.nan] * 5, np.eye(5), 1, ValueError, "vector"),
    ("abcde", np.eye(5), 1, TypeError, "vector"),
])
def test_decode_bad_input(vector, directions, k, err, match):
    with pytest.raises(err, match=match):
        decode(vector, directions, k)


# ---- blend_recovery ------------------------------------------------------------------------

def test_one_item_is_always_recovered_and_scores_one():
    r = blend_recovery(200, 32, 1, trials=50)
    assert r.recovered == 1.0 and np.isclose(r.member_score, 1.0) and r.worst_margin > 0


def test_a_few_items_decode_in_a_wide_space_and_many_do_not():
    few = blend_recovery(1000, 256, 2, trials=100)
    many = blend_recovery(1000, 16, 16, trials=100)
    assert few.recovered == 1.0 and few.margin > 0
    assert many.recovered == 0.0 and many.margin < 0
    assert abs(few.member_score - 0.5) < 0.05  # a member scores about its weight, 1/k


def test_recovery_agrees_with_decode_trial_by_trial():
    # recovered counts the blends whose top k by decode are the members: check it with decode itself.
    n, d, k, trials, seed = 60, 24, 3, 40, 5
    r = blend_recovery(n, d, k, trials=trials, seed=seed)
    U = unit_directions(n, d, seed=seed)
    rng = np.random.default_rng(seed + 1)
    hits = 0
    for _ in range(trials):
        items = rng.choice(n, size=k, replace=False)
        hits += set(decode(U[items].mean(axis=0), U, k).tolist()) == set(items.tolist())
    assert r.recovered == hits / trials


@pytest.mark.parametrize("kwargs, err, match", [
    ({"n": 1, "d": 4, "k": 1}, ValueError, "n"),
    ({"n": 5, "d": 4, "k": 5}, ValueError, "smaller than n"),
    ({"n": 5, "d": 0, "k": 1}, ValueError, "d"),
    ({"n": 5, "d": 4, "k": 1, "trials": 0}, ValueError, "trials"),
    ({"n": 5, "d": 4, "k": 1, "seed": -1}, ValueError, "seed"),
    ({"n": 5.0, "d": 4, "k": 1}, TypeError, "n"),
])
def test_blend_recovery_bad_input(kwargs, err, match):
    with pytest.raises(err, match=match):
        blend_recovery(**kwargs)
