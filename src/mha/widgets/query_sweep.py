"""The q sweep: the smallest head (``d_k = 1``), where one query scalar ``q`` sets a whole row of weights.

:func:`q_sweep` draws a frame for every stop of its slider when the page is
built; :func:`q_sweep_live` takes your own keys and redraws with a kernel. The
numbers come from :mod:`mha.width_one`.
"""

from __future__ import annotations

import html

import ipywidgets as widgets
import numpy as np
from matplotlib.figure import Figure

from .._validate import as_float_array, check_ndim
from ..plotting import book_style
from ..width_one import as_keys, q_sweep_weights
from ._common import FIG_WIDTH, check_tokens, colour, label, num, parse_numbers
from .frames import FramePainter, caption_html, frame_stack

__all__ = ["q_sweep", "q_sweep_live"]


class _QPainter:
    """One figure for the q sweep: the row's scores ``q k_j`` and its weights, as bars that move with q.

    The weights against every q are chapter 05's figure; the sweep shows the step before them
    instead: the one number q stretches (or flips) the fixed row of keys into scores.
    """

    def __init__(self, keys, tokens, q_range=(-5.0, 5.0)):
        self.keys = np.asarray(keys, dtype=float)
        n = self.keys.size
        colours = [colour(j) for j in range(n)]
        reach = max(abs(q_range[0]), abs(q_range[1])) * max(np.abs(self.keys).max(), 1e-9)
        names = [label(f"{t}\nkey {num(k, 'g')}") for t, k in zip(tokens, self.keys)]
        with book_style():
            self.fig = Figure(figsize=(FIG_WIDTH, 2.9), layout="constrained")
            ax_s, ax_w = self.fig.subplots(1, 2)
            self.score_bars = ax_s.bar(range(n), np.zeros(n), color=colours)
            self.score_values = [ax_s.text(j, 0, "", ha="center", fontsize=10) for j in range(n)]
            ax_s.axhline(0, color="grey", lw=0.8)
            ax_s.set_xticks(range(n), labels=names)
            ax_s.set_ylim(-1.25 * reach, 1.25 * reach)
            ax_s.set_ylabel("score q × key")
            ax_s.set_title("scores: q times each key", fontsize=10)
            self.bars = ax_w.bar(range(n), np.zeros(n), color=colours)
            self.values = [ax_w.text(j, 0, "", ha="center", va="bottom", fontsize=10) for j in range(n)]
            ax_w.set_xticks(range(n), labels=names)
            ax_w.set_ylim(0, 1.15)
            ax_w.set_ylabel("weight")
            ax_w.set_title("weights: the softmax of the scores", fontsize=10)
            self.title = self.fig.suptitle("")
        self.reach = reach
        self.draw_state(0.0, q_sweep_weights(0.0, self.keys))
        self.painter = FramePainter(self.fig, [*self.score_bars, *self.score_values, *self.bars, *self.values,
                                               self.title])

    def draw_state(self, q, weights):
        pad = 0.04 * self.reach
        for j, (bar, text, k) in enumerate(zip(self.score_bars, self.score_values, self.keys)):
            score = q * k
            bar.set_height(score)
            text.set_position((j, score + (pad if score >= 0 else -pad)))
            text.set_verticalalignment("bottom" if score >= 0 else "top")
            text.set_text(num(score, ".2f"))
        for j, (bar, text, w) in enumerate(zip(self.bars, self.values, weights)):
            bar.set_height(w)
            text.set_position((j, w + 0.01))
            text.set_text(f"{w:.2f}")
        self.title.set_text(f"query q = {num(q, '+.2f')}")

    def draw(self, q, weights):
        """Show the row at query ``q`` with its ``weights``; return PNG bytes."""
        self.draw_state(q, weights)
        return self.painter.png()


def _q_caption(q, weights, tokens, keys):
    parts = ", ".join(f"{t} {w:.2f}" for t, w in zip(tokens, weights))
    top = np.flatnonzero(np.isclose(weights, weights.max(), rtol=0, atol=1e-12))
    if top.size > 1:
        lead = "no token leads: the tied tokens share the top weight"
    else:
        j = top[0]
        kind = "largest" if keys[j] == keys.max() else "smallest" if keys[j] == keys.min() else "middle"
        lead = f"{tokens[j]} (the {kind} key) has the top weight"
    return f"q = {num(q, '+.2f')}: weights {parts}; {lead}."


