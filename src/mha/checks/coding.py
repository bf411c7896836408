"""Checkers for the coding exercises: the learner writes a function.

Each checker calls the learner's function on fixed cases (the worked example,
an uneven case, a batch axis), compares with the library, and names a classic
mistake when the result matches one. The learner's function always gets fresh
copies of its inputs, and a function that changes them is told so.

The exercises, their labels and where they sit in the book:

* ``ex-split-heads`` (book/03_splitting.md): ``split_heads(X, h)``,
  (..., T, h*d_k) -> (..., h, T, d_k).
* ``ex-merge-heads`` (book/03_splitting.md): ``merge_heads(Z)``,
  (..., h, T, d_v) -> (..., T, h*d_v).
* ``ex-multi-head-attention`` (book/03_splitting.md):
  ``multi_head_attention`` with six arguments (``X``, then the four weight
  matrices ``W_Q``, ``W_K``, ``W_V``, ``W_O``, then the number of heads) and no
  mask, returning the pair ``(Y, A)``: the output (..., T, d_out) and every
  head's weights (..., h, T, T).
  Checked against a plain loop over heads and the sum over heads of head_i W_O^(i).
* ``ex-head-entropy`` (book/04_wide_or_narrow.md): ``head_entropy(A)``,
  (..., h, T, S) -> (..., h), in nats, as :func:`mha.stats.head_entropy`.
* ``ex-param-count`` (book/08_costs.md):
  ``attention_param_count(d, h)`` with the optional keywords ``d_k``, ``bias`` and
  ``n_kv_heads``, as :func:`mha.costs.attention_param_count` (d_v = d_k; d_k
  defaults to d // h).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..attention import causal_mask, merge_heads, multi_head_attention, softmax, split_heads
from ..examples import i_love_llms
from ..stats import head_entropy, row_entropy
from .core import answer_array, call_learner, checker, compare, wrong

__all__: list = []

# Learners may compute in float32: compare with tolerances that float32 meets.
_ATOL, _RTOL = 1e-6, 1e-5

_BATCH_HINT = ("This case has a batch axis in front: use `X.shape[-1]` and negative axes "
               "(for example `np.swapaxes(x, -3, -2)`), so that leading axes pass through unchanged.")


def _rand(rng, *shape, scale=1.0):
    """Random numbers with two decimals: easy to print and read."""
    return np.round(rng.normal(scale=scale, size=shape), 2)


def _worked_Q():
    ex = i_love_llms()
    return ex.X @ ex.W_Q  # (T, d) -> (T, h*d_k), T=3, d=4


# --------------------------------------------------------------------------- split and merge

def _split_cases():
    """(X, h, description, hint) for the split_heads checker."""
    rng = np.random.default_rng(3)
    return [
        (_worked_Q(), 2, "the worked example's Q (shape (3, 4)) with h=2", ""),
        (_rand(rng, 5, 6), 3, "X of shape (5, 6) with h=3, so d_k=2", ""),
        (_rand(rng, 2, 4, 8), 2, "a batch: X of shape (2, 4, 8) with h=2", _BATCH_HINT),
        (_rand(rng, 4, 6), 1, "X of shape (4, 6) with h=1 (one head holds every column)", ""),
    ]


def _split_mistakes(X, h):
    *lead, T, width = X.shape
    d_k = width // h
    return [
        (X.reshape(*lead, h, T, d_k),
         "you reshaped straight to (h, T, d_k). The shape is right but the contents are not: one head "
         "then holds whole rows of other tokens. Reshape to (..., T, h, d_k) first, then swap the T and h axes."),
        (X.reshape(*lead, T, h, d_k),
         "you reshaped to (..., T, h, d_k) but stopped there. Swap the T and h axes, so that each head "
         "owns a (T, d_k) block: (..., h, T, d_k)."),
        (np.moveaxis(X.reshape(*lead, T, d_k, h), -1, -3),
         "each head got every h-th column. Head i should get one block of d_k neighbouring columns, "
         "the i-th block of d_k: reshape the last axis as (h, d_k), not (d_k, h)."),
        (split_heads(X, h)[..., ::-1, :, :],
         "the heads come out in reverse order. Head 0 holds the first d_k columns, head 1 the next d_k, and so on."),
    ]


@checker("ex-split-heads", kind="code")
def check_split_heads(split):
    """``split_heads(X, h)``: deal the columns of X out to h heads, (..., T, h*d_k) -> (..., h, T, d_k)."""
    cases = _split_cases()
    for X, h, case, hint in cases:
        got = call_learner(split, X, h, name="split_heads", case=case, hint=hint,
                           signature="split_heads(X, h)")
        compare(got, split_heads(X, h), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_split_mistakes(X, h), mistake_prefix=f"For {case}: ",
                shape_hint="Heads come before positions: (..., h, T, d_k), with d_k = width // h.",
                hint=hint or "Head i must hold the i-th block of d_k columns of every row.")
    return f"your split_heads gives the right heads on all {len(cases)} cases, a batch axis and h=1 included."


def _merge_cases():
    """(Z, description, hint) for the merge_heads checker."""
    rng = np.random.default_rng(4)
    ex = i_love_llms()
    _, A = multi_head_attention(ex.X, *ex.weights, h=ex.h)
    heads = A @ split_heads(ex.X @ ex.W_V, ex.h)  # (h, T, T) @ (h, T, d_v) -> (h, T, d_v)
    return [
        (heads, "the worked example's head outputs (shape (2, 3, 2))", ""),
        (_rand(rng, 3, 5, 2), "Z of shape (3, 5, 2): h=3 heads, T=5, d_v=2", ""),
        (_rand(rng, 2, 2, 4, 3), "a batch: Z of shape (2, 2, 4, 3)",
         "This case has a batch axis in front: use negative axes (for example `np.swapaxes(Z, -3, -2)` "
         "and `Z.shape[-3:]`), so that leading axes pass through unchanged."),
    ]


def _merge_mistakes(Z):
    *lead, h, T, d_v = Z.shape
    return [
        (Z.reshape(*lead, T, h * d_v),
         "you reshaped (h, T, d_v) straight to (T, h*d_v). That mixes rows of different tokens. "
         "Swap the h and T axes first, then reshape."),
        (merge_heads(Z[..., ::-1, :, :]),
         "the heads are concatenated in the wrong order: head 0's columns come first, then head 1's, and so on."),
        (np.moveaxis(Z, -3, -1).reshape(*lead, T, h * d_v),
         "the heads' columns are interleaved. Put each head's d_v columns side by side as one block: "
         "move the axes to (..., T, h, d_v), not (..., T, d_v, h), before the reshape."),
        (Z.reshape(*lead, h * T, d_v),
         "you stacked the heads on top of each other (h*T rows). Concatenate them side by side, "
         "along the last axis: one row per token."),
        (Z.sum(axis=-3),
         "you added the heads together. Concatenate them instead: each head keeps its own columns."),
    ]


@checker("ex-merge-heads", kind="code")
def check_merge_heads(merge):
    """``merge_heads(Z)``: put the heads side by side, (..., h, T, d_v) -> (..., T, h*d_v)."""
    cases = _merge_cases()
    for Z, case, hint in cases:
        got = call_learner(merge, Z, name="merge_heads", case=case, hint=hint, signature="merge_heads(Z)")
        compare(got, merge_heads(Z), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_merge_mistakes(Z), mistake_prefix=f"For {case}: ",
                shape_hint="The heads sit side by side: (..., T, h*d_v).",
                hint=hint or "Row t must be [head_0[t], head_1[t], ...].")
    return f"your merge_heads undoes the split on all {len(cases)} cases, a batch axis included."


# --------------------------------------------------------------------------- multi-head attention

class _Layer(NamedTuple):
    """One case for the multi-head attention checker."""

    X: np.ndarray
    W: tuple  # W_Q, W_K, W_V, W_O, in this order
    h: int
    text: str  # how messages name the case
    hint: str  # where to look when the learner's function fails on it


def _mha_cases():
    """The fixed cases of the multi-head attention checker."""
    rng = np.random.default_rng(5)
    ex = i_love_llms()

    def weights(d, widths, scale):
        return tuple(_rand(rng, rows, cols, scale=scale) for rows, cols in zip((d, d, d, widths[2]), widths))

    return [
        _Layer(ex.X, ex.weights, ex.h, "the worked example (T=3, d=4, h=2)", ""),
        _Layer(_rand(rng, 5, 6), weights(6, (6, 6, 9, 5), 0.5), 3,
               "an uneven case: T=5, d=6, h=3 heads with d_k=2 and d_v=3, W_O of shape (9, 5)",
               "Here d_v (W_V.shape[1] // h) differs from d_k (W_Q.shape[1] // h)."),
        _Layer(_rand(rng, 2, 4, 8), weights(8, (8, 8, 8, 8), 0.4), 2, "a batch: X of shape (2, 4, 8), h=2",
               "This case has a batch axis in front: transpose keys with `np.swapaxes(K, -1, -2)`, "
               "not `K.T`, and use negative axes."),
    ]


def _loop_heads(X, W, h, weigh):
    """A plain loop over heads: each head's weights (by ``weigh(q, k, d_k)``) and output."""
    W_Q, W_K, W_V = W[:3]
    d_k, d_v = W_Q.shape[1] // h, W_V.shape[1] // h
    weights, outputs = [], []
    for i in range(h):
        keep, keep_v = slice(i * d_k, (i + 1) * d_k), slice(i * d_v, (i + 1) * d_v)
        q = X @ W_Q[:, keep]  # (..., T, d) -> (..., T, d_k)
        k = X @ W_K[:, keep]  # (..., T, d) -> (..., T, d_k)
        v = X @ W_V[:, keep_v]  # (..., T, d) -> (..., T, d_v)
        a = weigh(q, k, d_k)  # (..., T, T)
        weights.append(a)
        outputs.append(a @ v)  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)
    return np.stack(weights, axis=-3), outputs  # (..., h, T, T), h x (..., T, d_v)


