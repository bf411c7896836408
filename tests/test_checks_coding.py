"""Tests of the coding exercises' checkers (mha.checks.coding).

For each checker: the reference and a learner-style solution pass; every
classic mistake is named; junk of every kind gets a verdict, never an
exception; a function that changes its input is caught; and no message
gives away the expected numbers.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import mha
from mha.checks import check
from mha.checks import coding

CODE_LABELS = ("ex-split-heads", "ex-merge-heads", "ex-multi-head-attention", "ex-head-entropy",
               "ex-param-count")


def _wrong(label, func, phrase):
    v = check(label, func)
    assert v.status == "wrong", v
    assert phrase in v.message, v.message
    return v


# ----------------------------------------------------------------------------- junk, for every checker

def _raises(error):
    def learner(*args, **kwargs):
        raise error

    return learner


JUNK = [
    # (answer, status, phrase)
    (None, "not done", "..."),
    (..., "not done", "..."),
    ("my_function", "wrong", "expected a function, got a str"),
    ([1, 2, 3], "wrong", "expected a function, got a list"),
    (np.ones((2, 3)), "wrong", "Pass the function itself"),
    (_raises(NotImplementedError), "not done", "still raises NotImplementedError"),
    (_raises(NotImplementedError("todo")), "not done", "still raises NotImplementedError"),
    (_raises(ValueError("my own message")), "wrong", "raised ValueError: my own message"),
    (_raises(KeyError("k")), "wrong", "raised KeyError"),
    (lambda *a, **k: None, "not done", "returns None"),
    (lambda *a, **k: ..., "not done", "returns `...`"),
    (lambda *a, **k: "text", "wrong", "text"),
    (lambda *a, **k: object(), "wrong", ""),
    (lambda *a, **k: np.full((3, 3, 3), np.nan), "wrong", ""),
    (lambda *a, **k: np.zeros((1,)), "wrong", ""),
    (lambda: 1, "wrong", "The exercise calls it as"),
]


@pytest.mark.parametrize("label", CODE_LABELS)
@pytest.mark.parametrize(("answer", "status", "phrase"), JUNK)
def test_junk_gets_a_verdict_never_an_exception(label, answer, status, phrase, capfd):
    v = check(label, answer)
    assert v.status == status, v
    assert phrase in v.message, v.message
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("label", CODE_LABELS)
def test_nan_results_are_explained(label):
    def nan_like(*args, **kwargs):
        ref = {"ex-split-heads": mha.split_heads, "ex-merge-heads": mha.merge_heads,
               "ex-head-entropy": mha.head_entropy,
               "ex-multi-head-attention": mha.multi_head_attention,
               "ex-param-count": coding._param_count}[label](*args, **kwargs)
        if isinstance(ref, tuple):
            return ref[0] * np.nan, ref[1]
        return np.asarray(ref, dtype=float) * np.nan

    _wrong(label, nan_like, "NaN")


# ----------------------------------------------------------------------------- split_heads

def split_loop(X, h):
    """How a learner might write it: reshape, then swap the T and h axes."""
    *lead, T, width = X.shape
    return np.swapaxes(X.reshape(*lead, T, h, width // h), -3, -2)


def test_split_accepts_the_reference_and_a_learner_solution():
    assert check("ex-split-heads", mha.split_heads).ok
    assert check("ex-split-heads", split_loop).ok
    assert check("ex-split-heads", lambda X, h: split_loop(X, h).astype(np.float32)).ok
    assert check("ex-split-heads", lambda X, h: split_loop(X, h).tolist()).ok


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda X, h: X.reshape(*X.shape[:-2], h, X.shape[-2], X.shape[-1] // h), "reshaped straight to (h, T, d_k)"),
        (lambda X, h: X.reshape(*X.shape[:-1], h, X.shape[-1] // h), "but stopped there"),
        (lambda X, h: np.moveaxis(X.reshape(*X.shape[:-1], X.shape[-1] // h, h), -1, -3), "every h-th column"),
        (lambda X, h: split_loop(X, h)[..., ::-1, :, :], "reverse order"),
        (lambda X, h: split_loop(X, h) * 2, "differs at index (0, 0, 0)"),
    ],
)
def test_split_names_each_classic_mistake(func, phrase):
    _wrong("ex-split-heads", func, phrase)


def test_split_without_batch_support_is_sent_to_the_batch_hint():
    def two_d_only(X, h):
        T, width = X.shape
        return X.reshape(T, h, width // h).transpose(1, 0, 2)

    v = _wrong("ex-split-heads", two_d_only, "a batch: X of shape (2, 4, 8)")
    assert "negative axes" in v.message


def test_split_catches_a_function_that_changes_its_input():
    def in_place(X, h):
        X[...] = 0.0
        return split_loop(X, h)

    _wrong("ex-split-heads", in_place, "changed its input `X` in place")


# ----------------------------------------------------------------------------- merge_heads

def merge_loop(Z):
    h = Z.shape[-3]
    return np.concatenate([Z[..., i, :, :] for i in range(h)], axis=-1)


def test_merge_accepts_the_reference_and_a_learner_solution():
    assert check("ex-merge-heads", mha.merge_heads).ok
    assert check("ex-merge-heads", merge_loop).ok


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda Z: Z.reshape(*Z.shape[:-3], Z.shape[-2], Z.shape[-3] * Z.shape[-1]), "straight to (T, h*d_v)"),
        (lambda Z: merge_loop(Z[..., ::-1, :, :]), "concatenated in the wrong order"),
        (lambda Z: np.moveaxis(Z, -3, -1).reshape(*Z.shape[:-3], Z.shape[-2], -1), "interleaved"),
        (lambda Z: Z.reshape(*Z.shape[:-3], -1, Z.shape[-1]), "on top of each other"),
        (lambda Z: Z.sum(axis=-3), "added the heads together"),
        (lambda Z: np.concatenate(list(Z), axis=-1) if Z.ndim == 4 else merge_loop(Z), "batch axis in front"),
    ],
)
def test_merge_names_each_classic_mistake(func, phrase):
    _wrong("ex-merge-heads", func, phrase)


# ----------------------------------------------------------------------------- multi_head_attention

def make_mha(*, scale="sqrt_dk", axis=-1, keys_first=False, straight=False, causal=False, w_o="plain",
             reverse=False, merge_straight=False, returns="YA"):
    """A learner's vectorised multi-head attention, with one classic mistake switched on."""

    def mha_learner(X, Wq, Wk, Wv, Wo, h):
        def split(P):
            *lead, T, width = P.shape
            if straight:
                return P.reshape(*lead, h, T, width // h)
            return np.swapaxes(P.reshape(*lead, T, h, width // h), -3, -2)

        Q, K, V = split(X @ Wq), split(X @ Wk), split(X @ Wv)
        d_k = Q.shape[-1]
        scores = K @ np.swapaxes(Q, -1, -2) if keys_first else Q @ np.swapaxes(K, -1, -2)
        scores = scores / {"sqrt_dk": np.sqrt(d_k), "none": 1.0, "dk": d_k, "sqrt_d": np.sqrt(X.shape[-1])}[scale]
        if causal:
            scores = np.where(np.tril(np.ones(scores.shape[-2:], dtype=bool)), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=axis, keepdims=True))
        A = e / e.sum(axis=axis, keepdims=True)
        Z = A @ V
        if reverse:
            Z = Z[..., ::-1, :, :]
        *lead, _, T, d_v = Z.shape
        concat = Z.reshape(*lead, T, h * d_v) if merge_straight else np.swapaxes(Z, -3, -2).reshape(*lead, T, h * d_v)
        Y = {"plain": lambda: concat @ Wo, "none": lambda: concat, "T": lambda: concat @ Wo.T}[w_o]()
        return {"YA": (Y, A), "AY": (A, Y), "Y": Y, "YAZ": (Y, A, Z), "list": [Y, A]}[returns]

    return mha_learner


def mha_loop(X, Wq, Wk, Wv, Wo, h):
    """A learner's loop over heads."""
    d_k, d_v = Wq.shape[1] // h, Wv.shape[1] // h
    outs, weights = [], []
    for i in range(h):
        q = X @ Wq[:, i * d_k:(i + 1) * d_k]
        k = X @ Wk[:, i * d_k:(i + 1) * d_k]
        v = X @ Wv[:, i * d_v:(i + 1) * d_v]
        a = mha.softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k))
        weights.append(a)
        outs.append(a @ v)
    return np.concatenate(outs, axis=-1) @ Wo, np.stack(weights, axis=-3)


