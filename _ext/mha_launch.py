"""Launch links that open the notebook edition, not the MyST source.

sphinx-book-theme builds each page's Binder link from the page's source file
(``?urlpath=lab/tree/book/NN_slug.md``). Opened that way, JupyterLab shows the chapter's MyST
text (or, with jupytext, a notebook whose autosave rewrites ``book/NN_slug.md``). The book
ships a generated notebook edition instead (``scripts/notebook_edition.py`` writes
``notebooks/NN_slug.ipynb``: glued numbers filled in, directives turned into Markdown and HTML,
solutions folded away). This extension rewrites the Binder link of every notebook page to open
that copy: ``?urlpath=lab/tree/notebooks/NN_slug.ipynb``.

It runs on ``html-page-context`` after the theme has built its buttons (priority 501).
"""
from __future__ import annotations

from pathlib import PurePosixPath
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

NOTEBOOKS = "notebooks"


def notebook_path(pagename: str) -> str:
    """The notebook edition's path, relative to the repository root, for a page name."""
    return f"{NOTEBOOKS}/{PurePosixPath(pagename).name}.ipynb"


def binder_url(url: str, pagename: str) -> str:
    """`url` (a theme-built Binder link) with its urlpath pointing at the notebook edition."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "urlpath"]
    query.append(("urlpath", f"lab/tree/{notebook_path(pagename)}"))
    return urlunsplit(parts._replace(query=urlencode(query, safe="/")))


def _launch_groups(buttons):
    for button in buttons or []:
        if button.get("type") == "group" and button.get("label") == "launch-buttons":
            yield button


def rewrite_launch_links(app, pagename, templatename, context, doctree):
    for group in _launch_groups(context.get("header_buttons")):
        for button in group.get("buttons", []):
            if button.get("text") == "Binder" and button.get("url"):
                button["url"] = binder_url(button["url"], pagename)


def setup(app):
    app.connect("html-page-context", rewrite_launch_links, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
