"""Checkers for the exercises of book/08_costs.md (what multi-head attention costs).

* ``ex-kv-cache-size`` (numeric): bytes of KV cache for one sequence of the
  exercise's grouped-query model (:data:`KV_TASK`).
* ``ex-attention-flops`` (numeric, a pair): for an attention sublayer of
  Llama 2 70B's shape (:data:`FLOP_TASK`), the length T at which the scores and
  weighted sums cost as many FLOPs as the four projections, and the fraction of
  the sublayer's FLOPs at the task's T that grouped-query attention saves
  against the same sublayer with g = h.
* ``ex-decode-intensity`` (numeric, a dict): for Gemma 2B and Gemma 7B
  (:data:`DECODE_TASK`: 16-bit weights, an 8-bit cache), the batch size at which
  a whole decoding step reaches the H100's FLOPs per byte (``math.inf`` when no
  batch does).
* ``ex-param-count`` (code): ``attention_param_count(d, h)`` with the optional
  keywords ``d_k``, ``d_v``, ``bias`` and ``n_kv_heads`` (d_k defaults to
  d // h, d_v to d_k): values may be narrower or wider than keys.

The expected values are computed with :mod:`mha.costs` (or, for the parameter
count, an independent formula here) from the sizes given in the exercise
text, never typed in, and they are never shown to the learner.
"""

from __future__ import annotations

import math
import types

import numpy as np

from ..costs import attention_flops, kv_cache_bytes
from .core import answer_array, call_learner, checker, compare, dict_parts, one_number, pair, safe_repr, wrong

__all__ = ["KV_TASK", "FLOP_TASK", "DECODE_TASK"]

#: The imaginary model of the KV-cache exercise.
KV_TASK = {"n_layers": 60, "h": 48, "n_kv_heads": 3, "d_k": 96, "T": 6000, "bytes_per_value": 1}

#: The layer of the FLOP-count exercise (the attention shape of Llama 2 70B).
FLOP_TASK = {"T": 4096, "d": 8192, "h": 64, "n_kv_heads": 8, "d_k": 128}

#: The two models of the decode exercise (shapes and total parameters from the Gemma report), the
#: context in each cache, the bytes per number of the cache (8-bit) and of the weights (16-bit), and
#: the H100 SXM's datasheet figures: TFLOP/s of bfloat16 products without sparsity (half the
#: datasheet's 1,979, which assumes 2:4 structured sparsity) and GB/s of memory bandwidth.
DECODE_TASK = {"Gemma 2B": {"h": 8, "n_kv_heads": 1, "n_layers": 18, "d_k": 256, "params": 2.5e9},
               "Gemma 7B": {"h": 16, "n_kv_heads": 16, "n_layers": 28, "d_k": 256, "params": 8.5e9},
               "T": 1024, "cache_bytes": 1, "weight_bytes": 2, "tflops": 989, "gbs": 3350}

#: The A100's figures, which the page uses above the exercise: a learner who reuses them is told.
_A100 = {"tflops": 312, "gbs": 2039}


# --------------------------------------------------------------------------- KV cache

@checker("ex-kv-cache-size", kind="numeric")
def check_kv_cache_size(answer):
    """Bytes of KV cache for one sequence of the exercise's grouped-query model."""
    task = KV_TASK
    got = one_number(answer, "your answer")
    expected = kv_cache_bytes(task["n_layers"], task["n_kv_heads"], task["d_k"], task["T"],
                              bytes_per_value=task["bytes_per_value"])
    query_heads = expected * task["h"] // task["n_kv_heads"]
    units = [(expected / 2**30, "GiB"), (expected / 2**20, "MiB"), (expected / 1e9, "GB"),
             (expected / 1e6, "MB"), (expected / 2**10, "KiB"), (expected / 1e3, "kB")]
    mistakes = [
        (query_heads, f"you counted all {task['h']} query heads. Only the key/value heads are stored in the "
                      "cache: with grouped-query attention that is n_kv_heads, not h."),
        (expected / 2, "this is half the size. The cache holds a key AND a value vector for every "
                       "key/value head."),
        (expected * 2, "this is twice the size. Check the bytes per number (this cache stores 8-bit "
                       "numbers, 1 byte each) and the number of key/value heads."),
        (expected * 4, "this is four times the size. Check the bytes per number (1 here) and the number "
                       "of key/value heads given in the task."),
        (expected / task["n_layers"], "this is the cache of ONE layer. Every layer keeps its own keys "
                                      "and values: multiply by the number of layers."),
        (expected / task["T"], "this is the cache for ONE token. Multiply by the sequence length."),
    ]
    mistakes += [(value, f"this looks like the right size written in {unit}. The task asks for bytes.")
                 for value, unit in units]
    compare(got, expected, "your answer", atol=0.5, rtol=0, mistakes=mistakes, rounding_hint=False,
            hint="Count the bytes one token adds to one layer first, then scale up to all layers and tokens.")
    return "the cache stores 2 x n_kv_heads x d_k numbers per token and per layer."


