"""Live Code: run a chapter's cells on its page, with the book's ipywidgets 8 widgets.

Jupyter Book's own Live Code is sphinx-thebe 0.3.1, which loads thebe 0.8.2 from a CDN; its
ipywidgets 7 front end cannot show this book's widgets, so it stays off (``launch_buttons.thebe:
false``; ``_ext/mha_theme.py`` takes its leftovers off the pages). This extension drives thebe
0.9.3 instead, whose widget manager is @jupyter-widgets/jupyterlab-manager 5 (ipywidgets 8),
served from the site (``_static/thebe/``, fetched and pinned by ``scripts/fetch_assets.py``).

On every page with code cells it adds ``mha-live.js`` (deferred; it loads thebe only when the
reader presses the button) and a "Live Code" item in the header's launch menu. The script tag
carries what the script needs: the Binder repository, branch and BinderHub of ``_config.yml``,
and the notebook path of the page (``notebooks/NN_slug.ipynb``, the kernel's folder as in
``make lab`` and on Binder). A reader with a local server runs ``make live`` (``scripts/lab.py
live``), which prints the page address that points Live Code at it.
"""
from __future__ import annotations

from urllib.parse import urlsplit

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


def has_code_cells(body: str) -> bool:
    return 'class="cell_input' in (body or "")


def add_live_code(app, pagename, templatename, context, doctree):
    if not has_code_cells(context.get("body")):
        return
    from mha_launch import notebook_path

    app.add_js_file(JS, defer="defer", **{**_binder(app), "data-notebook": notebook_path(pagename)})
    for button in context.get("header_buttons") or []:
        if button.get("type") == "group" and button.get("label") == "launch-buttons":
            button.setdefault("buttons", []).append(dict(BUTTON))


def setup(app):
    app.setup_extension("mha_launch")
    app.connect("html-page-context", add_live_code, priority=610)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
