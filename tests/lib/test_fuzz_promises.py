"""Issue 31: each kind of failure the adversarial review found, at its root, with the reference it must meet.

* silent wrong answers: a masked run's row arithmetic, exps that under- or overflow, a role with no keys,
  empty maps, and the overflow guards (finite input never gives NaN or infinity);
* models trained side by side: each model's loss and gradients are its own (a property over random
  batches), and an out-of-range value in one model's batch is refused instead of touching another's;
* O(1) answers for counts of 10**20;
* model classes built directly refuse a config that contradicts the tensors (``tests/models/test_models_junk.py``).
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mha
from mha import chunked, head_roles, heads, induction, rank, split_trace, stats
from mha import training as tr
from mha.examples import RoleExample, cat_sat_mat, i_love_llms


# ---------------------------------------------------------------- silent wrong answers
def test_row_arithmetic_refuses_a_masked_run_and_matches_an_unmasked_one():
    ex = i_love_llms()
    for kwargs in ({"causal": True}, {"mask": np.array([[True, False, True]] * 3)}):
        with pytest.raises(ValueError, match="mask"):
            head_roles.row_arithmetic(mha.attention_steps(ex.X, *ex.weights, h=2, **kwargs), 0)
    steps = mha.attention_steps(ex.X, *ex.weights, h=2)
    for row in range(3):
        for head, r in enumerate(head_roles.row_arithmetic(steps, row)):
            np.testing.assert_allclose(r.weights, steps.weights[head, row], rtol=1e-12)


def test_row_arithmetic_refuses_exps_that_underflow():
    steps = mha.attention_steps([[1.0], [1.0]], [[-40.0]], [[40.0]], [[1.0]], [[1.0]], 1)
    with pytest.raises(ValueError, match="underflows"):
        head_roles.row_arithmetic(steps, 0)


def test_survival_refuses_a_role_with_no_keys():
    cat = cat_sat_mat()
    with pytest.raises(ValueError, match="delimiter sink"):
        head_roles.survival(dataclasses.replace(cat, tokens=cat.tokens[:-1] + ("x",)))


@pytest.mark.parametrize("change, words", [
    ({"tags": ("noun",) * 3}, "tags"), ({"tokens": "the cat"}, "tokens"), ({"h": 1}, "roles"),
    ({"roles": ("neighbour",) * 4, "features": ("x",)}, "features"), ({"X": np.zeros((8, 31))}, "weights"),
])
def test_a_role_example_built_by_hand_is_checked(change, words):
    with pytest.raises((ValueError, TypeError), match=words):
        dataclasses.replace(cat_sat_mat(), **change)


def test_map_distance_and_role_mass_read_rows_of_probabilities():
    with pytest.raises(ValueError, match="no rows"):
        head_roles.map_distance(np.zeros((0, 3)), np.zeros((0, 3)))
    with pytest.raises(ValueError, match="never negative"):
        head_roles.map_distance([[1e308, -1e308]], [[-1e308, 1e308]])
    with pytest.raises(ValueError, match="sum to 1"):
        head_roles.role_mass(np.full((2, 2), 1e308), np.eye(2, dtype=bool))


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("value", [1e308, -1e308, 1.7e308])
def test_attention_chunked_matches_the_plain_attention_on_huge_values(value, causal):
    Q = K = np.zeros((3, 2))
    V = np.array([[value], [value], [value * 0.5]])
    chunks = chunked.attention_chunked(Q, K, V, block=2, causal=causal)
    plain, _ = mha.scaled_dot_product_attention(Q, K, V, causal=causal)
    assert np.isfinite(chunks).all()
    np.testing.assert_allclose(chunks, plain, rtol=1e-12)


def test_huge_finite_inputs_give_a_finite_result_or_a_clear_error():
    np.testing.assert_array_equal(heads.ablate_heads(np.full((2, 2), 1e308), [0], 2, "mean"), np.full((2, 2), 1e308))
    for call, words in [
        (lambda: stats.perplexity_change([1000.0], [0.0]), "too large"),
        (lambda: stats.perplexity_change_interval([1000.0] * 4, [0.0] * 4, n_boot=10), "too large"),
        (lambda: induction.next_token_nll([[1e308, -1e308], [0.0, 0.0]], [0, 1]), "overflows"),
        (lambda: induction.next_token_nll(np.array([[6e4, -6e4], [0, 0]], np.float16), [0, 1]), "float16"),
        (lambda: rank.causal_width_one_head(5, 1e100), "overflows"),
        (lambda: rank.target_first_token(3, 1e-320, 1e308), "underflows"),
        (lambda: rank.target_previous_token(3, 1e-300), "underflows"),
    ]:
        with pytest.raises(ValueError, match=words):
            call()
    assert float(stats.perplexity_change(np.full(4, 1e38, np.float32), np.full(4, 1e38, np.float32))) == 0.0
    q, k = rank.causal_width_one_head(5, 10.0, on=1e308, off=1e-320)
    assert np.isfinite(q).all() and np.isfinite(k).all()
    for builder in (rank.target_diagonal, rank.target_first_token, rank.target_previous_flat,
                    rank.target_causal_diagonal):
        A = builder(3, 0.8, 1e308)
        np.testing.assert_allclose(A.sum(axis=1), 1.0)
    np.testing.assert_allclose(rank.target_local_band(3, 1e308), np.full((3, 3), 1 / 3))
    assert rank.score_rank_floor(rank.target_diagonal(3).astype(np.float16)) == 2


# ---------------------------------------------------------------- O(1) answers
def test_counts_of_ten_to_the_twenty_return_at_once_or_are_refused():
    start = time.perf_counter()
    tiles = chunked.causal_tiles(10 ** 20, 3)
    n = -(-10 ** 20 // 3)
    assert tiles == (n * n - n * (n - 1) // 2, n * (n - 1) // 2)
    with pytest.raises(ValueError, match="too large"):
        split_trace.divisors(10 ** 20)
    with pytest.raises(ValueError, match="too large"):
        heads.group_by_layer([(0, 1)], 10 ** 20, 3)
    assert time.perf_counter() - start < 1.0
    assert all(chunked.causal_tiles(T, b).skipped == sum(range(-(-T // b))) for T in range(1, 40) for b in (1, 3, 7))
    assert all(split_trace.divisors(d) == tuple(h for h in range(1, d + 1) if d % h == 0) for d in range(1, 400))


# ---------------------------------------------------------------- models side by side
def _stacked(batches):
    return tr.LookupBatch(*(np.stack([getattr(b, f) for b in batches]) for f in ("keys", "values", "asked")))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models=st.integers(2, 4), h=st.sampled_from([1, 2, 4]), n_keys=st.integers(1, 3), size=st.integers(1, 9),
       seed=st.integers(0, 2 ** 16))
def test_each_model_of_a_batch_gets_its_own_loss_and_gradient(models, h, n_keys, size, seed):
    shapes = tr.param_shapes(h, 8, 8 // h, n_keys)
    rng = np.random.default_rng(seed)
    theta = np.stack([tr.init_params(rng, shapes) for _ in range(models)])
    batches = [tr.lookup_batch(rng, size, n_keys) for _ in range(models)]
    loss, grad = tr.loss_and_grads(theta, shapes, _stacked(batches), h)
    answers, losses, _ = tr.predict(theta, shapes, _stacked(batches), h)
    for m in range(models):
        alone_loss, alone_grad = tr.loss_and_grads(theta[m:m + 1], shapes, _stacked(batches[m:m + 1]), h)
        np.testing.assert_allclose(loss[m], alone_loss[0], rtol=1e-5)
        np.testing.assert_allclose(grad[m], alone_grad[0], rtol=1e-4, atol=1e-7)
        alone = tr.predict(theta[m:m + 1], shapes, _stacked(batches[m:m + 1]), h)
        np.testing.assert_array_equal(answers[m], alone[0][0])
        np.testing.assert_allclose(losses[m], alone[1][0], rtol=1e-5)


@pytest.mark.parametrize("field, value", [("values", 16), ("keys", 20), ("asked", 8), ("values", -1)])
def test_an_out_of_range_entry_in_one_models_batch_is_refused(field, value):
    shapes = tr.param_shapes(2, 8, 4, 1)
    theta = np.stack([tr.init_params(np.random.default_rng(s), shapes) for s in (0, 1)])
    batches = [tr.lookup_batch(np.random.default_rng(5 + s), 4, 1) for s in (0, 1)]
    before, _ = tr.loss_and_grads(theta, shapes, _stacked(batches), 2)
    bad = getattr(batches[0], field).copy()
    bad[0, 0] = value
    batches[0] = dataclasses.replace(batches[0], **{field: bad})
    with pytest.raises(ValueError, match=f"batch.{field}"):
        tr.loss_and_grads(theta, shapes, _stacked(batches), 2)
    with pytest.raises(ValueError, match=f"batch.{field}"):
        tr.predict(theta, shapes, _stacked(batches), 2)
    after, _ = tr.loss_and_grads(theta[1:], shapes, _stacked(batches[1:]), 2)  # model 1 alone
    np.testing.assert_allclose(after[0], before[1], rtol=1e-5)


def test_training_checks_once_per_run_with_the_same_numbers():
    """The run's schedule is learning_rate's, step by step, and adam_step is adam_update plus the checks."""
    assert tr.optim.learning_rates(30, warmup=5) == [tr.learning_rate(s, steps=30, warmup=5) for s in range(30)]
    rng = np.random.default_rng(0)
    theta, grad = rng.normal(size=(2, 7)).astype(np.float32), rng.normal(size=(2, 7)).astype(np.float32)
    a, b, state_a, state_b = theta.copy(), theta.copy(), {}, {}
    for _ in range(3):
        tr.adam_step(a, grad, state_a, 0.01)
        tr.optim.adam_update(b, grad, state_b, 0.01)
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="overflowed"):
        tr.adam_step(np.zeros(2, np.float32), np.full(2, 3e38, np.float32), {"t": 0}, 1.0, betas=(0.999999, 0.5))
