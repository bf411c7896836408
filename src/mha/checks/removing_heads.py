"""Checkers for the exercises of book/10_removing_heads.md (removing heads).

* ``ex-zero-vs-mean`` (numeric): a layer of ``h = 2`` heads of width 1 on
  ``T = 3`` tokens; the output with head 2 set to zero and with head 2
  replaced by its mean over the positions, as ``[zeroed, by_mean]`` (2, 3, 2).
* ``ex-mean-survives`` (numeric): for the heads :data:`SURVIVAL_HEADS` of
  SmolLM2 on the Apache licence, whether each still raises perplexity clearly
  (95 % interval above zero) under mean ablation, as the benchmark record
  (``benchmarks/results/bench_ablation.json``) measured it. The chapter
  asserts that the record still says so.
"""

from __future__ import annotations

import numbers

import numpy as np

from .core import answer_array, checker, compare, is_unfinished, not_done, safe_repr, wrong

__all__ = ["SURVIVAL_HEADS", "ZERO_MEAN_CONCAT", "ZERO_MEAN_W_O", "zero_and_mean"]

#: The exercise's heads' outputs side by side (T = 3 positions, h = 2 heads of width 1) and its W^O.
ZERO_MEAN_CONCAT = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 0.0]])
ZERO_MEAN_W_O = np.array([[1.0, 1.0], [2.0, -1.0]])

#: (layer, head) of SmolLM2, and whether the benchmark found that it still raises perplexity clearly
#: on the licence (interval above zero) when replaced by its mean instead.
SURVIVAL_HEADS = ((1, 5), (3, 0), (16, 0), (24, 8))
_SURVIVES = (False, True, True, False)


def zero_and_mean(concat=ZERO_MEAN_CONCAT, W_O=ZERO_MEAN_W_O, head=1, column_mean=None):
    """The layer's output with column ``head`` set to 0, and set to ``column_mean`` (default: its mean)."""
    concat = np.asarray(concat, dtype=float)
    zeroed, by_mean = concat.copy(), concat.copy()
    zeroed[:, head] = 0.0
    by_mean[:, head] = concat[:, head].mean() if column_mean is None else column_mean
    return np.stack([zeroed @ W_O, by_mean @ W_O])  # (2, T, d_out)


def _zero_mean_part(index):
    index = tuple(index)
    if len(index) != 3:
        return None
    which = ("zeroed", "by_mean")[index[0]] if index[0] in (0, 1) else f"part {index[0]}"
    return f"{which}, row {index[1]}, column {index[2]}"


def _zero_mean_mistakes():
    concat, W_O = ZERO_MEAN_CONCAT, ZERO_MEAN_W_O
    right = zero_and_mean()
    plain = concat @ W_O
    return [
        (right[::-1], "the two outputs are swapped: give [zeroed, by_mean], the zeroed one first."),
        (np.stack([concat * [1, 0], np.column_stack([concat[:, 0], np.full(3, concat[:, 1].mean())])]),
         "these are the heads' outputs after the change, before W^O. Multiply each by W^O to get the layer's "
         "output."),
        (zero_and_mean(head=0), "you removed head 1 (the first column). The exercise removes head 2, the "
                                "second column."),
        (zero_and_mean(column_mean=concat.mean(axis=1)),
         "for by_mean you replaced head 2's entry in each row by the mean of that row, across the heads. "
         "The mean is over the positions: one number, the mean of head 2's column, put in every row."),
        (zero_and_mean(column_mean=concat.mean()),
         "for by_mean you used the mean of the whole table. Use only head 2's column: its mean over the "
         "three positions."),
        (np.stack([right[0], plain]), "your by_mean is the whole layer, with nothing removed. Replace head 2's "
                                      "column by its mean before multiplying by W^O."),
        (np.stack([right[0], right[0]]), "your by_mean equals zeroed. Mean ablation keeps head 2's average "
                                         "output: put its mean over the positions in place of the column."),
    ]


@checker("ex-zero-vs-mean", kind="numeric")
def check_zero_vs_mean(answer):
    """``[zeroed, by_mean]``: the layer's output with head 2 zeroed and replaced by its mean."""
    if is_unfinished(answer):
        not_done()
    arr = answer_array(answer, "your answer", entry=_zero_mean_part)
    compare(arr, zero_and_mean(), "your answer", atol=1e-9, rtol=1e-9, entry=_zero_mean_part,
            mistakes=_zero_mean_mistakes(),
            shape_hint="Give [zeroed, by_mean]: two outputs of 3 rows and 2 columns each.",
            hint="Each row of the output is z_1 times the first row of W^O plus z_2 times the second.")
    return ("by_mean - zeroed is the same in every row: head 2's mean output times its row of W^O, "
            "the offset that zeroing also removes.")


def _prediction(value, k):
    """One prediction as a bool, or feedback."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    wrong(f"prediction {k + 1} is {safe_repr(value, 30)}; give True (still clearly harmful under the mean) "
          "or False for each head.")


@checker("ex-mean-survives", kind="numeric")
def check_mean_survives(answer):
    """One True/False per head of :data:`SURVIVAL_HEADS`: still clearly harmful under the mean."""
    n = len(SURVIVAL_HEADS)
    if is_unfinished(answer):
        not_done()
    if isinstance(answer, (bool, np.bool_)):
        wrong(f"give one True or False for each of the {n} heads, in a list, not a single value.")
    if isinstance(answer, np.ndarray):
        answer = answer.tolist() if answer.ndim == 1 else None
    if not isinstance(answer, (list, tuple)):
        wrong(f"give a list of {n} values True or False, one per head of the table; got {safe_repr(answer, 40)}.")
    if len(answer) != n:
        wrong(f"give {n} values, one per head of the table, in its order; got {len(answer)}.")
    if any(is_unfinished(v) for v in answer):
        not_done("give a prediction for every head: some are still ... or None.")
    got = tuple(_prediction(v, k) for k, v in enumerate(answer))
    if got == _SURVIVES:
        return ("the two heads whose offset is several times their variation lose their damage under the "
                "mean, which puts the offset back; the two whose variation is larger stay clearly harmful.")
    if all(got):
        wrong("you predicted that every head stays harmful. Mean ablation keeps a head's offset: for a "
              "head whose offset is much longer than its variation, little is left to remove.")
    if not any(got):
        wrong("you predicted that no head stays harmful. Mean ablation removes everything a head "
              "writes that varies from token to token: for a head whose variation is much longer than its "
              "offset, that is nearly all of it.")
    if got == tuple(not v for v in _SURVIVES):
        wrong("every prediction is the wrong way round. Zeroing removes offset and variation; the mean "
              "removes only the variation. Which heads keep their damage, then?")
    wrong("at least one prediction does not match what the benchmark measured. Compare each head's "
          "offset with its variation: which part does mean ablation remove?")
