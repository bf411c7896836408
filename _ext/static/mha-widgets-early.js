// Draw the widgets as soon as the page is parsed, not after every picture and font has loaded.
// The widget manager's loader (embed-amd.js, last lines) waits for the window's load event, which
// comes after MathJax has typeset the whole page: on chapter 12, with the CPU slowed 4x, the
// widgets' places stayed empty for 5 s after the page was ready. This script, loaded after
// RequireJS and before embed-amd.js (_config.yml, nb_ipywidgets_js), hands the loader's request a
// callback that renders on DOMContentLoaded instead. It changes nothing else: the same
// renderWidgets() of @jupyter-widgets/html-manager runs once.
(function () {
  "use strict";
  var LIBEMBED = "@jupyter-widgets/html-manager/dist/libembed-amd";

  // window.mhaWidgetsDrawn: resolves once every widget view of the page is drawn, or 8 s after the
  // page is parsed, whichever comes first. MathJax starts typesetting after it (mha-mathjax.js), so
  // the two do not compete for the CPU while the reader waits for the widgets.
  var LIMIT_MS = 8000;
  var drawn;
  window.mhaWidgetsDrawn = new Promise(function (resolve) { drawn = resolve; });
  function allDrawn() {
    var views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
    return Array.prototype.every.call(views, function (view) {
      var area = view.previousElementSibling;
      return area && area.classList.contains("widget-subarea") && area.firstElementChild;
    });
  }
  function watch() {
    var start = Date.now();
    (function poll() {
      if (allDrawn() || Date.now() - start > LIMIT_MS) drawn();
      else setTimeout(poll, 50);
    })();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", watch);
  else watch();

  var original = window.require;
  if (typeof original !== "function") return;
  function early(modules, callback) {
    if (Array.isArray(modules) && modules.length === 1 && modules[0] === LIBEMBED &&
        typeof callback === "function" && arguments.length === 2) {
      window.require = original;  // only the loader's one request
      return original(modules, function (embed) {
        function render() { embed.renderWidgets(); }
        if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", render);
        else render();
      });
    }
    return original.apply(this, arguments);
  }
  for (var key in original) {
    if (Object.prototype.hasOwnProperty.call(original, key)) early[key] = original[key];
  }
  window.require = early;
})();
