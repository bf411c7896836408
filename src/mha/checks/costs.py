"""Checkers for the exercises of the costs chapter (book/08_costs.md).

The expected values are computed with :mod:`mha.costs` from the sizes given
in the exercise text, never typed in, and they are never shown to the learner.
"""

from __future__ import annotations

import numpy as np

from ..costs import attention_flops, kv_cache_bytes
from .core import answer_array, checker, compare, is_unfinished, not_done, wrong

#: The imaginary model of the KV-cache exercise.
KV_TASK = {"n_layers": 40, "h": 40, "n_kv_heads": 8, "d_k": 128, "T": 4096, "bytes_per_value": 2}

#: The layer of the FLOP-count exercise (the attention shape of Llama 2 70B).
FLOP_TASK = {"T": 4096, "d": 8192, "h": 64, "n_kv_heads": 8, "d_k": 128}


def _one_number(value, what):
    arr = answer_array(value, what)
    if arr.shape != ():
        wrong(f"{what} should be one number, got an array of shape {arr.shape}.")
    return float(arr)


@checker("ex-kv-cache-size", kind="numeric")
def check_kv_cache_size(answer):
    """Bytes of KV cache for one sequence of the exercise's grouped-query model."""
    task = KV_TASK
    got = _one_number(answer, "your answer")
    expected = kv_cache_bytes(task["n_layers"], task["n_kv_heads"], task["d_k"], task["T"],
                              bytes_per_value=task["bytes_per_value"])
    query_heads = expected * task["h"] // task["n_kv_heads"]
    units = [(expected / 2**30, "GiB"), (expected / 2**20, "MiB"), (expected / 1e9, "GB"),
             (expected / 1e6, "MB"), (expected / 2**10, "KiB"), (expected / 1e3, "kB")]
    mistakes = [
        (query_heads, "you counted all 40 query heads. Only the key/value heads are stored in the "
                      "cache: with grouped-query attention that is n_kv_heads, not h."),
        (expected / 2, "this is half the size. The cache holds a key AND a value vector for every "
                       "key/value head, and each number takes 2 bytes: check that both factors of 2 are there."),
        (expected / 4, "this is a quarter of the size: count a key and a value per key/value head (x2), "
                       "and 2 bytes per number (x2)."),
        (expected / task["n_layers"], "this is the cache of ONE layer. Every layer keeps its own keys "
                                      "and values: multiply by the number of layers."),
        (expected / task["T"], "this is the cache for ONE token. Multiply by the sequence length."),
    ]
    mistakes += [(value, f"this looks like the right size written in {unit}. The task asks for bytes.")
                 for value, unit in units]
    compare(got, expected, "your answer", atol=0.5, rtol=0, mistakes=mistakes, rounding_hint=False,
            hint="Count the bytes one token adds to one layer first, then scale up to all layers and tokens.")
    return "the cache stores 2 x n_kv_heads x d_k numbers per token and per layer."


@checker("ex-attention-flops", kind="numeric")
def check_attention_flops(answer):
    """FLOPs of the projections and of the attention core for one sequence (Llama 2 70B's shape)."""
    task = FLOP_TASK
    if is_unfinished(answer) or (isinstance(answer, (tuple, list)) and any(is_unfinished(a) for a in answer)):
        not_done()
    pair = isinstance(answer, (tuple, list)) or (isinstance(answer, np.ndarray) and answer.ndim == 1)
    if not pair or len(answer) != 2:
        wrong("pass the two numbers as a pair: (projections, attention).")
    projections = _one_number(answer[0], "projections")
    attention = _one_number(answer[1], "attention")
    T, d, h, g, d_k = task["T"], task["d"], task["h"], task["n_kv_heads"], task["d_k"]
    f = attention_flops(T, d, h, d_k=d_k, n_kv_heads=g)
    core = f.scores + f.weighted_sum
    compare(projections, f.projections, "projections", rtol=0, atol=0.5, rounding_hint=False, mistakes=[
        (8 * T * d * d, "projections: 8*T*d^2 is the count when every query head has its own keys and "
                        "values. Here W_K and W_V have only n_kv_heads*d_k columns each."),
        (f.projections / 2, "projections: half the expected count. A multiply-add is 2 FLOPs."),
        (2 * T * d * d_k * (h + 2 * g), "projections: you left out W_O, the fourth matrix."),
        (2 * T * d * d_k * (2 * h + g), "projections: W_K and W_V both shrink with n_kv_heads; "
                                        "count each of them once."),
    ])
    compare(attention, core, "attention", rtol=0, atol=0.5, rounding_hint=False, mistakes=[
        (core / 2, "attention: half the expected count. Count both the scores Q K^T and the weighted "
                   "sum A V, with 2 FLOPs per multiply-add."),
        (core / h, "attention: this is the count for ONE head. Every query head computes its own "
                   "scores and its own weighted sum."),
        (core * g / h, "attention: you counted n_kv_heads heads. Sharing keys and values does not "
                       "share the work: each of the h query heads still computes its own scores "
                       "and weighted sum."),
    ])
    return "both parts are right: sharing keys and values shrinks the projections, not the scores."
