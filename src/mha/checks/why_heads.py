"""Checkers for the exercises of book/02_why_heads.md (why one head is not enough).

* ``ex-compromise-row`` (numeric): the one row of weights that makes a weighted
  sum of KL divergences smallest, when the subject relation counts twice.
* ``ex-one-hot-blend`` (numeric): outputs at "sat" of one head whose row favours
  the subject, before and after two tokens swap roles, the two heads' outputs
  after the swap, and which outputs tell the two situations apart.

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

__all__ = ["COMPROMISE_TARGETS", "COMPROMISE_COUNTS", "compromise_reference", "BLEND_TOKENS",
           "BLEND_SUBJECT", "BLEND_PREVIOUS", "BLEND_FAVOUR", "BLEND_KEYS", "blend_outputs"]

# Two decimals, as printed on the page, are accepted.
_PAGE = 0.006

#: The two relations of "love" in ex-compromise-row (subject, object), as in the chapter, and how
#: many times the loss counts each: the subject twice.
COMPROMISE_TARGETS = ((0.8, 0.1, 0.1), (0.1, 0.1, 0.8))
COMPROMISE_COUNTS = (2, 1)


def _repeated(targets, counts):
    """Each target row listed as many times as its count: a loss that counts it c times."""
    return np.repeat(np.asarray(targets, dtype=float), counts, axis=0)  # (n, S) -> (sum(counts), S)


def compromise_reference():
    """The reference answer of ex-compromise-row: the row that minimises 2 KL(t1 || w) + KL(t2 || w)."""
    return best_single_row(_repeated(COMPROMISE_TARGETS, COMPROMISE_COUNTS)).row


def _reorderings(row):
    """Every other order of the entries of ``row`` (each distinct one once)."""
    rows = {tuple(float(x) for x in np.asarray(row)[list(p)]) for p in itertools.permutations(range(len(row)))}
    rows.discard(tuple(float(x) for x in row))
    return [np.array(r) for r in sorted(rows)]


@checker("ex-compromise-row", kind="numeric")
def compromise_row(answer):
    """The one row that makes the weighted sum of KL divergences smallest (subject counted twice)."""
    t = np.array(COMPROMISE_TARGETS)
    c = np.array(COMPROMISE_COUNTS, dtype=float)
    expected = compromise_reference()
    weight_on = entry_names(i_love_llms().tokens, template="the weight on {}")
    got = answer_array(answer, "your row", entry=weight_on)
    geo = np.exp((c[:, None] * np.log(t)).sum(axis=0) / c.sum())
    S = t.shape[1]
    mistakes = [
        (best_single_row(t).row, "this is the best row when both relations count once, their plain "
                                 "average. Here the subject relation counts twice, so the row moves."),
        (best_single_row(_repeated(t, c[::-1].astype(int))).row,
         "you counted the object relation twice. The loss counts the subject relation twice."),
        ((c[:, None] * t).sum(axis=0), "these numbers sum to 3, but a row of weights sums to 1. You are "
                                       "one division away."),
        ((c[:, None] * t).sum(axis=0) / 2, "these weights sum to 1.5, but a row of weights sums to 1. "
                                           "Divide by the sum of the counts, not by the number of relations."),
        (geo / geo.sum(), "this is the weighted geometric mean. It is the best row for the divergence "
                          "taken the other way round, KL(row || target). The loss here is "
                          "KL(target || row)."),
        (np.full(S, 1 / S), "this is the flat row, the same weight on every token. Find the row where "
                            "the gradient of the weighted loss is zero."),
    ]
    mistakes += [(row, f"this is target {k + 1} itself. It serves that relation perfectly and the "
                       "other badly; the weighted loss is smaller in between.")
                 for k, row in enumerate(t)]
    mistakes += [(row, "these are the right three weights, but not in the right places. Give them in "
                       "the order of the tokens: the weight on 'I', then on 'love', then on 'LLMs'.")
                 for row in _reorderings(expected)]
    compare(got, expected, "your row", atol=_PAGE, rtol=0, mistakes=mistakes, entry=weight_on,
            shape_hint="Enter three weights: on 'I', 'love' and 'LLMs'.")
    return ("counting a relation twice gives a weighted average, closer to that relation's row: it "
            "serves the subject better and the object worse.")


#: "the cat quietly sat": rows of weights at "sat" (tokens: the, cat, quietly, sat). The two rows
#: are not mirror images of each other, so "heads in the wrong order", "roles not swapped" and
#: "the favour given to the other question" give different numbers.
BLEND_TOKENS = ("the", "cat", "quietly", "sat")
BLEND_SUBJECT = (0.1, 0.8, 0.06, 0.04)     # head 1 asks "who sat?"
BLEND_PREVIOUS = (0.04, 0.06, 0.8, 0.1)    # head 2 asks "what came just before?"
#: The single head's row is BLEND_FAVOUR * subject row + (1 - BLEND_FAVOUR) * previous-word row.
BLEND_FAVOUR = 0.75
BLEND_KEYS = ("one_head", "one_head_swapped", "two_heads_swapped", "can_tell")
_BLEND_SWAP = (0, 2, 1, 3)  # exchange "cat" and "quietly"


def _mix(w1, w2, favour=BLEND_FAVOUR):
    """The single head's row: ``favour`` of the subject row, the rest of the previous-word row."""
    return favour * np.asarray(w1) + (1 - favour) * np.asarray(w2)


