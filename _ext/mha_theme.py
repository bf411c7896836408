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

After the build it gives every figure its size (``size_all_images``: no layout shift as pictures
load, and a least width at which its text stays 9 CSS px or more; ``mha-theme.css``).

It also fixes two bits of markup in every page body (``BODY_FIXES``), and takes sphinx-thebe's
scripts, stylesheet and configuration off every page (``drop_thebe``): Jupyter Book always loads
that extension, but its Live Code stays off (thebe 0.8's ipywidgets 7 front end cannot show the
book's ipywidgets 8 widgets), so its loader and its configuration (which names a stranger's Binder
repository) were dead weight. The book's own Live Code is ``_ext/mha_live.py`` (thebe 0.9).
"""
from __future__ import annotations

import re
import struct
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


# sphinx-thebe's page configuration, appended to every doctree (sphinx_thebe.update_thebe_context).
_THEBE_BODY = re.compile(r'\s*<script type="text/x-thebe-config">.*?</script>\s*'
                         r"(?:<script>kernelName = '[^']*'</script>\s*)?", re.S)


def _is_thebe(asset) -> bool:
    return "thebe" in (getattr(asset, "filename", "") or "").lower() \
        or "THEBE" in (getattr(asset, "attributes", {}) or {}).get("body", "")


def drop_thebe(app, pagename, templatename, context, doctree):
    """Take sphinx-thebe's loader, stylesheet, inline settings and page configuration off the page."""
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]
    body = context.get("body")
    if body and "x-thebe-config" in body:
        context["body"] = _THEBE_BODY.sub("\n", body)


# ---- Figures keep a readable size. Every figure is a PNG drawn at 100 dpi with 10-pt text (about
# 14 px); shrunk below 0.66 of its width, that text falls under 9 CSS px. So each <img> of the
# built pages that shows a PNG of the site gets its size (width and height: the browser keeps its
# room before it loads, so nothing below it moves) and `--mha-w`, its width in pixels, from which
# mha-theme.css sets the least width it may be shrunk to (0.66 of it); a wider figure scrolls
# sideways in its own box instead (mha-phone.js gives that box a tab stop).
_IMG = re.compile(r'<img\b[^>]*?\bsrc="([^"]+\.png)"[^>]*?>')


def png_size(path: Path) -> tuple[int, int] | None:
    """(width, height) from a PNG's header, or None when the file is not a PNG."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    return struct.unpack(">II", head[16:24])


def size_images(html: str, page: Path) -> str:
    """Each ``<img>`` of a site PNG with its width, height and ``--mha-w`` (see above)."""
    def sized(m):
        tag, src = m[0], m[1]
        if src.startswith(("http:", "https:", "data:")) or re.search(r"\s(width|height)=", tag):
            return tag
        file = (page.parent / src.split("?")[0]).resolve()
        size = png_size(file) if file.is_file() else None
        if not size:
            return tag
        w, h = size
        extra = f' width="{w}" height="{h}" style="--mha-w: {w}px"'
        if "style=" in tag:
            return tag
        return tag[:-2].rstrip() + extra + " />" if tag.endswith("/>") else tag[:-1] + extra + ">"
    return _IMG.sub(sized, html)


def size_all_images(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        new = size_images(text, page)
        if new != text:
            page.write_text(new, encoding="utf-8")


def setup(app):
    app.connect("config-inited", _add_static_path)
    app.connect("html-page-context", fix_body)
    app.connect("html-page-context", drop_thebe, priority=950)
    app.connect("build-finished", size_all_images)
    app.add_css_file(CSS)
    for js in JS:
        app.add_js_file(js, defer="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
