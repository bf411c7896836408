"""The book's three sweeps as widgets that work on the static site and in a kernel.

* :func:`q_sweep` -- the smallest head (``d_k = 1``): one query scalar ``q``
  sets a whole row of weights.
* :func:`h_sweep` -- which columns of ``Q``, ``K`` and ``V`` each of ``h``
  heads receives, the wrong reshape next to the right split, and each head's
  attention map.
* :func:`dk_sweep` -- the best pattern a head of width ``d_k`` reaches for a
  target, the error left, and the singular values of its scores.

How they work without a kernel: every frame is drawn once, when the page is
built, as a PNG. The frames sit in a ``Stack`` and the slider is linked to the
stack in the browser (``jslink``), so moving the slider on the static page
shows another frame with no Python behind it. In a live kernel the same
widgets work, and :func:`q_sweep_live` and :func:`dk_sweep_live` take free
input (your own keys, your own target) and redraw on every change.

This module only draws and links. The numbers come from :mod:`mha.width_one`
(the q sweep), :mod:`mha.split_trace` (the h sweep) and :mod:`mha.rank` (the
d_k sweep); the frame stack and its painter are :mod:`mha.frames`.
"""

from __future__ import annotations

import base64
import html

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from ._validate import as_float_array, check_counts, check_index, check_ndim, check_positive_int, check_prob_rows
from .examples import RoleExample, WorkedExample, cat_sat_mat, random_layer
from .frames import FramePainter, caption_html, canvas_png, frame_stack, slider_text_html
from .head_roles import read_roles, row_arithmetic
from .plotting import OKABE_ITO, book_style, escape_math, heatmap, text_colour
from .rank import fit_scores, target_diagonal
from .split_trace import h_sweep_frames
from .width_one import as_keys, q_peak, q_sweep_weights, q_threshold

__all__ = ["canvas_png", "dk_sweep", "dk_sweep_live", "frame_stack", "h_sweep", "h_sweep_live", "h_sweep_widths", "q_sweep",
           "q_sweep_live", "roles_explorer"]

#: Okabe-Ito without black: one colour per token or head (black is kept for text and markers).
PALETTE = OKABE_ITO[:7]
MAX_WIDTH = 64  # the h sweep draws one cell per column: wider layers would not be legible
MAX_TOKENS = 32
KL_FLOOR = 1e-9  # a KL below this is drawn on the floor of the log axis and read "≈ 0"
KEY_HEADS = 6  # the h sweep names the keys under each map up to this many heads (beyond, under head 1's)
FIG_WIDTH = 7.0  # inches at 100 dpi: about the width of the book's text column, so text shows at size


def _num(x, fmt):
    """A number formatted with a true minus sign (read out as "minus")."""
    return format(x, fmt).replace("-", "\u2212")


def _colour(i):
    return PALETTE[i % len(PALETTE)]


# ================================================================ q sweep
def _check_tokens(tokens, n, what):
    """Token names as strings, one for each of ``n`` things (default ``token 1``, ``token 2``, ...)."""
    if tokens is None:
        return tuple(f"token {i + 1}" for i in range(n))
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be a sequence of names, not one string ({tokens!r})")
    tokens = tuple(str(t) for t in tokens)
    if len(tokens) != n:
        raise ValueError(f"tokens must name each of the {n} {what}, got {len(tokens)}: {tokens}")
    return tokens


def _label(text):
    """Text for a matplotlib artist, drawn literally (a token such as ``$x^$`` is data, not a formula)."""
    return escape_math(text)