# --------------------------------------------------------------------------- FLOPs

def _refuse_unsized(answer, what, example):
    """Give feedback when ``answer`` is a class, or an object whose length cannot be read.

    :func:`pair` asks ``len(answer)``; a class such as ``dict`` has a ``__len__`` that is not a
    length, and an object may raise from it. Both get the pair's usual message here.
    """
    if isinstance(answer, type):
        wrong(f"{what} should be a pair {example}: two values in a tuple, a list or an array; "
              f"got the class {safe_repr(answer, 40)} itself.")
    if hasattr(answer, "__len__") and not isinstance(answer, (str, bytes)):
        try:
            len(answer)
        except Exception:  # a BaseException from the learner's object is left to check()
            wrong(f"{what} should be a pair {example}: two values in a tuple, a list or an array; "
                  f"its length could not be read.")


def flop_answers(task=None):
    """``(T_cross, saved)`` for the FLOP exercise: the length at which the scores and weighted sums
    cost as much as the four projections, and the fraction of the sublayer's FLOPs at ``task["T"]``
    that grouped-query attention saves against the same sublayer with ``g = h``."""
    task = FLOP_TASK if task is None else task
    T, d, h, g, d_k = task["T"], task["d"], task["h"], task["n_kv_heads"], task["d_k"]
    t_cross = d * (2 * h + 2 * g) / (2 * h)  # 2T d d_k (2h + 2g) = 4 T^2 h d_k
    gqa = attention_flops(T, d, h, d_k=d_k, n_kv_heads=g).total
    full = attention_flops(T, d, h, d_k=d_k, n_kv_heads=h).total
    return t_cross, (full - gqa) / full


@checker("ex-attention-flops", kind="numeric")
def check_attention_flops(answer):
    """Llama 2 70B's attention shape: the crossover length, and the share of FLOPs that GQA saves."""
    task = FLOP_TASK
    _refuse_unsized(answer, "your answer", "(T_cross, saved)")
    first, second = pair(answer, "your answer", "(T_cross, saved)")
    t_cross = one_number(first, "T_cross")
    saved = one_number(second, "saved")
    T, d, h, g, d_k = task["T"], task["d"], task["h"], task["n_kv_heads"], task["d_k"]
    right_t, right_saved = flop_answers()
    compare(t_cross, right_t, "T_cross", rtol=0, atol=0.5, rounding_hint=False, mistakes=[
        (2 * d, "T_cross: T = 2d is the crossover when every query head has its own keys and values. "
                "Here W_K and W_V have only n_kv_heads*d_k columns each."),
        (d * (h + 2 * g) / (2 * h), "T_cross: you left out W_O, the fourth matrix of the projections."),
        (2 * right_t, "T_cross: this is where the scores alone equal the projections. Count the weighted sums too."),
        (d * (2 * h + 2 * g) / (2 * g), "T_cross: you counted the scores and weighted sums of n_kv_heads "
                                        "heads. Every one of the h query heads computes its own."),
    ], hint="Write both counts as functions of T and set them equal: 2T·d·d_k·(2h + 2g) = 4T²·h·d_k.")
    gqa = attention_flops(T, d, h, d_k=d_k, n_kv_heads=g).total
    full = attention_flops(T, d, h, d_k=d_k, n_kv_heads=h).total
    compare(saved, right_saved, "saved", rtol=0.005, atol=0, rounding_hint=False, mistakes=[
        (100 * right_saved, "saved: this looks like a percentage. Give a fraction between 0 and 1."),
        ((full - gqa) / gqa, "saved: you divided by the grouped-query count. Divide the FLOPs saved by "
                             "the count with g = h, the sublayer before sharing."),
        ((full - gqa) / attention_flops(T, d, h, d_k=d_k).projections,
         "saved: this is the share of the projections only. The task asks for the share of the "
         "whole sublayer, scores and weighted sums included."),
        (1 - g / h, "saved: sharing keys and values does not shrink the scores or the weighted sums: "
                    "each query head still computes its own."),
    ], hint="Count the sublayer with g = h and with g = n_kv_heads at the task's T; compare the two.")
    return ("both are right: sharing keys and values shrinks only W_K and W_V, so the T² work equals "
            "the projections sooner, and the saving shrinks as T grows.")


