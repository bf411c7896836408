"""Checkers of book/03_splitting.md (mha.checks.splitting): the numeric exercises on the worked
example, and the coding exercises split_heads, merge_heads and the causal multi-head layer."""

import numpy as np
import pytest

import mha
from mha.checks import check
from mha.checks import splitting
from mha.checks.splitting import WRITES_H, WRITES_ROW, head_writes, shapes_512
from _verdicts import status_of as _status, wrong as _wrong


def _four():
    ex = mha.examples.i_love_llms()
    return ex, mha.attention_steps(ex.X, *ex.weights, h=WRITES_H)


# ---- ex-head-writes ------------------------------------------------------------------------

def test_head_writes_reference_adds_up_to_the_output_row():
    ex, s = _four()
    ref = head_writes()
    assert ref.shape == (WRITES_H, ex.W_O.shape[1])
    np.testing.assert_allclose(ref.sum(axis=0), s.output[WRITES_ROW], atol=1e-12)
    assert WRITES_ROW == 2 and ex.tokens[WRITES_ROW] == "LLMs"


def test_head_writes_accepts_reference_and_two_decimals():
    ref = head_writes()
    assert _status("ex-head-writes", ref).ok
    assert _status("ex-head-writes", ref.round(2).tolist()).ok
    assert _status("ex-head-writes", tuple(map(tuple, ref.round(2)))).ok


def _writes_cases():
    ex, s = _four()
    ref = head_writes()
    d_v = s.d_v

    def writes(Z, row):
        return np.stack([Z[i, row] @ ex.W_O[i * d_v:(i + 1) * d_v] for i in range(WRITES_H)])

    return [
        (head_writes(row=0), "row of 'I'"),
        (head_writes(row=1), "row of 'love'"),
        (np.stack([s.head_outputs[i, WRITES_ROW, 0] * ex.W_O[:, i] for i in range(WRITES_H)]), "block of columns"),
        (ref[::-1], "reverse order"),
        (ref.T, "rows and columns are swapped"),
        (writes(mha.softmax(s.scores / np.sqrt(2)) @ s.V_heads, WRITES_ROW), "two-head layer"),
        (writes(mha.softmax(s.scores / 2.0) @ s.V_heads, WRITES_ROW), "√d_model"),
        (np.tile(s.output[WRITES_ROW], (WRITES_H, 1)), "whole output row"),
        (ref[:2], "one row per head"),
        (ref + np.array([0.0, 0.0, 0.0, 0.5]), "head 1's write into output column 3 is too large"),
    ]


@pytest.mark.parametrize("case", range(10))
def test_head_writes_names_mistakes(case):
    answer, phrase = _writes_cases()[case]
    verdict = _status("ex-head-writes", answer)
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_head_writes_mistakes_differ_from_the_reference():
    ref = head_writes()
    for answer, _ in _writes_cases():
        answer = np.asarray(answer)
        assert answer.shape != ref.shape or np.abs(answer - ref).max() > 0.02


# ---- ex-shapes-512 -------------------------------------------------------------------------

def test_shapes_reference():
    ref = shapes_512()
    assert ref["Q"] == (10, 512) and ref["Q_i"] == (10, 64) and ref["concat"] == (10, 512)
    assert (ref["h_enters"], ref["h_gone"]) == ("split", "concatenate")
    assert _status("ex-shapes-512", ref).ok
    loose = {**ref, "Q": [10, 512], "h_enters": " Split", "h_gone": "concat"}
    assert _status("ex-shapes-512", loose).ok


