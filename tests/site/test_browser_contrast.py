"""Text in the widgets is readable in light and dark mode: contrast 4.5:1 or more (WCAG 1.4.3).

The widgets sit on a light card in both of the book's modes. Chapter 04's roles explorer once took
the theme's dark-mode caption grey for its figure caption and table captions: 1.71:1 on the card.
Every visible text of every widget on the widget pages is measured against the colour behind it
(the first opaque background up the tree), with the mode set as the theme's button sets it.
"""
from __future__ import annotations

import pytest

from conftest import toc_files

pytestmark = pytest.mark.browser

MIN_RATIO = 4.5
WIDGET_PAGES = ["book/04_wide_or_narrow.html", "book/05_narrow_heads.html",
                "book/06_how_many_heads.html", "book/09_real_heads.html", "book/12_rank_bound.html"]

_CONTRAST_JS = """
async () => {
  const t0 = Date.now();
  while (!document.querySelector('.widget-subarea .jupyter-widgets') && Date.now() - t0 < 15000)
    await new Promise(r => setTimeout(r, 100));
  await new Promise(r => setTimeout(r, 300));
  const rgb = s => (s.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => {
    const f = c => { c /= 255; return c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
  };
  const behind = el => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgb(getComputedStyle(e).backgroundColor);
      if (c.length >= 3 && (c.length < 4 || c[3] > 0.9)) return c;
    }
    return [255, 255, 255];
  };
  const out = [];
  document.querySelectorAll('.jupyter-widgets *').forEach(el => {
    const own = Array.from(el.childNodes).some(n => n.nodeType === 3 && n.nodeValue.trim());
    if (!own || !el.checkVisibility() || el.closest('.visually-hidden, mjx-container')) return;
    const fg = rgb(getComputedStyle(el).color), bg = behind(el);
    const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
    out.push({text: el.textContent.trim().slice(0, 40), tag: el.tagName,
              ratio: (a + 0.05) / (b + 0.05), fg: fg.join(','), bg: bg.join(',')});
  });
  return out;
}
"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("path", [p for p in WIDGET_PAGES if p[:-5] in toc_files()])
def test_widget_text_contrast(open_page, site_dir, chromium, site_server, path, mode):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        context.add_init_script(f"localStorage.setItem('mode', '{mode}');"
                                f"localStorage.setItem('theme', '{mode}');")
        page = context.new_page()
        page.goto(site_server + path, wait_until="load")
        assert page.evaluate("document.documentElement.dataset.theme") == mode
        texts = page.evaluate(_CONTRAST_JS)
    finally:
        context.close()
    assert texts, f"{path}: no widget text found"
    low = [f"{t['tag']} {t['text']!r}: {t['ratio']:.2f}:1 (rgb {t['fg']} on {t['bg']})"
           for t in texts if t["ratio"] < MIN_RATIO]
    assert not low, f"{path}, {mode} mode: widget text below {MIN_RATIO}:1:\n  " + "\n  ".join(low[:15])


def test_roles_captions_are_measured(open_page, site_dir):
    """The rule bites: chapter 04's roles explorer has a figure caption and table captions."""
    visit = open_page("book/04_wide_or_narrow.html")
    visit.page.wait_for_selector(".mha-roles figcaption", timeout=15000)
    assert visit.page.locator(".mha-roles caption").count() >= 1
