"""Checkers of chapters 5-7 and the rank-bound appendix: accept the reference, name the classic
mistakes, survive junk."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha
from mha.checks import check
from mha.checks.chapters_5_7 import weights_for_q

JUNK = [None, ..., "hello", b"bytes", [1, [2, 3]], float("nan"), float("inf"), {"a": 1}, True,
        np.zeros((3, 3)), [], object()]


def status(label, answer):
    return check(label, answer).status


def message(label, answer):
    return check(label, answer).message


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


# ---- ex-shapes-768 -----------------------------------------------------------------------------

REF_768 = {"d_k": 64, "W_Q_i": (768, 64), "W_O": (768, 768), "free": {"d_k", "W_O rows"}}


def with_(**changes):
    return {**REF_768, **changes}


def test_shapes_768_accepts_reference_and_spellings():
    assert status("ex-shapes-768", REF_768) == "correct"
    assert status("ex-shapes-768", with_(free=["W_O_rows", "w_q_i cols"], W_Q_i=[768.0, 64.0])) == "correct"


def test_shapes_768_stub_is_not_done():
    assert status("ex-shapes-768", {"d_k": ..., "W_Q_i": ..., "W_O": ..., "free": ...}) == "not done"
    assert status("ex-shapes-768", with_(free=...)) == "not done"


@pytest.mark.parametrize("changes, words", [
    (dict(d_k=768), "all heads together"),
    (dict(d_k=9216), "multiplied by h"),
    (dict(d_k=32), "d_k"),
    (dict(W_Q_i=(64, 768)), "transposed"),
    (dict(W_Q_i=(768, 768)), "stacked W_Q"),
    (dict(W_Q_i=(768, 32)), "does not fit"),
    (dict(W_Q_i="768x64"), "pair"),
    (dict(W_O=(64, 768)), "one head's block"),
    (dict(W_O=(768, 512)), "does not fit"),
    (dict(free={"d_k", "W_O rows", "W_O cols"}), "added to the stream"),
    (dict(free={"d_k", "W_O rows", "W_Q_i rows"}), "reads a row of the stream"),
    (dict(free={"W_O rows"}), "Nothing outside the sublayer"),
    (dict(free={"d_k"}), "concatenated head outputs"),
    (dict(free={"d_k", "h"}), "not one of"),
    (dict(free=64), "set of names"),
])
def test_shapes_768_names_mistakes(changes, words):
    v = check("ex-shapes-768", with_(**changes))
    assert v.status == "wrong" and words in v.message, v.message


def test_shapes_768_missing_keys_and_wrong_type():
    v = check("ex-shapes-768", {"d_k": 64})
    assert v.status == "wrong" and "'W_Q_i'" in v.message
    assert "dict" in message("ex-shapes-768", [64, (768, 64)])


# ---- ex-q-love ---------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(q=st.floats(-50.0, 50.0))
def test_q_love_accepts_exactly_the_qs_that_work(q):
    works = weights_for_q(q)[1] > 0.95
    assert (status("ex-q-love", q) == "correct") == bool(works)


@pytest.mark.parametrize("answer, words", [
    (2.0, "largest key wins"),
    (0.97, "looks like a weight"),
    (0, "each token gets a third"),
    (-1.0, "right direction"),
    ([-4, -5], "one number"),
    (True, "truth value"),
    ("-4", "text"),
])
def test_q_love_names_mistakes(answer, words):
    v = check("ex-q-love", answer)
    assert v.status == "wrong" and words in v.message, v.message


# ---- ex-q-llms ---------------------------------------------------------------------------------

@pytest.mark.parametrize("answer", ["impossible", "Impossible!", " none ", "No such q", "not possible"])
def test_q_llms_accepts_impossible(answer):
    v = check("ex-q-llms", answer)
    assert v.status == "correct" and "1/3" in v.message


@settings(max_examples=40, deadline=None)
@given(q=st.floats(-1e6, 1e6))
def test_q_llms_every_number_is_wrong_and_explained(q):
    v = check("ex-q-llms", q)
    assert v.status == "wrong"
    assert "no q exists" in v.message and "cosh" in v.message


def test_q_llms_search_reports_best_and_not_done_differs():
    v = check("ex-q-llms", np.linspace(-3, 3, 61))
    assert v.status == "wrong" and "of the 61 values" in v.message and "0.333" in v.message
    assert status("ex-q-llms", ...) == "not done"
    assert status("ex-q-llms", None) == "not done"


@pytest.mark.parametrize("answer, words", [
    ("maybe", "not a q"), (False, "truth value"), ([], "empty")])
def test_q_llms_other_answers(answer, words):
    v = check("ex-q-llms", answer)
    assert v.status == "wrong" and words in v.message


def test_no_q_passes_one_third():
    # The fact the checker relies on, checked independently on a fine grid.
    q = np.linspace(-20, 20, 40001)
    w = weights_for_q(q)[:, 2]
    assert w.max() == pytest.approx(1 / 3) and q[w.argmax()] == pytest.approx(0)
    winners = set(weights_for_q(q[np.abs(q) > 1e-9]).argmax(axis=1).tolist())
    assert winners == {0, 1}  # "I" or "love", never "LLMs"


# ---- ex-tight-scores ---------------------------------------------------------------------------

def centred(A):
    L = np.log(A)
    return L - L.mean(axis=1, keepdims=True)


def test_tight_scores_accepts_reference_and_other_valid_shifts():
    assert status("ex-tight-scores", centred) == "correct"
    assert status("ex-tight-scores", lambda A: np.log(A) - np.log(A)[:, :1]) == "correct"


@pytest.mark.parametrize("func, words", [
    (np.log, "log A itself"),
    (lambda A: np.log(A) + np.arange(len(A))[:, None], "still has full rank"),
    (lambda A: np.log(A) - np.log(A).mean(axis=0), "column's mean"),
    (lambda A: A - A.mean(axis=1, keepdims=True), "softmax(S) is not A"),
    (lambda A: centred(A)[:2], "shape"),
    (lambda A: None, "returns None"),
])
def test_tight_scores_names_mistakes(func, words):
    v = check("ex-tight-scores", func)
    assert v.status != "correct" and words in v.message, v.message


# ---- junk survives everywhere ------------------------------------------------------------------

@pytest.mark.parametrize("label", ["ex-bleu-gaps", "ex-layer-sizes", "ex-shapes-768", "ex-q-love",
                                   "ex-q-llms", "ex-tight-scores"])
@pytest.mark.parametrize("junk", JUNK, ids=repr)
def test_junk_gets_a_verdict_not_an_exception(label, junk):
    v = check(label, junk)
    assert v.status in ("wrong", "not done") and v.message
