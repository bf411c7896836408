"""Checkers of book/07_d_model.md (mha.checks.d_model): accept the reference, name the classic mistakes."""

import pytest

from mha.checks import check


def status(label, answer):
    return check(label, answer).status


def message(label, answer):
    return check(label, answer).message


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
    (dict(free={"name", "other name"}), "not one of"),  # the page's placeholder: no concept verdict
])
def test_shapes_768_names_mistakes(changes, words):
    v = check("ex-shapes-768", with_(**changes))
    assert v.status == "wrong" and words in v.message, v.message


def test_shapes_768_missing_keys_and_wrong_type():
    v = check("ex-shapes-768", {"d_k": 64})
    assert v.status == "wrong" and "'W_Q_i'" in v.message
    assert "dict" in message("ex-shapes-768", [64, (768, 64)])
