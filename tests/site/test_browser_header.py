"""The header's buttons on the built site, in headless Chromium, as a reader uses them.

* On a phone (375 px): the hamburger opens the book's contents as a drawer, and a link in it
  leads to another chapter; the "Contents" button opens the page's outline, and a heading in it
  scrolls the page there.
* On a desktop (1280 px): the hamburger folds the contents sidebar away and brings it back; the
  page's outline is shown beside the text (its button is hidden there).

pydata-sphinx-theme 0.17 binds both buttons to a hidden duplicate in its own navbar
(pydata-sphinx-theme#2451); ``_ext/static/mha-toggles.js`` forwards the visible buttons' clicks.
"""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

PHONE = (375, 812)
DESKTOP = (1280, 800)
PAGE = "book/04_wide_or_narrow.html"

_VISIBLE = "el => el.checkVisibility()"
# sphinx-book-theme folds the sidebar with visibility: hidden (and a negative margin).
_SIDEBAR_SHOWN = "getComputedStyle(document.getElementById('pst-primary-sidebar')).visibility !== 'hidden'"
_ARTICLE_LEFT = "() => document.querySelector('.bd-article').getBoundingClientRect().left"


def _visible_button(page, kind):
    buttons = page.locator(f".{kind}")
    shown = [i for i in range(buttons.count()) if buttons.nth(i).evaluate(_VISIBLE)]
    return buttons.nth(shown[0]) if shown else None


