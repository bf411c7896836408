"""Checkers of book/05_how_many_heads.md (mha.checks.how_many_heads): accept the reference, name the classic mistakes."""

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
])
def test_bleu_gaps_names_mistakes(answer, words):
    v = check("ex-bleu-gaps", answer)
    assert v.status == "wrong" and words in v.message


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
