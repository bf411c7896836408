"""Checkers for the exercises of book/07_d_model.md (what fixes d_model).

* ``ex-shapes-768`` (numeric): a model with d_model = 768 and 12 heads whose
  head widths are untied (d_k = 32, d_v = 128), a feed-forward sublayer with
  d_ff = 3072 and pretrained 300-wide word vectors behind a learned projection.
  The shapes of W^O and of the feed-forward's first matrix W_1, the number of
  weights in W^Q, W^K, W^V and W^O, and which sizes must change when the stream
  is widened to 1,024 (the ones that touch the stream, in every part).
"""

from __future__ import annotations

import re

import numpy as np

from .core import answer_array, checker, compare, dict_parts, is_unfinished, not_done, safe_repr, wrong

D, H, D_K, D_V, D_FF, D_PRE = 768, 12, 32, 128, 3072, 300  # the exercise's model
SIZES = ("W_Q_i rows", "W_Q_i cols", "W_O rows", "W_O cols", "W_1 rows", "W_1 cols",
         "projection rows", "projection cols")
_SIZE_NAMES = {re.sub(r"[^a-z0-9]", "", name.lower()): name for name in SIZES}
_SIZE_VOCAB = ", ".join(f'"{name}"' for name in SIZES)
_KEYS = ("W_O", "W_1", "n_weights", "must_change")
MUST_CHANGE = {"W_Q_i rows", "W_O cols", "W_1 rows", "projection cols"}  # they read or write the stream
_WHY_KEPT = {
    "W_Q_i cols": "W_Q_i's columns are the head's query width d_k, which is kept.",
    "W_O rows": "W_O's rows take the heads' outputs side by side, h times d_v, which are kept.",
    "W_1 cols": "W_1's columns are the feed-forward's inner width d_ff, which is kept.",
    "projection rows": "the projection's rows take the pretrained vectors, still 300 wide.",
}
_WHY_FORCED = {
    "W_Q_i rows": "W_Q_i reads a row of the stream, so its rows must match the stream's width.",
    "W_O cols": "the output of W_O is added to the stream, entry by entry, so its columns must match the stream.",
    "W_1 rows": "the feed-forward sublayer reads the stream too: W_1 takes a row of it.",
    "projection cols": "the projection writes the word vectors into the stream, so its columns are the stream's width.",
}


def n_weights(d=D, h=H, d_k=D_K, d_v=D_V):
    """Weights of W^Q, W^K, W^V and W^O of one attention layer, without biases."""
    return 2 * d * h * d_k + 2 * d * h * d_v


def _shape_pair(value, what):
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)):
        wrong(f"{what} should be a pair (rows, columns), got {safe_repr(value)}.")
    arr = answer_array(value, what)
    if arr.shape != (2,):
        wrong(f"{what} should be a pair (rows, columns): two numbers, got {arr.size}.")
    if not np.all(arr == np.round(arr)) or np.any(arr < 1):
        wrong(f"{what} should hold two positive whole numbers.")
    return tuple(int(v) for v in arr)


def _size_set(value):
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (set, frozenset, list, tuple)):
        wrong(f'"must_change" should be a set of names drawn from {_SIZE_VOCAB}; got a {type(value).__name__}.')
    names = set()
    for item in list(value)[:100]:
        key = re.sub(r"[^a-z0-9]", "", item.lower()) if isinstance(item, str) else ""
        if key not in _SIZE_NAMES:
            wrong(f'"must_change" contains {safe_repr(item)}, which is not one of {_SIZE_VOCAB}.')
        names.add(_SIZE_NAMES[key])
    return names


@checker("ex-shapes-768", kind="numeric")
def shapes_768(answer):
    """W^O and W_1 of a 768-wide model with untied heads, its attention weights, and what a wider stream forces."""
    parts = dict_parts(answer, _KEYS, '{"W_O": (rows, columns), "W_1": (rows, columns), "n_weights": 0, '
                                      '"must_change": {"name", ...}}')
    W_O = _shape_pair(parts[0], '"W_O"')
    if W_O == (D, H * D_V):
        wrong('"W_O" is transposed. In this book a row is multiplied as x @ W: W_O has one row per number '
              "it reads and one column per number it writes.")
    if W_O == (H * D_K, D):
        wrong('"W_O" reads what the heads return, and a head returns a weighted sum of values: d_v numbers, '
              "not d_k.")
    if W_O == (D, D):
        wrong('"W_O" = (768, 768) is the shape with d_v = 768/12. This model has untied heads: use its d_v.')
    if W_O in ((D_V, D), (D, D_V)):
        wrong('"W_O" is the size of one head\'s block. W_O reads all heads\' outputs side by side.')
    if W_O != (H * D_V, D):
        wrong(f'"W_O" = {W_O} does not fit: its rows take the concatenated heads, its columns give the '
              "stream's width.")
    W_1 = _shape_pair(parts[1], '"W_1"')
    if W_1 == (D_FF, D):
        wrong('"W_1" is transposed: it reads a row of the stream (x @ W_1) and widens it.')
    if W_1 != (D, D_FF):
        wrong(f'"W_1" = {W_1} does not fit: it reads a row of the stream and returns d_ff numbers.')
    compare(parts[2], n_weights(), '"n_weights"', atol=0, rtol=0, rounding_hint=False, mistakes=[
        (4 * D * D, "that is the count with d_k = d_v = 768/12. This model's heads are untied: count each matrix "
                    "from its own shape."),
        (4 * D * H * D_K, "you used d_k for all four matrices. W^V and W^O work with the values, d_v wide."),
        (4 * D * H * D_V, "you used d_v for all four matrices. W^Q and W^K make queries and keys, d_k wide."),
        (2 * D * D_K + 2 * D * D_V, "that is one head's share. There are 12 heads."),
        (n_weights() + 2 * D * D_FF, "you added the feed-forward's weights. The question counts W^Q, W^K, W^V "
                                     "and W^O only."),
    ], hint="Multiply out the shape of each of the four matrices and add the four products.")
    must = _size_set(parts[3])
    for name in SIZES:
        if name in must and name not in MUST_CHANGE:
            wrong(f'"{name}" need not change: {_WHY_KEPT[name]}')
    for name in SIZES:
        if name in MUST_CHANGE and name not in must:
            wrong(f'"{name}" is missing from "must_change": {_WHY_FORCED[name]}')
    return ("every size that reads or writes the stream follows d_model, in attention, in the feed-forward "
            "sublayer and at the embedding; the sizes inside a sublayer and the pretrained vectors' width do not.")
