"""The d_k sweep: the best pattern a head of width ``d_k`` reaches for a target, the error left, the spectrum.

:func:`dk_sweep` fits every ``d_k`` when the page is built and draws one frame
for each; :func:`dk_sweep_live` takes a target you type and refits with a
kernel. The fits come from :func:`mha.rank.fit_scores`.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._validate import check_counts, check_positive_int, check_prob_rows
from ..plotting import OKABE_ITO, book_style, heatmap, text_colour
from ..rank import fit_scores, target_diagonal
from ._common import FIG_WIDTH, check_tokens, parse_numbers
from .frames import FramePainter, caption_html, frame_stack

__all__ = ["dk_sweep", "dk_sweep_live"]

KL_FLOOR = 1e-9  # a KL below this is drawn on the floor of the log axis and read "≈ 0"


def _fill_cells(texts, image, A):
    """Update a heatmap's annotations in place, with the colour rule of mha.plotting.heatmap."""
    for text, value in zip(texts, A.ravel()):
        text.set_text(f"{value:.2f}")
        text.set_color(text_colour(image.cmap(image.norm(value))))


class _DkPainter:
    """One figure for the d_k sweep: target, best reachable pattern, KL against d_k, singular values."""

    def __init__(self, fits, tokens):
        self.fits = {f.d_k: f for f in fits}
        d_ks = np.array(sorted(self.fits))
        kls = np.array([self.fits[k].kl for k in d_ks])
        n = fits[0].target.shape[0]
        small = n <= 5  # numbers in the cells up to 5 x 5 (more would crowd and slow every frame)
        with book_style():
            self.fig = Figure(figsize=(FIG_WIDTH, 5.0), layout="constrained")
            (ax_t, ax_w), (ax_kl, ax_sv) = self.fig.subplots(2, 2)
            heatmap(fits[0].target, tokens, tokens, ax=ax_t, title="target", annotate=small, ylabel="query")
            self.image = heatmap(fits[0].weights, tokens, tokens, ax=ax_w, annotate=small, ylabel="")
            self.cells = list(ax_w.texts)
            self.w_title = ax_w.set_title("")
            ax_kl.plot(d_ks, np.maximum(kls, KL_FLOOR), "o-", color=OKABE_ITO[0])
            self.kl_dot, = ax_kl.plot([], [], "o", ms=11, mfc="none", mec=OKABE_ITO[5], mew=2)
            ax_kl.set_yscale("log")
            top = max(kls.max(), 1e-3) * 3
            ax_kl.set_ylim(KL_FLOOR / 3, top)
            ax_kl.axvline(n - 1, color="grey", ls="--", lw=1)
            ax_kl.annotate("$d_k = n - 1$", (n - 1, top), xytext=(3, -3), textcoords="offset points",
                           va="top", fontsize=10)
            ax_kl.set_xticks(d_ks)
            ax_kl.set_xlabel("head width $d_k$")
            ax_kl.set_title(f"error left, summed KL (≈ 0 drawn at {KL_FLOOR:g})", fontsize=10)
            sv_top = max(f.singular_values.max() for f in fits)
            self.bars = ax_sv.bar(np.arange(1, n + 1), np.zeros(n), color=OKABE_ITO[2])
            self.rank_line = ax_sv.axvline(0.5, color="black", ls=":", lw=1)
            ax_sv.set_ylim(0, sv_top * 1.1 if sv_top > 0 else 1)
            ax_sv.set_xticks(np.arange(1, n + 1))
            ax_sv.set_xlabel("index i")
            ax_sv.set_title("singular values $\\sigma_i$ of $Q K^\\top$", fontsize=10)
        self.draw_state(fits[0].d_k)
        self.painter = FramePainter(self.fig, [self.image, *self.cells, self.w_title, self.kl_dot, *self.bars,
                                               self.rank_line])

    def draw(self, d_k):
        """Show the fit at ``d_k``; return PNG bytes."""
        self.draw_state(d_k)
        return self.painter.png()

    def draw_state(self, d_k):
        fit = self.fits[d_k]
        self.image.set_data(fit.weights)
        _fill_cells(self.cells, self.image, fit.weights)
        self.w_title.set_text(f"best with $d_k$ = {d_k}")
        self.kl_dot.set_data([d_k], [max(fit.kl, KL_FLOOR)])
        sv = np.zeros(len(self.bars))
        sv[:fit.singular_values.size] = fit.singular_values
        for bar, s in zip(self.bars, sv):
            bar.set_height(s)
        self.rank_line.set_xdata([d_k + 0.5] * 2)


def _dk_caption(fit, n):
    kl = "≈ 0" if fit.kl < KL_FLOOR else f"{fit.kl:.3g}"
    rank_s = int(np.sum(fit.singular_values > 1e-9 * max(fit.singular_values.max(), 1.0)))
    verdict = ("the target is reached" if fit.kl < KL_FLOOR
               else f"the target is out of reach (it needs d_k = {n - 1} = n − 1)")
    return (f"d_k = {fit.d_k}: the best head's summed KL is {kl}; its score matrix Q Kᵀ has rank {rank_s}; "
            f"{verdict}.")