class _QPainter:
    """One figure for the q sweep: the row's scores ``q k_j`` and its weights, as bars that move with q.

    The weights against every q are chapter 07's figure; the sweep shows the step before them
    instead: the one number q stretches (or flips) the fixed row of keys into scores.
    """

    def __init__(self, keys, tokens, q_range=(-5.0, 5.0)):
        self.keys = np.asarray(keys, dtype=float)
        n = self.keys.size
        colours = [_colour(j) for j in range(n)]
        reach = max(abs(q_range[0]), abs(q_range[1])) * max(np.abs(self.keys).max(), 1e-9)
        names = [_label(f"{t}\nkey {_num(k, 'g')}") for t, k in zip(tokens, self.keys)]
        with book_style():
            self.fig = Figure(figsize=(FIG_WIDTH, 2.9), layout="constrained")
            ax_s, ax_w = self.fig.subplots(1, 2)
            self.score_bars = ax_s.bar(range(n), np.zeros(n), color=colours)
            self.score_values = [ax_s.text(j, 0, "", ha="center", fontsize=9) for j in range(n)]
            ax_s.axhline(0, color="grey", lw=0.8)
            ax_s.set_xticks(range(n), labels=names)
            ax_s.set_ylim(-1.25 * reach, 1.25 * reach)
            ax_s.set_ylabel("score q × key")
            ax_s.set_title("scores: q times each key", fontsize=10)
            self.bars = ax_w.bar(range(n), np.zeros(n), color=colours)
            self.values = [ax_w.text(j, 0, "", ha="center", va="bottom", fontsize=9) for j in range(n)]
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
            text.set_text(_num(score, ".2f"))
        for j, (bar, text, w) in enumerate(zip(self.bars, self.values, weights)):
            bar.set_height(w)
            text.set_position((j, w + 0.01))
            text.set_text(f"{w:.2f}")
        self.title.set_text(f"query q = {_num(q, '+.2f')}")

    def draw(self, q, weights):
        """Show the row at query ``q`` with its ``weights``; return PNG bytes."""
        self.draw_state(q, weights)
        return self.painter.png()


def _q_facts(keys, tokens):
    """The sweep's facts in words: where the extreme keys pass 0.95, and the best of a middle key."""
    facts = []
    for j, k in enumerate(keys):
        if k in (keys.min(), keys.max()):
            try:
                q_star = q_threshold(keys, j, 0.95)
            except ValueError:  # a shared extreme key never reaches 0.95
                continue
            side = "<" if k == keys.min() else ">"
            facts.append(f"{tokens[j]} gets more than 0.95 for q {side} {_num(q_star, '.2f')}")
        else:
            q_best, w_best = q_peak(keys, j)
            facts.append(f"{tokens[j]} gets at most {w_best:.3f} (at q = {_num(q_best, '.2f')})")
    return "; ".join(facts)


def _q_caption(q, weights, tokens, keys):
    parts = ", ".join(f"{t} {w:.2f}" for t, w in zip(tokens, weights))
    top = np.flatnonzero(np.isclose(weights, weights.max(), rtol=0, atol=1e-12))
    if top.size > 1:
        lead = "no token leads: the tied tokens share the top weight"
    else:
        j = top[0]
        kind = "largest" if keys[j] == keys.max() else "smallest" if keys[j] == keys.min() else "middle"
        lead = f"{tokens[j]} (the {kind} key) has the top weight"
    return f"q = {_num(q, '+.2f')}: weights {parts}; {lead}."


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
    tokens = _check_tokens(tokens, keys.size, "keys")
    q_values = np.round(np.arange(-4.0, 4.01, 0.5), 2) if q_values is None else _check_stops(q_values)
    weights = q_sweep_weights(q_values, keys)  # (m, n)
    painter = _QPainter(keys, tokens, q_range=(min(-5.0, q_values.min()), max(5.0, q_values.max())))
    frames = [(painter.draw(q, w), _q_caption(q, w, tokens, keys)) for q, w in zip(q_values, weights)]
    intro = (f"A head of width d<sub>k</sub> = 1 with keys {html.escape(_fmt_keys(keys))} for "
             f"“{html.escape(' '.join(tokens))}”. Each score of a query's row is q times a key, so the "
             f"one number q sets the whole row: {html.escape(_q_facts(keys, tokens))}. "
             "Move the slider (or use the arrow keys) to change q.")
    return frame_stack(frames, [_num(q, "+.1f") for q in q_values], start=int(np.argmin(np.abs(q_values))),
                        description="query q", intro=intro, dom_class="mha-q-sweep",
                        value_texts=[f"q = {_num(q, '+.2f')}" for q in q_values])


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


def _parse_numbers(text, what):
    """Numbers separated by commas or spaces, as a float array."""
    try:
        return np.array([float(x) for x in text.replace(",", " ").split()])
    except ValueError:
        raise ValueError(f"could not read the {what} as numbers: {text!r}") from None


def q_sweep_live(keys=(2, 0, 1), tokens=("I", "love", "LLMs")):
    """The q sweep computed live (needs a kernel): a free slider for q and a box for your own keys.

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-q-sweep-live``.
    """
    keys = as_keys(keys)
    tokens = _check_tokens(tokens, keys.size, "keys")
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
            new = as_keys(_parse_numbers(change["new"], "keys"))
        except (ValueError, TypeError) as err:
            message.value = f"<p><b>Keys not changed:</b> {html.escape(str(err))}</p>"
            return
        names = tokens if new.size == len(tokens) else _check_tokens(None, new.size, "keys")
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