@pytest.mark.parametrize("edit, phrase", [
    ({"Q": (512, 10)}, "swapped them"),
    ({"Q": (10, 64)}, "full model width"),
    ({"Q_i": (10, 512)}, "own slice"),
    ({"Q_i": (8, 10, 64)}, "all heads stacked"),
    ({"Q_i": (10, 8)}, "not h itself"),
    ({"concat": (8, 10, 64)}, "stack of heads"),
    ({"concat": (10, 64)}, "side by side"),
    ({"h_enters": "project"}, "never hears of h"),
    ({"h_enters": "attend"}, "first step"),
    ({"h_gone": "output"}, "one stage earlier"),
    ({"h_gone": "W_O"}, "one stage earlier"),
    ({"h_gone": "attend"}, "still has the head axis in front"),
    ({"h_gone": "split"}, "first stage after 'h_enters'"),
    ({"h_gone": "project"}, "no head axis yet"),
    ({"h_gone": "somewhere"}, "use one of"),
    ({"h_enters": 3}, "stage names"),
    ({"Q": 512}, "should be a shape"),
    ({"Q": (10.5, 512)}, "whole numbers"),
    ({"Q": "10, 512"}, "whole numbers"),
])
def test_shapes_names_mistakes(edit, phrase):
    verdict = _status("ex-shapes-512", {**shapes_512(), **edit})
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_shapes_depend_on_the_arguments():
    ref = shapes_512(n_tokens=3, d_model=12, h=3)
    assert ref["Q_i"] == (3, 4) and ref["h_enters"] == "split" and ref["h_gone"] == "concatenate"


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
        (lambda X, h: split_loop(X, h) * 2, "head 1, token 'I', column 0 is too"),
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

