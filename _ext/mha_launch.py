"""Launch links and the ".ipynb" download that give the notebook edition, not the MyST source.

sphinx-book-theme builds each page's Binder link from the page's source file
(``?urlpath=lab/tree/book/NN_slug.md``). Opened that way, JupyterLab shows the chapter's MyST
text (or, with jupytext, a notebook whose autosave rewrites ``book/NN_slug.md``). The book
ships a generated notebook edition instead (``scripts/notebook_edition.py`` writes
``notebooks/NN_slug.ipynb``: glued numbers filled in, directives turned into Markdown and HTML,
solutions folded away). This extension rewrites the Binder link of every notebook page to open
that copy: ``?urlpath=lab/tree/notebooks/NN_slug.ipynb``.

The header's download menu offered ``_sources/book/NN_slug.ipynb``: the executed MyST notebook,
with raw ``{glue}`` roles, directive options as code and solutions in plain view. Its ".ipynb"
item now serves the same notebook edition the Binder link opens: at the end of the site build
(``build-finished``) the edition is written into ``_build/html/notebooks/`` and every chapter's
".ipynb" item points there. A chapter whose edition cannot be written is a build warning (so the
strict build fails). Builds into another folder (``make chapter``) keep the theme's item.

It runs on ``html-page-context`` after the theme has built its buttons (priority 600).
"""
from __future__ import annotations

import sys
from pathlib import Path, PurePosixPath
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from sphinx.util import logging

NOTEBOOKS = "notebooks"
ROOT = Path(__file__).resolve().parent.parent
LOG = logging.getLogger(__name__)


def _edition():
    """scripts/notebook_edition.py, the one writer of the notebook edition."""
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    import notebook_edition

    return notebook_edition


def _serves_edition(app) -> bool:
    """True for the site build (the folder the notebook edition reads its pages from)."""
    return app.builder.name == "html" and Path(app.outdir).resolve() == _edition().HTML.resolve()


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


def _download_groups(buttons):
    for button in buttons or []:
        if button.get("type") == "group" and button.get("label") == "download-buttons":
            yield button


def rewrite_launch_links(app, pagename, templatename, context, doctree):
    for group in _launch_groups(context.get("header_buttons")):
        for button in group.get("buttons", []):
            if button.get("text") == "Binder" and button.get("url"):
                button["url"] = binder_url(button["url"], pagename)
    if not _serves_edition(app):
        return
    chapter = PurePosixPath(pagename).name in _edition().chapter_stems()
    for group in _download_groups(context.get("header_buttons")):
        items = []
        for button in group.get("buttons", []):
            if button.get("label") == "download-notebook-button":
                if not chapter:
                    continue  # no edition of this page: offer no raw notebook either
                button["url"] = context["pathto"](notebook_path(pagename), 1)
                button["tooltip"] = "Download the notebook (the notebook edition Binder opens)"
            items.append(button)
        group["buttons"] = items


def write_site_edition(app, exception):
    """Write the notebook edition into the built site's notebooks/ folder."""
    if exception is not None or not _serves_edition(app):
        return
    edition = _edition()
    out = Path(app.outdir) / NOTEBOOKS
    result = edition.write_edition(out, force=True)
    (out / edition.MANIFEST_NAME).unlink(missing_ok=True)
    for stem, what in result.items():
        if what.startswith("failed"):
            LOG.warning("notebook edition of %s for the download menu: %s", stem, what)


def setup(app):
    app.connect("html-page-context", rewrite_launch_links, priority=600)
    app.connect("build-finished", write_site_edition)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