# ================================================================ h sweep
def _gap_mosaic(maps):
    """Heads' (T, T) maps side by side with a blank (NaN) column between them."""
    h, T, _ = maps.shape
    gap = np.full((h, T, 1), np.nan)
    return np.concatenate(np.concatenate([maps, gap], axis=2), axis=1)[:, :-1]  # (h, T, T) -> (T, h*(T+1)-1)


class _HPainter:
    """One figure for the h sweep, reused for every h: grids of who gets what, and the heads' maps."""

    def __init__(self, tokens, d):
        T = len(tokens)
        self.tokens = tokens
        cmap = ListedColormap([_colour(i) for i in range(d)])
        with book_style():
            self.fig = Figure(figsize=(FIG_WIDTH, 5.0), layout="constrained")
            grid = self.fig.add_gridspec(2, 2, height_ratios=(1, 1.15))
            self.grids, moving = [], []
            for col, title in enumerate(("right: split_heads", "wrong: reshape straight to $(h, T, d_k)$")):
                ax = self.fig.add_subplot(grid[0, col])
                image = ax.imshow(np.zeros((T, d)), cmap=cmap, vmin=-0.5, vmax=d - 0.5, aspect="auto",
                                  interpolation="nearest")
                every = 1 if d <= 16 else 4  # wide layers: every 4th column named, so the numbers stay apart
                ax.set_xticks(range(d), labels=[str(c) if c % every == 0 else "" for c in range(d)], fontsize=7)
                ax.set_yticks(range(T), labels=[_label(t) for t in tokens])
                ax.set_title(title, fontsize=10)
                ax.set_xlabel("column of Q, K and V (counted from 0)", fontsize=8)
                lines = [ax.vlines(np.arange(1, d) - 0.5, -0.5, T - 0.5, color="white", lw=1),
                         ax.hlines(np.arange(1, T) - 0.5, -0.5, d - 0.5, color="white", lw=1)]
                numbers = [ax.text(0, 0, "", ha="center", va="center", fontsize=8, fontweight="bold")
                           for _ in range(d)]
                self.grids.append((image, numbers))
                moving += [image, *lines, *numbers]
            # Under the wrong split, a line says whose rows head 1 holds; it changes with h.
            self.held = self.grids[1][0].axes.annotate(
                self._held_text(tokens), (0.5, 0), xycoords="axes fraction", xytext=(0, -30),
                textcoords="offset points", ha="center", va="top", fontsize=8)
            self.maps = self.fig.add_subplot(grid[1, :])
            viridis = matplotlib.colormaps["viridis"].with_extremes(bad="white")
            self.mosaic = self.maps.imshow(np.zeros((T, T)), cmap=viridis, vmin=0, vmax=1, aspect="auto",
                                           interpolation="nearest")
            self.maps.set_yticks(range(T), labels=[_label(t) for t in tokens])
            self.maps.set_ylabel("query")
            self.maps.set_title("each head's weights; the keys are named under each map", fontsize=9, loc="left")
            self.maps.set_xticks([])  # the keys and heads are named under their maps
            self.maps.set_frame_on(False)
            # Keys under every map (under head 1's alone past KEY_HEADS heads), head names below them.
            self.keys = [self.maps.annotate(_label(tokens[k % T]), (k % T, T - 0.5), xytext=(0, -2),
                                            textcoords="offset points", ha="center", va="top", rotation=90,
                                            fontsize=7, annotation_clip=False)
                         for k in range(KEY_HEADS * T)]
            drop = 6 + 4.2 * max(len(t) for t in tokens)  # points: below the longest key name
            self.names = [self.maps.annotate("head 1", (0, T - 0.5), xytext=(0, -drop), textcoords="offset points",
                                             ha="center", va="top", fontsize=8, annotation_clip=False)
                          for _ in range(d)]
            self.fig.colorbar(self.mosaic, ax=self.maps, shrink=0.9, label="weight")
            self.headline = self.fig.suptitle("$h$ = 1 heads of width $d_k$ = 1: who gets which entry", fontsize=11)
        # The maps' box stays put; only the picture inside and its x range change with h.
        self.painter = FramePainter(self.fig, [*moving, self.held, self.mosaic, *self.keys, *self.names,
                                               self.headline])

    @staticmethod
    def _held_text(rows):
        rows = list(rows)
        return _label(f"head 1's positions 0 to {len(rows) - 1} hold numbers of: " + ", ".join(rows))

    def _show_split(self, image, numbers, split):
        image.set_data(split.owner)
        t, m = len(self.tokens) // 2, split.d_k // 2
        for i, text in enumerate(numbers):  # each head's number once, on the middle one of its entries
            text.set_visible(i < split.h)
            if i < split.h:
                text.set_text(str(i + 1))
                text.set_position((split.column[i, t, m], split.token[i, t, m]))
                text.set_color(text_colour(_colour(i)))

    def draw(self, frame):
        """Show one :class:`~mha.split_trace.HSweepFrame`; return PNG bytes."""
        T = len(self.tokens)
        for (image, numbers), split in zip(self.grids, (frame.right, frame.wrong)):
            self._show_split(image, numbers, split)
        self.held.set_text(self._held_text(self.tokens[t] for t in frame.wrong.token[0, :, 0]))
        width = frame.h * (T + 1) - 1
        self.mosaic.set_data(_gap_mosaic(frame.weights))
        self.mosaic.set_extent((-0.5, width - 0.5, T - 0.5, -0.5))
        self.maps.set_xlim(-0.5, max(width, 3 * (T + 1) - 1) - 0.5)  # room for 3 heads at least
        labelled = frame.h if frame.h <= KEY_HEADS else 1
        for k, key in enumerate(self.keys):
            i, s = divmod(k, T)
            key.set_visible(i < labelled)
            key.xy = (i * (T + 1) + s, T - 0.5)
        for i, name in enumerate(self.names):
            name.set_visible(i < frame.h)
            name.xy = (i * (T + 1) + (T - 1) / 2, T - 0.5)
            name.set_text(f"head {i + 1}" if frame.h <= 6 else str(i + 1))
        heads = "1 head" if frame.h == 1 else f"{frame.h} heads"
        self.headline.set_text(f"$h$ = {heads} of width $d_k$ = {frame.d_k}: who gets which entry")
        return self.painter.png()


