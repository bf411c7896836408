"""Checkers for the exercises of book/06_how_many_heads.md (how many heads).

* ``ex-bleu-gaps`` (numeric): BLEU lost by one head and by 32 heads, against
  the best row of Vaswani et al.'s Table 3 (A).
* ``ex-layer-sizes`` (code): ``layer_sizes(d, h, T)`` returning the pair
  ``(n_params, n_scores)`` of one attention layer.
* ``ex-lookup-variant`` (numeric): a predicted best ``h`` against the
  reader's own trained runs of one lookup variant (re-scored on the test set).
"""

from __future__ import annotations

from ..papers import VASWANI2017_TABLE3_A, best_bleu
from .core import call_learner, checker, compare, pair, safe_repr, wrong


def _row(h):
    return next(r for r in VASWANI2017_TABLE3_A if r.h == h)


def _loss_name(index):
    return {(0,): "the loss at h = 1", (1,): "the loss at h = 32"}.get(tuple(index))


def _bleu_mistakes(top, ends, expected):
    """Plausible wrong readings of the table, each with its own reply."""
    one, many = ends
    by_h = {r.h: r for r in VASWANI2017_TABLE3_A}
    below_one, below_many = by_h[4], by_h[16]  # the rows next to h = 1 and to h = 32
    best_ppl = min(r.dev_ppl for r in VASWANI2017_TABLE3_A)
    relative = ("these look like relative losses (a loss divided by a BLEU score, perhaps as a percentage). "
                "The question asks for the drop itself, in BLEU points: the best score minus the row's score.")
    return [
        ([-g for g in expected], "both numbers are negative. A loss is the best BLEU minus the row's "
                                 "BLEU, so it is positive."),
        (expected[::-1], "the two numbers are swapped: the first is for h = 1, the second for h = 32."),
        ([r.dev_ppl - best_ppl for r in ends], "these are perplexity differences. The question asks "
                                               "about BLEU, the last column."),
        ([r.dev_bleu for r in ends], "these are the two BLEU scores themselves. Subtract each from the "
                                     "best score in the table."),
        ([g / top for g in expected], relative), ([100 * g / top for g in expected], relative),
        ([g / r.dev_bleu for g, r in zip(expected, ends)], relative),
        ([100 * g / r.dev_bleu for g, r in zip(expected, ends)], relative),
        ([top - below_one.dev_bleu, top - below_many.dev_bleu],
         f"both numbers come from the neighbouring rows (h = {below_one.h} and h = {below_many.h}). Read the "
         "rows whose first column says h = 1 and h = 32."),
        ([top - below_one.dev_bleu, expected[1]],
         f"the first number comes from the row h = {below_one.h}, the one below h = 1. The table has no row "
         "h = 2: the first row is h = 1."),
        ([expected[0], top - below_many.dev_bleu],
         f"the second number comes from the row h = {below_many.h}, which ties for the best score. Use the "
         "last row, h = 32."),
        ([expected[0], many.dev_bleu - one.dev_bleu],
         "the second number compares h = 32 with h = 1. Compare both rows with the best row instead."),
    ]


@checker("ex-bleu-gaps", kind="numeric")
def bleu_gaps(answer):
    """BLEU lost by one head and by 32 heads, against the best row of Table 3 (A)."""
    top, _ = best_bleu()
    ends = (_row(1), _row(32))
    expected = [top - r.dev_bleu for r in ends]
    compare(answer, expected, "your pair of BLEU losses", atol=0.011, rtol=0, rounding_hint=False,
            entry=_loss_name, mistakes=_bleu_mistakes(top, ends, expected),
            shape_hint="Give two numbers: the loss at h = 1, then the loss at h = 32.",
            hint="Find the best BLEU (the largest number in the last column), then subtract the BLEU of the "
                 "row h = 1 and of the row h = 32.")
    return "the single head loses more than twice as much as the 32 narrow heads."


_SIZE_CASES = ((512, 8, 100), (512, 1, 100), (512, 32, 100), (768, 12, 512), (6, 3, 5))


