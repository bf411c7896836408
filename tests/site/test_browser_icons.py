"""The theme's icons without Font Awesome's 1.4 MiB kit (_ext/mha_icons.py), on the built site.

* ``fontawesome.js`` is the book's subset, not the kit, and every icon of the header is drawn as
  an SVG with a path and a size, on a desktop and on a phone; no icon is left undrawn.
* The theme's stylesheets load subsets of Font Awesome's web fonts that hold every glyph they draw
  (admonition titles, external links, the contents' arrows).
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PHONE = (375, 812)
DESKTOP = (1280, 800)


def _visit(open_page, site_dir, path, viewport):
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path, viewport=viewport)
    visit.page.wait_for_load_state("networkidle")
    visit.page.wait_for_timeout(300)
    return visit


def _mha_icons():
    spec = importlib.util.spec_from_file_location("mha_icons", ROOT / "_ext" / "mha_icons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_theme_fonts_are_subsets_that_hold_every_glyph_the_css_draws(site_dir):
    from fontTools.ttLib import TTFont

    icons = _mha_icons()
    static = site_dir / "_static"
    wanted = icons.css_codepoints(p.read_text(encoding="utf-8", errors="replace") for p in static.rglob("*.css"))
    assert len(wanted) >= 10, wanted  # admonitions, external links, the contents' arrows
    css = (site_dir / icons.THEME_CSS).read_text(encoding="utf-8")
    fonts = re.findall(r"vendor/fontawesome/webfonts/(fa-[a-z]+-\d+\.woff2?)\)", css)
    assert fonts and all(f.endswith(".woff") for f in fonts), f"the theme's CSS loads {fonts}, not the subsets"
    held = set()
    for name in fonts:
        path = site_dir / icons.FONTS / name
        assert path.stat().st_size < 20_000, f"{name} is {path.stat().st_size} bytes: not a subset"
        held |= set(TTFont(path).getBestCmap())
    assert wanted <= held, f"glyphs the CSS draws but no font holds: {sorted(map(hex, wanted - held))}"


def test_the_theme_icons_are_the_small_subset_and_all_drawn(open_page, site_dir):
    script = site_dir / "_static" / "scripts" / "fontawesome.js"
    assert script.stat().st_size < 40_000, f"fontawesome.js is {script.stat().st_size} bytes: the full kit is back"
    for path, viewport in (("book/04_wide_or_narrow.html", DESKTOP), ("book/00_intro.html", PHONE)):
        visit = _visit(open_page, site_dir, path, viewport)
        page = visit.page
        left = page.evaluate("() => Array.from(document.querySelectorAll(\"i[class*='fa-'], span[class*='fa-']\"))"
                             ".map(e => e.className)")
        assert not left, f"{path}: icons not drawn: {left}"
        icons = page.evaluate("""() => Array.from(document.querySelectorAll('svg.svg-inline--fa'))
            .filter(s => s.checkVisibility()).map(s => ({icon: s.dataset.icon,
              path: (s.querySelector('path') || {getAttribute: () => ''}).getAttribute('d').length,
              w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height}))""")
        assert len(icons) >= 5, f"{path}: only {icons} drawn"
        bad = [i for i in icons if i["path"] < 20 or i["w"] < 8 or i["h"] < 8]
        assert not bad, f"{path}: icons without a shape or a size: {bad}"
        assert not visit.page_errors, visit.page_errors
