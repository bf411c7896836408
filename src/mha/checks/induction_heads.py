"""Checkers for the exercises of book/11_induction_heads.md (induction heads, found and built).

* ``ex-break-toy`` (numeric): predictions about the page's toy (``V = 12``, ``N = 16``, the text
  ``repeated_tokens(8, 12, seed=1)``) once it is broken: how many of the repeat's 7 guesses are
  right without layer 1, and the offset ``k`` such that, with layer 1 looking two positions back,
  the guess at position ``t`` of the repeat is the token at ``t + k``.
* ``ex-wrong-copy`` (numeric): the copying score of the toy's layer 2 when its ``W^O`` writes
  token ``v + 1`` (mod ``V``) for token ``v``, on the same text.
* ``ex-prefix-matching`` (code): ``prefix_matching(A, ids)``, the prefix-matching score of one
  head on *any* text: for each query whose token occurred before, the weight on the positions
  just after its earlier occurrences (summed); the mean over those queries.
"""

from __future__ import annotations

import numpy as np

from .. import induction
from ..attention import causal_mask, softmax
from .core import call_learner, checker, compare, dict_parts, one_number, wrong

__all__ = ["broken_toys", "wrong_copy", "prefix_matching_reference"]

_V, _N, _n, _SEED = 12, 16, 8, 1  # the page's toy and text


def _page_toy():
    return induction.build(V=_V, N=_N), induction.repeated_tokens(_n, _V, seed=_SEED)


