"""mha.induction: the hand-built two-layer toy predicts the repeat of a text, and only the repeat."""

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha
from mha import heads, induction


@given(seed=st.integers(0, 2**32 - 1), V=st.integers(3, 20), data=st.data())
def test_the_toy_predicts_every_next_token_of_the_repeat_and_none_of_the_first_copy(seed, V, data):
    n = data.draw(st.integers(2, V))
    toy = induction.build(V=V, N=2 * n)
    ids = induction.repeated_tokens(n, V, seed=seed)
    r = induction.run(toy, ids)
    guess = r.logits.argmax(axis=-1)  # guess[t] is for the token at t + 1
    np.testing.assert_array_equal(guess[n:-1], ids[n + 1:])  # the repeat: all right
    assert not (guess[:n - 1] == ids[1:n]).any()  # the first copy: the next token is new, never guessed
    nll = induction.next_token_nll(r.logits, ids)
    assert nll[n:].max() < 0.1 < 1.0 < nll[:n - 1].min()


def test_layer_1_writes_each_tokens_predecessor_into_its_own_subspace():
    toy = induction.build(V=6, N=10)
    ids = np.array([3, 1, 4, 0, 5, 2, 3, 1, 4, 0])
    r = induction.run(toy, ids)
    s = toy.stream
    A1 = r.layer1.weights[0]  # (T, T)
    assert np.all(np.diagonal(A1, -1) > 0.99)
    written = r.X1[:, s.previous]  # (T, V)
    np.testing.assert_array_equal(written[1:].argmax(axis=1), ids[:-1])
    # layer 1 leaves the token and position subspaces alone and writes nothing into output
    np.testing.assert_array_equal(r.X1[:, s.token], r.X0[:, s.token])
    np.testing.assert_array_equal(r.X1[:, s.output], 0.0)
    np.testing.assert_array_equal(r.X0[:, s.previous], 0.0)


def test_layer_2_looks_at_the_token_after_the_earlier_copy():
    n, V = 7, 9
    toy = induction.build(V=V, N=2 * n)
    ids = induction.repeated_tokens(n, V, seed=3)
    r = induction.run(toy, ids)
    A2 = r.layer2.weights[0]
    t = np.arange(n, 2 * n)
    assert np.all(A2[t, t - n + 1] > 0.99)
    scores = heads.induction_scores(r.attention, n)  # (L=2, h=1)
    assert scores.shape == (2, 1) and scores[1, 0] > 0.99 and scores[0, 0] < 0.01
    assert heads.previous_token_mass(r.attention)[0, 0] > 0.99


def test_position_0_is_no_false_match():
    """Position 0 holds its own token in `previous`; the key's -1 cancels that match."""
    n, V = 5, 5
    toy = induction.build(V=V, N=2 * n)
    ids = induction.repeated_tokens(n, V, seed=0)
    r = induction.run(toy, ids)
    assert r.layer2.weights[0, n, 0] < 0.01  # the first query of the repeat shares position 0's token
    assert r.layer2.weights[0, n, 1] > 0.99


def test_the_layers_are_the_books_attention():
    toy = induction.build(V=5, N=8)
    ids = np.array([0, 3, 2, 4, 0, 3, 2, 4])
    r = induction.run(toy, ids)
    Y, A = mha.multi_head_attention(r.X0, *toy.layer1[:4], h=1, causal=True)
    np.testing.assert_allclose(Y, r.X1 - r.X0)
    np.testing.assert_allclose(A, r.layer1.weights)
    Y2, _ = mha.multi_head_attention(r.X1, *toy.layer2[:4], h=1, causal=True)
    np.testing.assert_allclose(Y2, r.X2 - r.X1)
    assert np.all(np.triu(r.layer2.weights[0], 1) == 0)  # causal


def test_a_batch_of_texts_runs_at_once():
    toy = induction.build(V=8, N=12)
    ids = np.stack([induction.repeated_tokens(6, 8, seed=k) for k in range(3)])  # (3, 12)
    r = induction.run(toy, ids)
    assert r.logits.shape == (3, 12, 8) and r.attention.shape == (3, 2, 1, 12, 12)
    for k in range(3):
        np.testing.assert_allclose(induction.run(toy, ids[k]).logits, r.logits[k])
    assert induction.next_token_nll(r.logits, ids).shape == (3, 11)


def test_next_token_nll_matches_a_plain_log_softmax():
    rng = np.random.default_rng(0)
    z = rng.normal(size=(5, 4)) * 30
    ids = np.array([1, 0, 3, 2, 2])
    expected = [-np.log(np.exp(z[t] - z[t].max()) / np.exp(z[t] - z[t].max()).sum())[ids[t + 1]]
                for t in range(4)]
    np.testing.assert_allclose(induction.next_token_nll(z, ids), expected)


def test_repeated_tokens_are_two_copies_of_different_tokens():
    ids = induction.repeated_tokens(6, 10, seed=4)
    assert ids.shape == (12,) and len(set(ids[:6])) == 6
    np.testing.assert_array_equal(ids[:6], ids[6:])
    np.testing.assert_array_equal(ids, induction.repeated_tokens(6, 10, seed=4))