def _span(first, last, what):
    """A span of 0-based indices in words: "column 3", "columns 0 and 1", "columns 0 to 5"."""
    if first == last:
        return f"{what} {first}"
    return f"{what}s {first} {'and' if last == first + 1 else 'to'} {last}"


def _columns(first, last):
    return _span(first, last, "column")


def _positions(first, last):
    return _span(first, last, "position")


def _quoted(names):
    names = [f"“{n}”" for n in names]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _wrong_rows(split, tokens):
    """Head 1 under the wrong reshape, in words: which positions hold numbers of which token."""
    held = split.token[0, :, 0]  # (T,): the token whose numbers sit at each position of head 1
    runs, start = [], 0
    for t in range(1, held.size + 1):
        if t == held.size or held[t] != held[start]:
            runs.append((_positions(start, t - 1), tokens[held[start]]))
            start = t
    if len(runs) == 1:
        where, name = runs[0]
        return f"{where} {'both' if held.size == 2 else 'all'} hold numbers of “{name}”"
    return " and ".join(f"{where} numbers of “{name}”" if i else f"{where} hold numbers of “{name}”"
                        for i, (where, name) in enumerate(runs))


def _h_caption(frame, tokens):
    """Text alternative of one h sweep picture (columns and positions counted from 0, heads from 1)."""
    T = len(tokens)
    if frame.h == 1 or np.array_equal(frame.right.owner, frame.wrong.owner):
        return (f"h = {frame.h}: {'one head' if frame.h == 1 else f'{frame.h} heads'} of width {frame.d_k}; "
                "both ways of splitting agree.")
    spans = "; ".join(f"head {i + 1} gets {_columns(i * frame.d_k, (i + 1) * frame.d_k - 1)}"
                      for i in range(min(frame.h, 4)))
    more = "; and so on" if frame.h > 4 else ""
    missing = [tokens[t] for t in range(T) if t not in set(frame.wrong.token[0].ravel().tolist())]
    lost = f"; nothing of {_quoted(missing)} reaches head 1" if missing else ""
    return (f"h = {frame.h} heads of width d_k = {frame.d_k}. Right split: {spans}{more}, of every token. "
            f"Wrong reshape: in head 1, {_wrong_rows(frame.wrong, tokens)}, so {_positions(1, T - 1)} "
            f"{'holds a token other than its own' if T == 2 else 'hold tokens other than their own'}{lost}. "
            f"Below, each of the {frame.h} heads weighs the sentence with its own map.")


