"""Checkers for the exercises of book/07_d_model.md (what fixes d_model).

* ``ex-shapes-768`` (numeric): d_k, the shapes of W_i^Q and W^O for
  d_model = 768 with 12 heads, and which sizes the sublayer may choose freely.
"""

from __future__ import annotations

import re

import numpy as np

from .core import answer_array, checker, compare, is_unfinished, not_done, safe_repr, wrong

_FREE_NAMES = {"dk": "d_k", "wqicols": "d_k", "wqirows": "W_Q_i rows", "worows": "W_O rows",
               "wocols": "W_O cols"}
_FREE_VOCAB = '"d_k", "W_Q_i rows", "W_O rows", "W_O cols"'
_KEYS = ("d_k", "W_Q_i", "W_O", "free")


def _shape_pair(value, what):
    if is_unfinished(value):
        not_done(f"{what} is still ...: fill it in.")
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list, np.ndarray)):
        wrong(f"{what} should be a pair (rows, columns), got {safe_repr(value)}.")
    arr = answer_array(value, what)
    if arr.shape != (2,):
        wrong(f"{what} should be a pair (rows, columns): two numbers, got {arr.size}.")
    if not np.all(arr == np.round(arr)) or np.any(arr < 1):
        wrong(f"{what} should hold two positive whole numbers.")
    return tuple(int(v) for v in arr)


def _free_set(value):
    if is_unfinished(value):
        not_done('"free" is still ...: fill it in.')
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (set, frozenset, list, tuple)):
        wrong(f'"free" should be a set of names drawn from {_FREE_VOCAB}; got a {type(value).__name__}.')
    names = set()
    for item in list(value)[:100]:
        key = re.sub(r"[^a-z]", "", item.lower()) if isinstance(item, str) else ""
        if key not in _FREE_NAMES:
            wrong(f'"free" contains {safe_repr(item)}, which is not one of {_FREE_VOCAB}.')
        names.add(_FREE_NAMES[key])
    return names


@checker("ex-shapes-768", kind="numeric")
def shapes_768(answer):
    """d_k, W_i^Q and W^O for d_model = 768 with 12 heads, and which sizes are free."""
    d, h = 768, 12
    d_k = d // h
    if not isinstance(answer, dict):
        wrong('answer should be a dict with the keys "d_k", "W_Q_i", "W_O" and "free"; '
              f"got a {type(answer).__name__}.")
    missing = [k for k in _KEYS if not dict.__contains__(answer, k)]
    if missing:
        wrong(f"the dict has no entry for {', '.join(repr(k) for k in missing)}.")
    parts = {k: dict.__getitem__(answer, k) for k in _KEYS}
    if all(is_unfinished(v) for v in parts.values()):
        not_done()
    got_dk = parts["d_k"]
    if is_unfinished(got_dk):
        not_done('"d_k" is still ...: fill it in.')
    compare(got_dk, d_k, '"d_k"', atol=0, rtol=0, rounding_hint=False, mistakes=[
        (d, '"d_k" is the width of all heads together. Each of the 12 heads gets an equal share of it.'),
        (d * h, '"d_k" was multiplied by h. The heads share the width: divide it.'),
    ])
    W_Q_i = _shape_pair(parts["W_Q_i"], '"W_Q_i"')
    if W_Q_i == (d_k, d):
        wrong('"W_Q_i" is transposed. In this book a row x is multiplied as x @ W, so W_Q_i has one row '
              "per coordinate of x and one column per coordinate of the head's query.")
    if W_Q_i == (d, d):
        wrong('"W_Q_i" is the shape of the stacked W_Q of all heads. One head uses only its own columns.')
    if W_Q_i != (d, d_k):
        wrong(f'"W_Q_i" = {W_Q_i} does not fit: it must take a row of the stream and give a query of width d_k.')
    W_O = _shape_pair(parts["W_O"], '"W_O"')
    if W_O in ((d_k, d), (d, d_k)):
        wrong('"W_O" is the size of one head\'s block. W_O reads all heads\' outputs side by side.')
    if W_O != (h * d_k, d):
        wrong(f'"W_O" = {W_O} does not fit: its rows take the concatenated heads, its columns give the '
              "stream's width.")
    free = _free_set(parts["free"])
    if "W_O cols" in free:
        wrong('"W_O cols" is not free: the output of W_O is added to the stream, entry by entry, so it must '
              "be exactly as wide as the stream.")
    if "W_Q_i rows" in free:
        wrong('"W_Q_i rows" is not free: W_Q_i reads a row of the stream, so its rows must match the '
              "stream's width.")
    if "d_k" not in free:
        wrong('"d_k" is missing from "free". Nothing outside the sublayer ever sees a query or a key.')
    if "W_O rows" not in free:
        wrong('"W_O rows" is missing from "free". The rows of W_O count the concatenated head outputs, '
              "h times d_v, which the sublayer chooses for itself.")
    return "the sublayer chooses its inner widths; only what touches the stream is fixed."
