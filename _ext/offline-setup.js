/* Written by scripts/fetch_assets.py. Settings for the ipywidgets HTML manager on a site
   that serves it itself. Load after require.js and before embed-amd.js. (MathJax.Hub.Queue, which
   ipywidgets calls for each label, is _ext/static/mha-mathjax.js's.) */
(function () {
  var script = document.currentScript;
  if (!script || !script.src) return;
  var here = script.src.split(/[?#]/)[0].replace(/[^\/]*$/, "");  // .../_static/html-manager/
  if (window.requirejs) {
    window.requirejs.config({
      // Modules the bundle does not hold (third-party widgets) resolve against _static/ with
      // data-jupyter-widgets-cdn="widget-modules/": on this site, never a CDN.
      baseUrl: here + "../",
      // The bundle's CSS (Font Awesome fonts) resolves against the AMD module's URL, by
      // default <page folder>/@jupyter-widgets/html-manager/dist/: map that to this folder.
      // (window.__jupyter_widgets_assets_path__ is set too late to affect that CSS.)
      // The bundle's other modules (base, controls, html-manager) carry the same CSS, resolved
      // against <baseUrl>/@jupyter-widgets/: a page that then uses Font Awesome 5 (Live Code's
      // widgets, mha-live.js) asked there for the fonts (404). Their URLs are in this folder too.
      paths: {
        "@jupyter-widgets/html-manager/dist": here.replace(/\/$/, ""),
        "@jupyter-widgets/html-manager": here + "html-manager",
        "@jupyter-widgets/base": here + "base",
        "@jupyter-widgets/controls": here + "controls"
      }
    });
  }
})();