def q_sweep(keys=(2, 0, 1), tokens=("I", "love", "LLMs"), q_values=None):
    """The q sweep: one query row of a ``d_k = 1`` head as the query ``q`` moves.

    Works on the static page: the frames are drawn now and linked in the browser.

    Parameters
    ----------
    keys : sequence of float
        One key scalar per token.
    tokens : sequence of str
        Token names, one per key.
    q_values : sequence of float, optional
        The slider's stops (default -4 to 4 in steps of 0.5).

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-q-sweep``.
    """
    keys = as_keys(keys)
    tokens = check_tokens(tokens, keys.size, "keys")
    q_values = np.round(np.arange(-4.0, 4.01, 0.5), 2) if q_values is None else _check_stops(q_values)
    weights = q_sweep_weights(q_values, keys)  # (m, n)
    painter = _QPainter(keys, tokens, q_range=(min(-5.0, q_values.min()), max(5.0, q_values.max())))
    frames = [(painter.draw(q, w), _q_caption(q, w, tokens, keys)) for q, w in zip(q_values, weights)]
    # The intro states no thresholds (where a weight passes 0.9, the peak of a middle key):
    # the chapter's exercises ask for them. Each frame's caption gives the weights at its own q.
    intro = (f"A head of width d<sub>k</sub> = 1 with keys {html.escape(_fmt_keys(keys))} for "
             f"“{html.escape(' '.join(tokens))}”. Each score of a query's row is q times a key, so the "
             "one number q sets the whole row. Move the slider (or use the arrow keys) to change q; "
             "the text under the picture gives the weights at that q.")
    return frame_stack(frames, [num(q, "+.1f") for q in q_values], start=int(np.argmin(np.abs(q_values))),
                        description="query q", intro=intro, dom_class="mha-q-sweep",
                        value_texts=[f"q = {num(q, '+.2f')}" for q in q_values])


def _check_stops(q_values):
    """The q sweep's slider stops: a non-empty 1-D array of distinct finite numbers."""
    q = as_float_array(q_values, "q_values")
    check_ndim(q, "q_values", 1, "(m,)", exact=True)
    if q.size == 0:
        raise ValueError("q_values is empty: the slider needs at least one stop")
    if np.unique(q).size != q.size:
        raise ValueError(f"q_values must be distinct (each is one stop of the slider), got {q.tolist()}")
    return q


def _fmt_keys(keys):
    return "(" + ", ".join(f"{k:g}" for k in keys) + ")"


def q_sweep_live(keys=(2, 0, 1), tokens=("I", "love", "LLMs")):
    """The q sweep computed live (needs a kernel): a free slider for q and a box for your own keys.

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-q-sweep-live``.
    """
    keys = as_keys(keys)
    tokens = check_tokens(tokens, keys.size, "keys")
    q = widgets.FloatSlider(value=0.0, min=-5.0, max=5.0, step=0.05, description="query q",
                            continuous_update=True, layout=widgets.Layout(width="95%", max_width="40em"))
    keys_box = widgets.Text(value=", ".join(f"{k:g}" for k in keys), description="keys",
                            continuous_update=False)
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    caption, message = widgets.HTML(), widgets.HTML()
    state = {"keys": keys, "tokens": tokens, "painter": _QPainter(keys, tokens)}

    def redraw(_=None):
        w = q_sweep_weights(q.value, state["keys"])
        image.value = state["painter"].draw(q.value, w)
        caption.value = caption_html(_q_caption(q.value, w, state["tokens"], state["keys"]))

    def new_keys(change):
        try:
            new = as_keys(parse_numbers(change["new"], "keys"))
        except (ValueError, TypeError) as err:
            message.value = f"<p><b>Keys not changed:</b> {html.escape(str(err))}</p>"
            return
        names = tokens if new.size == len(tokens) else check_tokens(None, new.size, "keys")
        state.update(keys=new, tokens=names, painter=_QPainter(new, names))
        message.value = ""
        redraw()

    q.observe(redraw, names="value")
    keys_box.observe(new_keys, names="value")
    redraw()
    box = widgets.VBox([widgets.HTML("<p>Type keys separated by commas, then move q.</p>"),
                        keys_box, q, message, image, caption])
    box.add_class("mha-q-sweep-live")
    return box
