// A box that scrolls sideways (a printed table, or a figure on a phone: see mha-theme.css) must
// be reachable with the keyboard, or a reader without a mouse or touch screen cannot see its
// right-hand side. Give each such box a tab stop while, and only while, it overflows.
(function () {
  "use strict";

  var BOXES = ".bd-article div.cell_output pre, .bd-article div.cell_output, .bd-article figure";

  function scan() {
    // Read every box first, then write: a write between two reads would lay the page out again
    // for each box (on chapter 12, with the CPU slowed 4x, that cost 2.7 s).
    var boxes = Array.prototype.slice.call(document.querySelectorAll(BOXES));
    var overflows = boxes.map(function (box) { return box.scrollWidth > box.clientWidth + 1; });
    boxes.forEach(function (box, i) {
      if (overflows[i] && !box.hasAttribute("tabindex")) {
        box.setAttribute("tabindex", "0");
        box.setAttribute("data-mha-scroll", "");
      } else if (!overflows[i] && box.hasAttribute("data-mha-scroll")) {
        box.removeAttribute("tabindex");
        box.removeAttribute("data-mha-scroll");
      }
    });
  }

  // Widgets are drawn by the widget manager after the page has loaded, and pictures change the
  // boxes' widths as they arrive: scan again whenever the article changes or a picture loads, once
  // things have been quiet for QUIET ms (MathJax changes the article hundreds of times as it
  // typesets).
  var QUIET = 250, timer = null;
  function later() {
    if (timer) window.clearTimeout(timer);
    timer = window.setTimeout(function () { timer = null; scan(); }, QUIET);
  }

  function start() {
    scan();
    window.addEventListener("resize", scan);
    window.addEventListener("load", later);
    document.addEventListener("load", later, true);  // each picture as it arrives (load does not bubble)
    var article = document.querySelector(".bd-article");
    if (article) new MutationObserver(later).observe(article, { childList: true, subtree: true });
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
