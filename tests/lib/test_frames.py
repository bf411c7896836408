"""Tests of mha.widgets.frames: the painter (blitting), small PNGs, heatmap frames and the frame stack."""

import base64
import io
import json
import sys

import ipywidgets
import numpy as np
import pytest
from ipywidgets.embed import dependency_state, embed_data
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from PIL import Image as PILImage

from mha import widgets
from mha.widgets import frames

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def pixels(png):
    return np.asarray(PILImage.open(io.BytesIO(png)).convert("RGB"))


def tiny_png(i):
    """A distinct small PNG for frame i."""
    buf = io.BytesIO()
    PILImage.new("RGB", (4, 4), (i % 256, 0, 0)).save(buf, format="png")
    return buf.getvalue()


def page_state(box):
    """The widget state as a page stores it (every key, defaults too) and its JSON size."""
    slider = box.children[1].children[0]
    links = [w for w in list(_instances.values()) if isinstance(w, Link) and w.source[0] is slider]
    data = embed_data(views=[box], state=dependency_state([box, *links], drop_defaults=False),
                      drop_defaults=False)
    state = data["manager_state"]["state"]
    return state, len(json.dumps(data["manager_state"]))


# ================================================================ the painter
def test_painter_redraws_only_the_moving_artists():
    fig = Figure(figsize=(3, 2), dpi=80)
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    ax.set_title("fixed title")
    dot, = ax.plot([0.2], [0.2], "o", ms=12)
    painter = frames.FramePainter(fig, [dot])
    first = pixels(painter.png())
    dot.set_data([0.8], [0.8])
    second = pixels(painter.png())
    changed = np.argwhere((first != second).any(axis=2))
    assert changed.size, "the moving dot did not move"
    title_rows = slice(0, 15)  # the title sits at the top and never moves
    np.testing.assert_array_equal(first[title_rows], second[title_rows])
    dot.set_data([0.2], [0.2])
    np.testing.assert_array_equal(pixels(painter.png()), first)  # the same state: the same picture


def test_painter_matches_a_full_redraw():
    # Blitting draws the moving artists last, so this holds for artists that nothing covers.
    fig = Figure(figsize=(3, 2), dpi=80)
    fig.add_subplot(position=[0.1, 0.1, 0.5, 0.8]).plot([0, 1], [1, 0])
    note = fig.text(0.7, 0.5, "first")
    painter = frames.FramePainter(fig, [note])
    note.set_text("second")
    blitted = pixels(painter.png())
    note.set_animated(False)
    painter.canvas.draw()  # everything drawn again, in the frozen layout
    np.testing.assert_array_equal(blitted, pixels(frames.canvas_png(painter.canvas)))


def test_hidden_moving_artists_are_left_out():
    fig = Figure(figsize=(2, 1), dpi=80)
    text = fig.text(0.5, 0.5, "shown")
    painter = frames.FramePainter(fig, [text])
    shown = painter.png()
    text.set_visible(False)
    hidden = painter.png()
    assert shown != hidden and len(np.unique(pixels(hidden).reshape(-1, 3), axis=0)) == 1  # blank


def test_painter_refuses_a_non_figure():
    with pytest.raises(TypeError, match="Figure"):
        frames.FramePainter("figure", [])


def test_canvas_png_has_at_most_64_colours():
    fig = Figure(figsize=(2, 2), dpi=60)
    fig.add_subplot().imshow(np.linspace(0, 1, 400).reshape(20, 20))
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    png = frames.canvas_png(canvas)
    image = PILImage.open(io.BytesIO(png))
    assert png.startswith(PNG_MAGIC) and image.mode == "P" and len(image.getcolors()) <= 64
    assert image.size == canvas.get_width_height()


# ================================================================ heatmap frames
def test_heatmap_frames_one_distinct_picture_per_map():
    maps = np.random.default_rng(0).dirichlet(np.ones(4), size=(5, 4))  # (5, 4, 4)
    pngs = frames.heatmap_frames(maps, list("abcd"), list("abcd"), titles=[f"map {i}" for i in range(5)])
    assert len(pngs) == 5 and all(p.startswith(PNG_MAGIC) for p in pngs) and len(set(pngs)) == 5
    same = frames.heatmap_frames(maps[[2]], list("abcd"), list("abcd"), titles=["map 2"])
    assert same[0] == pngs[2]  # a frame does not depend on the frames drawn before it


def test_heatmap_frames_of_a_rectangular_map_with_dollar_labels():
    maps = np.full((2, 2, 3), 1 / 3)
    pngs = frames.heatmap_frames(maps, ["$x^$", "b"], ["$\\frac{$", "$", "c"], titles=["$y_$", "two"])
    assert len(pngs) == 2 and pngs[0] != pngs[1]  # only the titles differ


