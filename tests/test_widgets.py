"""Tests of mha.widgets: the static sweeps (frames, jslink, PNGs) and the live ones."""

import json

import ipywidgets
import matplotlib.pyplot as plt
import numpy as np
import pytest
from ipywidgets.embed import dependency_state, embed_data
from ipywidgets.widgets.widget import _instances

from ipywidgets.widgets.widget_link import Link

import mha
from mha import rank, widgets

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def parts(box):
    """(intro, slider, stack) of a static sweep."""
    intro, slider, stack = box.children
    return intro, slider, stack


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
    (link,) = links_of(slider)
    assert isinstance(link, Link)  # jslink: runs in the browser, no kernel needed
    assert link.source == (slider, "index") and link.target == (stack, "selected_index")


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


def test_h_sweep_captions_name_the_mixed_tokens(built):
    captions = [c for _, c in frames(built["h"])]
    assert "both ways of splitting agree" in captions[0]
    assert "head 1 columns 0-5" in captions[1] and "the, the, cat, cat" in captions[1]


def test_no_pyplot_figures_are_left_open(built):
    widgets.dk_sweep(n=3)
    assert plt.get_fignums() == []  # else a notebook would show stray figures


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="tokens"):
        widgets.q_sweep(keys=(1, 2, 3), tokens=("a", "b"))
    with pytest.raises(ValueError, match="target"):
        widgets.dk_sweep(target=np.ones((3, 3)))
    with pytest.raises(ValueError, match="does not divide"):
        rank.head_split(2, 5, 2)


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
    _, sentence, width, h, message, image, caption = box.children
    assert list(h.options) == [1, 2, 3, 6]
    h.value = 3
    assert "h = 3" in caption.value
    first = bytes(image.value)
    sentence.value = "one two three"
    assert bytes(image.value) != first and "one, one, one" in caption.value  # head 1 holds "one" thrice
    width.value = 4
    assert list(h.options) == [1, 2, 4]