# --------------------------------------------------------------------------- decode intensity

def decode_batches(task=None):
    """``{model: the batch size B at which a whole decoding step reaches the GPU's FLOPs per byte}``.

    A step of ``B`` sequences does ``B (2N + 4 L h d_k T)`` FLOPs (two per weight, and a score and
    a weighted sum per cached token and query head) and reads the weights once, ``N`` times their
    bytes, plus ``B`` caches of ``2 L g d_k T`` numbers. Its FLOPs per byte rise with ``B`` towards
    one sequence's FLOPs over its cache bytes; if that limit is not above the GPU's ratio, no batch
    reaches it and the value is ``math.inf``. Otherwise the value is the exact (fractional) ``B``.
    """
    task = DECODE_TASK if task is None else task
    machine = task["tflops"] * 1e12 / (task["gbs"] * 1e9)
    out = {}
    for name in ("Gemma 2B", "Gemma 7B"):
        m = task[name]
        flops = 2 * m["params"] + 4 * m["n_layers"] * m["h"] * m["d_k"] * task["T"]  # one sequence
        cache = 2 * m["n_layers"] * m["n_kv_heads"] * m["d_k"] * task["T"] * task["cache_bytes"]  # one sequence
        weights = m["params"] * task["weight_bytes"]  # read once per step
        out[name] = machine * weights / (flops - machine * cache) if flops > machine * cache else math.inf
    return out


_DECODE_EXAMPLE = '{"Gemma 2B": ..., "Gemma 7B": ...}'


def _batch_or_never(value, what):
    """A batch size, or ``math.inf`` for "no batch reaches it"."""
    if isinstance(value, (float, np.floating)) and math.isinf(value) and value > 0:
        return math.inf
    return one_number(value, what)


@checker("ex-decode-intensity", kind="numeric")
def check_decode_intensity(answer):
    """For Gemma 2B and Gemma 7B on an H100: the batch at which a whole decoding step stops waiting for memory."""
    names = ("Gemma 2B", "Gemma 7B")
    got = dict(zip(names, [_batch_or_never(value, f"the batch for {name}") for name, value in
                           zip(names, dict_parts(answer, names, _DECODE_EXAMPLE))]))
    right = decode_batches()
    if all(_same_batch(got[n], right[n]) for n in names):
        return ("right: with one key/value head, Gemma 2B's caches are small enough that a large batch "
                "reaches the H100's FLOPs per byte; Gemma 7B, with a key/value head for every query head, "
                "reads so much cache per sequence that no batch does.")
    if all(_same_batch(got[a], right[b]) for a, b in zip(names, names[::-1])):
        wrong("your two answers are swapped: check which model has one key/value head.")
    task = DECODE_TASK
    variants = {  # (a changed task, what went wrong)
        "a100": ({**task, "tflops": _A100["tflops"], "gbs": _A100["gbs"]}, "this uses the A100's figures. "
                 "The task gives the H100's."),
        "no_attention": ({**task, **{n: {**task[n], "h": 0} for n in names}}, "you left out the FLOPs of the "
                         "attention over the cache: each query head does a score and a weighted sum per cached token."),
        "byte_weights": ({**task, "weight_bytes": 1}, "the weights are 16-bit numbers: 2 bytes each."),
        "units": ({**task, "tflops": task["tflops"] / 1000}, "check the units: TFLOP/s is 10^12 FLOP/s and "
                  "GB/s is 10^9 bytes/s."),
    }
    for name in names:
        value, expected = got[name], right[name]
        if _same_batch(value, expected):
            continue
        if expected == math.inf:
            wrong(f"{name}: check whether any batch reaches the H100's FLOPs per byte at all. As B grows, a "
                  "step's FLOPs per byte approach one sequence's FLOPs over one sequence's cache bytes.")
        if value == math.inf:
            wrong(f"{name}: count the bytes again: the weights are read once per step for the whole batch, "
                  "only the caches grow with B, and this cache holds 8-bit numbers (1 byte each) for "
                  "the key/value heads only.")
        for changed, message in variants.values():
            other = decode_batches(changed)[name]
            if other != math.inf and not _same_batch(other, expected) and _same_batch(value, other):
                wrong(f"{name}: {message}")
        compare(value, expected, f"the batch for {name}", rtol=0.01, atol=1, rounding_hint=False,
                hint="Write the step's FLOPs and bytes as functions of B (the weights are read once, each "
                     "sequence reads its own cache), then solve FLOPs / bytes = the H100's FLOP/s over its bytes/s.")
    wrong("the batch sizes are not right: write the step's FLOPs per byte as a function of B.")


