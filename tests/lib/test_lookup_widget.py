"""mha.widgets.lookup: the static explorer's frames and toggle, and the live explorer that trains on demand."""

import ipywidgets as widgets
import numpy as np
import pytest

from mha.widgets import lookup as lw
from mha import training as tr


@pytest.fixture(scope="module")
def short_runs():
    """Tiny models (a few steps): enough to draw, quick to make."""
    return {h: tr.dictionary_lookup(h, steps=3) for h in (1, 2, 4)}


def find(box, kind):
    out, todo = [], [box]
    while todo:
        w = todo.pop()
        if isinstance(w, kind):
            out.append(w)
        todo.extend(getattr(w, "children", ()))
    return out


def test_frames_have_pictures_and_captions(short_runs):
    frames = lw.lookup_frames(list(short_runs.values()))
    assert len(frames) == 3
    for png, caption in frames:
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and "test accuracy" in caption


def test_static_explorer_links_slider_and_toggle(short_runs):
    rs = list(short_runs.values())
    box = lw.lookup_explorer({"d_k = d/h": rs, "d_k fixed": rs}, start=1)
    assert "mha-lookup" in box._dom_classes and "mha-sweep" in box._dom_classes
    slider = find(box, widgets.SelectionSlider)[0]
    assert [label for label, _ in slider.options] == ["1", "2", "4"] and slider.index == 1


def test_static_explorer_refuses_mismatched_modes(short_runs):
    with pytest.raises(ValueError, match="head counts"):
        lw.lookup_explorer({"a": [short_runs[1], short_runs[2]], "b": [short_runs[2], short_runs[1]]})
    with pytest.raises(TypeError, match="LookupResult"):
        lw.lookup_frames([1, 2])


def test_live_explorer_trains_only_when_asked(monkeypatch, short_runs):
    calls = []
    real = tr.dictionary_lookup

    def counted(h, **kw):
        calls.append((h, kw["d_k"], kw["seed"]))
        return real(h, **kw)

    monkeypatch.setattr(tr, "dictionary_lookup", counted)
    box = lw.lookup_explorer_live(short_runs.values(), h=2, steps=3)
    assert "mha-lookup-live" in box._dom_classes
    image = find(box, widgets.Image)[0]
    assert calls == [] and image.value[:4] == b"\x89PNG"  # the given model, drawn without training
    slider = find(box, widgets.SelectionSlider)[0]
    slider.value = 4  # given too: still nothing trained
    assert calls == []
    toggle = find(box, widgets.ToggleButtons)[0]
    before = image.value
    toggle.value = 4  # h = 4 with d_k = 4 is the model already given (d/h = 4)
    assert calls == []
    slider.value = 8  # not given: trained now, once
    assert calls == [(8, 4, 0)] and image.value != before
    slider.value = 4
    slider.value = 8  # back again: kept, not trained twice
    assert calls == [(8, 4, 0)]
    find(box, widgets.BoundedIntText)[0].value = 1
    assert calls == [(8, 4, 0), (8, 4, 1)]
    status = " ".join(w.value for w in find(box, widgets.HTML))
    assert "test accuracy" in status


def test_live_explorer_without_models_waits():
    box = lw.lookup_explorer_live(h=16, steps=2)
    assert find(box, widgets.Image)[0].value == b""
    assert any("to train a model" in w.value for w in find(box, widgets.HTML))


@pytest.mark.parametrize("kw, error, match", [
    ({"h": 3}, ValueError, "h must be one of"), ({"fixed_d_k": 0}, ValueError, "fixed_d_k"),
    ({"steps": 0}, ValueError, "steps"), ({"seed": -1}, ValueError, "seed"), ({"sample": 9}, ValueError, "sample"),
    ({"results": [1]}, TypeError, "LookupResult"),
])
def test_live_explorer_refuses_bad_input(kw, error, match):
    with pytest.raises(error, match=match):
        lw.lookup_explorer_live(**kw)
