"""Tests of the numeric checkers of chapters 2-4 (src/mha/checks/chapters_2_4.py).

For every checker: the reference answer passes, each classic wrong answer is named,
junk never raises, and no message gives the expected numbers away.
"""

import numpy as np
import pytest

import mha
from mha.checks import check
from mha.checks.chapters_2_4 import (
    COMPROMISE_TARGETS,
    blend_outputs,
    score_variance,
    shapes_512,
)
from mha.fitting import best_single_row

JUNK = [None, ..., "0.5", 3, [1, 2], [[1, 2], [3]], {"a": 1}, np.array([np.nan] * 3), object(),
        lambda: 1]


def _steps():
    ex = mha.examples.i_love_llms()
    return mha.attention_steps(ex.X, *ex.weights, h=ex.h)


def _status(label, answer):
    verdict = check(label, answer)
    assert verdict.status in ("correct", "wrong", "not done")
    return verdict


# ---- ex-compromise-row ---------------------------------------------------------------------

def test_compromise_accepts_reference_and_page_rounding():
    row = best_single_row(COMPROMISE_TARGETS).row
    assert _status("ex-compromise-row", row).ok
    assert _status("ex-compromise-row", row.round(2).tolist()).ok
    np.testing.assert_allclose(row, np.mean(COMPROMISE_TARGETS, axis=0))


@pytest.mark.parametrize("answer, phrase", [
    ([0.45, 0.1, 0.45], "first two relations only"),
    (np.sum(COMPROMISE_TARGETS, axis=0), "sum to 3"),
    (list(COMPROMISE_TARGETS[2]), "target 3 itself"),
    (list(COMPROMISE_TARGETS[0]), "target 1 itself"),
    (np.exp(np.log(COMPROMISE_TARGETS).mean(0)) / np.exp(np.log(COMPROMISE_TARGETS).mean(0)).sum(),
     "geometric mean"),
    ([0.2, 0.6, 0.2], "differs at index"),
    ([0.45, 0.1, 0.45, 0.0], "expected shape"),
    ([0.5, 0.5], "expected shape"),
])
def test_compromise_names_mistakes(answer, phrase):
    verdict = _status("ex-compromise-row", answer)
    assert verdict.status == "wrong" and phrase in verdict.message


# ---- ex-one-hot-blend ----------------------------------------------------------------------

def test_blend_reference_and_its_lesson():
    ref = blend_outputs()
    assert _status("ex-one-hot-blend", ref).ok
    assert _status("ex-one-hot-blend", {k: v.tolist() for k, v in ref.items()}).ok
    # The point of the exercise: one head cannot tell the two roles apart, two heads can.
    np.testing.assert_array_equal(ref["one_head"], ref["one_head_swapped"])
    assert not np.array_equal(ref["two_heads"], ref["two_heads_swapped"])


@pytest.mark.parametrize("edit, phrase", [
    (lambda r: {**r, "two_heads": r["two_heads"][:4] + r["two_heads"][4:]}, "added the two heads"),
    (lambda r: {**r, "two_heads": (r["two_heads"][:4] + r["two_heads"][4:]) / 2}, "averaged"),
    (lambda r: {**r, "two_heads_swapped": np.roll(r["two_heads_swapped"], 4)}, "wrong order"),
    (lambda r: {**r, "one_head": r["two_heads"]}, "expected shape"),
    (lambda r: {k: v for k, v in r.items() if k != "two_heads"}, "no 'two_heads' key"),
    (lambda r: {**r, "one_head": ...}, "not done"),
    (lambda r: {**r, "one_head": None}, "not done"),
    (lambda r: list(r.values()), "give a dict"),
])
def test_blend_names_mistakes(edit, phrase):
    verdict = _status("ex-one-hot-blend", edit(blend_outputs()))
    if phrase == "not done":
        assert verdict.status == "not done"
    else:
        assert verdict.status == "wrong" and phrase in verdict.message


# ---- ex-concat-row -------------------------------------------------------------------------