def broken_toys():
    """The two broken toys of ex-break-toy and the reference answer: (without layer 1, two back, answer)."""
    toy, ids = _page_toy()
    s, P1 = toy.stream, toy.layer1
    without = induction.Toy(s, P1._replace(W_O=np.zeros_like(P1.W_O)), toy.layer2, toy.W_U)
    W_K = np.zeros_like(P1.W_K)
    pos = np.arange(s.N)
    W_K[s.position.start + pos[:-2], pos[2:]] = 1.0  # position s -> axis s + 2: query t matches key t - 2
    two_back = induction.Toy(s, P1._replace(W_K=W_K), toy.layer2, toy.W_U)
    t = np.arange(_n, 2 * _n - 1)  # the repeat's guesses
    guess = induction.run(without, ids).logits.argmax(axis=-1)
    right = int((guess[t] == ids[t + 1]).sum())
    guess2 = induction.run(two_back, ids).logits.argmax(axis=-1)
    cycle = np.concatenate([ids, ids[_n:]])  # the text continued: the token k places on, past the end too
    offsets = [k for k in range(-(_n // 2), _n // 2) if (guess2[t] == cycle[t + k]).all()]  # within half a period
    return without, two_back, {"without_layer_1": right, "two_back": offsets[0] if len(offsets) == 1 else None}


@checker("ex-break-toy", kind="numeric")
def break_toy(answer):
    """How many repeat guesses are right without layer 1; the offset of the guesses when layer 1 looks two back."""
    right, offset = dict_parts(answer, ("without_layer_1", "two_back"),
                               "{'without_layer_1': 3, 'two_back': -1}")
    expected = broken_toys()[2]
    compare(one_number(right, "'without_layer_1'"), expected["without_layer_1"], "'without_layer_1'", atol=1e-9,
            rounding_hint=False,
            mistakes=[(_n - 1, "'without_layer_1': without layer 1 the `previous` part stays at zero, so "
                               "layer 2's keys hold nothing to match: from position 1 on they all score the "
                               "same. Which tokens then get the most weight, those seen once or twice?")],
            hint="Count the right guesses at positions 8 to 14 (the token at t + 1), after removing layer 1's output.")
    compare(one_number(offset, "'two_back'"), expected["two_back"], "'two_back'", atol=1e-9, rounding_hint=False,
            mistakes=[(1, "'two_back': that is the intact toy. Now `previous` at position s holds the token at "
                          "s - 2: which key does query t match, and which token sits there?"),
                      (-1, "'two_back': the guess is a token after the current one, not before it."),
                      (0, "'two_back': the query still finds a later position than its earlier copy. Which "
                          "key holds its token two places back?"),
                      (-2, "'two_back': the sign is flipped: the guesses run ahead of the text.")],
            hint="Run the toy with layer 1 looking two back and compare each guess with the text.")
    return "both predictions hold."


def wrong_copy():
    """Reference of ex-wrong-copy: layer 2's copying score when it writes token v + 1 for token v."""
    toy, ids = _page_toy()
    s = toy.stream
    W_O = toy.layer2.W_O.copy()
    W_O[:, s.output] = np.roll(toy.layer2.W_O[:, s.output], 1, axis=1)  # token v -> output axis v + 1
    shifted = induction.Toy(s, toy.layer1, toy.layer2._replace(W_O=W_O), toy.W_U)
    return induction.copying_score(shifted, 1, 0, ids)


@checker("ex-wrong-copy", kind="numeric")
def wrong_copy_check(answer):
    """The copying score of a layer 2 that copies the token after the right one."""
    toy, ids = _page_toy()
    scale = toy.W_U[toy.stream.output][0, 0]
    got = one_number(answer, "your copying score")
    compare(got, wrong_copy(), "your copying score", atol=0.01, rtol=0,
            mistakes=[(induction.copying_score(toy, 1, 0, ids),
                       "that is the intact layer 2. The head still looks at the right key, but what does it "
                       "now write onto the next token's logit?"),
                      (0.0, "the next token's logit gets almost nothing now, but the score subtracts the mean "
                            "over all tokens: where did the head's output go?"),
                      (-scale, "the whole scale lands on one token, but the score subtracts only the mean over "
                               "all tokens, not that token's logit."),
                      (scale / _V, "check the sign: the score is the next token's logit minus the mean.")],
            hint="Write what the head adds to each token's logit when it attends to the right key.")
    return ("the head still looks at the right key, but it now lowers the right token's score a little, "
            "relative to the mean.")


def prefix_matching_reference(A, ids):
    """Reference of ex-prefix-matching: mean over the queries with an earlier occurrence."""
    A, ids = np.asarray(A, dtype=float), np.asarray(ids)
    per_query = []
    for t in range(len(ids)):
        after = [s + 1 for s in range(t) if ids[s] == ids[t]]  # s + 1 <= t: never a future key
        if after:
            per_query.append(A[t, after].sum())
    return float(np.mean(per_query))


def _causal_head(rng, T, sharpness):
    """A random causal head: row ``t`` spreads its weight over keys ``0 .. t``."""
    scores = np.where(causal_mask(T), rng.normal(size=(T, T)) * sharpness, -np.inf)
    return softmax(scores)


def _cases():
    """(A, ids, description): tokens that come back at irregular places, and a repeated block."""
    rng = np.random.default_rng(10)
    ids1 = np.array([3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5])  # 1 comes back once, 5 twice, 3 once
    ids2 = np.array([7, 7, 7, 2, 7])  # a token that comes back again and again
    ids3 = np.array([0, 1, 2, 3, 0, 1, 2, 3])  # a block repeated: the score of the page
    A1, A2, A3 = _causal_head(rng, len(ids1), 2.0), _causal_head(rng, len(ids2), 1.0), _causal_head(rng, len(ids3), 3.0)
    return [  # the first case tells every known mistake apart
        (A2, ids2, "a random head on the text 7 7 7 2 7"),
        (A1, ids1, "a random head on the text 3 1 4 1 5 9 2 6 5 3 5"),
        (A3, ids3, "a random head on 0 1 2 3 repeated"),
    ]


def _mistakes(A, ids):
    T = len(ids)
    every, on_copy, latest, mean_over = [], [], [], []
    for t in range(T):
        before = [s for s in range(t) if ids[s] == ids[t]]
        every.append(A[t, [s + 1 for s in before]].sum() if before else 0.0)
        if before:
            on_copy.append(A[t, before].sum())
            latest.append(A[t, before[-1] + 1])
            mean_over.append(A[t, [s + 1 for s in before]].mean())
    return [
        (np.mean(every), "you averaged over every query. Only the queries whose token came before have an "
                         "earlier copy to match: average over those."),
        (np.mean(on_copy), "that is the weight on the earlier occurrences themselves. A prefix-matching head "
                           "looks one place further on, at the token that came next."),
        (np.mean(latest), "you used only the latest earlier occurrence. When a token came several times, add "
                          "the weight after each of them."),
        (np.mean(mean_over), "you averaged the weights after the earlier occurrences. Add them: the score is "
                             "how much of the query's weight lands on any of them."),
    ]


@checker("ex-prefix-matching", kind="code")
def check_prefix_matching(func):
    """``prefix_matching(A, ids)``: the prefix-matching score of one head on any text."""
    cases = _cases()
    for A, ids, case in cases:
        got = call_learner(func, A.copy(), ids.copy(), name="prefix_matching", case=case,
                           signature="prefix_matching(A, ids)")
        got = one_number(got, f"the result for {case}")
        compare(got, prefix_matching_reference(A, ids), f"the result for {case}", atol=1e-9, rtol=1e-7,
                mistakes=_mistakes(A, ids), mistake_prefix=f"For {case}: ",
                hint="For each query, find every earlier position with the same token; read the key one "
                     "place after each.")
    return f"your function gives the prefix-matching score of all {len(cases)} heads."
