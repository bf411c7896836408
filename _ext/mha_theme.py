"""The book's own small stylesheet and accessibility script, served from ``_ext/static/``.

Why an extension and not a ``_static/`` folder at the book root: when that folder exists,
Jupyter Book adds every ``.js``/``.css`` under every ``html_static_path`` entry to every page
(here that would be all of MathJax). This adds exactly these files:

* ``mha-theme.css``: figures as white cards in dark mode, readable exercise verdicts in both
  modes, captions at normal weight, long code lines that wrap, printed output that keeps its
  columns, and figures that keep a readable size on a phone.
* ``mha-a11y.js``: gives each widget frame (an ``<img>`` drawn by ipywidgets, which has no
  alt text of its own) the text of the caption that sits next to it in its frame.
* ``mha-phone.js``: a tab stop for every box that scrolls sideways (printed tables, figures on
  a phone), so the keyboard reaches what is off to the right.
* ``mha-toggles.js``: makes the header's hamburger and "Contents" buttons work (the theme pair
  binds them to a hidden duplicate; see the file), and names the search and colour-mode buttons
  after what they show.

It also fixes two bits of markup in every page body (``BODY_FIXES``).
"""
from __future__ import annotations

from pathlib import Path

STATIC = Path(__file__).resolve().parent / "static"
CSS = "mha-theme.css"
JS = ("mha-a11y.js", "mha-phone.js", "mha-toggles.js")


def _add_static_path(app, config):
    path = str(STATIC)
    if path not in config.html_static_path:
        config.html_static_path.append(path)


# Markup that Sphinx and its extensions write into every page body, fixed for WCAG 2.1:
# sphinxcontrib-bibtex's entries carry the deprecated role doc-biblioentry inside a role="list" (a
# list must hold list items); myst-nb's "Show code cell source" toggles are named "Toggle hidden
# content", a name that does not contain what they show (WCAG 2.5.3).
BODY_FIXES = (
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
)


def fix_body(app, pagename, templatename, context, doctree):
    body = context.get("body")
    if body:
        for old, new in BODY_FIXES:
            body = body.replace(old, new)
        context["body"] = body


def setup(app):
    app.connect("config-inited", _add_static_path)
    app.connect("html-page-context", fix_body)
    app.add_css_file(CSS)
    for js in JS:
        app.add_js_file(js, defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
