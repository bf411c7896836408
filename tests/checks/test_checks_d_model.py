"""Checkers of book/07_d_model.md (mha.checks.d_model): accept the reference, name the classic mistakes."""

import pytest

from mha.checks import check
from mha.checks.d_model import n_weights


def status(label, answer):
    return check(label, answer).status


def message(label, answer):
    return check(label, answer).message


# ---- ex-shapes-768 -----------------------------------------------------------------------------
# d_model = 768, h = 12, d_k = 32, d_v = 128, d_ff = 3072, pretrained vectors 300 wide.

REF_768 = {"W_O": (1536, 768), "W_1": (768, 3072), "n_weights": 2_949_120,
           "must_change": {"W_Q_i rows", "W_O cols", "W_1 rows", "projection cols"}}


def with_(**changes):
    return {**REF_768, **changes}


def test_the_count_is_the_four_shapes_multiplied_out():
    shapes = [(768, 12 * 32), (768, 12 * 32), (768, 12 * 128), (12 * 128, 768)]
    assert n_weights() == sum(r * c for r, c in shapes) == 2_949_120


def test_shapes_768_accepts_reference_and_spellings():
    assert status("ex-shapes-768", REF_768) == "correct"
    assert status("ex-shapes-768", with_(must_change=["w_q_i rows", "W_O_cols", "w1 rows", "Projection cols"],
                                         W_O=[1536.0, 768.0], n_weights=2949120.0)) == "correct"


def test_shapes_768_stub_is_not_done():
    assert status("ex-shapes-768", {k: ... for k in REF_768}) == "not done"
    assert status("ex-shapes-768", with_(must_change=...)) == "not done"


@pytest.mark.parametrize("changes, words", [
    (dict(W_O=(768, 1536)), "transposed"),
    (dict(W_O=(384, 768)), "not d_k"),
    (dict(W_O=(768, 768)), "untied heads"),
    (dict(W_O=(128, 768)), "one head's block"),
    (dict(W_O=(1000, 768)), "does not fit"),
    (dict(W_O="rows x cols"), "pair"),
    (dict(W_1=(3072, 768)), "transposed"),
    (dict(W_1=(768, 768)), "does not fit"),
    (dict(n_weights=4 * 768 * 768), "untied"),
    (dict(n_weights=4 * 768 * 384), "W^V and W^O work with the values"),
    (dict(n_weights=4 * 768 * 1536), "W^Q and W^K make queries"),
    (dict(n_weights=2 * 768 * 32 + 2 * 768 * 128), "one head's share"),
    (dict(n_weights=2_949_120 + 2 * 768 * 3072), "feed-forward"),
    (dict(n_weights=3_000_000), "four products"),
    (dict(must_change=REF_768["must_change"] | {"W_Q_i cols"}), "query width d_k"),
    (dict(must_change=REF_768["must_change"] | {"W_O rows"}), "h times d_v"),
    (dict(must_change=REF_768["must_change"] | {"W_1 cols"}), "inner width d_ff"),
    (dict(must_change=REF_768["must_change"] | {"projection rows"}), "still 300 wide"),
    (dict(must_change={"W_Q_i rows", "W_O cols"}), "feed-forward sublayer reads the stream"),
    (dict(must_change={"W_Q_i rows", "W_O cols", "W_1 rows"}), "writes the word vectors into the stream"),
    (dict(must_change={"W_O cols", "W_1 rows", "projection cols"}), "reads a row of the stream"),
    (dict(must_change={"W_Q_i rows", "W_1 rows", "projection cols"}), "added to the stream"),
    (dict(must_change={"d_k", "h"}), "not one of"),
    (dict(must_change=64), "set of names"),
])
def test_shapes_768_names_mistakes(changes, words):
    v = check("ex-shapes-768", with_(**changes))
    assert v.status == "wrong" and words in v.message, v.message
    assert "2,949,120" not in v.message and "2949120" not in v.message and "1536" not in v.message


def test_shapes_768_missing_keys_and_wrong_type():
    v = check("ex-shapes-768", {"W_O": (1536, 768)})
    assert v.status == "wrong" and "'W_1'" in v.message
    assert "dict" in message("ex-shapes-768", [64, (768, 64)])
