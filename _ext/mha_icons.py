"""The theme's icons without the 1.4 MiB Font Awesome bundle.

pydata-sphinx-theme 0.17 puts ``scripts/fontawesome.js`` on every page: Font Awesome 6's whole
SVG-with-JavaScript kit (every solid, regular and brand icon, 1.42 MiB; 0.52 MiB gzipped), which
turns each ``<i class="fa-solid fa-bars">`` into an inline ``<svg>``. The book's pages use about
twenty icons. After the build (``build-finished``), this writes over the site's copy of
``_static/scripts/fontawesome.js`` a small script that does the same for exactly the icons the
built pages name (plus ``EXTRA``: icons the theme's JavaScript adds later), with the same classes,
attributes and CSS, taking the icons' paths from the theme's own bundle. The page's
``<script src=".../fontawesome.js">`` stays as the theme writes it.

A page that names an icon the bundle lacks fails the strict build (a warning). Icons are found by
their class (``fa-NAME`` beside a style class: ``fa-solid``/``fas``, ``fa-regular``/``far``,
``fa-brands``/``fab``).

The theme's stylesheets also draw a few icons with Font Awesome's web fonts (admonition titles,
external links: ``content: var(--pst-icon-...)``): three woff2 files of 25-156 KiB, of which a page
loads the solid and the brands one. ``subset_fonts`` keeps in each only the glyphs that the site's
stylesheets name (a WOFF of a few KiB, written with fontTools, which matplotlib already installs)
and points the theme's ``@font-face`` rules at them.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

TARGET = Path("_static") / "scripts" / "fontawesome.js"
# Icons that the theme's JavaScript creates after load (pydata-sphinx-theme.js: the close button of
# an announcement or version banner).
EXTRA = {("solid", "xmark")}
STYLES = {"fa-solid": "solid", "fas": "solid", "fa": "solid", "fa-regular": "regular", "far": "regular",
          "fa-brands": "brands", "fab": "brands"}
# Classes that change how an icon is drawn, not which icon it is.
MODIFIERS = {"lg", "xs", "sm", "xl", "2xs", "2xl", "1x", "2x", "3x", "fw", "spin", "pulse", "border",
             "inverse", "flip", "beat", "fade", "bounce", "shake", "li", "ul", "stack", "layers",
             "pull-left", "pull-right", "rotate-90", "rotate-180", "rotate-270", "flip-horizontal",
             "flip-vertical", "flip-both"} | {name.removeprefix("fa-") for name in STYLES}
_CLASS = re.compile(r"""<(?:i|span)\b[^>]*\bclass=["']([^"']*)["']""")
# One icon of the bundle: name: [width, height, [aliases], "unicode", "path"]
_ICON = re.compile(r'(?:"([\w-]+)"|([A-Za-z_$][\w$]*)|(\d+)):\[(\d+),(\d+),\[[^\]]*\],"[^"]*","([^"]+)"\]')
# Each pack ends with defineIcons("fas", p) / ("far", p) / ("fab", p).
_PACK_END = re.compile(r'\(function\(\)\{\w\("(fas|far|fab)",\w\)')

# The CSS Font Awesome injects for inline SVG icons (the parts the theme's icons use).
CSS = (".svg-inline--fa{display:var(--fa-display,inline-block);height:1em;overflow:visible;"
       "vertical-align:-.125em;box-sizing:content-box}"
       ".svg-inline--fa.fa-lg{vertical-align:-.2em}"
       ".fa-lg{font-size:1.25em;line-height:.05em;vertical-align:-.075em}"
       ".fa-fw,.svg-inline--fa.fa-fw{text-align:center;width:var(--fa-fw-width,1.25em)}")

SCRIPT = """/* The theme's icons as inline SVG: a subset of Font Awesome Free 6 (icons CC BY 4.0, code MIT;
   https://fontawesome.com/license/free), written by the book's _ext/mha_icons.py in place of the
   whole Font Awesome kit. */
