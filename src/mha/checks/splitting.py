"""Checkers for the exercises of book/03_splitting.md (what splitting into heads splits).

* ``ex-head-writes`` (numeric): the worked example's layer run with
  ``WRITES_H`` = 4 heads; row ``WRITES_ROW`` = 2 ("LLMs", counted from 0) of its
  output, split with the block identity into what each head writes, as an
  array (h, d_out): row i is head i + 1's write.
* ``ex-shapes-512`` (numeric): shapes of Q, Q_i and the concatenation for
  d_model = 512, h = 8 and 10 tokens; the first stage whose result has a head
  axis (``h_enters``) and the first stage after it whose result has none
  (``h_gone``).
* ``ex-split-heads`` (code): ``split_heads(X, h)``,
  (..., T, h*d_k) -> (..., h, T, d_k).
* ``ex-merge-heads`` (code): ``merge_heads(Z)``, (..., h, T, d_v) -> (..., T, h*d_v).
* ``ex-multi-head-attention`` (code): ``causal_multi_head_attention`` with six
  arguments (``X``, then ``W_Q``, ``W_K``, ``W_V``, ``W_O``, then the number of
  heads) and a causal mask in every head, returning ``(Y, A)``: the output
  (..., T, d_out) and every head's weights (..., h, T, T). Checked against a
  plain loop over heads and the sum over heads of head_i W_O^(i), on cases
  where h*d_k differs from d_model and d_v from d_k.

The learner's function always gets fresh copies of its inputs, and a function
that changes them is told so.
"""

from __future__ import annotations

import numbers
from typing import NamedTuple

import numpy as np

from ..attention import attention_steps, causal_mask, merge_heads, multi_head_attention, softmax, split_heads
from ..examples import i_love_llms
from .core import (
    call_learner,
    checker,
    compare,
    dict_parts,
    entry_names,
    is_unfinished,
    not_done,
    safe_repr,
    wrong,
)

__all__ = ["SHAPE_STAGES", "WRITES_H", "WRITES_ROW", "head_writes", "shapes_512"]

# Two decimals, as printed on the page, are accepted.
_PAGE = 0.006
# Learners may compute in float32: compare with tolerances that float32 meets.
_ATOL, _RTOL = 1e-6, 1e-5

_TOKENS = i_love_llms().tokens
_BATCH_HINT = ("This case has a batch axis in front: use `X.shape[-1]` and negative axes "
               "(for example `np.swapaxes(x, -3, -2)`), so that leading axes pass through unchanged.")


def _names(*axes):
    """Like ``entry_names``, but with heads counted from 1 (the book's rule) and every other axis from 0."""
    one = [entry_names(axis, start=1 if axis == "head" else 0) for axis in axes]

    def name(index):
        if len(index) != len(axes):
            return None
        words = [namer((i,)) for namer, i in zip(one, index)]
        return None if any(w is None for w in words) else ", ".join(words)

    return name


def _sequence(value, key):
    """``value`` as a list when it is a tuple, list or 1-D array, else feedback."""
    if is_unfinished(value):
        not_done("fill in every part of the dict: some are still ... or None.")
    if isinstance(value, np.ndarray) and value.ndim == 1:
        return value.tolist()
    if isinstance(value, (tuple, list, range)):
        return list(value)
    return None


# --------------------------------------------------------------------------- one output row, head by head

WRITES_H = 4  # heads in the exercise's layer
WRITES_ROW = 2  # the output row it asks for: "LLMs", counted from 0


def _writes(head_outputs, W_O, row):
    """Row ``row`` of the output split by the block identity: (h, d_out), one write per head."""
    h, _, d_v = head_outputs.shape
    return np.stack([head_outputs[i, row] @ W_O[i * d_v:(i + 1) * d_v] for i in range(h)])


def head_writes(h=WRITES_H, row=WRITES_ROW):
    """Reference answer of ex-head-writes: what each head of the worked example's layer with ``h``
    heads writes into output row ``row``, as an (h, d_out) array (head 1 first)."""
    ex = i_love_llms()
    s = attention_steps(ex.X, *ex.weights, h=h)
    return _writes(s.head_outputs, ex.W_O, row)


