"""Checkers of book/08_costs.md (mha.checks.costs): accept the reference, name the classic mistakes, survive junk."""

import importlib.util

import numpy as np
import pytest

import mha

from mha.checks import check, labels
from mha.checks import costs
from mha.checks.costs import FLOP_TASK, KV_TASK
from mha.costs import attention_flops, kv_cache_bytes
from _verdicts import wrong as _wrong

KV = kv_cache_bytes(KV_TASK["n_layers"], KV_TASK["n_kv_heads"], KV_TASK["d_k"], KV_TASK["T"],
                    bytes_per_value=KV_TASK["bytes_per_value"])
T_X, SAVED = costs.flop_answers()
JUNK = [None, ..., "640 MiB", b"x", [1, 2, 3], {"a": 1}, np.nan, np.inf, print, object(),
        np.ones((2, 2)), [[1], [2, 3]]]


def test_labels_are_registered_as_numeric():
    assert labels()["ex-kv-cache-size"] == "numeric"
    assert labels()["ex-attention-flops"] == "numeric"


# ---- KV cache -------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [KV, float(KV), np.int64(KV), np.array(KV), 60 * 6000 * 2 * 3 * 96 * 1])
def test_kv_accepts_the_reference(answer):
    assert check("ex-kv-cache-size", answer).status == "correct"


