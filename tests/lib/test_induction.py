"""mha.induction: the hand-built two-layer toy predicts the repeat of a text, and only the repeat."""

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
