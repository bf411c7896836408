"""Checkers for the exercises of book/04_wide_or_narrow.md (one wide head or many narrow ones).

* ``ex-head-entropy`` (code): ``head_entropy(A)``, (..., h, T, S) -> (..., h),
  the mean entropy in nats of each head's rows, as :func:`mha.stats.head_entropy`.
* ``ex-role-partner`` (numeric): at h = 2, the role of
  :func:`mha.examples.cat_sat_mat` that should share a head with "same part
  of speech" (the blocks of columns reordered), and that head's weight on the
  part-of-speech keys.
* ``ex-single-head-mat`` (numeric): in the single map (h = 1) of
  :func:`mha.examples.cat_sat_mat`, the role whose keys get most of the row
  of "mat", and the weight they get together (the key "." is a neighbour of
  "mat" as well as the sink's key).
"""

from __future__ import annotations

import numpy as np

from ..attention import causal_mask, multi_head_attention, softmax
from ..examples import cat_sat_mat, i_love_llms
from ..head_roles import role_keys, role_mass
from ..stats import head_entropy, row_entropy
from .core import answer_array, call_learner, checker, compare, dict_parts, entry_names, one_number, wrong

__all__ = ["role_partner", "single_head_mat"]

# Learners may compute in float32: compare with tolerances that float32 meets.
_ATOL, _RTOL = 1e-6, 1e-5


# --------------------------------------------------------------------------- head entropy

