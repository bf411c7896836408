"""Checkers for the exercises of book/06_how_many_heads.md (how many heads).

* ``ex-key-width-halving`` (numeric): Vaswani et al.'s Table 3 (B) halves the
  key width twice (64 -> 32 -> 16, h = 8). Which halving cost more by dev BLEU,
  which by dev perplexity, and can one score per row decide which hurts more?
  The two scores disagree, and the differences between the two halvings are a
  tenth of a point or less with no spread reported: the last answer is
  "cannot tell".
* ``ex-lookup-variant`` (numeric): a predicted best ``h`` held against the
  reader's own trained runs of one lookup variant (re-scored on the test set).
  Any prediction is accepted: the verdict is the comparison. What is refused
  is a run that cannot show the comparison (too few training steps, other head
  counts than the task names, results that were edited, junk).
"""

from __future__ import annotations

import re

from ..papers import VASWANI2017_BASE, VASWANI2017_TABLE3_B
from .core import checker, dict_parts, safe_repr, wrong

HALVING_KEYS = ("by BLEU", "by perplexity", "overall")
_CHOICES = "'first', 'second' or 'cannot tell'"
_WORDS = {"first": "first", "1st": "first", "one": "first", "1": "first", "halving1": "first",
          "second": "second", "2nd": "second", "two": "second", "2": "second", "halving2": "second",
          "cannottell": "cannot tell", "canttell": "cannot tell", "cannot": "cannot tell",
          "unknown": "cannot tell", "unclear": "cannot tell", "undecided": "cannot tell", "no": "cannot tell",
          "neither": "cannot tell", "tie": "cannot tell"}


def _halvings():
    """The rows of one halving chain of ``d_k`` at ``h = 8``: base (64), then 32, then 16."""
    by_dk = {r.d_k: r for r in VASWANI2017_TABLE3_B}
    return VASWANI2017_BASE, by_dk[32], by_dk[16]


def _choice(value, key):
    """One of "first", "second", "cannot tell", read leniently from the learner's text."""
    if not isinstance(value, str):
        wrong(f"'{key}' should be one of the words {_CHOICES}; got {safe_repr(value, 40)}.")
    said = _WORDS.get(re.sub(r"[^a-z0-9]", "", value.lower()))
    if said is None:
        wrong(f"'{key}' is {safe_repr(value, 40)}. Answer with one of {_CHOICES}.")
    return said


def halving_costs():
    """Which halving cost more by each score: "first" or "second" (computed from the paper's rows)."""
    wide, mid, narrow = _halvings()
    bleu = "first" if wide.dev_bleu - mid.dev_bleu > mid.dev_bleu - narrow.dev_bleu else "second"
    ppl = "first" if mid.dev_ppl - wide.dev_ppl > narrow.dev_ppl - mid.dev_ppl else "second"
    return {"by BLEU": bleu, "by perplexity": ppl}


@checker("ex-key-width-halving", kind="numeric")
def key_width_halving(answer):
    """Which halving of d_k in Table 3 (B) cost more by BLEU and by perplexity, and whether one score per row decides."""
    values = dict_parts(answer, HALVING_KEYS, "{'by BLEU': '...', 'by perplexity': '...', 'overall': '...'}")
    said = {key: _choice(value, key) for key, value in zip(HALVING_KEYS, values)}
    expected = halving_costs()
    wide, mid, narrow = _halvings()
    for key, score, better in (("by BLEU", "BLEU", "higher"), ("by perplexity", "perplexity", "lower")):
        if said[key] == "cannot tell":
            wrong(f"'{key}' asks only what the table shows: the two changes of {score} are not equal, so one of "
                  "them is larger. Keep 'cannot tell' for the question 'overall'.")
        if said[key] != expected[key]:
            wrong(f"'{key}': {score} is {better}-is-better, so the cost of a halving is how far {score} moves "
                  f"the wrong way. Compute that change for 64 -> 32 and for 32 -> 16 from the table, and compare.")
    if said["overall"] != "cannot tell":
        wrong(f"'overall' says the {said['overall']} halving hurts more. But your own two answers disagree: "
              "BLEU and perplexity pick different halvings. The paper also reports one score per row, with no "
              "spread over seeds, and the two changes differ by a tenth of a point or less. Could one more run "
              "per row reverse your choice?")
    return (f"BLEU fell by {wide.dev_bleu - mid.dev_bleu:.1f} and then {mid.dev_bleu - narrow.dev_bleu:.1f}, "
            f"perplexity rose by {mid.dev_ppl - wide.dev_ppl:.2f} and then {narrow.dev_ppl - mid.dev_ppl:.2f}: "
            "the two scores pick different halvings, and with one score per row neither difference is "
            "measured against the noise of training. Both halvings hurt; which hurt more, the table cannot say. "
            f"The models also shrank ({wide.params_m}M, {mid.params_m}M, {narrow.params_m}M parameters).")