def test_mha_accepts_the_reference_and_learner_solutions():
    assert check("ex-multi-head-attention", mha.multi_head_attention).ok
    assert check("ex-multi-head-attention", make_mha()).ok
    assert check("ex-multi-head-attention", make_mha(returns="list")).ok
    v = check("ex-multi-head-attention", mha_loop)
    assert v.ok and "loop over heads" in v.message and "sum over heads" in v.message


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        ({"straight": True}, "reshaped straight to (h, T, d_k)"),
        ({"axis": -2}, "softmax runs over the wrong axis"),
        ({"scale": "none"}, "not scaled"),
        ({"scale": "dk"}, "divided the scores by d_k"),
        ({"scale": "sqrt_d"}, "scaled by √d, the model width"),
        ({"keys_first": True}, "from the keys instead of the queries"),
        ({"causal": True}, "causal mask"),
        ({"w_o": "none"}, "W_O is forgotten"),
        ({"w_o": "T"}, "W_O transposed"),
        ({"reverse": True}, "concatenated in the wrong order"),
        ({"merge_straight": True}, "straight to (T, h*d_v)"),
        ({"returns": "AY"}, "the order is (Y, A)"),
        ({"returns": "Y"}, "returned one array"),
        ({"returns": "YAZ"}, "returned 3 values"),
    ],
)
def test_mha_names_each_classic_mistake(options, phrase):
    _wrong("ex-multi-head-attention", make_mha(**options), phrase)


