"""Checkers for the exercises of book/02_why_heads.md (why one head is not enough).

* ``ex-compromise-row`` (numeric): the one row of weights that serves three
  target rows best (smallest summed KL divergence).
* ``ex-one-hot-blend`` (numeric): outputs at "sat" of one blending head and of
  two concatenated heads, before and after two tokens swap roles, and which
  output can tell the two situations apart.

Answers with several parts are dicts; the exercise text shows the keys. Every
expected value is computed here from the library, never typed in.
"""

from __future__ import annotations

import itertools
import re

import numpy as np

from ..examples import i_love_llms
from ..fitting import best_single_row
from .core import answer_array, checker, compare, dict_parts, entry_names, safe_repr, wrong

__all__ = ["COMPROMISE_TARGETS", "BLEND_TOKENS", "BLEND_SUBJECT", "BLEND_PREVIOUS", "BLEND_KEYS",
           "blend_outputs"]

# Two decimals, as printed on the page, are accepted.
_PAGE = 0.006

#: The three relations of "love" in ex-compromise-row: subject, object, and the word itself.
COMPROMISE_TARGETS = ((0.8, 0.1, 0.1), (0.1, 0.1, 0.8), (0.05, 0.9, 0.05))


def _reorderings(row):
    """Every other order of the entries of ``row`` (each distinct one once)."""
    rows = {tuple(float(x) for x in np.asarray(row)[list(p)]) for p in itertools.permutations(range(len(row)))}
    rows.discard(tuple(float(x) for x in row))
    return [np.array(r) for r in sorted(rows)]


@checker("ex-compromise-row", kind="numeric")
def compromise_row(answer):
    """The one row that serves three target rows best (smallest summed KL)."""
    t = np.array(COMPROMISE_TARGETS)
    expected = best_single_row(t).row
    weight_on = entry_names(i_love_llms().tokens, template="the weight on {}")
    got = answer_array(answer, "your row", entry=weight_on)
    geo = np.exp(np.log(t).mean(axis=0))
    S = t.shape[1]
    mistakes = [
        (best_single_row(t[:2]).row, "this is the compromise of the first two relations only. "
                                     "The third one wants a say too."),
        (t.sum(axis=0), "these numbers sum to 3, but a row of weights sums to 1. You are one division away."),
        (geo / geo.sum(), "this is the normalised geometric mean. It is the best row for the divergence "
                          "taken the other way round, KL(row || target). The fit in this chapter "
                          "minimises KL(target || row)."),
        (np.full(S, 1 / S), "this is the flat row, the same weight on every token. Three relations do not "
                            "make a three-way tie: the best row depends on what the targets ask for. Find "
                            "the row where the gradient of the summed divergence is zero."),
    ]
    mistakes += [(row, f"this is target {k + 1} itself. It serves that relation perfectly and the "
                       "others badly; the summed divergence is smaller in between.")
                 for k, row in enumerate(t)]
    mistakes += [(row, "these are the right three weights, but not in the right places. Give them in "
                       "the order of the tokens: the weight on 'I', then on 'love', then on 'LLMs'.")
                 for row in _reorderings(expected)]
    compare(got, expected, "your row", atol=_PAGE, rtol=0, mistakes=mistakes, entry=weight_on,
            shape_hint="Enter three weights: on 'I', 'love' and 'LLMs'.")
    return "one row can only sit between the relations; it is their average."


#: "the cat quietly sat": rows of weights at "sat" (tokens: the, cat, quietly, sat). The two rows
#: are not mirror images of each other, so "heads in the wrong order" and "roles not swapped" give
#: different numbers; their average is symmetric in "cat" and "quietly", so one head cannot tell.
BLEND_TOKENS = ("the", "cat", "quietly", "sat")
BLEND_SUBJECT = (0.1, 0.8, 0.06, 0.04)     # head 1 asks "who sat?"
BLEND_PREVIOUS = (0.04, 0.06, 0.8, 0.1)    # head 2 asks "what came just before?"
BLEND_KEYS = ("one_head", "two_heads", "one_head_swapped", "two_heads_swapped", "can_tell")
_BLEND_SWAP = (0, 2, 1, 3)  # exchange "cat" and "quietly"