def test_concat_row_accepts_reference_and_two_decimals():
    s = _steps()
    assert _status("ex-concat-row", {"row": s.concat[1], "head1_columns": [0, 1]}).ok
    assert _status("ex-concat-row", {"row": s.concat[1].round(2).tolist(), "head1_columns": (1, 0)}).ok
    assert _status("ex-concat-row", {"row": s.concat[1], "head1_columns": np.array([0, 1])}).ok


def _concat_cases():
    s = _steps()
    A, Vh = s.weights, s.V_heads
    by2 = mha.softmax(s.scores / 2.0) @ Vh
    return [
        (s.concat[0], "row 1 of the concatenation"),
        (s.concat[2], "row 3 of the concatenation"),
        (np.concatenate([s.head_outputs[1, 1], s.head_outputs[0, 1]]), "wrong order"),
        (np.concatenate([A[0, 1] @ Vh[1], A[1, 1] @ Vh[0]]), "other head's value slice"),
        (np.concatenate([A[0, :, 1] @ Vh[0], A[1, :, 1] @ Vh[1]]), "column 2"),
        (np.concatenate([by2[0, 1], by2[1, 1]]), "sqrt(2)"),
        (s.output[1], "after W_O"),
        (s.concat[1, :2], "expected shape"),
    ]


@pytest.mark.parametrize("case", range(8))
def test_concat_row_names_mistakes(case):
    row, phrase = _concat_cases()[case]
    verdict = _status("ex-concat-row", {"row": row, "head1_columns": [0, 1]})
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


@pytest.mark.parametrize("cols, phrase", [
    ([1, 2], "counts columns from 0"),
    ([2, 3], "columns of head 2"),
    ([0, 2], "neighbouring columns"),
    ([0.0, 1.0], "whole numbers"),
    (0, "list of two column indices"),
    ("01", "whole numbers"),
])
def test_concat_row_checks_columns(cols, phrase):
    verdict = _status("ex-concat-row", {"row": _steps().concat[1], "head1_columns": cols})
    assert verdict.status == "wrong" and phrase in verdict.message


# ---- ex-shapes-512 -------------------------------------------------------------------------

def test_shapes_reference():
    ref = shapes_512()
    assert ref["Q"] == (10, 512) and ref["Q_i"] == (10, 64) and ref["concat"] == (10, 512)
    assert (ref["h_enters"], ref["h_leaves"]) == ("split", "concatenate")
    assert _status("ex-shapes-512", ref).ok
    loose = {**ref, "Q": [10, 512], "h_enters": " Split", "h_leaves": "concat"}
    assert _status("ex-shapes-512", loose).ok


@pytest.mark.parametrize("edit, phrase", [
    ({"Q": (512, 10)}, "swapped them"),
    ({"Q": (10, 64)}, "full model width"),
    ({"Q_i": (10, 512)}, "own slice"),
    ({"Q_i": (8, 10, 64)}, "all heads stacked"),
    ({"Q_i": (10, 8)}, "not h itself"),
    ({"concat": (8, 10, 64)}, "stack of heads"),
    ({"concat": (10, 64)}, "side by side"),
    ({"h_enters": "project"}, "never hears of h"),
    ({"h_enters": "attend"}, "first step"),
    ({"h_leaves": "output"}, "Where did the head axis go"),
    ({"h_leaves": "W_O"}, "Where did the head axis go"),
    ({"h_leaves": "somewhere"}, "use one of"),
    ({"h_enters": 3}, "stage names"),
    ({"Q": 512}, "should be a shape"),
    ({"Q": (10.5, 512)}, "whole numbers"),
    ({"Q": "10, 512"}, "whole numbers"),
])
def test_shapes_names_mistakes(edit, phrase):
    verdict = _status("ex-shapes-512", {**shapes_512(), **edit})
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


def test_shapes_depend_on_the_arguments():
    ref = shapes_512(n_tokens=3, d_model=12, h=3)
    assert ref["Q_i"] == (3, 4) and ref["h_enters"] == "split" and ref["h_leaves"] == "concatenate"