def _check_size(T, d):
    if d > MAX_WIDTH or T > MAX_TOKENS:
        raise ValueError(f"the h sweep draws one cell per entry of Q: it takes at most {MAX_TOKENS} tokens and "
                         f"width d <= {MAX_WIDTH}, got {T} tokens and d = {d}")


def _h_layer(tokens, d, seed):
    """The random layer of the h sweep, after checking its size."""
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be a sequence of words, not one string ({tokens!r})")
    tokens = tuple(tokens)
    _check_size(len(tokens), check_positive_int(d, "d"))
    return random_layer(tokens, d, seed=seed)


def _check_layer(layer):
    if not isinstance(layer, WorkedExample):
        raise TypeError(f"layer must be a mha.examples.WorkedExample, got {type(layer).__name__}")
    _check_size(*layer.X.shape)
    return layer


def h_sweep(d=12, tokens=("the", "cat", "sat", "down"), *, seed=0, layer=None):
    """The h sweep: every ``h`` that divides ``d``, split right and wrong, with each head's attention.

    Parameters
    ----------
    d : int
        Model width (ignored when ``layer`` is given).
    tokens : sequence of str
        The sentence (ignored when ``layer`` is given).
    seed : int
        Seed of the random layer (see :func:`mha.examples.random_layer`).
    layer : WorkedExample, optional
        A layer to use instead, e.g. :func:`mha.examples.i_love_llms` (``d = 4``, ``h`` in 1, 2, 4).

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-h-sweep``.
    """
    layer = _h_layer(tokens, d, seed) if layer is None else _check_layer(layer)
    tokens = tuple(layer.tokens)
    frames = h_sweep_frames(layer)
    d = layer.X.shape[1]
    painter = _HPainter(tokens, d)
    pictures = [(painter.draw(f), _h_caption(f, tokens)) for f in frames]
    intro = (f"A layer of width d = {d} on “{html.escape(' '.join(tokens))}”, split into h heads for every "
             "h that divides d. Colours and numbers show which head receives each entry of Q, K and V. "
             "Move the slider (or use the arrow keys) to change h.")
    return frame_stack(pictures, [f"{f.h} (d_k = {f.d_k})" for f in frames], start=min(1, len(frames) - 1),
                        description="heads h", intro=intro, dom_class="mha-h-sweep",
                        value_texts=[f"h = {f.h}, head width d_k = {f.d_k}" for f in frames])


def h_sweep_widths(widths=(8, 12, 16, 24), tokens=("the", "cat", "sat", "down"), *, seed=0, start=1):
    """The h sweep at several widths: a menu picks the width d, a slider the head count h.

    Each width has its own :func:`h_sweep` (its own random layer, seeded
    alike). The menu is linked to a ``Stack`` of the sweeps with ``jslink``,
    so the page needs no kernel; :func:`h_sweep_live` takes any width.

    Parameters
    ----------
    widths : sequence of int
        Distinct widths, each at most ``MAX_WIDTH``.
    tokens : sequence of str
    seed : int
    start : int
        Index of the width shown first.

    Returns
    -------
    ipywidgets.VBox
        Children: the intro, the width menu and the stack of sweeps. DOM class ``mha-h-widths``;
        every sweep inside has ``mha-h-sweep``.
    """
    if isinstance(widths, (str, bytes)) or not hasattr(widths, "__iter__"):
        raise TypeError(f"widths must be a sequence of model widths, got {widths!r}")
    widths = tuple(check_positive_int(d, "widths entry") for d in widths)
    if not widths or len(set(widths)) != len(widths):
        raise ValueError(f"widths must be distinct and at least one, got {widths}")
    start = check_index(start, "start", len(widths))
    sweeps = [h_sweep(d, tokens, seed=seed) for d in widths]
    menu = widgets.Dropdown(options=[(f"d = {d}", i) for i, d in enumerate(widths)], index=start,
                            description="width d", style={"description_width": "initial"})
    stack = widgets.Stack(sweeps, selected_index=start)
    widgets.jslink((menu, "index"), (stack, "selected_index"))
    intro = ("Pick a width d from the menu; each width has its own slider for the head counts h that divide it.")
    box = widgets.VBox([widgets.HTML(f"<p>{intro}</p>"), menu, stack])
    box.add_class("mha-h-widths")
    return box


