"""The rank-floor explorer: pick a target and its length; see where the error of a head vanishes.

For a target pattern ``A`` of ``n`` tokens, two pictures side by side:

* left, the smallest error (summed KL divergence) found for a head of width
  ``d_k``, for ``d_k = 1 .. n - 1``, by :func:`mha.rank.fit_scores` (the
  spectral start, exact from the floor on, then one random start);
* right, the singular values of the centred log-target
  (:func:`mha.rank.centred_log_spectrum`): their count above rounding is the
  floor, the predicted ``d_k`` from which the error is zero.

The prediction needs no fitting, the fits need no theory, and the two agree.
:func:`floor_explorer` draws every (target, n) pair when the page is built and
links the pickers to the pictures in the browser; :func:`floor_explorer_live`
recomputes with a kernel, for any length.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._validate import check_counts, check_positive_int
from ..plotting import OKABE_ITO
from ..rank import (centred_log_spectrum, fit_scores, target_diagonal, target_distance_band, target_first_token,
                   target_local_band, target_previous_flat, target_previous_token, target_random)
from .frames import FramePainter, caption_html, readout_row

__all__ = ["FloorView", "TARGETS", "floor_explorer", "floor_explorer_live", "floor_view", "named_target"]

#: The explorer's targets, by the name its menu shows.
TARGETS = {
    "attend to yourself": target_diagonal,
    "first token": target_first_token,
    "previous token, smooth": lambda n: target_previous_token(n, width=0.8),
    "local band, smooth": lambda n: target_local_band(n, width=1.5),
    "previous token, flat rest": target_previous_flat,
    "band by distance": target_distance_band,
    "random": lambda n: target_random(n, seed=0),
}
SIZES = (3, 4, 5, 6, 7, 8)  # n on the static page
MAX_N = 10  # the live version: fits of larger targets take seconds
KL_FLOOR = 1e-9  # an error below this is drawn on the axis floor and read "0"
SV_FLOOR = 1e-12  # singular values below this are drawn here (rounding, not structure)


def named_target(name, n):
    """The target called ``name`` in :data:`TARGETS`, for ``n`` tokens."""
    if not isinstance(name, str) or name not in TARGETS:
        raise ValueError(f"name must be one of {', '.join(map(repr, TARGETS))}; got {name!r}")
    return TARGETS[name](check_positive_int(n, "n"))


@dataclass(frozen=True)
class FloorView:
    """What the explorer shows for one target.

    Attributes
    ----------
    name : str
    target : ndarray, shape (n, n)
    singular_values : ndarray, shape (n,)
        Of the centred log-target, largest first.
    tol : float
        Singular values at or below it are rounding.
    floor : int
        The predicted least ``d_k`` that reaches the target exactly.
    kl : tuple of float
        The smallest summed KL found for ``d_k = 1 .. n - 1`` (an upper bound on the best).
    """

    name: str
    target: np.ndarray
    singular_values: np.ndarray
    tol: float
    floor: int
    kl: tuple

    @property
    def n(self):
        return self.target.shape[0]


def floor_view(name, n, *, restarts=1):
    """The fits and the spectrum of the target ``name`` with ``n`` tokens (``n >= 2``)."""
    n = check_positive_int(n, "n")
    if not 2 <= n <= MAX_N:
        raise ValueError(f"n must be from 2 to {MAX_N} (larger fits take too long for a widget), got {n}")
    A = named_target(name, n)
    spectrum = centred_log_spectrum(A)
    kl = tuple(fit_scores(A, d_k, restarts=restarts).kl for d_k in range(1, n))
    return FloorView(name=name, target=A, singular_values=spectrum.singular_values, tol=spectrum.tol,
                     floor=spectrum.floor, kl=kl)


def _caption(view):
    n, f = view.n, view.floor
    if f == 0:
        return f"{view.name}, n = {n}: the centred log is zero, so any head reaches the target."
    reached = f"a head of width d_k = {f} is the first to reach it exactly"
    below = f"; at d_k = {f - 1} the smallest error found is {view.kl[f - 2]:.2g}" if f >= 2 else ""
    return (f"{view.name}, n = {n}: the centred log-target has {f} singular value{'s' if f > 1 else ''} "
            f"above rounding, so {reached}{below}.")


class _FloorPainter:
    """Both panels for up to ``n_max`` tokens; each frame moves the curve, the bars and the floor marker."""

    def __init__(self, n_max):
        self.n_max = n_max
        fig = Figure(figsize=(7.0, 3.0), dpi=80, layout="constrained")
        ax_kl, ax_sv = fig.subplots(1, 2)
        blue, orange, grey = OKABE_ITO[0], OKABE_ITO[1], "#8c8c8c"
        ax_kl.set_xlim(0.5, n_max - 0.5)
        ax_kl.set_yscale("log")
        ax_kl.set_ylim(KL_FLOOR / 3, 10)
        ax_kl.set_xticks(range(1, n_max))
        ax_kl.set_xlabel("head width $d_k$")
        ax_kl.set_ylabel("smallest error found (summed KL)")
        ax_kl.set_title("fits: how close a head gets", loc="left", fontsize=10)
        (self.curve,) = ax_kl.plot([], [], "o-", color=blue)
        self.marker = ax_kl.axvline(1, color=orange, linestyle="--", linewidth=1.5)
        self.marker_text = ax_kl.text(1, 1, "", color="black", fontsize=10, ha="left", va="bottom")
        ax_sv.set_xlim(0.4, n_max + 0.6)
        ax_sv.set_yscale("log")
        ax_sv.set_ylim(SV_FLOOR / 3, 100)
        ax_sv.set_xticks(range(1, n_max + 1))
        ax_sv.set_xlabel("index of the singular value")
        ax_sv.set_ylabel("singular value")
        ax_sv.set_title("theory: centred log-target", loc="left", fontsize=10)
        self.bars = ax_sv.bar(range(1, n_max + 1), np.ones(n_max), bottom=SV_FLOOR / 3, color=blue)
        self.tol_line = ax_sv.axhline(1e-14, color=grey, linestyle=":", linewidth=1.2)
        self.colours = (blue, grey)
        self.painter = FramePainter(fig, [self.curve, self.marker, self.marker_text, self.tol_line, *self.bars])

    def draw(self, view):
        if view.n > self.n_max:
            raise ValueError(f"this picture has room for {self.n_max} tokens, got n = {view.n}")
        d_k = np.arange(1, view.n)
        self.curve.set_data(d_k, np.maximum(view.kl, KL_FLOOR))
        self.marker.set_xdata([view.floor, view.floor])
        self.marker.set_visible(view.floor >= 1)
        left = view.floor > self.n_max - 3  # near the right edge: the words go left of the line, inside the axes
        self.marker_text.set_position((view.floor + (-0.1 if left else 0.1), 1.0))
        self.marker_text.set_horizontalalignment("right" if left else "left")
        self.marker_text.set_text(f"floor = {view.floor}")
        for i, bar in enumerate(self.bars):
            shown = i < view.n
            bar.set_visible(shown)
            if shown:
                value = max(float(view.singular_values[i]), SV_FLOOR)
                bar.set_height(value - SV_FLOOR / 3)
                bar.set_color(self.colours[0] if view.singular_values[i] > view.tol else self.colours[1])
        self.tol_line.set_ydata([max(view.tol, SV_FLOOR)] * 2)
        return self.painter.png()


_INTRO = ("Pick a target and its length n. Left: the smallest error found by fitting a head of each width "
          "d<sub>k</sub> (two starts; the first is the proof's construction, exact from the floor on). Right: the singular values of the target's log with each row's mean removed; "
          "grey bars are rounding. The dashed line marks the floor: the count of blue bars.")


def _frame(png, caption, layout):
    return widgets.VBox([widgets.Image(value=png, format="png",
                                       layout=widgets.Layout(max_width="100%", height="auto")),
                         widgets.HTML(caption_html(caption), layout=layout)], layout=layout)


def floor_explorer(names=None, sizes=SIZES, *, start_name="band by distance", start_n=5):
    """The explorer for the static page: every (target, n) drawn at build time, pickers linked in the browser.

    The target menu is linked with ``jslink`` to a ``Stack`` with one page per
    target; each page is a ``Stack`` with one frame per ``n``, linked to the n
    slider. No kernel is needed to move either picker.

    Parameters
    ----------
    names : sequence of str, optional
        Targets to offer (default: all of :data:`TARGETS`).
    sizes : sequence of int
        Values of n for the slider, each from 2 to ``MAX_N``.
    start_name, start_n : shown first.

    Returns
    -------
    ipywidgets.VBox
        DOM classes ``mha-sweep`` and ``mha-floor``.
    """
    names = list(TARGETS) if names is None else [str(name) for name in names]
    sizes = check_counts(sizes, "sizes", low=2, distinct=True)
    if not names:
        raise ValueError("names is empty: give at least one target")
    if start_name not in names or start_n not in sizes:
        raise ValueError(f"start_name must be one of {names} and start_n one of {sizes}")
    painter = _FloorPainter(max(sizes))
    shared = widgets.Layout()
    n_slider = widgets.SelectionSlider(options=[(str(n), i) for i, n in enumerate(sizes)],
                                       index=sizes.index(start_n), description="tokens n",
                                       continuous_update=True, style={"description_width": "initial"},
                                       layout=widgets.Layout(width="95%", max_width="30em"))
    menu = widgets.Dropdown(options=[(name, i) for i, name in enumerate(names)], index=names.index(start_name),
                            description="target", style={"description_width": "initial"})
    pages = []
    for name in names:
        views = [floor_view(name, n) for n in sizes]
        inner = widgets.Stack([_frame(painter.draw(v), _caption(v), shared) for v in views],
                              selected_index=sizes.index(start_n))
        widgets.jslink((n_slider, "index"), (inner, "selected_index"))
        pages.append(inner)
    outer = widgets.Stack(pages, selected_index=names.index(start_name))
    widgets.jslink((menu, "index"), (outer, "selected_index"))
    box = widgets.VBox([widgets.HTML(f"<p>{_INTRO}</p>"), menu, readout_row(n_slider, [str(n) for n in sizes]), outer])
    box.add_class("mha-sweep")
    box.add_class("mha-floor")
    return box


def floor_explorer_live(name="band by distance", n=5):
    """The explorer computed live (needs a kernel): any target of :data:`TARGETS`, any n up to ``MAX_N``.

    Returns
    -------
    ipywidgets.VBox
        DOM class ``mha-floor-live``.
    """
    start = floor_view(name, n)
    painter = _FloorPainter(MAX_N)
    menu = widgets.Dropdown(options=list(TARGETS), value=name, description="target",
                            style={"description_width": "initial"})
    n_slider = widgets.IntSlider(value=start.n, min=2, max=MAX_N, description="tokens n",
                                 continuous_update=False, style={"description_width": "initial"})
    image = widgets.Image(value=painter.draw(start), format="png",
                          layout=widgets.Layout(max_width="100%", height="auto"))
    caption = widgets.HTML(caption_html(_caption(start)))

    def redraw(_=None):
        view = floor_view(menu.value, n_slider.value)
        image.value = painter.draw(view)
        caption.value = caption_html(_caption(view))

    menu.observe(redraw, names="value")
    n_slider.observe(redraw, names="value")
    box = widgets.VBox([widgets.HTML(f"<p>{_INTRO}</p>"), menu, n_slider, image, caption])
    box.add_class("mha-floor-live")
    return box
