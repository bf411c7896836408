"""mha.heads: specialisation measures and head removal, on small arrays built by hand."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import heads


def _random_attention(rng, shape):
    return mha.softmax(rng.normal(size=shape) * 2, axis=-1)


def test_previous_and_next_token_mass_on_shifted_identities():
    T = 5
    prev = np.eye(T, k=-1)
    prev[0, 0] = 1.0  # the first token has no predecessor: it looks at itself
    nxt = np.eye(T, k=1)
    nxt[-1, -1] = 1.0
    assert heads.previous_token_mass(prev) == pytest.approx(1.0)
    assert heads.next_token_mass(prev) == pytest.approx(0.0)
    assert heads.next_token_mass(nxt) == pytest.approx(1.0)
    assert heads.previous_token_mass(nxt) == pytest.approx(0.0)


def test_diagonal_mass_matches_a_loop():
    rng = np.random.default_rng(0)
    A = _random_attention(rng, (3, 6, 6))
    for offset in (-2, -1, 1, 3):
        expected = [np.mean([A[i, t, t + offset] for t in range(6) if 0 <= t + offset < 6]) for i in range(3)]
        np.testing.assert_allclose(heads.diagonal_mass(A, offset), expected)


def test_position_mass_first_and_last():
    A = np.array([[[0.7, 0.1, 0.2], [0.5, 0.0, 0.5], [0.0, 0.0, 1.0]]])
    np.testing.assert_allclose(heads.position_mass(A, 0), [0.4])
    np.testing.assert_allclose(heads.position_mass(A, -1), [1.7 / 3])


def test_profile_heads_shapes_and_entropy_from_stats():
    rng = np.random.default_rng(1)
    A = _random_attention(rng, (2, 3, 7, 7))
    p = heads.profile_heads(A)
    for field in (p.previous, p.next, p.first, p.last, p.entropy):
        assert field.shape == (2, 3)
    np.testing.assert_allclose(p.entropy, mha.stats.head_entropy(A))
    table = p.table()
    assert list(table["layer"]) == [0, 0, 0, 1, 1, 1] and list(table["head"]) == [0, 1, 2] * 2
    np.testing.assert_allclose(table["previous"], p.previous.ravel())


def test_heads_where_orders_by_value():
    values = np.array([[0.2, 0.9, 0.6], [0.95, 0.1, 0.3]])
    assert heads.heads_where(values, 0.5) == [(1, 0), (0, 1), (0, 2)]
    assert heads.heads_where(values, 0.99) == []


@pytest.mark.parametrize("bad, message", [
    (np.ones((3, 4)), "self-attention"),
    (np.ones(3), "at least 2 axes"),
])
def test_measures_refuse_non_square_input(bad, message):
    with pytest.raises(ValueError, match=message):
        heads.previous_token_mass(bad)


def test_diagonal_mass_refuses_bad_offsets():
    A = np.eye(3)
    for offset in (0, 3, -3):
        with pytest.raises(ValueError, match="offset"):
            heads.diagonal_mass(A, offset)
    for offset in (1.0, True, "1"):
        with pytest.raises(TypeError, match="offset"):
            heads.diagonal_mass(A, offset)


def test_profile_needs_four_axes():
    with pytest.raises(ValueError, match="exactly 4 axes"):
        heads.profile_heads(np.eye(3)[None])


# ---- removal ----------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(h=st.integers(1, 4), d_v=st.integers(1, 3), T=st.integers(1, 4), seed=st.integers(0, 10_000),
       data=st.data())
def test_removing_rows_of_W_O_equals_zeroing_the_heads_slice(h, d_v, T, seed, data):
    rng = np.random.default_rng(seed)
    d = h * d_v
    X = rng.normal(size=(T, d))
    weights = {name: rng.normal(size=(d, d)) for name in ("W_Q", "W_K", "W_V", "W_O")}
    b_O = rng.normal(size=d)
    removed = data.draw(st.sets(st.integers(0, h - 1)))
    s = mha.attention_steps(X, h=h, b_O=b_O, **weights)
    concat = s.concat.copy()
    for i in removed:
        concat[:, i * d_v:(i + 1) * d_v] = 0
    expected = concat @ weights["W_O"] + b_O
    pruned = {**weights, "W_O": heads.remove_heads(weights["W_O"], removed, h)}
    Y, _ = mha.multi_head_attention(X, h=h, b_O=b_O, **pruned)
    np.testing.assert_allclose(Y, expected, atol=1e-10)


def test_without_each_head_matches_one_removal_at_a_time():
    rng = np.random.default_rng(3)
    h, d_v, d_out = 4, 2, 5
    concat = rng.normal(size=(2, 3, h * d_v))
    W_O = rng.normal(size=(h * d_v, d_out))
    b_O = rng.normal(size=d_out)
    out = heads.without_each_head(concat, W_O, h, b_O)
    assert out.shape == (h, 2, 3, d_out)
    for i in range(h):
        np.testing.assert_allclose(out[i], concat @ heads.remove_heads(W_O, [i], h) + b_O, atol=1e-12)


def test_remove_heads_leaves_the_input_alone_and_checks_heads():
    W_O = np.ones((6, 2))
    out = heads.remove_heads(W_O, 2, h=3)
    assert W_O.sum() == 12 and out[:4].sum() == 8 and out[4:].sum() == 0
    with pytest.raises(ValueError, match="0..2"):
        heads.remove_heads(W_O, [3], h=3)
    with pytest.raises(ValueError, match="not divisible"):
        heads.remove_heads(np.ones((5, 2)), [0], h=3)
    with pytest.raises(TypeError, match="heads"):
        heads.remove_heads(W_O, [True], h=3)


def test_group_by_layer_and_its_errors():
    assert heads.group_by_layer([(1, 0), (0, 2), (1, 1)], L=2, h=3) == [[2], [0, 1]]
    with pytest.raises(ValueError, match="layer 2"):
        heads.group_by_layer([(2, 0)], L=2, h=3)
    with pytest.raises(ValueError, match="head 5"):
        heads.group_by_layer([(0, 5)], L=2, h=3)
    with pytest.raises(TypeError, match="pairs"):
        heads.group_by_layer([3], L=2, h=3)


# ---- value norms ------------------------------------------------------------------------------

def test_value_norms_match_a_loop():
    rng = np.random.default_rng(4)
    h, S, d_v, d_out = 3, 5, 2, 4
    V_heads = rng.normal(size=(h, S, d_v))
    W_O = rng.normal(size=(h * d_v, d_out))
    norms = heads.value_norms(V_heads, W_O, h)
    for i in range(h):
        for s in range(S):
            expected = np.linalg.norm(V_heads[i, s] @ W_O[i * d_v:(i + 1) * d_v])
            assert norms[i, s] == pytest.approx(expected)
    A = _random_attention(rng, (h, S, S))
    np.testing.assert_allclose(heads.weighted_value_norms(A, V_heads, W_O, h), A * norms[:, None, :])


def test_weighted_norms_sum_bounds_the_head_output():
    # ||sum_s a_s v_s W|| <= sum_s ||a_s v_s W||: the triangle inequality, per query row.
    rng = np.random.default_rng(5)
    h, T, d_v = 2, 4, 3
    X = rng.normal(size=(T, h * d_v))
    weights = {name: rng.normal(size=(h * d_v, h * d_v)) for name in ("W_Q", "W_K", "W_V", "W_O")}
    W_O = weights["W_O"]
    s = mha.attention_steps(X, h=h, **weights)
    weighted = heads.weighted_value_norms(s.weights, s.V_heads, W_O, h)  # (h, T, T)
    for i in range(h):
        contribution = s.head_outputs[i] @ W_O[i * d_v:(i + 1) * d_v]  # (T, d)
        assert np.all(np.linalg.norm(contribution, axis=-1) <= weighted[i].sum(axis=-1) + 1e-9)


def test_value_norms_refuse_mismatched_shapes():
    with pytest.raises(ValueError, match="do not fit"):
        heads.value_norms(np.ones((2, 3, 4)), np.ones((6, 2)), h=2)


# ---- damage measures --------------------------------------------------------------------------

def test_cosine_drift_is_zero_for_the_same_direction_and_broadcasts():
    rng = np.random.default_rng(6)
    E = rng.normal(size=(4, 3))
    drift = heads.cosine_drift(np.stack([E, 2 * E, -E]), E)
    np.testing.assert_allclose(drift, [[0] * 4, [0] * 4, [2] * 4], atol=1e-12)
    with pytest.raises(ValueError, match="must match"):
        heads.cosine_drift(np.ones((3, 2)), np.ones((2, 2)))


def test_paraphrase_margins_reads_triples_in_order():
    a, p, x = np.array([1.0, 0.0]), np.array([0.6, 0.8]), np.array([0.0, 1.0])
    E = np.stack([a, p, x, a, x, p])  # second item: the distractor wins
    np.testing.assert_allclose(heads.paraphrase_margins(E, 2), [0.6, -0.6])
    np.testing.assert_allclose(heads.paraphrase_margins(np.stack([E, E]), 2), [[0.6, -0.6]] * 2)
    with pytest.raises(ValueError, match="3\\*n_items"):
        heads.paraphrase_margins(E, 3)


def test_ablation_summary_counts_and_orders():
    damage = np.array([[0.3, -0.2, 0.0], [1.5, 0.01, -0.05]])
    s = heads.ablation_summary(damage, n_top=2, small=0.02)
    assert s.median == pytest.approx(0.005)
    assert [pair for pair, _ in s.top] == [(1, 0), (0, 0)]
    assert [pair for pair, _ in s.helpful] == [(0, 1), (1, 2)]
    assert s.share_small == pytest.approx(4 / 6)
