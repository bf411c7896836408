"""Live Code: run a chapter's cells on its page, with the book's ipywidgets 8 widgets.

Jupyter Book's own Live Code is sphinx-thebe 0.3.1, which loads thebe 0.8.2 from a CDN; its
ipywidgets 7 front end cannot show this book's widgets, so it stays off (``launch_buttons.thebe:
false``; ``_ext/mha_theme.py`` takes its leftovers off the pages). This extension drives thebe
0.9.3 instead, whose widget manager is @jupyter-widgets/jupyterlab-manager 5 (ipywidgets 8),
served from the site (``_static/thebe/``, fetched and pinned by ``scripts/fetch_assets.py``).

On every page with code cells it adds ``mha-live.js`` (deferred; it loads thebe only when the
reader presses the button) and a "Live Code" item in the header's launch menu. The script tag
carries what the script needs: the Binder repository, branch and BinderHub of ``_config.yml``,
the notebook path of the page (``notebooks/NN_slug.ipynb``, the kernel's folder as in
``make lab`` and on Binder), and the code the page does not show (``hidden_cells``): cells tagged
``remove-cell`` or ``remove-input`` often define what the shown cells use (chapters 10 and 11),
so they become hidden live cells at their places, run before the first shown cell after them. A reader with a local server runs ``make live`` (``scripts/lab.py
live``), which prints the page address that points Live Code at it.
"""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

from sphinx.util import logging

LOG = logging.getLogger(__name__)
NOT_SHOWN = {"remove-cell", "remove-input"}

JS = "mha-live.js"
BUTTON = {
    "type": "javascript",
    "javascript": "mhaLiveStart()",
    "tooltip": "Run the code cells on this page (on Binder, or your own Jupyter server)",
    "icon": "fas fa-play",
    "text": "Live Code",
    "label": "launch-mha-live-button",
}


def _binder(app) -> dict[str, str]:
    repo = app.config.html_theme_options.get("repository_url", "") or ""
    path = urlsplit(repo).path.strip("/")
    launch = app.config.html_theme_options.get("launch_buttons", {}) or {}
    return {
        "data-binder-repo": path,
        "data-binder-ref": app.config.html_theme_options.get("repository_branch", "") or "main",
        "data-binder-url": launch.get("binderhub_url", "") or "https://mybinder.org",
    }


def hidden_cells(source: Path) -> tuple[int, dict[int, list[str]]]:
    """(number of code cells the page shows, {i: sources of the hidden cells just before shown cell i})."""
    import jupytext

    shown, hidden, pending = 0, {}, []
    for cell in jupytext.read(source).cells:
        if cell.cell_type != "code":
            continue
        if NOT_SHOWN & set(cell.metadata.get("tags") or ()):
            pending.append(cell.source)
            continue
        if pending:
            hidden[shown] = pending
            pending = []
        shown += 1
    return shown, hidden


def has_code_cells(body: str) -> bool:
    return 'class="cell_input' in (body or "")


def add_live_code(app, pagename, templatename, context, doctree):
    if not has_code_cells(context.get("body")):
        return
    from mha_launch import notebook_path

    attrs = {**_binder(app), "data-notebook": notebook_path(pagename)}
    source = Path(app.env.doc2path(pagename))
    if source.suffix in (".md", ".ipynb") and source.is_file():
        shown, hidden = hidden_cells(source)
        on_page = context["body"].count('class="cell_input')
        if shown != on_page:
            LOG.warning("Live Code: %s shows %d code cells, its source %d: its hidden cells are left out",
                        pagename, on_page, shown)
        elif hidden:
            attrs["data-hidden-cells"] = json.dumps(hidden, separators=(",", ":"))
    app.add_js_file(JS, defer="defer", **attrs)
    for button in context.get("header_buttons") or []:
        if button.get("type") == "group" and button.get("label") == "launch-buttons":
            button.setdefault("buttons", []).append(dict(BUTTON))


def setup(app):
    app.setup_extension("mha_launch")
    app.connect("html-page-context", add_live_code, priority=610)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