def h_sweep_live(d=12, tokens=("the", "cat", "sat", "down"), *, seed=0):
    """The h sweep computed live (needs a kernel): your own sentence and width, then move h.

    Returns
    -------
    ipywidgets.VBox
        With DOM class ``mha-h-sweep-live``.
    """
    _h_layer(tokens, d, seed)  # the starting sentence and width must be valid
    sentence = widgets.Text(value=" ".join(tokens), description="sentence", continuous_update=False)
    width = widgets.BoundedIntText(value=d, min=1, max=MAX_WIDTH, description="width d")
    h = widgets.SelectionSlider(options=[1], description="heads h", continuous_update=True,
                                style={"description_width": "initial"})
    image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%", height="auto"))
    caption, message = widgets.HTML(), widgets.HTML()
    state = {}

    def rebuild(_=None):
        words = tuple(sentence.value.split())
        if not words:
            message.value = "<p><b>Not changed:</b> type at least one word.</p>"
            return
        try:
            layer = _h_layer(words, width.value, seed)
        except ValueError as err:
            message.value = f"<p><b>Not changed:</b> {html.escape(str(err))}</p>"
            return
        state.update(tokens=words, frames={f.h: f for f in h_sweep_frames(layer)},
                     painter=_HPainter(words, width.value))
        message.value = ""
        before = h.value
        h.options = list(state["frames"])  # may move h, and then the observer redraws
        if h.value == before:
            redraw()

    def redraw(_=None):
        frame = state["frames"][h.value]
        image.value = state["painter"].draw(frame)
        caption.value = caption_html(_h_caption(frame, state["tokens"]))

    rebuild()
    h.observe(redraw, names="value")
    sentence.observe(rebuild, names="value")
    width.observe(rebuild, names="value")
    box = widgets.VBox([widgets.HTML("<p>Type a sentence and a width d, then move h.</p>"),
                        sentence, width, h, message, image, caption])
    box.add_class("mha-h-sweep-live")
    return box


# ================================================================ d_k sweep
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
                           va="top", fontsize=8)
            ax_kl.set_xticks(d_ks)
            ax_kl.set_xlabel("head width $d_k$")
            ax_kl.set_title(f"error left, summed KL (≈ 0 drawn at {KL_FLOOR:g})", fontsize=9)
            sv_top = max(f.singular_values.max() for f in fits)
            self.bars = ax_sv.bar(np.arange(1, n + 1), np.zeros(n), color=OKABE_ITO[2])
            self.rank_line = ax_sv.axvline(0.5, color="black", ls=":", lw=1)
            ax_sv.set_ylim(0, sv_top * 1.1 if sv_top > 0 else 1)
            ax_sv.set_xticks(np.arange(1, n + 1))
            ax_sv.set_xlabel("index i")
            ax_sv.set_title("singular values $\\sigma_i$ of $Q K^\\top$", fontsize=9)
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
        Names of the ``n`` positions (default ``1 ... n``).
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
    tokens = tuple(str(i + 1) for i in range(n)) if tokens is None else _check_tokens(tokens, n, "positions")
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
    rows = [_parse_numbers(line, "target") for line in text.strip().splitlines() if line.strip()]
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
        state.update(n=m, painter=_DkPainter(fits, tuple(str(i + 1) for i in range(m))), fits=fits)
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


# ================================================================ heads with roles
ROLE_HS = (4, 2, 1)  # left to right: the heads merge


def _head_titles(roles, h):
    """What each of ``h`` heads holds, when the roles sit one per block of the layer's own heads."""
    n = len(roles)
    if h == 1:
        return ("one head: every role's columns",)
    per = n // h
    return tuple(f"head {i + 1}: " + " + ".join(roles[i * per:(i + 1) * per]) for i in range(h))