def test_mha_points_at_the_steps_after_the_weights_when_only_y_is_off():
    def off(*args):
        Y, A = mha.multi_head_attention(*args)
        return Y + 0.5, A

    _wrong("ex-multi-head-attention", off, "Your weights are right, so look at what follows")


def test_mha_catches_a_function_that_changes_its_input():
    def in_place(X, Wq, Wk, Wv, Wo, h):
        Wo /= 2.0
        return mha.multi_head_attention(X, Wq, Wk, Wv, Wo * 2.0, h)

    _wrong("ex-multi-head-attention", in_place, "changed its input `Wo` in place")


def test_mha_references_agree_loop_block_identity_and_library():
    for c in coding._mha_cases():
        A_loop, outputs = coding._loop_heads(c.X, c.W, c.h, coding._right)
        Y_ref, A_ref = mha.multi_head_attention(c.X, *c.W, c.h)
        concat = np.concatenate(outputs, axis=-1)
        np.testing.assert_allclose(A_loop, A_ref, atol=1e-14)
        np.testing.assert_allclose(coding._block_sum(outputs, c.W[3]), Y_ref, atol=1e-12)
        np.testing.assert_allclose(concat @ c.W[3], Y_ref, atol=1e-12)


def test_mha_cases_cover_batch_uneven_widths_and_several_heads():
    cases = coding._mha_cases()
    assert any(c.X.ndim == 3 for c in cases)
    assert any(c.W[2].shape[1] != c.W[0].shape[1] for c in cases)  # d_v != d_k
    assert all(c.h > 1 and c.X.shape[-2] > 1 for c in cases)
    assert any(c.h == 3 and c.X.shape[-2] == 5 for c in cases)