(function () {
  "use strict";
  var ICONS = %(icons)s;
  var STYLES = %(styles)s;
  var SKIP = %(modifiers)s;
  var NS = "http://www.w3.org/2000/svg";

  function iconOf(el) {
    var style = "solid", name = null;
    el.classList.forEach(function (c) {
      if (STYLES[c]) style = STYLES[c];
      else if (c.indexOf("fa-") === 0 && SKIP.indexOf(c.slice(3)) < 0) name = c.slice(3);
    });
    return name && ICONS[style + " " + name] ? [style, name, ICONS[style + " " + name]] : null;
  }

  function swap(el) {
    var found = iconOf(el);
    if (!found) return;
    var svg = document.createElementNS(NS, "svg");
    Array.prototype.forEach.call(el.attributes, function (a) { svg.setAttribute(a.name, a.value); });
    svg.classList.add("svg-inline--fa", "fa-" + found[1]);
    svg.setAttribute("data-prefix", {solid: "fas", regular: "far", brands: "fab"}[found[0]]);
    svg.setAttribute("data-icon", found[1]);
    svg.setAttribute("viewBox", "0 0 " + found[2][0] + " " + found[2][1]);
    if (!el.hasAttribute("aria-label") && !el.hasAttribute("title")) svg.setAttribute("aria-hidden", "true");
    svg.setAttribute("focusable", "false");
    svg.setAttribute("role", "img");
    var path = document.createElementNS(NS, "path");
    path.setAttribute("fill", "currentColor");
    path.setAttribute("d", found[2][2]);
    svg.appendChild(path);
    el.replaceWith(svg);
  }

  function scan(node) {
    if (node.nodeType !== 1) return;
    if (node.matches("i[class*='fa-'], span[class*='fa-']")) swap(node);
    node.querySelectorAll("i[class*='fa-'], span[class*='fa-']").forEach(swap);
  }

  function start() {
    var style = document.createElement("style");
    style.textContent = %(css)s;
    document.head.appendChild(style);
    scan(document.body);
    new MutationObserver(function (records) {
      records.forEach(function (r) { r.addedNodes.forEach(scan); });
    }).observe(document.body, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
"""


def bundle_icons(text: str) -> dict[tuple[str, str], tuple[int, int, str]]:
    """(style, name) -> (width, height, SVG path) for every icon of Font Awesome's kit."""
    icons, start = {}, 0
    for end in _PACK_END.finditer(text):
        style = STYLES[end[1]]
        for m in _ICON.finditer(text, start, end.start()):
            name = m[1] or m[2] or m[3]
            icons.setdefault((style, name), (int(m[4]), int(m[5]), m[6]))
        start = end.end()
    return icons


def icons_named(html: str) -> set[tuple[str, str]]:
    """(style, name) of every icon an ``<i>`` or ``<span>`` of the page names."""
    found = set()
    for classes in _CLASS.findall(html):
        words = classes.split()
        if not any(w in STYLES for w in words if w != "fa"):
            continue
        style = next((STYLES[w] for w in words if w in STYLES), "solid")
        found |= {(style, w[3:]) for w in words
                  if w.startswith("fa-") and w not in STYLES and w[3:] not in MODIFIERS}
    return found


def subset_script(icons: dict, wanted: set) -> str:
    chosen = {f"{style} {name}": list(icons[(style, name)]) for style, name in sorted(wanted)}
    return SCRIPT % {"icons": json.dumps(chosen, separators=(",", ":")),
                     "styles": json.dumps(STYLES, separators=(",", ":")),
                     "modifiers": json.dumps(sorted(MODIFIERS), separators=(",", ":")),
                     "css": json.dumps(CSS)}


def write_subset(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    target = out / TARGET
    if not target.is_file():
        logger.warning("mha_icons: %s is not in the built site (has the theme changed?)", TARGET)
        return
    import pydata_sphinx_theme

    bundle = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static" / TARGET.relative_to("_static")
    icons = bundle_icons(bundle.read_text(encoding="utf-8"))
    wanted = set(EXTRA)
    for page in out.rglob("*.html"):
        wanted |= icons_named(page.read_text(encoding="utf-8", errors="replace"))
    missing = sorted(wanted - set(icons))
    if missing:
        logger.warning("mha_icons: Font Awesome has no icon %s", ", ".join(f"{s}/{n}" for s, n in missing))
        wanted -= set(missing)
    target.write_text(subset_script(icons, wanted), encoding="utf-8")
    for leftover in (target.with_name(target.name + ".map"),):
        leftover.unlink(missing_ok=True)


FONTS = Path("_static") / "vendor" / "fontawesome" / "webfonts"
THEME_CSS = Path("_static") / "styles" / "pydata-sphinx-theme.css"
_FONT_SRC = re.compile(r'src:url\(\.\./vendor/fontawesome/webfonts/(fa-[a-z]+-\d+)\.woff2\) format\("woff2"\),'
                       r'url\(\.\./vendor/fontawesome/webfonts/\1\.ttf\) format\("truetype"\)')


_RULE = re.compile(r"([^{}]*)\{([^{}]*)\}")
_PUA = re.compile(r'\\(f[0-9a-fA-F]{3}|e[0-9a-fA-F]{3})(?![0-9a-fA-F])|([\ue000-\uf8ff])')


def css_codepoints(texts) -> set[int]:
    """Font Awesome's glyphs (private-use code points) that stylesheets draw with its fonts.

    Those in the theme's own rules and ``--pst-icon-*`` variables; not the glyphs of the ``.fa-NAME``
    class rules that the theme's CSS also carries (the book's icons are SVG, see above).
    """
    found = set()
    for text in texts:
        for selector, block in _RULE.findall(text):
            if re.search(r"\.fa-[\w-]+:+(before|after)", selector):
                continue
            for escape, char in _PUA.findall(block):
                found.add(int(escape, 16) if escape else ord(char))
    return found


def subset_fonts(out: Path):
    """Font Awesome's web fonts cut to the glyphs the site's CSS names; the theme's CSS points at them."""
    from fontTools import subset

    css = out / THEME_CSS
    if not css.is_file() or not (out / FONTS).is_dir():
        logger.warning("mha_icons: the theme's stylesheet or Font Awesome's fonts are not where expected")
        return
    codepoints = css_codepoints(p.read_text(encoding="utf-8", errors="replace")
                                for p in (out / "_static").rglob("*.css"))
    text = css.read_text(encoding="utf-8")
    # (a stylesheet that an earlier build already pointed at the subsets names the .woff files)
    names = sorted(set(re.findall(r"vendor/fontawesome/webfonts/(fa-[a-z]+-\d+)\.woff2?\)", text)))
    if not names:
        logger.warning("mha_icons: the theme's @font-face rules for Font Awesome have changed")
        return
    for name in names:
        options = subset.Options()
        options.flavor = "woff"            # zlib: woff2 would need the brotli package
        options.layout_features = []
        options.notdef_outline = True
        font = subset.load_font(str(out / FONTS / f"{name}.ttf"), options)
        subsetter = subset.Subsetter(options)
        subsetter.populate(unicodes=codepoints)
        subsetter.subset(font)
        subset.save_font(font, str(out / FONTS / f"{name}.woff"), options)
    text = _FONT_SRC.sub(lambda m: f'src:url(../vendor/fontawesome/webfonts/{m[1]}.woff) format("woff")', text)
    css.write_text(text, encoding="utf-8")


def finish(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    write_subset(app, exception)
    subset_fonts(Path(app.outdir))


def setup(app):
    app.connect("build-finished", finish)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
