"""The rank-floor explorer: its numbers are the library's, its pictures all agree with the theory."""

import json

import numpy as np
import pytest
from ipywidgets.embed import dependency_state, embed_data

from mha.widgets import floor as fw
from mha import rank


@pytest.mark.parametrize("name", list(fw.TARGETS))
@pytest.mark.parametrize("n", [3, 5, 8])
def test_fits_reach_zero_exactly_from_the_floor(name, n):
    view = fw.floor_view(name, n)
    assert view.floor == rank.score_rank_floor(view.target)
    assert len(view.kl) == n - 1
    for d_k, kl in enumerate(view.kl, start=1):
        assert (kl < 1e-9) == (d_k >= view.floor), (name, n, d_k, kl)


def test_the_band_by_distance_needs_the_full_width_and_the_smooth_band_two():
    for n in range(3, 9):
        assert fw.floor_view("band by distance", n).floor == n - 1
        assert fw.floor_view("local band, smooth", n).floor == 2
        # The distances on a line form an invertible matrix: the reason the band needs n - 1.
        D = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
        assert np.linalg.matrix_rank(D) == n


def test_spectrum_counts_the_floor():
    A = rank.target_previous_flat(6)
    s = rank.centred_log_spectrum(A)
    assert s.floor == 5 == int(np.sum(s.singular_values > s.tol))
    assert np.linalg.matrix_rank(np.log(A)) == 5  # rows 0 and 1 are equal


def test_named_target_and_floor_view_reject_bad_input():
    with pytest.raises(ValueError, match="name must be one of"):
        fw.named_target("nonsense", 4)
    with pytest.raises(ValueError, match="n must be from 2 to 10"):
        fw.floor_view("random", 11)
    with pytest.raises(TypeError, match="n must be a positive integer"):
        fw.floor_view("random", 4.0)


def _links(state):
    return [m["state"] for m in state.values() if m["model_name"] == "LinkModel"]


def test_static_explorer_links_both_pickers_and_stays_small():
    box = fw.floor_explorer(names=["first token", "band by distance"], sizes=(3, 5), start_name="first token",
                            start_n=5)
    assert {"mha-sweep", "mha-floor"} <= set(box._dom_classes)
    menu, (slider, readout), outer = box.children[1], box.children[2].children, box.children[3]
    assert len(outer.children) == 2 and all(len(inner.children) == 2 for inner in outer.children)
    assert outer.selected_index == 0 and outer.children[0].selected_index == 1
    state = embed_data(views=[box], state=dependency_state(box))["manager_state"]["state"]  # this box only
    links = _links(state)
    assert len(links) == 4  # the menu to the outer stack, the slider to each inner stack and its readout
    pictures = {frame.children[0].value for inner in outer.children for frame in inner.children}
    assert len(pictures) == 4  # every (target, n) has its own picture
    assert len(json.dumps(state)) < 120_000


def test_captions_say_the_floor_in_words():
    view = fw.floor_view("band by distance", 6)
    text = fw._caption(view)
    assert "d_k = 5 is the first to reach it exactly" in text and "n = 6" in text


def test_live_explorer_redraws_when_a_picker_moves():
    box = fw.floor_explorer_live("first token", 4)
    menu, slider, image, caption = box.children[1:]
    before = image.value
    slider.value = 6
    assert image.value != before and "n = 6" in caption.value
    menu.value = "band by distance"
    assert "band by distance" in caption.value and "d<sub>k</sub> = 5" in caption.value
