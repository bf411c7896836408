"""mha.widgets.browser (head_browser): two pickers linked in the browser to a Stack of Stacks of (picture, caption) frames."""

import json

import ipywidgets as widgets
import numpy as np
import pytest
from ipywidgets.embed import dependency_state, embed_data
from ipywidgets.widgets.widget import _instances
from ipywidgets.widgets.widget_link import Link

from mha.widgets.browser import head_browser, head_captions

PNG_MAGIC = b"\x89PNG"


def maps(L=3, h=2, T=4, seed=0):
    return np.random.default_rng(seed).dirichlet(np.ones(T), size=(L, h, T))  # (L, h, T, T)


def links_from(*sources):
    return [w for w in list(_instances.values()) if isinstance(w, Link) and w.source[0] in sources]


def test_structure_links_and_frames():
    A = maps()
    box = head_browser(A, list("abcd"), causal=False, intro="x", dom_class="mha-test", start=(1, 1), dpi=30,
                       figsize=(2, 2))
    intro, layer_picker, head_picker, stack = box.children
    assert "mha-head-browser" in box._dom_classes and "mha-test" in box._dom_classes
    # drop-down lists: a <select> named by its <label>, so a screen reader hears "layer, 1" without
    # a script of the site (ToggleButtons say neither their group nor which one is pressed)
    assert type(layer_picker) is widgets.Dropdown and type(head_picker) is widgets.Dropdown
    assert (layer_picker.description, head_picker.description) == ("layer", "head")
    assert [label for label, _ in layer_picker.options] == ["0", "1", "2"] and len(head_picker.options) == 2
    assert layer_picker.index == 1 and head_picker.index == 1 and stack.selected_index == 1
    assert len(stack.children) == 3 and all(len(inner.children) == 2 for inner in stack.children)
    assert all(inner.selected_index == 1 for inner in stack.children)
    pngs = [bytes(frame.children[0].value) for inner in stack.children for frame in inner.children]
    assert all(p.startswith(PNG_MAGIC) for p in pngs) and len(set(pngs)) == len(pngs)
    targets = {(link.source[0], link.target[0]) for link in links_from(layer_picker, head_picker)}
    assert (layer_picker, stack) in targets
    assert all((head_picker, inner) in targets for inner in stack.children)
    data = embed_data(views=[box], state=dependency_state([box, *links_from(layer_picker, head_picker)]))
    assert sum(m["model_name"] == "LinkModel" for m in data["manager_state"]["state"].values()) == 1 + 3
    assert len(json.dumps(data)) < 1_000_000


def test_captions_say_the_measures():
    A = np.zeros((1, 2, 3, 3))
    A[0, 0] = np.eye(3, k=1) + np.eye(3)[[2]] * np.eye(3)[:, [2]]  # head 0: the next token (last row: itself)
    A[0, 1] = 1 / 3  # head 1: spread evenly
    enc = head_captions(A, causal=False, first="[CLS]")
    assert enc[0].startswith("Layer 0, head 0: mean weight on the next token 1.00, on [CLS] 0.00")
    assert "entropy 1.10 nats" in enc[1] and "at most 1.10" in enc[1]
    causal = head_captions(A, causal=True, layer_labels=[7])
    assert causal[1].startswith("Layer 7, head 1: mean weight on the previous token 0.33")


def test_many_layers_and_their_labels():
    box = head_browser(maps(L=13, h=1, T=3), list("abc"), causal=True, intro="x", dom_class="mha-t",
                       layer_labels=range(0, 26, 2), dpi=20, figsize=(1.5, 1.5))
    picker = box.children[1]
    assert isinstance(picker, widgets.Dropdown) and picker.options[1] == ("2", 1)
    assert box.children[3].children[1].children[0].children[1].value.startswith("<p>Layer 2, head 0")


@pytest.mark.parametrize("kwargs, error, match", [
    ({"A": np.ones((2, 3, 3))}, ValueError, "L, h, T, T"),
    ({"tokens": ["a"]}, ValueError, "tokens must name"),
    ({"start": (3, 0)}, ValueError, "start"),
    ({"start": 5}, TypeError, "start"),
    ({"layer_labels": [0]}, ValueError, "layer_labels"),
    ({"dom_class": 3}, TypeError, "dom_class"),
    ({"causal": "yes"}, TypeError, "causal"),
])
def test_bad_input_is_refused_clearly(kwargs, error, match):
    args = {"A": maps(), "tokens": list("abcd"), "causal": False, "intro": "x", "dom_class": "mha-t",
            "dpi": 20, "figsize": (1.5, 1.5), **kwargs}
    with pytest.raises(error, match=match):
        head_browser(**args)
