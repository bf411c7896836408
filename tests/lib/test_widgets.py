"""Tests of mha.widgets: the static sweeps (frames, jslink, PNGs) and the live ones."""

import html
import json

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from ipywidgets.embed import dependency_state, embed_data
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link
import matplotlib
from matplotlib.backends.backend_agg import FigureCanvasAgg

import mha
from mha import plotting, split_trace, widgets
from mha.widgets import query_sweep, split_sweep, width_sweep

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def parts(box):
    """(intro, slider, stack) of a static sweep (the slider sits in a row beside its readout)."""
    intro, row, stack = box.children
    slider, readout = row.children
    assert "mha-slider-row" in row._dom_classes and "mha-readout" in readout._dom_classes
    return intro, slider, stack


def readout_of(box):
    """The read-only readout beside a static sweep's slider: one HTML per stop, in a Stack."""
    return box.children[1].children[1]


def frames(box):
    """(png bytes, caption html) of every frame."""
    out = []
    for page in parts(box)[2].children:
        image, caption = page.children
        assert isinstance(image, ipywidgets.Image) and not image.tooltip  # a tooltip breaks ImageView
        out.append((bytes(image.value), caption.value))
    return out


def links_of(slider):
    return [w for w in list(_instances.values())
            if isinstance(w, Link) and w.source[0] is slider]


@pytest.fixture(scope="module")
def built():
    return {
        "q": widgets.q_sweep(),
        "h": widgets.h_sweep(),
        "h4": widgets.h_sweep(layer=mha.examples.i_love_llms()),
        "dk": widgets.dk_sweep(n=4),
    }


@pytest.mark.parametrize("name, dom_class, count", [
    ("q", "mha-q-sweep", 17), ("h", "mha-h-sweep", 6), ("h4", "mha-h-sweep", 3), ("dk", "mha-dk-sweep", 4),
])
def test_static_sweep_structure(built, name, dom_class, count):
    box = built[name]
    assert isinstance(box, ipywidgets.VBox) and dom_class in box._dom_classes
    intro, slider, stack = parts(box)
    assert isinstance(slider, ipywidgets.SelectionSlider) and isinstance(stack, ipywidgets.Stack)
    assert len(slider.options) == len(stack.children) == count
    assert slider.index == stack.selected_index
    assert slider.description and intro.value  # accessible names
    readout = readout_of(box)
    links = links_of(slider)
    assert all(isinstance(link, Link) for link in links)  # jslink: runs in the browser, no kernel needed
    assert {link.source for link in links} == {(slider, "index")}
    assert {link.target for link in links} == {(stack, "selected_index"), (readout, "selected_index")}
    # the slider's own readout is an editable box: hidden; the stop's text is shown read-only beside it
    assert not slider.readout and readout.selected_index == slider.index
    assert [page.value for page in readout.children] == [html.escape(label) for label, _ in slider.options]


@pytest.mark.parametrize("name", ["q", "h", "h4", "dk"])
def test_frames_are_small_distinct_pngs_with_captions(built, name):
    shown = frames(built[name])
    pngs = [png for png, _ in shown]
    assert all(png.startswith(PNG_MAGIC) for png in pngs)
    assert len(set(pngs)) == len(pngs), "two stops of the slider show the same picture"
    assert max(map(len, pngs)) <= 60_000
    captions = [caption for _, caption in shown]
    assert len(set(captions)) == len(captions) and all(len(c) > 40 for c in captions)


@pytest.mark.parametrize("name", ["q", "h", "dk"])
def test_page_weight_below_1_mb(built, name):
    box = built[name]
    slider = parts(box)[1]
    data = embed_data(views=[box], state=dependency_state([box, *links_of(slider)]))
    assert any(m["model_name"] == "LinkModel" for m in data["manager_state"]["state"].values())
    assert len(json.dumps(data)) <= 1_000_000


def test_q_sweep_starts_at_zero_and_captions_tell_the_facts(built):
    box = built["q"]
    slider = parts(box)[1]
    assert slider.label == "+0.0"
    captions = [c for _, c in frames(box)]
    labels = list(slider.options)
    at = {label: captions[i] for i, (label, _) in enumerate(labels)}
    assert "0.33" in at["+0.0"] and "no token leads" in at["+0.0"]
    assert "love 0.95" in at["\u22123.0"] and "love (the smallest key)" in at["\u22123.0"]
    assert not any("LLMs (the" in c for c in captions)  # the middle key never leads