def make_mha(*, scale="sqrt_dk", axis=-1, keys_first=False, straight=False, mask="causal", w_o="plain",
             reverse=False, merge_straight=False, returns="YA"):
    """A learner's vectorised causal multi-head attention, with one classic mistake switched on."""

    def mha_learner(X, Wq, Wk, Wv, Wo, h):
        def split(P):
            *lead, T, width = P.shape
            if straight:
                return P.reshape(*lead, h, T, width // h)
            return np.swapaxes(P.reshape(*lead, T, h, width // h), -3, -2)

        Q, K, V = split(X @ Wq), split(X @ Wk), split(X @ Wv)
        T, d_k = Q.shape[-2:]
        scores = K @ np.swapaxes(Q, -1, -2) if keys_first else Q @ np.swapaxes(K, -1, -2)
        scores = scores / {"sqrt_dk": np.sqrt(d_k), "none": 1.0, "dk": d_k, "sqrt_d": np.sqrt(X.shape[-1]),
                            "sqrt_d_over_h": np.sqrt(X.shape[-1] / h)}[scale]
        lower = np.tril(np.ones((T, T), dtype=bool))
        if mask == "causal":
            scores = np.where(lower, scores, -np.inf)
        elif mask == "upper":
            scores = np.where(lower.T, scores, -np.inf)
        elif mask == "zero":
            scores = np.where(lower, scores, 0.0)
        elif mask == "strict":  # hides the diagonal too: the first row has no key left
            with np.errstate(invalid="ignore"):
                scores = np.where(np.tril(lower, -1), scores, -np.inf)
        with np.errstate(invalid="ignore"):
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            A = e / e.sum(axis=axis, keepdims=True)
        if mask == "after":
            A = A * lower
        Z = A @ V
        if reverse:
            Z = Z[..., ::-1, :, :]
        *lead, _, T, d_v = Z.shape
        concat = Z.reshape(*lead, T, h * d_v) if merge_straight else np.swapaxes(Z, -3, -2).reshape(*lead, T, h * d_v)
        Y = {"plain": lambda: concat @ Wo, "none": lambda: concat, "T": lambda: concat @ Wo.T}[w_o]()
        return {"YA": (Y, A), "AY": (A, Y), "Y": Y, "YAZ": (Y, A, Z), "list": [Y, A]}[returns]

    return mha_learner


def causal_ref(*args):
    """The library's layer with the causal mask: the exercise's reference."""
    return mha.multi_head_attention(*args, causal=True)


def mha_loop(X, Wq, Wk, Wv, Wo, h):
    """A learner's loop over heads, each with the causal mask."""
    d_k, d_v = Wq.shape[1] // h, Wv.shape[1] // h
    outs, weights = [], []
    for i in range(h):
        q = X @ Wq[:, i * d_k:(i + 1) * d_k]
        k = X @ Wk[:, i * d_k:(i + 1) * d_k]
        v = X @ Wv[:, i * d_v:(i + 1) * d_v]
        s = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_k)
        a = mha.softmax(np.where(mha.causal_mask(q.shape[-2]), s, -np.inf))
        weights.append(a)
        outs.append(a @ v)
    return np.concatenate(outs, axis=-1) @ Wo, np.stack(weights, axis=-3)


def test_mha_accepts_the_reference_and_learner_solutions():
    assert check("ex-multi-head-attention", causal_ref).ok
    assert check("ex-multi-head-attention", make_mha()).ok
    assert check("ex-multi-head-attention", make_mha(returns="list")).ok
    v = check("ex-multi-head-attention", mha_loop)
    assert v.ok and "loop over causal heads" in v.message and "sum over heads" in v.message


def test_mha_refuses_the_layer_without_a_mask():
    _wrong("ex-multi-head-attention", mha.multi_head_attention, "the causal mask is missing")


@pytest.mark.parametrize(
    ("options", "phrase"),
    [
        ({"straight": True}, "reshaped straight to (h, T, d_k)"),
        ({"axis": -2}, "softmax runs over the wrong axis"),
        ({"scale": "none"}, "not scaled"),
        ({"scale": "dk"}, "divided the scores by d_k"),
        ({"scale": "sqrt_d"}, "scaled by √d, the model width"),
        ({"scale": "sqrt_d_over_h"}, "you scaled by √(d/h). That is √d_k only when h·d_k = d"),
        ({"keys_first": True}, "from the keys instead of the queries"),
        ({"mask": "none"}, "the causal mask is missing"),
        ({"mask": "upper"}, "keys after it, not before it"),
        ({"mask": "zero"}, "set to 0"),
        ({"mask": "after"}, "zeroed the weights after the softmax"),
        ({"mask": "strict"}, "keep the diagonal"),
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
        Y, A = causal_ref(*args)
        return Y + 0.5, A

    _wrong("ex-multi-head-attention", off, "Your weights are right, so look at what follows")


def test_mha_catches_a_function_that_changes_its_input():
    def in_place(X, Wq, Wk, Wv, Wo, h):
        Wo /= 2.0
        return causal_ref(X, Wq, Wk, Wv, Wo * 2.0, h)

    _wrong("ex-multi-head-attention", in_place, "changed its input `Wo` in place")


def test_mha_references_agree_loop_block_identity_and_library():
    for c in splitting._mha_cases():
        A_loop, outputs = splitting._causal_loop(c.X, c.W, c.h)
        Y_ref, A_ref = causal_ref(c.X, *c.W, c.h)
        concat = np.concatenate(outputs, axis=-1)
        np.testing.assert_allclose(A_loop, A_ref, atol=1e-14)
        np.testing.assert_allclose(splitting._block_sum(outputs, c.W[3]), Y_ref, atol=1e-12)
        np.testing.assert_allclose(concat @ c.W[3], Y_ref, atol=1e-12)
        assert (A_ref[..., np.triu_indices(c.X.shape[-2], 1)[0], np.triu_indices(c.X.shape[-2], 1)[1]] == 0).all()


def _close(a, b):
    return np.shape(a) == np.shape(b) and np.allclose(a, b, atol=1e-6)


def test_mha_mistakes_each_differ_from_the_reference_somewhere():
    """Each named mistake gives other weights or another output than the reference on some case
    (compare names a mistake only where it differs, e.g. √(d/h) differs only where h·d_k != d)."""
    differs = {}
    for c in splitting._mha_cases():
        Y_ref, A_ref = causal_ref(c.X, *c.W, c.h)
        A_bad, Y_bad = splitting._mha_mistakes(c)
        for (A, message), (Y, _) in zip(A_bad, Y_bad):
            off = not (_close(A, A_ref) and _close(Y, Y_ref))
            differs[message] = differs.get(message, False) or off
        for Y, message in Y_bad[len(A_bad):]:
            differs[message] = differs.get(message, False) or (Y is not None and not _close(Y, Y_ref))
    assert all(differs.values()), [m for m, off in differs.items() if not off]


def test_mha_cases_cover_batch_uneven_widths_and_several_heads():
    cases = splitting._mha_cases()
    assert any(c.X.ndim == 3 for c in cases)
    assert any(c.W[2].shape[1] != c.W[0].shape[1] for c in cases)  # d_v != d_k
    assert all(c.h > 1 and c.X.shape[-2] > 1 for c in cases)
    assert any(c.h == 3 and c.X.shape[-2] == 5 for c in cases)
    assert any(c.h * (c.W[0].shape[1] // c.h) != c.X.shape[-1] for c in cases)  # h*d_k != d_model
