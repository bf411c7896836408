// A box that scrolls sideways (a printed table, or a figure on a phone: see mha-theme.css) must
// be reachable with the keyboard, or a reader without a mouse or touch screen cannot see its
// right-hand side. Give each such box a tab stop while, and only while, it overflows.
(function () {
  "use strict";

  var BOXES = ".bd-article div.cell_output pre, .bd-article div.cell_output, .bd-article figure";

  function mark(box) {
    var overflows = box.scrollWidth > box.clientWidth + 1;
    if (overflows && !box.hasAttribute("tabindex")) {
      box.setAttribute("tabindex", "0");
      box.setAttribute("data-mha-scroll", "");
    } else if (!overflows && box.hasAttribute("data-mha-scroll")) {
      box.removeAttribute("tabindex");
      box.removeAttribute("data-mha-scroll");
    }
  }

  function scan() {
    document.querySelectorAll(BOXES).forEach(mark);
  }

  function start() {
    scan();
    window.addEventListener("resize", scan);
    window.addEventListener("load", scan);  // pictures change the boxes' widths as they load
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
