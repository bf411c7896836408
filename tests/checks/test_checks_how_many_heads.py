"""Checkers of book/06_how_many_heads.md (mha.checks.how_many_heads): accept the reference, name the classic mistakes."""

import dataclasses

import numpy as np
import pytest

from mha import training
from mha.checks import check
from mha.checks.how_many_heads import _intact, _rescored, copy_baseline


def status(label, answer):
    return check(label, answer).status


# ---- ex-key-width-halving -----------------------------------------------------------------------
# Table 3 (B): dev perplexity 4.92 (d_k = 64, base), 5.01 (32), 5.16 (16); BLEU 25.8, 25.4, 25.1.
# BLEU falls 0.4 then 0.3 (the first halving costs more); perplexity rises 0.09 then 0.15 (the second).
REFERENCE = {"by BLEU": "first", "by perplexity": "second", "overall": "cannot tell"}


def test_halving_reference_follows_the_paper_rows():
    from mha.checks.how_many_heads import halving_costs
    assert halving_costs() == {"by BLEU": "first", "by perplexity": "second"}


@pytest.mark.parametrize("answer", [
    REFERENCE,
    {"by BLEU": "First", "by perplexity": "2nd", "overall": "can't tell"},
    {"by BLEU": " first ", "by perplexity": "second", "overall": "Cannot tell."},
])
def test_halving_accepts_reference(answer):
    v = check("ex-key-width-halving", answer)
    assert v.status == "correct", v.message
    assert "cannot say" in v.message and "shrank" in v.message


def test_halving_solution_code_is_accepted():
    from mha import papers
    chain = [papers.VASWANI2017_BASE] + sorted(papers.VASWANI2017_TABLE3_B, key=lambda r: -r.d_k)
    bleu = [a.dev_bleu - b.dev_bleu for a, b in zip(chain, chain[1:])]
    ppl = [b.dev_ppl - a.dev_ppl for a, b in zip(chain, chain[1:])]
    pick = lambda pair: "first" if pair[0] > pair[1] else "second"
    assert status("ex-key-width-halving", {"by BLEU": pick(bleu), "by perplexity": pick(ppl),
                                           "overall": "cannot tell"}) == "correct"


@pytest.mark.parametrize("change, words", [
    ({"by BLEU": "second"}, "BLEU is higher-is-better"),
    ({"by perplexity": "first"}, "perplexity is lower-is-better"),
    ({"by BLEU": "cannot tell"}, "Keep 'cannot tell'"),
    ({"by perplexity": "cannot tell"}, "Keep 'cannot tell'"),
    ({"overall": "first"}, "disagree"),
    ({"overall": "second"}, "one more run"),
    ({"by BLEU": "maybe"}, "Answer with one of"),
    ({"overall": 2}, "should be one of the words"),
])
def test_halving_names_mistakes(change, words):
    v = check("ex-key-width-halving", {**REFERENCE, **change})
    assert v.status == "wrong" and words in v.message, v.message
    for shown in ("0.09", "0.15", "0.4 and", "0.3"):
        assert shown not in v.message


def test_halving_checks_the_scores_before_the_verdict():
    # 'overall' is right, but a part is wrong: the part is named, not praised.
    v = check("ex-key-width-halving", {**REFERENCE, "by BLEU": "second"})
    assert v.status == "wrong" and "'by BLEU'" in v.message, v.message


@pytest.mark.parametrize("answer", [None, "first", [["a"]], {}, ..., {"by BLEU": "first"}, object(),
                                    {"by BLEU": ..., "by perplexity": "second", "overall": "cannot tell"},
                                    {"by BLEU": float("nan"), "by perplexity": [1], "overall": {}}])
def test_halving_survives_junk(answer):
    v = check("ex-key-width-halving", answer)
    assert v.status in ("wrong", "not done") and "could not be checked" not in v.message, v.message


# ---------------------------------------------------------------- ex-lookup-variant
@pytest.fixture(scope="module")
def runs3():
    """The exercise's runs: three keys at d = 16, h = 1, 4 and 16, the default budget (about 1.5 s)."""
    return training.head_sweep((1, 4, 16), n_keys=3)


def test_lookup_variant_accepts_a_prediction_that_matches_the_run(runs3):
    best = max(runs3, key=lambda r: r.accuracy).h
    verdict = check("ex-lookup-variant", {"best": best, "runs": runs3})
    assert verdict.status == "correct" and "among the best" in verdict.message, verdict.message
    assert "h = 16: " in verdict.message and "0.062" in verdict.message and "0.180" in verdict.message


def test_lookup_variant_accepts_a_prediction_the_run_contradicts_and_shows_the_comparison(runs3):
    worst = min(runs3, key=lambda r: r.accuracy)
    verdict = check("ex-lookup-variant", {"best": worst.h, "runs": runs3})
    assert verdict.status == "correct", verdict.message
    assert "disagrees" in verdict.message and f"h = {worst.h}: {worst.accuracy:.3f}" in verdict.message


@pytest.mark.parametrize("best", [np.int64(16), np.int32(4), 4.0, np.float64(1.0)])
def test_lookup_variant_takes_numpy_and_whole_float_head_counts(runs3, best):
    verdict = check("ex-lookup-variant", {"best": best, "runs": runs3})
    assert verdict.status == "correct" and f"you predicted h = {int(best)};" in verdict.message, verdict.message


def test_lookup_variant_takes_runs_as_a_dict(runs3):
    assert check("ex-lookup-variant", {"best": 1, "runs": {r.h: r for r in runs3}}).ok