def _same_batch(got, expected):
    """True when ``got`` is the exact batch (up to 1%), its next whole number, or both are "never"."""
    if expected == math.inf or got == math.inf:
        return got == expected
    return abs(got - expected) <= 0.01 * expected or got == math.ceil(expected)


def _close(a, b, *, rtol, atol):
    return abs(a - b) <= atol + rtol * abs(b)


# --------------------------------------------------------------------------- parameter count

def _param_count(d, h, d_k=None, d_v=None, n_kv_heads=None, bias=False):
    """Parameters of one attention sublayer: W_Q, W_K, W_V, W_O (and their biases); d_v defaults to d_k."""
    d_k = d // h if d_k is None else d_k
    d_v = d_k if d_v is None else d_v
    g = h if n_kv_heads is None else n_kv_heads
    weights = d * h * d_k + d * g * d_k + d * g * d_v + h * d_v * d  # W_Q + W_K + W_V + W_O
    biases = h * d_k + g * d_k + g * d_v + d  # b_Q + b_K + b_V + b_O
    return weights + (biases if bias else 0)


# (d, h, keyword arguments, description); keywords are passed only when a case needs them.
_COUNT_CASES = (
    (768, 12, {}, "d=768, h=12, no biases"),
    (768, 12, {"bias": True}, "d=768, h=12, bias=True (GPT-2 small, one layer)"),
    (3072, 16, {"d_k": 256}, "d=3072, h=16, d_k=256 (Gemma 7B: h*d_k is wider than d)"),
    (10, 2, {"d_k": 8, "bias": True}, "d=10, h=2, d_k=8, bias=True"),
    (4096, 32, {"n_kv_heads": 8}, "d=4096, h=32, n_kv_heads=8 (grouped-query attention, Llama 3 8B)"),
    (12, 4, {"bias": True, "n_kv_heads": 2}, "d=12, h=4, n_kv_heads=2, bias=True"),
    (64, 8, {"n_kv_heads": 1}, "d=64, h=8, n_kv_heads=1 (multi-query attention)"),
    (512, 8, {"d_v": 32}, "d=512, h=8, d_v=32 (values half as wide as keys)"),
    (10, 2, {"d_k": 8, "d_v": 3, "bias": True}, "d=10, h=2, d_k=8, d_v=3, bias=True"),
    (4096, 32, {"n_kv_heads": 8, "d_v": 256, "bias": True}, "d=4096, h=32, n_kv_heads=8, d_v=256, bias=True"),
)