# ----------------------------------------------------------------------------- head_entropy

def entropy_learner(A):
    plogp = np.where(A > 0, A * np.log(np.where(A > 0, A, 1.0)), 0.0)
    return -plogp.sum(axis=-1).mean(axis=-1)


def test_entropy_accepts_the_reference_and_learner_solutions():
    assert check("ex-head-entropy", mha.head_entropy).ok
    assert check("ex-head-entropy", entropy_learner).ok
    assert check("ex-head-entropy", lambda A: -(A * np.log(A + 1e-12)).sum(-1).mean(-1)).ok


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda A: -(A * np.log(A)).sum(-1).mean(-1), "0·log 0 must count as 0"),
        (lambda A: entropy_learner(A) / np.log(2), "log base 2"),
        (lambda A: entropy_learner(A) / np.log(10), "log base 10"),
        (lambda A: -entropy_learner(A), "negative"),
        (lambda A: entropy_learner(A) * A.shape[-2], "added the entropies of the rows"),
        (lambda A: entropy_learner(A) / A.shape[-1], "averaged a·log a over the keys"),
        (lambda A: mha.stats.row_entropy(A), "one entropy per row"),
        (lambda A: entropy_learner(A).mean(-1), "averaged over the heads too"),
        (lambda A: -(A * np.log(np.where(A > 0, A, 1.0))).sum(-2).mean(-1), "summed down the columns"),
    ],
)
def test_entropy_names_each_classic_mistake(func, phrase):
    _wrong("ex-head-entropy", func, phrase)


def test_entropy_catches_a_function_that_changes_its_input():
    def in_place(A):
        A += 0.0
        A[..., 0, 0] = 1.0
        return entropy_learner(A)

    _wrong("ex-head-entropy", in_place, "changed its input `A` in place")


def test_entropy_messages_do_not_state_the_expected_values():
    for A, *_ in coding._entropy_cases():
        for value in np.ravel(mha.head_entropy(A)):
            for text in (f"{value:.2f}", f"{value:.3f}", f"{value:.3g}", f"{value:.4f}"):
                for func in (lambda A: np.zeros(A.shape[:-2]), lambda A: entropy_learner(A) + 0.01):
                    assert text not in check("ex-head-entropy", func).message


# ----------------------------------------------------------------------------- attention_param_count

def count_learner(d, h, d_k=None, bias=False, n_kv_heads=None):
    d_k = d // h if d_k is None else d_k
    n_kv = h if n_kv_heads is None else n_kv_heads
    q, kv, o = d * h * d_k, 2 * d * n_kv * d_k, h * d_k * d
    return q + kv + o + ((h * d_k + 2 * n_kv * d_k + d) if bias else 0)


def test_private_reference_semantics():
    assert coding._param_count(768, 12, bias=True) == 2_362_368          # GPT-2 small, one layer
    assert coding._param_count(768, 12) == 4 * 768 * 768
    assert coding._param_count(3072, 16, d_k=256) == 3072 * 4096 * 3 + 4096 * 3072  # Gemma 7B
    assert coding._param_count(4096, 32, n_kv_heads=8) == 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert coding._param_count(12, 4, bias=True, n_kv_heads=2) == 12 * 12 * 2 + 2 * 12 * 6 + 12 + 12 + 12


def test_private_reference_agrees_with_mha_costs():
    if importlib.util.find_spec("mha.costs") is None:
        pytest.skip("mha.costs is not written yet")
    from mha.costs import attention_param_count

    for d, h, options, _ in coding._COUNT_CASES:
        assert coding._param_count(d, h, **options) == attention_param_count(d, h, **options)
    for d, h, d_k, bias, g in [(8, 2, None, False, 1), (8, 4, 3, True, 2), (1, 1, None, True, None),
                               (96, 12, 16, True, 4), (576, 9, None, False, 3)]:
        assert (coding._param_count(d, h, d_k=d_k, n_kv_heads=g, bias=bias)
                == attention_param_count(d, h, d_k=d_k, bias=bias, n_kv_heads=g))