def _entropy_cases():
    """(A, description, has_zeros, hint, entry namer) for the head_entropy checker."""
    rng = np.random.default_rng(6)
    ex = i_love_llms()
    _, A_example = multi_head_attention(ex.X, *ex.weights, h=ex.h)
    scores = rng.normal(scale=1.5, size=(2, 3, 5, 5))
    A_causal = softmax(np.where(causal_mask(5), scores, -np.inf), axis=-1)
    A_cross = softmax(rng.normal(scale=1.5, size=(2, 4, 6)), axis=-1)
    per_head = entry_names("head", template="the entropy of {}")
    return [
        (A_example, "the worked example's weights (h=2 heads, T=3)", False, "", per_head),
        (A_causal, "a batch of causal weights, shape (2, 3, 5, 5): B=2, h=3, T=5, with exact zeros", True,
         "This case has batch and head axes in front: use negative axes (`axis=-1` for the keys, "
         "then the rows), so that leading axes pass through unchanged.",
         entry_names("sequence", "head", template="the entropy of {1} in {0}")),
        (A_cross, "weights of shape (2, 4, 6): h=2, T=4 queries over S=6 keys", False, "", per_head),
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


def _has_nan(value) -> bool:
    try:
        raw = np.asarray(value)
        return raw.dtype.kind == "f" and bool(np.isnan(raw).any())
    except Exception:
        return False


@checker("ex-head-entropy", kind="code")
def check_head_entropy(entropy_func):
    """``head_entropy(A)``: mean entropy in nats of each head's rows, (..., h, T, S) -> (..., h)."""
    cases = _entropy_cases()
    for A, case, has_zeros, hint, entry in cases:
        got = call_learner(entropy_func, A, name="head_entropy", case=case, hint=hint,
                           signature="head_entropy(A)")
        if has_zeros and _has_nan(got):
            wrong(f"your result holds NaN for {case}. Some weights are exactly 0, and 0·log 0 must count as 0; "
                  "but `np.log(0)` is -inf and 0 × (-inf) is NaN. Take the log of "
                  "`np.where(A > 0, A, 1.0)` instead: log 1 = 0, so the zero weights add nothing.")
        compare(got, head_entropy(A), f"the result for {case}", atol=_ATOL, rtol=_RTOL,
                mistakes=_entropy_mistakes(A), mistake_prefix=f"For {case}: ", entry=entry,
                shape_hint="One number per head: (..., h), where A has shape (..., h, T, S).",
                hint=hint or "Each row's entropy is −Σ_s a log a over the keys; average these over the rows.")
    return (f"your head_entropy is right on all {len(cases)} cases, including exact zeros "
            "(0·log 0 = 0) and a batch axis.")


# --------------------------------------------------------------------------- which role shares a head

_POS = 1                            # "same part of speech": block 1 of X, role 1 of role_keys
_PARTNERS = (0, 2, 3)               # the roles that can share its head at h = 2


def _pos_weight(order, *, h=2, divide_by=None, reorder_k=True, head=None, role=_POS):
    """Weight on role ``role``'s keys, in the head of ``h`` that holds block ``_POS``, once the blocks of
    columns of W^Q and W^K are put in ``order`` (``head`` picks another head; ``divide_by`` another divisor)."""
    ex = cat_sat_mat()
    width = ex.X.shape[1] // len(ex.roles)                      # 8 columns per block
    cols = np.concatenate([np.arange(b * width, (b + 1) * width) for b in order])
    Q = ex.X @ ex.W_Q[:, cols]                                  # (T, d), blocks reordered
    K = ex.X @ (ex.W_K[:, cols] if reorder_k else ex.W_K)       # (T, d)
    d_k = Q.shape[1] // h
    if head is None:
        head = order.index(_POS) * width // d_k                 # the head that holds the block
    part = slice(head * d_k, (head + 1) * d_k)
    w = softmax(Q[:, part] @ K[:, part].T / np.sqrt(d_k if divide_by is None else divide_by))  # (T, T)
    return float((w * role_keys(ex)[role]).sum(axis=-1).mean())


def _role_named(value, key):
    """The role the learner's text ``value`` (the answer's entry ``key``) names, or a "wrong" verdict."""
    if not isinstance(value, str):
        wrong(f"'{key}' should be the name of a role, as text (e.g. 'neighbour'); got {type(value).__name__}.")
    named = _ROLE_WORDS.get("".join(c for c in value.lower() if c.isalpha()))
    if named is None:
        wrong(f"'{key}' is not one of the four roles: neighbour, same part of speech, same word, delimiter sink.")
    return named


def _pair_order(partner):
    """Block order that puts ``partner`` beside the part-of-speech block, the other two after them."""
    return [_POS, partner] + [b for b in _PARTNERS if b != partner]


def role_partner():
    """Reference answer of ex-role-partner: the partner that leaves "same part of speech" the most weight at h = 2."""
    roles = cat_sat_mat().roles
    kept = {roles[p]: _pos_weight(_pair_order(p)) for p in _PARTNERS}
    best = max(kept, key=kept.get)
    return {"partner": best, "weight": kept[best]}


@checker("ex-role-partner", kind="numeric")
def role_partner_check(answer):
    """The role that should share a head with "same part of speech" at h = 2, and that head's weight on its keys."""
    partner, weight = dict_parts(answer, ("partner", "weight"), "{'partner': 'neighbour', 'weight': 0.5}")
    expected = role_partner()
    roles = cat_sat_mat().roles
    named = _role_named(partner, "partner")
    if named == roles[_POS]:
        wrong("'partner' is the role that shares the head with 'same part of speech': one of the other three.")
    if named != expected["partner"]:
        wrong(f"'partner': with {named} beside it, the part-of-speech keys keep less weight than with another "
              "partner. Measure all three pairings, or first ask which keys each partner wants from the same "
              "queries.")
    best = roles.index(expected["partner"])
    order = _pair_order(best)
    other = [b for b in _PARTNERS if b != best]
    single = role_mass(multi_head_attention(cat_sat_mat().X, *cat_sat_mat().weights, h=1)[1][0],
                       role_keys(cat_sat_mat())[_POS])
    weight = one_number(weight, "'weight'")
    if weight > 1.01:
        wrong("'weight' is more than 1: average the weight on the keys over the query rows; do not add the rows.")
    compare(weight, expected["weight"], "'weight'", atol=0.006, rtol=0, mistakes=[
        (_pos_weight([0, 1, 2, 3]), "'weight': that is the page's own order, where the part of speech shares "
                                    "head 1 with the neighbour. Reorder the blocks of columns first."),
        (_pos_weight(order, h=4), "'weight': that is the part-of-speech head of h = 4, alone. The question "
                                  "is about h = 2, where it shares its head."),
        (single, "'weight': that is the single map of h = 1. The question is about h = 2."),
        (_pos_weight(order, role=best), f"'weight': that is the weight on the {expected['partner']} keys. "
                                        "The question asks for the part-of-speech keys."),
        (_pos_weight(order, head=1), "'weight': that is the other head, which holds "
                                     f"{roles[other[0]]} and {roles[other[1]]}. Read the head that holds the "
                                     "part-of-speech block."),
        (_pos_weight(order, reorder_k=False), "'weight': the columns of W^K must be reordered as those of W^Q. "
                                              "Otherwise the queries of a role meet the keys of another role."),
        (_pos_weight(order, divide_by=8), "'weight': that divides by √8, the head width of h = 4. At h = 2 "
                                          "each head is 16 wide."),
        (_pos_weight(order, divide_by=32), "'weight': that divides by √32, the whole width. At h = 2 each "
                                           "head is 16 wide."),
        (_pos_weight(order, divide_by=1), "'weight': the scores were not divided by √d_k."),
    ], shape_hint="'weight' is one number.",
       hint="Average, over the query rows, the weight the head puts on each row's part-of-speech keys.")
    return ("the same word wants some of the part-of-speech keys, above all the token itself, so the part-of-speech "
            "keys keep the most weight beside it. That rise comes from each token's weight on itself; the link "
            "between two different nouns gets weaker.")


# --------------------------------------------------------------------------- the single map of the roles layer

_ROLE_WORDS = {"neighbour": "neighbour", "neighbor": "neighbour", "neighbours": "neighbour",
               "samepartofspeech": "same part of speech", "partofspeech": "same part of speech",
               "pos": "same part of speech", "sameword": "same word", "word": "same word",
               "delimitersink": "delimiter sink", "sink": "delimiter sink", "delimiter": "delimiter sink"}
_MAT, _DOT = 6, 7  # the row of "mat" and the key "." (which sits beside "mat")
_NEIGHBOUR, _SINK = 0, 3


def _mat_row(h, head=0, divide_by=None):
    """The weights of the row of "mat" in head ``head`` of ``h`` heads, and the weight on each role's keys."""
    ex = cat_sat_mat()
    Q, K = ex.X @ ex.W_Q, ex.X @ ex.W_K                          # (T, d), the split comes next
    d_k = Q.shape[1] // h
    cols = slice(head * d_k, (head + 1) * d_k)
    scores = Q[_MAT, cols] @ K[:, cols].T                       # (T,)
    w = softmax(scores / np.sqrt(d_k if divide_by is None else divide_by))
    masses = {role: float(w[keys[_MAT]].sum()) for role, keys in zip(ex.roles, role_keys(ex))}
    return w, masses


def single_head_mat():
    """Reference answer of ex-single-head-mat: the role whose keys get most of mat's row at h = 1, and that weight."""
    _, masses = _mat_row(1)
    role = max(masses, key=masses.get)
    return {"role": role, "weight": masses[role]}


@checker("ex-single-head-mat", kind="numeric")
def single_head_mat_check(answer):
    """The role whose keys get most of the row of "mat" in the single map (h = 1), and their weight together."""
    role, weight = dict_parts(answer, ("role", "weight"), "{'role': 'same word', 'weight': 0.1}")
    expected = single_head_mat()
    roles = cat_sat_mat().roles
    named = _role_named(role, "role")
    if named != expected["role"]:
        if named == roles[_SINK]:
            wrong("'role': \".\" takes the largest weight of any key in mat's row, but the sink's keys are "
                  "\".\" alone. A key can belong to two roles: which keys does each role have in this row?")
        wrong(f"'role': in the single map, the keys of {named} get less of mat's row than another role's keys. "
              "At h = 1 the four roles' scores add up in one head: add the q·k each role gives every key, "
              "then add the weights that land on each role's keys.")
    w1, _ = _mat_row(1)
    role_of = {r: m[expected["role"]] for r, m in (
        ("h4", _mat_row(4, head=_NEIGHBOUR)[1]), ("h2", _mat_row(2, head=0)[1]),
        ("sqrt8", _mat_row(1, divide_by=8)[1]), ("raw", _mat_row(1, divide_by=1)[1]))}
    weight = one_number(weight, "'weight'")
    if weight > 1.01:
        wrong("'weight' is more than 1: it is the weight of one row, which adds up to 1.")
    compare(weight, expected["weight"], "'weight'", atol=0.006, rtol=0, mistakes=[
        (w1[_DOT], "'weight': that is the weight on \".\" alone. The neighbour's keys in this row are both "
                   "tokens beside \"mat\": add the weight on the other one."),
        (w1[_DOT - 2], "'weight': that is the weight on \"warm\" alone. The neighbour's keys in this row are "
                       "both tokens beside \"mat\"."),
        (role_of["sqrt8"], "'weight': that divides by √8, the head width of h = 4. With one head, d_k is the "
                           "whole width, 32."),
        (role_of["raw"], "'weight': the scores were not divided by √d_k."),
        (role_of["h4"], "'weight': that is the neighbour head of h = 4, alone. With one head, the neighbour's "
                        "scores share the softmax with the other roles' scores."),
        (role_of["h2"], "'weight': that is head 1 of h = 2, which holds only the neighbour and part-of-speech "
                        "columns."),
    ], shape_hint="'weight' is one number.",
       hint="Add the weights of mat's row on the keys of that role.")
    return ("\".\" leads the row, but it also sits beside \"mat\": one weight counts for the sink and for the "
            "neighbour, so the neighbour's two keys together get the most.")