def test_dk_sweep_captions_follow_the_floor(built):
    captions = [c for _, c in frames(built["dk"])]
    assert all("out of reach" in c for c in captions[:2])
    assert all("is reached" in c and "≈ 0" in c for c in captions[2:])


def test_h_sweep_captions_name_the_misplaced_tokens(built):
    captions = [c for _, c in frames(built["h"])]  # d = 12, T = 4: h = 1, 2, 3, 4, 6, 12
    assert "both ways of splitting agree" in captions[0]
    # h < T: head 1 holds two tokens, two positions each
    assert "head 1 gets columns 0 to 5" in captions[1]
    assert "positions 0 and 1 hold numbers of “the” and positions 2 and 3 numbers of “cat”" in captions[1]
    assert "nothing of “sat” and “down” reaches head 1" in captions[1]
    # h = T and h > T: head 1 holds pieces of "the" only; nothing is mixed within a position
    for c in captions[3:]:
        assert "positions 0 to 3 all hold numbers of “the”" in c
        assert "nothing of “cat”, “sat” and “down” reaches head 1" in c
    assert "head 1 gets column 0;" in captions[5] and "columns 0-0" not in captions[5]
    assert not any("mixed" in c or "-" in c.split("Right split")[-1].split("Wrong")[0] for c in captions)


@pytest.mark.parametrize("T, d", [(4, 12), (3, 4), (2, 4), (5, 10), (1, 6)])
def test_h_sweep_captions_match_the_traced_split(T, d):
    """Every caption's claim about head 1 under the wrong reshape is read off split_trace."""
    tokens = tuple(f"w{i}" for i in range(T))
    layer = mha.examples.random_layer(tokens, d, seed=0)
    for frame in split_trace.h_sweep_frames(layer):
        caption = split_sweep._h_caption(frame, tokens)
        held = frame.wrong.token[0, :, 0]
        if T == 1 or frame.h == 1:
            assert "both ways of splitting agree" in caption
            continue
        assert held[0] == 0 and (held[1:] != np.arange(1, T)).all()  # what the caption then says
        assert "other than" in caption
        for t in set(range(T)) - set(frame.wrong.token[0].ravel().tolist()):
            assert f"“{tokens[t]}”" in caption.split("nothing of")[1]
        if frame.h >= T:
            assert f"all hold numbers of “{tokens[0]}”" in caption or f"both hold numbers of “{tokens[0]}”" in caption


def test_sliders_carry_a_name_and_their_value_as_text(built):
    import html as html_lib
    import re

    expected = {"q": ("query q", "q = +0.00"), "h": ("heads h", "h = 2, head width d_k = 6"),
                "dk": ("head width d_k", "d_k = 1")}
    for name, (label, start_text) in expected.items():
        intro, slider, _ = parts(built[name])
        found = re.search(r'class="mha-slider-text" hidden data-name="([^"]*)" data-values="([^"]*)"', intro.value)
        assert found, intro.value
        assert html_lib.unescape(found[1]) == label == slider.description
        values = json.loads(html_lib.unescape(found[2]))
        assert len(values) == len(slider.options) and values[slider.index] == start_text


def test_q_sweep_shows_scores_not_the_curves_of_chapter_07(built):
    painter = query_sweep._QPainter(np.array([2.0, 0.0, 1.0]), ("I", "love", "LLMs"))
    ax_s, ax_w = painter.fig.axes
    assert not ax_s.lines[1:] and not ax_w.lines  # bars only (one zero line): no weight-against-q curves
    assert not [t for t in ax_w.texts + ax_s.texts if "peaks" in t.get_text() or "0.95" in t.get_text()]
    painter.draw_state(2.0, mha.width_one.q_sweep_weights(2.0, painter.keys))
    assert [b.get_height() for b in painter.score_bars] == [4.0, 0.0, 2.0]
    intro = parts(built["q"])[0].value
    assert "0.95" not in intro and "0.333" not in intro  # no thresholds: chapter 05's exercises ask for them
    assert "weights at that q" in intro