def _writes_mistakes(h=WRITES_H, row=WRITES_ROW):
    """(result, message) for the classic slips of ex-head-writes."""
    ex = i_love_llms()
    s = attention_steps(ex.X, *ex.weights, h=h)
    ref = _writes(s.head_outputs, ex.W_O, row)
    d_v = s.d_v

    def divided_by(divisor):
        return _writes(softmax(s.scores / divisor) @ s.V_heads, ex.W_O, row)

    token = _TOKENS[row]
    mistakes = [(_writes(s.head_outputs, ex.W_O, r),
                 f"these are the writes into row {r}, the row of '{_TOKENS[r]}'. The exercise asks for row "
                 f"{row}, the row of '{token}' (rows are counted from 0).")
                for r in range(len(_TOKENS)) if r != row]
    mistakes += [
        (np.stack([s.head_outputs[i, row] @ ex.W_O[:, i * d_v:(i + 1) * d_v].T for i in range(h)]),
         "you used a block of columns of W_O. A head writes through its block of rows: the rows of W_O "
         "that meet its columns of the concatenation."),
        (ref[::-1], "the heads are in reverse order: head 1's write comes first."),
        (ref.T, "rows and columns are swapped: give one row per head and one column per output column."),
        (divided_by(np.sqrt(ex.X.shape[1] // ex.h)),
         "you divided the scores by √2, the √d_k of the two-head layer. With four heads each head has "
         "d_k = 1, so it divides by √1."),
        (divided_by(np.sqrt(ex.X.shape[1])),
         "you divided the scores by √d_model. Each head divides by the square root of its own width, √d_k."),
        (np.broadcast_to(s.output[row], ref.shape),
         "every row is the whole output row. Each head's write is only its part of it."),
    ]
    return mistakes


@checker("ex-head-writes", kind="numeric")
def check_head_writes(answer):
    """Output row 2 ("LLMs") of the worked example at h = 4, split into what each head writes."""
    ref = head_writes()
    ex = i_love_llms()
    h = ref.shape[0]

    def entry(index):
        if len(index) != 2 or not (0 <= index[0] < h and 0 <= index[1] < ref.shape[1]):
            return None
        return f"head {index[0] + 1}'s write into output column {index[1]}"

    compare(answer, ref, "your answer", atol=_PAGE, rtol=0, mistakes=_writes_mistakes(), entry=entry,
            shape_hint=f"Give one row per head (h = {h}) and one column per output column (W_O has "
                       f"{ex.W_O.shape[1]}).",
            hint="Head i's write is its output row times its block of rows of W_O; with four heads, "
                 "each block is one row.")
    return ("with one-column heads (d_v = 1), each head writes a multiple of its one row of W_O, and the four "
            "writes add up to the output row.")


# --------------------------------------------------------------------------- shapes for d_model = 512

SHAPE_STAGES = ("project", "split", "attend", "concatenate", "output")
_STAGE_SYNONYMS = {"projection": "project", "concat": "concatenate", "concatenation": "concatenate",
                   "merge": "concatenate", "splitting": "split", "attention": "attend",
                   "w_o": "output", "wo": "output"}


def _shape(value, key):
    dims = _sequence(value, key)
    if dims is None or len(dims) > 32:
        wrong(f"'{key}' should be a shape: a tuple of whole numbers such as (3, 4).")
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, (bool, np.bool_)) for d in dims):
        wrong(f"'{key}' should be a tuple of whole numbers such as (3, 4); got {safe_repr(value)}.")
    return tuple(int(d) for d in dims)


def _stage(value, key):
    if not isinstance(value, str):
        wrong(f"'{key}' should be one of the stage names {', '.join(map(repr, SHAPE_STAGES))}.")
    name = value.strip().lower().replace(" ", "_")
    name = _STAGE_SYNONYMS.get(name, name)
    if name not in SHAPE_STAGES:
        wrong(f"'{key}' is {safe_repr(value)}; use one of {', '.join(map(repr, SHAPE_STAGES))}.")
    return name


_STAGE_RESULTS = dict(zip(SHAPE_STAGES, ("Q", "Q_heads", "weights", "concat", "output")))


def shapes_512(n_tokens=10, d_model=512, h=8):
    """Reference answer of ex-shapes-512, computed by running the layer on zeros.

    ``h_enters`` is the first stage whose result has another shape with ``h``
    heads than with one; ``h_gone`` is the first stage after it whose result
    has the same shape again (no head axis).
    """
    def run(heads):
        W = np.zeros((d_model, d_model))
        return attention_steps(np.zeros((n_tokens, d_model)), W, W, W, W, h=heads)

    s, one = run(h), run(1)
    depends = [getattr(s, _STAGE_RESULTS[st]).shape != getattr(one, _STAGE_RESULTS[st]).shape
               for st in SHAPE_STAGES]
    enters = depends.index(True)
    leaves = depends.index(False, enters)
    return {"Q": s.Q.shape, "Q_i": s.Q_heads[0].shape, "concat": s.concat.shape,
            "h_enters": SHAPE_STAGES[enters], "h_gone": SHAPE_STAGES[leaves]}


