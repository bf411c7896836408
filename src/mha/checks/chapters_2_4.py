"""Checkers for the numeric exercises of chapters 2 to 4.

* ``book/02_why_heads.md``: ``ex-compromise-row``, ``ex-one-hot-blend``
* ``book/03_splitting.md``: ``ex-concat-row``, ``ex-shapes-512``
* ``book/04_wide_or_narrow.md``: ``ex-score-variance``

Answers with several parts are dicts; the exercise text shows the keys. Every
expected value is computed here from the library, never typed in.
"""

from __future__ import annotations

import numbers

import numpy as np

from ..attention import attention_steps, softmax
from ..examples import i_love_llms
from ..fitting import best_single_row
from .core import answer_array, checker, compare, is_unfinished, not_done, wrong

# Two decimals, as printed on the page, are accepted.
_PAGE = 0.006


def _parts(answer, keys, example):
    """Return the values of the dict ``answer`` for ``keys``, or give feedback."""
    if not isinstance(answer, dict):
        wrong(f"give a dict with the keys {', '.join(map(repr, keys))}, like {example}; "
              f"got a {type(answer).__name__}.")
    missing = [k for k in keys if k not in answer]
    if missing:
        wrong(f"your dict has no {', '.join(map(repr, missing))} key. It needs {', '.join(map(repr, keys))}.")
    values = [answer[k] for k in keys]
    if any(is_unfinished(v) for v in values):
        not_done("fill in every part of the dict: some are still ... or None.")
    return values


# ---- chapter 2: why one head is not enough ----------------------------------------------------

#: The three relations of "love" in ex-compromise-row: subject, object, and the word itself.
COMPROMISE_TARGETS = ((0.8, 0.1, 0.1), (0.1, 0.1, 0.8), (0.05, 0.9, 0.05))


@checker("ex-compromise-row", kind="numeric")
def compromise_row(answer):
    """The one row that serves three target rows best (smallest summed KL)."""
    t = np.array(COMPROMISE_TARGETS)
    expected = best_single_row(t).row
    got = answer_array(answer, "your row")
    geo = np.exp(np.log(t).mean(axis=0))
    mistakes = [
        (best_single_row(t[:2]).row, "this is the compromise of the first two relations only. "
                                     "The third one wants a say too."),
        (t.sum(axis=0), "these numbers sum to 3, but a row of weights sums to 1. You are one division away."),
        (geo / geo.sum(), "this is the normalised geometric mean. It is the best row for the divergence "
                          "taken the other way round, KL(row || target). The fit in this chapter "
                          "minimises KL(target || row)."),
    ]
    mistakes += [(row, f"this is target {k + 1} itself. It serves that relation perfectly and the "
                       "others badly; the summed divergence is smaller in between.")
                 for k, row in enumerate(t)]
    compare(got, expected, "your row", atol=_PAGE, rtol=0, mistakes=mistakes,
            shape_hint="Enter three weights: on 'I', 'love' and 'LLMs'.")
    return "one row can only sit between the relations; it is their average."


#: "the cat quietly sat": rows of weights at "sat" (tokens: the, cat, quietly, sat).
BLEND_TOKENS = ("the", "cat", "quietly", "sat")
BLEND_SUBJECT = (0.05, 0.85, 0.05, 0.05)    # head 1 asks "who sat?"
BLEND_PREVIOUS = (0.05, 0.05, 0.85, 0.05)   # head 2 asks "what came just before?"
BLEND_KEYS = ("one_head", "two_heads", "one_head_swapped", "two_heads_swapped")


def blend_outputs():
    """Reference outputs of ex-one-hot-blend: one head at "sat", and two heads concatenated.

    The values are one-hot (``V`` is the identity). "Swapped" means the roles of
    "cat" and "quietly" are exchanged: the subject head now finds "quietly".
    """
    V = np.eye(len(BLEND_TOKENS))  # one-hot values, (T, T)
    swap = np.array([0, 2, 1, 3])  # exchange "cat" and "quietly"
    w1, w2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)
    one = ((w1 + w2) / 2) @ V  # one row that blends both questions
    return {
        "one_head": one,
        "two_heads": np.concatenate([w1 @ V, w2 @ V]),
        "one_head_swapped": ((w1[swap] + w2[swap]) / 2) @ V,
        "two_heads_swapped": np.concatenate([w1[swap] @ V, w2[swap] @ V]),
    }


