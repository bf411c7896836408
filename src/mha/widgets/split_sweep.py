"""The h sweep: which columns of ``Q``, ``K`` and ``V`` each of ``h`` heads receives, and each head's map.

For every ``h`` that divides the width ``d``: the right split next to the
wrong reshape, and the attention map of every head. :func:`h_sweep` draws its
frames when the page is built, :func:`h_sweep_widths` offers several widths
behind a menu, :func:`h_sweep_live` takes your own sentence and width with a
kernel. The numbers come from :mod:`mha.split_trace`.
"""

from __future__ import annotations

import html
import itertools
import textwrap

import ipywidgets as widgets
import matplotlib
import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from .._validate import check_index, check_labels, check_positive_int
from ..examples import WorkedExample, random_layer
from ..plotting import book_style, text_colour
from ..split_trace import h_sweep_frames
from ._common import FIG_WIDTH, colour, label
from .frames import FramePainter, caption_html, frame_stack, readout_row

__all__ = ["h_sweep", "h_sweep_live", "h_sweep_widths"]

MAX_WIDTH = 64  # the h sweep draws one cell per column: wider layers would not be legible
MAX_TOKENS = 32
KEY_HEADS = 6  # the h sweep names the keys under each map up to this many heads (beyond, under head 1's)
TEXT_PT = 10  # every text of the picture: the book's smallest (10 pt at 100 dpi is 9 CSS px or more on a page)


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
        cmap = ListedColormap([colour(i) for i in range(d)])
        with book_style():
            # taller for longer sentences: one row of each grid and map per token
            self.fig = Figure(figsize=(FIG_WIDTH, 5.0 + 0.3 * max(0, T - 4)), layout="constrained")
            grid = self.fig.add_gridspec(2, 2, height_ratios=(1, 1.15))
            self.grids, moving = [], []
            for col, title in enumerate(("right: split_heads", "wrong: reshape straight to $(h, T, d_k)$")):
                ax = self.fig.add_subplot(grid[0, col])
                image = ax.imshow(np.zeros((T, d)), cmap=cmap, vmin=-0.5, vmax=d - 0.5, aspect="auto",
                                  interpolation="nearest")
                # wider layers: every 2nd, 4th or 8th column named, so the numbers stay apart
                every = 1 if d <= 8 else 2 if d <= 16 else 4 if d <= 32 else 8
                ax.set_xticks(range(d), labels=[str(c) if c % every == 0 else "" for c in range(d)])
                ax.set_yticks(range(T), labels=[label(t) for t in tokens])
                ax.set_title(title, fontsize=TEXT_PT)
                ax.set_xlabel("column of Q, K, V (from 0)", fontsize=TEXT_PT)
                lines = [ax.vlines(np.arange(1, d) - 0.5, -0.5, T - 0.5, color="white", lw=1),
                         ax.hlines(np.arange(1, T) - 0.5, -0.5, d - 0.5, color="white", lw=1)]
                numbers = [ax.text(0, 0, "", ha="center", va="center", fontsize=TEXT_PT, fontweight="bold")
                           for _ in range(d)]
                self.grids.append((image, numbers))
                moving += [image, *lines, *numbers]
            # Under the wrong split, two lines say whose rows head 1 holds; they change with h.
            self.held = self.grids[1][0].axes.annotate(
                self._held_text(tokens), (0.5, 0), xycoords="axes fraction", xytext=(0, -34),
                textcoords="offset points", ha="center", va="top", fontsize=TEXT_PT)
            self.maps = self.fig.add_subplot(grid[1, :])
            viridis = matplotlib.colormaps["viridis"].with_extremes(bad="white")
            self.mosaic = self.maps.imshow(np.zeros((T, T)), cmap=viridis, vmin=0, vmax=1, aspect="auto",
                                           interpolation="nearest")
            self.maps.set_yticks(range(T), labels=[label(t) for t in tokens])
            self.maps.set_ylabel("query")
            self.maps_title = self.maps.set_title(self.KEYS_NAMED, fontsize=TEXT_PT, loc="left")
            self.maps.set_xticks([])  # the keys and heads are named under their maps
            self.maps.set_frame_on(False)
            # Keys under every map (under head 1's alone past KEY_HEADS heads), head names below them.
            self.keys = [self.maps.annotate(label(tokens[k % T]), (k % T, T - 0.5), xytext=(0, -2),
                                            textcoords="offset points", ha="center", va="top", rotation=90,
                                            fontsize=TEXT_PT, annotation_clip=False)
                         for k in range(KEY_HEADS * T)]
            self.drop = 6 + 0.62 * TEXT_PT * max(len(t) for t in tokens)  # points: below the longest key name
            self.names = [self.maps.annotate("head 1", (0, T - 0.5), xytext=(0, -self.drop),
                                             textcoords="offset points", ha="center", va="top", fontsize=TEXT_PT,
                                             annotation_clip=False)
                          for _ in range(d)]
            self.fig.colorbar(self.mosaic, ax=self.maps, shrink=0.9, label="weight")
            self.headline = self.fig.suptitle("$h$ = 1 heads of width $d_k$ = 1: who gets which entry", fontsize=11)
        # The maps' box stays put; only the picture inside and its x range change with h.
        self.painter = FramePainter(self.fig, [*moving, self.held, self.mosaic, self.maps_title, *self.keys,
                                               *self.names, self.headline])

    KEYS_NAMED = "each head's weights; the keys are named under each map"
    KEYS_UNNAMED = "each head's weights; the keys, left to right, are the queries, top to bottom"

    @staticmethod
    def _held_text(rows):
        rows = list(rows)
        held = ", ".join(rows)
        if len(held) > 40:  # a long sentence: each run of one token once, with its count ("the ×4")
            runs = [(t, len(list(group))) for t, group in itertools.groupby(rows)]
            held = ", ".join(t if n == 1 else f"{t} ×{n}" for t, n in runs)
        lines = textwrap.wrap(f"hold numbers of: {held}", 44)
        return label(f"head 1's positions 0 to {len(rows) - 1}\n" + "\n".join(lines))

    def _show_split(self, image, numbers, split):
        image.set_data(split.owner)
        T, m = len(self.tokens), split.d_k // 2
        column_px = image.axes.get_window_extent().width / split.owner.shape[1]
        apart = 1.6 * TEXT_PT / 72 * self.fig.dpi / column_px  # columns between two numbers of one row
        placed = []
        for i, text in enumerate(numbers):  # each head's number once, on the middle one of its entries ...
            spot = None
            if i < split.h:  # ... or on another row of its entries, if a number near by took that row
                for t in sorted(range(T), key=lambda t: abs(t - T // 2)):
                    c, r = split.column[i, t, m], split.token[i, t, m]
                    if all(r != r2 or abs(c - c2) >= apart for c2, r2 in placed):
                        spot = (c, r)
                        break
            text.set_visible(spot is not None)  # no room left on any row: the colour alone names the head
            if spot is not None:
                placed.append(spot)
                text.set_text(str(i + 1))
                text.set_position(spot)
                text.set_color(text_colour(colour(i)))

    def draw(self, frame):
        """Show one :class:`~mha.split_trace.HSweepFrame`; return PNG bytes."""
        T = len(self.tokens)
        for (image, numbers), split in zip(self.grids, (frame.right, frame.wrong)):
            self._show_split(image, numbers, split)
        self.held.set_text(self._held_text(self.tokens[t] for t in frame.wrong.token[0, :, 0]))
        width = frame.h * (T + 1) - 1
        self.mosaic.set_data(_gap_mosaic(frame.weights))
        self.mosaic.set_extent((-0.5, width - 0.5, T - 0.5, -0.5))
        cells = max(width, 3 * (T + 1) - 1)  # room for 3 heads at least
        self.maps.set_xlim(-0.5, cells - 0.5)
        cell_px = self.maps.get_window_extent().width / cells
        text_px = TEXT_PT / 72 * self.fig.dpi
        # Keys are named under the maps (under head 1's alone past KEY_HEADS heads) where a cell is as wide as
        # a line of text; in narrower cells the title says where the keys are instead.
        labelled = (frame.h if frame.h <= KEY_HEADS else 1) if cell_px >= 0.9 * text_px else 0
        self.maps_title.set_text(self.KEYS_NAMED if labelled else self.KEYS_UNNAMED)
        for k, key in enumerate(self.keys):
            i, s = divmod(k, T)
            key.set_visible(i < labelled)
            key.xy = (i * (T + 1) + s, T - 0.5)
        every = int(np.ceil(2.6 * text_px / ((T + 1) * cell_px)))  # head numbers at least 2.6 text heights apart
        for i, name in enumerate(self.names):
            name.set_visible(i < frame.h and (frame.h <= 6 or i % every == 0))
            name.xy = (i * (T + 1) + (T - 1) / 2, T - 0.5)
            name.xyann = (0, -self.drop if labelled else -2)
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
    tokens = tuple(check_labels(tokens, "tokens"))
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
                        sentence, width, readout_row(h), message, image, caption])
    box.add_class("mha-h-sweep-live")
    return box