def _T(x):
    return np.swapaxes(x, -1, -2)


def _right(q, k, d_k):
    return softmax(q @ _T(k) / np.sqrt(d_k), axis=-1)


def _causal(q, k, d_k):
    scores = q @ _T(k) / np.sqrt(d_k)
    return softmax(np.where(causal_mask(q.shape[-2]), scores, -np.inf), axis=-1)


def _block_sum(outputs, W_O):
    """Project each head with its own row block of W_O, then add: sum_i head_i W_O^(i)."""
    d_v = outputs[0].shape[-1]
    return sum(o @ W_O[i * d_v:(i + 1) * d_v] for i, o in enumerate(outputs))  # (..., T, d_out)


def _straight(X, W, h):
    """Multi-head attention with every split done by reshaping straight to (h, T, d_k)."""
    def cut(P):
        *lead, T, width = P.shape
        return P.reshape(*lead, h, T, width // h)  # the classic bug

    Q, K, V = (cut(X @ M) for M in W[:3])
    A = softmax(Q @ _T(K) / np.sqrt(Q.shape[-1]), axis=-1)
    return merge_heads(A @ V) @ W[3], A


def _weight_mistakes(d):
    """(weigh, message) for the classic mistakes in the scores and the softmax."""
    return [
        (lambda q, k, d_k: softmax(q @ _T(k), axis=-1),
         "the scores are not scaled: divide Q_i K_iᵀ by √d_k before the softmax."),
        (lambda q, k, d_k: softmax(q @ _T(k) / d_k, axis=-1),
         "you divided the scores by d_k; the scaling is by its square root, √d_k."),
        (lambda q, k, d_k: softmax(q @ _T(k) / np.sqrt(d), axis=-1),
         "you scaled by √d, the model width. Each head scales by the square root of its own width, √d_k."),
        (lambda q, k, d_k: softmax(q @ _T(k) / np.sqrt(d_k), axis=-2),
         "the softmax runs over the wrong axis: your columns sum to 1. Each query's row must sum to 1: "
         "use `axis=-1`."),
        (lambda q, k, d_k: softmax(k @ _T(q) / np.sqrt(d_k), axis=-1),
         "the weights were computed from the keys instead of the queries (K_i Q_iᵀ). "
         "The scores are Q_i K_iᵀ: row t holds how well query t matches each key."),
        (_causal,
         "you applied a causal mask. This exercise asks for full attention: every query sees every key."),
    ]


def _mha_mistakes(c: _Layer):
    """Mistakes as two lists, for A and for Y: (result, message)."""
    W_O = c.W[3]
    A_bad, Y_bad = [], []
    for weigh, message in _weight_mistakes(c.X.shape[-1]):
        A, outputs = _loop_heads(c.X, c.W, c.h, weigh)
        A_bad.append((A, message))
        Y_bad.append((_block_sum(outputs, W_O), message))
    Y_s, A_s = _straight(c.X, c.W, c.h)
    straight = ("you reshaped straight to (h, T, d_k) when splitting into heads. The shape is right but "
                "the contents are not: reshape to (..., T, h, d_k), then swap the T and h axes.")
    A_bad.append((A_s, straight))
    Y_bad.append((Y_s, straight))
    _, outputs = _loop_heads(c.X, c.W, c.h, _right)
    Z = np.stack(outputs, axis=-3)  # (..., h, T, d_v)
    *lead, h, T, d_v = Z.shape
    Y_bad += [
        (merge_heads(Z),
         "W_O is forgotten: you returned the concatenated heads. Multiply them by W_O at the end."),
        (merge_heads(Z[..., ::-1, :, :]) @ W_O,
         "the heads are concatenated in the wrong order: head 0's output comes first, then head 1's."),
        (Z.reshape(*lead, T, h * d_v) @ W_O,
         "when merging, you reshaped (h, T, d_v) straight to (T, h*d_v). Swap the h and T axes first."),
        (merge_heads(Z) @ W_O.T if W_O.shape[0] == W_O.shape[1] else None,
         "you multiplied by W_O transposed. The concatenation (T, h*d_v) times W_O (h*d_v, d_out) "
         "needs W_O as it is."),
    ]
    return A_bad, Y_bad


def _pair(result, Y_shape, A_shape, case):
    """The learner's (Y, A), or feedback when the result is not such a pair."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        first, second = result
        if np.shape(first) == A_shape and np.shape(second) == Y_shape and A_shape != Y_shape:
            wrong(f"you returned (A, Y) for {case}; the order is (Y, A): the output first, then the weights.")
        return first, second
    if isinstance(result, (tuple, list)):
        wrong(f"multi_head_attention returned {len(result)} values for {case}. Return the pair (Y, A): "
              "the output and the attention weights of every head.")
    if np.shape(result) == Y_shape:
        wrong("multi_head_attention returned one array. Return the pair (Y, A): the output and every "
              "head's attention weights, as in `return Y, A`.")
    kind = "text (a str)" if isinstance(result, str) else f"a {type(result).__name__}"
    wrong(f"multi_head_attention returned {kind}. Return the pair (Y, A).")


_MHA_CALL = "multi_head_attention with six arguments: X, then W_Q, W_K, W_V and W_O, then h"


@checker("ex-multi-head-attention", kind="code")
def check_multi_head_attention(mha_func):
    """The learner's ``multi_head_attention`` (X, four weight matrices, h) returning ``(Y, A)``, no mask."""
    cases = _mha_cases()
    for c in cases:
        A_loop, outputs = _loop_heads(c.X, c.W, c.h, _right)
        Y_loop = _block_sum(outputs, c.W[3])  # sum over heads of head_i W_O^(i)
        Y_ref, A_ref = multi_head_attention(c.X, *c.W, c.h)
        if not (np.allclose(Y_loop, Y_ref, atol=1e-10) and np.allclose(A_loop, A_ref, atol=1e-12)):
            raise RuntimeError("the checker's references disagree; please report this")
        result = call_learner(mha_func, c.X, *c.W, c.h, name="multi_head_attention", case=c.text,
                              hint=c.hint, signature=_MHA_CALL)
        Y, A = _pair(result, Y_ref.shape, A_ref.shape, c.text)
        A_bad, Y_bad = _mha_mistakes(c)
        compare(A, A_loop, f"A (the weights) for {c.text}", atol=_ATOL, rtol=_RTOL,
                mistakes=A_bad, mistake_prefix=f"For {c.text}: ",
                shape_hint="A holds one (T, T) matrix per head: (..., h, T, T).",
                hint=c.hint or "Look at the scores Q_i K_iᵀ / √d_k and the softmax over each row.")
        compare(Y, Y_loop, f"Y (the output) for {c.text}", atol=_ATOL, rtol=_RTOL,
                mistakes=Y_bad, mistake_prefix=f"For {c.text}: ",
                shape_hint="Y has one row per token and W_O's number of columns.",
                hint=c.hint or ("Your weights are right, so look at what follows: each head's A_i V_i, "
                                "their concatenation, and W_O."))
    return (f"Y and A match a loop over heads on all {len(cases)} cases (uneven widths and a batch included), "
            "and Y equals the sum over heads of head_i W_O^(i).")


# --------------------------------------------------------------------------- head entropy

def _entropy_cases():
    """(A, description, has_zeros, hint) for the head_entropy checker."""
    rng = np.random.default_rng(6)
    ex = i_love_llms()
    _, A_example = multi_head_attention(ex.X, *ex.weights, h=ex.h)
    scores = rng.normal(scale=1.5, size=(2, 3, 5, 5))
    A_causal = softmax(np.where(causal_mask(5), scores, -np.inf), axis=-1)
    A_cross = softmax(rng.normal(scale=1.5, size=(2, 4, 6)), axis=-1)
    return [
        (A_example, "the worked example's weights (h=2 heads, T=3)", False, ""),
        (A_causal, "a batch of causal weights, shape (2, 3, 5, 5): B=2, h=3, T=5, with exact zeros", True,
         "This case has batch and head axes in front: use negative axes (`axis=-1` for the keys, "
         "then the rows), so that leading axes pass through unchanged."),
        (A_cross, "weights of shape (2, 4, 6): h=2, T=4 queries over S=6 keys", False, ""),
    ]


def _entropy_mistakes(A):
    H = head_entropy(A)  # (..., h)
    T = A.shape[-2]
    rows = row_entropy(A)  # (..., h, T)
    safe = np.where(A > 0, A, 1.0)
    return [
        (H / np.log(2), "you used log base 2, which gives bits. The exercise asks for nats: use `np.log`."),
        (H / np.log(10), "you used log base 10. The exercise asks for nats: use `np.log`."),
        (-H, "your entropies are negative: the formula is −Σ a log a, with a minus sign."),
        (H * T, "you added the entropies of the rows. Average them over the T rows instead."),
        (H / A.shape[-1], "you averaged a·log a over the keys. Sum over the keys (the last axis) for each "
                          "row's entropy, then average over the rows."),
        (rows, "you returned one entropy per row. Average over the rows, to get one number per head."),
        (H.mean(axis=-1), "you averaged over the heads too. Keep one number per head: shape (..., h)."),
        (-(A * np.log(safe)).sum(axis=-2).mean(axis=-1),
         "you summed down the columns. Each row (one query's weights over the keys, the last axis) "
         "is a probability distribution: sum over the last axis."),
    ]


@checker("ex-head-entropy", kind="code")
def check_head_entropy(entropy_func):
    """``head_entropy(A)``: mean entropy in nats of each head's rows, (..., h, T, S) -> (..., h)."""
    cases = _entropy_cases()
    for A, case, has_zeros, hint in cases:
        got = call_learner(entropy_func, A, name="head_entropy", case=case, hint=hint,
                           signature="head_entropy(A)")
        if has_zeros and _has_nan(got):
            wrong(f"your result holds NaN for {case}. Some weights are exactly 0, and 0·log 0 must count as 0; "
                  "but `np.log(0)` is -inf and 0 × (-inf) is NaN. Take the log of "
                  "`np.where(A > 0, A, 1.0)` instead: log 1 = 0, so the zero weights add nothing.")
        compare(got, head_entropy(A), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_entropy_mistakes(A), mistake_prefix=f"For {case}: ",
                shape_hint="One number per head: (..., h), where A has shape (..., h, T, S).",
                hint=hint or "Each row's entropy is −Σ_s a log a over the keys; average these over the rows.")
    return (f"your head_entropy is right on all {len(cases)} cases, including exact zeros "
            "(0·log 0 = 0) and a batch axis.")


def _has_nan(value) -> bool:
    try:
        return bool(np.isnan(np.asarray(value, dtype=float)).any())
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- parameter count

def _param_count(d, h, d_k=None, n_kv_heads=None, bias=False):
    """Parameters of one attention layer: W_Q, W_K, W_V, W_O (and their biases), with d_v = d_k."""
    d_k = d // h if d_k is None else d_k
    g = h if n_kv_heads is None else n_kv_heads
    weights = d * h * d_k + 2 * d * g * d_k + h * d_k * d  # W_Q + (W_K, W_V) + W_O
    biases = h * d_k + 2 * g * d_k + d  # b_Q + (b_K, b_V) + b_O
    return weights + (biases if bias else 0)


# (d, h, keyword arguments, description); keywords are passed only when a case needs them.
_COUNT_CASES = (
    (768, 12, {}, "d=768, h=12, no biases"),
    (768, 12, {"bias": True}, "d=768, h=12, bias=True (GPT-2 small, one layer)"),
    (3072, 16, {"d_k": 256}, "d=3072, h=16, d_k=256 (Gemma 7B: h*d_k is wider than d)"),
    (10, 2, {"d_k": 8, "bias": True}, "d=10, h=2, d_k=8, bias=True"),
    (4096, 32, {"n_kv_heads": 8}, "d=4096, h=32, n_kv_heads=8 (grouped-query attention, Llama 3 8B)"),
    (12, 4, {"bias": True, "n_kv_heads": 2}, "d=12, h=4, n_kv_heads=2, bias=True"),
    (64, 8, {"n_kv_heads": 1}, "d=64, h=8, n_kv_heads=1 (multi-query attention)"),
)


def _count_mistakes(d, h, d_k=None, n_kv_heads=None, bias=False):
    k = d // h if d_k is None else d_k
    right = _param_count(d, h, d_k=d_k, n_kv_heads=n_kv_heads, bias=bias)
    weights = _param_count(d, h, d_k=d_k, n_kv_heads=n_kv_heads)
    naive = ("4·d·d is right only when h·d_k = d, n_kv_heads = h and there are no biases. "
             "Count each matrix from d, h, d_k and n_kv_heads.")
    return [
        (weights if bias else None, "you left out the biases. With bias=True, add one bias per output column "
                                    "of each matrix: h·d_k + 2·n_kv_heads·d_k + d."),
        (None if bias else _param_count(d, h, d_k=d_k, n_kv_heads=n_kv_heads, bias=True),
         "you counted biases although bias=False."),
        (_param_count(d, h, d_k=d_k, bias=bias),
         "you ignored n_kv_heads. W_K and W_V have n_kv_heads·d_k columns each, not h·d_k."),
        (_param_count(d, h, d_k=d, n_kv_heads=n_kv_heads, bias=bias) if d_k is None else None,
         "when d_k is not given, it defaults to d // h, not d."),
        (right - h * k * d + d * d,
         "W_Q (d × h·d_k) and W_O (h·d_k × d) each hold d·h·d_k weights, not d·d: "
         "h·d_k can differ from d."),
        (weights + 4 * d if bias else None,
         "the biases are h·d_k (b_Q) + 2·n_kv_heads·d_k (b_K and b_V) + d (b_O), not 4·d."),
        (4 * d * d, naive),
        (4 * d * d + 4 * d, naive),
    ]


_COUNT_CALL = ("attention_param_count(d, h), adding d_k=..., bias=... or n_kv_heads=... as keywords "
               "when a case needs them")


@checker("ex-param-count", kind="code")
def check_param_count(count_func):
    """The learner's ``attention_param_count(d, h)``, keywords ``d_k``, ``bias``, ``n_kv_heads``: one layer's parameters."""
    for d, h, options, case in _COUNT_CASES:
        got = call_learner(count_func, d, h, name="attention_param_count", case=case,
                           signature=_COUNT_CALL,
                           **options)
        value = answer_array(got, f"the count for {case}")
        if value.shape != ():
            wrong(f"the count for {case} has shape {value.shape}; return one whole number.")
        compare(value, _param_count(d, h, **options), f"the count for {case}", atol=1e-6, rtol=0,
                mistakes=_count_mistakes(d, h, **options), mistake_prefix=f"For {case}: ",
                rounding_hint=False,
                hint="Count W_Q (d × h·d_k), W_K and W_V (d × n_kv_heads·d_k each), W_O (h·d_k × d), "
                     "then the biases if bias=True.")
    return (f"your count is right on all {len(_COUNT_CASES)} cases: GPT-2 small, Gemma 7B's wide heads, "
            "grouped- and multi-query attention.")
