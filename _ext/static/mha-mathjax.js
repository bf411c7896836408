// Loads MathJax 3 (mathjax/tex-mml-chtml.js) on the book's pages. This file is Sphinx's
// mathjax_path, so it is on every page with a formula, and only there; MathJax's settings come
// from _config.yml (mathjax3_config: an inline window.MathJax above this script).
//
// MathJax is loaded once the page's widgets are drawn (window.mhaWidgetsDrawn, from
// mha-widgets-early.js; at once on a page without widgets), so the two do not compete for the CPU
// while the reader waits for the widgets. Loading MathJax and drawing every formula of a page
// took most of the time before the widgets appeared: on chapter 12, with the CPU slowed 4x, the
// widgets were drawn 10-12 s after navigation with MathJax first and 3.5 s without MathJax
// (benchmarks/bench_pages.py; MAINTAINING.md). Each formula keeps its room meanwhile
// (_ext/mha_mathroom.py, mha-theme.css), so the text does not move when it is drawn.
(function () {
  "use strict";
  var script = document.currentScript;
  var here = script ? script.src.split(/[?#]/)[0].replace(/[^\/]*$/, "") : "";

  // ipywidgets 8 typesets each label with MathJax 2's MathJax.Hub.Queue whenever window.MathJax
  // exists, and throws without it. Here window.MathJax is first only MathJax's settings (the widgets
  // are drawn before MathJax is loaded), then the MathJax 3 object that replaces them: give both
  // that call. It typesets once MathJax has started (no label of the book has math).
  var loaded;
  var started = new Promise(function (resolve) { loaded = resolve; })
    .then(function () { return window.MathJax.startup.promise; });
  function queue() {
    Array.prototype.forEach.call(arguments, function (job) {
      if (!Array.isArray(job) || job[0] !== "Typeset") return;
      started
        .then(function () { return window.MathJax.typesetPromise(job[2] ? [job[2]] : undefined); })
        .catch(function (err) { console.warn("MathJax could not typeset a widget label", err); });
    });
  }
  function hub() {
    if (window.MathJax && !window.MathJax.Hub) window.MathJax.Hub = { Queue: queue };
  }
  hub();

  function load() {
    var tag = document.createElement("script");
    tag.onload = function () { hub(); loaded(); };
    tag.src = here + "mathjax/tex-mml-chtml.js";
    tag.async = true;
    tag.id = "MathJax-script";
    document.head.appendChild(tag);
  }
  (window.mhaWidgetsDrawn || Promise.resolve()).then(load, load);
})();