@checker("ex-one-hot-blend", kind="numeric")
def one_hot_blend(answer):
    """Outputs at "sat" of one blending head and of two concatenated heads."""
    expected = blend_outputs()
    values = _parts(answer, BLEND_KEYS, "{'one_head': [...], 'two_heads': [...], ...}")
    for key, got in zip(BLEND_KEYS, values):
        exp = expected[key]
        mistakes = []
        if key.startswith("two_heads"):
            first, second = exp[:4], exp[4:]
            mistakes = [
                (np.concatenate([second, first]), f"'{key}': the heads are in the wrong order. "
                                                  "Head 1 (the subject) comes first."),
                (first + second, f"'{key}': you added the two heads. Concatenate them instead, "
                                 "so that each keeps its own four places."),
                ((first + second) / 2, f"'{key}': you averaged the two heads, which is what one head "
                                       "does. Concatenate them instead."),
            ]
        compare(got, exp, f"'{key}'", atol=1e-6, rtol=0, mistakes=mistakes,
                shape_hint="One head gives 4 numbers; two heads side by side give 8.")
    return ("the one-head output did not change when the roles swapped, "
            "but the two-head output did: only two heads remember who answered what.")


# ---- chapter 3: what splitting splits ------------------------------------------------------

def _steps():
    ex = i_love_llms()
    return attention_steps(ex.X, *ex.weights, h=ex.h)


def _concat_mistakes(s):
    """Rows a learner gets from classic slips in the worked example (row of "love")."""
    A, Vh = s.weights, s.V_heads
    scaled_by_2 = softmax(s.scores / 2.0) @ Vh  # divided by sqrt(d_model), not sqrt(d_k)
    return [
        (s.concat[0], "this is row 1 of the concatenation (the row of 'I'). The exercise asks for row 2."),
        (s.concat[2], "this is row 3 of the concatenation (the row of 'LLMs'). The exercise asks for row 2."),
        (np.concatenate([s.head_outputs[1, 1], s.head_outputs[0, 1]]),
         "the two heads are in the wrong order: head 1's two numbers come first."),
        (np.concatenate([A[0, 1] @ Vh[1], A[1, 1] @ Vh[0]]),
         "each head's weights went onto the other head's value slice. Head 1 uses V_1, head 2 uses V_2."),
        (np.concatenate([A[0, :, 1] @ Vh[0], A[1, :, 1] @ Vh[1]]),
         "you used column 2 of each weight matrix. The weights of 'love' are its row."),
        (_love_row(scaled_by_2),
         "the scores were divided by 2 = sqrt(4). Inside a head d_k = 2, so divide by sqrt(2)."),
        (s.output[1], "this is row 2 of the output, after W_O. The exercise stops at the concatenation."),
    ]


def _love_row(head_outputs):
    """Row 2 ("love") of the concatenation of ``head_outputs`` (h, T, d_v)."""
    return np.concatenate([head_outputs[i, 1] for i in range(head_outputs.shape[0])])


@checker("ex-concat-row", kind="numeric")
def concat_row(answer):
    """Row 2 of the concatenation in the worked example, and head 1's columns."""
    row, cols = _parts(answer, ("row", "head1_columns"), "{'row': [...], 'head1_columns': [..., ...]}")
    s = _steps()
    compare(row, s.concat[1], "'row'", atol=_PAGE, rtol=0, mistakes=_concat_mistakes(s),
            shape_hint="Row 2 of the concatenation has one number per column: h * d_v of them.")
    try:
        picked = sorted(int(c) for c in cols)
        exact = all(isinstance(c, numbers.Integral) and not isinstance(c, bool) for c in cols)
    except (TypeError, ValueError):
        wrong("'head1_columns' should be a list of two column indices, like [2, 3].")
    if not exact:
        wrong("'head1_columns' should hold whole numbers: column indices, counted from 0.")
    head1 = list(range(s.d_v))
    if picked == [c + 1 for c in head1]:
        wrong("'head1_columns': Python counts columns from 0. Which indices does that make?")
    if picked == [c + s.d_v for c in head1]:
        wrong("'head1_columns': those are the columns of head 2. Head 1's slice comes first.")
    if picked != head1:
        wrong("'head1_columns': each head writes one block of d_v neighbouring columns, "
              "and head 1's block comes first.")
    return "head 1 wrote the first two numbers of the row, head 2 the last two."


SHAPE_STAGES = ("project", "split", "attend", "concatenate", "output")
_STAGE_SYNONYMS = {"projection": "project", "concat": "concatenate", "concatenation": "concatenate",
                   "merge": "concatenate", "splitting": "split", "attention": "attend",
                   "w_o": "output", "wo": "output"}


def _shape(value, key):
    if is_unfinished(value):
        not_done("fill in every part of the dict: some are still ... or None.")
    try:
        dims = tuple(value)
    except TypeError:
        wrong(f"'{key}' should be a shape: a tuple of whole numbers such as (3, 4).")
    if not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) for d in dims):
        wrong(f"'{key}' should be a tuple of whole numbers such as (3, 4); got {value!r}.")
    return tuple(int(d) for d in dims)