# ================================================================ ex-lookup-variant (the lookup, one variant)
_VARIANTS = {(3, 16): "three keys at d = 16", (2, 32): "two keys at d = 32"}  # neither is shown on the page
ASKED_HS = (1, 4, 16)  # the head counts the exercise asks for, in both variants
_TIE = 0.01  # head counts whose accuracy is within this of the best count as best
_INT_FIELDS = ("h", "d", "d_k", "d_v", "n_keys", "seed", "steps")
_EDITED = ("pass the results exactly as mha.training.dictionary_lookup (or head_sweep) returned them; "
           "the check scores each model again from its own weights.")


def copy_baseline():
    """How often copying the value of a random listed entry answers a key right: 23/128, about 0.180.

    The entry may be the one named (1 in 8); else another entry may hold the same value, since every
    value is drawn uniformly from 16 and values can repeat (7/8 * 1/16).
    """
    from ..training import N_ENTRIES, N_SYMBOLS

    return 1 / N_ENTRIES + (1 - 1 / N_ENTRIES) / N_SYMBOLS


def _whole(value):
    """``value`` as a Python int if it is a whole number (int, NumPy integer, or a float such as 4.0), else None."""
    import math
    import numbers

    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    value = float(value)
    return int(value) if math.isfinite(value) and value == int(value) else None


def _intact(r):
    """Stop with a specific verdict if a result's fields or weights are not those a run makes."""
    import math

    import numpy as np

    from .. import training

    for name in _INT_FIELDS:
        value = getattr(r, name)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            wrong(f"one of your results has {name} = {safe_repr(value, 30)}, which no run makes. {_EDITED}")
    if r.h < 1 or r.d % r.h or r.n_keys < 1 or r.d_k < 1 or r.d_v != r.d // r.h:
        wrong(f"one of your results has h = {r.h}, d = {r.d}, d_k = {r.d_k}, d_v = {r.d_v}: sizes that do not "
              f"fit together. {_EDITED}")
    for name in ("lr", "accuracy"):
        value = getattr(r, name)
        if isinstance(value, bool) or not isinstance(value, (float, int, np.floating)) or not math.isfinite(value):
            wrong(f"the result for h = {r.h} has {name} = {safe_repr(value, 30)}. {_EDITED}")
    shapes = training.param_shapes(r.h, r.d, r.d_k, r.n_keys)
    if not isinstance(r.params, dict) or set(r.params) != set(shapes):
        wrong(f"the result for h = {r.h} does not hold the weights of its model. {_EDITED}")
    for name, shape in shapes.items():
        w = r.params[name]
        if not isinstance(w, np.ndarray) or w.shape != tuple(shape) or not np.issubdtype(w.dtype, np.floating):
            wrong(f"the result for h = {r.h} holds weights {name} that are not a float array of shape "
                  f"{tuple(shape)}. {_EDITED}")
    return shapes


def _rescored(result, shapes):
    """The accuracy of a result's own weights on the fixed test set (so a run cannot be typed in)."""
    import numpy as np

    from .. import training

    theta = np.concatenate([np.asarray(result.params[name], dtype=np.float32).ravel() for name in shapes])[None]
    test = training.test_set(result.n_keys)
    batch = training.LookupBatch(test.keys[None], test.values[None], test.asked[None])
    answers, _, _ = training.predict(theta, shapes, batch, result.h)
    return float((answers[0] == test.answers).mean())