@checker("ex-layer-sizes", kind="code")
def layer_sizes(func):
    """Parameters and score entries of one attention layer, computation held constant."""
    for d, h, T in _SIZE_CASES:
        got = call_learner(func, d, h, T, name="layer_sizes", signature="layer_sizes(d, h, T)")
        call = f"layer_sizes({d}, {h}, {T})"
        if isinstance(got, (int, float)) or not hasattr(got, "__len__"):
            wrong(f"{call} returned {safe_repr(got, 40)}; return a pair (n_params, n_scores).")
        n_params, n_scores = pair(got, f"what {call} returned", "(n_params, n_scores)")
        d_k = d // h
        where = f"for d = {d}, h = {h}, T = {T}"
        compare(n_params, 4 * d * d, f"n_params {where}", atol=0, rtol=0, rounding_hint=False, mistakes=[
            (4 * d * d_k, "n_params counts one head only. The stacked W_Q, W_K, W_V and W_O are each "
                          "d x d, whatever h is."),
            (3 * d * d, "n_params leaves out W_O: there are four d x d matrices."),
            (4 * d * d + 4 * d, "n_params includes biases; this layer has none."),
        ])
        compare(n_scores, h * T * T, f"n_scores {where}", atol=0, rtol=0, rounding_hint=False, mistakes=[
            (T * T, "n_scores counts one score map. Every head makes its own T x T map."),
            (h * T * d_k, "n_scores counts the entries of the queries, T x d_k per head. A score map "
                          "has one entry per (query, key) pair."),
            (T * T * d, "n_scores multiplies by d. A score map is T x T, and there is one per head."),
        ])
    return "parameters stay at 4d² for every h, while the score maps grow with h."


# ================================================================ ex-lookup-variant (the lookup, one variant)
_VARIANTS = {(1, 16): "one key at d = 16", (4, 32): "four keys at d = 32"}
_TIE = 0.01  # head counts whose accuracy is within this of the best count as best


def _rescored(result):
    """The accuracy of a result's own weights on the fixed test set (so a run cannot be typed in)."""
    import numpy as np

    from .. import training

    shapes = training.param_shapes(result.h, result.d, result.d_k, result.n_keys)
    theta = np.concatenate([np.asarray(result.params[name], dtype=np.float32).ravel() for name in shapes])[None]
    test = training.test_set(result.n_keys)
    batch = training.LookupBatch(test.keys[None], test.values[None], test.asked[None])
    answers, _, _ = training.predict(theta, shapes, batch, result.h)
    return float((answers[0] == test.answers).mean())


def _lookup_runs(runs):
    from ..training import LookupResult

    if isinstance(runs, dict):
        runs = list(runs.values())
    if not isinstance(runs, (list, tuple)) or not all(isinstance(r, LookupResult) for r in runs):
        wrong("'runs' must be a list of the results of mha.training.dictionary_lookup, one per head count.")
    if len(runs) < 2 or len({r.h for r in runs}) != len(runs):
        wrong("'runs' needs at least two results, each with a different number of heads h.")
    setups = {(r.n_keys, r.d, r.steps, r.lr) for r in runs}
    if len(setups) != 1:
        wrong("the runs differ in more than h (n_keys, d, steps or lr): change only h between runs.")
    variant = (runs[0].n_keys, runs[0].d)
    if variant not in _VARIANTS:
        wrong(f"your runs use n_keys = {variant[0]} and d = {variant[1]}; run one of the two variants: "
              "n_keys=1 (d = 16) or n_keys=4 with d=32.")
    if any(r.d_k != r.d // r.h for r in runs):
        wrong("keep the default d_k = d/h in these runs (leave d_k out).")
    for r in runs:
        if abs(_rescored(r) - r.accuracy) > 1e-6:
            wrong(f"the result for h = {r.h} does not match its own weights on the test set; pass the results "
                  "exactly as dictionary_lookup returned them.")
    return sorted(runs, key=lambda r: r.h), _VARIANTS[variant]


@checker("ex-lookup-variant", kind="numeric")
def lookup_variant(answer):
    """The reader's predicted best h against their own honest run of a lookup variant."""
    from .core import dict_parts

    best, runs = dict_parts(answer, ["best", "runs"], "{'best': 4, 'runs': [dictionary_lookup(h, ...) for h in ...]}")
    runs, variant = _lookup_runs(runs)
    if isinstance(best, bool) or not isinstance(best, int) or best not in {r.h for r in runs}:
        wrong(f"'best' must be one of the head counts you ran ({', '.join(str(r.h) for r in runs)}), "
              f"got {safe_repr(best, 30)}.")
    top = max(r.accuracy for r in runs)
    winners = [r.h for r in runs if r.accuracy >= top - _TIE]
    scores = ", ".join(f"h = {r.h}: {r.accuracy:.3f}" for r in runs)
    if best not in winners:
        wrong(f"your run ({variant}) says otherwise: {scores}. The best is h = "
              f"{' or '.join(map(str, winners))}. What does that head count have that yours lacks "
              "(enough heads for the keys asked, or wide enough d_k)?")
    return f"your prediction holds on your own run ({variant}): {scores}."