def test_lookup_variant_rejects_a_typed_in_result(runs3):
    forged = [dataclasses.replace(r, accuracy=1.0) if r.h == 16 else r for r in runs3]
    verdict = check("ex-lookup-variant", {"best": 16, "runs": forged})
    assert verdict.status == "wrong" and "does not match its own weights" in verdict.message


@pytest.mark.parametrize("change, words", [
    ({"params": {}}, "does not hold the weights"),
    ({"params": None}, "does not hold the weights"),
    ({"d": 16.0}, "d = 16.0"),
    ({"h": 0}, "do not fit together"),
    ({"h": "1"}, "h = '1'"),
    ({"n_keys": [1]}, "n_keys = [1]"),
    ({"steps": True}, "steps = True"),
    ({"accuracy": float("nan")}, "accuracy = nan"),
    ({"lr": None}, "lr = None"),
])
def test_lookup_variant_names_an_edited_result(runs3, change, words):
    edited = [dataclasses.replace(runs3[0], **change)] + list(runs3[1:])
    verdict = check("ex-lookup-variant", {"best": 4, "runs": edited})
    assert verdict.status == "wrong" and words in verdict.message and "could not be checked" not in verdict.message, \
        verdict.message


def test_lookup_variant_names_wrong_shaped_weights(runs3):
    r = runs3[0]
    params = dict(r.params, W_Q=r.params["W_Q"][:, :1])
    verdict = check("ex-lookup-variant", {"best": 4, "runs": [dataclasses.replace(r, params=params), *runs3[1:]]})
    assert verdict.status == "wrong" and "float array of shape" in verdict.message, verdict.message


def test_lookup_variant_refuses_a_short_budget():
    runs = training.head_sweep((1, 4, 16), n_keys=3, steps=1)
    for best in (1, 4):  # whatever the prediction: one step at chance certifies nothing
        verdict = check("ex-lookup-variant", {"best": best, "runs": runs})
        assert verdict.status == "wrong" and "default settings" in verdict.message, verdict.message


def test_lookup_variant_refuses_a_lower_learning_rate():
    runs = training.head_sweep((1, 4, 16), n_keys=3, steps=1500, lr=1e-3)
    verdict = check("ex-lookup-variant", {"best": 1, "runs": runs})
    assert verdict.status == "wrong" and "default settings" in verdict.message, verdict.message


def test_lookup_variant_asks_for_the_named_head_counts(runs3):
    verdict = check("ex-lookup-variant", {"best": 1, "runs": runs3[:2]})
    assert verdict.status == "wrong" and "h = 1, 4, 16" in verdict.message and "no h = 16" in verdict.message


def test_lookup_variant_names_runs_that_learned_nothing(runs3):
    # No honest default-budget run does this; a result edited consistently (weights zeroed) can.
    zeroed = [dataclasses.replace(r, params={k: np.zeros_like(v) for k, v in r.params.items()}) for r in runs3]
    zeroed = [dataclasses.replace(r, accuracy=_rescored(r, _intact(r))) for r in zeroed]
    verdict = check("ex-lookup-variant", {"best": 1, "runs": zeroed})
    assert verdict.status == "wrong" and "learned nothing" in verdict.message, verdict.message


def test_lookup_variant_needs_one_of_the_two_variants():
    runs = [training.dictionary_lookup(h, n_keys=1, steps=5) for h in (1, 2)]  # the page shows this variant
    verdict = check("ex-lookup-variant", {"best": 2, "runs": runs})
    assert verdict.status == "wrong" and "variants" in verdict.message


def test_lookup_variant_needs_the_same_setting_but_h(runs3):
    other_seed = training.dictionary_lookup(16, n_keys=3, seed=1)
    verdict = check("ex-lookup-variant", {"best": 1, "runs": [*runs3[:2], other_seed]})
    assert verdict.status == "wrong" and "change only h" in verdict.message


@pytest.mark.parametrize("answer", [None, 3, {"best": 1}, {"best": 1, "runs": "x"}, {"best": 1, "runs": [1, 2]},
                                    {"best": ..., "runs": ...}, {"best": 1, "runs": dict}])
def test_lookup_variant_survives_junk(answer):
    verdict = check("ex-lookup-variant", answer)
    assert verdict.status in ("wrong", "not done") and "could not be checked" not in verdict.message, verdict.message


def test_lookup_variant_names_a_single_result(runs3):
    verdict = check("ex-lookup-variant", {"best": 1, "runs": runs3[0]})
    assert verdict.status == "wrong" and "one result" in verdict.message


def test_lookup_variant_refuses_a_best_it_did_not_run(runs3):
    for best in (3, True, "1", 2.5, float("nan"), [1]):
        verdict = check("ex-lookup-variant", {"best": best, "runs": runs3})
        assert verdict.status == "wrong" and "head counts you ran (1, 4, 16)" in verdict.message, verdict.message


def test_copy_baseline_is_what_copying_a_random_listed_value_scores_on_the_test_set():
    # Values can repeat in a lookup, so copying a random entry's value beats 1/8: 23/128.
    assert copy_baseline() == 23 / 128
    for n_keys in (1, 2, 3):
        test = training.test_set(n_keys)
        measured = (test.values[:, None, :] == test.answers[:, :, None]).mean()
        assert abs(measured - copy_baseline()) < 0.005, (n_keys, measured)


def test_lookup_variant_tie_says_it_rests_on_one_seed(runs3):
    top = max(r.accuracy for r in runs3)
    winners = [r.h for r in runs3 if r.accuracy >= top - 0.01]
    verdict = check("ex-lookup-variant", {"best": winners[0], "runs": runs3})
    if len(winners) > 1:
        assert "one seed" in verdict.message, verdict.message
    else:
        assert "ties" not in verdict.message, verdict.message
