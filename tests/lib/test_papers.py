"""mha.papers: the published head-count results, as data."""
import dataclasses

import pytest

from mha import papers


def test_rows_are_table3_a_in_order_of_h():
    rows = papers.VASWANI2017_TABLE3_A
    assert [r.h for r in rows] == [1, 4, 8, 16, 32]
    assert [(r.d_k, r.d_v) for r in rows] == [(512, 512), (128, 128), (64, 64), (32, 32), (16, 16)]
    assert [r.dev_ppl for r in rows] == [5.29, 5.00, 4.92, 4.91, 5.01]
    assert [r.dev_bleu for r in rows] == [24.9, 25.5, 25.8, 25.8, 25.4]


def test_computation_is_held_constant():
    # Every row of (A) keeps h * d_k = h * d_v = 512, the base model's width.
    assert {r.d_model for r in papers.VASWANI2017_TABLE3_A} == {512}
    assert {r.h * r.d_v for r in papers.VASWANI2017_TABLE3_A} == {512}


def test_base_row_is_eight_heads():
    assert papers.VASWANI2017_BASE.h == 8
    assert papers.VASWANI2017_BASE in papers.VASWANI2017_TABLE3_A


def test_rows_are_read_only():
    with pytest.raises(dataclasses.FrozenInstanceError):
        papers.VASWANI2017_BASE.dev_bleu = 30.0


def test_columns_match_rows():
    cols = papers.vaswani2017_head_rows()
    assert set(cols) == {"h", "d_k", "d_v", "dev_ppl", "dev_bleu"}
    for i, row in enumerate(papers.VASWANI2017_TABLE3_A):
        assert all(cols[name][i] == getattr(row, name) for name in cols)


def test_best_bleu_reports_the_tie():
    assert papers.best_bleu() == (25.8, (8, 16))


def test_best_bleu_single_winner_and_bad_input():
    rows = papers.VASWANI2017_TABLE3_A[:3]
    assert papers.best_bleu(rows) == (25.8, (8,))
    with pytest.raises(TypeError, match="HeadCountRow"):
        papers.best_bleu([])
    with pytest.raises(TypeError, match="HeadCountRow"):
        papers.best_bleu([(1, 512, 512, 5.29, 24.9)])


def test_citation_is_in_the_docstring():
    doc = papers.__doc__
    assert "Attention Is All You Need" in doc and "newstest2013" in doc and "Table 3" in doc