def _dk_fits(target, d_k_values):
    return [fit_scores(target, d_k) for d_k in d_k_values]


def _check_square_target(target):
    """A square target of positive weights whose rows sum to 1 (the d_k sweep's tokens attend to themselves)."""
    A = check_prob_rows(target, "target", ndim=2, legend="(n, n)", positive=True)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] < 2:
        raise ValueError(f"target must be a square matrix (n, n) with n >= 2, got shape {A.shape}")
    return A


def dk_sweep(target=None, n=4, tokens=None, d_k_values=None):
    """The d_k sweep: the best pattern a head of width ``d_k`` reaches, for each ``d_k``.

    Parameters
    ----------
    target : array_like, shape (n, n), optional
        Rows are probability distributions with positive entries (default:
        :func:`mha.rank.target_diagonal` of size ``n``, at least 2).
    n : int
        Size of the default target (ignored when ``target`` is given).
    tokens : sequence of str, optional
        Names of the ``n`` positions (default ``0 ... n - 1``, as the book numbers tokens).
    d_k_values : sequence of int, optional
        The slider's stops (default ``1 ... n``).

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-dk-sweep``.
    """
    target = target_diagonal(check_positive_int(n, "n")) if target is None else target
    target = _check_square_target(target)
    n = target.shape[0]
    fits = _dk_fits(target, range(1, n + 1) if d_k_values is None else check_counts(d_k_values, "d_k_values", low=1, distinct=True))
    tokens = tuple(str(i) for i in range(n)) if tokens is None else check_tokens(tokens, n, "positions")
    painter = _DkPainter(fits, tokens)
    frames = [(painter.draw(f.d_k), _dk_caption(f, n)) for f in fits]
    intro = (f"The best attention pattern a head of width d<sub>k</sub> can reach for a target over n = {n} "
             "tokens, found by fitting Q and K. Next to it: the error left (summed KL) for every d<sub>k</sub>, "
             "and the singular values of the fitted scores Q K<sup>T</sup>. Move the slider (or use the arrow "
             "keys) to change d<sub>k</sub>.")
    return frame_stack(frames, [str(f.d_k) for f in fits], start=0, description="head width d_k",
                        intro=intro, dom_class="mha-dk-sweep", value_texts=[f"d_k = {f.d_k}" for f in fits])


def _parse_target(text):
    """Rows on separate lines, positive numbers; each row is scaled to sum to 1."""
    rows = [parse_numbers(line, "target") for line in text.strip().splitlines() if line.strip()]
    if not rows or len({r.size for r in rows}) != 1 or rows[0].size != len(rows):
        raise ValueError("the target must be a square table: one line per row, the same count of numbers "
                         "on each line as there are lines")
    A = np.array(rows)
    if (A <= 0).any():
        raise ValueError("every weight must be positive")
    return A / A.sum(axis=1, keepdims=True)


def dk_sweep_live(target=None, n=4):
    """The d_k sweep computed live (needs a kernel): type your own target and move d_k.

    Rows of the typed target are scaled to sum to 1.

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-dk-sweep-live``.
    """
    target = _check_square_target(target_diagonal(check_positive_int(n, "n")) if target is None else target)
    box_text = "\n".join(" ".join(f"{v:.3g}" for v in row) for row in target)
    table = widgets.Textarea(value=box_text, description="target", continuous_update=False,
                             layout=widgets.Layout(width="24em", height="8em"))
    d_k = widgets.IntSlider(value=1, min=1, max=target.shape[0], description="head width d_k",
                            style={"description_width": "initial"})
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    caption, message = widgets.HTML(), widgets.HTML()
    state = {}

    def use_target(A):
        m = A.shape[0]
        fits = _dk_fits(A, range(1, m + 1))
        state.update(n=m, painter=_DkPainter(fits, tuple(str(i) for i in range(m))), fits=fits)
        d_k.max, d_k.value = m, min(d_k.value, m)

    def redraw(_=None):
        image.value = state["painter"].draw(d_k.value)
        caption.value = caption_html(_dk_caption(state["fits"][d_k.value - 1], state["n"]))

    def new_target(change):
        try:
            use_target(_parse_target(change["new"]))
        except ValueError as err:
            message.value = f"<p><b>Target not changed:</b> {html.escape(str(err))}</p>"
            return
        message.value = ""
        redraw()

    use_target(target)
    d_k.observe(redraw, names="value")
    table.observe(new_target, names="value")
    redraw()
    box = widgets.VBox([widgets.HTML("<p>Type a target (one row per line), then move d<sub>k</sub>.</p>"),
                        table, d_k, message, image, caption])
    box.add_class("mha-dk-sweep-live")
    return box
