"""Every page of the built site on a phone (390 x 844 CSS pixels), in headless Chromium.

A page is readable on a phone when
  * the page itself does not scroll sideways (wide things scroll inside their own box),
  * every figure and widget frame keeps a readable size: shown at its own width, or at least
    600 CSS pixels wide when it is wider (our figures are drawn with text about 14 pixels
    high; at 600 of 950 pixels that text is still 9 pixels or more),
  * printed output keeps its rows: a printed table is as many lines high as it has lines
    (no row wraps onto a second line), and
  * a box that scrolls sideways can be reached with the keyboard (it has a tab stop).

Fixtures (site_dir, open_page) live in tests/conftest.py; run the build first.
"""
from __future__ import annotations

import pytest

from conftest import toc_files

pytestmark = pytest.mark.browser

PHONE = (390, 844)
READABLE_WIDTH = 600  # CSS pixels: the least width a wide figure may be shrunk to
PAGES = [f"{name}.html" for name in toc_files()]

_LAYOUT_JS = """
async () => {
  const imgs = Array.from(document.querySelectorAll(
    '.bd-article div.cell_output img, .bd-article figure img'));
  await Promise.all(imgs.map(img => img.decode().catch(() => null)));
  window.dispatchEvent(new Event('resize'));  // mha-phone.js marks boxes that now overflow
  const shown = imgs.filter(img => img.checkVisibility());
  const pictures = shown.map(img => ({
    name: (img.getAttribute('alt') || img.src).slice(0, 60),
    natural: img.naturalWidth,
    width: img.getBoundingClientRect().width,
  }));
  const printed = Array.from(document.querySelectorAll('.bd-article div.cell_output pre'))
    .filter(pre => pre.checkVisibility() && pre.textContent.trim())
    .map(pre => {
      const style = getComputedStyle(pre);
      const lines = pre.textContent.replace(/\\n$/, '').split('\\n').length;
      const lineHeight = parseFloat(style.lineHeight) || 1.2 * parseFloat(style.fontSize);
      const padding = parseFloat(style.paddingTop) + parseFloat(style.paddingBottom);
      return {text: pre.textContent.slice(0, 60), whiteSpace: style.whiteSpace, lines,
              rows: Math.round((pre.clientHeight - padding) / lineHeight)};
    });
  const scrolling = Array.from(document.querySelectorAll(
      '.bd-article div.cell_output pre, .bd-article div.cell_output, .bd-article figure'))
    .filter(box => box.checkVisibility() && box.scrollWidth > box.clientWidth + 1)
    .map(box => ({what: box.tagName + '.' + box.className, tabindex: box.getAttribute('tabindex')}));
  const root = document.scrollingElement;
  return {pictures, printed, scrolling, pageWidth: root.scrollWidth, viewport: window.innerWidth};
}
"""


@pytest.mark.parametrize("path", PAGES)
def test_page_reads_on_a_phone(open_page, site_dir, path):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path, viewport=PHONE)
    page = visit.page
    page.wait_for_load_state("networkidle")
    page.wait_for_timeout(300)  # widgets are drawn by the widget manager after load
    facts = page.evaluate(_LAYOUT_JS)

    assert facts["pageWidth"] <= facts["viewport"] + 1, (
        f"{path}: the page scrolls sideways on a phone ({facts['pageWidth']} px wide in a "
        f"{facts['viewport']} px window); something wide is not inside a scrolling box")

    small = [f"{p['name']!r}: {p['width']:.0f} px wide, drawn {p['natural']} px"
             for p in facts["pictures"]
             if p["natural"] and p["width"] + 1 < min(p["natural"], READABLE_WIDTH)]
    assert not small, f"{path}: figures shrunk below a readable size on a phone: {small}"

    wrapped = [f"{p['text']!r}: {p['lines']} lines shown on {p['rows']} rows ({p['whiteSpace']})"
               for p in facts["printed"] if p["rows"] > p["lines"]]
    assert not wrapped, f"{path}: printed output wraps its lines on a phone: {wrapped}"

    unreachable = [box["what"] for box in facts["scrolling"] if box["tabindex"] is None]
    assert not unreachable, (
        f"{path}: boxes that scroll sideways have no tab stop (keyboard readers cannot "
        f"scroll them): {unreachable}")


def test_a_wide_figure_is_readable_but_the_page_is_not_wider(open_page, site_dir):
    """The rule bites: on chapter 04 at least one figure is wider than the phone's column."""
    path = "book/04_wide_or_narrow.html"
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path, viewport=PHONE)
    visit.page.wait_for_load_state("networkidle")
    facts = visit.page.evaluate(_LAYOUT_JS)
    wide = [p for p in facts["pictures"] if p["width"] > facts["viewport"]]
    assert wide, "no figure on chapter 04 is wider than a phone: the phone test checks nothing"
    assert facts["pageWidth"] <= facts["viewport"] + 1