def _count_mistakes(d, h, d_k=None, d_v=None, n_kv_heads=None, bias=False):
    k = d // h if d_k is None else d_k
    v = k if d_v is None else d_v
    g = h if n_kv_heads is None else n_kv_heads
    right = _param_count(d, h, d_k=d_k, d_v=d_v, n_kv_heads=n_kv_heads, bias=bias)
    weights = _param_count(d, h, d_k=d_k, d_v=d_v, n_kv_heads=n_kv_heads)
    naive = ("4·d·d is right only when h·d_k = h·d_v = d, n_kv_heads = h and there are no biases. "
             "Count each matrix from d, h, d_k, d_v and n_kv_heads.")
    return [
        (weights if bias else None, "you left out the biases. With bias=True, add one bias per output column "
                                    "of each matrix."),
        (None if bias else _param_count(d, h, d_k=d_k, d_v=d_v, n_kv_heads=n_kv_heads, bias=True),
         "you counted biases although bias=False."),
        (_param_count(d, h, d_k=d_k, d_v=d_v, bias=bias) if g != h else None,
         "you ignored n_kv_heads. W_K and W_V have n_kv_heads columns per head width, not h."),
        (_param_count(d, h, d_k=d, d_v=d_v, n_kv_heads=n_kv_heads, bias=bias) if d_k is None else None,
         "when d_k is not given, it defaults to d // h, not d."),
        (_param_count(d, h, d_k=d_k, n_kv_heads=n_kv_heads, bias=bias) if v != k else None,
         "you ignored d_v. Where do the values' widths appear? Think of the matrix that makes the "
         "values and the matrix that reads the joined heads."),
        (right - h * v * d + h * k * d if v != k else None,
         "W_O reads the joined heads: its rows count the heads' value widths, not their key widths."),
        (right - h * k * d + d * d if h * k != d else None,
         "W_Q (d × h·d_k) holds d·h·d_k weights, not d·d: h·d_k can differ from d."),
        (weights + 4 * d if bias else None,
         "the biases are one per output column of each matrix, not 4·d."),
        (4 * d * d, naive),
        (4 * d * d + 4 * d, naive),
    ]


_COUNT_CALL = ("attention_param_count(d, h), adding d_k=..., d_v=..., bias=... or n_kv_heads=... as keywords "
               "when a case needs them")


def _uses_library(func) -> bool:
    """True when ``func`` is a function of the library, or its code (or an inner function's) reaches it.

    A light check: it sees the names ``mha`` and ``costs`` in the code, and any name of the code that
    the function's globals bind to a module or function of ``mha`` (``from mha.costs import
    attention_param_count as count`` included); it cannot see a call made through ``getattr``.
    """
    try:
        if str(getattr(func, "__module__", "") or "").split(".")[0] == "mha":
            return True
        scope = getattr(func, "__globals__", None) or {}
        for cell in getattr(func, "__closure__", None) or ():  # names bound in an enclosing function
            if _from_library(cell.cell_contents, func):
                return True
        codes = [getattr(func, "__code__", None)]
        while codes:
            code = codes.pop()
            if not isinstance(code, types.CodeType):
                continue
            for name in code.co_names:
                if name in ("mha", "costs"):
                    return True
                if isinstance(scope, dict) and _from_library(scope.get(name), func):
                    return True
            codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    except Exception:
        return False
    return False


def _from_library(obj, func) -> bool:
    """True when ``obj`` (not ``func`` itself) is a module or a function of ``mha``."""
    if obj is None or obj is func:
        return False
    where = obj.__name__ if isinstance(obj, types.ModuleType) else getattr(obj, "__module__", "")
    return isinstance(where, str) and where.split(".")[0] == "mha"


@checker("ex-param-count", kind="code")
def check_param_count(count_func):
    """The learner's ``attention_param_count(d, h)``, keywords ``d_k``, ``d_v``, ``bias``, ``n_kv_heads``."""
    for d, h, options, case in _COUNT_CASES:
        got = call_learner(count_func, d, h, name="attention_param_count", case=case,
                           signature=_COUNT_CALL, **options)
        value = answer_array(got, f"the count for {case}")
        if value.shape != ():
            wrong(f"the count for {case} has shape {value.shape}; return one whole number.")
        compare(value, _param_count(d, h, **options), f"the count for {case}", atol=1e-6, rtol=0,
                mistakes=_count_mistakes(d, h, **options), mistake_prefix=f"For {case}: ",
                rounding_hint=False,
                hint="Count each matrix from its shape (how many columns does each projection make, "
                     "how many rows does W_O read?), then the biases if bias=True.")
    if _uses_library(count_func):
        wrong("your counts are right, but your function uses the library `mha`, which already counts "
              "parameters. Write the count yourself from the shapes of the four matrices.")
    return (f"your count is right on all {len(_COUNT_CASES)} cases: GPT-2 small, Gemma 7B's wide heads, "
            "grouped- and multi-query attention, values of another width.")
