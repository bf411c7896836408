"""Published results, kept as data.

Chapters read their numbers from here, so a figure quoted in the prose and a
figure drawn in a plot can never disagree with each other.

Sources
-------
Vaswani, A., Shazeer, N., Parmar, N., Uszkoreit, J., Jones, L., Gomez, A. N.,
Kaiser, L. and Polosukhin, I. (2017). "Attention Is All You Need". NeurIPS 30,
pp. 5998--6008. arXiv:1706.03762. Table 3, rows (A), (B) and the "base" row:
English-to-German translation, development set newstest2013. Perplexities
are per word piece (byte-pair encoding), so they cannot be compared with
per-word perplexities. Within rows (A) the amount of computation is held
constant: ``h * d_k = h * d_v = d_model = 512``.

The shapes of published models live in :mod:`mha.costs` (``MODELS``).
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validate import check_number, check_positive_int

__all__ = [
    "HeadCountRow",
    "VASWANI2017_TABLE3_A",
    "VASWANI2017_TABLE3_B",
    "VASWANI2017_BASE",
    "vaswani2017_head_rows",
    "best_bleu",
]


@dataclass(frozen=True)
class HeadCountRow:
    """One row of Vaswani et al. (2017), Table 3 (A): a Transformer with ``h`` heads.

    Attributes
    ----------
    h : int
        Number of attention heads.
    d_k, d_v : int
        Width of one key (query) head and one value head.
    dev_ppl : float
        Perplexity on newstest2013, per word piece (lower is better; at least 1).
    dev_bleu : float
        BLEU on newstest2013 (higher is better; from 0 to 100).
    params_m : int or None
        The model's parameters in millions, where the table gives them (the
        base model and rows (B)); ``None`` where its cell is empty.

    A row is checked when it is made: the widths must be positive integers and
    the scores finite numbers in their range.
    """

    h: int
    d_k: int
    d_v: int
    dev_ppl: float
    dev_bleu: float
    params_m: int | None = None

    def __post_init__(self):
        for field in ("h", "d_k", "d_v"):
            object.__setattr__(self, field, check_positive_int(getattr(self, field), field))
        if self.params_m is not None:
            object.__setattr__(self, "params_m", check_positive_int(self.params_m, "params_m"))
        object.__setattr__(self, "dev_ppl", check_number(self.dev_ppl, "dev_ppl", low=1))
        object.__setattr__(self, "dev_bleu", check_number(self.dev_bleu, "dev_bleu", low=0, high=100))

    @property
    def d_model(self) -> int:
        """Total query width ``h * d_k`` (512 in every row: computation held constant)."""
        return self.h * self.d_k


#: Vaswani et al. (2017), Table 3, rows (A), with the base model (``h = 8``) in its place.
#: Sorted by ``h``. English-German, dev set newstest2013, computation held constant.
VASWANI2017_TABLE3_A = (
    HeadCountRow(h=1, d_k=512, d_v=512, dev_ppl=5.29, dev_bleu=24.9),
    HeadCountRow(h=4, d_k=128, d_v=128, dev_ppl=5.00, dev_bleu=25.5),
    HeadCountRow(h=8, d_k=64, d_v=64, dev_ppl=4.92, dev_bleu=25.8, params_m=65),
    HeadCountRow(h=16, d_k=32, d_v=32, dev_ppl=4.91, dev_bleu=25.8),
    HeadCountRow(h=32, d_k=16, d_v=16, dev_ppl=5.01, dev_bleu=25.4),
)

#: Vaswani et al. (2017), Table 3, rows (B): the base model (``h = 8``, ``d_v = 64``) with narrower keys
#: only, ``d_k`` 16 or 32 instead of 64. Same task and dev set as rows (A).
VASWANI2017_TABLE3_B = (
    HeadCountRow(h=8, d_k=16, d_v=64, dev_ppl=5.16, dev_bleu=25.1, params_m=58),
    HeadCountRow(h=8, d_k=32, d_v=64, dev_ppl=5.01, dev_bleu=25.4, params_m=60),
)

#: The paper's base model, the row every variant in Table 3 is compared with.
VASWANI2017_BASE = VASWANI2017_TABLE3_A[2]


def vaswani2017_head_rows():
    """Table 3 (A) of Vaswani et al. (2017) as columns, ready to plot.

    Returns
    -------
    dict of str to tuple
        Keys ``"h"``, ``"d_k"``, ``"d_v"``, ``"dev_ppl"``, ``"dev_bleu"``; one
        entry per row, sorted by ``h``.

    Examples
    --------
    >>> cols = vaswani2017_head_rows()
    >>> cols["h"]
    (1, 4, 8, 16, 32)
    >>> cols["dev_bleu"]
    (24.9, 25.5, 25.8, 25.8, 25.4)
    """
    names = ("h", "d_k", "d_v", "dev_ppl", "dev_bleu")
    return {name: tuple(getattr(row, name) for row in VASWANI2017_TABLE3_A) for name in names}


def best_bleu(rows=VASWANI2017_TABLE3_A):
    """The highest BLEU in ``rows`` and every ``h`` that reaches it.

    Parameters
    ----------
    rows : sequence of HeadCountRow

    Returns
    -------
    bleu : float
    hs : tuple of int
        All head counts that tie at the best score, smallest first.

    Examples
    --------
    >>> best_bleu()
    (25.8, (8, 16))
    """
    try:
        rows = tuple(rows)
    except TypeError:
        raise TypeError(f"rows must be a non-empty sequence of HeadCountRow, got {type(rows).__name__}") from None
    if not rows or not all(isinstance(r, HeadCountRow) for r in rows):
        raise TypeError("rows must be a non-empty sequence of HeadCountRow")
    top = max(r.dev_bleu for r in rows)
    return top, tuple(sorted(r.h for r in rows if r.dev_bleu == top))