# ---- ex-score-variance ---------------------------------------------------------------------

def test_score_variance_reference_and_measured_values():
    ref = score_variance()
    assert ref == {"d_k": 64, "raw": 64.0, "scaled": 1.0}
    assert _status("ex-score-variance", ref).ok
    assert _status("ex-score-variance", {"d_k": 64, "raw": 62.9, "scaled": 0.98}).ok  # measured


def test_score_variance_matches_a_measurement():
    rng = np.random.default_rng(1)
    ref = score_variance()
    q, k = rng.standard_normal((2, 20_000, ref["d_k"]))
    raw = (q * k).sum(axis=1)
    assert abs(raw.var() / ref["raw"] - 1) < 0.05
    assert abs((raw / np.sqrt(ref["d_k"])).var() - ref["scaled"]) < 0.05


@pytest.mark.parametrize("edit, phrase", [
    ({"d_k": 256}, "model width"),
    ({"d_k": 4}, "number of heads"),
    ({"raw": 8}, "standard deviation"),
    ({"raw": 256}, "not d_model"),
    ({"raw": 1}, "variance after scaling"),
    ({"scaled": 0.25}, "sqrt(d_model)"),
    ({"scaled": 1 / 64}, "dividing by d_k"),
    ({"scaled": 8}, "not by sqrt(d_k)"),
    ({"scaled": 2}, "too large"),
    ({"d_k": [64, 64]}, "one number"),
])
def test_score_variance_names_mistakes(edit, phrase):
    verdict = _status("ex-score-variance", {**score_variance(), **edit})
    assert verdict.status == "wrong" and phrase in verdict.message, verdict.message


# ---- every checker: junk and secrecy -------------------------------------------------------

LABELS = ["ex-compromise-row", "ex-one-hot-blend", "ex-concat-row", "ex-shapes-512", "ex-score-variance"]


@pytest.mark.parametrize("label", LABELS)
@pytest.mark.parametrize("junk", range(len(JUNK)))
def test_junk_never_raises(label, junk):
    verdict = _status(label, JUNK[junk])
    assert not verdict.ok
    if JUNK[junk] is None or JUNK[junk] is Ellipsis:
        assert verdict.status == "not done"


@pytest.mark.parametrize("label", ["ex-one-hot-blend", "ex-concat-row", "ex-shapes-512", "ex-score-variance"])
@pytest.mark.parametrize("junk", range(len(JUNK)))
def test_junk_inside_the_dict_never_raises(label, junk):
    keys = {"ex-one-hot-blend": blend_outputs().keys(), "ex-concat-row": ["row", "head1_columns"],
            "ex-shapes-512": shapes_512().keys(), "ex-score-variance": ["d_k", "raw", "scaled"]}[label]
    for key in keys:
        answer = {k: (JUNK[junk] if k == key else "x") for k in keys}
        assert not _status(label, answer).ok


def _numbers_in(message):
    import re
    return {float(x) for x in re.findall(r"\d+\.\d+", message)}


@pytest.mark.parametrize("label, answer, secrets", [
    ("ex-compromise-row", [0.3, 0.3, 0.4], np.mean(COMPROMISE_TARGETS, axis=0).round(2)),
    ("ex-concat-row", {"row": [1, 1, 1, 1], "head1_columns": [0, 1]}, _steps().concat[1].round(2)),
    ("ex-score-variance", {"d_k": 64, "raw": 64, "scaled": 3}, [1.0]),
])
def test_messages_do_not_give_the_answer_away(label, answer, secrets):
    message = _status(label, answer).message
    assert not _numbers_in(message) & {float(x) for x in secrets}, message


def test_shape_messages_do_not_give_the_answer_away():
    for edit in ({"Q": (1, 1)}, {"Q_i": (1, 1)}, {"concat": (1, 1)}, {"h_enters": "output"},
                 {"h_leaves": "attend"}):
        message = _status("ex-shapes-512", {**shapes_512(), **edit}).message
        assert "64" not in message and "512" not in message and "'split'" not in message