def test_count_accepts_the_library_and_learner_solutions():
    if importlib.util.find_spec("mha.costs") is not None:
        assert check("ex-param-count", mha.costs.attention_param_count).ok
    assert check("ex-param-count", count_learner).ok
    assert check("ex-param-count", lambda *a, **k: float(count_learner(*a, **k))).ok
    assert check("ex-param-count", lambda *a, **k: np.int64(count_learner(*a, **k))).ok


def _count_variant(change):
    def learner(d, h, d_k=None, bias=False, n_kv_heads=None):
        k = d // h if d_k is None else d_k
        g = h if n_kv_heads is None else n_kv_heads
        parts = {"W_Q": d * h * k, "W_KV": 2 * d * g * k, "W_O": h * k * d,
                 "b": (h * k + 2 * g * k + d) if bias else 0}
        return change(parts, d=d, h=h, d_k=d_k, k=k, g=g, bias=bias)

    return learner


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda d, h, d_k=None, bias=False, n_kv_heads=None: 4 * d * d, "left out the biases"),
        (lambda d, h, d_k=None, bias=False, n_kv_heads=None: 4 * d * d + (4 * d if bias else 0),
         "4·d·d is right only when"),
        (_count_variant(lambda p, **_: p["W_Q"] + p["W_KV"] + p["W_O"]), "left out the biases"),
        (_count_variant(lambda p, d, h, k, g, **_: p["W_Q"] + p["W_KV"] + p["W_O"] + h * k + 2 * g * k + d),
         "although bias=False"),
        (_count_variant(lambda p, d, h, k, bias, **_: p["W_Q"] + 2 * d * h * k + p["W_O"]
                        + ((3 * h * k + d) if bias else 0)), "ignored n_kv_heads"),
        (_count_variant(lambda p, d, h, d_k, **_: count_learner(d, h, d if d_k is None else d_k)
                        if not p["b"] and p["W_KV"] == 2 * p["W_Q"] else sum(p.values())),
         "defaults to d // h"),
        (_count_variant(lambda p, d, **_: p["W_Q"] + p["W_KV"] + d * d + p["b"]), "W_O (h·d_k × d) each hold"),
        (_count_variant(lambda p, d, **_: d * d + p["W_KV"] + p["W_O"] + p["b"]), "W_Q (d × h·d_k) and W_O"),
        (_count_variant(lambda p, d, bias, **_: p["W_Q"] + p["W_KV"] + p["W_O"] + (4 * d if bias else 0)),
         "not 4·d"),
    ],
)
def test_count_names_each_classic_mistake(func, phrase):
    v = _wrong("ex-param-count", func, phrase)
    assert v.message.startswith("For d=")


def test_count_with_the_old_signature_is_told_the_expected_call():
    def old(d, h, d_k=None, bias=False):
        return count_learner(d, h, d_k, bias)

    v = _wrong("ex-param-count", old, "unexpected keyword argument 'n_kv_heads'")
    assert "The exercise calls it as `attention_param_count(d, h), adding d_k=" in v.message


@pytest.mark.parametrize(("returned", "phrase"),
                         [("2362368", "is text"), ([1, 2], "has shape (2,)"), (True, "yes/no"),
                          (2.5, "too small")])
def test_count_needs_one_number(returned, phrase):
    _wrong("ex-param-count", lambda *a, **k: returned, phrase)


def test_count_messages_do_not_state_the_expected_counts():
    expected = [coding._param_count(d, h, **options) for d, h, options, _ in coding._COUNT_CASES]
    learners = [lambda *a, **k: 1, lambda *a, **k: count_learner(*a, **k) + 1,
                lambda d, h, d_k=None, bias=False, n_kv_heads=None: 4 * d * d]
    for learner in learners:
        message = check("ex-param-count", learner).message
        for count in expected:
            assert str(count) not in message and f"{count:,}" not in message
