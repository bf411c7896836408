"""Checkers of book/06_how_many_heads.md (mha.checks.how_many_heads): accept the reference, name the classic mistakes."""

import numpy as np
import pytest

import mha
from mha.checks import check


def status(label, answer):
    return check(label, answer).status


# ---- ex-bleu-gaps ------------------------------------------------------------------------------

def test_bleu_gaps_accepts_reference():
    assert status("ex-bleu-gaps", (0.9, 0.4)) == "correct"
    assert status("ex-bleu-gaps", np.array([0.9, 0.4])) == "correct"


@pytest.mark.parametrize("answer, words", [
    ((-0.9, -0.4), "negative"),
    ((0.4, 0.9), "swapped"),
    ((0.38, 0.10), "perplexity"),
    ((24.9, 25.4), "BLEU scores themselves"),
    ((0.9,), "two numbers"),
    ((0.8, 0.4), "BLEU losses"),
    ((0.0349, 0.0155), "relative losses"),
    ((3.49, 1.55), "relative losses"),
    ((3.61, 1.57), "relative losses"),
    ((0.3, 0.0), "neighbouring rows"),
    ((0.3, 0.4), "the row h = 4"),
    ((0.9, 0.0), "row h = 16"),
    ((0.9, 0.5), "compares h = 32 with h = 1"),
])
def test_bleu_gaps_names_mistakes(answer, words):
    v = check("ex-bleu-gaps", answer)
    assert v.status == "wrong" and words in v.message, v.message


def test_bleu_gaps_points_to_the_method_for_other_numbers():
    v = check("ex-bleu-gaps", (1.7, 0.2))
    assert v.status == "wrong" and "largest number in the last column" in v.message


# ---- ex-layer-sizes ----------------------------------------------------------------------------

def test_layer_sizes_accepts_reference():
    assert status("ex-layer-sizes", lambda d, h, T: (4 * d * d, h * T * T)) == "correct"


def test_layer_sizes_agrees_with_mha_costs():
    def via_costs(d, h, T):
        return mha.costs.attention_param_count(d, h), mha.costs.score_entries(T, h)
    assert status("ex-layer-sizes", via_costs) == "correct"


@pytest.mark.parametrize("func, words", [
    (lambda d, h, T: (4 * d * (d // h), h * T * T), "one head only"),
    (lambda d, h, T: (3 * d * d, h * T * T), "leaves out W_O"),
    (lambda d, h, T: (4 * d * d + 4 * d, h * T * T), "biases"),
    (lambda d, h, T: (4 * d * d, T * T), "one score map"),
    (lambda d, h, T: (4 * d * d, h * T * (d // h)), "entries of the queries"),
    (lambda d, h, T: (4 * d * d, T * T * d), "multiplies by d"),
    (lambda d, h, T: 4 * d * d, "pair"),
    (lambda d, h, T: 1 / 0, "ZeroDivisionError"),
])
def test_layer_sizes_names_mistakes(func, words):
    v = check("ex-layer-sizes", func)
    assert v.status == "wrong" and words in v.message, v.message


def test_layer_sizes_stub_is_not_done():
    def stub(d, h, T):
        raise NotImplementedError
    assert status("ex-layer-sizes", stub) == "not done"


# ---------------------------------------------------------------- ex-lookup-variant
import dataclasses  # noqa: E402

import pytest  # noqa: E402

from mha import training  # noqa: E402
from mha.checks import check  # noqa: E402


@pytest.fixture(scope="module")
def one_key_runs():
    return [training.dictionary_lookup(h, n_keys=1, steps=150) for h in (1, 16)]


def test_lookup_variant_accepts_a_prediction_that_matches_the_run(one_key_runs):
    best = max(one_key_runs, key=lambda r: r.accuracy).h
    verdict = check("ex-lookup-variant", {"best": best, "runs": one_key_runs})
    assert verdict.status == "correct", verdict.message


def test_lookup_variant_rejects_a_prediction_the_run_contradicts(one_key_runs):
    worst = min(one_key_runs, key=lambda r: r.accuracy).h
    verdict = check("ex-lookup-variant", {"best": worst, "runs": one_key_runs})
    assert verdict.status == "wrong" and "says otherwise" in verdict.message


def test_lookup_variant_rejects_a_typed_in_result(one_key_runs):
    forged = [dataclasses.replace(r, accuracy=1.0) if r.h == 16 else r for r in one_key_runs]
    verdict = check("ex-lookup-variant", {"best": 16, "runs": forged})
    assert verdict.status == "wrong" and "does not match" in verdict.message


def test_lookup_variant_needs_one_of_the_two_variants():
    runs = [training.dictionary_lookup(h, n_keys=2, steps=5) for h in (1, 2)]
    verdict = check("ex-lookup-variant", {"best": 2, "runs": runs})
    assert verdict.status == "wrong" and "variants" in verdict.message


@pytest.mark.parametrize("answer", [None, 3, {"best": 1}, {"best": 1, "runs": "x"}, {"best": 1, "runs": [1, 2]},
                                    {"best": ..., "runs": ...}])
def test_lookup_variant_survives_junk(answer):
    verdict = check("ex-lookup-variant", answer)
    assert verdict.status in ("wrong", "not done")


def test_lookup_variant_refuses_a_best_it_did_not_run(one_key_runs):
    for best in (3, True, "1"):
        verdict = check("ex-lookup-variant", {"best": best, "runs": one_key_runs})
        assert verdict.status == "wrong" and "head counts you ran" in verdict.message