@checker("ex-shapes-512", kind="numeric")
def shapes_of_512(answer):
    """Shapes of Q, Q_i and the concatenation for d_model = 512, h = 8, 10 tokens; where the head axis comes and goes."""
    keys = ("Q", "Q_i", "concat", "h_enters", "h_gone")
    values = dict_parts(answer, keys, "{'Q': (..., ...), 'Q_i': (..., ...), 'concat': (..., ...), "
                                      "'h_enters': '...', 'h_gone': '...'}")
    exp = shapes_512()
    Q, Q_i, concat = (_shape(v, k) for v, k in zip(values[:3], keys[:3]))
    enters, leaves = (_stage(v, k) for v, k in zip(values[3:], keys[3:]))
    n, d = exp["Q"]
    h = d // exp["Q_i"][1]
    if Q != exp["Q"]:
        if Q == (d, n):
            wrong("'Q': rows are tokens and columns are features; you swapped them.")
        wrong("'Q': the projection keeps one row per token and gives each the full model width.")
    if Q_i != exp["Q_i"]:
        if Q_i == exp["Q"]:
            wrong("'Q_i': one head does not get every column of Q. It gets its own slice of d_model / h "
                  "columns.")
        if Q_i == (h, *exp["Q_i"]):
            wrong("'Q_i': that is all heads stacked. The exercise asks for one head's Q_i.")
        if Q_i == (n, h):
            wrong("'Q_i': d_k is d_model divided by h, not h itself.")
        wrong("'Q_i': one head keeps every token and gets d_model / h columns of Q.")
    if concat != exp["concat"]:
        if concat == (h, *exp["Q_i"]):
            wrong("'concat': that is the stack of heads before they are laid side by side.")
        wrong("'concat': laying the h heads side by side gives each token h * d_v numbers again.")
    if enters != exp["h_enters"]:
        if enters == "project":
            wrong("'h_enters': the projection never hears of h. It makes the same Q for any head count.")
        wrong("'h_enters': look for the first step whose result depends on the number of heads.")
    if leaves != exp["h_gone"]:
        order = SHAPE_STAGES.index
        if order(leaves) < order(exp["h_enters"]):
            wrong(f"'h_gone': the result of {leaves!r} has no head axis yet. 'h_gone' asks for the first "
                  "stage after 'h_enters' whose result has no head axis again.")
        if leaves == exp["h_enters"]:
            wrong(f"'h_gone': {leaves!r} is the stage whose result first has a head axis. 'h_gone' asks "
                  "for the first stage after 'h_enters' whose result has none.")
        if leaves == "attend":
            wrong("'h_gone': the result of 'attend' still has the head axis in front: one (T, d_v) "
                  "output per head, shape (h, T, d_v). Which stage turns those blocks into one row "
                  "per token?")
        if leaves == "output":
            wrong("'h_gone': by the time W_O runs, the heads are already side by side in one row "
                  "of width h * d_v. The head axis went away one stage earlier.")
        wrong("'h_gone': find the first stage after 'h_enters' whose result has no head axis.")
    return ("the head axis appears when the columns of Q are cut into heads, and is gone once the heads' "
            "outputs are laid side by side: from there on the shapes look the same for any h.")


# --------------------------------------------------------------------------- split and merge

def _rand(rng, *shape, scale=1.0):
    """Random numbers with two decimals: easy to print and read."""
    return np.round(rng.normal(scale=scale, size=shape), 2)


def _worked_Q():
    ex = i_love_llms()
    return ex.X @ ex.W_Q  # (T, d) -> (T, h*d_k), T=3, d=4