def blend_outputs():
    """The reference answer of ex-one-hot-blend.

    The values are one-hot (``V`` is the identity). The single head's row favours
    the subject question (:data:`BLEND_FAVOUR`). "Swapped" means the roles of
    "cat" and "quietly" are exchanged: the subject head now finds "quietly".
    ``"can_tell"`` names the outputs that change between the two situations:
    both, because the single row is not symmetric in "cat" and "quietly".
    """
    V = np.eye(len(BLEND_TOKENS))  # one-hot values, (T, T)
    swap = np.array(_BLEND_SWAP)
    w1, w2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)
    return {
        "one_head": _mix(w1, w2) @ V,
        "one_head_swapped": _mix(w1[swap], w2[swap]) @ V,
        "two_heads_swapped": np.concatenate([w1[swap] @ V, w2[swap] @ V]),
        "can_tell": "both",
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
    swap = np.array(_BLEND_SWAP)
    w1, w2 = np.array(BLEND_SUBJECT), np.array(BLEND_PREVIOUS)
    if key in ("one_head", "one_head_swapped"):
        a, b = (w1, w2) if key == "one_head" else (w1[swap], w2[swap])
        mistakes = []
        if key == "one_head_swapped":
            mistakes += [
                (expected["one_head"], "'one_head_swapped' is the output before the exchange. Exchange "
                                       "entries 1 and 2 ('cat' and 'quietly') of each weight row first."),
                (_mix(w1, w2, 1 - BLEND_FAVOUR),
                 "'one_head_swapped': you changed which question the row favours. The single head still "
                 "favours the subject question; what changes is which token answers it."),
            ]
        return mistakes + [
            ((a + b) / 2, f"'{key}' is the plain average of the two rows, which weighs both questions "
                          "equally. This head favours the subject question."),
            (_mix(a, b, 1 - BLEND_FAVOUR), f"'{key}': you gave the larger share to the previous-word row. "
                                           "This head favours the subject question."),
            (a + b, f"'{key}': you added the two rows. One head has one row, which sums to 1."),
            (a, f"'{key}' is the subject head's row alone. The single head mixes both rows."),
        ]
    first, second = expected[key][:T], expected[key][T:]
    plain = np.concatenate([w1, w2])
    return [
        (plain, "'two_heads_swapped' is the output before the exchange. Exchange entries 1 and 2 "
                "('cat' and 'quietly') of each head's weight row first."),
        (np.concatenate([w2, w1]),
         "'two_heads_swapped': you exchanged the two heads, not the two tokens. The heads keep their "
         "questions; what changes is which token answers each one."),
        (np.concatenate([second, first]), f"'{key}': the heads are in the wrong order. "
                                          "Head 1 (the subject) comes first."),
        (first + second, f"'{key}': you added the two heads. Concatenate them instead, "
                         "so that each keeps its own four places."),
        ((first + second) / 2, f"'{key}': you averaged the two heads. Concatenate them instead."),
    ]


_TELL = {"twoheads": "two_heads", "two": "two_heads", "twohead": "two_heads", "heads": "two_heads",
         "concatenated": "two_heads", "concat": "two_heads",
         "onehead": "one_head", "one": "one_head", "single": "one_head", "singlehead": "one_head",
         "both": "both", "all": "both", "neither": "neither", "none": "neither"}


def _can_tell(value):
    """Check the answer to "which outputs change when the roles are exchanged?"."""
    vocab = "'one_head', 'two_heads', 'both' or 'neither'"
    if not isinstance(value, str):
        wrong(f"'can_tell' should be one of the words {vocab}; got {safe_repr(value, 40)}.")
    said = _TELL.get(re.sub(r"[^a-z]", "", value.lower().replace("2", "two").replace("1", "one")))
    if said is None:
        wrong(f"'can_tell' is {safe_repr(value, 40)}. Answer with one of {vocab}.")
    if said == "two_heads":
        wrong("'can_tell' says two_heads, but look at your own numbers: 'one_head' and "
              "'one_head_swapped' differ. A row that favours one question is not the same after the "
              "exchange, so the single head's output changes too.")
    if said == "one_head":
        wrong("'can_tell' says one_head, but the two heads' output changes too: head 1's part "
              "changes when another token becomes the subject.")
    if said == "neither":
        wrong("'can_tell' says neither, but compare your own numbers: both outputs change when the "
              "roles are exchanged.")


@checker("ex-one-hot-blend", kind="numeric")
def one_hot_blend(answer):
    """Outputs at "sat" of one head that favours the subject and of two heads, and which ones change."""
    expected = blend_outputs()
    values = dict_parts(answer, BLEND_KEYS, "{'one_head': [...], 'one_head_swapped': [...], "
                                            "'two_heads_swapped': [...], 'can_tell': '...'}")
    for key, got in zip(BLEND_KEYS[:3], values):
        compare(got, expected[key], f"'{key}'", atol=1e-6, rtol=0, mistakes=_blend_mistakes(key, expected),
                entry=_blend_entry(key), shape_hint="One head gives 4 numbers; two heads side by side give 8.")
    _can_tell(values[3])
    return ("both outputs change, so here one head can tell the two situations apart too. But only "
            "because its row favours the subject: the previous word gets much less weight in it than "
            "in a head of its own.")
