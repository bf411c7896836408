"""Drop the duplicate inline <script> blocks that Sphinx 7.4 writes into every page.

Sphinx 7.x bug (fixed upstream in sphinx-doc/sphinx#13402, Sphinx 8.2; Jupyter Book 1 needs
Sphinx 7): an inline script added with ``app.add_js_file(None, body=...)`` after the builder
started is recorded once with filename ``None`` and again with ``''``, so it is written twice.
sphinx-thebe's ``const THEBE_JS_URL = ...`` then throws "Identifier 'THEBE_JS_URL' has already
been declared" on every page. This keeps the first of each identical script.
"""
from __future__ import annotations


def _dedupe(app, pagename, templatename, context, doctree):
    builder = app.builder
    scripts = getattr(builder, "_js_files", None)
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        key = (js.filename or "", js.priority, tuple(sorted(js.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    if len(unique) != len(scripts):
        scripts[:] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