def blend_outputs():
    """The reference answer of ex-one-hot-blend: one head at "sat", two heads concatenated, who can tell.

    The values are one-hot (``V`` is the identity). "Swapped" means the roles of
    "cat" and "quietly" are exchanged: the subject head now finds "quietly".
    ``"can_tell"`` names the output that differs between the two situations.
    """
    V = np.eye(len(BLEND_TOKENS))  # one-hot values, (T, T)
    swap = np.array(_BLEND_SWAP)
    w1, w2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)
    one = ((w1 + w2) / 2) @ V  # one row that blends both questions
    return {
        "one_head": one,
        "two_heads": np.concatenate([w1 @ V, w2 @ V]),
        "one_head_swapped": ((w1[swap] + w2[swap]) / 2) @ V,
        "two_heads_swapped": np.concatenate([w1[swap] @ V, w2[swap] @ V]),
        "can_tell": "two_heads",
    }


def _blend_entry(key):
    """Names an entry of one output: "the entry for 'cat'" or "head 2's entry for 'cat'"."""
    T = len(BLEND_TOKENS)

    def name(index):
        if len(index) != 1 or not 0 <= index[0] < (2 * T if key.startswith("two") else T):
            return None
        head, token = divmod(int(index[0]), T)
        owner = f"head {head + 1}'s entry" if key.startswith("two") else "the entry"
        return f"{owner} for '{BLEND_TOKENS[token]}'"

    return name


def _blend_mistakes(key, expected):
    """Known wrong results for one output of ex-one-hot-blend, most telling first."""
    T = len(BLEND_TOKENS)
    if key == "one_head":
        both = expected[key] * 2
        return [(both, "'one_head': you added the two rows. One head has one row, which sums to 1: "
                       "it is the average of the two.")]
    if key == "one_head_swapped":
        return []
    first, second = expected[key][:T], expected[key][T:]
    mistakes = []
    if key == "two_heads_swapped":
        plain = expected["two_heads"]
        mistakes = [
            (plain, "'two_heads_swapped' is the output before the swap. Exchange entries 1 and 2 "
                    "('cat' and 'quietly') of each head's weight row first."),
            (np.concatenate([plain[T:], plain[:T]]),
             "'two_heads_swapped': you exchanged the two heads, not the two tokens. The heads keep their "
             "questions; what changes is which token answers each one."),
        ]
    return mistakes + [
        (np.concatenate([second, first]), f"'{key}': the heads are in the wrong order. "
                                          "Head 1 (the subject) comes first."),
        (first + second, f"'{key}': you added the two heads. Concatenate them instead, "
                         "so that each keeps its own four places."),
        ((first + second) / 2, f"'{key}': you averaged the two heads, which is what one head "
                               "does. Concatenate them instead."),
    ]


_TELL = {"twoheads": "two_heads", "two": "two_heads", "twohead": "two_heads", "heads": "two_heads",
         "concatenated": "two_heads", "concat": "two_heads",
         "onehead": "one_head", "one": "one_head", "single": "one_head", "singlehead": "one_head",
         "both": "both", "neither": "neither", "none": "neither"}


def _can_tell(value):
    """Check the answer to "which output can tell the two situations apart?"."""
    vocab = "'one_head', 'two_heads', 'both' or 'neither'"
    if not isinstance(value, str):
        wrong(f"'can_tell' should be one of the words {vocab}; got {safe_repr(value, 40)}.")
    said = _TELL.get(re.sub(r"[^a-z]", "", value.lower().replace("2", "two").replace("1", "one")))
    if said is None:
        wrong(f"'can_tell' is {safe_repr(value, 40)}. Answer with one of {vocab}.")
    if said == "one_head" or said == "both":
        wrong(f"'can_tell' says {said}, but look at your own numbers: 'one_head' and 'one_head_swapped' "
              "are equal. The single head gives the same output in both situations.")
    if said == "neither":
        wrong("'can_tell' says neither, but 'two_heads' and 'two_heads_swapped' differ: head 1's part "
              "changes when another token becomes the subject.")


@checker("ex-one-hot-blend", kind="numeric")
def one_hot_blend(answer):
    """Outputs at "sat" of one blending head and of two concatenated heads, and which one can tell."""
    expected = blend_outputs()
    values = dict_parts(answer, BLEND_KEYS, "{'one_head': [...], 'two_heads': [...], ..., 'can_tell': '...'}")
    for key, got in zip(BLEND_KEYS[:4], values):
        compare(got, expected[key], f"'{key}'", atol=1e-6, rtol=0, mistakes=_blend_mistakes(key, expected),
                entry=_blend_entry(key), shape_hint="One head gives 4 numbers; two heads side by side give 8.")
    _can_tell(values[4])
    return ("the one-head output did not change when the roles swapped, but the two-head output did: "
            "one head still shows both tokens, but only two heads keep which question found which.")
