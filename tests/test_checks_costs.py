"""Checkers of the costs chapter: accept the reference, name the classic mistakes, survive junk."""

import numpy as np
import pytest

from mha.checks import check, labels
from mha.checks.costs import FLOP_TASK, KV_TASK
from mha.costs import attention_flops, kv_cache_bytes

KV = kv_cache_bytes(KV_TASK["n_layers"], KV_TASK["n_kv_heads"], KV_TASK["d_k"], KV_TASK["T"],
                    bytes_per_value=KV_TASK["bytes_per_value"])
FLOPS = attention_flops(FLOP_TASK["T"], FLOP_TASK["d"], FLOP_TASK["h"], d_k=FLOP_TASK["d_k"],
                        n_kv_heads=FLOP_TASK["n_kv_heads"])
PROJ, ATT = FLOPS.projections, FLOPS.scores + FLOPS.weighted_sum
JUNK = [None, ..., "640 MiB", b"x", [1, 2, 3], {"a": 1}, np.nan, np.inf, print, object(),
        np.ones((2, 2)), [[1], [2, 3]]]


def test_labels_are_registered_as_numeric():
    assert labels()["ex-kv-cache-size"] == "numeric"
    assert labels()["ex-attention-flops"] == "numeric"


# ---- KV cache -------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", [KV, float(KV), np.int64(KV), np.array(KV), 40 * 4096 * 2 * 8 * 128 * 2])
def test_kv_accepts_the_reference(answer):
    assert check("ex-kv-cache-size", answer).status == "correct"


@pytest.mark.parametrize("answer, words", [
    (KV * 5, "query heads"),
    (KV // 2, "half"),
    (KV // 4, "quarter"),
    (KV // 40, "ONE layer"),
    (KV // 4096, "ONE token"),
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

@pytest.mark.parametrize("answer", [(PROJ, ATT), [float(PROJ), float(ATT)], np.array([PROJ, ATT])])
def test_flops_accept_the_reference(answer):
    assert check("ex-attention-flops", answer).status == "correct"


def test_flops_reference_is_what_the_exercise_text_says():
    T, d, h, g, d_k = (FLOP_TASK[k] for k in ("T", "d", "h", "n_kv_heads", "d_k"))
    assert PROJ == 2 * T * (2 * d * h * d_k + 2 * d * g * d_k)
    assert ATT == 4 * T * T * h * d_k


@pytest.mark.parametrize("answer, words", [
    ((8 * 4096 * 8192**2, ATT), "own keys"),
    ((PROJ // 2, ATT), "multiply-add is 2 FLOPs"),
    ((2 * 4096 * 8192 * 128 * (64 + 16), ATT), "W_O"),
    ((2 * 4096 * 8192 * 128 * (128 + 8), ATT), "each of them once"),
    ((PROJ, ATT // 2), "both the scores"),
    ((PROJ, ATT // 64), "ONE head"),
    ((PROJ, ATT // 8), "n_kv_heads heads"),
    ((PROJ + 10, ATT), "projections is too large"),
    ((PROJ, ATT * 3), "attention is too large"),
    ((PROJ,), "pair"),
    ((PROJ, ATT, 0), "pair"),
    (PROJ + ATT, "pair"),
])
def test_flops_name_the_mistake(answer, words):
    verdict = check("ex-attention-flops", answer)
    assert verdict.status == "wrong"
    assert words in verdict.message


@pytest.mark.parametrize("junk", JUNK + [(..., ...), (PROJ, ...), (None, ATT), ("a", "b"), (print, 1),
                                         (np.nan, ATT), (PROJ, np.ones(2))])
def test_flops_survive_junk(junk):
    verdict = check("ex-attention-flops", junk)
    assert verdict.status in ("wrong", "not done")
    assert verdict.message
    assert str(PROJ) not in verdict.message and str(ATT) not in verdict.message


def test_flops_stub_is_not_done():
    assert check("ex-attention-flops", (..., ...)).status == "not done"
