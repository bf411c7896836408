"""The header's download menu gives the notebook edition, in headless Chromium.

Every chapter's download menu (the header's download icon) offers ".ipynb". It must be the
notebook edition, the same file the Binder link opens (``scripts/notebook_edition.py``;
``_ext/mha_launch.py`` writes it into the site's ``notebooks/`` and points the menu there), not
the raw-MyST notebook of ``_sources/``: no ``{glue}`` role or directive option in its text, no
solution in view, and it runs. One small chapter's downloaded notebook is run with nbclient.
"""
from __future__ import annotations

import re
import time
import urllib.request

import nbformat
import pytest

import notebook_edition as ne  # scripts/ is on pytest's pythonpath

pytestmark = pytest.mark.browser

CHAPTERS = ne.chapter_stems()
RUN = "02_why_heads"  # a small chapter: its downloaded notebook is run top to bottom

RAW_MYST = re.compile(
    r"\{[a-z][\w:.-]*\}`"                  # a role: {glue:text}`x`, {numref}`y`
    r"|^\s*(`{3,}|:{3,})\s*\{"             # a directive fence
    r"|\{solution-(start|end)\}"
    r"|^\s*:(class|label|tags|pyobject|lines|name):", re.M)  # directive options shown as text

_MENU_JS = """
() => Array.from(document.querySelectorAll('.dropdown-download-buttons a, .dropdown-menu a'))
  .map(a => ({text: a.textContent.trim(), href: a.href}))
"""


def _without_ids(nb):
    return [{k: v for k, v in cell.items() if k != "id"} for cell in nb.cells], nb.metadata


def _downloaded(open_page, site_dir, stem):
    path = f"book/{stem}.html"
    if not (site_dir / path).is_file():
        pytest.fail(f"{path} is not in the built site {site_dir}", pytrace=False)
    visit = open_page(path)
    items = [i for i in visit.page.evaluate(_MENU_JS) if i["text"] == ".ipynb"]
    assert len(items) == 1, f"{path}: the download menu has {len(items)} '.ipynb' items"
    href = items[0]["href"]
    assert href.endswith(f"/notebooks/{stem}.ipynb"), (
        f"{path}: '.ipynb' downloads {href}, not the notebook edition notebooks/{stem}.ipynb")
    with urllib.request.urlopen(href, timeout=30) as resp:
        return resp.read().decode("utf-8")


@pytest.mark.parametrize("stem", CHAPTERS)
def test_download_is_the_notebook_edition(open_page, site_dir, stem):
    text = _downloaded(open_page, site_dir, stem)
    nb = nbformat.reads(text, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("mha_edition", {}).get("source") == f"book/{stem}.md"
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            raw = [m.group(0) for m in RAW_MYST.finditer(cell.source)]
            assert not raw, f"{stem}: the download shows raw MyST {raw}"
            assert "<details open" not in cell.source, f"{stem}: a solution is in view"
        else:
            assert "solution-start" not in cell.source
    # The same notebook the Binder link opens: what notebook_edition writes from this build
    # (cell ids are drawn afresh at each writing).
    assert _without_ids(nb) == _without_ids(ne.build_notebook(stem, CHAPTERS))


def test_a_downloaded_notebook_runs(open_page, site_dir, tmp_path):
    from nbclient import NotebookClient

    nb = nbformat.reads(_downloaded(open_page, site_dir, RUN), as_version=4)
    started = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    bad = [(i, o.get("ename") or o.get("text", "")[:300]) for i, c in enumerate(nb.cells)
           if c.cell_type == "code" for o in c.outputs
           if o.output_type == "error" or (o.output_type == "stream" and o.name == "stderr")]
    assert not bad, f"{RUN} (downloaded): {bad}"
    assert time.perf_counter() - started < 300


def test_pages_without_an_edition_offer_no_raw_notebook(open_page, site_dir):
    visit = open_page("book/references.html")
    items = [i for i in visit.page.evaluate(_MENU_JS) if i["text"] == ".ipynb"]
    assert all("/_sources/" not in i["href"] for i in items), items