@pytest.mark.parametrize("call, error, message", [
    (lambda: induction.build(V=1), ValueError, "V must be an integer of at least 2"),
    (lambda: induction.build(N=0), ValueError, "N must be a positive integer"),
    (lambda: induction.build(sharpness=0), ValueError, "sharpness must be above 0"),
    (lambda: induction.build(scale=float("nan")), ValueError, "scale must be a finite number"),
    (lambda: induction.build(V=2.5), TypeError, "V"),
    (lambda: induction.run("toy", [0, 1]), TypeError, "toy must be a Toy"),
    (lambda: induction.run(induction.build(V=4, N=4), [0, 1, 4]), ValueError, "from 0 to 3"),
    (lambda: induction.run(induction.build(V=4, N=4), [0, 1, 2, 3, 0]), ValueError, "at most N = 4"),
    (lambda: induction.run(induction.build(V=4, N=4), 2), ValueError, "single number"),
    (lambda: induction.run(induction.build(V=4, N=4), [0.0, 1.0]), TypeError, "integers"),
    (lambda: induction.next_token_nll(np.zeros((3, 4)), [0, 1]), ValueError, "shape of logits"),
    (lambda: induction.next_token_nll(np.zeros((1, 4)), [0]), ValueError, "T >= 2"),
    (lambda: induction.next_token_nll(np.full((2, 4), np.nan), [0, 1]), ValueError, "logits"),
    (lambda: induction.repeated_tokens(5, 4), ValueError, "at least n"),
    (lambda: induction.repeated_tokens(2, 4, seed=-1), ValueError, "seed"),
    (lambda: induction.embed([0, 1], "stream"), TypeError, "s must be a Stream"),
    (lambda: induction.embed([0, 1, 2], induction.stream(3, 2)), ValueError, "1 <= T <= N = 2"),
    (lambda: induction.embed([0, 3], induction.stream(3, 2)), ValueError, "from 0 to 2"),
    (lambda: induction.previous_token_head(induction.stream(3, 2), -1.0), ValueError, "sharpness"),
    (lambda: induction.unembed(induction.stream(3, 2), "big"), TypeError, "scale"),
])
def test_bad_input_is_refused_clearly(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---------------------------------------------------------------- copying_score: the copying half


def _toy_copying_by_loop(toy, layer, ids):
    """The copying score of a toy layer with plain loops: weights times values, through W^O and W_U."""
    r = induction.run(toy, ids)
    X, steps, P = (r.X0, r.layer1, toy.layer1) if layer == 0 else (r.X1, r.layer2, toy.layer2)
    A = steps.weights[0]  # (T, T)
    T, p = len(ids), len(ids) // 2
    total = []
    for t in range(p, T - 1):
        out = sum(A[t, s] * (X[s] @ P.W_V) for s in range(t + 1)) @ P.W_O  # the head's output at t
        logits = [out @ toy.W_U[:, v] for v in range(toy.stream.V)]
        total.append(logits[ids[t + 1]] - sum(logits) / len(logits))
    return sum(total) / len(total)


@pytest.mark.parametrize("V, n, scale, seed", [(12, 8, 6.0, 1), (5, 4, 2.0, 0), (9, 9, 10.0, 3)])
def test_copying_score_equals_a_plain_loop_on_the_toy(V, n, scale, seed):
    toy = induction.build(V=V, N=2 * n, scale=scale)
    ids = induction.repeated_tokens(n, V, seed=seed)
    for layer in (0, 1):
        got = induction.copying_score(toy, layer, 0, ids)
        assert got == pytest.approx(_toy_copying_by_loop(toy, layer, ids), abs=1e-9)


@given(seed=st.integers(0, 2**32 - 1), V=st.integers(3, 16), scale=st.floats(0.5, 20), data=st.data())
def test_on_the_toy_only_layer_2_copies_and_by_the_known_amount(seed, V, scale, data):
    """Layer 2 writes the attended token (weight ~1) into `output`, which W_U reads times `scale`:
    the next token gets about scale, the mean over the V tokens scale / V. Layer 1 writes where
    W_U never reads: exactly 0."""
    n = data.draw(st.integers(2, V))
    toy = induction.build(V=V, N=2 * n, scale=scale)
    ids = induction.repeated_tokens(n, V, seed=seed)
    assert induction.copying_score(toy, 0, 0, ids) == 0.0
    assert induction.copying_score(toy, 1, 0, ids) == pytest.approx(scale * (1 - 1 / V), rel=1e-2)
    every = induction.copying_scores(toy, ids)  # (B = 1, L = 2, h = 1)
    assert every.shape == (1, 2, 1)
    assert every[0, 1, 0] == pytest.approx(induction.copying_score(toy, 1, 0, ids), abs=1e-12)


def test_copying_score_averages_over_texts():
    toy = induction.build(V=8, N=12)
    ids = np.stack([induction.repeated_tokens(6, 8, seed=k) for k in range(3)])
    each = [induction.copying_score(toy, 1, 0, row) for row in ids]
    assert induction.copying_score(toy, 1, 0, ids) == pytest.approx(np.mean(each))
    np.testing.assert_allclose(induction.copying_scores(toy, ids)[:, 1, 0], each)


def test_a_head_that_copies_the_wrong_token_scores_below_zero():
    """Swap the toy's layer-2 W^O so it writes token v + 1: it no longer raises the next token."""
    toy = induction.build(V=6, N=10)
    W_O = np.roll(toy.layer2.W_O, 1, axis=1)  # within `output`: token v -> v + 1 (the last wraps ...)
    s = toy.stream
    W_O[:, s.output] = np.roll(toy.layer2.W_O[:, s.output], 1, axis=1)
    bad = induction.Toy(s, toy.layer1, toy.layer2._replace(W_O=W_O), toy.W_U)
    ids = induction.repeated_tokens(5, 6, seed=2)
    assert induction.copying_score(bad, 1, 0, ids) < 0


@pytest.mark.parametrize("bad, error, words", [
    (np.array([0, 1, 2, 0, 1, 3]), ValueError, "repeat its first half"),
    (np.array([0, 1, 2, 0, 1]), ValueError, "repeated twice"),
    (np.array([1, 1]), ValueError, "repeated twice"),
    (np.array([0.0, 1.0, 0.0, 1.0]), TypeError, "integers"),
    (np.array([0, 9, 0, 9]), ValueError, "from 0 to"),
    (np.zeros((2, 2, 4), dtype=int), ValueError, "(B, T)"),
])
def test_copying_score_refuses_ids_that_are_not_a_repeated_block(bad, error, words):
    toy = induction.build(V=5, N=12)
    with pytest.raises(error, match=re.escape(words)):
        induction.copying_score(toy, 1, 0, bad)


@pytest.mark.parametrize("layer, head, error", [(2, 0, ValueError), (0, 1, ValueError), (1.0, 0, TypeError),
                                                (True, 0, TypeError), (-1, 0, ValueError)])
def test_copying_score_refuses_a_head_the_model_does_not_have(layer, head, error):
    toy = induction.build(V=5, N=8)
    with pytest.raises(error):
        induction.copying_score(toy, layer, head, induction.repeated_tokens(3, 5))


@pytest.mark.parametrize("model", [None, "toy", np.zeros(3), object()])
def test_copying_score_refuses_what_is_not_a_model(model):
    with pytest.raises(TypeError, match="model must be"):
        induction.copying_score(model, 0, 0, np.array([0, 1, 0, 1]))


def test_unembedding_rows_of_the_toy():
    toy = induction.build(V=4, N=6, scale=3.0)
    U = induction.unembedding(toy)  # (V, d)
    assert U.shape == (4, toy.stream.d)
    np.testing.assert_array_equal(U[:, toy.stream.output], 3.0 * np.eye(4))
    np.testing.assert_array_equal(induction.unembedding(toy, [[2, 0]]), U[[[2, 0]]])


# ---- on SmolLM2: the same score, against the full logits


@pytest.fixture(scope="module")
def lm():
    from mha.models import smollm2  # the library layers: models sit below induction

    return smollm2.load()


@pytest.fixture(scope="module")
def lm_ids(lm):
    first = np.random.default_rng(5).integers(0, lm.vocab_size, size=(2, 5))
    return np.concatenate([first, first], axis=1)  # (B = 2, T = 10)


def test_head_write_walks_the_same_run_as_smollm2(lm, lm_ids):
    hw = induction.head_write(lm, 3, 2, lm_ids)
    np.testing.assert_allclose(hw.final, lm.run(lm_ids).final, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(hw.read, hw.out / hw.scale * lm.output_norm)


def test_copying_score_on_smollm2_equals_the_full_logits_by_loop(lm, lm_ids):
    U = induction.unembedding(lm)  # (vocab, d): every row
    for layer, head in [(18, 6), (29, 1), (2, 0)]:
        hw = induction.head_write(lm, layer, head, lm_ids)
        c = []
        for b in range(len(lm_ids)):
            for t in range(5, 9):  # the second copy, each with a next token
                logits = (hw.out[b, t] / hw.scale[b, t, 0] * lm.output_norm) @ U.T.astype(np.float64)
                c.append(logits[lm_ids[b, t + 1]] - logits.mean())
        assert induction.copying_score(lm, layer, head, lm_ids) == pytest.approx(np.mean(c), rel=1e-4, abs=1e-5)


def test_copying_scores_of_every_smollm2_head_agree_with_one_at_a_time(lm, lm_ids):
    every = induction.copying_scores(lm, lm_ids)  # (B, L, h)
    assert every.shape == (2, lm.L, lm.h)
    for layer, head in [(18, 6), (0, 0), (29, 8)]:
        assert every[:, layer, head].mean() == pytest.approx(induction.copying_score(lm, layer, head, lm_ids),
                                                             rel=1e-4, abs=1e-5)