@pytest.mark.parametrize("answer, words", [
    (KV * 16, "all 48 query heads"),
    (KV // 2, "half"),
    (KV * 2, "8-bit"),
    (KV * 4, "bytes per number (1 here)"),
    (KV // 60, "ONE layer"),
    (KV // 6000, "ONE token"),
    (KV / 2**20, "MiB"),
    (KV / 2**30, "GiB"),
    (KV / 1e6, "MB"),
    (KV + 1000, "too large"),
])
def test_kv_names_the_mistake(answer, words):
    verdict = check("ex-kv-cache-size", answer)
    assert verdict.status == "wrong"
    assert words in verdict.message


@pytest.mark.parametrize("junk", JUNK)
def test_kv_survives_junk(junk):
    verdict = check("ex-kv-cache-size", junk)
    assert verdict.status in ("wrong", "not done")
    assert verdict.message
    assert str(KV) not in verdict.message


def test_kv_stub_is_not_done():
    assert check("ex-kv-cache-size", ...).status == "not done"


# ---- FLOPs ----------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [(T_X, SAVED), [9216, 0.35], np.array([9216.0, 0.35]), (9216, 0.3504)])
def test_flops_accept_the_reference(answer):
    assert check("ex-attention-flops", answer).status == "correct"


def test_flops_reference_is_what_the_exercise_text_says():
    T, d, h, g, d_k = (FLOP_TASK[k] for k in ("T", "d", "h", "n_kv_heads", "d_k"))
    proj = lambda T_: 2 * T_ * (2 * d * h * d_k + 2 * d * g * d_k)  # noqa: E731
    assert proj(T_X) == 4 * T_X * T_X * h * d_k and T_X == 9216
    full, gqa = (attention_flops(T, d, h, d_k=d_k, n_kv_heads=k).total for k in (h, g))
    assert SAVED == pytest.approx((full - gqa) / full) and SAVED == pytest.approx(0.35)


@pytest.mark.parametrize("answer, words", [
    ((2 * 8192, SAVED), "own keys and values"),
    ((5120, SAVED), "W_O"),
    ((2 * T_X, SAVED), "scores alone"),
    ((73728, SAVED), "n_kv_heads heads"),
    ((T_X, 35.0), "percentage"),
    ((T_X, (1 - 0.65) / 0.65), "grouped-query count"),
    ((T_X, 56 / 128), "projections only"),
    ((T_X, 1 - 8 / 64), "does not shrink"),
    ((T_X + 10, SAVED), "T_cross is too large"),
    ((T_X, 0.2), "saved is too small"),
    ((T_X,), "pair"),
    ((T_X, SAVED, 0), "pair"),
])
def test_flops_name_the_mistake(answer, words):
    verdict = check("ex-attention-flops", answer)
    assert verdict.status == "wrong"
    assert words in verdict.message, verdict.message


@pytest.mark.parametrize("junk", JUNK + [(..., ...), (T_X, ...), (None, SAVED), ("a", "b"), (print, 1),
                                         (np.nan, SAVED), (T_X, np.ones(2))])
def test_flops_survive_junk(junk):
    verdict = check("ex-attention-flops", junk)
    assert verdict.status in ("wrong", "not done")
    assert verdict.message
    assert "9216" not in verdict.message and "9,216" not in verdict.message and "0.35" not in verdict.message


def test_flops_stub_is_not_done():
    assert check("ex-attention-flops", (..., ...)).status == "not done"


# ----------------------------------------------------------------------------- attention_param_count

def count_learner(d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None):
    d_k = d // h if d_k is None else d_k
    d_v = d_k if d_v is None else d_v
    n_kv = h if n_kv_heads is None else n_kv_heads
    q, k, v, o = d * h * d_k, d * n_kv * d_k, d * n_kv * d_v, h * d_v * d
    return q + k + v + o + ((h * d_k + n_kv * d_k + n_kv * d_v + d) if bias else 0)


def test_private_reference_semantics():
    assert costs._param_count(768, 12, bias=True) == 2_362_368          # GPT-2 small, one layer
    assert costs._param_count(768, 12) == 4 * 768 * 768
    assert costs._param_count(3072, 16, d_k=256) == 3072 * 4096 * 3 + 4096 * 3072  # Gemma 7B
    assert costs._param_count(4096, 32, n_kv_heads=8) == 2 * 4096 * 4096 + 2 * 4096 * 1024
    assert costs._param_count(12, 4, bias=True, n_kv_heads=2) == 12 * 12 * 2 + 2 * 12 * 6 + 12 + 12 + 12
    assert costs._param_count(512, 8, d_v=32) == 512 * 512 * 2 + 512 * 256 + 256 * 512
    assert costs._param_count(10, 2, d_k=8, d_v=3, bias=True) == 10 * 16 * 2 + 10 * 6 + 6 * 10 + 16 * 2 + 6 + 10


def test_private_reference_agrees_with_mha_costs():
    from mha.costs import attention_param_count

    for d, h, options, _ in costs._COUNT_CASES:
        if "d_v" in options:  # the library counts d_v = d_k only
            continue
        assert costs._param_count(d, h, **options) == attention_param_count(d, h, **options)
    for d, h, d_k, bias, g in [(8, 2, None, False, 1), (8, 4, 3, True, 2), (1, 1, None, True, None),
                               (96, 12, 16, True, 4), (576, 9, None, False, 3)]:
        assert (costs._param_count(d, h, d_k=d_k, n_kv_heads=g, bias=bias)
                == attention_param_count(d, h, d_k=d_k, bias=bias, n_kv_heads=g))


def test_count_accepts_the_library_and_learner_solutions():
    if importlib.util.find_spec("mha.costs") is not None:  # the library has no d_v: calling it fails
        assert not check("ex-param-count", mha.costs.attention_param_count).ok
    assert check("ex-param-count", count_learner).ok
    assert check("ex-param-count", lambda *a, **k: float(count_learner(*a, **k))).ok
    assert check("ex-param-count", lambda *a, **k: np.int64(count_learner(*a, **k))).ok


def _count_variant(change):
    def learner(d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None):
        k = d // h if d_k is None else d_k
        v = k if d_v is None else d_v
        g = h if n_kv_heads is None else n_kv_heads
        parts = {"W_Q": d * h * k, "W_KV": d * g * (k + v), "W_O": h * v * d,
                 "b": (h * k + g * (k + v) + d) if bias else 0}
        return change(parts, d=d, h=h, d_k=d_k, d_v=d_v, k=k, v=v, g=g, bias=bias)

    return learner


@pytest.mark.parametrize(
    ("func", "phrase"),
    [
        (lambda d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None: 4 * d * d, "left out the biases"),
        (lambda d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None: 4 * d * d + (4 * d if bias else 0),
         "4·d·d is right only when"),
        (_count_variant(lambda p, **_: p["W_Q"] + p["W_KV"] + p["W_O"]), "left out the biases"),
        (_count_variant(lambda p, d, h, k, v, g, **_: p["W_Q"] + p["W_KV"] + p["W_O"] + h * k + g * (k + v) + d),
         "although bias=False"),
        (_count_variant(lambda p, d, h, k, v, bias, **_: p["W_Q"] + d * h * (k + v) + p["W_O"]
                        + ((2 * h * k + h * v + d) if bias else 0)), "ignored n_kv_heads"),
        (_count_variant(lambda p, d, h, d_k, d_v, **_: count_learner(d, h, d if d_k is None else d_k, d_v)
                        if not p["b"] and d_v is None and p["W_KV"] == 2 * p["W_Q"] else sum(p.values())),
         "defaults to d // h"),
        (_count_variant(lambda p, d, h, d_k, g, bias, **_: count_learner(d, h, d_k, None, bias, g)),
         "ignored d_v"),
        (_count_variant(lambda p, d, h, k, **_: p["W_Q"] + p["W_KV"] + h * k * d + p["b"]),
         "not their key widths"),
        (_count_variant(lambda p, d, **_: d * d + p["W_KV"] + p["W_O"] + p["b"]), "W_Q (d × h·d_k) holds"),
        (_count_variant(lambda p, d, bias, **_: p["W_Q"] + p["W_KV"] + p["W_O"] + (4 * d if bias else 0)),
         "not 4·d"),
    ],
)
def test_count_names_each_classic_mistake(func, phrase):
    v = _wrong("ex-param-count", func, phrase)
    assert v.message.startswith("For d=")


def test_count_with_the_old_signature_is_told_the_expected_call():
    def old(d, h, d_k=None, bias=False, n_kv_heads=None):
        return count_learner(d, h, d_k, None, bias, n_kv_heads)

    v = _wrong("ex-param-count", old, "unexpected keyword argument 'd_v'")
    assert "The exercise calls it as `attention_param_count(d, h), adding d_k=" in v.message


@pytest.mark.parametrize(("returned", "phrase"),
                         [("2362368", "is text"), ([1, 2], "has shape (2,)"), (True, "yes/no"),
                          (2.5, "too small")])
def test_count_needs_one_number(returned, phrase):
    _wrong("ex-param-count", lambda *a, **k: returned, phrase)


def test_count_messages_do_not_state_the_expected_counts():
    expected = [costs._param_count(d, h, **options) for d, h, options, _ in costs._COUNT_CASES]
    learners = [lambda *a, **k: 1, lambda *a, **k: count_learner(*a, **k) + 1,
                lambda d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None: 4 * d * d]
    for learner in learners:
        message = check("ex-param-count", learner).message
        for count in expected:
            assert str(count) not in message and f"{count:,}" not in message


def test_flops_refuse_a_class_or_an_unreadable_length_with_the_pair_message():
    class BadLen:
        def __len__(self):
            raise RuntimeError("no length")

        def __getitem__(self, i):
            return 1

    for answer in (dict, tuple, BadLen()):
        v = _wrong("ex-attention-flops", answer, "should be a pair (T_cross, saved)")
        assert "could not be checked" not in v.message


# ---- decode batch ---------------------------------------------------------------------------

import math  # noqa: E402

from mha.checks.costs import DECODE_TASK, decode_batches  # noqa: E402

DEC = decode_batches()
H100 = 989e12 / 3350e9
B2 = DEC["Gemma 2B"]


def test_decode_reference_is_what_the_exercise_text_says():
    F = 2 * 2.5e9 + 4 * 18 * 8 * 256 * 1024
    C = 2 * 18 * 1 * 256 * 1024
    assert B2 == pytest.approx(2 * 2.5e9 * H100 / (F - H100 * C)) and 600 < B2 < 650
    assert DEC["Gemma 7B"] == math.inf  # F / C of one sequence is below the H100's ratio
    for name in ("Gemma 2B", "Gemma 7B"):
        m, t = mha.costs.get_model(name), DECODE_TASK[name]
        assert (m.h, m.n_kv_heads, m.n_layers, m.d_k) == (t["h"], t["n_kv_heads"], t["n_layers"], t["d_k"])
    # at B2 the step's FLOPs per byte equal the H100's, by the page's own count of a step
    assert B2 * F / (2 * 2.5e9 + B2 * C) == pytest.approx(H100)


@pytest.mark.parametrize("answer", [DEC, {"Gemma 2B": math.ceil(B2), "Gemma 7B": np.inf},
                                    {"Gemma 2B": round(B2), "Gemma 7B": float("inf")},
                                    {"Gemma 2B": np.float32(B2), "Gemma 7B": np.float64(np.inf)}])
def test_decode_accepts_the_reference(answer):
    v = check("ex-decode-intensity", answer)
    assert v.ok and "no batch" in v.message


def _b2(**changes):
    return decode_batches({**DECODE_TASK, **changes})["Gemma 2B"]


@pytest.mark.parametrize("answer, words", [
    ({"Gemma 2B": np.inf, "Gemma 7B": B2}, "swapped"),
    ({"Gemma 2B": _b2(tflops=312, gbs=2039), "Gemma 7B": np.inf}, "A100's figures"),
    ({"Gemma 2B": _b2(**{"Gemma 2B": {**DECODE_TASK["Gemma 2B"], "h": 0}}), "Gemma 7B": np.inf},
     "left out the FLOPs of the attention"),
    ({"Gemma 2B": _b2(weight_bytes=1), "Gemma 7B": np.inf}, "2 bytes each"),
    ({"Gemma 2B": _b2(tflops=0.989), "Gemma 7B": np.inf}, "units"),
    ({"Gemma 2B": np.inf, "Gemma 7B": np.inf}, "Gemma 2B: count the bytes again"),
    ({"Gemma 2B": B2, "Gemma 7B": 300.0}, "Gemma 7B: check whether any batch"),
    ({"Gemma 2B": 2 * B2, "Gemma 7B": np.inf}, "too large"),
    ({"Gemma 2B": 1.0}, "no 'Gemma 7B' key"),
    ([B2, np.inf], "give a dict"),
])
def test_decode_names_the_mistake(answer, words):
    v = _wrong("ex-decode-intensity", answer, words)
    assert f"{B2:.0f}" not in v.message and str(math.ceil(B2)) not in v.message


@pytest.mark.parametrize("junk", JUNK + [dict, {"Gemma 2B": ..., "Gemma 7B": ...}, {"Gemma 2B": "x", "Gemma 7B": 1},
                                         {"Gemma 2B": np.nan, "Gemma 7B": 1}, {"Gemma 2B": [1, 2], "Gemma 7B": 1},
                                         {"Gemma 2B": -np.inf, "Gemma 7B": np.inf}])
def test_decode_survives_junk(junk):
    v = check("ex-decode-intensity", junk)
    assert v.status in ("wrong", "not done") and v.message


def test_decode_stub_is_not_done():
    assert check("ex-decode-intensity", {"Gemma 2B": ..., "Gemma 7B": ...}).status == "not done"


# ---- the learner's count must not call the library ---------------------------------------------

def test_count_that_calls_the_library_is_refused():
    def calls_library(d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None):
        if d_v is None:
            return mha.costs.attention_param_count(d, h, d_k=d_k, bias=bias, n_kv_heads=n_kv_heads)
        return count_learner(d, h, d_k, d_v, bias, n_kv_heads)

    from mha.costs import attention_param_count as library_count

    def imported(d, h, d_k=None, d_v=None, bias=False, n_kv_heads=None):
        if d_v is None:
            return library_count(d, h, d_k=d_k, bias=bias, n_kv_heads=n_kv_heads)
        return count_learner(d, h, d_k, d_v, bias, n_kv_heads)

    for func in (calls_library, imported):
        _wrong("ex-param-count", func, "uses the library")