class _RolesPainter:
    """Every head's map at one h, with one query row framed and its weights written in."""

    def __init__(self, weights, tokens, titles):
        self.weights = weights
        h, T, _ = weights.shape
        rows, cols = (1, h) if h <= 2 else (2, h // 2)
        size = {1: (3.9, 3.7), 2: (6.6, 3.7)}.get(h, (6.6, 6.9))
        labels = [_label(t) for t in tokens]
        with book_style():
            self.fig = Figure(figsize=size, dpi=96, layout="constrained")
            axes = np.atleast_1d(self.fig.subplots(rows, cols)).ravel()
            self.images, self.frames, self.cells = [], [], []
            for ax, A, title in zip(axes, weights, titles):
                image = ax.imshow(A, cmap="viridis", vmin=0, vmax=1, interpolation="nearest")
                ax.set_xticks(range(T), labels=labels, rotation=90)
                ax.set_yticks(range(T), labels=labels)
                ax.set_title(_label(title), fontsize=9)
                ax.set_xlabel("key", fontsize=9)
                ax.set_ylabel("query", fontsize=9)
                outer = ax.add_patch(matplotlib.patches.Rectangle((-0.5, -0.5), T, 1, fill=False, ec="black", lw=3))
                inner = ax.add_patch(matplotlib.patches.Rectangle((-0.5, -0.5), T, 1, fill=False, ec="white", lw=1.2))
                texts = [ax.text(s, 0, "", ha="center", va="center", fontsize=6.5) for s in range(T)]
                self.images.append(image)
                self.frames.append((outer, inner))
                self.cells.append(texts)
            self.fig.colorbar(self.images[0], ax=list(axes), shrink=0.8, label="weight")
        self.painter = FramePainter(self.fig, [p for pair in self.frames for p in pair]
                                    + [t for texts in self.cells for t in texts])

    def draw(self, row):
        """Frame query ``row`` in every map and write its weights; return PNG bytes."""
        for image, pair, texts, A in zip(self.images, self.frames, self.cells, self.weights):
            for patch in pair:
                patch.set_y(row - 0.5)
            for s, text in enumerate(texts):
                text.set_position((s, row))
                text.set_text(f"{A[row, s]:.2f}".lstrip("0"))
                text.set_color(text_colour(image.cmap(image.norm(A[row, s]))))
        return self.painter.png()


def _fmt_exp(x):
    return f"{x:,.0f}" if x >= 1000 else f"{x:.1f}" if x >= 10 else f"{x:.3f}"


def _arithmetic_table(step, title, tokens):
    """One head's row as an HTML table: one line per key, then the sum."""
    top = int(np.argmax(step.weights))
    marks = ['<tr class="mha-top">' if s == top else "<tr>" for s in range(len(tokens))]
    lines = "".join(
        f"{marks[s]}<th scope=\"row\">{html.escape(tokens[s])}</th>"
        f"<td>{_num(q, 'g')}</td><td>{_num(x, '.3f')}</td><td>{_fmt_exp(e)}</td><td>{w:.3f}</td></tr>"
        for s, (q, x, e, w) in enumerate(zip(step.scores, step.scaled, step.exps, step.weights)))
    return (f"<table class=\"mha-arith\"><caption>{html.escape(title)} (d<sub>k</sub> = {step.d_k})</caption>"
            "<thead><tr><th scope=\"col\">key</th><th scope=\"col\">q·k</th>"
            f"<th scope=\"col\">÷ √{step.d_k}</th><th scope=\"col\">exp</th><th scope=\"col\">weight</th></tr></thead>"
            f"<tbody>{lines}</tbody><tfoot><tr><th scope=\"row\">sum</th><td></td><td></td>"
            f"<td>{_fmt_exp(step.total)}</td><td>{step.weights.sum():.3f}</td></tr></tfoot></table>")


_ROLE_CSS = ("<style>.mha-arith{border-collapse:collapse;font-size:0.85em;margin:0 0 0.6em 0}"
             ".mha-arith caption{text-align:left;font-weight:bold;padding-bottom:0.2em}"
             ".mha-arith th,.mha-arith td{padding:0.1em 0.45em;text-align:right;border-bottom:1px solid #ccc}"
             ".mha-arith th[scope=row]{text-align:left}"
             ".mha-arith tr.mha-top{background:#E69F00;color:black;font-weight:bold}"
             ".mha-arith-grid{display:flex;flex-wrap:wrap;gap:0 1.2em}"
             ".mha-roles img{max-width:100%;height:auto}</style>")


def _roles_caption(h, row, tokens, titles, weights):
    """Text alternative of one picture: the query, and where each head's row puts most of its weight."""
    parts = []
    for title, A in zip(titles, weights):
        w = A[row]
        big = [s for s in np.argsort(-w, kind="stable") if w[s] >= 0.15][:3]
        parts.append(f"{title}: " + ", ".join(f"{tokens[s]} {w[s]:.2f}" for s in big))
    heads = "1 head" if h == 1 else f"{h} heads"
    return (f"{heads}, query row {row} “{tokens[row]}” framed in every map. Most weight: "
            + "; ".join(parts) + ".")


def _roles_page(png, caption, steps_row, titles, tokens):
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    tables = "".join(_arithmetic_table(step, title, tokens) for step, title in zip(steps_row, titles))
    return (f"<figure style=\"margin:0\"><img src=\"{src}\" alt=\"{html.escape(caption)}\">"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            f"<p>The arithmetic of row “{html.escape(tokens[steps_row[0].row])}” in each head "
            "(the key with the largest weight is shaded orange):</p>"
            f"<div class=\"mha-arith-grid\">{tables}</div>")


def _check_head_counts(hs, h_max):
    """The h slider's stops: distinct head counts, each dividing ``h_max``."""
    if isinstance(hs, (str, bytes)) or not hasattr(hs, "__iter__"):
        raise TypeError(f"hs must be a sequence of head counts, got {hs!r}")
    hs = tuple(check_positive_int(h, "hs entry") for h in hs)
    if not hs or len(set(hs)) != len(hs) or any(h_max % h for h in hs):
        raise ValueError(f"hs must be distinct head counts that divide the example's h = {h_max}, got {hs}")
    return hs


def roles_explorer(example=None, hs=ROLE_HS, *, start_h=None, start_row=1):
    """Heads with roles on the static page: pick h and a query row; see every map and the row's arithmetic.

    Everything is computed with :func:`mha.attention_steps` when the page is
    built: for each ``h`` a picture of every head's map with the chosen row
    framed, and for each head a table of that row (``q . k``, divided by
    ``sqrt(d_k)``, ``exp``, the sum, the weights). The pictures and tables sit
    in a ``Stack`` per ``h`` whose pages are ``Stack`` s per row; the h slider is
    linked to the outer stack and the row menu to every inner stack with
    ``jslink``, so both pickers work in the browser without a kernel.

    Parameters
    ----------
    example : RoleExample, optional
        Default :func:`mha.examples.cat_sat_mat`.
    hs : sequence of int
        Head counts to offer, in the slider's order (default 4, 2, 1: moving
        right merges heads); each must divide the example's ``h``, so each
        head holds whole roles.
    start_h, start_row : int
        Shown first (default: the first of ``hs``, and the second token).

    Returns
    -------
    ipywidgets.VBox
        Children: intro, h slider, row menu, the stack of stacks. DOM classes
        ``mha-sweep`` and ``mha-roles``.
    """
    example = cat_sat_mat() if example is None else example
    if not isinstance(example, RoleExample):
        raise TypeError(f"example must be a mha.examples.RoleExample, got {type(example).__name__}")
    hs = _check_head_counts(hs, example.h)
    tokens = tuple(example.tokens)
    T = len(tokens)
    start_h = hs[0] if start_h is None else start_h
    if start_h not in hs:
        raise ValueError(f"start_h must be one of hs = {hs}, got {start_h!r}")
    start_row = check_index(start_row, "start_row", T)
    row_menu = widgets.Dropdown(options=[(f"{t}: {w}", t) for t, w in enumerate(tokens)], index=start_row,
                                description="query row", style={"description_width": "initial"})
    h_slider = widgets.SelectionSlider(options=[("1 head" if h == 1 else f"{h} heads", i) for i, h in enumerate(hs)],
                                       index=hs.index(start_h), description="heads h", continuous_update=True,
                                       style={"description_width": "initial"},
                                       layout=widgets.Layout(width="95%", max_width="30em"))
    shared = widgets.Layout()
    per_h = []
    for h in hs:
        reading = read_roles(example, h)
        titles = _head_titles(example.roles, h)
        painter = _RolesPainter(reading.weights, tokens, titles)
        pages = []
        for row in range(T):
            caption = _roles_caption(h, row, tokens, titles, reading.weights)
            pages.append(widgets.HTML(_roles_page(painter.draw(row), caption, row_arithmetic(reading.steps, row),
                                                  titles, tokens), layout=shared))
        inner = widgets.Stack(pages, selected_index=start_row, layout=shared)
        widgets.jslink((row_menu, "index"), (inner, "selected_index"))
        per_h.append(inner)
    outer = widgets.Stack(per_h, selected_index=hs.index(start_h))
    widgets.jslink((h_slider, "index"), (outer, "selected_index"))
    intro = (f"The layer of “{html.escape(' '.join(tokens))}”, the same matrices read with h heads. "
             "Move the slider right (or press the arrow keys) to merge the heads, and pick a query row "
             "from the menu: the row is "
             "framed in every map, and below the maps each head's arithmetic for that row is spelled out.")
    note = slider_text_html("heads h", [f"h = {h}" for h in hs])
    box = widgets.VBox([widgets.HTML(_ROLE_CSS + f"<p>{intro}</p>{note}"), h_slider, row_menu, outer])
    box.add_class("mha-sweep")
    box.add_class("mha-roles")
    return box