def test_no_pyplot_figures_are_left_open(built):
    widgets.dk_sweep(n=3)
    assert plt.get_fignums() == []  # else a notebook would show stray figures


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="tokens"):
        widgets.q_sweep(keys=(1, 2, 3), tokens=("a", "b"))
    with pytest.raises(ValueError, match="target"):
        widgets.dk_sweep(target=np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not divide"):
        split_trace.head_split(2, 5, 2)


def test_q_sweep_live_redraws_and_takes_new_keys():
    box = widgets.q_sweep_live()
    assert "mha-q-sweep-live" in box._dom_classes
    _, keys, q, message, image, caption = box.children
    before = bytes(image.value)
    q.value = -3.0
    assert bytes(image.value).startswith(PNG_MAGIC) and bytes(image.value) != before
    assert "love 0.95" in caption.value
    keys.value = "3, 0, 1, 2"
    assert message.value == "" and "token 4" in caption.value
    keys.value = "3, x"
    assert "Keys not changed" in message.value and "token 4" in caption.value


def test_dk_sweep_live_fits_a_typed_target():
    box = widgets.dk_sweep_live(n=3)
    _, table, d_k, message, image, caption = box.children
    assert "out of reach" in caption.value
    d_k.value = 2
    assert "is reached" in caption.value
    table.value = "1 2 3 4\n4 3 2 1\n1 1 5 1\n2 2 2 1"
    assert d_k.max == 4 and message.value == ""
    table.value = "1 2\n3"
    assert "Target not changed" in message.value and d_k.max == 4


def test_h_sweep_live_takes_a_new_sentence():
    box = widgets.h_sweep_live(d=6, tokens=("a", "b"))
    _, sentence, width, (h, readout), message, image, caption = box.children[:3] + (box.children[3].children,) + box.children[4:]
    assert list(h.options) == [1, 2, 3, 6]
    h.value = 3
    assert "h = 3" in caption.value
    first = bytes(image.value)
    sentence.value = "one two three"
    assert bytes(image.value) != first and "positions 0 to 2 all hold numbers of “one”" in caption.value
    assert readout.value == "3"  # the read-only readout follows the slider
    width.value = 4
    assert list(h.options) == [1, 2, 4]


# ================================================================ adversarial input
MATH_TOKENS = ("$x^$", "b", "$\\frac{$")  # an unfinished formula would stop matplotlib


def test_dollar_tokens_are_drawn_literally_in_every_sweep():
    for box in (widgets.q_sweep(tokens=MATH_TOKENS), widgets.h_sweep(d=4, tokens=MATH_TOKENS),
                widgets.dk_sweep(n=3, tokens=MATH_TOKENS)):
        shown = frames(box)
        assert all(png.startswith(PNG_MAGIC) for png, _ in shown)
    assert "$x^$" in frames(widgets.q_sweep(tokens=MATH_TOKENS))[0][1]  # the caption keeps the token
    assert plt.get_fignums() == []


def picture_of_text(text, **kwargs):
    fig = matplotlib.figure.Figure(figsize=(2, 0.5))
    fig.text(0.05, 0.3, text, **kwargs)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    return bytes(canvas.buffer_rgba())


def test_escaped_labels_render_as_the_token():
    token = "$x^$ or $\\frac{$"
    with pytest.raises(ValueError):
        picture_of_text(token)  # matplotlib reads it as a broken formula
    # Escaped, it looks exactly like the token drawn with formulas switched off.
    assert picture_of_text(plotting.escape_math(token)) == picture_of_text(token, parse_math=False)


def test_live_boxes_take_dollar_tokens():
    box = widgets.h_sweep_live(d=4, tokens=("a", "b"))
    _, sentence, width, (h, _), message, image, caption = box.children[:3] + (box.children[3].children,) + box.children[4:]
    first = bytes(image.value)
    sentence.value = "$\\frac{$ $x^$ ok"
    h.value = 2
    assert message.value == "" and bytes(image.value) != first and "hold numbers of “$\\frac{$”" in caption.value
    box = widgets.q_sweep_live(tokens=MATH_TOKENS)
    _, keys, q, message, image, caption = box.children
    q.value = 1.0
    assert "$x^$" in caption.value and bytes(image.value).startswith(PNG_MAGIC)


@pytest.mark.parametrize("call, error, words", [
    (lambda: widgets.q_sweep(q_values=[]), ValueError, "q_values is empty"),
    (lambda: widgets.q_sweep(q_values=[0.0, 0.0]), ValueError, "distinct"),
    (lambda: widgets.q_sweep(q_values=[[0.0]]), ValueError, "q_values"),
    (lambda: widgets.q_sweep(q_values=[0.0, np.nan]), ValueError, "q_values"),
    (lambda: widgets.q_sweep(keys=()), ValueError, "keys"),
    (lambda: widgets.q_sweep(tokens="abc"), TypeError, "one string"),
    (lambda: widgets.dk_sweep(d_k_values=[]), ValueError, "d_k_values is empty"),
    (lambda: widgets.dk_sweep(d_k_values=[1, 1]), ValueError, "distinct"),
    (lambda: widgets.dk_sweep(d_k_values=[0]), ValueError, "d_k_values"),
    (lambda: widgets.dk_sweep(d_k_values=2), TypeError, "d_k_values"),
    (lambda: widgets.dk_sweep(n=0), ValueError, "n must be"),
    (lambda: widgets.dk_sweep(n=2.5), TypeError, "n"),
    (lambda: widgets.dk_sweep(target=np.full((2, 3), 1 / 3)), ValueError, "square"),
    (lambda: widgets.dk_sweep_live(target=np.eye(3)), ValueError, "above 0"),
    (lambda: widgets.h_sweep(tokens=()), ValueError, "tokens"),
    (lambda: widgets.h_sweep(d=0), ValueError, "d must be"),
    (lambda: widgets.h_sweep(d=1000), ValueError, "at most"),
    (lambda: widgets.h_sweep(seed=-1), ValueError, "seed"),
    (lambda: widgets.h_sweep(seed=np.nan), TypeError, "seed"),
    (lambda: widgets.h_sweep(layer="I love LLMs"), TypeError, "WorkedExample"),
    (lambda: widgets.h_sweep_live(tokens=()), ValueError, "tokens"),
])
def test_bad_arguments_get_clear_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_h_sweep_live_refuses_a_sentence_too_long_to_draw():
    box = widgets.h_sweep_live(d=4, tokens=("a", "b"))
    _, sentence, width, h, message, image, caption = box.children
    before = bytes(image.value)
    sentence.value = " ".join(["w"] * (split_sweep.MAX_TOKENS + 1))
    assert "Not changed" in message.value and "at most" in message.value and bytes(image.value) == before


# ================================================================ text colour on the cells
def test_cell_text_colour_is_the_wcag_rule_of_mha_plotting():
    values = np.linspace(0, 1, 1001)
    image = plotting.heatmap(values.reshape(-1, 1), [str(i) for i in range(values.size)], ["v"], annotate=False)
    texts = [image.axes.text(0, i, "") for i in range(values.size)]
    width_sweep._fill_cells(texts, image, values)
    viridis = matplotlib.colormaps["viridis"]
    for text, v in zip(texts, values):
        assert text.get_color() == plotting.text_colour(viridis(v))
        assert plotting.contrast_ratio(text.get_color(), viridis(v)) >= 4.5, v
    plt.close("all")


def test_wcag_rule_beats_the_old_half_way_rule_on_viridis():
    viridis = matplotlib.colormaps["viridis"]
    old = [v for v in np.linspace(0, 1, 1001)
           if plotting.contrast_ratio("white" if v < 0.5 else "black", viridis(v)) < 4.5]
    assert old and min(old) > 0.4 and max(old) < 0.5  # the cells the old rule got wrong
    assert all(plotting.contrast_ratio(plotting.text_colour(viridis(v)), viridis(v)) >= 4.5 for v in old)


# ================================================================ heads with roles, and the h sweep at several widths
import base64  # noqa: E402
import re  # noqa: E402

from mha import head_roles  # noqa: E402


@pytest.fixture(scope="module")
def roles_box():
    return widgets.roles_explorer()


def test_roles_explorer_links_both_pickers_to_nested_stacks(roles_box):
    assert {"mha-sweep", "mha-roles"} <= set(roles_box._dom_classes)
    intro, (h, readout), row, outer = roles_box.children[0], roles_box.children[1].children, *roles_box.children[2:]
    assert isinstance(h, ipywidgets.SelectionSlider) and isinstance(row, ipywidgets.Dropdown)
    assert h.description and row.description and [label for label, _ in h.options] == ["4 heads", "2 heads", "1 head"]
    assert [label for label, _ in row.options][:2] == ["0: the", "1: cat"]
    assert isinstance(outer, ipywidgets.Stack) and len(outer.children) == 3
    assert {link.target for link in links_of(h)} == {(outer, "selected_index"), (readout, "selected_index")}
    assert [page.value for page in readout.children] == ["4 heads", "2 heads", "1 head"] and not h.readout
    row_links = links_of(row)
    assert {link.target[0] for link in row_links} == set(outer.children)  # every inner stack follows the menu
    assert all(len(inner.children) == 8 and inner.selected_index == row.index for inner in outer.children)


def _png_and_alt(page):
    src = re.search(r'src="data:image/png;base64,([^"]+)" alt="([^"]+)"', page.value)
    return base64.b64decode(src.group(1)), src.group(2)


def test_roles_pages_show_distinct_framed_maps_with_alt_text(roles_box):
    outer = roles_box.children[3]
    pictures, alts = [], []
    for inner in outer.children:
        for page in inner.children:
            png, alt = _png_and_alt(page)
            assert png.startswith(PNG_MAGIC) and len(png) < 40_000
            pictures.append(png)
            alts.append(alt)
    assert len(set(pictures)) == len(pictures) == 24 and len(set(alts)) == 24
    assert "4 heads, query row 1 “cat”" in alts[1] and "delimiter sink: . 0.99" in alts[1]


def test_roles_tables_hold_the_library_s_numbers(roles_box):
    ex = mha.examples.cat_sat_mat()
    outer = roles_box.children[3]
    for k, h in enumerate((4, 2, 1)):
        steps = mha.attention_steps(ex.X, *ex.weights, h=h)
        for row in (1, 7):
            page = outer.children[k].children[row].value
            assert page.count('<table class="mha-arith">') == h
            cells = re.findall(r"<td>([^<]*)</td><td>([^<]*)</td></tr>", page)
            weights = [float(w) for _, w in cells]  # per head: 8 keys, then the sum
            for i in range(h):
                shown = np.array(weights[9 * i:9 * i + 8])
                np.testing.assert_allclose(shown, steps.weights[i, row], atol=5e-4)
                assert weights[9 * i + 8] == pytest.approx(1.0)
            top = head_roles.row_arithmetic(steps, row)[0]
            assert f"<td>{top.scaled.max():.3f}</td>".replace("-", "\u2212") in page


def test_roles_state_is_bounded(roles_box):
    h, row = roles_box.children[1].children[0], roles_box.children[2]
    data = embed_data(views=[roles_box], state=dependency_state([roles_box, *links_of(h), *links_of(row)]))
    assert sum(m["model_name"] == "LinkModel" for m in data["manager_state"]["state"].values()) == 5
    assert len(json.dumps(data)) <= 600_000


def test_roles_explorer_bad_input():
    with pytest.raises(TypeError, match="RoleExample"):
        widgets.roles_explorer(mha.examples.i_love_llms())
    with pytest.raises(ValueError, match="divide"):
        widgets.roles_explorer(hs=(1, 3))
    with pytest.raises(ValueError, match="start_h"):
        widgets.roles_explorer(hs=(1, 2), start_h=4)
    with pytest.raises(ValueError, match="start_row"):
        widgets.roles_explorer(hs=(1,), start_h=1, start_row=8)


def test_h_sweep_widths_menu_picks_a_sweep_per_width():
    box = widgets.h_sweep_widths(widths=(4, 6), tokens=("a", "b", "c"))
    assert "mha-h-widths" in box._dom_classes
    intro, menu, stack = box.children
    assert isinstance(menu, ipywidgets.Dropdown) and menu.description == "width d"
    (link,) = links_of(menu)
    assert link.target == (stack, "selected_index") and stack.selected_index == 1
    counts = [len(parts(sweep)[1].options) for sweep in stack.children]
    assert counts == [3, 4] and all("mha-h-sweep" in s._dom_classes for s in stack.children)
    with pytest.raises(ValueError, match="distinct"):
        widgets.h_sweep_widths(widths=(4, 4))
    with pytest.raises(ValueError, match="widths entry"):
        widgets.h_sweep_widths(widths=(0,))


def test_h_sweep_names_the_keys_under_each_map():
    painter = split_sweep._HPainter(("a", "b"), 4)
    frame = split_trace.h_sweep_frames(mha.examples.random_layer(("a", "b"), 4))[1]  # h = 2
    painter.draw(frame)
    shown = [k for k in painter.keys if k.get_visible()]
    assert [k.get_text() for k in shown] == ["a", "b", "a", "b"]
    assert [k.xy[0] for k in shown] == [0, 1, 3, 4]  # head 2's keys sit past the gap


def test_no_widget_uses_pickers_a_screen_reader_cannot_read():
    """ipywidgets 8 draws ToggleButtons as buttons named "3" with no pressed state and no group name,
    and RadioButtons as radios with no group name (its description is not tied to them). On the site
    no script names them any more, and JupyterLab runs none: the book's pickers are Dropdowns."""
    import pathlib
    import re

    folder = pathlib.Path(widgets.__file__).parent
    found = {p.name: re.findall(r"\b(ToggleButtons?|RadioButtons)\(", p.read_text()) for p in folder.glob("*.py")}
    assert len(found) > 5 and not any(found.values()), {k: v for k, v in found.items() if v}
