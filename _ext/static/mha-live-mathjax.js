// Live Code's mathjaxUrl (mha-live.js). thebe 0.9 types text/latex outputs (SymPy's) with the
// MathJax 2 API: MathJax.Hub.Config, Register.StartupHook, Configured, Queue(["Typeset", ...]).
// The site runs MathJax 3 (mha-mathjax.js); this maps those calls onto it.
(function () {
  "use strict";
  var MJ = window.MathJax = window.MathJax || {};
  function typeset(node) {
    // Jupyter's text/latex is "$...$" or "$$...$$"; the site's MathJax reads \( \) and \[ \] only.
    var m = /^\s*(\$\$?)([\s\S]*?)\1\s*$/.exec(node.textContent || "");
    if (m) {
      var display = m[1] === "$$" || /^\s*\\displaystyle/.test(m[2]);
      node.textContent = display ? "\\[" + m[2] + "\\]" : "\\(" + m[2] + "\\)";
    }
    var ready = MJ.startup && MJ.startup.promise ? MJ.startup.promise : Promise.resolve();
    ready.then(function () { return MJ.typesetPromise ? MJ.typesetPromise([node]) : null; })
         .catch(function (e) { console.error("mha-live: MathJax", e); });
  }
  MJ.Hub = {
    config: {},
    Config: function () {},
    Configured: function () {},
    Register: {StartupHook: function () {}, MessageHook: function () {}},
    Queue: function (item) {
      if (Array.isArray(item) && item[0] === "Typeset") typeset(item[2]);
    },
  };
  MJ.Ajax = MJ.Ajax || {};
  MJ.InputJax = MJ.InputJax || {TeX: {resetEquationNumbers: function () {}}};
})();
