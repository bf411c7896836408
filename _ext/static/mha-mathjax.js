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
  // exists, and MathJax 3 replaces the window.MathJax it is given: give the new one that call too.
  function hub() {
    var MJ = window.MathJax;
    if (!MJ || MJ.Hub || !MJ.startup) return;
    MJ.Hub = {
      Queue: function () {
        Array.prototype.forEach.call(arguments, function (job) {
          if (!Array.isArray(job) || job[0] !== "Typeset") return;
          MJ.startup.promise
            .then(function () { return MJ.typesetPromise(job[2] ? [job[2]] : undefined); })
            .catch(function (err) { console.warn("MathJax could not typeset a widget label", err); });
        });
      }
    };
  }

  function load() {
    var tag = document.createElement("script");
    tag.onload = hub;
    tag.src = here + "mathjax/tex-mml-chtml.js";
    tag.async = true;
    tag.id = "MathJax-script";
    document.head.appendChild(tag);
  }
  (window.mhaWidgetsDrawn || Promise.resolve()).then(load, load);
})();