def _stage(value, key):
    if not isinstance(value, str):
        wrong(f"'{key}' should be one of the stage names {', '.join(map(repr, SHAPE_STAGES))}.")
    name = value.strip().lower().replace(" ", "_")
    name = _STAGE_SYNONYMS.get(name, name)
    if name not in SHAPE_STAGES:
        wrong(f"'{key}' is {value!r}; use one of {', '.join(map(repr, SHAPE_STAGES))}.")
    return name


_STAGE_RESULTS = dict(zip(SHAPE_STAGES, ("Q", "Q_heads", "weights", "concat", "output")))


def shapes_512(n_tokens=10, d_model=512, h=8):
    """Reference answer of ex-shapes-512, computed by running the layer on zeros.

    The stage where ``h`` enters is the first whose result has another shape
    with ``h`` heads than with one; it leaves at the next stage whose shape no
    longer depends on ``h``.
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
            "h_enters": SHAPE_STAGES[enters], "h_leaves": SHAPE_STAGES[leaves]}


@checker("ex-shapes-512", kind="numeric")
def shapes_of_512(answer):
    """Shapes of Q, Q_i and the concatenation for d_model = 512, h = 8, 10 tokens; where h enters and leaves."""
    keys = ("Q", "Q_i", "concat", "h_enters", "h_leaves")
    values = _parts(answer, keys, "{'Q': (..., ...), 'Q_i': (..., ...), 'concat': (..., ...), 'h_enters': '...', 'h_leaves': '...'}")
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
            wrong("'Q_i': one head does not see every column. It gets its own slice of d_model / h.")
        if Q_i == (h, *exp["Q_i"]):
            wrong("'Q_i': that is all heads stacked. The exercise asks for one head's Q_i.")
        if Q_i == (n, h):
            wrong("'Q_i': d_k is d_model divided by h, not h itself.")
        wrong("'Q_i': one head keeps every token and gets d_model / h columns.")
    if concat != exp["concat"]:
        if concat == (h, *exp["Q_i"]):
            wrong("'concat': that is the stack of heads before they are laid side by side.")
        wrong("'concat': laying the h heads side by side gives each token h * d_v numbers again.")
    if enters != exp["h_enters"]:
        if enters == "project":
            wrong("'h_enters': the projection never hears of h. It makes the same Q for any head count.")
        wrong("'h_enters': look for the first step whose result depends on the number of heads.")
    if leaves != exp["h_leaves"]:
        if leaves == "output":
            wrong("'h_leaves': by the time W_O runs, the heads are already side by side in one row "
                  "of width d_model. Where did the head axis go?")
        wrong("'h_leaves': find the step after which the shape no longer shows the heads.")
    return "h enters when the columns are dealt out and is gone once the heads are side by side."


# ---- chapter 4: one wide head or many narrow ones -------------------------------------------

def score_variance(d_model=256, h=4):
    """Reference answer of ex-score-variance: unit-variance entries, so Var(q . k) = d_k."""
    d_k = d_model // h
    return {"d_k": d_k, "raw": float(d_k), "scaled": 1.0}


@checker("ex-score-variance", kind="numeric")
def score_variance_check(answer):
    """d_k, and the variance of raw and scaled scores, for d_model = 256 and h = 4."""
    d_k, raw, scaled = _parts(answer, ("d_k", "raw", "scaled"), "{'d_k': ..., 'raw': ..., 'scaled': ...}")
    exp = score_variance()
    d_model = exp["d_k"] * 4
    d_k = answer_array(d_k, "'d_k'")
    compare(d_k, exp["d_k"], "'d_k'", atol=0, rtol=0, mistakes=[
        (d_model, "'d_k': that is the model width. Each head gets d_model / h of it."),
        (4, "'d_k': that is the number of heads. The head width is d_model / h."),
    ], shape_hint="'d_k' is one number.")
    # A measured variance is accepted within 5 %.
    compare(raw, exp["raw"], "'raw'", atol=0, rtol=0.05, mistakes=[
        (np.sqrt(exp["raw"]), "'raw': that is the standard deviation. The variance is its square."),
        (d_model, "'raw': a head's score sums d_k products, not d_model of them."),
        (1.0, "'raw': 1 is the variance after scaling. Before it, each of the d_k products adds its variance."),
    ], shape_hint="'raw' is one number.")
    compare(scaled, exp["scaled"], "'scaled'", atol=0, rtol=0.05, mistakes=[
        (exp["d_k"] / d_model, "'scaled': that is what dividing by sqrt(d_model) would give. "
                               "Each head divides by the square root of its own d_k."),
        (1.0 / exp["d_k"], "'scaled': that is what dividing by d_k would give. The division is by sqrt(d_k)."),
        (np.sqrt(exp["raw"]), "'scaled': the scaling divides the variance by d_k, not by sqrt(d_k)."),
    ], shape_hint="'scaled' is one number.")
    return "the scaling brings every head, whatever its width, back to variance 1."
