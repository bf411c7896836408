"""Checkers for the exercises of book/02_why_heads.md (why one head is not enough).

* ``ex-compromise-row`` (numeric): the one row of weights that serves three
  target rows best (smallest summed KL divergence).
* ``ex-one-hot-blend`` (numeric): outputs at "sat" of one blending head and of
  two concatenated heads, before and after two tokens swap roles.

Answers with several parts are dicts; the exercise text shows the keys. Every
expected value is computed here from the library, never typed in.
"""

from __future__ import annotations

import numpy as np

from ..examples import i_love_llms
from ..fitting import best_single_row
from .core import answer_array, checker, compare, dict_parts, entry_names

__all__ = ["COMPROMISE_TARGETS", "BLEND_TOKENS", "BLEND_SUBJECT", "BLEND_PREVIOUS", "BLEND_KEYS",
           "blend_outputs"]

# Two decimals, as printed on the page, are accepted.
_PAGE = 0.006

#: The three relations of "love" in ex-compromise-row: subject, object, and the word itself.
COMPROMISE_TARGETS = ((0.8, 0.1, 0.1), (0.1, 0.1, 0.8), (0.05, 0.9, 0.05))


@checker("ex-compromise-row", kind="numeric")
def compromise_row(answer):
    """The one row that serves three target rows best (smallest summed KL)."""
    t = np.array(COMPROMISE_TARGETS)
    expected = best_single_row(t).row
    weight_on = entry_names(i_love_llms().tokens, template="the weight on {}")
    got = answer_array(answer, "your row", entry=weight_on)
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
    compare(got, expected, "your row", atol=_PAGE, rtol=0, mistakes=mistakes, entry=weight_on,
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


@checker("ex-one-hot-blend", kind="numeric")
def one_hot_blend(answer):
    """Outputs at "sat" of one blending head and of two concatenated heads."""
    expected = blend_outputs()
    values = dict_parts(answer, BLEND_KEYS, "{'one_head': [...], 'two_heads': [...], ...}")
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
        compare(got, exp, f"'{key}'", atol=1e-6, rtol=0, mistakes=mistakes, entry=_blend_entry(key),
                shape_hint="One head gives 4 numbers; two heads side by side give 8.")
    return ("the one-head output did not change when the roles swapped, "
            "but the two-head output did: only two heads remember who answered what.")