@pytest.mark.parametrize("maps, rows, cols, titles, kwargs, error, words", [
    (np.zeros((2, 2)), "ab", "ab", ["t"], {}, ValueError, "axes"),
    (np.zeros((0, 2, 2)), "ab", "ab", [], {}, ValueError, "no matrices"),
    (np.zeros((1, 2, 2)), "a", "ab", ["t"], {}, ValueError, "row labels"),
    (np.zeros((1, 2, 2)), "ab", "ab", ["t", "u"], {}, ValueError, "titles"),
    (np.full((1, 2, 2), np.nan), "ab", "ab", ["t"], {}, ValueError, "finite"),
    (np.zeros((1, 2, 2)), "ab", "ab", ["t"], {"vmin": 1.0, "vmax": 0.0}, ValueError, "vmin"),
    (np.zeros((1, 2, 2)), "ab", "ab", ["t"], {"vmax": np.inf}, ValueError, "vmax"),
    (np.zeros((1, 2, 2)), "ab", "ab", ["t"], {"dpi": 0}, ValueError, "dpi"),
    (np.zeros((1, 2, 2)), "ab", "ab", ["t"], {"figsize": (0, 3)}, ValueError, "figsize"),
])
def test_heatmap_frames_bad_input(maps, rows, cols, titles, kwargs, error, words):
    with pytest.raises(error, match=words):
        frames.heatmap_frames(maps, rows, cols, titles, **kwargs)


# ================================================================ the frame stack
def stack_of(n, **kwargs):
    pictures = [(tiny_png(i), f"frame {i} of the test") for i in range(n)]
    return frames.frame_stack(pictures, [str(i) for i in range(n)], start=kwargs.pop("start", 0),
                              description="stop", intro="A test.", dom_class="mha-test", **kwargs)


def test_frame_stack_structure_and_link():
    box = stack_of(3, start=1)
    intro, row, stack = box.children
    slider, readout = row.children
    assert {"mha-sweep", "mha-test"} <= set(box._dom_classes)
    assert slider.index == stack.selected_index == readout.selected_index == 1 and len(stack.children) == 3
    links = [w for w in list(_instances.values()) if isinstance(w, Link) and w.source[0] is slider]
    assert {link.source for link in links} == {(slider, "index")}
    assert {link.target for link in links} == {(stack, "selected_index"), (readout, "selected_index")}
    # the slider's own readout (an editable box) is hidden; its stops are read-only text beside it
    assert not slider.readout and "mha-readout" in readout._dom_classes and "mha-slider-row" in row._dom_classes
    assert [page.value for page in readout.children] == ["0", "1", "2"]
    image, caption = stack.children[2].children
    assert bytes(image.value) == tiny_png(2) and caption.value == "<p>frame 2 of the test</p>"


def test_frames_share_their_layouts():
    box = stack_of(30)
    pages = box.children[2].children
    assert len({id(page.layout) for page in pages} | {id(page.children[1].layout) for page in pages}) == 1
    assert len({id(page.children[0].layout) for page in pages}) == 1
    state, _ = page_state(box)
    layouts = [m for m in state.values() if m["model_name"] == "LayoutModel"]
    assert len(layouts) <= 8  # a fixed number, however many frames (2 for the slider's row and readout)


def test_page_state_grows_slowly_with_the_frames():
    _, small = page_state(stack_of(10))
    _, large = page_state(stack_of(60))
    per_frame = (large - small) / 50 - len(base64.b64encode(tiny_png(0)))  # less the PNG itself
    # An Image, an HTML caption and their VBox, and the stop's readout (an HTML), stored with every
    # key; without the shared Layout and style each frame would add three more Layout models (about
    # 1.1 KB each) and a style.
    assert per_frame < 3100, per_frame


def test_widgets_re_exports_are_the_frames_functions():
    # mha.widgets re-exports each widget function from the module that defines it, and nothing of
    # the frames' machinery: a new widget imports that from mha.widgets.frames.
    for name in widgets.__all__:
        function = getattr(widgets, name)
        assert function.__module__.startswith("mha.widgets.") and function.__name__ == name
        assert getattr(sys.modules[function.__module__], name) is function
    assert not set(frames.__all__) & set(widgets.__all__)


def test_caption_html_escapes_and_writes_d_k():
    assert frames.caption_html("<b> & d_k") == "<p>&lt;b&gt; &amp; d<sub>k</sub></p>"


@pytest.mark.parametrize("pictures, labels, start, error, words", [
    ([], [], 0, ValueError, "frames is empty"),
    ([(b"png", "a")], ["1", "2"], 0, ValueError, "labels"),
    ([(b"png", "a")], ["1"], 1, ValueError, "start=1"),
    ([(b"png", "a")], ["1"], 0.0, TypeError, "start"),
    (["png"], ["1"], 0, TypeError, r"frames\[0\]"),
])
def test_frame_stack_bad_input(pictures, labels, start, error, words):
    with pytest.raises(error, match=words):
        frames.frame_stack(pictures, labels, start=start, description="d", intro="i", dom_class="c")


def test_frame_stack_is_a_vbox():
    assert isinstance(stack_of(1), ipywidgets.VBox)


def test_frame_stack_tells_the_page_the_slider_s_name_and_value_texts():
    import html as html_lib
    import re

    box = stack_of(3, start=1, value_texts=["h = 1", "h = 2", "h = <3> & \"4\""])
    intro = box.children[0].value
    found = re.search(r'<span class="mha-slider-text" hidden data-name="([^"]*)" data-values="([^"]*)"></span>',
                      intro)
    assert found and html_lib.unescape(found[1]) == "stop"
    assert json.loads(html_lib.unescape(found[2])) == ["h = 1", "h = 2", "h = <3> & \"4\""]
    default = stack_of(2).children[0].value  # without value_texts: the labels
    assert json.loads(html_lib.unescape(re.search(r'data-values="([^"]*)"', default)[1])) == ["0", "1"]
    with pytest.raises(ValueError, match="value_texts must say each of the 3 stops, got 2"):
        stack_of(3, value_texts=["a", "b"])
