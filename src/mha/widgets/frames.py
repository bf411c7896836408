"""Frame stacks: pictures drawn once when the page is built, switched by a slider in the browser.

A static page has no Python behind it, so a figure that should move with a
slider is drawn in advance, once per stop of the slider. This module makes
those pictures fast and small, and puts them on the page:

* :class:`FramePainter` -- a figure whose fixed parts (axes, labels, colour
  bar) are drawn once; each frame redraws only the artists that move
  (blitting), and comes out as PNG bytes.
* :func:`canvas_png` -- a canvas as a 64-colour PNG, a quarter of the bytes of
  a full-colour one for flat plots.
* :func:`heatmap_frames` -- one labelled heatmap per matrix of a stack, for
  instance every head's attention map of a model.
* :func:`frame_stack` -- the pictures with their captions in a ``Stack``, and
  a slider linked to it with ``jslink``, so the page needs no kernel.
"""

from __future__ import annotations

import html
import io
import json

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import HTMLStyle
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from .._validate import (as_float_array, check_index, check_labels, check_ndim, check_number, check_positive_int,
                         check_text, is_sequence)
from ..plotting import SEQUENTIAL, book_style, check_cmap, escape_math

__all__ = ["FramePainter", "canvas_png", "caption_html", "check_dom_class", "check_figsize", "frame_stack", "heatmap_frames",
           "readout_row", "slider_text_html"]