def _lookup_runs(runs):
    """The learner's runs, sorted by h, and the variant's name; or a specific verdict."""
    import numpy as np

    from ..training import PEAK_LR, LookupResult, dictionary_lookup

    if isinstance(runs, dict):
        runs = list(runs.values())
    if isinstance(runs, LookupResult):
        wrong("'runs' is one result; give a list with one result per head count "
              f"(h = {', '.join(map(str, ASKED_HS))}).")
    if not isinstance(runs, (list, tuple)) or not all(isinstance(r, LookupResult) for r in runs):
        wrong("'runs' must be a list of the results of mha.training.dictionary_lookup, one per head count.")
    if len(runs) < 2 or len({r.h for r in runs}) != len(runs):
        wrong("'runs' needs at least two results, each with a different number of heads h.")
    shapes = {id(r): _intact(r) for r in runs}
    setups = {(r.n_keys, r.d, r.steps, float(r.lr), r.seed) for r in runs}
    if len(setups) != 1:
        wrong("the runs differ in more than h (n_keys, d, steps, lr or seed): change only h between runs.")
    first = runs[0]
    variant = (first.n_keys, first.d)
    if variant not in _VARIANTS:
        wrong(f"your runs use n_keys = {variant[0]} and d = {variant[1]}; run one of the two variants: "
              "n_keys=3 (d = 16) or n_keys=2 with d=32.")
    if any(r.d_k != r.d // r.h for r in runs):
        wrong("keep the default d_k = d/h in these runs (leave d_k out).")
    default_steps = dictionary_lookup.__kwdefaults__["steps"]
    if first.steps < default_steps or not np.isclose(first.lr, PEAK_LR, rtol=1e-9, atol=0):
        wrong(f"your runs trained {first.steps} steps at a peak learning rate of {first.lr:g}. The chapter "
              f"shows that too little training can make equally good head counts look unequal, so the "
              f"comparison would say little: train with the default settings ({default_steps} steps at a "
              f"peak learning rate of {PEAK_LR:g}; leave steps and lr out).")
    missing = [h for h in ASKED_HS if h not in {r.h for r in runs}]
    if missing:
        wrong(f"the task asks for h = {', '.join(map(str, ASKED_HS))}; your runs have no "
              f"h = {' or '.join(map(str, missing))}.")
    for r in runs:
        if abs(_rescored(r, shapes[id(r)]) - r.accuracy) > 1e-6:
            wrong(f"the result for h = {r.h} does not match its own weights on the test set. {_EDITED}")
    if max(r.accuracy for r in runs) <= copy_baseline() + _TIE:
        wrong(f"no run scored above {copy_baseline():.3f}, what copying a random value listed in the input gets. Such runs "
              "learned nothing to compare with your prediction: train them again with the default settings.")
    return sorted(runs, key=lambda r: r.h), _VARIANTS[variant]


@checker("ex-lookup-variant", kind="numeric")
def lookup_variant(answer):
    """The reader's predicted best h held against their own honest run of a lookup variant."""
    from ..training import N_SYMBOLS
    from .core import dict_parts

    best, runs = dict_parts(answer, ["best", "runs"],
                            "{'best': 4, 'runs': mha.training.head_sweep((1, 4, 16), n_keys=3)}")
    runs, variant = _lookup_runs(runs)
    hs = [r.h for r in runs]
    guess = _whole(best)
    if guess is None or guess not in hs:
        wrong(f"'best' must be one of the head counts you ran ({', '.join(map(str, hs))}), "
              f"got {safe_repr(best, 30)}.")
    top = max(r.accuracy for r in runs)
    winners = [r.h for r in runs if r.accuracy >= top - _TIE]
    scores = ", ".join(f"h = {r.h}: {r.accuracy:.3f}" for r in runs)
    found = " and ".join(map(str, winners))
    mine = next(r for r in runs if r.h == guess)
    if guess in winners:
        verdict = (f"Your prediction h = {guess} is among the best (within {_TIE}). "
                   + (f"On this one seed it ties with h = {', '.join(str(h) for h in winners if h != guess)}: "
                      "more than one head count may do the task." if len(winners) > 1 else ""))
    else:
        verdict = (f"The run disagrees with your prediction: h = {guess} scored {top - mine.accuracy:.3f} "
                   f"below the best, h = {found}. What does h = {winners[0]} have that h = {guess} lacks: "
                   "enough heads for the keys asked, or keys wide enough?")
    return (f"you predicted h = {guess}; your run ({variant}) found {scores} (a guess is right {1 / N_SYMBOLS:.3f} "
            f"of the time; copying a random value listed in the input, {copy_baseline():.3f}). {verdict}")
