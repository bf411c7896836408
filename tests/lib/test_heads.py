"""mha.heads: specialisation measures, induction scores and head removal (zero and mean ablation),
on small arrays built by hand and against plain loops; mha.stats' perplexity change and its interval."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha import heads, stats


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

# ===============================================================================================
# mha.heads: mean ablation beside zeroing, the change in perplexity and its bootstrap interval,
# (formerly test_heads_ablation.py)
# ===============================================================================================
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

# ===============================================================================================
# mha.heads.induction_scores: against a plain loop, on maps built by hand, and on bad input.
# (formerly test_induction_scores.py)
# ===============================================================================================
def _loop_scores(A, period):
    """The definition, one query at a time: the weight on the token after the earlier copy."""
    A = np.asarray(A, dtype=float)
    lead = A.shape[:-4]
    L, h, T, _ = A.shape[-4:]
    flat = A.reshape(-1, L, h, T, T)
    out = np.zeros((L, h))
    for b in range(flat.shape[0]):
        for layer in range(L):
            for head in range(h):
                weights = [flat[b, layer, head, t, t - period + 1] for t in range(period, T)]
                out[layer, head] += sum(weights) / len(weights)
    return out / max(1, int(np.prod(lead)))


def _causal_uniform(T):
    return np.tril(np.ones((T, T))) / np.arange(1, T + 1)[:, None]


@given(seed=st.integers(0, 2**32 - 1), lead=st.sampled_from([(), (1,), (3,), (2, 2)]),
       L=st.integers(1, 3), h=st.integers(1, 3), T=st.integers(2, 9), data=st.data())
def test_matches_a_plain_loop(seed, lead, L, h, T, data):
    period = data.draw(st.integers(1, T - 1))
    rng = np.random.default_rng(seed)
    A = mha.softmax(rng.normal(size=(*lead, L, h, T, T)) * 3, axis=-1)
    got = heads.induction_scores(A, period)
    assert got.shape == (L, h)
    np.testing.assert_allclose(got, _loop_scores(A, period), rtol=1e-12, atol=1e-15)


def test_a_perfect_induction_head_scores_one_and_other_heads_zero():
    n = 4
    T = 2 * n
    induction = np.zeros((T, T))
    induction[np.arange(T), 0] = 1.0  # the first copy has no earlier copy: rest on the first token
    t = np.arange(n, T)
    induction[t] = 0.0
    induction[t, t - n + 1] = 1.0  # the repeat looks at the token after its earlier copy
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1.0
    same_token = np.zeros((T, T))  # looks at the earlier copy itself, not the token after it
    same_token[np.arange(T), np.arange(T)] = 1.0
    same_token[t] = 0.0
    same_token[t, t - n] = 1.0
    A = np.stack([induction, previous, same_token])[None]  # (L=1, h=3, T, T)
    np.testing.assert_allclose(heads.induction_scores(A, n), [[1.0, 0.0, 0.0]])


def test_a_batch_is_averaged():
    T, n = 6, 3
    a = _causal_uniform(T)[None, None]
    b = np.zeros((1, 1, T, T))
    b[..., :, 0] = 1.0
    t = np.arange(n, T)
    b[0, 0, t, 0] = 0.0
    b[0, 0, t, t - n + 1] = 1.0
    both = np.stack([a, b])  # (B=2, L=1, h=1, T, T)
    expected = (heads.induction_scores(a, n) + heads.induction_scores(b, n)) / 2
    np.testing.assert_allclose(heads.induction_scores(both, n), expected)
    np.testing.assert_allclose(heads.induction_scores(b, n), [[1.0]])


def test_an_even_causal_head_scores_the_chance_level():
    T, n = 100, 50
    score = heads.induction_scores(_causal_uniform(T)[None, None], n)
    chance = np.mean(1 / (np.arange(n, T) + 1))
    np.testing.assert_allclose(score, [[chance]])
    assert 0.013 < chance < 0.015  # the "chance about 0.014" of 50 tokens repeated twice


def test_numpy_integers_are_periods_too():
    A = _causal_uniform(6)[None, None]
    np.testing.assert_allclose(heads.induction_scores(A, np.int64(3)), heads.induction_scores(A, 3))


def test_float32_in_gives_finite_scores():
    A = mha.softmax(np.random.default_rng(0).normal(size=(2, 2, 5, 5)), axis=-1).astype(np.float32)
    out = heads.induction_scores(A, 2)
    assert out.shape == (2, 2) and np.isfinite(out).all()


@pytest.mark.parametrize("A, period, error, message", [
    (np.full((4, 4), 0.25), 2, ValueError, "at least 4 axes"),
    (np.full((1, 1, 3, 4), 0.25), 2, ValueError, "self-attention"),
    (np.full((1, 1, 4, 4), 0.25), 0, ValueError, "positive integer"),
    (np.full((1, 1, 4, 4), 0.25), 4, ValueError, "from 1 to T - 1 = 3"),
    (np.full((1, 1, 4, 4), 0.25), 2.0, TypeError, "period"),
    (np.full((1, 1, 4, 4), 0.25), True, TypeError, "period"),
    (np.full((1, 1, 4, 4), 0.3), 2, ValueError, "sum to 1"),
    (np.full((1, 1, 4, 4), np.nan), 2, ValueError, "A"),
    (np.zeros((0, 1, 4, 4)) + 0.25, 2, ValueError, "empty"),
    (np.full((1, 1, 1, 1), 1.0), 1, ValueError, "from 1 to T - 1"),
    ("abc", 1, (TypeError, ValueError), "A"),
])
def test_induction_scores_refuse_bad_input_clearly(A, period, error, message):
    with pytest.raises(error, match=message):
        heads.induction_scores(A, period)


# ---- same-token mass and a head's offset (chapter 09 and 10) ------------------------------------

def test_same_token_mass_adds_the_weight_on_other_copies_and_averages_over_repeated_queries():
    from mha.heads import same_token_mass

    A = np.array([[0.5, 0.5, 0.0], [0.2, 0.8, 0.0], [0.6, 0.3, 0.1]])
    assert same_token_mass(A, [7, 9, 7]) == pytest.approx(0.3)
    stacked = same_token_mass(np.stack([A, np.eye(3)]), np.array([7, 9, 7]))
    np.testing.assert_allclose(stacked, [0.3, 0.0])
    loop = np.mean([sum(A[t, s] for s in range(3) if s != t and [4, 4, 4][s] == [4, 4, 4][t]) for t in range(3)])
    assert same_token_mass(A, [4, 4, 4]) == pytest.approx(loop)
    for ids in ([1, 2, 3], [1, 2], [1.0, 1.0, 2.0]):
        with pytest.raises(ValueError, match="ids|twice"):
            same_token_mass(A, ids)


def test_offset_and_variation_split_what_a_head_writes():
    from mha.heads import ablate_heads, offset_and_variation

    rng = np.random.default_rng(3)
    concat, W_O = rng.normal(size=(2, 5, 6)), rng.normal(size=(6, 4))  # B = 2, T = 5, h = 3 heads of width 2
    offset, variation = offset_and_variation(concat, W_O, 3)
    assert offset.shape == variation.shape == (2, 3)
    for b in range(2):
        for i in range(3):
            cols = slice(2 * i, 2 * i + 2)
            written = concat[b][:, cols] @ W_O[cols]  # (T, d_out)
            assert offset[b, i] == pytest.approx(np.linalg.norm(written.mean(axis=0)))
            assert variation[b, i] == pytest.approx(np.sqrt(((written - written.mean(axis=0)) ** 2).sum(1).mean()))
            # zeroing removes offset and variation; the mean keeps the offset: their outputs differ by it
            gap = (ablate_heads(concat[b], [i], 3, "mean") - ablate_heads(concat[b], [i], 3, "zero")) @ W_O
            np.testing.assert_allclose(np.linalg.norm(gap, axis=-1), offset[b, i])
    with pytest.raises(ValueError, match="concat"):
        offset_and_variation(concat[..., :4], W_O, 3)
