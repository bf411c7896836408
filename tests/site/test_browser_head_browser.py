"""Chapter 9's head browsers (mha.widgets.head_browser) on the built page, in headless Chromium, no kernel.

Each browser has two pickers, drop-down lists: the layer (MiniLM's 6 layers, the layers of SmolLM2
shown) and the head. Picking another head, then another layer, must show another
picture and a caption that names the layer and the head picked; picking the first ones again must
bring the first picture back. The page makes no request off the site and logs no error.

Builds nothing: it runs against the built site (MHA_SITE_DIR, else _build/html), like
tests/test_browser_widgets.py.
"""
from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.browser

PAGE = "book/09_real_heads.html"
BROWSERS = ("mha-heads-minilm", "mha-heads-smollm2")

# The visible picture's bytes (hashed) and the caption under it; the intro is the box's first HTML.
_SHOWN_JS = """
async (root) => {
  const visible = el => el.checkVisibility ? el.checkVisibility() : el.offsetParent !== null;
  const img = Array.from(root.querySelectorAll('img')).filter(visible)[0];
  if (!img) return null;
  if (!img.complete) await new Promise(r => { img.onload = img.onerror = r; });
  const buf = await (await fetch(img.src)).arrayBuffer();
  const h = await crypto.subtle.digest('SHA-256', buf);
  const digest = Array.from(new Uint8Array(h)).map(b => b.toString(16).padStart(2, '0')).join('');
  const captions = Array.from(root.querySelectorAll('.widget-html-content')).filter(visible);
  return {digest: digest, caption: captions.length > 1 ? captions[captions.length - 1].innerText : null};
}
"""


def _shown(box, page, before=None, timeout_ms=5000):
    """What the browser shows; with `before`, wait until the picture differs from it."""
    waited = 0
    while True:
        now = box.evaluate(_SHOWN_JS)
        if before is None or (now and now["digest"] != before["digest"]) or waited >= timeout_ms:
            return now
        page.wait_for_timeout(100)
        waited += 100


def _pick_head(box, head):
    box.get_by_role("combobox", name="head", exact=True).select_option(index=head)


def _pick_layer(box, index):
    box.get_by_role("combobox", name="layer", exact=True).select_option(index=index)


def _layer_names(box):
    return [o.strip() for o in box.get_by_role("combobox", name="layer", exact=True)
            .locator("option").all_inner_texts()]


@pytest.mark.parametrize("dom_class", BROWSERS)
def test_both_pickers_change_picture_and_caption(open_page, site_dir, dom_class):
    if not (site_dir / PAGE).is_file():
        pytest.fail(f"{PAGE} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(PAGE)
    page = visit.page
    box = page.locator(f".{dom_class}").first
    box.wait_for(state="visible", timeout=20_000)
    box.scroll_into_view_if_needed()
    first = _shown(box, page)
    assert first and first["caption"], f".{dom_class}: no picture or no caption"
    match = re.match(r"Layer (\d+), head (\d+):", first["caption"])
    assert match, f".{dom_class}: the caption does not name its layer and head: {first['caption']!r}"
    layer0, head0 = match.groups()
    assert "entropy" in first["caption"] and "nats" in first["caption"]
    layers = _layer_names(box)
    assert len(layers) >= 2 and layer0 in layers

    new_head = 1 if head0 == "0" else 0
    _pick_head(box, new_head)
    by_head = _shown(box, page, before=first)
    assert by_head["digest"] != first["digest"], f".{dom_class}: the head picker left the picture frozen"
    assert by_head["caption"].startswith(f"Layer {layer0}, head {new_head}:"), by_head["caption"]

    new_layer = 1 if layers.index(layer0) == 0 else 0
    _pick_layer(box, new_layer)
    by_layer = _shown(box, page, before=by_head)
    assert by_layer["digest"] != by_head["digest"], f".{dom_class}: the layer picker left the picture frozen"
    assert by_layer["caption"].startswith(f"Layer {layers[new_layer]}, head {new_head}:"), by_layer["caption"]

    _pick_layer(box, layers.index(layer0))
    _pick_head(box, int(head0))
    back = _shown(box, page, before=by_layer)
    assert back["digest"] == first["digest"] and back["caption"] == first["caption"]
    assert not visit.offsite, f"{PAGE}: requests off the site: {visit.offsite}"
    assert not visit.console_errors and not visit.page_errors, f"{PAGE}: {visit.console_errors + visit.page_errors}"