def _open(open_page, site_dir, viewport):
    if not (site_dir / PAGE).is_file():
        pytest.fail(f"{PAGE} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(PAGE, viewport=viewport)
    visit.page.wait_for_load_state("load")
    return visit


def test_phone_contents_drawer_leads_to_another_chapter(open_page, site_dir):
    visit = _open(open_page, site_dir, PHONE)
    page = visit.page
    button = _visible_button(page, "primary-toggle")
    assert button is not None, "no visible 'Toggle primary sidebar' button on a phone"
    drawer = page.locator("#pst-primary-sidebar-modal")
    assert not drawer.evaluate("d => d.open")
    button.click()
    page.wait_for_function("() => document.getElementById('pst-primary-sidebar-modal').open",
                           timeout=5000)
    link = drawer.locator("nav a[href*='01_one_head']").first
    assert link.evaluate(_VISIBLE), "the contents drawer opened but its links are not visible"
    link.click()
    page.wait_for_url("**/book/01_one_head.html*", timeout=10000)
    assert not visit.page_errors, visit.page_errors


def test_phone_outline_drawer_leads_to_a_heading(open_page, site_dir):
    visit = _open(open_page, site_dir, PHONE)
    page = visit.page
    button = _visible_button(page, "secondary-toggle")
    assert button is not None, "no visible 'Toggle secondary sidebar' button on a phone"
    button.click()
    page.wait_for_function("() => document.getElementById('pst-secondary-sidebar-modal').open",
                           timeout=5000)
    links = page.locator("#pst-secondary-sidebar-modal a.nav-link[href^='#']")
    assert links.count() >= 2, "the outline drawer holds no headings"
    link = links.nth(1)
    target = link.get_attribute("href")
    assert link.evaluate(_VISIBLE)
    link.click()
    page.wait_for_function("t => location.hash === t", arg=target, timeout=5000)
    if page.evaluate("() => document.getElementById('pst-secondary-sidebar-modal').open"):
        page.keyboard.press("Escape")  # the drawer may stay open over the page: close it
    page.wait_for_timeout(300)
    top = page.evaluate("t => document.getElementById(t.slice(1)).getBoundingClientRect().top",
                        target)
    assert -5 <= top <= PHONE[1] / 2, f"{target} is not on screen after following it ({top:.0f} px)"
    assert not visit.page_errors, visit.page_errors


def test_desktop_hamburger_folds_and_unfolds_the_contents(open_page, site_dir):
    visit = _open(open_page, site_dir, DESKTOP)
    page = visit.page
    sidebar = page.locator("#pst-primary-sidebar")
    assert sidebar.evaluate(_VISIBLE), "the contents sidebar is not shown on a desktop"
    button = _visible_button(page, "primary-toggle")
    assert button is not None, "no visible 'Toggle primary sidebar' button on a desktop"
    left = page.evaluate(_ARTICLE_LEFT)
    button.click()
    page.wait_for_function(f"() => {_SIDEBAR_SHOWN} === false", timeout=5000)
    page.wait_for_timeout(400)  # the theme slides it away in 0.25 s
    assert page.evaluate(_ARTICLE_LEFT) < left - 100, "the text did not take the sidebar's room"
    assert not page.evaluate("() => document.getElementById('pst-primary-sidebar-modal').open")
    button.click()
    page.wait_for_function(f"() => {_SIDEBAR_SHOWN} === true", timeout=5000)
    # The outline's own button is hidden at this width because the outline is on screen.
    outline = page.locator("#pst-secondary-sidebar nav a.nav-link").first
    assert outline.evaluate(_VISIBLE), "the page outline is not shown beside the text on a desktop"
    assert _visible_button(page, "secondary-toggle") is None or page.evaluate(
        "() => document.getElementById('pst-secondary-sidebar').checkVisibility()")
    assert not visit.page_errors, visit.page_errors


# ---- Live Code loads nothing until pressed, and every way the intro names is on the page ----------
# Jupyter Book's own Live Code (sphinx-thebe 0.3.1, thebe 0.8.2, ipywidgets 7) is off. The book's
# (_ext/mha_live.py: thebe 0.9 from _static/thebe/) is an entry "Live Code" in the rocket menu of
# every page with code cells; nothing of thebe loads before it is pressed
# (tests/site/test_browser_live_code.py presses it). The intro (book/00_intro.md, "How to use the
# book") names the web site, `make lab` (tests/site/test_intro_paths.py checks the Makefile and the
# paths), the rocket icon's "Binder" entry, which opens the chapter's notebook edition; the header's
# download menu serves that edition (tests/site/test_download_notebook.py checks what it serves).
_THEBE_ON_PAGE = """() => [
  ...Array.from(document.querySelectorAll('script[src], link[href]'))
      .map(el => el.getAttribute('src') || el.getAttribute('href')).filter(u => /thebe/i.test(u)),
  ...Array.from(document.querySelectorAll('script:not([src])'))
      .filter(s => /thebe/i.test(s.type + s.textContent)).map(s => 'inline: ' + s.textContent.slice(0, 60)),
  ...Array.from(document.querySelectorAll('.thebe-launch-button, .thebelab-button, [class*="thebe"]'))
      .map(el => 'element: ' + el.className),
  ...(typeof window.thebe !== 'undefined' || typeof window.thebelab !== 'undefined' ? ['window.thebe'] : []),
]"""


def _menu_entries(page, which):
    menu = page.locator(f".dropdown-{which}-buttons")
    if not menu.count():
        return None
    menu.locator("button.dropdown-toggle").click()
    items = menu.locator(".dropdown-menu a, .dropdown-menu button")
    page.wait_for_function(f"() => document.querySelector('.dropdown-{which}-buttons .dropdown-menu li > *')"
                           ".checkVisibility()", timeout=5000)
    entries = [(items.nth(i).inner_text().strip(), items.nth(i).get_attribute("href") or "")
               for i in range(items.count())]
    page.keyboard.press("Escape")
    return entries


def test_live_code_loads_nothing_until_pressed_and_every_chapter_offers_binder_and_the_edition(
        open_page, site_dir):
    import notebook_edition

    chapters = notebook_edition.chapter_stems()
    pages = sorted(p.relative_to(site_dir).as_posix() for p in (site_dir / "book").glob("*.html"))
    assert {f"book/{stem}.html" for stem in chapters} <= set(pages)
    for path in pages:
        visit = open_page(path, viewport=DESKTOP)
        page = visit.page
        page.wait_for_load_state("load")
        assert page.evaluate(_THEBE_ON_PAGE) == [], path
        has_code = page.locator(".cell_input").count() > 0
        assert not any("thebe" in url for url in visit.requests), path
        stem = path.split("/")[-1].removesuffix(".html")
        launch = _menu_entries(page, "launch")
        if stem in chapters:
            assert launch is not None, f"{path}: no rocket (launch) menu"
            expected = ["Binder", "Live Code"] if has_code else ["Binder"]
            assert [text for text, _ in launch] == expected, f"{path}: the rocket menu offers {launch}"
            assert launch[0][1].endswith(f"?urlpath=lab/tree/notebooks/{stem}.ipynb"), launch
            download = _menu_entries(page, "download")
            ipynb = [href for text, href in download or [] if text == ".ipynb"]
            assert ipynb and ipynb[0].endswith(f"notebooks/{stem}.ipynb"), f"{path}: download {download}"
            response = page.request.get(page.url.rsplit("/", 1)[0] + "/" + ipynb[0])
            assert response.ok, f"{path}: the notebook edition {ipynb[0]} is not served"
        else:
            assert not launch or has_code or all(text != "Live Code" for text, _ in launch), path
        assert not visit.page_errors, (path, visit.page_errors)
        page.context.close()