def _split_cases():
    """(X, h, description, hint, entry namer) for the split_heads checker."""
    rng = np.random.default_rng(3)
    return [
        (_worked_Q(), 2, "the worked example's Q (shape (3, 4)) with h=2", "",
         _names("head", ("token", _TOKENS), "column")),
        (_rand(rng, 5, 6), 3, "X of shape (5, 6) with h=3, so d_k=2", "", _names("head", "row", "column")),
        (_rand(rng, 2, 4, 8), 2, "a batch: X of shape (2, 4, 8) with h=2", _BATCH_HINT,
         _names("sequence", "head", "row", "column")),
        (_rand(rng, 4, 6), 1, "X of shape (4, 6) with h=1 (one head holds every column)", "",
         _names("head", "row", "column")),
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
    for X, h, case, hint, entry in cases:
        got = call_learner(split, X, h, name="split_heads", case=case, hint=hint,
                           signature="split_heads(X, h)")
        compare(got, split_heads(X, h), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_split_mistakes(X, h), mistake_prefix=f"For {case}: ", entry=entry,
                shape_hint="Heads come before positions: (..., h, T, d_k), with d_k = width // h.",
                hint=hint or "Head i must hold the i-th block of d_k columns of every row.")
    return f"your split_heads gives the right heads on all {len(cases)} cases, a batch axis and h=1 included."


def _merge_cases():
    """(Z, description, hint, entry namer) for the merge_heads checker."""
    rng = np.random.default_rng(4)
    ex = i_love_llms()
    _, A = multi_head_attention(ex.X, *ex.weights, h=ex.h)
    heads = A @ split_heads(ex.X @ ex.W_V, ex.h)  # (h, T, T) @ (h, T, d_v) -> (h, T, d_v)
    return [
        (heads, "the worked example's head outputs (shape (2, 3, 2))", "",
         entry_names(("token", _TOKENS), "column")),
        (_rand(rng, 3, 5, 2), "Z of shape (3, 5, 2): h=3 heads, T=5, d_v=2", "", entry_names("row", "column")),
        (_rand(rng, 2, 2, 4, 3), "a batch: Z of shape (2, 2, 4, 3)",
         "This case has a batch axis in front: use negative axes (for example `np.swapaxes(Z, -3, -2)` "
         "and `Z.shape[-3:]`), so that leading axes pass through unchanged.",
         entry_names("sequence", "row", "column")),
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
    for Z, case, hint, entry in cases:
        got = call_learner(merge, Z, name="merge_heads", case=case, hint=hint, signature="merge_heads(Z)")
        compare(got, merge_heads(Z), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_merge_mistakes(Z), mistake_prefix=f"For {case}: ", entry=entry,
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
    tokens: tuple = ()  # names of the positions, when the case has them


def _mha_cases():
    """The fixed cases of the multi-head attention checker."""
    rng = np.random.default_rng(5)
    ex = i_love_llms()

    def weights(d, widths, scale):
        return tuple(_rand(rng, rows, cols, scale=scale) for rows, cols in zip((d, d, d, widths[2]), widths))

    return [
        _Layer(ex.X, ex.weights, ex.h, "the worked example (T=3, d=4, h=2)", "", ex.tokens),
        _Layer(_rand(rng, 5, 6), weights(6, (6, 6, 9, 5), 0.5), 3,
               "an uneven case: T=5, d=6, h=3 heads with d_k=2 and d_v=3, W_O of shape (9, 5)",
               "Here d_v (W_V.shape[1] // h) differs from d_k (W_Q.shape[1] // h)."),
        _Layer(_rand(rng, 4, 6), weights(6, (12, 12, 6, 6), 0.4), 3,
               "wide heads: T=4, d=6, h=3 heads with d_k=4, so h*d_k = 12 is wider than d",
               "Here h*d_k differs from d: take d_k from W_Q.shape[1] // h, not from d // h."),
        _Layer(_rand(rng, 2, 4, 8), weights(8, (8, 8, 8, 8), 0.4), 2, "a batch: X of shape (2, 4, 8), h=2",
               "This case has a batch axis in front: transpose keys with `np.swapaxes(K, -1, -2)`, "
               "not `K.T`, and use negative axes."),
    ]


def _entries(c: _Layer):
    """Namers for the entries of A (..., h, T, T) and Y (..., T, d_out) of one case."""
    lead = ("sequence",) * (c.X.ndim - 2)
    rows = (("query", c.tokens), ("key", c.tokens)) if c.tokens else ("query", "key")
    token = (("token", c.tokens),) if c.tokens else ("row",)
    return _names(*lead, "head", *rows), _names(*lead, *token, "column")


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


def _causal(q, k, d_k):
    scores = q @ _T(k) / np.sqrt(d_k)
    return softmax(np.where(causal_mask(q.shape[-2]), scores, -np.inf), axis=-1)


def _block_sum(outputs, W_O):
    """Project each head with its own row block of W_O, then add: sum_i head_i W_O^(i)."""
    d_v = outputs[0].shape[-1]
    return sum(o @ W_O[i * d_v:(i + 1) * d_v] for i, o in enumerate(outputs))  # (..., T, d_out)


def _mask(scores, allowed):
    """Scores with -inf where ``allowed`` is False: such a key gets weight exactly 0."""
    return np.where(allowed, scores, -np.inf)


def _lower(q):
    """The causal mask of a query block: True where key s <= query t."""
    return causal_mask(q.shape[-2])


def _weight_mistakes(d, h):
    """(weigh, message) for the classic mistakes in the mask, the scores and the softmax."""
    def scaled(q, k, d_k):
        return q @ _T(k) / np.sqrt(d_k)

    return [
        (lambda q, k, d_k: softmax(scaled(q, k, d_k), axis=-1),
         "every query sees every key: the causal mask is missing. Set the scores of keys after the query "
         "(s > t) to -inf before the softmax, in every head."),
        (lambda q, k, d_k: softmax(_mask(scaled(q, k, d_k), _lower(q).T), axis=-1),
         "your mask lets each query see the keys after it, not before it. Query t may see keys s <= t: "
         "the lower triangle, as `mha.causal_mask(T)` gives it."),
        (lambda q, k, d_k: softmax(np.where(_lower(q), scaled(q, k, d_k), 0.0), axis=-1),
         "the masked scores were set to 0, so the hidden keys still get weight (e^0 is 1). Set them to "
         "-inf, so that the softmax gives them exactly 0."),
        (lambda q, k, d_k: softmax(scaled(q, k, d_k), axis=-1) * _lower(q),
         "you zeroed the weights after the softmax, so the rows no longer sum to 1. Mask the scores "
         "before the softmax (with -inf), and the softmax shares each row among the keys it may see."),
        (lambda q, k, d_k: softmax(_mask(q @ _T(k), _lower(q)), axis=-1),
         "the scores are not scaled: divide Q_i K_iᵀ by √d_k before the softmax."),
        (lambda q, k, d_k: softmax(_mask(q @ _T(k) / d_k, _lower(q)), axis=-1),
         "you divided the scores by d_k; the scaling is by its square root, √d_k."),
        (lambda q, k, d_k: softmax(_mask(q @ _T(k) / np.sqrt(d), _lower(q)), axis=-1),
         "you scaled by √d, the model width. Each head scales by the square root of its own width, √d_k."),
        (lambda q, k, d_k: softmax(_mask(q @ _T(k) / np.sqrt(d / h), _lower(q)), axis=-1),
         "you scaled by √(d/h). That is √d_k only when h·d_k = d: take each head's width from its own "
         "columns, d_k = W_Q.shape[1] // h, and scale by √d_k."),
        (lambda q, k, d_k: softmax(_mask(scaled(q, k, d_k), _lower(q)), axis=-2),
         "the softmax runs over the wrong axis: your columns sum to 1. Each query's row must sum to 1: "
         "use `axis=-1`."),
        (lambda q, k, d_k: softmax(_mask(scaled(k, q, d_k), _lower(q)), axis=-1),
         "the weights were computed from the keys instead of the queries (K_i Q_iᵀ). "
         "The scores are Q_i K_iᵀ: row t holds how well query t matches each key."),
    ]


def _causal_loop(X, W, h):
    """The reference: a plain loop over heads with the causal mask in each."""
    return _loop_heads(X, W, h, _causal)


def _straight(X, W, h):
    """Causal multi-head attention with every split done by reshaping straight to (h, T, d_k)."""
    def cut(P):
        *lead, T, width = P.shape
        return P.reshape(*lead, h, T, width // h)  # the classic bug

    Q, K, V = (cut(X @ M) for M in W[:3])
    scores = _mask(Q @ _T(K) / np.sqrt(Q.shape[-1]), _lower(Q))
    A = softmax(scores, axis=-1)
    return merge_heads(A @ V) @ W[3], A


def _mha_mistakes(c: _Layer):
    """Mistakes as two lists, for A and for Y: (result, message)."""
    W_O = c.W[3]
    A_bad, Y_bad = [], []
    for weigh, message in _weight_mistakes(c.X.shape[-1], c.h):
        A, outputs = _loop_heads(c.X, c.W, c.h, weigh)
        A_bad.append((A, message))
        Y_bad.append((_block_sum(outputs, W_O), message))
    Y_s, A_s = _straight(c.X, c.W, c.h)
    straight = ("you reshaped straight to (h, T, d_k) when splitting into heads. The shape is right but "
                "the contents are not: reshape to (..., T, h, d_k), then swap the T and h axes.")
    A_bad.append((A_s, straight))
    Y_bad.append((Y_s, straight))
    _, outputs = _causal_loop(c.X, c.W, c.h)
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


_NAME = "causal_multi_head_attention"


def _pair(result, Y_shape, A_shape, case):
    """The learner's (Y, A), or feedback when the result is not such a pair."""
    if isinstance(result, (tuple, list)) and len(result) == 2:
        first, second = result
        if np.shape(first) == A_shape and np.shape(second) == Y_shape and A_shape != Y_shape:
            wrong(f"you returned (A, Y) for {case}; the order is (Y, A): the output first, then the weights.")
        return first, second
    if isinstance(result, (tuple, list)):
        wrong(f"{_NAME} returned {len(result)} values for {case}. Return the pair (Y, A): "
              "the output and the attention weights of every head.")
    if isinstance(result, np.ndarray) and np.shape(result) == Y_shape:
        wrong(f"{_NAME} returned one array. Return the pair (Y, A): the output and every "
              "head's attention weights, as in `return Y, A`.")
    kind = "text (a str)" if isinstance(result, str) else f"a {type(result).__name__}"
    wrong(f"{_NAME} returned {kind}. Return the pair (Y, A).")


def _no_key_left(A, A_shape):
    """Feedback when the learner's weights are NaN exactly on whole query rows (a mask that hides the diagonal)."""
    try:
        A = np.asarray(A, dtype=float)
    except Exception:  # junk: compare() below says what is wrong with it
        return
    if A.shape != A_shape or not np.isnan(A).any():
        return
    empty = np.isnan(A).all(axis=-1)  # (..., h, T): rows with nothing to share
    if empty.any() and empty[..., 0].all():
        wrong("the first query's row of weights is NaN in every head: your mask leaves it no key to see. "
              "Query t may see keys s <= t, itself included: keep the diagonal.")


_MHA_CALL = f"{_NAME} with six arguments: X, then W_Q, W_K, W_V and W_O, then h"


@checker("ex-multi-head-attention", kind="code")
def check_multi_head_attention(mha_func):
    """The learner's causal multi-head attention (X, four weight matrices, h) returning ``(Y, A)``."""
    cases = _mha_cases()
    for c in cases:
        A_loop, outputs = _causal_loop(c.X, c.W, c.h)
        Y_loop = _block_sum(outputs, c.W[3])  # sum over heads of head_i W_O^(i)
        Y_ref, A_ref = multi_head_attention(c.X, *c.W, c.h, causal=True)
        if not (np.allclose(Y_loop, Y_ref, atol=1e-10) and np.allclose(A_loop, A_ref, atol=1e-12)):
            raise RuntimeError("the checker's references disagree; please report this")
        result = call_learner(mha_func, c.X, *c.W, c.h, name=_NAME, case=c.text,
                              hint=c.hint, signature=_MHA_CALL)
        Y, A = _pair(result, Y_ref.shape, A_ref.shape, c.text)
        _no_key_left(A, A_ref.shape)
        A_bad, Y_bad = _mha_mistakes(c)
        A_entry, Y_entry = _entries(c)
        compare(A, A_loop, f"A (the weights) for {c.text}", atol=_ATOL, rtol=_RTOL,
                mistakes=A_bad, mistake_prefix=f"For {c.text}: ", entry=A_entry,
                shape_hint="A holds one (T, T) matrix per head: (..., h, T, T).",
                hint=c.hint or "Look at the scores Q_i K_iᵀ / √d_k, the mask, and the softmax over each row.")
        compare(Y, Y_loop, f"Y (the output) for {c.text}", atol=_ATOL, rtol=_RTOL,
                mistakes=Y_bad, mistake_prefix=f"For {c.text}: ", entry=Y_entry,
                shape_hint="Y has one row per token and W_O's number of columns.",
                hint=c.hint or ("Your weights are right, so look at what follows: each head's A_i V_i, "
                                "their concatenation, and W_O."))
    return (f"Y and A match a loop over causal heads on all {len(cases)} cases (uneven widths, heads wider "
            "than d / h and a batch included), and Y equals the sum over heads of head_i W_O^(i).")