def canvas_png(canvas):
    """The canvas as a small PNG: 64 colours (plots have few), no dithering.

    Rendered figures here are flat colours, lines and text, so a palette PNG
    looks the same as a full-colour one (what ``Figure.savefig`` writes) at
    about a quarter of the bytes, and encodes faster.
    """
    if not (hasattr(canvas, "get_width_height") and hasattr(canvas, "buffer_rgba")):
        raise TypeError(f"canvas must be a drawn matplotlib Agg canvas (FigureCanvasAgg), got {type(canvas).__name__}")
    image = PILImage.frombuffer("RGBA", canvas.get_width_height(), canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    small = image.convert("RGB").quantize(64, method=PILImage.Quantize.FASTOCTREE, dither=PILImage.Dither.NONE)
    buf = io.BytesIO()
    small.save(buf, format="png")
    return buf.getvalue()


class FramePainter:
    """A figure whose fixed parts are drawn once; each frame redraws only the moving artists.

    The figure is laid out and drawn once without the ``moving`` artists, and
    that picture is kept as the background. :meth:`png` pastes the background
    back and draws the moving artists (visible ones only) on top. Change the
    artists (``set_data``, ``set_text``, ...) between calls; they must stay
    inside the figure's layout, which is frozen after the first draw.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        Not a pyplot figure: a bare ``Figure``, so no window or notebook output appears.
    moving : sequence of matplotlib artists
        The artists that change from frame to frame.

    Examples
    --------
    >>> fig = Figure(figsize=(2, 1))
    >>> title = fig.suptitle("")
    >>> painter = FramePainter(fig, [title])
    >>> pictures = []
    >>> for word in ("one", "two"):
    ...     title.set_text(word)
    ...     pictures.append(painter.png())
    >>> pictures[0][:4], pictures[0] != pictures[1]
    (b'\\x89PNG', True)
    """

    def __init__(self, fig, moving):
        if not isinstance(fig, Figure):
            raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
        self.fig = fig
        self.moving = tuple(moving)
        self.canvas = FigureCanvasAgg(fig)
        for artist in self.moving:
            artist.set_animated(True)  # left out of the background, still counted by the layout
        with book_style():
            self.canvas.draw()  # lays out (constrained) and draws the background ...
        fig.set_layout_engine("none")  # ... and that layout is kept for every frame
        self.background = self.canvas.copy_from_bbox(fig.bbox)

    def png(self):
        """The background with the moving artists drawn on top, as PNG bytes."""
        self.canvas.restore_region(self.background)
        with book_style():
            for artist in self.moving:
                if artist.get_visible():
                    self.fig.draw_artist(artist)
        return canvas_png(self.canvas)


def heatmap_frames(maps, row_labels, col_labels, titles, *, figsize=(4.6, 4.2), dpi=80, vmin=0.0, vmax=1.0,
                   cmap=SEQUENTIAL, xlabel="key (attended to)", ylabel="query (attending)",
                   colorbar_label="weight"):
    """One PNG per matrix of a stack: a labelled heatmap with its own title, drawn by a :class:`FramePainter`.

    Parameters
    ----------
    maps : array_like, shape (m, T, S)
        For instance every head's attention weights, layers and heads
        flattened into one axis: ``A.reshape(-1, T, S)``.
    row_labels, col_labels : sequence of str
        ``T`` and ``S`` names (tokens); they are drawn literally, ``$`` included.
    titles : sequence of str
        One title per matrix, drawn literally.
    figsize, dpi :
        Size of each picture, in inches and dots per inch.
    vmin, vmax : float
        The colour range, the same for every frame (so frames compare).

    Returns
    -------
    list of bytes
        ``m`` PNG images.

    Examples
    --------
    >>> maps = [[[1.0, 0.0], [0.5, 0.5]], [[0.2, 0.8], [0.9, 0.1]]]
    >>> pngs = heatmap_frames(maps, ["a", "b"], ["a", "b"], titles=["head 0", "head 1"])
    >>> len(pngs), pngs[0] != pngs[1]
    (2, True)
    """
    maps = as_float_array(maps, "maps")
    check_ndim(maps, "maps", 3, "(m, T, S)", exact=True)
    m, T, S = maps.shape
    if m == 0:
        raise ValueError(f"maps has no matrices (shape {maps.shape}); a frame stack needs at least one")
    rows, cols, titles = (tuple(check_labels(seq, name, numbers_too=True, chars_ok=name != "titles")) for seq, name in
                          ((row_labels, "row_labels"), (col_labels, "col_labels"), (titles, "titles")))
    if (len(rows), len(cols), len(titles)) != (T, S, m):
        raise ValueError(f"maps has shape {maps.shape} = (m, T, S), so it needs {T} row labels, {S} column labels "
                         f"and {m} titles; got {len(rows)}, {len(cols)} and {len(titles)}")
    vmin, vmax = check_number(vmin, "vmin"), check_number(vmax, "vmax")
    if not vmin < vmax:
        raise ValueError(f"vmin must be below vmax, got vmin={vmin} and vmax={vmax}")
    width, height = check_figsize(figsize)
    dpi = check_positive_int(dpi, "dpi")
    if dpi > 600:
        raise ValueError(f"dpi={dpi} is too large for a frame of a page (at most 600)")
    check_cmap(cmap)
    xlabel, ylabel, colorbar_label = (check_text(t, name) for t, name in
                                      ((xlabel, "xlabel"), (ylabel, "ylabel"), (colorbar_label, "colorbar_label")))
    with book_style():
        fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
        ax = fig.add_subplot()
        image = ax.imshow(maps[0], vmin=vmin, vmax=vmax, cmap=cmap, interpolation="nearest")
        ax.set_xticks(range(S), labels=[escape_math(t) for t in cols], rotation=90)
        ax.set_yticks(range(T), labels=[escape_math(t) for t in rows])
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        fig.colorbar(image, ax=ax, shrink=0.8, label=colorbar_label)
        title = ax.set_title(escape_math(titles[0]))
    painter = FramePainter(fig, [image, title])
    pngs = []
    for matrix, text in zip(maps, titles):
        image.set_data(matrix)
        title.set_text(escape_math(text))
        pngs.append(painter.png())
    return pngs


def check_figsize(figsize, name: str = "figsize"):
    """``figsize`` as ``(width, height)`` in inches, each from 0.5 to 50, or a clear error."""
    if not isinstance(figsize, (tuple, list)) or len(figsize) != 2:
        raise TypeError(f"{name} must be a (width, height) pair in inches, got {figsize!r:.60}")
    return tuple(check_number(v, name, low=0.5, high=50.0) for v in figsize)


def caption_html(text):
    """A frame's caption (its text alternative) as HTML, with d_k written as d with a subscript k.

    >>> caption_html("h = 2 < 3, d_k = 2")
    '<p>h = 2 &lt; 3, d<sub>k</sub> = 2</p>'
    """
    return "<p>" + html.escape(check_text(text)).replace("d_k", "d<sub>k</sub>") + "</p>"


def _check_frames(frames, labels):
    if frames is None or not is_sequence(frames):
        raise TypeError(f"frames must be a sequence of (png_bytes, caption) pairs, got {type(frames).__name__}")
    frames, labels = list(frames), check_labels(labels, "labels", numbers_too=True)
    if not frames:
        raise ValueError("frames is empty: a frame stack needs at least one (png_bytes, caption) pair")
    if len(labels) != len(frames):
        raise ValueError(f"labels must name each of the {len(frames)} frames, got {len(labels)} labels")
    for i, frame in enumerate(frames):
        if not (isinstance(frame, tuple) and len(frame) == 2 and isinstance(frame[0], bytes)):
            raise TypeError(f"frames[{i}] must be a (png_bytes, caption) pair, got {type(frame).__name__}")
        check_text(frame[1], f"the caption of frames[{i}]")
    return frames, labels


def check_dom_class(dom_class, name: str = "dom_class") -> str:
    """``dom_class`` if it is one CSS class name (text without spaces, not empty), else a clear error."""
    dom_class = check_text(dom_class, name)
    if not dom_class or any(c.isspace() for c in dom_class):
        raise ValueError(f"{name} must be one CSS class name, without spaces, got {dom_class!r:.60}")
    return dom_class


def slider_text_html(name, value_texts):
    """A hidden note that tells the page's script how a screen reader should name a slider and its stops.

    The slider that ipywidgets draws reports only the index of its stop
    (``aria-valuenow`` and ``aria-valuetext`` say ``1`` when the stop reads
    ``h = 2``), and its handle has no name. The book's ``mha-a11y.js`` reads this
    note from the sweep's box and sets the handle's ``aria-label`` to ``name``
    and its ``aria-valuetext`` to the text of the stop shown.

    >>> slider_text_html("heads h", ["h = 1", "h = 2"])
    '<span class="mha-slider-text" hidden data-name="heads h" data-values="[&quot;h = 1&quot;, &quot;h = 2&quot;]"></span>'
    """
    values = json.dumps(check_labels(value_texts, "value_texts", numbers_too=True), ensure_ascii=False)
    name = check_text(name, "name")
    return (f'<span class="mha-slider-text" hidden data-name="{html.escape(str(name))}" '
            f'data-values="{html.escape(values)}"></span>')


def readout_row(slider, labels=None):
    """The slider beside a read-only readout: the text of the stop shown, never an editable box.

    ipywidgets 8 draws a slider's own readout as an editable tab stop; for a
    ``SelectionSlider`` text typed there is ignored, so the readout then
    contradicts the picture (on the static page and in JupyterLab alike). This
    hides it and shows the stop's text beside the slider instead: with
    ``labels``, one ``HTML`` per stop in a ``Stack`` linked to the slider's
    ``index`` with ``jslink`` (no kernel needed); without, one ``HTML`` that
    follows the slider's ``label`` in Python (a live widget).

    Parameters
    ----------
    slider : ipywidgets.SelectionSlider
    labels : sequence of str, optional
        The readout of each stop, in the order of the slider's options.

    Returns
    -------
    ipywidgets.HBox
        Children: the slider and the readout (CSS class ``mha-readout``). The row has the class
        ``mha-slider-row``.

    >>> import ipywidgets as widgets
    >>> row = readout_row(widgets.SelectionSlider(options=[("h = 1", 0), ("h = 2", 1)], index=1), ["h = 1", "h = 2"])
    >>> slider, readout = row.children
    >>> slider.readout, readout.selected_index, readout.children[1].value
    (False, 1, 'h = 2')
    """
    if not isinstance(slider, widgets.SelectionSlider):
        raise TypeError(f"slider must be an ipywidgets.SelectionSlider, got {type(slider).__name__}")
    if labels is not None:
        labels = check_labels(labels, "labels", numbers_too=True, chars_ok=True)
    slider.readout = False
    if labels is None:
        readout = widgets.HTML(html.escape(str(slider.label or "")))
        slider.observe(lambda _: setattr(readout, "value", html.escape(str(slider.label or ""))),
                       names=["index", "value", "options"])
    else:
        labels = [str(label) for label in labels]
        if len(labels) != len(slider.options):
            raise ValueError(f"labels must name each of the slider's {len(slider.options)} stops, "
                             f"got {len(labels)}")
        shared, style = widgets.Layout(), HTMLStyle()  # one model each on the page, not one per stop
        readout = widgets.Stack([widgets.HTML(html.escape(label), layout=shared, style=style) for label in labels],
                                selected_index=slider.index, layout=shared)
        widgets.jslink((slider, "index"), (readout, "selected_index"))
    readout.add_class("mha-readout")
    row = widgets.HBox([slider, readout])
    row.add_class("mha-slider-row")
    return row


def frame_stack(frames, labels, *, start, description, intro, dom_class, value_texts=None):
    """A slider linked in the browser to a Stack of (picture, caption) frames.

    The slider's ``index`` is linked to the stack's ``selected_index`` with
    ``jslink``, so the page needs no kernel to switch frames. Every frame is a
    ``VBox`` of an ``Image`` and an ``HTML`` caption; they all share one
    ``Layout`` and one caption style, so the page stores those once instead of
    once per frame.

    Parameters
    ----------
    frames : sequence of (bytes, str)
        PNG bytes and the caption that says what the picture shows.
    labels : sequence of str
        The slider's readout at each frame.
    start : int
        The frame shown first.
    description : str
        The slider's label.
    intro : str
        HTML shown above the slider.
    dom_class : str
        A CSS class for the whole box (the tests and the page find it by this).
    value_texts : sequence of str, optional
        What a screen reader says for each stop, e.g. ``"h = 2, d_k = 6"``
        (default: the ``labels``); see :func:`slider_text_html`.

    Returns
    -------
    ipywidgets.VBox
        Children: the intro, the slider's row (:func:`readout_row`: the slider and its
        read-only readout) and the stack. Carries the classes ``mha-sweep`` and ``dom_class``.
    """
    frames, labels = _check_frames(frames, labels)
    start = check_index(start, "start", len(frames))
    description, intro = check_text(description, "description"), check_text(intro, "intro")
    dom_class = check_dom_class(dom_class)
    value_texts = labels if value_texts is None else check_labels(value_texts, "value_texts", numbers_too=True)
    if len(value_texts) != len(frames):
        raise ValueError(f"value_texts must say each of the {len(frames)} stops, got {len(value_texts)} texts")
    shared = widgets.Layout()  # every frame's box and caption: one model on the page, not two per frame
    image_layout = widgets.Layout(max_width="100%", height="auto")
    caption_style = HTMLStyle(font_size="0.9em")
    # No tooltip on the Image: ipywidgets 8's ImageView fails on it (it has no description).
    pages = [widgets.VBox([widgets.Image(value=png, format="png", layout=image_layout),
                           widgets.HTML(caption_html(text), style=caption_style, layout=shared)],
                          layout=shared)
             for png, text in frames]
    stack = widgets.Stack(pages, selected_index=start)
    slider = widgets.SelectionSlider(options=[(label, i) for i, label in enumerate(labels)], index=start,
                                     description=str(description), continuous_update=True,
                                     style={"description_width": "initial"},
                                     layout=widgets.Layout(width="95%", max_width="40em"))
    widgets.jslink((slider, "index"), (stack, "selected_index"))
    note = slider_text_html(description, value_texts)
    box = widgets.VBox([widgets.HTML(f"<p>{intro}</p>{note}"), readout_row(slider, labels), stack])
    box.add_class("mha-sweep")
    box.add_class(str(dom_class))
    return box
